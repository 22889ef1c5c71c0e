//! Input glue for the desktop view (feature `input`): what winit (mouse, keyboard) and gilrs (gamepads) report,
//! turned into plain data the game reads once per frame — held and freshly pressed actions, cursor, wheel and look
//! deltas ([`state`]), a free-flying camera ([`camera`]), and hand targets (pose and grip) for a mouse hand that
//! follows the cursor ray and two gamepad hands moved by the sticks ([`hands`]). Nothing here knows about the game:
//! `game::desktop` turns hand targets into `game::avatar` input. Nothing allocates per frame.

pub mod camera;
pub mod gamepad;
pub mod hands;
pub mod state;

pub use winit;

pub use camera::FlyCamera;
pub use gamepad::{GamepadState, Gamepads};
pub use hands::{GamepadHands, HandTarget, MouseHand};
pub use state::{Action, InputState};
