//! Groups of constraints the solver works on side by side, with the same result as one at a time.
//!
//! A pass of sequential impulses is a chain: each row waits for the velocity the last row wrote, so one contact
//! at a time keeps the CPU mostly waiting (the passes are latency-bound, not arithmetic-bound). Two contacts that
//! share no body do not read or write anything of each other's, so solving them in either order gives the same
//! bits. A [`Schedule`] packs the constraints, in their ground-up order, into groups of up to [`LANES`] that share
//! no body, wave by wave (a constraint's wave is one after the last wave of any earlier constraint on its bodies).
//! That is a reordering that keeps the order of every pair of constraints that share a body, so a pass over the
//! groups computes exactly what a pass over the list computes, while the contacts of a group run their chains
//! interleaved; and it says which earlier groups each group waits for, so several threads can run a pass with the
//! same result (`parallel.rs`).
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

#[derive(Clone, Debug, Default)]
pub struct Schedule {
    /// Constraint indices, [`LANES`] per group, unused lanes [`NO_LANE`] (always the last ones).
    pub groups: Vec<[u32; LANES]>,
    /// Per group, the groups that must be done before it: for each lane's two bodies, the last group before it
    /// with a constraint on that body ([`NO_WAIT`]: none, or the ground). A pass may run the groups in any order
    /// that keeps these (see `parallel.rs`) and compute the same bits.
    pub waits: Vec<[u32; 2 * LANES]>,
    /// Per solver slot while building: one past its last wave, then one past the last group on it (0: none yet).
    after: Vec<u32>,
    /// Per group, its wave.
    pub group_wave: Vec<u32>,
    /// The groups dealt out to the workers ([`Schedule::deal`]).
    pub deal: Deal,
    /// Scratch while building: each constraint's wave, where each wave starts, the constraints by wave.
    wave: Vec<u32>,
    starts: Vec<u32>,
    by_wave: Vec<u32>,
}

/// No group to wait for.
pub const NO_WAIT: u32 = u32::MAX;

/// Which worker runs each group of a [`Schedule`] on some number of threads, and in what order: made by
/// [`Schedule::deal`], kept until the schedule is built again or the threads change. Who runs what changes no bit
/// (see `parallel.rs`), only how often a worker waits for another.
#[derive(Clone, Debug, Default)]
pub struct Deal {
    /// The threads it was made for (0: none yet).
    pub threads: usize,
    /// Per group, its worker.
    pub owner: Vec<u8>,
    /// The groups, each worker's together, in order within each; worker t's are `by_owner[start[t]..start[t + 1]]`.
    pub by_owner: Vec<u32>,
    pub start: Vec<u32>,
    /// Per group, its place in `by_owner` (where its done-stamp is kept: each worker's together).
    pub position: Vec<u32>,
}

impl Schedule {
    pub fn reserve(&mut self, slots: usize, constraints: usize) {
        self.groups.reserve(constraints.saturating_sub(self.groups.len()));
        self.group_wave
            .reserve(constraints.saturating_sub(self.group_wave.len()));
        self.waits.reserve(constraints.saturating_sub(self.waits.len()));
        self.after.reserve(slots.saturating_sub(self.after.len()));
        self.wave.reserve(constraints.saturating_sub(self.wave.len()));
        self.starts.reserve(constraints.saturating_sub(self.starts.len()));
        self.by_wave.reserve(constraints.saturating_sub(self.by_wave.len()));
    }

    /// Groups the constraints that `include` accepts, for bodies in `slots` solver slots.
    ///
    /// Each constraint gets a wave: one after the last wave of any earlier constraint on either of its bodies
    /// (the ground aside). Two constraints that share a body are in different waves, the earlier one first, so
    /// the constraints of one wave share no body, and taking the waves in turn keeps the order of every two that
    /// do. Groups are packed from one wave at a time. Waves are as many as the longest chain of constraints
    /// linked by shared bodies — a few hundred in a 5,050-cube pile of 15,000 contacts — so each has room for
    /// many groups, which the workers take side by side (`parallel.rs`).
    pub fn build(
        &mut self,
        constraints: &[ContactConstraint],
        slots: usize,
        include: impl Fn(&ContactConstraint) -> bool,
    ) {
        let bodies = |k: usize| {
            let c = &constraints[k];
            include(c).then(|| c.bodies())
        };
        self.build_from(constraints.len(), slots, bodies);
    }

