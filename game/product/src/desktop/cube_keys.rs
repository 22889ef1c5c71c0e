//! The cube game's controls in the window (`tumble compare --view`): arrow keys or WASD roll, space hovers and
//! blows, Z pulls; on a gamepad the left stick rolls, the right trigger hovers and the left trigger pulls. Held
//! keys are tracked from the window's key events by physical key (the same place on every layout).

use tumble_engine::input::winit::keyboard::KeyCode;
use tumble_engine::input::GamepadState;

use crate::cube_game::CubeInput;

/// A stick pushed further than this along an axis holds that direction's key.
pub const STICK_KEY_THRESHOLD: f32 = 0.5;
/// A trigger pressed further than this holds its key.
pub const TRIGGER_KEY_THRESHOLD: f32 = 0.5;

/// The cube game's keys held now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CubeKeys {
    held: CubeInput,
}

/// The cube-game key a physical key is, if any.
pub fn cube_key(code: KeyCode) -> Option<u8> {
    Some(match code {
        KeyCode::ArrowLeft | KeyCode::KeyA => CubeInput::LEFT,
        KeyCode::ArrowRight | KeyCode::KeyD => CubeInput::RIGHT,
        KeyCode::ArrowUp | KeyCode::KeyW => CubeInput::FORWARD,
        KeyCode::ArrowDown | KeyCode::KeyS => CubeInput::BACK,
        KeyCode::Space => CubeInput::HOVER,
        KeyCode::KeyZ => CubeInput::PULL,
        _ => return None,
    })
}

impl CubeKeys {
    /// A key went down or up.
    pub fn key(&mut self, code: KeyCode, pressed: bool) {
        if let Some(key) = cube_key(code) {
            self.held = self.held.with(key, pressed);
        }
    }

    /// Forgets every held key (the window lost focus: the releases will not come).
    pub fn release_all(&mut self) {
        self.held = CubeInput::NONE;
    }

    /// This step's input: the keys held, and what the gamepad holds.
    pub fn input(&self, pad: &GamepadState) -> CubeInput {
        if !pad.connected {
            return self.held;
        }
        let s = pad.left_stick;
        let pad_keys = [
            (s.x < -STICK_KEY_THRESHOLD, CubeInput::LEFT),
            (s.x > STICK_KEY_THRESHOLD, CubeInput::RIGHT),
            (s.y > STICK_KEY_THRESHOLD, CubeInput::FORWARD),
            (s.y < -STICK_KEY_THRESHOLD, CubeInput::BACK),
            (pad.right_trigger > TRIGGER_KEY_THRESHOLD, CubeInput::HOVER),
            (pad.left_trigger > TRIGGER_KEY_THRESHOLD, CubeInput::PULL),
        ];
        pad_keys
            .iter()
            .filter(|(on, _)| *on)
            .fold(self.held, |input, &(_, key)| input.with(key, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec2;

    #[test]
    fn keys_and_the_gamepad_hold_the_cube_games_six_keys() {
        let mut keys = CubeKeys::default();
        let none = GamepadState::default();
        keys.key(KeyCode::ArrowUp, true);
        keys.key(KeyCode::Space, true);
        keys.key(KeyCode::KeyQ, true);
        assert_eq!(keys.input(&none).bits(), CubeInput::FORWARD | CubeInput::HOVER);
        keys.key(KeyCode::ArrowUp, false);
        keys.key(KeyCode::KeyZ, true);
        assert_eq!(keys.input(&none).bits(), CubeInput::HOVER | CubeInput::PULL);
        let pad = GamepadState {
            connected: true,
            left_stick: Vec2::new(-0.9, -0.7),
            left_trigger: 0.2,
            right_trigger: 0.8,
            ..GamepadState::default()
        };
        keys.release_all();
        assert_eq!(
            keys.input(&pad).bits(),
            CubeInput::LEFT | CubeInput::BACK | CubeInput::HOVER,
            "stick down-left and the right trigger; the left trigger is not pressed far enough"
        );
    }
}
