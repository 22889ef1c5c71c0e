//! The playout delay buffer: when each step is due. The other side samples its input for step n at its own
//! time n·dt; the first input to arrive fixes the anchor, its arrival time less n·dt (the one-way delay then, as
//! this peer's clock sees the other's), and step n is due at anchor + delay + n·dt. Inputs that arrive later
//! than that schedule (jitter, or a loss: a lost input rides again in the next packets) are measured as lateness
//! past the anchor over a window of recent arrivals; the delay follows the 99th percentile of it plus one step,
//! never under the configured delay (100 ms by default), slewed 1 ms per frame so the picture never jumps: a
//! delay that grows repeats a frame now and then, one that shrinks runs a second step in a frame. Per frame at
//! most [`MAX_STEPS_PER_FRAME`] steps run (catching up), and a frame with a step due whose input is missing waits:
//! a hitch.
//!
//! The anchor never moves earlier: a first input that arrived late keeps that lateness as extra delay (at most
//! the jitter).

/// Steps run in one frame at most when catching up: more would make a slow frame slower still.
pub const MAX_STEPS_PER_FRAME: u32 = 4;
/// Default (and least) playout delay past the anchor (s).
pub const DEFAULT_DELAY_S: f64 = 0.1;
/// Most the delay may adapt to (s).
pub const MAX_DELAY_S: f64 = 2.0;
/// The delay moves towards its target at most this much per frame (s).
pub const SLEW_S_PER_FRAME: f64 = 0.001;
/// How early a step falls due, in steps (11 µs at 90 Hz; see [`PlayoutBuffer::due`]).
pub const DUE_EARLY_STEPS: f64 = 1e-3;
/// Arrivals the lateness window keeps (about 11 s at 90 Hz).
const LATENESS_WINDOW: usize = 1024;
/// Lateness is counted in bins of this many seconds (1 ms) up to [`MAX_DELAY_S`].
const BIN_S: f64 = 0.001;
const BINS: usize = (MAX_DELAY_S / BIN_S) as usize + 1;
/// Share of recent arrivals the delay must cover.
const COVERED_FRACTION: f64 = 0.99;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayoutConfig {
    /// Fixed step (s).
    pub dt_s: f64,
    /// The delay past the anchor: where it starts, and the least it adapts to (s).
    pub delay_s: f64,
    /// Grow the delay with the measured lateness (else it stays at `delay_s`).
    pub adaptive: bool,
}

impl Default for PlayoutConfig {
    fn default() -> Self {
        Self {
            dt_s: tumble_game::STEP_S,
            delay_s: DEFAULT_DELAY_S,
            adaptive: true,
        }
    }
}

/// What a frame runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramePlan {
    /// Steps to simulate now (0 ..= [`MAX_STEPS_PER_FRAME`]).
    pub steps: u32,
    /// A step was due and its input was missing: the frame waits.
    pub hitch: bool,
}

#[derive(Clone, Debug)]
pub struct PlayoutBuffer {
    config: PlayoutConfig,
    /// Arrival time less step × dt of the first input received (s).
    anchor_s: Option<f64>,
    /// Delay in use past the anchor (s).
    delay_s: f64,
    /// Ring of recent lateness bins, and how many arrivals fall in each bin.
    recent: Vec<u16>,
    next: usize,
    filled: usize,
    histogram: Vec<u32>,
}

impl PlayoutBuffer {
    pub fn new(config: PlayoutConfig) -> Self {
        Self {
            config,
            anchor_s: None,
            delay_s: config.delay_s.clamp(0.0, MAX_DELAY_S),
            recent: vec![0; LATENESS_WINDOW],
            next: 0,
            filled: 0,
            histogram: vec![0; BINS],
        }
    }

    /// The delay in use past the anchor (s).
    pub fn delay_s(&self) -> f64 {
        self.delay_s
    }

    /// The anchor (s), once an input has arrived.
    pub fn anchor_s(&self) -> Option<f64> {
        self.anchor_s
    }

    /// The other side's input for `step` arrived (for the first time) at `now_s`.
    pub fn on_arrival(&mut self, step: u64, now_s: f64) {
        let offset = now_s - step as f64 * self.config.dt_s;
        let anchor = *self.anchor_s.get_or_insert(offset);
        let bin = ((offset - anchor) / BIN_S).ceil().clamp(0.0, (BINS - 1) as f64) as usize;
        if self.filled == LATENESS_WINDOW {
            self.histogram[usize::from(self.recent[self.next])] -= 1;
        } else {
            self.filled += 1;
        }
        self.recent[self.next] = bin as u16;
        self.histogram[bin] += 1;
        self.next = (self.next + 1) % LATENESS_WINDOW;
    }

