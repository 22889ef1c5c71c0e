//! Hand targets for the desktop: a mouse hand that sits on the cursor ray, and two gamepad hands that the sticks
//! move about in front of the camera. Each gives a pose and a grip value, as a VR controller would.

use glam::{Quat, Vec2, Vec3};

use super::camera::FlyCamera;
use super::gamepad::GamepadState;

/// Where a hand is, how closed, and the ray it selects along (none: it selects what it touches).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandTarget {
    pub position: Vec3,
    pub rotation: Quat,
    /// 0 open … 1 closed.
    pub grip: f32,
    /// Origin and unit direction.
    pub ray: Option<(Vec3, Vec3)>,
}

/// How far along the ray the mouse hand floats when the ray hits nothing (m).
pub const DEFAULT_REACH_M: f32 = 4.0;
/// The wheel moves a held cube along the ray by this much per line (m), within these bounds.
pub const WHEEL_STEP_M: f32 = 0.25;
pub const MIN_REACH_M: f32 = 0.5;
pub const MAX_REACH_M: f32 = 60.0;

/// A hand on the cursor ray: over a cube it sits on the cube's surface where the ray enters (so grabbing holds the
/// cube at that point); holding, it keeps its distance, which the wheel changes. It turns with the camera, so a
/// held cube swings round with the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MouseHand {
    pub distance_m: f32,
}

impl Default for MouseHand {
    fn default() -> Self {
        Self {
            distance_m: DEFAULT_REACH_M,
        }
    }
}

impl MouseHand {
    /// `ray`: from [`FlyCamera::ray_through`]; `hit_m`: the distance to the cube the ray hits, if any; `holding`:
    /// the hand holds a cube; `wheel`: lines since the last frame; `grip`: the button is down.
    pub fn target(
        &mut self,
        camera: &FlyCamera,
        ray: (Vec3, Vec3),
        hit_m: Option<f32>,
        holding: bool,
        wheel: f32,
        grip: bool,
    ) -> HandTarget {
        if holding {
            self.distance_m = (self.distance_m + wheel * WHEEL_STEP_M).clamp(MIN_REACH_M, MAX_REACH_M);
        } else {
            self.distance_m = hit_m.unwrap_or(DEFAULT_REACH_M).clamp(0.0, MAX_REACH_M);
        }
        HandTarget {
            position: ray.0 + ray.1 * self.distance_m,
            rotation: camera.rotation(),
            grip: f32::from(u8::from(grip)),
            ray: Some(ray),
        }
    }
}

/// Hand speed under a full stick (m/s) and from the d-pad's up/down (m/s).
pub const STICK_SPEED_M_S: f32 = 2.0;
/// Hands stay within this distance of the camera (m).
pub const MAX_GAMEPAD_REACH_M: f32 = 6.0;

/// Two hands in the camera's frame (x right, y up, -z ahead): the left stick moves the left hand, the right stick
/// the right one, in the horizontal plane; the d-pad raises and lowers both; the triggers close them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GamepadHands {
    pub offsets: [Vec3; 2],
}

impl Default for GamepadHands {
    fn default() -> Self {
        Self {
            offsets: [Vec3::new(-0.35, -0.4, -1.2), Vec3::new(0.35, -0.4, -1.2)],
        }
    }
}

impl GamepadHands {
    /// Moves the hands by one frame of gamepad input; returns [left, right].
    pub fn targets(&mut self, camera: &FlyCamera, pad: &GamepadState, dt_s: f32) -> [HandTarget; 2] {
        let sticks = [pad.left_stick, pad.right_stick];
        let grips = [pad.left_trigger, pad.right_trigger];
        let mut out = [HandTarget {
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            grip: 0.0,
            ray: None,
        }; 2];
        // Hands move in the level frame of the camera, so pushing the stick forward moves a hand away, not down.
        let flat = Quat::from_rotation_y(camera.yaw);
        for (k, target) in out.iter_mut().enumerate() {
            let s: Vec2 = sticks[k];
            let v = Vec3::new(s.x, pad.dpad_vertical, -s.y) * STICK_SPEED_M_S * dt_s;
            self.offsets[k] = (self.offsets[k] + v).clamp_length_max(MAX_GAMEPAD_REACH_M);
            *target = HandTarget {
                position: camera.position + flat * self.offsets[k],
                rotation: flat,
                grip: grips[k].clamp(0.0, 1.0),
                ray: None,
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mouse_hand_sits_on_the_hit_and_the_wheel_moves_it_only_while_holding() {
        let camera = FlyCamera::default();
        let ray = (Vec3::ZERO, Vec3::NEG_Z);
        let mut hand = MouseHand::default();
        let t = hand.target(&camera, ray, Some(2.5), false, 3.0, false);
        assert_eq!(t.position, Vec3::new(0.0, 0.0, -2.5));
        assert_eq!(t.grip, 0.0);
        let t = hand.target(&camera, ray, None, true, 2.0, true);
        assert_eq!(t.position, Vec3::new(0.0, 0.0, -3.0));
        assert_eq!(t.grip, 1.0);
        let t = hand.target(&camera, ray, None, true, -100.0, true);
        assert_eq!(t.position.z, -MIN_REACH_M);
        let t = hand.target(&camera, ray, None, false, 0.0, false);
        assert_eq!(t.position.z, -DEFAULT_REACH_M);
    }

    #[test]
    fn sticks_move_each_hand_in_the_cameras_level_frame() {
        let camera = FlyCamera {
            yaw: std::f32::consts::FRAC_PI_2,
            ..FlyCamera::default()
        };
        let mut hands = GamepadHands::default();
        let start = hands.offsets;
        let pad = GamepadState {
            right_stick: Vec2::new(0.0, 1.0),
            right_trigger: 0.8,
            ..GamepadState::default()
        };
        let [left, right] = hands.targets(&camera, &pad, 0.5);
        assert_eq!(hands.offsets[0], start[0], "the left hand did not move");
        assert!((hands.offsets[1] - start[1]).distance(Vec3::new(0.0, 0.0, -1.0)) < 1e-6);
        // Turned 90° left, "ahead" is -x in the world.
        let ahead = right.position - camera.position;
        assert!(ahead.x < -2.0, "{ahead}");
        assert_eq!((left.grip, right.grip), (0.0, 0.8));
        assert!(right.ray.is_none());
    }
}
