//! Gamepads through gilrs: the first connected pad's sticks, triggers and a few buttons, polled once per frame.
//! A machine without gamepad support (no udev, no permission) just has no gamepad: never an error.

use gilrs::{Axis, Button, EventType, Gilrs};
use glam::Vec2;

/// Stick deflection below this reads as zero: worn sticks never rest exactly at the centre.
pub const STICK_DEADZONE: f32 = 0.15;
/// Trigger or stick movement beyond this counts as "the gamepad is being used".
const ACTIVE_THRESHOLD: f32 = 0.3;

/// One frame of the first gamepad.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GamepadState {
    pub connected: bool,
    /// Some stick, trigger or button was used this frame (the desktop then lets the pad drive the hands).
    pub active: bool,
    pub left_stick: Vec2,
    pub right_stick: Vec2,
    /// 0..1.
    pub left_trigger: f32,
    pub right_trigger: f32,
    /// D-pad up = +1, down = -1.
    pub dpad_vertical: f32,
    /// Pressed since the last frame: Start (pause), Select (reset), South (single step).
    pub pause_pressed: bool,
    pub reset_pressed: bool,
    pub step_pressed: bool,
}

/// Applies the deadzone and rescales the rest to 0..1, so small motions start from zero.
pub fn deadzone(v: Vec2) -> Vec2 {
    let len = v.length();
    if len <= STICK_DEADZONE || !len.is_finite() {
        Vec2::ZERO
    } else {
        v / len * ((len - STICK_DEADZONE) / (1.0 - STICK_DEADZONE)).min(1.0)
    }
}

/// The gilrs context, if this machine has one.
pub struct Gamepads {
    gilrs: Option<Gilrs>,
}

impl Gamepads {
    pub fn new() -> Gamepads {
        let gilrs = match Gilrs::new() {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::info!("no gamepad support here: {e}");
                None
            }
        };
        Gamepads { gilrs }
    }

    /// Drains gilrs's events and reads the first connected pad.
    pub fn poll(&mut self) -> GamepadState {
        let mut state = GamepadState::default();
        let Some(gilrs) = self.gilrs.as_mut() else {
            return state;
        };
        while let Some(event) = gilrs.next_event() {
            match event.event {
                EventType::ButtonPressed(Button::Start, _) => state.pause_pressed = true,
                EventType::ButtonPressed(Button::Select, _) => state.reset_pressed = true,
                EventType::ButtonPressed(Button::South, _) => state.step_pressed = true,
                _ => {}
            }
            state.active |= matches!(event.event, EventType::ButtonPressed(..));
        }
        let Some((_, pad)) = gilrs.gamepads().next() else {
            return state;
        };
        let stick = |x: Axis, y: Axis| deadzone(Vec2::new(pad.value(x), pad.value(y)));
        let trigger = |b: Button| pad.button_data(b).map_or(0.0, |d| d.value().clamp(0.0, 1.0));
        state.connected = true;
        state.left_stick = stick(Axis::LeftStickX, Axis::LeftStickY);
        state.right_stick = stick(Axis::RightStickX, Axis::RightStickY);
        state.left_trigger = trigger(Button::LeftTrigger2);
        state.right_trigger = trigger(Button::RightTrigger2);
        state.dpad_vertical =
            f32::from(u8::from(pad.is_pressed(Button::DPadUp))) - f32::from(u8::from(pad.is_pressed(Button::DPadDown)));
        state.active |= state.left_stick.length() > ACTIVE_THRESHOLD
            || state.right_stick.length() > ACTIVE_THRESHOLD
            || state.left_trigger.max(state.right_trigger) > ACTIVE_THRESHOLD
            || state.dpad_vertical != 0.0;
        state
    }
}

impl Default for Gamepads {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadzone_zeroes_small_deflections_and_rescales_the_rest() {
        assert_eq!(deadzone(Vec2::new(0.1, 0.05)), Vec2::ZERO);
        assert_eq!(deadzone(Vec2::new(f32::NAN, 0.0)), Vec2::ZERO);
        assert!((deadzone(Vec2::new(1.0, 0.0)).x - 1.0).abs() < 1e-6);
        let half = deadzone(Vec2::new(0.0, -(STICK_DEADZONE + 1.0) / 2.0));
        assert!((half.y + 0.5).abs() < 1e-6, "{half}");
    }
}
