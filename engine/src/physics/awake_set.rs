//! The bodies a step must look at: a bitset over body ids, scanned a word (64 bodies) at a time, so a step over a
//! world of resting bodies costs one word read per 64 of them and nothing per body (Box2D v3's awake sets, in
//! their simplest form). Scans yield ids in ascending order, which keeps every loop built on them deterministic.
//!
//! Membership is a superset of what moves: the world inserts a body whenever something may move it (added, state
//! set, kind changed, kinematic target, woken) and removes it only after a step in which it did not move, once
//! that step has looked at it (its bounds checked, its pose reference updated).

/// Bodies per word of the bitset.
const BITS: usize = 64;

#[derive(Clone, Debug, Default)]
pub struct AwakeSet {
    words: Vec<u64>,
}

impl AwakeSet {
    /// Makes room for ids below `bodies`.
    pub fn resize(&mut self, bodies: usize) {
        self.words.resize(bodies.div_ceil(BITS), 0);
    }

    pub fn insert(&mut self, i: u32) {
        self.words[i as usize / BITS] |= 1 << (i as usize % BITS);
    }

    pub fn remove(&mut self, i: u32) {
        self.words[i as usize / BITS] &= !(1 << (i as usize % BITS));
    }

    pub fn contains(&self, i: u32) -> bool {
        self.words[i as usize / BITS] & (1 << (i as usize % BITS)) != 0
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Replaces `out` by the members, ascending.
    pub fn collect(&self, out: &mut Vec<u32>) {
        out.clear();
        for (w, &word) in self.words.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push((w * BITS) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_come_out_ascending_across_words() {
        let mut set = AwakeSet::default();
        set.resize(200);
        for i in [150, 3, 64, 63, 199, 0] {
            set.insert(i);
        }
        set.remove(63);
        let mut out = Vec::new();
        set.collect(&mut out);
        assert_eq!(out, vec![0, 3, 64, 150, 199]);
        assert!(set.contains(64) && !set.contains(63));
    }
}
