//! From OpenXR hands to the avatar input `game::interaction` takes, once per fixed step.
//!
//! The runtime gives each hand at each display frame's predicted time; the simulation steps at 90 Hz between
//! frames. Each step gets the hand pose interpolated between the last two frames at the step's own time, so a
//! hand sweeping through a 20 Hz or 72 Hz frame sequence still moves every step (the interaction's velocity
//! history then sees the real motion, not one jump and then stillness). The play space (STAGE, floor at y = 0)
//! is placed in the world by a translation: where the player stands.

use glam::{Quat, Vec2, Vec3};
use tumble_engine::xr::HandInput as XrHand;

use crate::avatar::{AvatarInput, HandInput, Pose, HAND_COUNT};

/// Both hands at one display time (ns).
#[derive(Clone, Copy, Debug)]
pub struct HandsAt {
    pub time_ns: i64,
    pub hands: [XrHand; HAND_COUNT],
}

/// The avatar input for a step at `time_ns`, between frames `prev` and `cur`, with grips from `grips` and the play
/// space's origin at `origin` in the world. A hand untracked in either frame takes the current frame's pose alone.
/// Smooth movement at full tilt of the left thumbstick (m/s): a walking pace. `tumble vr --move-speed`.
pub const DEFAULT_MOVE_SPEED_M_S: f32 = 2.0;
/// Thumbstick tilt below which nothing moves (sticks rest a little off centre).
const STICK_DEAD_ZONE: f32 = 0.15;

/// How far the play space moves in `dt` seconds for a left thumbstick at `stick` (x right, y forward): along the
/// left hand's aim (`aim`), kept level, at `speed` m/s at full tilt; nothing inside the dead zone. Pointing where
/// to go with the hand, the common choice of VR games, and one that needs no head pose.
pub fn stick_motion(stick: Vec2, aim: Quat, dt: f32, speed: f32) -> Vec3 {
    let tilt = stick.length();
    let usable = |v: f32| v.is_finite() && v > 0.0;
    if tilt < STICK_DEAD_ZONE || !tilt.is_finite() || !usable(dt) || !usable(speed) {
        return Vec3::ZERO;
    }
    let forward = (aim * Vec3::NEG_Z) * Vec3::new(1.0, 0.0, 1.0);
    let forward = forward.try_normalize().unwrap_or(Vec3::NEG_Z);
    let right = forward.cross(Vec3::Y);
    let stick = stick / tilt.max(1.0);
    (right * stick.x + forward * stick.y) * speed * dt
}

pub fn avatar_input_at(
    prev: Option<&HandsAt>,
    cur: &HandsAt,
    time_ns: i64,
    grips: [f32; HAND_COUNT],
    origin: Vec3,
) -> AvatarInput {
    let mut input = AvatarInput::default();
    for (i, hand) in input.hands.iter_mut().enumerate() {
        let now = &cur.hands[i];
        let pose = match prev.filter(|p| p.hands[i].tracked && p.time_ns < cur.time_ns) {
            Some(p) => {
                let t = ((time_ns - p.time_ns) as f32 / (cur.time_ns - p.time_ns) as f32).clamp(0.0, 1.0);
                let before = &p.hands[i];
                Pose::new(
                    before.grip_position.lerp(now.grip_position, t),
                    before.grip_rotation.slerp(now.grip_rotation, t),
                )
            }
            None => Pose::new(now.grip_position, now.grip_rotation),
        };
        *hand = HandInput {
            tracked: now.tracked,
            pose: Pose::new(pose.position + origin, pose.rotation),
            grip: grips[i],
            // VR grabs what the hand touches (nearest cube within reach), not along a ray.
            ray: None,
            linear_velocity: now.linear_velocity,
            angular_velocity: now.angular_velocity,
        };
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_left_stick_moves_the_player_level_along_the_hand() {
        let dt = 0.5;
        // Pointing straight ahead (−Z), full forward: 1 m in half a second at 2 m/s.
        let ahead = stick_motion(Vec2::new(0.0, 1.0), Quat::IDENTITY, dt, 2.0);
        assert!(ahead.distance(Vec3::new(0.0, 0.0, -1.0)) < 1e-6, "{ahead}");
        // Full right, pointing ahead: +X.
        assert!(stick_motion(Vec2::new(1.0, 0.0), Quat::IDENTITY, dt, 2.0).distance(Vec3::X) < 1e-6);
        // A hand pointing down and to the left: level movement to the left, never into the ground.
        let down_left = Quat::from_rotation_y(std::f32::consts::FRAC_PI_2) * Quat::from_rotation_x(-1.0);
        let m = stick_motion(Vec2::new(0.0, 1.0), down_left, dt, 2.0);
        assert!(m.y.abs() < 1e-6 && m.x < -0.99, "{m}");
        // A diagonal past full tilt is no faster than full tilt.
        assert!(stick_motion(Vec2::new(1.0, 1.0), Quat::IDENTITY, dt, 2.0).length() <= 1.0 + 1e-6);
        // The dead zone, a zero speed (movement off), garbage.
        assert_eq!(stick_motion(Vec2::new(0.1, 0.05), Quat::IDENTITY, dt, 2.0), Vec3::ZERO);
        assert_eq!(stick_motion(Vec2::new(0.0, 1.0), Quat::IDENTITY, dt, 0.0), Vec3::ZERO);
        assert_eq!(
            stick_motion(Vec2::new(f32::NAN, 1.0), Quat::IDENTITY, dt, 2.0),
            Vec3::ZERO
        );
    }
    use glam::Quat;

    fn hands_at(time_ns: i64, x: f32, tracked: bool) -> HandsAt {
        let hand = XrHand {
            tracked,
            grip_position: Vec3::new(x, 1.0, 0.0),
            grip_rotation: Quat::IDENTITY,
            ..XrHand::default()
        };
        HandsAt {
            time_ns,
            hands: [hand; HAND_COUNT],
        }
    }

    #[test]
    fn steps_between_frames_get_interpolated_poses_in_world_space() {
        let prev = hands_at(0, 0.0, true);
        let cur = hands_at(50_000_000, 1.0, true);
        let origin = Vec3::new(10.0, 0.0, 0.0);
        let mid = avatar_input_at(Some(&prev), &cur, 25_000_000, [0.2, 0.9], origin);
        assert!(
            (mid.hands[0].pose.position.x - 10.5).abs() < 1e-5,
            "{}",
            mid.hands[0].pose.position
        );
        assert_eq!(mid.hands[0].grip, 0.2);
        assert_eq!(mid.hands[1].grip, 0.9);
        let end = avatar_input_at(Some(&prev), &cur, 80_000_000, [0.0; 2], origin);
        assert_eq!(
            end.hands[0].pose.position.x, 11.0,
            "past the frame: held at the frame, not extrapolated"
        );
    }

    #[test]
    fn a_hand_that_was_lost_takes_the_current_pose() {
        let prev = hands_at(0, 0.0, false);
        let cur = hands_at(50_000_000, 1.0, true);
        let input = avatar_input_at(Some(&prev), &cur, 10_000_000, [0.0; 2], Vec3::ZERO);
        assert_eq!(input.hands[0].pose.position.x, 1.0);
        assert!(input.hands[0].tracked);
        let lost = avatar_input_at(Some(&cur), &prev, 60_000_000, [0.0; 2], Vec3::ZERO);
        assert!(
            !lost.hands[1].tracked,
            "untracked now is untracked, whatever came before"
        );
    }
}
