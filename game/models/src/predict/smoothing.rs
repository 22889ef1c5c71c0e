//! How the client draws its own cube across corrections: a rewind moves the simulated cube at once (by up to a
//! metre when the players meet); the drawn cube keeps its pose and an offset (drawn = simulated + offset) eases
//! away, each step by a tenth of what is left (the prediction article's 0.9 per frame), but never by more than
//! [`MAX_EASE_M_PER_STEP`] (2.7 m/s) or [`MAX_EASE_RAD_PER_STEP`]: so no correction is drawn larger than
//! 5 cm in one frame, however large. `tumble_game::smoothing::DrawSmoothing` (the spring the other bodies use) moves a
//! 1 m offset up to 7 cm in a step.

use glam::{Quat, Vec3};

use tumble_game::avatar::Pose;

/// Share of the offset eased away each step.
pub const EASE_PER_STEP: f32 = 0.1;
/// The most the drawn cube moves in a step beyond its simulated motion (m): 2.7 m/s.
pub const MAX_EASE_M_PER_STEP: f32 = 0.03;
/// The most it turns in a step beyond its simulated turning (rad): 4.5 rad/s.
pub const MAX_EASE_RAD_PER_STEP: f32 = 0.05;
/// Offsets under this (m, rad) are dropped: the cube is drawn where it is simulated.
const SETTLED: f32 = 1e-6;

/// One cube's drawn offset from its simulated pose.
#[derive(Clone, Copy, Debug)]
pub struct CorrectionSmoothing {
    /// drawn position = simulated + this.
    position: Vec3,
    /// drawn rotation = this · simulated.
    rotation: Quat,
}

impl Default for CorrectionSmoothing {
    fn default() -> Self {
        Self {
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
        }
    }
}

impl CorrectionSmoothing {
    /// The simulation moved the cube from `old` to `new`: it stays drawn where it was.
    pub fn on_correction(&mut self, old: &Pose, new: &Pose) {
        let drawn = self.drawn(old);
        if !(drawn.position.is_finite() && new.position.is_finite() && new.rotation.is_finite()) {
            *self = Self::default();
            return;
        }
        self.position = drawn.position - new.position;
        self.rotation = (drawn.rotation * new.rotation.conjugate()).normalize();
    }

    /// Eases the offset by one step; returns how far the drawn position moved for it (m).
    pub fn step(&mut self) -> f32 {
        let left = self.position.length();
        let ease = (left * EASE_PER_STEP).min(MAX_EASE_M_PER_STEP);
        let moved = if left <= SETTLED || left - ease <= SETTLED {
            self.position = Vec3::ZERO;
            left
        } else {
            self.position *= (left - ease) / left;
            ease
        };
        let (axis, angle) = self.rotation.to_axis_angle();
        let angle = if angle > std::f32::consts::PI {
            angle - std::f32::consts::TAU
        } else {
            angle
        };
        let turn = (angle.abs() * EASE_PER_STEP).min(MAX_EASE_RAD_PER_STEP);
        self.rotation = if angle.abs() - turn <= SETTLED || !axis.is_finite() {
            Quat::IDENTITY
        } else {
            Quat::from_axis_angle(axis, angle.signum() * (angle.abs() - turn))
        };
        moved
    }

    /// Where to draw the cube simulated at `sim`.
    pub fn drawn(&self, sim: &Pose) -> Pose {
        Pose::new(sim.position + self.position, (self.rotation * sim.rotation).normalize())
    }

    /// The position offset still drawn (m).
    pub fn offset_m(&self) -> f32 {
        self.position.length()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_correction_is_drawn_without_a_jump_and_eased_out_at_a_bounded_rate() {
        let mut s = CorrectionSmoothing::default();
        let old = Pose::new(Vec3::new(1.0, 0.8, 2.0), Quat::from_rotation_y(0.3));
        let new = Pose::new(Vec3::new(2.0, 0.8, 2.0), Quat::from_rotation_y(0.1));
        s.on_correction(&old, &new);
        let drawn = s.drawn(&new);
        assert!(
            drawn.position.distance(old.position) < 1e-6,
            "no jump at the correction"
        );
        assert!(drawn.rotation.angle_between(old.rotation) < 1e-3);
        let mut steps = 0;
        while s.offset_m() > 0.0 {
            let before = s.drawn(&new).position;
            let moved = s.step();
            let after = s.drawn(&new).position;
            assert!((after.distance(before) - moved).abs() < 1e-5);
            assert!(moved <= MAX_EASE_M_PER_STEP + 1e-6, "{moved}");
            steps += 1;
            assert!(steps < 400, "eased out");
        }
        // 1 m at 3 cm a step, then a tenth a step below 30 cm.
        assert!(steps > 30, "{steps}");
        assert_eq!(s.drawn(&new).position, new.position);
        assert!(
            s.drawn(&new).rotation.angle_between(new.rotation) < 1e-3,
            "the turn eased out too"
        );
        // A small correction eases by a tenth a step.
        s.on_correction(&new, &Pose::new(new.position + Vec3::X * 0.01, new.rotation));
        assert!((s.step() - 0.001).abs() < 1e-6);
    }
}
