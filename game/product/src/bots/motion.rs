//! How a bot's hands move: straight at a speed limit, or over the piles (up to a cruise height, across, down) so a
//! carried cube does not plough through other stacks; grips ramp rather than jump, as a real trigger does.

use glam::{Quat, Vec3};

/// A hand's speed when reaching and carrying (m/s): a brisk human reach.
pub const HAND_SPEED_M_S: f32 = 3.0;
/// A hand's speed for the last stretch of putting a cube down (m/s).
pub const LOWER_SPEED_M_S: f32 = 0.15;
/// Closer than this (m) counts as there.
pub const ARRIVED_M: f32 = 0.005;
/// Grip change per step when squeezing or opening: from open to closed in 4 steps (44 ms).
pub const GRIP_PER_STEP: f32 = 0.25;

/// What a bot does with one hand this step: the pose and grip it reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandMotion {
    pub position: Vec3,
    pub rotation: Quat,
    pub grip: f32,
}

impl HandMotion {
    pub fn at(position: Vec3) -> HandMotion {
        HandMotion {
            position,
            rotation: Quat::IDENTITY,
            grip: 0.0,
        }
    }

    /// Moves towards `target` by at most `speed × dt`; true once there.
    pub fn approach(&mut self, target: Vec3, speed_m_s: f32, dt: f32) -> bool {
        self.position = step_towards(self.position, target, speed_m_s * dt);
        self.position.distance(target) <= ARRIVED_M
    }

    /// Goes to `target` over obstacles: up to `cruise_y` (or stays higher), across, then down; true once there.
    pub fn travel(&mut self, target: Vec3, cruise_y: f32, speed_m_s: f32, dt: f32) -> bool {
        let across = Vec3::new(target.x - self.position.x, 0.0, target.z - self.position.z);
        let waypoint = if across.length() <= ARRIVED_M {
            target
        } else if self.position.y < cruise_y - ARRIVED_M {
            Vec3::new(self.position.x, cruise_y, self.position.z)
        } else {
            Vec3::new(target.x, self.position.y, target.z)
        };
        self.approach(waypoint, speed_m_s, dt) && waypoint == target
    }

    /// Squeezes (towards 1) or opens (towards 0) by [`GRIP_PER_STEP`].
    pub fn grip_towards(&mut self, grip: f32) {
        self.grip = step_towards_scalar(self.grip, grip, GRIP_PER_STEP);
    }
}

/// `from` moved towards `to` by at most `max_m`.
pub fn step_towards(from: Vec3, to: Vec3, max_m: f32) -> Vec3 {
    let d = to - from;
    let len = d.length();
    if len <= max_m {
        to
    } else {
        from + d * (max_m / len)
    }
}

fn step_towards_scalar(from: f32, to: f32, max: f32) -> f32 {
    from + (to - from).clamp(-max, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn travel_goes_up_across_and_down_within_the_speed_limit() {
        let dt = crate::STEP_S as f32;
        let mut hand = HandMotion::at(Vec3::new(0.0, 1.0, 0.0));
        let target = Vec3::new(2.0, 0.5, 0.0);
        let mut path_top = 0.0f32;
        let mut steps = 0;
        loop {
            let before = hand.position;
            let there = hand.travel(target, 3.0, HAND_SPEED_M_S, dt);
            assert!(before.distance(hand.position) <= HAND_SPEED_M_S * dt + 1e-5);
            if there {
                break;
            }
            steps += 1;
            assert!(steps < 1000);
            path_top = path_top.max(hand.position.y);
            // Halfway across the hand is at the cruise height.
            if (hand.position.x - 1.0).abs() < 0.02 {
                assert!((hand.position.y - 3.0).abs() < 1e-5);
            }
        }
        assert_eq!(hand.position, target);
        assert!((path_top - 3.0).abs() < 1e-5);
        // 2 up + 2 across + 2.5 down at 3 m/s: 6.5 / 3 s, in whole steps.
        assert!((steps as f32 - 6.5 / 3.0 / dt).abs() <= 3.0, "{steps}");
        hand.grip_towards(1.0);
        hand.grip_towards(1.0);
        assert_eq!(hand.grip, 0.5);
    }
}
