//! The game: the composition of the engine and the network (being written).
//!
//! - [`avatar`]: a player's head and hands as plain data, per fixed step, from any input source.
//! - [`desktop`]: the desktop debug view (window, free camera, mouse and gamepad hands, overlay).
//! - [`interaction`]: grab, hold, release and throw — shared by the desktop view, VR and bots.
//! - [`sync`]: state synchronisation; so far the quantizer both peers apply before every physics step.
//! - [`screenshot`]: headless rendering of a scene to a PNG (`tumble screenshot`, the image test).
pub mod avatar;
pub mod desktop;
pub mod interaction;
pub mod screenshot;
pub mod sync;