    /// [`Schedule::build`] over `n` constraints given by their solver slots alone (`None`: not included), so a
    /// schedule can be made before the constraints are (`World::solve` builds them where the groups put them).
    pub fn build_from(&mut self, n: usize, slots: usize, bodies: impl Fn(usize) -> Option<(u32, u32)>) {
        self.groups.clear();
        self.waits.clear();
        self.group_wave.clear();
        self.deal.threads = 0;
        self.after.clear();
        self.after.resize(slots, 0);
        // Per constraint its wave (NO_LANE: not included); `after` holds, for now, one past a body's last wave.
        self.wave.clear();
        let mut waves = 0usize;
        for k in 0..n {
            let Some((a, b)) = bodies(k) else {
                self.wave.push(NO_LANE);
                continue;
            };
            let (a, b) = (a as usize, b as usize);
            let after = |slot: usize| if slot == 0 { 0 } else { self.after[slot] };
            let wave = after(a).max(after(b));
            self.wave.push(wave);
            for slot in [a, b] {
                if slot != 0 {
                    self.after[slot] = wave + 1;
                }
            }
            waves = waves.max(wave as usize + 1);
        }
        // The constraints by wave, in their order within each (a stable counting sort).
        self.starts.clear();
        self.starts.resize(waves + 1, 0);
        for &wave in &self.wave {
            if wave != NO_LANE {
                self.starts[wave as usize + 1] += 1;
            }
        }
        for w in 0..waves {
            self.starts[w + 1] += self.starts[w];
        }
        self.by_wave.clear();
        self.by_wave.resize(self.starts[waves] as usize, 0);
        for (k, &wave) in self.wave.iter().enumerate() {
            if wave != NO_LANE {
                let at = &mut self.starts[wave as usize];
                self.by_wave[*at as usize] = k as u32;
                *at += 1;
            }
        }
        // Groups of up to LANES from one wave; `after` from here on: one past the last group on a body.
        self.after.clear();
        self.after.resize(slots, 0);
        let mut open_wave = NO_LANE;
        for &k in &self.by_wave {
            let wave = self.wave[k as usize];
            let full = self.groups.last().is_none_or(|group| group[LANES - 1] != NO_LANE);
            if full || wave != open_wave {
                self.groups.push([NO_LANE; LANES]);
                self.waits.push([NO_WAIT; 2 * LANES]);
                self.group_wave.push(wave);
                open_wave = wave;
            }
            let g = self.groups.len() - 1;
            let lane = used_lanes(&self.groups[g]);
            self.groups[g][lane] = k;
            let (a, b) = bodies(k as usize).expect("only included constraints are in a wave");
            for (side, slot) in [a as usize, b as usize].into_iter().enumerate() {
                if slot != 0 {
                    // The last group on this body so far is of an earlier wave, so before g.
                    self.waits[g][2 * lane + side] = self.after[slot].wrapping_sub(1);
                    self.after[slot] = g as u32 + 1;
                }
            }
        }
    }

    /// Renames the constraints of a schedule that includes them all by their place in it: group by group, lane
    /// by lane, so that each group names consecutive places; `placed[p]` is the constraint that goes to place
    /// `p`. A pass over the groups then reads the constraints one after the other, as they lie in memory, where
    /// the waves otherwise take them from all over the list (a row of touching cubes is a chain of as many waves,
    /// so consecutive groups came from distant levels of a pile: large_pyramid's 15,000 constraints of 608 bytes
    /// are 9 MB, too far apart for the CPU to fetch ahead: the velocity passes took about a third less time once
    /// placed, perf on one thread). Any order that keeps every two constraints on one body in their order gives
    /// the bits of the list's order (see the module doc), and this one keeps it.
    pub fn place_in_group_order(&mut self, placed: &mut Vec<u32>) {
        placed.clear();
        for group in &mut self.groups {
            for k in group.iter_mut().take_while(|k| **k != NO_LANE) {
                let next = placed.len() as u32;
                placed.push(*k);
                *k = next;
            }
        }
        assert!(
            placed.len() == self.wave.len(),
            "a schedule placed in group order must include every constraint"
        );
    }

    /// Deals the groups to `threads` workers (1..=64), unless they already are. Each wave's groups are shared out
    /// evenly (the workers go through a pass a wave at a time), and within that each group goes to the worker
    /// that ran most of the groups it waits for, so a chain of constraints (a row of touching cubes) stays with
    /// one worker and the workers seldom wait for each other. Round-robin dealing instead made every other group
    /// wait for the other worker.
    pub fn deal(&mut self, threads: usize) {
        let threads = threads.clamp(1, 64);
        if self.deal.threads == threads {
            return;
        }
        let n = self.groups.len();
        let deal = &mut self.deal;
        deal.threads = threads;
        deal.owner.clear();
        deal.owner.resize(n, 0);
        let mut load = [0u32; 64];
        let mut g = 0;
        while g < n {
            let wave = self.group_wave[g];
            let end = g + self.group_wave[g..].iter().take_while(|&&w| w == wave).count();
            let room = (end - g).div_ceil(threads) as u32;
            load[..threads].fill(0);
            for h in g..end {
                let mut votes = [0u8; 64];
                for &p in &self.waits[h] {
                    if p != NO_WAIT {
                        votes[deal.owner[p as usize] as usize] += 1;
                    }
                }
                // The most votes among the workers with room left; ties to the least loaded, then the first.
                let mut best = usize::MAX;
                for t in 0..threads {
                    let better = best == usize::MAX
                        || votes[t] > votes[best]
                        || (votes[t] == votes[best] && load[t] < load[best]);
                    if load[t] < room && better {
                        best = t;
                    }
                }
                deal.owner[h] = best as u8;
                load[best] += 1;
            }
            g = end;
        }
        deal.start.clear();
        deal.start.resize(threads + 1, 0);
        for &o in &deal.owner {
            deal.start[o as usize + 1] += 1;
        }
        for t in 0..threads {
            deal.start[t + 1] += deal.start[t];
        }
        deal.by_owner.clear();
        deal.by_owner.resize(n, 0);
        deal.position.clear();
        deal.position.resize(n, 0);
        let mut next = [0u32; 64];
        next[..threads].copy_from_slice(&deal.start[..threads]);
        for (g, &o) in deal.owner.iter().enumerate() {
            let at = next[o as usize];
            deal.by_owner[at as usize] = g as u32;
            deal.position[g] = at;
            next[o as usize] += 1;
        }
    }
}

/// Number of used lanes in a group.
#[inline(always)]
pub fn used_lanes(group: &[u32; LANES]) -> usize {
    group.iter().take_while(|&&k| k != NO_LANE).count()
}
