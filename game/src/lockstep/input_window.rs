//! The two input windows of a lockstep peer, indexed by step (an input is sampled once per frame for the step of
//! that frame's number): its own inputs, kept from the oldest one the other side has not acked (or not yet
//! simulated here) to the newest; and the other side's, kept until simulated, with the first step still missing.
//! Both are fixed rings of [`WINDOW_STEPS`] plain values: nothing allocates once running.

use crate::cube_game::CubeInput;

/// Steps either window holds (a power of two): 45 s at 90 Hz, far past any round trip a connection survives
/// (the endpoint drops a peer after 5 s of silence).
pub const WINDOW_STEPS: usize = 4096;
const MASK: u64 = WINDOW_STEPS as u64 - 1;

/// The window is full: the other side has acked nothing for [`WINDOW_STEPS`] steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("input window full: {WINDOW_STEPS} steps of input unacknowledged or unsimulated")]
pub struct WindowFull;

/// This peer's own inputs.
#[derive(Clone, Debug)]
pub struct LocalInputs {
    inputs: Vec<CubeInput>,
    /// Inputs sampled so far: the next one is for this step.
    sampled: u64,
    /// The oldest step the other side has not acked.
    oldest_unacked: u64,
}

impl Default for LocalInputs {
    fn default() -> Self {
        Self {
            inputs: vec![CubeInput::NONE; WINDOW_STEPS],
            sampled: 0,
            oldest_unacked: 0,
        }
    }
}

impl LocalInputs {
    /// Stores the input for the next step; `oldest_needed` is the oldest step still to be simulated here.
    pub fn push(&mut self, input: CubeInput, oldest_needed: u64) -> Result<u64, WindowFull> {
        let oldest = oldest_needed.min(self.oldest_unacked);
        if self.sampled - oldest >= WINDOW_STEPS as u64 {
            return Err(WindowFull);
        }
        let step = self.sampled;
        self.inputs[(step & MASK) as usize] = input;
        self.sampled += 1;
        Ok(step)
    }

    pub fn sampled(&self) -> u64 {
        self.sampled
    }

    /// The input of a step in the window.
    pub fn get(&self, step: u64) -> CubeInput {
        debug_assert!(step < self.sampled && self.sampled - step <= WINDOW_STEPS as u64);
        self.inputs[(step & MASK) as usize]
    }

    /// The other side has every input up to and including `step`.
    pub fn on_ack(&mut self, step: u64) {
        self.oldest_unacked = self.oldest_unacked.max(step.saturating_add(1).min(self.sampled));
    }

    pub fn oldest_unacked(&self) -> u64 {
        self.oldest_unacked
    }
}

/// The other side's inputs.
#[derive(Clone, Debug)]
pub struct RemoteInputs {
    inputs: Vec<CubeInput>,
    /// The step each slot holds (`u64::MAX`: none).
    step_of: Vec<u64>,
    /// Every step before this one has arrived: the first missing one.
    contiguous: u64,
}

impl Default for RemoteInputs {
    fn default() -> Self {
        Self {
            inputs: vec![CubeInput::NONE; WINDOW_STEPS],
            step_of: vec![u64::MAX; WINDOW_STEPS],
            contiguous: 0,
        }
    }
}

impl RemoteInputs {
    /// Stores one received input; returns true when it is new. Steps already past (all before `contiguous` have
    /// arrived and may have been simulated) and steps beyond the window are ignored.
    pub fn insert(&mut self, step: u64, input: CubeInput) -> bool {
        if step < self.contiguous || step - self.contiguous >= WINDOW_STEPS as u64 {
            return false;
        }
        let slot = (step & MASK) as usize;
        if self.step_of[slot] == step {
            return false;
        }
        self.step_of[slot] = step;
        self.inputs[slot] = input;
        while self.step_of[(self.contiguous & MASK) as usize] == self.contiguous {
            self.contiguous += 1;
        }
        true
    }

    /// The first step whose input has not arrived (every one before it has).
    pub fn contiguous(&self) -> u64 {
        self.contiguous
    }

    /// The input of a step that arrived and is still in the window.
    pub fn get(&self, step: u64) -> Option<CubeInput> {
        let slot = (step & MASK) as usize;
        (self.step_of[slot] == step).then_some(self.inputs[slot])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_inputs_are_kept_until_acked_and_simulated() {
        let mut w = LocalInputs::default();
        for k in 0..WINDOW_STEPS as u64 {
            assert_eq!(w.push(CubeInput::from_bits(k as u8), 0), Ok(k));
        }
        assert_eq!(w.push(CubeInput::NONE, 0), Err(WindowFull));
        w.on_ack(9);
        assert_eq!(
            w.push(CubeInput::NONE, 0),
            Err(WindowFull),
            "step 0 is not simulated yet"
        );
        assert!(w.push(CubeInput::NONE, 10).is_ok());
        assert_eq!(w.oldest_unacked(), 10);
        assert_eq!(w.get(10), CubeInput::from_bits(10));
        w.on_ack(u64::MAX);
        assert_eq!(
            w.oldest_unacked(),
            w.sampled(),
            "an ack past what was sent acks what was sent"
        );
    }

    #[test]
    fn remote_inputs_track_the_first_missing_step() {
        let mut w = RemoteInputs::default();
        assert!(w.insert(1, CubeInput::from_bits(1)));
        assert_eq!(w.contiguous(), 0);
        assert!(!w.insert(1, CubeInput::from_bits(1)), "a duplicate is not new");
        assert!(w.insert(0, CubeInput::NONE));
        assert_eq!(w.contiguous(), 2);
        assert_eq!(w.get(1), Some(CubeInput::from_bits(1)));
        assert_eq!(w.get(2), None);
        assert!(!w.insert(0, CubeInput::NONE), "already past");
        assert!(!w.insert(2 + WINDOW_STEPS as u64, CubeInput::NONE), "beyond the window");
        assert!(
            w.insert(1 + WINDOW_STEPS as u64, CubeInput::NONE),
            "the last step the window holds"
        );
    }
}
