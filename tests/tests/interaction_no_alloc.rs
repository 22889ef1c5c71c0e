//! Holding, carrying (pushing other cubes) and throwing a cube allocates nothing per step: script sampling, avatar
//! update, interaction update and the physics step, watched by a per-thread counting global allocator.

use tumble_tests::alloc::{thread_allocations as allocations_so_far, PerThreadCounting};

use glam::Vec3;
use tumble_game::avatar::Avatar;
use tumble_game::interaction::script::{AvatarScript, HandScript};
use tumble_game::interaction::{Interaction, InteractionEvent};
use tumble_tests::scene_world;

// Counted on this test's thread only: the harness's own threads may allocate meanwhile (a loaded machine made this
// test fail with a process-wide count).
#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

#[test]
fn holding_carrying_and_throwing_allocate_nothing() {
    let mut world = scene_world("table64", true);
    for _ in 0..300 {
        world.step();
    }
    // Grab the lone cube at (-2, 0.5, 0), drag it at knee height through the pyramid and tower beside it, throw.
    let script = HandScript::starting_at(Vec3::new(-2.0, 1.05, 0.0))
        .grip_to(10, 1.0)
        .move_to(40, Vec3::new(-2.0, 1.6, 0.0))
        .move_to(200, Vec3::new(2.0, 1.6, 0.0))
        .move_to(210, Vec3::new(3.0, 2.0, 0.0))
        .key(212, Vec3::new(3.2, 2.1, 0.0), 0.0)
        .build()
        .unwrap();
    let script = AvatarScript {
        hands: [None, Some(script)],
        ..AvatarScript::default()
    };
    let (mut avatar, mut interaction) = (Avatar::default(), Interaction::default());
    let (mut grabs, mut releases) = (0, 0);
    let mut allocations = 0;
    for step in 0..300 {
        let before = allocations_so_far();
        avatar.update(&script.sample(step), tumble_game::STEP_S as f32);
        interaction.update(&mut world, &avatar).unwrap();
        for e in interaction.events() {
            match e {
                InteractionEvent::Grabbed { .. } => grabs += 1,
                InteractionEvent::Released { .. } => releases += 1,
            }
        }
        world.step();
        // The first grab's step is the warm-up: everything after it must be allocation-free.
        if step > 20 {
            allocations += allocations_so_far() - before;
        }
    }
    assert_eq!((grabs, releases), (1, 1));
    assert_eq!(
        allocations, 0,
        "{allocations} allocations while holding, carrying and throwing"
    );
}
