//! One `World::step()` of each shipped scene, 60 steps in (cubes falling, stacks forming contacts).
//!
//! Every iteration steps a fresh copy of the same warmed-up world (the copy is made outside the timed region), so
//! each sample times the same step rather than an ever more settled (and sleeping) scene. Large scenes take fewer
//! samples so the whole run stays within a few minutes.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;

/// Steps taken before measuring.
const WARM_UP_STEPS: usize = 60;
/// Scenes with more bodies than this take the minimum sample count.
const LARGE_SCENE_BODIES: usize = 300;

fn scene_files() -> Vec<PathBuf> {
    let dir = tumble_benches::scenes_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("scene_step");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for file in scene_files() {
        let scene = load_scene(&file).unwrap_or_else(|e| panic!("loading {}: {e}", file.display()));
        let mut world = scene
            .build_world(WorldConfig::default())
            .unwrap_or_else(|e| panic!("building {}: {e}", file.display()));
        for _ in 0..WARM_UP_STEPS {
            world.step();
        }
        if world.body_count() > LARGE_SCENE_BODIES {
            // Few, flat samples: a step of a large scene takes tens of milliseconds.
            group.sample_size(10).sampling_mode(SamplingMode::Flat);
        } else {
            group.sample_size(30).sampling_mode(SamplingMode::Auto);
        }
        group.bench_function(scene.name.as_str(), |b| {
            b.iter_batched_ref(|| world.clone(), |w| w.step().max_penetration, BatchSize::PerIteration)
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
