//! Islands: dynamic bodies joined by touching contacts (the ground and kinematic bodies join nothing). An island
//! is simulated or resting as a whole: one awake body wakes everything it touches, and an island goes to rest only
//! when every body in it is still.
//!
//! Islands are found anew every step, but only those that hold a body that may move: the world floods outward
//! from those bodies over touching contacts (`World::wake_islands`), so a resting pile nothing touches is never
//! visited. Every flag is an OR (awake, local cause) or an AND (still) over the island, so the order the bodies are
//! reached in changes nothing.

/// A body in no island this step.
const NONE: u32 = u32::MAX;

/// Islands of this step, with per-island flags.
#[derive(Clone, Debug, Default)]
pub struct Islands {
    /// Per body: its island this step, or `NONE`.
    island: Vec<u32>,
    /// Bodies given an island this step, in the order they were reached.
    members: Vec<u32>,
    /// Bodies reached but not yet expanded, for the flood.
    pending: Vec<u32>,
    /// Per island: some body in it is awake (or is pushed by a moving kinematic body).
    awake: Vec<bool>,
    /// Per island: every body in it is still, and nothing moving pushes it.
    still: Vec<bool>,
    /// Per island: it moves for a reason of this peer's own — a body it simulates for everyone (not remote) that
    /// was awake before any remote body woke it, a moving kinematic body of its own, a support lost. An island
    /// woken only by remote bodies does not wake the remote bodies in it that rest (see `World::set_remote`).
    local_cause: Vec<bool>,
}

impl Islands {
    /// Makes room for `bodies` bodies without allocating while stepping.
    pub fn reserve(&mut self, bodies: usize) {
        self.island.resize(bodies, NONE);
        for v in [&mut self.members, &mut self.pending] {
            v.reserve(bodies.saturating_sub(v.len()));
        }
        for v in [&mut self.awake, &mut self.still, &mut self.local_cause] {
            v.reserve(bodies.saturating_sub(v.len()));
        }
    }

    /// Forgets last step's islands (only the bodies they held are touched).
    pub fn clear(&mut self) {
        for &i in &self.members {
            self.island[i as usize] = NONE;
        }
        self.members.clear();
        self.pending.clear();
        self.awake.clear();
        self.still.clear();
        self.local_cause.clear();
    }

    /// Bodies in an island this step.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    pub fn contains(&self, body: u32) -> bool {
        self.island[body as usize] != NONE
    }

    /// Starts a new island holding `body` (in no island yet); its neighbours are added with [`Islands::join`].
    pub fn start(&mut self, body: u32) -> u32 {
        let island = self.awake.len() as u32;
        self.awake.push(false);
        self.still.push(true);
        self.local_cause.push(false);
        self.join(body, island);
        island
    }

    /// Puts `body` (in no island yet) into `island`, to be expanded.
    pub fn join(&mut self, body: u32, island: u32) {
        self.island[body as usize] = island;
        self.members.push(body);
        self.pending.push(body);
    }

    /// The next body whose neighbours have not been looked at.
    pub fn next_pending(&mut self) -> Option<u32> {
        self.pending.pop()
    }

    pub fn island_of(&self, body: u32) -> u32 {
        self.island[body as usize]
    }

    /// Marks `body`'s island awake; call once the island is complete.
    pub fn mark_awake(&mut self, body: u32) {
        let r = self.island_of(body) as usize;
        self.awake[r] = true;
    }

    /// Marks the island awake for a reason of this peer's own (implies [`Islands::mark_awake`]).
    pub fn mark_awake_here(&mut self, body: u32) {
        let r = self.island_of(body) as usize;
        self.awake[r] = true;
        self.local_cause[r] = true;
    }

    /// Whether something of this peer's own moves the island (see [`Islands::mark_awake_here`]).
    pub fn has_local_cause(&self, body: u32) -> bool {
        self.contains(body) && self.local_cause[self.island_of(body) as usize]
    }

    /// Whether the body's island is awake (false for a body in no island).
    pub fn is_awake(&self, body: u32) -> bool {
        self.contains(body) && self.awake[self.island_of(body) as usize]
    }

    pub fn mark_not_still(&mut self, body: u32) {
        let r = self.island_of(body) as usize;
        self.still[r] = false;
    }

    pub fn is_still(&self, body: u32) -> bool {
        self.still[self.island_of(body) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awake_and_still_flags_spread_over_the_island_and_clear_forgets_it() {
        let mut isl = Islands::default();
        isl.reserve(5);
        let first = isl.start(0);
        isl.join(1, first);
        isl.join(3, first);
        isl.start(4);
        isl.mark_awake(3);
        assert!(isl.is_awake(0) && isl.is_awake(1) && isl.is_awake(3));
        assert!(
            !isl.is_awake(2) && !isl.is_awake(4),
            "2 is in no island, 4 in a quiet one"
        );
        isl.mark_not_still(0);
        assert!(!isl.is_still(3) && isl.is_still(4));
        isl.clear();
        assert!(!isl.contains(0) && !isl.contains(4) && isl.members().is_empty());
    }
}
