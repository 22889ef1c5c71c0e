//! A running prediction game allocates nothing per frame: once the first 10 s have passed (the link simulator's
//! queues, the worlds' step buffers and the endpoints' buffer pools have grown to the traffic), each frame — both
//! bots' inputs sampled, the server's step and the client's predicted step, one packet written and sent per
//! machine, the link run, every packet read, and every rewind and replay the client makes — makes no heap
//! allocation, over a lossy, jittery link on the 900-cube field (where corrections happen).

use std::path::Path;

use tumble::predict::run::{PredictConfig, PredictRun};
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;
use tumble_tests::alloc::{thread_allocations as allocations_so_far, PerThreadCounting};

#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

const WARM_UP_FRAMES: u64 = 900;
const MEASURED_FRAMES: u64 = 2700;

#[test]
fn a_running_prediction_game_allocates_nothing_per_frame() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/scenes/cubes900.toml");
    let scene = load_scene(&path).unwrap();
    let build = || scene.build_world(WorldConfig::default()).unwrap();
    let config = PredictConfig {
        seconds: 120.0,
        latency_ms: 100.0,
        jitter_ms: 20.0,
        loss_pct: 25.0,
        ..PredictConfig::default()
    };
    let mut run = PredictRun::new(&config, build(), build()).unwrap();
    for _ in 0..WARM_UP_FRAMES {
        run.frame().unwrap();
    }
    let rewinds_before = run.client().stats.rewinds;
    let before = allocations_so_far();
    for _ in 0..MEASURED_FRAMES {
        run.frame().unwrap();
    }
    let allocations = allocations_so_far() - before;
    assert_eq!(allocations, 0, "{allocations} allocations in {MEASURED_FRAMES} frames");
    let rewinds = run.client().stats.rewinds - rewinds_before;
    assert!(rewinds > 0, "the measured frames rewound and replayed");
}
