//! A running lockstep game allocates nothing per frame: once the first 10 s have passed (the link simulator's queues
//! and the worlds' step buffers have grown to the traffic; the endpoints' buffer pools start full enough), each
//! frame — four bots' inputs sampled, the due steps of the cube game simulated (forces, physics, colours,
//! checksums), one packet written and sent per connection (the host relaying the guests' inputs), the links run
//! and every packet read — makes no heap allocation, over a lossy, jittery link.

use std::path::Path;

use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;
use tumble_game::run_settings::RunSettings;
use tumble_harness::compare::{LockstepConfig, LockstepRun};
use tumble_tests::alloc::{thread_allocations as allocations_so_far, PerThreadCounting};

#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

const WARM_UP_FRAMES: u64 = 900;
const MEASURED_FRAMES: u64 = 1800;

#[test]
fn a_running_lockstep_game_allocates_nothing_per_frame() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/scenes/cubes900.toml");
    let scene = load_scene(&path).unwrap();
    let build = || scene.build_world(WorldConfig::default()).unwrap();
    let config = LockstepConfig {
        run: RunSettings::link(120.0, 125.0, 20.0, 5.0),
        players: 4,
        ..LockstepConfig::default()
    };
    let mut run = LockstepRun::new(&config, (0..4).map(|_| build()).collect()).unwrap();
    for _ in 0..WARM_UP_FRAMES {
        run.frame(true).unwrap();
    }
    let before = allocations_so_far();
    for _ in 0..MEASURED_FRAMES {
        run.frame(true).unwrap();
    }
    let allocations = allocations_so_far() - before;
    assert_eq!(allocations, 0, "{allocations} allocations in {MEASURED_FRAMES} frames");
    let steps: Vec<u64> = run.peers().iter().map(|p| p.steps()).collect();
    assert!(steps.iter().all(|&s| s > WARM_UP_FRAMES), "the game ran: {steps:?}");
}
