//! Keyboard and mouse state from winit events: which actions are held, which were pressed since the last frame
//! (so a key tapped between two frames is not lost), the cursor, the wheel, and the mouse motion while looking.

use glam::Vec2;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::keyboard::{KeyCode, PhysicalKey};

/// What a key or button does in the desktop view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    MoveForward,
    MoveBack,
    MoveLeft,
    MoveRight,
    MoveUp,
    MoveDown,
    /// Held: move faster.
    Fast,
    /// Right hand grip (left mouse button).
    GripRight,
    /// Left hand grip (middle mouse button or G).
    GripLeft,
    /// Held: mouse look (right mouse button).
    Look,
    Reset,
    Pause,
    SingleStep,
    NextScene,
    PreviousScene,
    ToggleStats,
    ToggleHelp,
    ToggleStereo,
    ToggleRestingDebug,
    ToggleContactsDebug,
    Quit,
}

/// Number of [`Action`]s.
pub const ACTION_COUNT: usize = Action::Quit as usize + 1;

/// The key bindings, by physical key (the same place on every keyboard layout).
pub fn action_for_key(key: KeyCode) -> Option<Action> {
    Some(match key {
        KeyCode::KeyW | KeyCode::ArrowUp => Action::MoveForward,
        KeyCode::KeyS | KeyCode::ArrowDown => Action::MoveBack,
        KeyCode::KeyA | KeyCode::ArrowLeft => Action::MoveLeft,
        KeyCode::KeyD | KeyCode::ArrowRight => Action::MoveRight,
        KeyCode::KeyE => Action::MoveUp,
        KeyCode::KeyQ => Action::MoveDown,
        KeyCode::ShiftLeft | KeyCode::ShiftRight => Action::Fast,
        KeyCode::KeyG => Action::GripLeft,
        KeyCode::KeyR => Action::Reset,
        KeyCode::KeyP | KeyCode::Space => Action::Pause,
        KeyCode::KeyN => Action::SingleStep,
        KeyCode::Tab | KeyCode::PageDown => Action::NextScene,
        KeyCode::PageUp => Action::PreviousScene,
        KeyCode::F1 => Action::ToggleStats,
        KeyCode::F2 => Action::ToggleHelp,
        KeyCode::F3 => Action::ToggleStereo,
        KeyCode::F4 => Action::ToggleRestingDebug,
        KeyCode::F5 => Action::ToggleContactsDebug,
        KeyCode::Escape => Action::Quit,
        _ => return None,
    })
}

pub fn action_for_button(button: MouseButton) -> Option<Action> {
    match button {
        MouseButton::Left => Some(Action::GripRight),
        MouseButton::Middle => Some(Action::GripLeft),
        MouseButton::Right => Some(Action::Look),
        _ => None,
    }
}

/// Pixels one wheel "line" counts as, for touchpads that report pixels.
const PIXELS_PER_WHEEL_LINE: f32 = 40.0;

/// What the keyboard and mouse say, frame by frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputState {
    held: [bool; ACTION_COUNT],
    /// Presses since the last [`InputState::end_frame`].
    pressed: [u16; ACTION_COUNT],
    /// Cursor in physical pixels from the window's top left; `None` outside the window.
    pub cursor: Option<Vec2>,
    /// Wheel lines since the last frame (positive: away from the user).
    pub wheel: f32,
    /// Cursor motion (pixels) while [`Action::Look`] was held, since the last frame.
    pub look_delta: Vec2,
}

impl InputState {
    pub fn is_held(&self, action: Action) -> bool {
        self.held[action as usize]
    }

    /// Times `action` was pressed since the last frame.
    pub fn presses(&self, action: Action) -> u16 {
        self.pressed[action as usize]
    }

    pub fn was_pressed(&self, action: Action) -> bool {
        self.presses(action) > 0
    }

    /// Sets an action directly (for tests, and for input the window does not see).
    pub fn set(&mut self, action: Action, down: bool) {
        let i = action as usize;
        if down && !self.held[i] {
            self.pressed[i] = self.pressed[i].saturating_add(1);
        }
        self.held[i] = down;
    }

    /// Takes one window event; returns true when it was input this state uses.
    pub fn handle_window_event(&mut self, event: &WindowEvent) -> bool {
        match event {
            WindowEvent::KeyboardInput { event, .. } => {
                let PhysicalKey::Code(code) = event.physical_key else {
                    return false;
                };
                match action_for_key(code) {
                    Some(action) if !event.repeat => {
                        self.set(action, event.state == ElementState::Pressed);
                        true
                    }
                    Some(_) => true,
                    None => false,
                }
            }
            WindowEvent::MouseInput { state, button, .. } => match action_for_button(*button) {
                Some(action) => {
                    self.set(action, *state == ElementState::Pressed);
                    true
                }
                None => false,
            },
            WindowEvent::MouseWheel { delta, .. } => {
                self.wheel += match delta {
                    MouseScrollDelta::LineDelta(_, y) => *y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / PIXELS_PER_WHEEL_LINE,
                };
                true
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = Vec2::new(position.x as f32, position.y as f32);
                if let (Some(last), true) = (self.cursor, self.is_held(Action::Look)) {
                    self.look_delta += p - last;
                }
                self.cursor = Some(p);
                true
            }
            WindowEvent::CursorLeft { .. } => {
                self.cursor = None;
                true
            }
            WindowEvent::Focused(false) => {
                // Keys released while another window has focus never reach us: let go of everything.
                self.held = [false; ACTION_COUNT];
                true
            }
            _ => false,
        }
    }

    /// Call after the frame used the input: clears presses, wheel and look motion (held actions stay).
    pub fn end_frame(&mut self) {
        self.pressed = [0; ACTION_COUNT];
        self.wheel = 0.0;
        self.look_delta = Vec2::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_between_frames_is_counted_once_and_cleared_after_the_frame() {
        let mut input = InputState::default();
        input.set(Action::Reset, true);
        input.set(Action::Reset, false);
        assert!(!input.is_held(Action::Reset));
        assert_eq!(input.presses(Action::Reset), 1);
        input.set(Action::Fast, true);
        input.set(Action::Fast, true);
        assert_eq!(input.presses(Action::Fast), 1, "holding is one press");
        input.end_frame();
        assert!(!input.was_pressed(Action::Reset));
        assert!(input.is_held(Action::Fast));
    }

    #[test]
    fn every_action_has_a_binding() {
        let keys = [
            KeyCode::KeyW,
            KeyCode::KeyS,
            KeyCode::KeyA,
            KeyCode::KeyD,
            KeyCode::KeyE,
            KeyCode::KeyQ,
            KeyCode::ShiftLeft,
            KeyCode::KeyG,
            KeyCode::KeyR,
            KeyCode::KeyP,
            KeyCode::KeyN,
            KeyCode::Tab,
            KeyCode::PageUp,
            KeyCode::F1,
            KeyCode::F2,
            KeyCode::F3,
            KeyCode::F4,
            KeyCode::F5,
            KeyCode::Escape,
        ];
        let mut bound = [false; ACTION_COUNT];
        for a in keys.iter().filter_map(|&k| action_for_key(k)) {
            bound[a as usize] = true;
        }
        for b in [MouseButton::Left, MouseButton::Middle, MouseButton::Right] {
            bound[action_for_button(b).unwrap() as usize] = true;
        }
        assert!(bound.iter().all(|&b| b), "{bound:?}");
    }
}
