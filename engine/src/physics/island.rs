//! Islands: dynamic bodies joined by touching contacts (union–find, rebuilt every step; the ground and kinematic
//! bodies join nothing). An island is simulated or resting as a whole: one awake body wakes everything it touches,
//! and an island goes to rest only when every body in it is still.

/// Union–find over body indices, with per-root flags.
#[derive(Clone, Debug, Default)]
pub struct Islands {
    parent: Vec<u32>,
    /// Per root: some body in the island is awake (or is pushed by a moving kinematic body).
    awake: Vec<bool>,
    /// Per root: every body in the island is still, and nothing moving pushes it.
    still: Vec<bool>,
    /// Per root: the island moves for a reason of this peer's own — a body it simulates for everyone (not remote)
    /// that was awake before any remote body woke it, a moving kinematic body of its own, a support lost. An
    /// island woken only by remote bodies does not wake the remote bodies in it that rest (see `World::set_remote`).
    local_cause: Vec<bool>,
}

impl Islands {
    /// Starts over with every body alone.
    pub fn reset(&mut self, bodies: usize) {
        self.parent.clear();
        self.parent.extend(0..bodies as u32);
        self.awake.clear();
        self.awake.resize(bodies, false);
        self.still.clear();
        self.still.resize(bodies, true);
        self.local_cause.clear();
        self.local_cause.resize(bodies, false);
    }

    pub fn find(&mut self, mut i: u32) -> u32 {
        while self.parent[i as usize] != i {
            // Path halving keeps trees flat without recursion.
            let grandparent = self.parent[self.parent[i as usize] as usize];
            self.parent[i as usize] = grandparent;
            i = grandparent;
        }
        i
    }

    /// Joins the islands of `a` and `b`; the smaller root index wins, so the result doesn't depend on order.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (keep, drop) = (ra.min(rb), ra.max(rb));
            self.parent[drop as usize] = keep;
        }
    }

    /// Call after all unions.
    pub fn mark_awake(&mut self, body: u32) {
        let r = self.find(body) as usize;
        self.awake[r] = true;
    }

    /// Marks the island awake for a reason of this peer's own (implies [`Islands::mark_awake`]).
    pub fn mark_awake_here(&mut self, body: u32) {
        let r = self.find(body) as usize;
        self.awake[r] = true;
        self.local_cause[r] = true;
    }

    /// Whether something of this peer's own moves the island (see [`Islands::mark_awake_here`]).
    pub fn has_local_cause(&mut self, body: u32) -> bool {
        let r = self.find(body) as usize;
        self.local_cause[r]
    }

    pub fn is_awake(&mut self, body: u32) -> bool {
        let r = self.find(body) as usize;
        self.awake[r]
    }

    pub fn mark_not_still(&mut self, body: u32) {
        let r = self.find(body) as usize;
        self.still[r] = false;
    }

    pub fn is_still(&mut self, body: u32) -> bool {
        let r = self.find(body) as usize;
        self.still[r]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awake_and_still_flags_spread_over_the_island() {
        let mut isl = Islands::default();
        isl.reset(5);
        isl.union(0, 1);
        isl.union(3, 1);
        isl.mark_awake(3);
        assert!(isl.is_awake(0) && isl.is_awake(1) && isl.is_awake(3));
        assert!(!isl.is_awake(2) && !isl.is_awake(4));
        isl.mark_not_still(0);
        assert!(!isl.is_still(3) && isl.is_still(4));
    }
}
