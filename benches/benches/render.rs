//! CPU time to record and submit one frame (target ≤ 0.5 ms): `Renderer::begin_frame` (write the mapped buffers,
//! ready the shadow and main passes — recorded, or an earlier recording of the slot's submitted again) + `submit`.
//! Waiting for the GPU is kept out of the timed region (each iteration first waits for the frames in flight), so
//! on lavapipe, where the "GPU" is the CPU, the number is still the CPU's cost. 1,000 cubes mono and stereo, and
//! 5,000 stereo (issue 33: no more than 1,000 cost before). Every cube turns a little each frame, so nothing a still
//! frame could keep (the shadow map) is kept. The same file runs against the renderer before issue 33 (a throwaway
//! branch) for the comparison.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use glam::{Quat, Vec3};
use tumble_engine::render::{authority_rgb, CubeInstance, FrameInput, Gpu, Renderer, View};

fn cubes(n: usize) -> Vec<CubeInstance> {
    (0..n)
        .map(|i| CubeInstance {
            position: Vec3::new(
                (i % 32) as f32 * 1.1 - 17.0,
                0.5 + (i / 320) as f32,
                ((i / 32) % 10) as f32 * 1.1,
            ),
            rotation: Quat::from_rotation_y(i as f32 * 0.1),
            half_extents: Vec3::splat(0.5),
            colour: authority_rgb((i % 5) as u8),
            flags: 0,
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let gpu = Gpu::headless().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("render bench on {}", gpu.info.name);
    let mut group = c.benchmark_group("render_frame");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    for (views_n, n) in [(1u32, 1000), (2, 1000), (2, 5000)] {
        let mut cubes = cubes(n);
        let mut renderer = Renderer::new(&gpu, 320, 180, views_n).unwrap_or_else(|e| panic!("{e}"));
        let aspect = 320.0 / 180.0;
        let stereo = View::stereo_pair(Vec3::new(0.0, 12.0, 30.0), Vec3::ZERO, 1.0, aspect, 0.064);
        let views = &stereo[..views_n as usize];
        let name = format!(
            "record_submit_{}_{n}_cubes",
            if views_n == 1 { "mono" } else { "stereo" }
        );
        let mut frame = 0u32;
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    renderer.wait_idle();
                    // The cubes are written just before the frame, as a game fills them from its world: after the
                    // wait, in which lavapipe's drawing (the CPU standing in for a GPU) runs through the caches.
                    frame += 1;
                    let turn = Quat::from_rotation_y(frame as f32 * 1e-3);
                    for (i, c) in cubes.iter_mut().enumerate() {
                        c.rotation = Quat::from_rotation_y(i as f32 * 0.1) * turn;
                    }
                    let input = FrameInput::new(views, &cubes);
                    let start = Instant::now();
                    renderer.begin_frame(&input).expect("begin");
                    renderer.submit(&[], &[], &[]).expect("submit");
                    total += start.elapsed();
                }
                total
            })
        });
        let _ = renderer.wait_last_submitted();
        if let Some(ms) = renderer.gpu_time_ms() {
            eprintln!("{name}: GPU time of the last frame {ms:.2} ms");
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
