//! The per-frame data as the shaders read it (`shaders/scene.wgsl`): the frame uniform block and one 64-byte
//! record per box — a [`CubeInstance`], whose layout is the shader's, so a frame's cubes are copied as they are and
//! only the few avatar and contact boxes are built. Everything is written straight into the persistently mapped
//! buffers: no allocation per frame.

use glam::{Mat4, Quat, Vec3};

use super::casters::field_words;
use super::error::RenderError;
use super::ground::{ground_triangles, GROUND_VERTICES};
use super::scene_data::{
    CubeInstance, FrameInput, CUBE_FIRST_VIEW_ONLY, CUBE_SECOND_VIEW_ONLY, INITIAL_CUBE_CAPACITY, MAX_AVATARS,
    MAX_CONTACT_MARKERS, MAX_VIEWS,
};

/// Shader flag: draw the box in its flat colour (contact markers).
const FLAG_UNLIT: u32 = 8;
/// Shader debug bit: tint resting cubes.
const DEBUG_RESTING: u32 = 1;

/// Boxes an avatar is drawn with: head, left hand, right hand.
const BOXES_PER_AVATAR: usize = 3;
/// Head box half extents (m): a little wider than deep.
const HEAD_HALF_EXTENTS_M: Vec3 = Vec3::new(0.10, 0.12, 0.11);
/// Hand box half extents (m): a flat paddle along the hand's -z (pointing) axis.
const HAND_HALF_EXTENTS_M: Vec3 = Vec3::new(0.045, 0.025, 0.09);
/// Contact marker half extent (m).
const CONTACT_MARKER_HALF_M: f32 = 0.025;
/// Contact markers: magenta, unlit, so they read against any cube colour.
const CONTACT_MARKER_RGB: [f32; 3] = [1.0, 0.1, 0.9];

/// Boxes besides the cubes one frame can have: every avatar part and contact marker.
const MAX_OTHER_BOXES: usize = MAX_AVATARS * BOXES_PER_AVATAR + MAX_CONTACT_MARKERS;

/// Box records the buffers hold from the start.
pub(crate) const INITIAL_BOX_CAPACITY: usize = INITIAL_CUBE_CAPACITY + MAX_OTHER_BOXES;

/// Box records a frame of `input` may write: the size its buffer needs.
pub(crate) fn boxes_needed(input: &FrameInput) -> usize {
    input.cubes.len() + MAX_OTHER_BOXES
}

/// A box as the shaders read it.
pub(crate) type GpuBox = CubeInstance;

// The shader masks a cube's flags with its own copy of this value (`CUBE_FLAGS` in shaders/scene.wgsl).
const _: () = assert!(super::scene_data::CUBE_FLAGS == 55);

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct GpuFrame {
    view_proj: [[f32; 16]; MAX_VIEWS],
    inv_view_proj: [[f32; 16]; MAX_VIEWS],
    eye_position: [[f32; 4]; MAX_VIEWS],
    light_view_proj: [f32; 16],
    light_towards: [f32; 4],
    params: [u32; 4],
    /// x: the cubes among the boxes (the first ones; their flags are masked to the caller's, and they are drawn
    /// in the order of the order buffer).
    counts: [u32; 4],
    /// Per view, the ground's triangles on screen (`ground.rs`).
    ground: [[[f32; 4]; GROUND_VERTICES]; MAX_VIEWS],
}

pub(crate) const GPU_BOX_BYTES: u64 = std::mem::size_of::<GpuBox>() as u64;
pub(crate) const GPU_FRAME_BYTES: u64 = std::mem::size_of::<GpuFrame>() as u64;

/// Checks the documented limits; the error says which.
pub(crate) fn validate(input: &FrameInput) -> Result<(), RenderError> {
    if input.views.is_empty() || input.views.len() > MAX_VIEWS {
        return Err(RenderError::Input(format!(
            "{} views (1 to {MAX_VIEWS})",
            input.views.len()
        )));
    }
    if input.avatars.len() > MAX_AVATARS {
        return Err(RenderError::Input(format!(
            "{} avatars (at most {MAX_AVATARS})",
            input.avatars.len()
        )));
    }
    Ok(())
}

