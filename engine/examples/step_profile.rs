// Temporary: steps a scene (sleep off) to `from`, then times steps from..to on each thread count, alternated.
use std::time::Instant;
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;
fn main() {
    let name = std::env::args().nth(1).unwrap_or("large_pyramid".into());
    let from: u32 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(240);
    let to: u32 = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(300);
    let threads: Vec<usize> = std::env::var("THREADS")
        .unwrap_or("1,2".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let rounds: usize = std::env::var("ROUNDS").ok().map(|s| s.parse().unwrap()).unwrap_or(5);
    let scene = load_scene(std::path::Path::new(&format!("assets/scenes/{name}.toml"))).unwrap();
    let mut world = scene
        .build_world(WorldConfig {
            sleep: false,
            ..WorldConfig::default()
        })
        .unwrap();
    for _ in 0..from {
        world.step();
    }
    let snap = world.snapshot();
    let mut medians = vec![Vec::new(); threads.len()];
    let mut sums = vec![0u64; threads.len()];
    for r in 0..rounds {
        for k in 0..threads.len() {
            let t = threads[(k + r) % threads.len()];
            let idx = (k + r) % threads.len();
            if std::env::var("FRESH").is_ok() {
                world = scene
                    .build_world(WorldConfig {
                        sleep: false,
                        ..WorldConfig::default()
                    })
                    .unwrap();
                world.set_threads(t);
                for _ in 0..from {
                    world.step();
                }
            } else {
                world.restore(&snap);
                world.set_threads(t);
            }
            let mut times = Vec::new();
            for _ in from..to {
                let t0 = Instant::now();
                world.step();
                times.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(|a, b| a.partial_cmp(b).unwrap());
            medians[idx].push(times[times.len() / 2]);
            sums[idx] = world.checksum();
        }
    }
    for k in 0..threads.len() {
        let mut m = medians[k].clone();
        m.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{name} {from}..{to} threads {}: median {:.3} ms (rounds {:?}) checksum {:016x}",
            threads[k],
            m[m.len() / 2],
            medians[k]
                .iter()
                .map(|x| (x * 100.0).round() / 100.0)
                .collect::<Vec<_>>(),
            sums[k]
        );
    }
}
