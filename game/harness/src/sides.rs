//! The four delays every model of `tumble compare` reports from both sides (player 1 is the host or server, player
//! 2 the guest or client; with more guests, the slowest guest's):
//! - `host_input_to_screen_ms` / `guest_input_to_screen_ms`: on a player's own machine, mean time from the
//!   player deciding an input to the frame that draws a state that input made (0 when its machine simulates the
//!   input in the frame it is decided).
//! - `host_sees_guest_ms` / `guest_sees_host_ms`: on one player's machine, mean over its frames of the time since
//!   the other player decided the newest of its inputs that what is drawn here includes (the other's input that
//!   state carries, or the input applied here).
//!
//! A run measures them with the times it records here. Each player's input reaches its model through an
//! [`InputLag`]: zero frames in every real run; the tests hold one side's input back to show each figure moves by
//! what was added, and only the figures that side's input reaches.

use std::collections::VecDeque;

use serde_json::{json, Value};
use tumble_game::cube_game::CubeInput;

/// A mean of delays (s), reported in ms; `None` (null) when nothing was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeanDelay {
    sum_s: f64,
    count: u64,
}

impl MeanDelay {
    pub fn add(&mut self, delay_s: f64) {
        self.sum_s += delay_s;
        self.count += 1;
    }

    pub fn ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_s / self.count as f64 * 1000.0)
    }
}

/// The four figures of a run (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sides {
    pub host_input_to_screen: MeanDelay,
    pub guest_input_to_screen: MeanDelay,
    pub host_sees_guest: MeanDelay,
    pub guest_sees_host: MeanDelay,
}

impl Sides {
    pub fn json(&self) -> Value {
        json!({
            "host_input_to_screen_ms": self.host_input_to_screen.ms(),
            "guest_input_to_screen_ms": self.guest_input_to_screen.ms(),
            "host_sees_guest_ms": self.host_sees_guest.ms(),
            "guest_sees_host_ms": self.guest_sees_host.ms(),
        })
    }
}

impl Sides {
    /// The four figures in ms, in the module doc's order (NaN for null).
    pub fn ms(&self) -> [f64; 4] {
        [
            self.host_input_to_screen,
            self.guest_input_to_screen,
            self.host_sees_guest,
            self.guest_sees_host,
        ]
        .map(|m| m.ms().unwrap_or(f64::NAN))
    }
}

/// Tests: `lagged`'s four figures less `base`'s are `by` (ms, in [`Sides::ms`]'s order), each within
/// `tolerance_ms`.
#[cfg(test)]
pub fn assert_moved_by(base: &Sides, lagged: &Sides, by: [f64; 4], tolerance_ms: f64) {
    const NAMES: [&str; 4] = [
        "host_input_to_screen_ms",
        "guest_input_to_screen_ms",
        "host_sees_guest_ms",
        "guest_sees_host_ms",
    ];
    let (b, l) = (base.ms(), lagged.ms());
    for i in 0..4 {
        let moved = l[i] - b[i];
        assert!(
            (moved - by[i]).abs() <= tolerance_ms,
            "{} moved {moved:.1} ms, expected {} (base {b:?}, lagged {l:?})",
            NAMES[i],
            by[i]
        );
    }
}

/// Tests: the control every model's four delays share. `run(lag)` runs the model with player 1's and player 2's
/// input held back `lag` frames; with player 1's held back 9 frames (100 ms) its input to screen and the guest's
/// view of it move by that and the guest's own two figures not at all, with player 2's held back 18 frames (200 ms)
/// the other two move. Returns the figures with no lag, for each model's own checks.
#[cfg(test)]
pub fn assert_lag_controls(run: impl Fn([usize; 2]) -> Sides) -> Sides {
    let base = run([0, 0]);
    assert_moved_by(&base, &run([9, 0]), [100.0, 0.0, 0.0, 100.0], 12.0);
    assert_moved_by(&base, &run([0, 18]), [0.0, 200.0, 200.0, 0.0], 12.0);
    base
}

/// The largest of some means (the slowest of several guests); nothing measured if none was.
pub fn slowest(means: impl Iterator<Item = MeanDelay>) -> MeanDelay {
    means
        .filter(|m| m.count > 0)
        .max_by(|a, b| (a.sum_s * b.count as f64).total_cmp(&(b.sum_s * a.count as f64)))
        .unwrap_or_default()
}