fn gpu_box(position: Vec3, rotation: Quat, half_extents: Vec3, colour: [f32; 3], flags: u32) -> GpuBox {
    GpuBox {
        rotation,
        position,
        half_extents,
        colour,
        flags,
    }
}

/// The boxes a frame wrote: how many, and a checksum of those after the cubes (avatars and contact markers: a
/// few), which with the cubes' generation (`casters.rs`) tells the renderer whether anything that casts a shadow
/// moved since the shadow map was drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WrittenBoxes {
    pub count: u32,
    pub checksum: u64,
}

/// FxHash's step: cheap, and any changed bit of a record changes the sum.
fn fold(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// Writes the frame's avatar and contact marker boxes into `out` (mapped memory for `capacity` records, at least
/// [`boxes_needed`]) after its cubes, which `casters.rs` copies there; returns the count of every box.
///
/// # Safety
/// `out` points to writable memory for at least `capacity` `GpuBox` records that the GPU is not reading.
pub(crate) unsafe fn write_boxes(input: &FrameInput, out: *mut GpuBox, capacity: usize) -> WrittenBoxes {
    let mut n = input.cubes.len().min(capacity);
    let mut checksum = 0u64;
    let mut push = |b: GpuBox| {
        if n < capacity {
            checksum = field_words(&b).iter().fold(checksum, |h, &w| fold(h, w));
            // SAFETY: n < capacity, within the caller's buffer, which is 64-byte aligned.
            unsafe { out.add(n).write(b) };
            n += 1;
        }
    };
    for a in input.avatars {
        push(gpu_box(
            a.head.position,
            a.head.rotation,
            HEAD_HALF_EXTENTS_M,
            a.colour,
            0,
        ));
        for hand in &a.hands {
            push(gpu_box(hand.position, hand.rotation, HAND_HALF_EXTENTS_M, a.colour, 0));
        }
    }
    if input.debug.contacts {
        for &p in input.contacts.iter().take(MAX_CONTACT_MARKERS) {
            push(gpu_box(
                p,
                Quat::IDENTITY,
                Vec3::splat(CONTACT_MARKER_HALF_M),
                CONTACT_MARKER_RGB,
                FLAG_UNLIT,
            ));
        }
    }
    WrittenBoxes {
        count: n as u32,
        checksum,
    }
}

/// True when the frame shows a different world in each of its two views: some cube is flagged for one view only
/// (`cube_flags`: every cube's flags or-ed). The shadow map is then split in two halves, one per view, so a world
/// casts shadows in its own view only.
pub(crate) fn split_views(view_count: usize, cube_flags: u32) -> bool {
    view_count == 2 && cube_flags & (CUBE_FIRST_VIEW_ONLY | CUBE_SECOND_VIEW_ONLY) != 0
}

#[cfg(test)]
fn split_of(input: &FrameInput) -> bool {
    split_views(input.views.len(), input.cubes.iter().fold(0, |f, c| f | c.flags))
}

/// The frame's uniform block. `box_count`: the boxes written (the shadow pass of a split frame draws them twice,
/// once per half, and finds a box's index from the instance's).
pub(crate) fn gpu_frame(
    input: &FrameInput,
    light_view_proj: Mat4,
    shadow_size_px: u32,
    box_count: u32,
    split: bool,
) -> GpuFrame {
    let mut frame = GpuFrame {
        view_proj: [[0.0; 16]; MAX_VIEWS],
        inv_view_proj: [[0.0; 16]; MAX_VIEWS],
        eye_position: [[0.0; 4]; MAX_VIEWS],
        light_view_proj: light_view_proj.to_cols_array(),
        light_towards: (-input.light_direction.normalize_or(Vec3::NEG_Y))
            .extend(0.0)
            .to_array(),
        params: [
            if input.debug.resting { DEBUG_RESTING } else { 0 },
            shadow_size_px,
            u32::from(split),
            box_count,
        ],
        counts: [input.cubes.len().min(box_count as usize) as u32, 0, 0, 0],
        ground: [[[0.0; 4]; GROUND_VERTICES]; MAX_VIEWS],
    };
    for (i, v) in input.views.iter().take(MAX_VIEWS).enumerate() {
        let clip_from_world = v.clip_from_world();
        frame.view_proj[i] = clip_from_world.to_cols_array();
        frame.inv_view_proj[i] = clip_from_world.inverse().to_cols_array();
        frame.eye_position[i] = v.eye_position().extend(1.0).to_array();
        frame.ground[i] = ground_triangles(clip_from_world);
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::scene_data::{Avatar, CubeInstance, Pose, View, CUBE_HELD, CUBE_RESTING};

    fn cube(flags: u32) -> CubeInstance {
        CubeInstance {
            position: Vec3::new(1.0, 0.5, 2.0),
            rotation: Quat::from_rotation_y(0.3),
            half_extents: Vec3::splat(0.5),
            colour: [0.1, 0.2, 0.3],
            flags,
        }
    }

    fn pack(input: &FrameInput) -> (Vec<GpuBox>, u32) {
        let mut out = vec![gpu_box(Vec3::ZERO, Quat::IDENTITY, Vec3::ZERO, [0.0; 3], 0); boxes_needed(input)];
        // SAFETY: `out` holds that many records.
        let n = unsafe {
            crate::render::casters::Casters::default().write(input.cubes, out.as_mut_ptr(), out.len());
            write_boxes(input, out.as_mut_ptr(), out.len())
        }
        .count;
        (out, n)
    }

    #[test]
    fn cubes_avatars_and_contact_markers_become_boxes_in_order() {
        let views = [View::look_at(Vec3::new(0.0, 2.0, 5.0), Vec3::ZERO, 1.0, 1.5)];
        let cubes = [cube(CUBE_HELD | CUBE_RESTING | CUBE_SECOND_VIEW_ONLY | 0xC8), cube(0)];
        let pose = Pose {
            position: Vec3::Y,
            rotation: Quat::IDENTITY,
        };
        let avatars = [Avatar {
            head: pose,
            hands: [pose, pose],
            colour: [0.0, 0.0, 1.0],
        }];
        let contacts = [Vec3::ZERO; 3];
        let mut input = FrameInput {
            avatars: &avatars,
            contacts: &contacts,
            ..FrameInput::new(&views, &cubes)
        };
        let (boxes, n) = pack(&input);
        assert_eq!(n, 2 + 3, "contacts are drawn only in the contacts debug mode");
        // Cubes go as they are (the vertex shader masks their flags to the caller's); then the avatar's boxes.
        assert_eq!(boxes[0], cubes[0]);
        assert_eq!(boxes[1], cubes[1]);
        assert_eq!(boxes[2].half_extents, HEAD_HALF_EXTENTS_M);
        assert_eq!(boxes[3].half_extents, HAND_HALF_EXTENTS_M);
        input.debug.contacts = true;
        let (boxes, n) = pack(&input);
        assert_eq!(n, 2 + 3 + 3);
        assert_eq!(boxes[7].flags, FLAG_UNLIT);
    }

    #[test]
    fn the_checksum_changes_when_an_avatar_moves_and_only_then() {
        let views = [View::look_at(Vec3::new(0.0, 2.0, 5.0), Vec3::ZERO, 1.0, 1.5)];
        let pose = Pose {
            position: Vec3::Y,
            rotation: Quat::IDENTITY,
        };
        let mut avatars = [Avatar {
            head: pose,
            hands: [pose, pose],
            colour: [0.0, 0.0, 1.0],
        }];
        let write = |avatars: &[Avatar]| {
            let input = FrameInput {
                avatars,
                ..FrameInput::new(&views, &[])
            };
            let mut out = vec![gpu_box(Vec3::ZERO, Quat::IDENTITY, Vec3::ZERO, [0.0; 3], 0); boxes_needed(&input)];
            // SAFETY: `out` holds that many records.
            unsafe { write_boxes(&input, out.as_mut_ptr(), out.len()) }
        };
        let before = write(&avatars);
        assert_eq!(write(&avatars), before, "the same boxes sum the same");
        avatars[0].hands[1].position.y += 1e-6;
        assert_ne!(write(&avatars).checksum, before.checksum, "a micrometre moves the sum");
        avatars[0].hands[1].position.y -= 1e-6;
        avatars[0].head.rotation = Quat::from_rotation_x(1e-3);
        assert_ne!(write(&avatars).checksum, before.checksum, "so does a turn");
    }

    #[test]
    fn frame_input_outside_the_limits_is_refused() {
        let views = [View::look_at(Vec3::new(0.0, 2.0, 5.0), Vec3::ZERO, 1.0, 1.5); 3];
        assert!(validate(&FrameInput::new(&views[..0], &[])).is_err());
        assert!(validate(&FrameInput::new(&views, &[])).is_err());
        assert!(validate(&FrameInput::new(&views[..2], &[])).is_ok());
        let many = vec![cube(0); 5 * INITIAL_CUBE_CAPACITY];
        assert!(
            validate(&FrameInput::new(&views[..1], &many)).is_ok(),
            "no cap on cubes"
        );
        let avatars = [Avatar {
            head: Pose {
                position: Vec3::Y,
                rotation: Quat::IDENTITY,
            },
            hands: [Pose {
                position: Vec3::Y,
                rotation: Quat::IDENTITY,
            }; 2],
            colour: [0.0; 3],
        }; MAX_AVATARS + 1];
        let input = FrameInput {
            avatars: &avatars,
            ..FrameInput::new(&views[..1], &[])
        };
        assert!(validate(&input).is_err());
    }

    #[test]
    fn the_uniform_block_carries_both_eyes_and_the_light() {
        let views = View::stereo_pair(Vec3::new(0.0, 2.0, 5.0), Vec3::ZERO, 1.0, 1.5, 0.064);
        let frame = gpu_frame(&FrameInput::new(&views, &[]), Mat4::IDENTITY, 2048, 0, false);
        let left = Vec3::from_slice(&frame.eye_position[0][..3]);
        let right = Vec3::from_slice(&frame.eye_position[1][..3]);
        assert!(((right - left).length() - 0.064).abs() < 1e-4, "eyes {left} {right}");
        assert!(right.x > left.x, "the second view is the right eye");
        let towards = Vec3::from_slice(&frame.light_towards[..3]);
        assert!(
            (towards.length() - 1.0).abs() < 1e-5 && towards.y > 0.0,
            "unit vector up towards the light"
        );
        assert_eq!(frame.params[1], 2048);
    }

    #[test]
    fn a_frame_splits_its_shadow_only_with_two_views_and_cubes_for_one_of_them() {
        let pair = View::stereo_pair(Vec3::new(0.0, 2.0, 5.0), Vec3::ZERO, 1.0, 1.5, 0.0);
        let shared = [cube(0), cube(CUBE_RESTING)];
        let split = [cube(CUBE_FIRST_VIEW_ONLY), cube(CUBE_SECOND_VIEW_ONLY)];
        assert!(!split_of(&FrameInput::new(&pair, &shared)), "one world in both views");
        assert!(split_of(&FrameInput::new(&pair, &split)));
        assert!(
            !split_of(&FrameInput::new(&pair[..1], &split)),
            "one view has nothing to split"
        );
        let frame = gpu_frame(&FrameInput::new(&pair, &split), Mat4::IDENTITY, 2048, 7, true);
        assert_eq!(
            frame.params[2..],
            [1, 7],
            "split, and the box count the shadow pass divides by"
        );
        assert_eq!(frame.counts[0], 2, "the cubes among the boxes");
    }
}