    /// The lateness (s) that [`COVERED_FRACTION`] of recent arrivals stayed within.
    pub fn lateness_p99_s(&self) -> f64 {
        let wanted = (self.filled as f64 * COVERED_FRACTION).ceil() as u32;
        let mut seen = 0;
        for (bin, &n) in self.histogram.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                return bin as f64 * BIN_S;
            }
        }
        0.0
    }

    /// Steps due by `now_s`: steps 0 up to (not including) the returned one. A step falls due [`DUE_EARLY_STEPS`]
    /// of a step early: when latency and delay are whole steps the frames land exactly on the schedule, and
    /// rounding noise would otherwise alternate frames of no step and of two.
    pub fn due(&self, now_s: f64) -> u64 {
        match self.anchor_s {
            Some(anchor) => {
                let t = (now_s - anchor - self.delay_s) / self.config.dt_s + DUE_EARLY_STEPS;
                if t < 0.0 {
                    0
                } else {
                    t.floor() as u64 + 1
                }
            }
            None => 0,
        }
    }

    /// Once per frame: adapts the delay, then plans the frame. `next_step` is the next step to simulate and
    /// `available` the first step whose inputs are not all here.
    pub fn plan(&mut self, now_s: f64, next_step: u64, available: u64) -> FramePlan {
        self.adapt();
        let wanted = self.due(now_s).saturating_sub(next_step);
        let ready = available.saturating_sub(next_step);
        FramePlan {
            steps: wanted.min(ready).min(u64::from(MAX_STEPS_PER_FRAME)) as u32,
            hitch: wanted > 0 && ready == 0,
        }
    }

    fn adapt(&mut self) {
        if !self.config.adaptive || self.filled == 0 {
            return;
        }
        let target = (self.lateness_p99_s() + self.config.dt_s)
            .max(self.config.delay_s)
            .min(MAX_DELAY_S);
        self.delay_s += (target - self.delay_s).clamp(-SLEW_S_PER_FRAME, SLEW_S_PER_FRAME);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: f64 = tumble_game::STEP_S;

    fn fixed(delay_s: f64) -> PlayoutBuffer {
        PlayoutBuffer::new(PlayoutConfig {
            dt_s: DT,
            delay_s,
            adaptive: false,
        })
    }

    #[test]
    fn steps_fall_due_a_delay_after_the_first_arrival_one_per_frame() {
        let mut b = fixed(0.1);
        assert_eq!(b.due(100.0), 0, "nothing is due before an input arrived");
        // Step 0 arrives 50 ms after the start; due at 150 ms.
        b.on_arrival(0, 0.05);
        assert_eq!(b.due(0.149), 0);
        assert_eq!(b.due(0.15), 1);
        // Frame by frame from then on, one step a frame with every input here.
        for frame in 0..100u64 {
            let now = 0.15 + frame as f64 * DT;
            let plan = b.plan(now, frame, u64::MAX);
            assert_eq!(plan, FramePlan { steps: 1, hitch: false }, "frame {frame}");
        }
    }

    #[test]
    fn a_missing_input_hitches_and_the_frame_after_catches_up_at_most_four_steps() {
        let mut b = fixed(0.0);
        b.on_arrival(0, 0.0);
        assert_eq!(b.plan(0.0, 0, 0), FramePlan { steps: 0, hitch: true });
        assert_eq!(b.plan(10.0 * DT, 0, 5), FramePlan { steps: 4, hitch: false });
        assert_eq!(
            b.plan(10.0 * DT, 4, 5),
            FramePlan { steps: 1, hitch: false },
            "only what arrived"
        );
        assert_eq!(b.plan(10.0 * DT, 5, 5), FramePlan { steps: 0, hitch: true });
        assert_eq!(
            b.plan(10.0 * DT, 11, 20),
            FramePlan { steps: 0, hitch: false },
            "nothing due yet"
        );
    }

    #[test]
    fn the_delay_grows_to_cover_late_arrivals_slowly_and_never_under_its_floor() {
        let mut b = PlayoutBuffer::new(PlayoutConfig {
            dt_s: DT,
            delay_s: 0.05,
            adaptive: true,
        });
        // Every tenth input arrives 120 ms late, the rest on time.
        for step in 0..1000u64 {
            let late = if step % 10 == 3 { 0.12 } else { 0.0 };
            b.on_arrival(step, 0.03 + step as f64 * DT + late);
        }
        assert!((b.lateness_p99_s() - 0.12).abs() < 0.0015, "{}", b.lateness_p99_s());
        let start = b.delay_s();
        b.plan(0.0, 0, 0);
        assert!(
            (b.delay_s() - start - SLEW_S_PER_FRAME).abs() < 1e-12,
            "slewed one step of 1 ms"
        );
        for _ in 0..200 {
            b.plan(0.0, 0, 0);
        }
        assert!((b.delay_s() - (0.12 + DT)).abs() < 0.002, "{}", b.delay_s());
        // The late ones stop: the window forgets them and the delay comes back to its floor, not below.
        for step in 1000..3000u64 {
            b.on_arrival(step, 0.03 + step as f64 * DT);
        }
        for _ in 0..200 {
            b.plan(0.0, 0, 0);
        }
        assert!((b.delay_s() - 0.05).abs() < 1e-9, "{}", b.delay_s());
    }
}
