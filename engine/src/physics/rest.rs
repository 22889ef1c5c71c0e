//! Our rest detection. Every awake body keeps its last [`REST_WINDOW`] poses in a ring buffer; a body that moved
//! less than a linear threshold and turned less than an angular threshold, comparing every pose in the window with
//! the newest, is *still*. An island whose bodies are all still is put to rest (velocities zeroed, solver skips it).
//! Unlike a velocity threshold, this cannot be fooled by a body that jitters in place under quantization: jitter
//! within the thresholds is still, and the first step at rest ends it.

use glam::{Quat, Vec3};

/// Poses kept per body: 16 steps is 178 ms at 90 Hz.
pub const REST_WINDOW: usize = 16;

/// The last poses of one body.
#[derive(Clone, Copy, Debug)]
pub struct PoseHistory {
    positions: [Vec3; REST_WINDOW],
    rotations: [Quat; REST_WINDOW],
    /// Index of the newest pose.
    head: u8,
    /// Poses recorded so far, up to the window.
    len: u8,
}

impl Default for PoseHistory {
    fn default() -> Self {
        Self {
            positions: [Vec3::ZERO; REST_WINDOW],
            rotations: [Quat::IDENTITY; REST_WINDOW],
            head: 0,
            len: 0,
        }
    }
}

impl PoseHistory {
    pub fn clear(&mut self) {
        self.len = 0;
    }

    pub fn push(&mut self, position: Vec3, rotation: Quat) {
        self.head = ((self.head as usize + 1) % REST_WINDOW) as u8;
        self.positions[self.head as usize] = position;
        self.rotations[self.head as usize] = rotation;
        self.len = (self.len + 1).min(REST_WINDOW as u8);
    }

    /// True when the window is full and no pose in it is farther than `max_distance` (m) or turned more than the
    /// angle whose half-angle cosine is `min_half_cos` from the newest pose.
    pub fn is_still(&self, max_distance: f32, min_half_cos: f32) -> bool {
        if (self.len as usize) < REST_WINDOW {
            return false;
        }
        let p = self.positions[self.head as usize];
        let q = self.rotations[self.head as usize];
        let max_d2 = max_distance * max_distance;
        self.positions.iter().zip(&self.rotations).all(|(pk, qk)| {
            // |dot| because q and -q are the same rotation.
            (*pk - p).length_squared() <= max_d2 && qk.dot(q).abs() >= min_half_cos
        })
    }
}

/// Cosine of half of `angle`: the smallest |q0·q1| two rotations at most `angle` apart can have.
pub fn min_half_cos(angle_rad: f32) -> f32 {
    (0.5 * angle_rad).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn still_only_after_a_full_window_of_small_motion() {
        let mut h = PoseHistory::default();
        let c = min_half_cos(0.01);
        for i in 0..REST_WINDOW {
            assert!(!h.is_still(0.005, c), "not still before the window is full ({i})");
            h.push(Vec3::new(0.0, 0.5 + i as f32 * 1e-4, 0.0), Quat::IDENTITY);
        }
        assert!(h.is_still(0.005, c));
    }

    #[test]
    fn motion_or_turn_beyond_thresholds_in_the_window_is_not_still() {
        let c = min_half_cos(0.01);
        let mut h = PoseHistory::default();
        for i in 0..REST_WINDOW {
            h.push(Vec3::new(i as f32 * 0.001, 0.0, 0.0), Quat::IDENTITY);
        }
        assert!(!h.is_still(0.005, c), "moved 15 mm over the window");
        let mut h = PoseHistory::default();
        for i in 0..REST_WINDOW {
            h.push(Vec3::ZERO, Quat::from_rotation_y(i as f32 * 0.002));
        }
        assert!(!h.is_still(0.005, c), "turned 0.03 rad over the window");
        // Old motion leaves the window.
        for _ in 0..REST_WINDOW {
            h.push(Vec3::ZERO, Quat::from_rotation_y(0.03));
        }
        assert!(h.is_still(0.005, c));
    }

    #[test]
    fn negated_quaternion_is_the_same_rotation() {
        let mut h = PoseHistory::default();
        let q = Quat::from_rotation_x(1.0);
        for i in 0..REST_WINDOW {
            h.push(Vec3::ZERO, if i % 2 == 0 { q } else { -q });
        }
        assert!(h.is_still(0.005, min_half_cos(0.01)));
    }
}
