//! What the caller hands the renderer each frame: plain data in slices, no handles. Interpolating between physics
//! steps is the caller's job; the renderer draws exactly what it is given.

use glam::{Mat4, Quat, Vec3};

/// Most views one frame draws (multiview layers): 1 for the desktop, 2 for stereo.
pub const MAX_VIEWS: usize = 2;
/// Cubes the instance buffers hold from the start; a frame with more grows them (once, per frame slot): there is
/// no limit but memory.
pub const INITIAL_CUBE_CAPACITY: usize = 4096;
/// Most avatars (players) one frame draws.
pub const MAX_AVATARS: usize = 4;
/// Most contact points one frame draws as markers in the contacts debug mode; more are ignored.
pub const MAX_CONTACT_MARKERS: usize = 2048;

/// [`CubeInstance::flags`]: the cube is under the pointer or hand (hover).
pub const CUBE_SELECTED: u32 = 1;
/// [`CubeInstance::flags`]: the cube is held by a hand.
pub const CUBE_HELD: u32 = 2;
/// [`CubeInstance::flags`]: the cube is at rest (drawn tinted only in the resting debug mode).
pub const CUBE_RESTING: u32 = 4;
/// [`CubeInstance::flags`]: draw the cube in the first view only (the left of two), and give it a shadow there
/// only. With two views, cubes flagged for one view each show two worlds side by side in one frame (the desktop's
/// network-model comparison: the player's world left, the other side's right); unflagged cubes show in both.
pub const CUBE_FIRST_VIEW_ONLY: u32 = 16;
/// [`CubeInstance::flags`]: draw the cube in the second view only (the right of two); see [`CUBE_FIRST_VIEW_ONLY`].
pub const CUBE_SECOND_VIEW_ONLY: u32 = 32;
/// Every flag a [`CubeInstance`] may carry.
pub const CUBE_FLAGS: u32 = CUBE_SELECTED | CUBE_HELD | CUBE_RESTING | CUBE_FIRST_VIEW_ONLY | CUBE_SECOND_VIEW_ONLY;

/// Linear RGB of a cube with no authority.
pub const AUTHORITY_NONE_RGB: [f32; 3] = [0.85, 0.85, 0.85];
/// Linear RGB of players 1–4's authority: blue, red, green, yellow.
pub const PLAYER_RGB: [[f32; 3]; 4] = [
    [0.10, 0.25, 0.90],
    [0.85, 0.10, 0.08],
    [0.10, 0.65, 0.12],
    [0.90, 0.75, 0.05],
];

/// A cube's colour for an authority: 0 = none (white), 1–4 = players 1–4; anything else is drawn as none.
pub fn authority_rgb(authority: u8) -> [f32; 3] {
    match authority {
        1..=4 => PLAYER_RGB[authority as usize - 1],
        _ => AUTHORITY_NONE_RGB,
    }
}

/// One eye or camera. `projection` is right-handed with depth 0..1 and y up, as `Mat4::perspective_rh` or
/// [`View::projection_from_fov`] make it; the renderer adds Vulkan's y flip itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// World → eye.
    pub view: Mat4,
    pub projection: Mat4,
}

impl View {
    /// A camera at `eye` looking at `target` (y up), vertical field of view in radians, width / height.
    pub fn look_at(eye: Vec3, target: Vec3, fov_y_rad: f32, aspect: f32) -> View {
        View {
            view: Mat4::look_at_rh(eye, target, Vec3::Y),
            projection: Mat4::perspective_rh(fov_y_rad, aspect, NEAR_M, FAR_M),
        }
    }

    /// Two eyes `separation_m` apart (left first), both looking the same way as a camera at `eye` looking at
    /// `target`: parallel axes, as a headset's eyes are.
    pub fn stereo_pair(eye: Vec3, target: Vec3, fov_y_rad: f32, aspect: f32, separation_m: f32) -> [View; 2] {
        let centre = View::look_at(eye, target, fov_y_rad, aspect);
        let half = separation_m * 0.5;
        // In eye space the right eye sits at +x: moving the world by -x puts it there.
        let left = Mat4::from_translation(Vec3::new(half, 0.0, 0.0)) * centre.view;
        let right = Mat4::from_translation(Vec3::new(-half, 0.0, 0.0)) * centre.view;
        [View { view: left, ..centre }, View { view: right, ..centre }]
    }

    /// A view from an OpenXR-style pose (eye position and orientation in world space) and field of view given as
    /// the four half-angles in radians (left and down negative), as `XrFovf` has them.
    pub fn from_pose_fov(position: Vec3, orientation: Quat, left: f32, right: f32, up: f32, down: f32) -> View {
        let view = Mat4::from_rotation_translation(orientation, position).inverse();
        View {
            view,
            projection: View::projection_from_fov(left, right, up, down),
        }
    }

    /// An asymmetric right-handed perspective, depth 0..1 from [`NEAR_M`] to [`FAR_M`], y up.
    pub fn projection_from_fov(left: f32, right: f32, up: f32, down: f32) -> Mat4 {
        let (l, r, u, d) = (left.tan(), right.tan(), up.tan(), down.tan());
        let (w, h) = (r - l, u - d);
        let depth = FAR_M / (NEAR_M - FAR_M);
        Mat4::from_cols(
            glam::Vec4::new(2.0 / w, 0.0, 0.0, 0.0),
            glam::Vec4::new(0.0, 2.0 / h, 0.0, 0.0),
            glam::Vec4::new((r + l) / w, (u + d) / h, depth, -1.0),
            glam::Vec4::new(0.0, 0.0, NEAR_M * depth, 0.0),
        )
    }

