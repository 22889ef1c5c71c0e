//! A running snapshot-interpolation game allocates nothing per frame: after 10 s of warm-up (the link simulator's
//! queues and the world's step buffers grown to the traffic; the simulator's free list of datagram buffers grew once
//! at 12.8 s until it made room for every buffer when it makes one), each frame — both bots' inputs, the server's step,
//! a snapshot written in slices when due, the client's packet, the link run, every slice decoded and the client's
//! drawing of every cube — makes no heap allocation, over a lossy, jittery link.

use std::path::Path;

use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;
use tumble_game::run_settings::RunSettings;
use tumble_harness::compare_snapshots::{SnapshotConfig, SnapshotRun};
use tumble_tests::alloc::{thread_allocations as allocations_so_far, PerThreadCounting};

#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

const WARM_UP_FRAMES: u64 = 900;
const MEASURED_FRAMES: u64 = 1800;

#[test]
fn a_running_snapshot_game_allocates_nothing_per_frame() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/scenes/cubes900.toml");
    let world = load_scene(&path).unwrap().build_world(WorldConfig::default()).unwrap();
    let config = SnapshotConfig {
        run: RunSettings::link(60.0, 50.0, 10.0, 5.0),
        ..SnapshotConfig::default()
    };
    let mut run = SnapshotRun::new(&config, world).unwrap();
    for _ in 0..WARM_UP_FRAMES {
        run.frame().unwrap();
    }
    let before = allocations_so_far();
    for _ in 0..MEASURED_FRAMES {
        run.frame().unwrap();
    }
    let allocations = allocations_so_far() - before;
    assert_eq!(allocations, 0, "{allocations} allocations in {MEASURED_FRAMES} frames");
    assert!(
        run.client.stats.snapshots_complete > 100,
        "the client drew from snapshots"
    );
}
