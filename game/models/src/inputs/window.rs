//! A lockstep peer's input windows, one per player, indexed by step (an input is sampled once per frame for the
//! step of that frame's number). Each is a fixed ring of [`WINDOW_STEPS`] plain values holding a player's inputs
//! from the oldest one still needed here — not yet simulated, or not yet acked by a connection it is sent on (its
//! own player's on every connection; on the host, every player's to the guests that relay needs) — to the newest
//! received. Nothing allocates once running.

use tumble_game::cube_game::CubeInput;

/// Steps a window holds (a power of two): 45 s at 90 Hz, far past any round trip a connection survives
/// (the endpoint drops a peer after 5 s of silence).
pub const WINDOW_STEPS: usize = 4096;
const MASK: u64 = WINDOW_STEPS as u64 - 1;

/// The window is full: [`WINDOW_STEPS`] steps of input unacknowledged or unsimulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("input window full: {WINDOW_STEPS} steps of input unacknowledged or unsimulated")]
pub struct WindowFull;

/// One player's inputs by step.
#[derive(Clone, Debug)]
pub struct InputWindow {
    inputs: Vec<CubeInput>,
    /// The step each slot holds (`u64::MAX`: none).
    step_of: Vec<u64>,
    /// Every step before this one is here: the first missing one (for this peer's own player, the next to sample).
    contiguous: u64,
}

impl Default for InputWindow {
    fn default() -> Self {
        Self {
            inputs: vec![CubeInput::NONE; WINDOW_STEPS],
            step_of: vec![u64::MAX; WINDOW_STEPS],
            contiguous: 0,
        }
    }
}

impl InputWindow {
    /// Stores the input for the next step (this peer's own player); `oldest_kept` is the oldest step still needed
    /// here. Returns that step.
    pub fn push(&mut self, input: CubeInput, oldest_kept: u64) -> Result<u64, WindowFull> {
        let step = self.contiguous;
        if step - oldest_kept.min(step) >= WINDOW_STEPS as u64 {
            return Err(WindowFull);
        }
        self.store(step, input);
        Ok(step)
    }

    /// Stores one received input; returns true when it is new. Steps already here with every one before them
    /// (they may have been simulated and sent on), and steps that would overwrite one older than `oldest_kept`
    /// still needs, are ignored.
    pub fn insert(&mut self, step: u64, input: CubeInput, oldest_kept: u64) -> bool {
        let oldest = oldest_kept.min(self.contiguous);
        if step < self.contiguous || step - oldest >= WINDOW_STEPS as u64 {
            return false;
        }
        if self.step_of[(step & MASK) as usize] == step {
            return false;
        }
        self.store(step, input);
        true
    }

    fn store(&mut self, step: u64, input: CubeInput) {
        let slot = (step & MASK) as usize;
        self.step_of[slot] = step;
        self.inputs[slot] = input;
        while self.step_of[(self.contiguous & MASK) as usize] == self.contiguous {
            self.contiguous += 1;
        }
    }

    /// The first step whose input is not here (every one before it is).
    pub fn contiguous(&self) -> u64 {
        self.contiguous
    }

    /// The input of a step that is here and still in the window.
    pub fn get(&self, step: u64) -> Option<CubeInput> {
        let slot = (step & MASK) as usize;
        (self.step_of[slot] == step).then_some(self.inputs[slot])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_inputs_are_kept_until_acked_and_simulated() {
        let mut w = InputWindow::default();
        for k in 0..WINDOW_STEPS as u64 {
            assert_eq!(w.push(CubeInput::from_bits(k as u8), 0), Ok(k));
        }
        assert_eq!(w.push(CubeInput::NONE, 0), Err(WindowFull), "step 0 is still needed");
        assert_eq!(w.push(CubeInput::NONE, 10), Ok(WINDOW_STEPS as u64));
        assert_eq!(w.get(0), None, "step 0's slot was taken by the newest step");
        assert_eq!(w.get(10), Some(CubeInput::from_bits(10)));
        assert_eq!(w.contiguous(), WINDOW_STEPS as u64 + 1);
    }

    #[test]
    fn received_inputs_track_the_first_missing_step() {
        let mut w = InputWindow::default();
        assert!(w.insert(1, CubeInput::from_bits(1), 0));
        assert_eq!(w.contiguous(), 0);
        assert!(!w.insert(1, CubeInput::from_bits(1), 0), "a duplicate is not new");
        assert!(w.insert(0, CubeInput::NONE, 0));
        assert_eq!(w.contiguous(), 2);
        assert_eq!(w.get(1), Some(CubeInput::from_bits(1)));
        assert_eq!(w.get(2), None);
        assert!(!w.insert(0, CubeInput::NONE, 0), "already past");
        assert!(
            !w.insert(2 + WINDOW_STEPS as u64, CubeInput::NONE, 2),
            "beyond the window"
        );
        assert!(
            w.insert(1 + WINDOW_STEPS as u64, CubeInput::NONE, 2),
            "the last step the window holds"
        );
    }

    #[test]
    fn a_received_input_never_overwrites_one_still_needed() {
        let mut w = InputWindow::default();
        for k in 0..10 {
            assert!(w.insert(k, CubeInput::from_bits(k as u8), 0));
        }
        // Step 3 is not yet simulated (or a guest has not acked it): step 3 + WINDOW_STEPS shares its slot.
        assert!(!w.insert(3 + WINDOW_STEPS as u64, CubeInput::NONE, 3));
        assert_eq!(w.get(3), Some(CubeInput::from_bits(3)));
        assert!(w.insert(3 + WINDOW_STEPS as u64, CubeInput::NONE, 4));
    }
}
