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

/// Both hands, and the head, at one display time (ns), in the play space.
#[derive(Clone, Copy, Debug)]
pub struct HandsAt {
    pub time_ns: i64,
    pub hands: [XrHand; HAND_COUNT],
    /// The eyes' midpoint and orientation (`XrSession::locate_head`); `None` while the runtime cannot place them.
    pub head: Option<Pose>,
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

/// Snap turn on the right thumbstick: the play space turns this much per flick unless told otherwise
/// (`--snap-turn-deg`).
pub const DEFAULT_SNAP_TURN_DEG: f32 = 30.0;
/// A flick is the right stick past this tilt sideways; it must come back under [`SNAP_RELEASE`] before the next.
const SNAP_PRESS: f32 = 0.7;
const SNAP_RELEASE: f32 = 0.3;

/// Where the runtime's play space sits in the world: turned by `yaw` about the vertical, then placed at `origin`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaySpace {
    pub origin: Vec3,
    pub yaw: Quat,
}

impl PlaySpace {
    pub fn at(origin: Vec3) -> PlaySpace {
        PlaySpace {
            origin,
            yaw: Quat::IDENTITY,
        }
    }

    /// A point of the play space in the world.
    pub fn point(&self, local: Vec3) -> Vec3 {
        self.origin + self.yaw * local
    }

    /// A pose of the play space in the world.
    pub fn pose(&self, local: Pose) -> Pose {
        Pose::new(self.point(local.position), self.yaw * local.rotation)
    }

    /// The play space turned by `angle` (rad, positive to the left) about the vertical through the play-space
    /// point `pivot` (the head), which stays where it was in the world.
    pub fn turned(&self, angle: f32, pivot: Vec3) -> PlaySpace {
        let yaw = (Quat::from_rotation_y(angle) * self.yaw).normalize();
        PlaySpace {
            origin: self.point(pivot) - yaw * pivot,
            yaw,
        }
    }
}

/// The snap turn a right-stick tilt `x` asks for, if any: ∓`step_rad` (right turns right) once per flick;
/// `latched` remembers a flick until the stick comes back. A step of 0 turns snap turning off.
pub fn snap_turn(x: f32, latched: &mut bool, step_rad: f32) -> Option<f32> {
    if !x.is_finite() || step_rad == 0.0 {
        return None;
    }
    if *latched {
        *latched = x.abs() >= SNAP_RELEASE;
        return None;
    }
    if x.abs() >= SNAP_PRESS {
        *latched = true;
        return Some(-step_rad * x.signum());
    }
    None
}

