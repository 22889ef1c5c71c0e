//! The threads a step shares its work with: a small pool of its own, started once, that runs one job at a time on
//! every thread (the caller's included) and parks between steps.
//!
//! A job is a function of the worker's index (0 is the caller). What each worker does, and in which order its
//! results meet, is the job's business: the step's jobs split their work so that the result does not depend on
//! how many workers there are or which of them takes what (see `parallel.rs`). Nothing here allocates once the
//! threads are started; a job is a borrowed closure handed over through a pointer, and the caller waits for every
//! worker to finish it before the borrow ends.
//!
//! Why not rayon: a job's workers wait on one another (a constraint waits for the one before it on the same
//! body), which needs every worker running at once; rayon promises no such thing (a job may queue behind another
//! on a busy thread), and its broadcast allocates per call.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// The most threads a world steps on (the caller and 63 workers): more gains nothing on the scenes a game has.
pub const MAX_THREADS: usize = 64;

/// The threads a game's world steps on by default: the machine's cores, leaving one for rendering (at least 1).
pub fn default_threads() -> usize {
    thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// How long a worker spins for the next job before it parks, outside a step (see [`Workers::warm`]).
const SPIN_BEFORE_PARKING: Duration = Duration::from_micros(50);

/// The job a worker runs: a borrowed closure with its lifetime erased. Only [`Workers::run`] writes it, before it
/// bumps the generation, and the closure outlives every use (the caller waits for all workers before returning).
type JobRef = &'static (dyn Fn(usize) + Sync);

struct Shared {
    job: UnsafeCell<Option<JobRef>>,
    /// Bumped once per job; a worker runs a job when it sees a generation it has not run.
    generation: AtomicU64,
    /// Workers still running the current job.
    running: AtomicUsize,
    /// Per worker: parked, or about to park (the caller then unparks it).
    parked: Vec<AtomicBool>,
    quit: AtomicBool,
    /// A worker's part of the last job panicked (the caller panics in turn).
    panicked: AtomicBool,
    warm: Arc<AtomicBool>,
}

// SAFETY: `job` is written only by the caller while no worker runs (every worker has finished the last job and
// waits for a new generation), and read by workers only after the generation bump (SeqCst) that follows the write.
unsafe impl Sync for Shared {}

/// The pool: `threads - 1` workers beside the caller, started at the first job. One thread: no pool at all.
/// Copies share the pool (a world's snapshot, restored, steps on the same threads); the jobs of two copies
/// stepping at once take turns.
#[derive(Clone)]
pub struct Workers {
    threads: usize,
    pool: Arc<Mutex<Option<Pool>>>,
    /// A step is under way: the workers wait for its next job spinning (and yielding), never parked. Waking a
    /// parked thread takes tens of microseconds, more on a virtual machine whose idle core the host has halted
    /// (large_pyramid on 2 threads: 7.4 ms a step kept warm, 13–15 ms in runs where the workers parked between
    /// the step's loops, a step's serial stretches being longer than any spin before parking).
    warm: Arc<AtomicBool>,
}

struct Pool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    workers: Vec<Thread>,
}

impl Workers {
    /// A pool for `threads` threads in all, clamped to 1..=[`MAX_THREADS`]; its threads start with the first job.
    pub fn new(threads: usize) -> Workers {
        Workers {
            threads: threads.clamp(1, MAX_THREADS),
            pool: Arc::new(Mutex::new(None)),
            warm: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Keeps the workers waiting for jobs, never parked, until the guard is dropped: for the length of a step.
    pub fn warm(&self) -> Warm {
        self.warm.store(true, Ordering::Relaxed);
        Warm(Arc::clone(&self.warm))
    }

    /// Threads a job runs on, the caller's included.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `job(worker)` once on every thread (worker 0 on the caller's) and returns when all have finished.
    pub fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        if self.threads == 1 {
            job(0);
            return;
        }
        // A job that panicked left the pool as it was (every worker finished or never started it).
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = pool.get_or_insert_with(|| Pool::start(self.threads, &self.warm));
        let shared = &*pool.shared;
        // SAFETY: the reference is read by workers only between the generation bump below and their decrement of
        // `running`, and this function does not return before `running` is 0: it never outlives `job`. No worker
        // reads the cell while it is written (all finished the last job).
        unsafe {
            let job: JobRef = std::mem::transmute::<&(dyn Fn(usize) + Sync), JobRef>(job);
            *shared.job.get() = Some(job);
        }
        shared.running.store(self.threads - 1, Ordering::Relaxed);
        shared.generation.fetch_add(1, Ordering::SeqCst);
        for (w, parked) in shared.parked.iter().enumerate() {
            if parked.load(Ordering::SeqCst) {
                pool.workers[w].unpark();
            }
        }
        // Should the caller's part panic, the borrow must still outlive the workers' parts: wait on the way out.
        let finished = WaitForWorkers(shared);
        job(0);
        drop(finished);
        if shared.panicked.swap(false, Ordering::Relaxed) {
            panic!("a physics worker thread panicked (its message is above)");
        }
    }
}

/// While it lives, the workers stay warm ([`Workers::warm`]).
pub struct Warm(Arc<AtomicBool>);

impl Drop for Warm {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// Waits, when dropped, until no worker runs the current job.
struct WaitForWorkers<'a>(&'a Shared);

impl Drop for WaitForWorkers<'_> {
    fn drop(&mut self) {
        let mut spins = 0u32;
        while self.0.running.load(Ordering::Acquire) != 0 {
            spin_or_yield(&mut spins);
        }
    }
}

