//! A step on several threads gives the bits of a step on one: every shipped scene, stepped on 1, 2, 4 and 8
//! threads, has the same checksum after every step. The threads share out narrowphase, constraint set-up, the
//! solver's passes (a constraint waits for those before it on its bodies) and storing impulses; any slip in who
//! waits for whom shows as a different checksum (on a 2-core machine the 8 threads also stand in for a
//! worker the OS keeps off its core).

use glam::Vec3;
use tumble_engine::physics::{BodyDesc, World};
use tumble_tests::scene_world;

const THREADS: [usize; 4] = [1, 2, 4, 8];

/// Steps each world of `worlds` (one per thread count) `steps` times, comparing their checksums after each step;
/// returns the first world's final checksum.
fn step_alike(name: &str, worlds: &mut [World], steps: u32) -> u64 {
    for step in 1..=steps {
        for world in worlds.iter_mut() {
            world.step();
        }
        let sums: Vec<u64> = worlds.iter().map(World::checksum).collect();
        assert!(
            sums.iter().all(|&s| s == sums[0]),
            "{name}: step {step}: checksums on {THREADS:?} threads differ: {sums:016x?}"
        );
    }
    worlds[0].checksum()
}

fn worlds_of(name: &str, sleep: bool) -> Vec<World> {
    THREADS
        .iter()
        .map(|&threads| {
            let mut world = scene_world(name, sleep);
            world.set_threads(threads);
            // Every step shares its work, however small.
            world.set_min_contacts_to_share(0);
            assert_eq!(world.threads(), threads);
            world
        })
        .collect()
}

#[test]
fn every_shipped_scene_steps_to_the_same_bits_on_1_2_4_and_8_threads() {
    // Steps per scene: enough for contacts to form and piles to move (the big ones fewer: the test profile is
    // slow, and every step is compared).
    let scenes: [(&str, u32); 15] = [
        ("cubes90", 60),
        ("cubes900", 30),
        ("field900", 30),
        ("grid20000", 3),
        ("large_pyramid", 6),
        ("open_field", 60),
        ("pyramid20", 60),
        ("pyramid_hit", 60),
        ("smash", 90),
        ("table64", 60),
        ("topple900", 40),
        ("tower30", 60),
        ("tower_wall", 60),
        ("towers2x25", 60),
        ("towers2x2x20", 60),
    ];
    let shipped = std::fs::read_dir(tumble_tests::scene_path("tower30").parent().unwrap())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "toml"))
        .count();
    assert_eq!(shipped, scenes.len(), "a scene was added or removed: list it here");
    for (name, steps) in scenes {
        for sleep in [true, false] {
            let mut worlds = worlds_of(name, sleep);
            step_alike(name, &mut worlds, steps);
        }
    }
}

#[test]
fn a_thrown_cube_through_a_pyramid_and_a_restore_give_the_same_bits_on_any_threads() {
    let mut worlds = worlds_of("pyramid20", true);
    for world in &mut worlds {
        world
            .add_body(&BodyDesc {
                position: Vec3::new(-14.0, 3.0, 0.0),
                linear_velocity: Vec3::new(20.0, 1.0, 0.0),
                angular_velocity: Vec3::new(0.0, 3.0, 5.0),
                density: 10.0,
                ..BodyDesc::default()
            })
            .unwrap();
    }
    step_alike("pyramid20 hit", &mut worlds, 20);
    let snapshots: Vec<_> = worlds.iter().map(World::snapshot).collect();
    let first = step_alike("pyramid20 hit", &mut worlds, 40);
    // A restored world keeps its threads and repeats its bits.
    for (world, snapshot) in worlds.iter_mut().zip(&snapshots) {
        world.restore(snapshot);
    }
    for (world, threads) in worlds.iter().zip(THREADS) {
        assert_eq!(world.threads(), threads);
    }
    assert_eq!(step_alike("pyramid20 hit, restored", &mut worlds, 40), first);
}

#[test]
fn the_threads_are_clamped_and_one_is_the_default() {
    let mut world = scene_world("tower30", true);
    assert_eq!(world.threads(), 1);
    world.set_threads(0);
    assert_eq!(world.threads(), 1);
    world.set_threads(1000);
    assert_eq!(world.threads(), 64);
}