pub fn avatar_input_at(
    prev: Option<&HandsAt>,
    cur: &HandsAt,
    time_ns: i64,
    grips: [f32; HAND_COUNT],
    space: PlaySpace,
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
            pose: space.pose(pose),
            grip: grips[i],
            // VR grabs what the hand touches (nearest cube within reach), not along a ray.
            ray: None,
            linear_velocity: now.linear_velocity.map(|v| space.yaw * v),
            angular_velocity: now.angular_velocity.map(|v| space.yaw * v),
        };
    }
    // The head as the other players see it: between the last two frames at the step's time, like the hands, then
    // through the same play space. Untracked now: none (the avatar keeps the last one it had).
    input.head = cur.head.map(|now| {
        let local = match prev
            .and_then(|p| p.head)
            .filter(|_| prev.is_some_and(|p| p.time_ns < cur.time_ns))
        {
            Some(before) => {
                let p = prev.expect("filtered above");
                let t = ((time_ns - p.time_ns) as f32 / (cur.time_ns - p.time_ns) as f32).clamp(0.0, 1.0);
                Pose::new(
                    before.position.lerp(now.position, t),
                    before.rotation.slerp(now.rotation, t),
                )
            }
            None => now,
        };
        space.pose(local)
    });
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snap_turn_turns_about_the_head_and_once_per_flick() {
        let space = PlaySpace::at(Vec3::new(1.0, 0.0, 2.0));
        let head = Vec3::new(0.3, 1.7, -0.2);
        let turned = space.turned(-DEFAULT_SNAP_TURN_DEG.to_radians(), head);
        assert!(
            turned.point(head).distance(space.point(head)) < 1e-5,
            "the head stays put"
        );
        // Looking down −Z before, a right turn looks towards −Z rotated right (+X side).
        let forward = turned.yaw * Vec3::NEG_Z;
        assert!(forward.x > 0.49 && forward.z < -0.86, "{forward}");
        // Twelve flicks make a full circle.
        let full = (0..12).fold(space, |s, _| s.turned(DEFAULT_SNAP_TURN_DEG.to_radians(), head));
        assert!(
            full.point(Vec3::new(2.0, 0.0, 0.0))
                .distance(space.point(Vec3::new(2.0, 0.0, 0.0)))
                < 1e-4
        );
        // The stick: one turn per flick, none until it comes back; left turns left.
        let mut latched = false;
        assert_eq!(snap_turn(0.5, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()), None);
        assert_eq!(
            snap_turn(0.9, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()),
            Some(-DEFAULT_SNAP_TURN_DEG.to_radians())
        );
        assert_eq!(snap_turn(1.0, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()), None);
        assert_eq!(snap_turn(0.5, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()), None);
        assert_eq!(snap_turn(0.1, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()), None);
        assert_eq!(
            snap_turn(-0.8, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()),
            Some(DEFAULT_SNAP_TURN_DEG.to_radians())
        );
        assert_eq!(
            snap_turn(f32::NAN, &mut latched, DEFAULT_SNAP_TURN_DEG.to_radians()),
            None
        );
        // Configured: another step, or none at all.
        let mut latched = false;
        assert_eq!(snap_turn(0.9, &mut latched, 0.75), Some(-0.75));
        let mut latched = false;
        assert_eq!(snap_turn(0.9, &mut latched, 0.0), None);
    }

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
            head: Some(Pose::new(Vec3::new(x, 1.7, 0.0), Quat::from_rotation_y(x))),
        }
    }

    #[test]
    fn steps_between_frames_get_interpolated_poses_in_world_space() {
        let prev = hands_at(0, 0.0, true);
        let cur = hands_at(50_000_000, 1.0, true);
        let origin = PlaySpace::at(Vec3::new(10.0, 0.0, 0.0));
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

    /// Issue 30: the head goes into the avatar, between frames like the hands, through the same play space.
    #[test]
    fn the_head_goes_into_the_avatar_in_world_space() {
        let prev = hands_at(0, 0.0, true);
        let cur = hands_at(50_000_000, 1.0, true);
        let space = PlaySpace {
            origin: Vec3::new(10.0, 0.0, 0.0),
            yaw: Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
        };
        let mid = avatar_input_at(Some(&prev), &cur, 25_000_000, [0.0; 2], space);
        let head = mid.head.expect("a head");
        // Halfway: (0.5, 1.7, 0) in the play space, turned a quarter left and moved 10 m along x.
        assert!(
            head.position.distance(Vec3::new(10.0, 1.7, -0.5)) < 1e-5,
            "{}",
            head.position
        );
        let expected = space.yaw * Quat::from_rotation_y(0.5);
        assert!(head.rotation.angle_between(expected) < 1e-4);
        // Not located this frame: no head in the input (the avatar keeps its last).
        let lost = HandsAt { head: None, ..cur };
        assert!(avatar_input_at(Some(&prev), &lost, 25_000_000, [0.0; 2], space)
            .head
            .is_none());
        // No earlier frame: the current head.
        let first = avatar_input_at(None, &cur, 25_000_000, [0.0; 2], space);
        assert!(first.head.unwrap().position.distance(Vec3::new(10.0, 1.7, -1.0)) < 1e-5);
    }

    #[test]
    fn a_hand_that_was_lost_takes_the_current_pose() {
        let prev = hands_at(0, 0.0, false);
        let cur = hands_at(50_000_000, 1.0, true);
        let input = avatar_input_at(Some(&prev), &cur, 10_000_000, [0.0; 2], PlaySpace::at(Vec3::ZERO));
        assert_eq!(input.hands[0].pose.position.x, 1.0);
        assert!(input.hands[0].tracked);
        let lost = avatar_input_at(Some(&cur), &prev, 60_000_000, [0.0; 2], PlaySpace::at(Vec3::ZERO));
        assert!(
            !lost.hands[1].tracked,
            "untracked now is untracked, whatever came before"
        );
    }
}