/// Spins a little, then gives the core away: a wait in a pass is normally a fraction of a microsecond (the other
/// worker is finishing the group before), and one that is longer is a worker the OS took off its core (or more
/// threads than cores), which gets it back sooner when the waiting ones yield.
#[inline]
pub fn spin_or_yield(spins: &mut u32) {
    if *spins < SPINS_BEFORE_YIELDING {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        thread::yield_now();
    }
}

/// About a microsecond of spinning.
const SPINS_BEFORE_YIELDING: u32 = 128;

impl Pool {
    fn start(threads: usize, warm: &Arc<AtomicBool>) -> Pool {
        let shared = Arc::new(Shared {
            job: UnsafeCell::new(None),
            generation: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            parked: (1..threads).map(|_| AtomicBool::new(false)).collect(),
            quit: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            warm: Arc::clone(warm),
        });
        let handles: Vec<JoinHandle<()>> = (1..threads)
            .map(|worker| {
                let shared = Arc::clone(&shared);
                thread::Builder::new()
                    .name(format!("physics-{worker}"))
                    .spawn(move || work(&shared, worker))
                    .expect("starting a physics worker thread")
            })
            .collect();
        let workers = handles.iter().map(|h| h.thread().clone()).collect();
        Pool {
            shared,
            handles,
            workers,
        }
    }
}

/// A worker's life: wait for a job it has not run, run it, say so.
fn work(shared: &Shared, worker: usize) {
    let parked = &shared.parked[worker - 1];
    let mut seen = 0u64;
    loop {
        let since = Instant::now();
        let mut spins = 0u32;
        loop {
            if shared.quit.load(Ordering::Acquire) {
                return;
            }
            let generation = shared.generation.load(Ordering::SeqCst);
            if generation != seen {
                seen = generation;
                break;
            }
            if shared.warm.load(Ordering::Relaxed) {
                // In a step: spin, and now and then give the core to whatever else wants it.
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) {
                    thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            if spins < 1 << 10 || since.elapsed() < SPIN_BEFORE_PARKING {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            // Say we park, then look once more: a job published after that look unparks us (both SeqCst).
            parked.store(true, Ordering::SeqCst);
            if shared.generation.load(Ordering::SeqCst) == seen && !shared.quit.load(Ordering::SeqCst) {
                thread::park();
            }
            parked.store(false, Ordering::SeqCst);
        }
        // SAFETY: see `Workers::run`: written before the generation this worker saw, and outlives this call.
        if let Some(job) = unsafe { *shared.job.get() } {
            // A panic here must still say the part is done, or the caller would wait for ever.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(worker))).is_err() {
                shared.panicked.store(true, Ordering::Relaxed);
            }
        }
        shared.running.fetch_sub(1, Ordering::Release);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::SeqCst);
        for w in &self.workers {
            w.unpark();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers").field("threads", &self.threads).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_runs_each_job_once() {
        for threads in [1, 2, 4, 8] {
            let workers = Workers::new(threads);
            for _ in 0..100 {
                let counts: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
                workers.run(&|w| {
                    counts[w].fetch_add(1, Ordering::Relaxed);
                });
                assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn a_pool_parks_and_wakes_between_jobs() {
        let workers = Workers::new(3);
        let total = AtomicUsize::new(0);
        for _ in 0..3 {
            workers.run(&|w| {
                total.fetch_add(w + 1, Ordering::Relaxed);
            });
            // Long enough for the workers to park.
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(total.load(Ordering::Relaxed), 3 * (1 + 2 + 3));
    }
}
