//! Once running, a rendered frame allocates nothing on the Rust heap: a counting global allocator watches
//! offscreen stereo frames of 1,000 cubes (instance and uniform buffers are preallocated and stay mapped, the
//! command buffers are reused). The driver's own allocations (C, e.g. lavapipe's) are not ours and not counted.

use tumble_game::alloc_count::{allocations as allocations_so_far, Counting};

use glam::{Quat, Vec3};
use tumble_engine::render::{authority_rgb, CubeInstance, FrameInput, Offscreen, View, CUBE_RESTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn rendered_frames_do_not_allocate() {
    let cubes: Vec<CubeInstance> = (0..1000)
        .map(|i| CubeInstance {
            position: Vec3::new(
                (i % 32) as f32 * 1.1 - 17.0,
                0.5 + (i / 320) as f32,
                ((i / 32) % 10) as f32 * 1.1,
            ),
            rotation: Quat::from_rotation_y(i as f32 * 0.1),
            half_extents: Vec3::splat(0.5),
            colour: authority_rgb((i % 5) as u8),
            flags: if i % 3 == 0 { CUBE_RESTING } else { 0 },
        })
        .collect();
    let views = View::stereo_pair(Vec3::new(0.0, 12.0, 30.0), Vec3::ZERO, 1.0, 4.0 / 3.0, 0.064);
    let mut offscreen = Offscreen::new(160, 120, 2).unwrap_or_else(|e| panic!("{e}"));
    let mut input = FrameInput::new(&views, &cubes);
    input.debug.resting = true;
    for _ in 0..3 {
        offscreen.render(&input).expect("warm-up frame");
    }
    let before = allocations_so_far();
    let mut checksum = 0u64;
    for _ in 0..10 {
        let pixels = offscreen.render(&input).expect("frame");
        checksum += u64::from(pixels[pixels.len() / 2]);
    }
    let allocations = allocations_so_far() - before;
    assert_eq!(allocations, 0, "{allocations} allocations in 10 frames");
    assert!(checksum > 0, "frames were drawn");
}