    /// World → Vulkan clip space (y down), as the shaders use it.
    pub fn clip_from_world(&self) -> Mat4 {
        Mat4::from_diagonal(glam::Vec4::new(1.0, -1.0, 1.0, 1.0)) * self.projection * self.view
    }

    /// The eye's position in world space.
    pub fn eye_position(&self) -> Vec3 {
        self.view.inverse().w_axis.truncate()
    }
}

/// Near and far planes of the projections made here (m): one range for every view (`crate::view_depth`).
pub use crate::view_depth::{FAR_M, NEAR_M};

/// One box to draw. Laid out as the shaders read a box (`Instance` in `shaders/scene.wgsl`): the renderer copies a
/// frame's cubes to the GPU as they are, with no per-cube conversion.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeInstance {
    /// Normalised by the vertex shader.
    pub rotation: Quat,
    pub position: Vec3,
    /// Half the box's size along its local axes (m); 0.5 for a one-metre cube.
    pub half_extents: Vec3,
    /// Linear RGB, usually [`authority_rgb`].
    pub colour: [f32; 3],
    /// [`CUBE_SELECTED`] | [`CUBE_HELD`] | [`CUBE_RESTING`] | [`CUBE_FIRST_VIEW_ONLY`] | [`CUBE_SECOND_VIEW_ONLY`];
    /// other bits are ignored.
    pub flags: u32,
}

// The layout the shader reads, whatever glam's alignment of `Quat` (16 with SIMD, 4 without): every field where
// `Instance` has it, no padding between fields, 64 bytes in all.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(CubeInstance, rotation) == 0);
    assert!(offset_of!(CubeInstance, position) == 16);
    assert!(offset_of!(CubeInstance, half_extents) == 28);
    assert!(offset_of!(CubeInstance, colour) == 40);
    assert!(offset_of!(CubeInstance, flags) == 52);
    assert!(size_of::<CubeInstance>() == 64);
};

/// A position and orientation in world space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub position: Vec3,
    pub rotation: Quat,
}

/// A player drawn as three boxes: head and two hands, in the player's colour (linear RGB).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Avatar {
    pub head: Pose,
    /// Left, right.
    pub hands: [Pose; 2],
    pub colour: [f32; 3],
}

/// Debug drawing switches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DebugModes {
    /// Tint cubes flagged [`CUBE_RESTING`].
    pub resting: bool,
    /// Draw [`FrameInput::contacts`] as small markers.
    pub contacts: bool,
}

/// Everything one frame draws.
#[derive(Clone, Copy, Debug)]
pub struct FrameInput<'a> {
    /// 1 or 2 views; each is drawn into its own layer (the stereo preview shows them side by side).
    pub views: &'a [View],
    /// Any number: the instance buffers grow to fit ([`INITIAL_CUBE_CAPACITY`] from the start).
    pub cubes: &'a [CubeInstance],
    /// At most [`MAX_AVATARS`].
    pub avatars: &'a [Avatar],
    /// Contact points in world space, drawn when `debug.contacts` is on (at most [`MAX_CONTACT_MARKERS`]).
    pub contacts: &'a [Vec3],
    /// Direction the sunlight travels (from the sun towards the scene); need not be normalised.
    pub light_direction: Vec3,
    pub debug: DebugModes,
}

/// A light from high up, front left: shadows fall to the right and back, long enough to read heights.
pub const DEFAULT_LIGHT_DIRECTION: Vec3 = Vec3::new(0.5, -1.0, -0.35);

impl<'a> FrameInput<'a> {
    /// A frame with the default light, no avatars, contacts or debug modes.
    pub fn new(views: &'a [View], cubes: &'a [CubeInstance]) -> FrameInput<'a> {
        FrameInput {
            views,
            cubes,
            avatars: &[],
            contacts: &[],
            light_direction: DEFAULT_LIGHT_DIRECTION,
            debug: DebugModes::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symmetric_fov_gives_the_usual_perspective() {
        let half = 0.6f32;
        let ours = View::projection_from_fov(-half, half, half, -half);
        let glam = Mat4::perspective_rh(2.0 * half, 1.0, NEAR_M, FAR_M);
        assert!(ours.abs_diff_eq(glam, 1e-4), "{ours} vs {glam}");
    }

    #[test]
    fn clip_space_is_vulkans_with_y_down() {
        let v = View::look_at(Vec3::new(0.0, 0.0, 5.0), Vec3::ZERO, 1.0, 1.0);
        let above = v.clip_from_world() * Vec3::new(0.0, 1.0, 0.0).extend(1.0);
        assert!(
            above.y / above.w < 0.0,
            "a point above the centre is in the upper half (negative y)"
        );
        let depth = |p: Vec3| {
            let c = v.clip_from_world() * p.extend(1.0);
            c.z / c.w
        };
        assert!(
            depth(Vec3::new(0.0, 0.0, 4.0)) < depth(Vec3::ZERO),
            "nearer is smaller depth"
        );
        assert!((0.0..=1.0).contains(&depth(Vec3::ZERO)));
        assert!((v.eye_position() - Vec3::new(0.0, 0.0, 5.0)).length() < 1e-5);
    }

    #[test]
    fn authority_colours_are_white_then_the_four_players() {
        assert_eq!(authority_rgb(0), AUTHORITY_NONE_RGB);
        assert_eq!(authority_rgb(9), AUTHORITY_NONE_RGB);
        let [blue, red, green, yellow] = [1, 2, 3, 4].map(authority_rgb);
        assert!(blue[2] > blue[0] && blue[2] > blue[1]);
        assert!(red[0] > red[1] && red[0] > red[2]);
        assert!(green[1] > green[0] && green[1] > green[2]);
        assert!(yellow[0] > yellow[2] && yellow[1] > yellow[2]);
    }
}