/// Adds `sides`' four figures to `report` (a JSON object).
pub fn with_sides(sides: &Sides, mut report: Value) -> Value {
    if let (Some(out), Value::Object(figures)) = (report.as_object_mut(), sides.json()) {
        out.extend(figures);
    }
    report
}

/// A player's input on its way from the player to the model, held back `frames` frames (0: passed through), each
/// with when it was decided.
#[derive(Debug, Clone)]
pub struct InputLag {
    frames: usize,
    queue: VecDeque<(CubeInput, f64)>,
}

impl InputLag {
    pub fn new(frames: usize) -> Self {
        InputLag {
            frames,
            queue: VecDeque::with_capacity(frames + 1),
        }
    }

    /// `input`, decided at `at_s`, goes in; out comes the input due now and when it was decided — while the line
    /// is still filling, no input, decided by nobody (`None`).
    pub fn pass(&mut self, input: CubeInput, at_s: f64) -> (CubeInput, Option<f64>) {
        self.queue.push_back((input, at_s));
        if self.queue.len() > self.frames {
            let (input, at) = self.queue.pop_front().expect("just pushed");
            (input, Some(at))
        } else {
            (CubeInput::NONE, None)
        }
    }
}

/// Steps [`DecidedAt`] remembers: 45 s, far longer than any delay a run measures (a playout delay is at most 2 s).
pub const DECIDED_STEPS_KEPT: usize = 4096;

/// When each recent step's input was decided, by step (`None`: no one's input, or not kept): a ring of
/// [`DECIDED_STEPS_KEPT`] steps, allocated once (the runs allocate nothing per frame).
#[derive(Debug, Clone)]
pub struct DecidedAt(Vec<Option<(u64, f64)>>);

impl Default for DecidedAt {
    fn default() -> Self {
        DecidedAt(vec![None; DECIDED_STEPS_KEPT])
    }
}

impl DecidedAt {
    /// Records step `step`'s input as decided at `at`.
    pub fn set(&mut self, step: u64, at: Option<f64>) {
        self.0[step as usize % DECIDED_STEPS_KEPT] = at.map(|t| (step, t));
    }

    pub fn get(&self, step: u64) -> Option<f64> {
        match self.0[step as usize % DECIDED_STEPS_KEPT] {
            Some((s, t)) if s == step => Some(t),
            _ => None,
        }
    }

    /// At a fractional step (an interpolated render time): between its two steps' times.
    pub fn at(&self, step: f64) -> Option<f64> {
        if step.is_nan() || step < 0.0 {
            return None;
        }
        let (lo, f) = (step.floor(), step.fract());
        let a = self.get(lo as u64)?;
        if f == 0.0 {
            return Some(a);
        }
        let b = self.get(lo as u64 + 1)?;
        Some(a + (b - a) * f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_comes_out_the_frames_later_with_when_it_was_decided() {
        let mut lag = InputLag::new(2);
        let go = CubeInput::from_bits(CubeInput::FORWARD);
        assert_eq!(lag.pass(go, 0.0), (CubeInput::NONE, None));
        assert_eq!(lag.pass(CubeInput::NONE, 1.0), (CubeInput::NONE, None));
        assert_eq!(lag.pass(CubeInput::NONE, 2.0), (go, Some(0.0)));
        let mut none = InputLag::new(0);
        assert_eq!(none.pass(go, 5.0), (go, Some(5.0)));
    }

    #[test]
    fn decided_times_interpolate_between_steps_and_nothing_is_null() {
        let mut d = DecidedAt::default();
        d.set(2, Some(1.0));
        d.set(3, Some(2.0));
        assert_eq!(d.at(2.25), Some(1.25));
        assert_eq!(d.at(3.0), Some(2.0));
        assert_eq!(d.at(1.5), None);
        assert_eq!(d.at(-1.0), None);
        d.set(2 + DECIDED_STEPS_KEPT as u64, Some(9.0));
        assert_eq!(
            d.get(2),
            None,
            "a step that long ago is forgotten, not mistaken for a new one"
        );
        let mut m = MeanDelay::default();
        assert_eq!(m.ms(), None);
        m.add(0.1);
        m.add(0.2);
        assert!((m.ms().unwrap() - 150.0).abs() < 1e-9);
        assert_eq!(Sides::default().json()["host_sees_guest_ms"], Value::Null);
    }
}
