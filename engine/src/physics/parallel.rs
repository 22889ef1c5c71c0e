//! How a step's loops share out over the workers (`workers.rs`) and still give the bits of one thread.
//!
//! Two kinds of loop:
//! - **Independent items** ([`run_chunks`]): each item reads what no item writes and writes only its own slot
//!   (a contact's manifold, a constraint's set-up, a contact's stored impulses). Any split gives the same bits.
//! - **Groups in order** ([`run_groups`]): the solver's passes, where each constraint reads and writes its two
//!   bodies' velocities. A `solver_lanes::Schedule` says, for every group, which earlier groups touch its bodies
//!   (`waits`). A group runs once those are done; two groups that share no body may run at once, on any threads,
//!   and each body still sees its constraints one after the other in the order one thread would take them, so every
//!   value is computed from the same inputs as on one thread: the same bits, whatever the number of threads.
//!
//! Independent items are handed out in chunks of consecutive items, claimed from one counter (a worker the OS takes
//! off its core holds up only the chunk it has). Groups are dealt out by `Schedule::deal`: each wave's groups
//! shared evenly, a group to the worker that ran most of the groups it waits for (chains stay with one worker);
//! each worker takes its own in order, so the workers go through a pass side by side, a wave at a time, waiting
//! only where a group needs another worker's; the worker with the lowest unfinished group never waits on anything
//! unfinished, so a pass always moves on. (Claiming groups from a counter instead was slower and less steady on
//! two cores, and dealing round-robin made every other group wait for the other worker.) Reductions are maxima (of
//! non-negative figures), which any order gives alike.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::solver_lanes::{Schedule, NO_WAIT};
use super::workers::{spin_or_yield, Workers};

/// A pass of fewer groups runs on the caller alone, whatever the step: there is nothing to share.
const MIN_GROUPS_TO_SHARE: usize = 16;

/// A step with fewer contacts to bring up to date runs on the caller alone: handing a loop to the workers and
/// waiting for them costs microseconds, and the solver's passes wait on one another wave by wave, which a small
/// pile (pyramid20, 600 contacts: 0.2 ms a step on one thread, 0.6 on two) loses on.
pub const MIN_CONTACTS_TO_SHARE: usize = 2000;

/// What a pass over groups keeps between its uses: the stamp each group got when done. Kept by the world so a
/// step allocates nothing once it has seen its largest pass.
#[derive(Default)]
pub struct Progress {
    /// Per group: the stamp of the last pass that finished it.
    done: Vec<AtomicU64>,
    /// The current pass's stamp (each pass has a new one, so nothing needs clearing).
    stamp: u64,
    /// The next chunk to claim.
    next: AtomicUsize,
}

impl Progress {
    /// A new pass over `n` items.
    fn begin(&mut self, n: usize) {
        if self.done.len() < n {
            self.done.resize_with(n, || AtomicU64::new(0));
        }
        self.stamp += 1;
        self.next.store(0, Ordering::Relaxed);
    }

    /// Claims the next chunk of `per_chunk` of `n` items, or `None` when all are claimed.
    #[inline]
    fn claim(&self, n: usize, per_chunk: usize) -> Option<Range<usize>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed) * per_chunk;
        (start < n).then(|| start..(start + per_chunk).min(n))
    }
}

/// A copy starts with no pass run (its stamps are its own).
impl Clone for Progress {
    fn clone(&self) -> Progress {
        Progress::default()
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("groups", &self.done.len()).finish()
    }
}

/// The largest of non-negative figures, gathered from the workers: the bits of a non-negative `f32` order as the
/// values do.
struct Largest(AtomicU32);

impl Largest {
    fn new() -> Largest {
        Largest(AtomicU32::new(0))
    }

    fn add(&self, x: f32) {
        // `max` drops a NaN, as one thread's running maximum does.
        let x = 0.0f32.max(x);
        self.0.fetch_max(x.to_bits(), Ordering::Relaxed);
    }

