//! 16-bit sequence numbers and ring buffers keyed by them.
//!
//! Sequences wrap after 65535 (about 12 minutes at 90 packets per second), so "newer" means "ahead by less than
//! half the space": the signed 16-bit difference is positive. Buffers remember the exact sequence in each slot,
//! so a slot left over from an earlier lap is never mistaken for the current one.

/// True when `a` is newer than `b`, across the wrap (65535 → 0 is forward).
pub fn sequence_greater_than(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) > 0
}

pub fn sequence_less_than(a: u16, b: u16) -> bool {
    sequence_greater_than(b, a)
}

/// Signed distance from `b` forward to `a`.
pub fn sequence_diff(a: u16, b: u16) -> i32 {
    i32::from(a.wrapping_sub(b) as i16)
}

const EMPTY_SLOT: u32 = u32::MAX;

/// A ring buffer of `T` keyed by sequence. It holds entries no older than `newest - capacity + 1`; inserting a newer
/// sequence clears the slots it skips, so every stored entry belongs to the current window.
#[derive(Debug, Clone)]
pub struct SequenceBuffer<T> {
    slots: Vec<u32>,
    entries: Vec<T>,
    newest: u16,
    started: bool,
}

/// What `insert` replaced: the entry that was in the slot, if that slot held a live sequence.
pub type Evicted<T> = Option<(u16, T)>;

impl<T: Default + Clone> SequenceBuffer<T> {
    pub fn new(capacity: usize) -> Self {
        assert!(
            capacity > 0 && capacity <= 32768,
            "sequence buffer capacity must be in 1..=32768"
        );
        SequenceBuffer {
            slots: vec![EMPTY_SLOT; capacity],
            entries: vec![T::default(); capacity],
            newest: 0,
            started: false,
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The newest sequence inserted so far.
    pub fn newest(&self) -> Option<u16> {
        self.started.then_some(self.newest)
    }

    fn index(&self, sequence: u16) -> usize {
        sequence as usize % self.slots.len()
    }

    /// True when `sequence` is too old for the window (it would land on a slot a newer entry owns).
    pub fn is_too_old(&self, sequence: u16) -> bool {
        self.started && sequence_diff(self.newest, sequence) >= self.slots.len() as i32
    }

    /// Stores `value` under `sequence`: `Ok(evicted)` on success, `Err(value)` when the sequence is too old to hold.
    pub fn insert(&mut self, sequence: u16, value: T) -> Result<Evicted<T>, T> {
        if self.is_too_old(sequence) {
            return Err(value);
        }
        if !self.started || sequence_greater_than(sequence, self.newest) {
            if self.started {
                self.clear_between(self.newest.wrapping_add(1), sequence);
            }
            self.newest = sequence;
            self.started = true;
        }
        let i = self.index(sequence);
        let evicted = (self.slots[i] != EMPTY_SLOT).then(|| {
            (
                self.slots[i] as u16,
                std::mem::replace(&mut self.entries[i], value.clone()),
            )
        });
        if evicted.is_none() {
            self.entries[i] = value;
        }
        self.slots[i] = u32::from(sequence);
        Ok(evicted)
    }

    /// Empties the slots for sequences in `from..to` (exclusive of `to`, whose slot `insert` fills), at most one lap.
    fn clear_between(&mut self, from: u16, to: u16) {
        let gap = sequence_diff(to, from).max(0) as usize;
        // Slots of `to`'s own lap are replaced by `insert`; the ones skipped must not keep stale sequences.
        for k in 0..gap.min(self.slots.len()) {
            let i = self.index(from.wrapping_add(k as u16));
            self.slots[i] = EMPTY_SLOT;
        }
    }

    pub fn exists(&self, sequence: u16) -> bool {
        self.slots[self.index(sequence)] == u32::from(sequence)
    }

    pub fn get(&self, sequence: u16) -> Option<&T> {
        let i = self.index(sequence);
        (self.slots[i] == u32::from(sequence)).then(|| &self.entries[i])
    }

    pub fn get_mut(&mut self, sequence: u16) -> Option<&mut T> {
        let i = self.index(sequence);
        (self.slots[i] == u32::from(sequence)).then(|| &mut self.entries[i])
    }

    pub fn remove(&mut self, sequence: u16) -> Option<T> {
        let i = self.index(sequence);
        (self.slots[i] == u32::from(sequence)).then(|| {
            self.slots[i] = EMPTY_SLOT;
            std::mem::take(&mut self.entries[i])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_wraps() {
        assert!(sequence_greater_than(1, 0));
        assert!(sequence_greater_than(0, 65535));
        assert!(sequence_greater_than(10, 65530));
        assert!(!sequence_greater_than(65530, 10));
        assert!(sequence_less_than(65535, 0));
        assert!(!sequence_greater_than(5, 5));
        assert_eq!(sequence_diff(2, 65534), 4);
        assert_eq!(sequence_diff(65534, 2), -4);
        // Exactly half the space apart is neither newer nor older.
        assert!(!sequence_greater_than(32768, 0) && !sequence_greater_than(0, 32768));
    }

    #[test]
    fn buffer_keeps_its_window_across_the_wrap() {
        let mut b = SequenceBuffer::<u32>::new(8);
        let mut seq = 65530u16;
        for v in 0..20u32 {
            b.insert(seq, v).unwrap();
            assert_eq!(b.get(seq), Some(&v));
            seq = seq.wrapping_add(1);
        }
        let newest = seq.wrapping_sub(1);
        assert_eq!(b.newest(), Some(newest));
        for back in 0..8u16 {
            assert!(b.exists(newest.wrapping_sub(back)));
        }
        assert!(!b.exists(newest.wrapping_sub(8)));
        assert!(b.is_too_old(newest.wrapping_sub(8)));
        assert_eq!(b.insert(newest.wrapping_sub(8), 99), Err(99));
    }

    #[test]
    fn jumping_ahead_clears_skipped_slots_and_evicts() {
        let mut b = SequenceBuffer::<u32>::new(8);
        for s in 0..8u16 {
            assert_eq!(b.insert(s, u32::from(s)).unwrap(), None);
        }
        // Sequence 8 lands on sequence 0's slot.
        assert_eq!(b.insert(8, 80).unwrap(), Some((0, 0)));
        // A jump of 5 clears 9..=12 (slots of 1..=4) and evicts 5.
        assert_eq!(b.insert(13, 130).unwrap(), Some((5, 5)));
        for s in 1..=4u16 {
            assert!(!b.exists(s));
        }
        assert!(b.exists(6) && b.exists(7) && b.exists(8) && b.exists(13));
        // An older, in-window sequence can still be filled in (reordered arrival).
        b.insert(10, 100).unwrap();
        assert_eq!(b.get(10), Some(&100));
        assert_eq!(b.newest(), Some(13));
        // A jump of more than a lap clears everything.
        b.insert(1000, 1).unwrap();
        assert!(!b.exists(13) && b.exists(1000));
    }
}
