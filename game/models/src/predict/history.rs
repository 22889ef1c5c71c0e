//! The client's histories, indexed by step: the input it sampled for each step and the state its player cube had
//! at the start of each step (what it predicted), kept for the last [`HISTORY_STEPS`] steps in fixed rings. A
//! server state for step `c` is compared with the predicted state stored for `c`; a rewind replays the stored
//! inputs from `c` and rewrites the stored states on the way. Nothing allocates once built.

/// Steps a history holds (a power of two): 11.4 s at 90 Hz, far past any round trip a connection survives (the
/// endpoint drops a peer after 5 s of silence).
pub const HISTORY_STEPS: usize = 1024;
const MASK: u64 = HISTORY_STEPS as u64 - 1;

/// One value per step for the newest [`HISTORY_STEPS`] steps written.
#[derive(Clone, Debug)]
pub struct StepRing<T: Copy> {
    values: Vec<T>,
    /// The step each slot holds (`u64::MAX`: none yet).
    step_of: Vec<u64>,
}

impl<T: Copy> StepRing<T> {
    /// A ring with every slot empty; `fill` is only a placeholder, never read back.
    pub fn new(fill: T) -> Self {
        Self {
            values: vec![fill; HISTORY_STEPS],
            step_of: vec![u64::MAX; HISTORY_STEPS],
        }
    }

    /// Stores `value` for `step`, replacing whatever the slot held (the same step rewritten by a replay, or the
    /// step `HISTORY_STEPS` before it).
    pub fn put(&mut self, step: u64, value: T) {
        let slot = (step & MASK) as usize;
        self.values[slot] = value;
        self.step_of[slot] = step;
    }

    /// The value stored for `step`, if it is still in the ring.
    pub fn get(&self, step: u64) -> Option<T> {
        let slot = (step & MASK) as usize;
        (self.step_of[slot] == step).then_some(self.values[slot])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_keeps_the_newest_steps_and_forgets_older_ones() {
        let mut ring = StepRing::new(0u32);
        assert_eq!(ring.get(0), None, "nothing stored yet");
        for step in 0..HISTORY_STEPS as u64 + 10 {
            ring.put(step, step as u32 * 3);
        }
        assert_eq!(ring.get(9), None, "overwritten by step 9 + HISTORY_STEPS");
        assert_eq!(ring.get(10), Some(30), "the oldest step still held");
        let newest = HISTORY_STEPS as u64 + 9;
        assert_eq!(ring.get(newest), Some(newest as u32 * 3));
        assert_eq!(ring.get(newest + 1), None, "not written yet");
        ring.put(newest, 7);
        assert_eq!(ring.get(newest), Some(7), "a replay rewrites a step in place");
        assert_eq!(ring.get(u64::MAX), None);
    }
}
