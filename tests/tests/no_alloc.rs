//! Once a scene is running, a physics step allocates nothing: a counting global allocator watches the steps.

use tumble::alloc_count::{allocations as allocations_so_far, Counting};

use tumble_tests::scene_world;

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
        let before = allocations_so_far();
        for _ in 0..100 {
            world.step();
        }
        let allocations = allocations_so_far() - before;
        assert_eq!(allocations, 0, "{name}: {allocations} allocations in 100 steps");
    }
}
