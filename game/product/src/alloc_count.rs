//! A counting wrapper around the system allocator, so `tumble` can report heap allocations in its frame loops
//! (the standard is none per physics step or rendered frame once running). The binary and the no-allocation tests
//! (`tests/tests/*no_alloc.rs`) install it as their global allocator; libraries are untouched. One relaxed atomic add
//! and one thread-local add per allocation are its whole cost. The process-wide count says whether the counter is
//! live; a loop measures its own thread's count ([`thread_allocations`]), so that a thread that wakes on its own
//! (the mirror window's event thread, which allocates inside winit when the window system speaks) is not taken for
//! the loop's work.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's allocations. A const-initialised `Cell` of a plain integer: reading or bumping it never
    /// allocates and it has no destructor, so the allocator may touch it at any time, even as a thread ends.
    static THREAD_ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one allocation, process-wide and on this thread.
fn count() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    THREAD_ALLOCATIONS.with(|c| c.set(c.get() + 1));
}

/// The system allocator, counting allocations and reallocations.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations so far in this process (0 forever when [`Counting`] is not the global allocator).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Allocations so far on the calling thread (0 forever when [`Counting`] is not the global allocator).
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.with(std::cell::Cell::get)
}
