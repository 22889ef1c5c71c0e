//! The fixed-step clock of `tumble vr`: the simulation's time follows the runtime's predicted display time in
//! whole 90 Hz steps, so physics runs at the same rate whatever the headset's refresh rate.

use super::{MAX_STEPS_PER_FRAME, STEP_NS};

/// The fixed-step clock: the simulation's time follows the predicted display time in whole 90 Hz steps.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepClock {
    /// Display time the simulation has reached (ns); None before the first frame.
    sim_time_ns: Option<i64>,
}

impl StepClock {
    /// The display time the simulation has reached (ns); None before the first frame.
    pub fn sim_time_ns(&self) -> Option<i64> {
        self.sim_time_ns
    }

    /// Steps to run so the simulation reaches `display_time_ns` (at most [`MAX_STEPS_PER_FRAME`]; time beyond
    /// that is dropped). The first frame runs none: it only sets the clock.
    pub fn steps_due(&mut self, display_time_ns: i64) -> u32 {
        let Some(sim) = self.sim_time_ns else {
            self.sim_time_ns = Some(display_time_ns);
            return 0;
        };
        let behind = display_time_ns - sim;
        if behind <= 0 {
            return 0;
        }
        let due = behind / STEP_NS;
        if due > i64::from(MAX_STEPS_PER_FRAME) {
            // A stall (or a paused headset): run the cap and let the simulation skip the rest.
            self.sim_time_ns = Some(display_time_ns);
            return MAX_STEPS_PER_FRAME;
        }
        self.sim_time_ns = Some(sim + due * STEP_NS);
        due as u32
    }
}

/// How far a frame shown at `display_time_ns` is past the last step, at `sim_time_ns`, in steps (0..1): where
/// between the previous step's poses and the last one's it draws the cubes. 1 (the last step's) before the clock
/// has started.
pub fn frame_alpha(sim_time_ns: Option<i64>, display_time_ns: i64) -> f32 {
    sim_time_ns.map_or(1.0, |sim| {
        ((display_time_ns - sim) as f64 / STEP_NS as f64).clamp(0.0, 1.0) as f32
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the clock over `frames` display frames of `period_ns` and counts steps.
    fn steps_over(period_ns: i64, frames: i64) -> u64 {
        let mut clock = StepClock::default();
        let mut steps = 0u64;
        for f in 0..=frames {
            steps += u64::from(clock.steps_due(1_000_000 + f * period_ns));
        }
        steps
    }

    /// Issue 13: frames between two steps draw different, in-between poses. At 120, 144 and 72 Hz against 90 Hz
    /// physics, no two consecutive frames draw the same moment (same last step and same blend), so a moving cube
    /// is never drawn twice in one place; and the blend is the display time's distance past the last step.
    #[test]
    fn consecutive_frames_never_repeat_a_pose_at_any_display_rate() {
        for hz in [72i64, 90, 120, 144] {
            let period = 1_000_000_000 / hz;
            let mut clock = StepClock::default();
            let mut last: Option<(Option<i64>, f32)> = None;
            for f in 0..hz * 5 {
                let display = 1_000_000 + f * period;
                clock.steps_due(display);
                let alpha = frame_alpha(clock.sim_time_ns(), display);
                let sim = clock.sim_time_ns().unwrap();
                assert!((0.0..1.0).contains(&alpha), "{hz} Hz frame {f}: {alpha}");
                let expected = (display - sim) as f32 / STEP_NS as f32;
                assert!((alpha - expected).abs() < 1e-6);
                if f > 0 {
                    assert_ne!(
                        last,
                        Some((Some(sim), alpha)),
                        "{hz} Hz: frame {f} repeats the one before"
                    );
                }
                last = Some((Some(sim), alpha));
            }
        }
        assert_eq!(
            frame_alpha(None, 5),
            1.0,
            "before the clock starts: the last step's poses"
        );
    }

    #[test]
    fn ninety_steps_a_second_whatever_the_display_rate() {
        for hz in [60, 72, 90, 120, 144] {
            let period = 1_000_000_000 / hz;
            let steps = steps_over(period, hz * 10);
            assert!((899..=900).contains(&steps), "{hz} Hz display: {steps} steps in 10 s");
        }
    }

    #[test]
    fn a_stall_runs_the_cap_then_catches_up_in_step() {
        let mut clock = StepClock::default();
        assert_eq!(clock.steps_due(0), 0, "the first frame only sets the clock");
        assert_eq!(clock.steps_due(STEP_NS), 1);
        assert_eq!(
            clock.steps_due(STEP_NS + 2_000_000_000),
            MAX_STEPS_PER_FRAME,
            "a 2 s stall is capped"
        );
        let next = clock.steps_due(STEP_NS + 2_000_000_000 + STEP_NS);
        assert!(
            next <= 1,
            "after the cap the clock has dropped the stall, not queued it ({next})"
        );
    }

    #[test]
    fn time_going_backwards_runs_nothing() {
        let mut clock = StepClock::default();
        clock.steps_due(10 * STEP_NS);
        assert_eq!(clock.steps_due(5 * STEP_NS), 0);
        assert_eq!(clock.steps_due(11 * STEP_NS), 1);
    }
}
