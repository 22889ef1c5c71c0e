//! The per-frame data as the shaders read it (`shaders/scene.wgsl`): the frame uniform block and one 64-byte
//! record per box. Packing writes straight into the persistently mapped buffers: no allocation per frame.

use glam::{Mat4, Quat, Vec3};

use super::error::RenderError;
use super::scene_data::{FrameInput, MAX_AVATARS, MAX_CONTACT_MARKERS, MAX_CUBES, MAX_VIEWS};

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

/// Boxes one frame can hold: every cube, avatar part and contact marker.
pub(crate) const MAX_BOXES: usize = MAX_CUBES + MAX_AVATARS * BOXES_PER_AVATAR + MAX_CONTACT_MARKERS;

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct GpuBox {
    position: [f32; 3],
    flags: u32,
    rotation: [f32; 4],
    half_extents: [f32; 3],
    pad: u32,
    colour: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct GpuFrame {
    view_proj: [[f32; 16]; MAX_VIEWS],
    inv_view_proj: [[f32; 16]; MAX_VIEWS],
    eye_position: [[f32; 4]; MAX_VIEWS],
    light_view_proj: [f32; 16],
    light_towards: [f32; 4],
    params: [u32; 4],
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
    if input.cubes.len() > MAX_CUBES {
        return Err(RenderError::Input(format!(
            "{} cubes (at most {MAX_CUBES})",
            input.cubes.len()
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
        position: position.to_array(),
        flags,
        rotation: rotation.normalize().to_array(),
        half_extents: half_extents.to_array(),
        pad: 0,
        colour: [colour[0], colour[1], colour[2], 1.0],
    }
}

/// Writes every box of the frame into `out` (mapped memory for [`MAX_BOXES`] records); returns the count.
///
/// # Safety
/// `out` points to writable memory for at least [`MAX_BOXES`] `GpuBox` records that the GPU is not reading.
pub(crate) unsafe fn write_boxes(input: &FrameInput, out: *mut GpuBox) -> u32 {
    let mut n = 0usize;
    let mut push = |b: GpuBox| {
        if n < MAX_BOXES {
            // SAFETY: n < MAX_BOXES, within the caller's buffer; unaligned-safe since the buffer is 64-byte aligned.
            unsafe { out.add(n).write(b) };
            n += 1;
        }
    };
    for c in input.cubes {
        push(gpu_box(c.position, c.rotation, c.half_extents, c.colour, c.flags & 7));
    }
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
    n as u32
}

/// The frame's uniform block.
pub(crate) fn gpu_frame(input: &FrameInput, light_view_proj: Mat4, shadow_size_px: u32) -> GpuFrame {
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
            0,
            0,
        ],
    };
    for (i, v) in input.views.iter().take(MAX_VIEWS).enumerate() {
        let clip_from_world = v.clip_from_world();
        frame.view_proj[i] = clip_from_world.to_cols_array();
        frame.inv_view_proj[i] = clip_from_world.inverse().to_cols_array();
        frame.eye_position[i] = v.eye_position().extend(1.0).to_array();
    }
    frame
}
