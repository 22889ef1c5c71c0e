//! Once a scene is running, a physics step allocates nothing: a counting global allocator watches the steps.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use tumble_tests::scene_world;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn running_scenes_step_without_allocating() {
    // A resting stack without sleep, a moving cube (broadphase rebuilt every step) and a collapsing tower.
    for (name, sleep, warm_up) in [("pyramid20", false, 30), ("field900", true, 20), ("smash", true, 400)] {
        let mut world = scene_world(name, sleep);
        for _ in 0..warm_up {
            world.step();
        }
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..100 {
            world.step();
        }
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(allocations, 0, "{name}: {allocations} allocations in 100 steps");
    }
}