    fn get(&self) -> f32 {
        f32::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Runs `body(range, &mut largest)` over `0..n` in chunks of `per_chunk`, on every worker; returns the largest
/// figure any chunk left in `largest` (starting from 0). On one thread: one call over everything.
pub fn run_chunks(
    workers: &Workers,
    progress: &mut Progress,
    n: usize,
    per_chunk: usize,
    body: &(dyn Fn(Range<usize>, &mut f32) + Sync),
    share: bool,
) -> f32 {
    if !share || workers.threads() == 1 || n <= per_chunk {
        let mut largest = 0.0f32;
        body(0..n, &mut largest);
        return largest;
    }
    progress.begin(0);
    let progress = &*progress;
    let largest = Largest::new();
    workers.run(&|_worker| {
        let mut mine = 0.0f32;
        while let Some(range) = progress.claim(n, per_chunk) {
            body(range, &mut mine);
        }
        largest.add(mine);
    });
    largest.get()
}

/// Runs `body(g, &mut largest)` for every group `0..waits.len()`, each after the groups it waits for; returns the
/// largest figure left in `largest` (starting from 0). On one thread: the groups in order.
pub fn run_groups(
    workers: &Workers,
    progress: &mut Progress,
    schedule: &Schedule,
    body: &(dyn Fn(usize, &mut f32) + Sync),
    share: bool,
) -> f32 {
    let (n, threads) = (schedule.groups.len(), workers.threads());
    if !(share && threads > 1 && n >= MIN_GROUPS_TO_SHARE) {
        let mut largest = 0.0f32;
        for g in 0..n {
            body(g, &mut largest);
        }
        return largest;
    }
    let deal = &schedule.deal;
    assert!(
        deal.threads == threads && deal.owner.len() == n,
        "the schedule was not dealt for {threads} threads"
    );
    progress.begin(n);
    let progress = &*progress;
    let stamp = progress.stamp;
    let largest = Largest::new();
    workers.run(&|worker| {
        let mut mine = 0.0f32;
        let mine_groups = &deal.by_owner[deal.start[worker] as usize..deal.start[worker + 1] as usize];
        for &g in mine_groups {
            let g = g as usize;
            for &h in &schedule.waits[g] {
                // This worker's own earlier groups are done: it did them.
                if h != NO_WAIT && deal.owner[h as usize] as usize != worker {
                    let done = &progress.done[deal.position[h as usize] as usize];
                    let mut spins = 0u32;
                    while done.load(Ordering::Acquire) != stamp {
                        spin_or_yield(&mut spins);
                    }
                }
            }
            body(g, &mut mine);
            // Each worker's stamps lie together (`position`): marking a group done does not take the cache line
            // another worker is writing its own in.
            progress.done[deal.position[g] as usize].store(stamp, Ordering::Release);
        }
        largest.add(mine);
    });
    largest.get()
}

/// A slice whose items are each written by the one worker its index went to (a contact by the worker that
/// updates it, a constraint by the worker that builds it). SAFETY (the caller's promise): no index is handed to
/// two workers at once, which [`run_chunks`] keeps for the items of its ranges; the view lives no longer than the
/// `&mut` slice it was made from, and nothing else touches the slice meanwhile.
pub struct SlotsMut<T> {
    ptr: *mut T,
    len: usize,
}

unsafe impl<T: Send> Sync for SlotsMut<T> {}

impl<T> SlotsMut<T> {
    pub fn new(items: &mut [T]) -> SlotsMut<T> {
        SlotsMut {
            ptr: items.as_mut_ptr(),
            len: items.len(),
        }
    }

    /// Item `k`, for the one worker that has it.
    #[allow(clippy::mut_from_ref)]
    pub fn get(&self, k: usize) -> &mut T {
        assert!(k < self.len);
        // SAFETY: in bounds, and only this worker has index k (see the type).
        unsafe { &mut *self.ptr.add(k) }
    }
}

/// A step's workers and the progress their passes keep, borrowed together for the loops of one stage.
/// `share` false: this step is too small to gain from the workers, and every loop runs on the caller alone.
pub struct Runner<'a> {
    pub workers: &'a Workers,
    pub progress: &'a mut Progress,
    pub share: bool,
}

impl Runner<'_> {
    /// Whether a pass over `groups` groups goes to the workers ([`run_groups`] runs it on the caller otherwise):
    /// a pass that need not go group by group may then take the constraints in their own order (the same bits:
    /// every two on one body keep their order), which streams through memory.
    pub fn shares(&self, groups: usize) -> bool {
        self.share && self.workers.threads() > 1 && groups >= MIN_GROUPS_TO_SHARE
    }

    /// [`run_groups`].
    pub fn groups(&mut self, schedule: &Schedule, body: &(dyn Fn(usize, &mut f32) + Sync)) -> f32 {
        run_groups(self.workers, self.progress, schedule, body, self.share)
    }

    /// [`run_chunks`].
    pub fn chunks(&mut self, n: usize, per_chunk: usize, body: &(dyn Fn(Range<usize>, &mut f32) + Sync)) -> f32 {
        run_chunks(self.workers, self.progress, n, per_chunk, body, self.share)
    }
}
