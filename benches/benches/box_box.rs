//! Box-box contact generation, ns per pair: SAT over 15 axes plus clipping (faces) or one point (edges).
//!
//! Three pairs of one-metre cubes: face on face at rest (the common case in stacks), a tilted pair (clipping a
//! rotated face, what a toppling cube makes) and crossed edges (the edge-edge branch).

use std::f32::consts::FRAC_PI_4;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use glam::{Mat3, Quat, Vec3};
use tumble_engine::physics::box_box::collide_box_box;
use tumble_engine::physics::box_plane::OrientedBox;
use tumble_engine::physics::manifold::CandidatePoint;

/// Speculative margin the pairs are generated with (m).
const MARGIN_M: f32 = 0.02;

fn cube(center: Vec3, rotation: Quat) -> OrientedBox {
    OrientedBox {
        center,
        axes: Mat3::from_quat(rotation),
        half: Vec3::splat(0.5),
    }
}

fn pairs() -> [(&'static str, OrientedBox, OrientedBox); 3] {
    let ground = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
    // Resting face on face, 1 mm of overlap.
    let resting = cube(Vec3::new(0.05, 1.499, -0.03), Quat::IDENTITY);
    // Turned about y and tipped a little: still face contact, but the clipped polygon is rotated.
    let tilted = cube(
        Vec3::new(0.1, 1.52, 0.05),
        Quat::from_rotation_y(0.4) * Quat::from_rotation_x(0.06),
    );
    // Edge up along z against edge down along x, overlapping 1 cm.
    let lower = cube(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_4));
    let upper = cube(
        Vec3::new(0.0, std::f32::consts::SQRT_2 - 0.01, 0.0),
        Quat::from_rotation_x(FRAC_PI_4),
    );
    [
        ("face_face_resting", ground, resting),
        ("tilted", ground, tilted),
        ("edge_edge", lower, upper),
    ]
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("box_box");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, a, b) in pairs() {
        let mut out = [CandidatePoint::default(); 4];
        let count = collide_box_box(&a, &b, MARGIN_M, &mut out).count;
        assert!(
            count > 0,
            "{name}: the pair must touch, or the benchmark measures the early out"
        );
        eprintln!("box_box/{name}: {count} point(s)");
        group.bench_function(name, |bench| {
            bench.iter(|| collide_box_box(black_box(&a), black_box(&b), black_box(MARGIN_M), black_box(&mut out)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
