//! Groups of constraints the solver works on side by side, with the same result as one at a time.
//!
//! A pass of sequential impulses is a chain: each row waits for the velocity the last row wrote, so one contact
//! at a time keeps the CPU mostly waiting (the passes are latency-bound, not arithmetic-bound). Two contacts that
//! share no body do not read or write anything of each other's, so solving them in either order gives the same
//! bits. A [`Schedule`] packs the constraints, in their ground-up order, into groups of up to [`LANES`] that share
//! no body, placing each one in the earliest group after every earlier constraint it shares a body with. That is
//! a reordering that keeps the order of every pair of constraints that share a body, so a pass over the groups
//! computes exactly what a pass over the list computes, while the contacts of a group run their chains
//! interleaved.
//!
//! Unlike Box2D v3's graph colouring, this changes nothing about how the solver converges: the ground-up order,
//! the seeding and the shock pass see the same sequence of updates, and the checksums stay what they were.
//!
//! The ground (solver slot 0) is shared freely: it has no mass, its velocity is +0 and every push leaves it +0.

use super::contact_solver::ContactConstraint;

/// Constraints solved side by side: enough independent chains to keep the floating-point units busy, few enough
/// that each one's two bodies' velocities stay in registers.
pub const LANES: usize = 4;
/// An unused lane of a group.
pub const NO_LANE: u32 = u32::MAX;
/// How many non-full groups a constraint looks through for room before it starts a new group: keeps building
/// the schedule linear in the number of constraints whatever the pile.
const MAX_SCAN_GROUPS: usize = 8;

#[derive(Clone, Debug, Default)]
pub struct Schedule {
    /// Constraint indices, [`LANES`] per group, unused lanes [`NO_LANE`] (always the last ones).
    pub groups: Vec<[u32; LANES]>,
    /// Per solver slot: one past the last group that holds a constraint on it (0: none yet).
    after: Vec<u32>,
}

impl Schedule {
    pub fn reserve(&mut self, slots: usize, constraints: usize) {
        self.groups.reserve(constraints.saturating_sub(self.groups.len()));
        self.after.reserve(slots.saturating_sub(self.after.len()));
    }

    /// Groups the constraints that `include` accepts, for bodies in `slots` solver slots.
    pub fn build(
        &mut self,
        constraints: &[ContactConstraint],
        slots: usize,
        include: impl Fn(&ContactConstraint) -> bool,
    ) {
        self.groups.clear();
        self.after.clear();
        self.after.resize(slots, 0);
        // Every group before this one is full.
        let mut first_open = 0usize;
        for (k, c) in constraints.iter().enumerate() {
            if !include(c) {
                continue;
            }
            let (a, b) = c.bodies();
            let (a, b) = (a as usize, b as usize);
            let after = |slot: usize| if slot == 0 { 0 } else { self.after[slot] as usize };
            let earliest = after(a).max(after(b)).max(first_open);
            let mut g = earliest;
            while g < self.groups.len() && g < earliest + MAX_SCAN_GROUPS && self.groups[g][LANES - 1] != NO_LANE {
                g += 1;
            }
            if g >= self.groups.len() || self.groups[g][LANES - 1] != NO_LANE {
                g = self.groups.len();
                self.groups.push([NO_LANE; LANES]);
            }
            let group = &mut self.groups[g];
            if let Some(lane) = group.iter_mut().find(|lane| **lane == NO_LANE) {
                *lane = k as u32;
            }
            for slot in [a, b] {
                if slot != 0 {
                    self.after[slot] = g as u32 + 1;
                }
            }
            while first_open < self.groups.len() && self.groups[first_open][LANES - 1] != NO_LANE {
                first_open += 1;
            }
        }
    }
}

/// Number of used lanes in a group.
#[inline(always)]
pub fn used_lanes(group: &[u32; LANES]) -> usize {
    group.iter().take_while(|&&k| k != NO_LANE).count()
}
