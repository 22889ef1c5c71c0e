//! Once a scene is running, a physics step allocates nothing: a counting global allocator watches the steps. The
//! steps measured include bodies in full motion (a heavy cube thrown through a pyramid, a tower being smashed),
//! not only resting worlds, because that is when contact lists, islands and the solver's buffers would grow.
//!
//! Allocations are counted on the test's own thread: the harness's threads (and any test beside it) do not count.

use glam::Vec3;
use tumble_engine::physics::{BodyDesc, BodyId, World};
use tumble_tests::alloc::{thread_allocations as allocations_so_far, PerThreadCounting};

use tumble_tests::{positions, scene_world};

#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

/// Steps `world` `steps` times; returns the allocations made meanwhile and the most bodies awake in one step.
fn measure(world: &mut World, steps: u32) -> (u64, usize) {
    let mut most_awake = 0;
    let before = allocations_so_far();
    for _ in 0..steps {
        most_awake = most_awake.max(world.step().awake_bodies);
    }
    (allocations_so_far() - before, most_awake)
}

#[test]
fn running_scenes_step_without_allocating_at_rest_and_in_collisions() {
    // A resting stack without sleep, a moving cube (broadphase rebuilt every step) and a collapsing tower.
    for (name, sleep, warm_up) in [("pyramid20", false, 30), ("field900", true, 20), ("smash", true, 400)] {
        let mut world = scene_world(name, sleep);
        for _ in 0..warm_up {
            world.step();
        }
        let (allocations, _) = measure(&mut world, 100);
        assert_eq!(allocations, 0, "{name}: {allocations} allocations in 100 steps");
    }
    a_cube_thrown_through_a_pyramid_steps_without_allocating();
    a_step_shared_out_over_threads_allocates_nothing();
}

/// On several threads too: the workers start, and the passes' bookkeeping grows, in the first steps only.
fn a_step_shared_out_over_threads_allocates_nothing() {
    for (name, threads) in [("smash", 2), ("topple900", 3)] {
        let mut world = scene_world(name, false);
        world.set_threads(threads);
        world.set_min_contacts_to_share(0);
        for _ in 0..60 {
            world.step();
        }
        let (allocations, _) = measure(&mut world, 60);
        assert_eq!(
            allocations, 0,
            "{name} on {threads} threads: {allocations} allocations in 60 steps"
        );
    }
}

fn a_cube_thrown_through_a_pyramid_steps_without_allocating() {
    let mut world = scene_world("pyramid20", true);
    let pyramid = positions(&world);
    world
        .add_body(&BodyDesc {
            position: Vec3::new(-14.0, 3.0, 0.0),
            linear_velocity: Vec3::new(20.0, 1.0, 0.0),
            angular_velocity: Vec3::new(0.0, 3.0, 5.0),
            // Ten times a cube's mass, so it breaks through instead of bouncing off.
            density: 10.0,
            ..BodyDesc::default()
        })
        .unwrap();
    // A few steps in flight, so the measured ones start before the hit (about step 20) and go on through the
    // pyramid's collapse.
    for _ in 0..5 {
        world.step();
    }
    let (allocations, most_awake) = measure(&mut world, 150);
    let knocked = pyramid
        .iter()
        .enumerate()
        .filter(|&(k, p)| world.state(BodyId(k as u32)).unwrap().position.distance(*p) > 0.1)
        .count();
    assert!(
        knocked >= 10,
        "the throw knocked only {knocked} cubes: nothing was tested"
    );
    assert!(
        most_awake > 20,
        "at most {most_awake} bodies awake: the pile never moved"
    );
    assert_eq!(allocations, 0, "{allocations} allocations in 150 steps of a collision");
}
