//! Fixed 90 Hz steps under a variable frame rate: each frame adds its duration to an accumulator and takes as many
//! whole steps as fit; what is left over says how far between the last two steps the frame is shown
//! ([`FixedStep::alpha`], for interpolation). A frame that took very long (a debugger stop, a dragged window)
//! takes at most [`MAX_STEPS_PER_FRAME`] steps and drops the rest, so the simulation never spirals behind.

/// The physics step (s).
pub use crate::STEP_S;
/// Most steps one frame may take: 8 steps is 89 ms of simulation.
pub const MAX_STEPS_PER_FRAME: u32 = 8;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FixedStep {
    accumulator_s: f64,
}

impl FixedStep {
    /// Adds one frame's duration (s); returns the number of steps to take now.
    pub fn advance(&mut self, frame_s: f64) -> u32 {
        if frame_s.is_finite() && frame_s > 0.0 {
            self.accumulator_s += frame_s;
        }
        let due = (self.accumulator_s / STEP_S).floor();
        if due > f64::from(MAX_STEPS_PER_FRAME) {
            // Too far behind: take the most we may and forget the rest of the backlog.
            self.accumulator_s = self.accumulator_s.rem_euclid(STEP_S);
            return MAX_STEPS_PER_FRAME;
        }
        self.accumulator_s -= due * STEP_S;
        due as u32
    }

    /// Where the frame lies between the previous step and the last one, 0..1.
    pub fn alpha(&self) -> f32 {
        (self.accumulator_s / STEP_S).clamp(0.0, 1.0) as f32
    }

    /// Forgets the leftover (after a pause or a reset).
    pub fn clear(&mut self) {
        self.accumulator_s = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_match_elapsed_time_at_any_frame_rate() {
        for fps in [30.0, 59.94, 90.0, 144.0, 240.0] {
            let mut fixed = FixedStep::default();
            let frames = (fps * 10.0) as u32;
            let steps: u32 = (0..frames).map(|_| fixed.advance(1.0 / fps)).sum();
            let expected = (f64::from(frames) / fps * f64::from(crate::STEP_HZ)).floor() as u32;
            assert!(
                steps.abs_diff(expected) <= 1,
                "{fps} fps: {steps} steps, expected {expected}"
            );
            assert!((0.0..=1.0).contains(&fixed.alpha()));
        }
    }

    #[test]
    fn a_long_stall_takes_a_bounded_number_of_steps() {
        let mut fixed = FixedStep::default();
        assert_eq!(fixed.advance(5.0), MAX_STEPS_PER_FRAME);
        assert!(fixed.advance(STEP_S) <= 2, "the backlog was dropped");
        assert_eq!(fixed.advance(f64::NAN), 0);
        assert_eq!(fixed.advance(-1.0), 0);
    }

    #[test]
    fn alpha_is_the_fraction_of_a_step_left_over() {
        let mut fixed = FixedStep::default();
        assert_eq!(fixed.advance(STEP_S * 2.5), 2);
        assert!((fixed.alpha() - 0.5).abs() < 1e-6);
    }
}
