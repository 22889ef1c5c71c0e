//! `tumble screenshot`: step a scene headless, render it offscreen (no window or display; lavapipe is enough) and
//! write a PNG. The camera is fixed and derived from the scene's bounds: above and in front of the cubes, looking
//! at their centre, far enough back that they all fit. With stereo, two eyes 64 mm apart render side by side.
//! `--session`: a four-player game played by bots in one process ([`session_cubes`]), drawn as one player sees it.

use std::path::Path;

use glam::Vec3;
use tumble_engine::physics::{BodyId, World};
use tumble_engine::render::{authority_rgb, CubeInstance, FrameInput, Offscreen, RenderError, View, CUBE_RESTING};

use crate::draw::{push_hand_boxes, push_remote_avatar_boxes, table_tint};
use crate::session::net_play::NetPlay;

/// Vertical field of view of the screenshot camera (rad): 50°, a normal lens.
pub const CAMERA_FOV_Y_RAD: f32 = 50.0 * std::f32::consts::PI / 180.0;
/// Distance between the two eyes in stereo (m), an average adult's.
pub const EYE_SEPARATION_M: f32 = 0.064;
/// Where the camera looks from, relative to the scene's centre (scaled to fit): in front, a little to the right,
/// and high enough to see the tops of the cubes.
const CAMERA_DIRECTION: Vec3 = Vec3::new(0.45, 0.55, 1.0);
/// Margin around the scene's bounding sphere.
const FIT_MARGIN: f32 = 1.05;
/// Smallest bounding radius the camera frames (m), so one cube does not fill the picture.
const MIN_FRAMED_RADIUS_M: f32 = 2.0;

/// What to render.
#[derive(Clone, Copy, Debug)]
pub struct ShotOptions {
    /// The PNG's size in pixels; with stereo each eye gets half the width.
    pub width: u32,
    pub height: u32,
    pub stereo: bool,
}

/// A rendered picture and the views it was rendered with (for tests that project points into it).
pub struct Shot {
    pub width: u32,
    pub height: u32,
    /// RGBA8, sRGB, rows top to bottom.
    pub rgba: Vec<u8>,
    /// One view (mono) or two (left eye in the left half, right eye in the right half).
    pub views: Vec<View>,
}

/// The world's bodies as boxes to draw: colour from `authority` (per body index; missing = none), resting flag from
/// the rest detection. Removed bodies are skipped.
pub fn world_cubes(world: &World, authority: &[u8]) -> Result<Vec<CubeInstance>, anyhow::Error> {
    let mut cubes = Vec::with_capacity(world.body_count());
    for id in (0..world.body_count() as u32).map(BodyId) {
        if world.is_removed(id)? {
            continue;
        }
        let state = world.state(id)?;
        cubes.push(CubeInstance {
            position: state.position,
            rotation: state.rotation,
            half_extents: world.half_extents(id)?,
            colour: authority_rgb(authority.get(id.index()).copied().unwrap_or(0)),
            flags: if state.at_rest { CUBE_RESTING } else { 0 },
        });
    }
    Ok(cubes)
}

/// Two worlds in one picture, as the reference's loopback scene showed them: `right` moved along +x so that its
/// leftmost cube is `gap_m` beyond `left`'s rightmost.
pub fn side_by_side(left: &[CubeInstance], right: &[CubeInstance], gap_m: f32) -> Vec<CubeInstance> {
    let reach = |c: &CubeInstance| c.half_extents.length();
    let left_max = left.iter().map(|c| c.position.x + reach(c)).fold(f32::MIN, f32::max);
    let right_min = right.iter().map(|c| c.position.x - reach(c)).fold(f32::MAX, f32::min);
    let shift = if left.is_empty() || right.is_empty() {
        0.0
    } else {
        left_max - right_min + gap_m
    };
    let moved = right.iter().map(|c| CubeInstance {
        position: c.position + Vec3::X * shift,
        ..*c
    });
    left.iter().copied().chain(moved).collect()
}

/// The fixed camera for a set of cubes and an aspect ratio (width / height of one view): centre and distance from
/// the cubes' bounding sphere. Returns (eye, target).
pub fn camera_for(cubes: &[CubeInstance], aspect: f32) -> (Vec3, Vec3) {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for c in cubes {
        let r = Vec3::splat(c.half_extents.max_element());
        lo = lo.min(c.position - r);
        hi = hi.max(c.position + r);
    }
    // The ground at the origin frames an empty scene.
    let (centre, radius) = if cubes.is_empty() {
        (Vec3::ZERO, MIN_FRAMED_RADIUS_M)
    } else {
        ((lo + hi) * 0.5, ((hi - lo).length() * 0.5).max(MIN_FRAMED_RADIUS_M))
    };
    // The narrower of the two fields of view decides how far back the sphere fits.
    let half_fov_y = CAMERA_FOV_Y_RAD * 0.5;
    let half_fov_x = (half_fov_y.tan() * aspect).atan();
    let distance = radius * FIT_MARGIN / half_fov_y.min(half_fov_x).sin();
    (centre + CAMERA_DIRECTION.normalize() * distance, centre)
}

/// Renders `cubes` from the fixed camera into an RGBA image.
pub fn render_cubes(cubes: &[CubeInstance], options: &ShotOptions) -> Result<Shot, RenderError> {
    let views_n: u32 = if options.stereo { 2 } else { 1 };
    let eye_width = options.width / views_n;
    if eye_width == 0 || options.height == 0 {
        return Err(RenderError::Input(format!(
            "image size {}x{}",
            options.width, options.height
        )));
    }
    let aspect = eye_width as f32 / options.height as f32;
    let (eye, target) = camera_for(cubes, aspect);
    let views: Vec<View> = if options.stereo {
        View::stereo_pair(eye, target, CAMERA_FOV_Y_RAD, aspect, EYE_SEPARATION_M).to_vec()
    } else {
        vec![View::look_at(eye, target, CAMERA_FOV_Y_RAD, aspect)]
    };
    let mut offscreen = Offscreen::new(eye_width, options.height, views_n)?;
    tracing::info!(device = %offscreen.gpu().info.name, "rendering offscreen");
    let input = FrameInput::new(&views, cubes);
    let rgba = offscreen.render(&input)?.to_vec();
    if let Some(ms) = offscreen.renderer().gpu_time_ms() {
        tracing::debug!(gpu_ms = ms, "frame GPU time");
    }
    Ok(Shot {
        width: eye_width * views_n,
        height: options.height,
        rgba,
        views,
    })
}

/// Writes RGBA8 sRGB pixels as a PNG.
pub fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    // Pictures go into the repository (docs/): smallest files, at a few milliseconds more.
    encoder.set_compression(png::Compression::Best);
    encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
    let mut writer = encoder
        .write_header()
        .with_context(|| format!("writing {}", path.display()))?;
    writer
        .write_image_data(rgba)
        .with_context(|| format!("writing {}", path.display()))?;
    writer.finish().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Where a world point lands in a shot made with `view` covering pixels `x0..x0 + width` × `0..height`: pixel
/// coordinates, or `None` behind the camera.
pub fn project(view: &View, point: Vec3, x0: u32, width: u32, height: u32) -> Option<(f32, f32)> {
    let clip = view.clip_from_world() * point.extend(1.0);
    if clip.w <= 0.0 {
        return None;
    }
    let ndc = clip.truncate() / clip.w;
    Some((
        x0 as f32 + (ndc.x * 0.5 + 0.5) * width as f32,
        (ndc.y * 0.5 + 0.5) * height as f32,
    ))
}

/// A four-player picture: `tumble local`'s players, every seat played by its bot, for `seconds` of simulated time,
/// then player `view_player`'s world as that player draws it (smoothed poses), cubes tinted by authority, its own
/// hands, and the other players' heads and hands as its peer plays them out, each in the player's colour.
pub fn session_cubes(play: &mut NetPlay, seconds: f64, view_player: usize) -> anyhow::Result<Vec<CubeInstance>> {
    if view_player == 0 || view_player > play.seats.len() {
        anyhow::bail!("--view-player must be 1 to {} (got {view_player})", play.seats.len());
    }
    let steps = (seconds * f64::from(crate::STEP_HZ)).round() as u64;
    for _ in 0..steps {
        play.step_once(None)?;
    }
    let peer = &play.seats[view_player - 1].peer;
    let mut cubes = Vec::with_capacity(peer.world.body_count() + crate::draw::AVATAR_BOXES_MAX);
    for id in (0..peer.world.body_count() as u32).map(BodyId) {
        if peer.world.is_removed(id)? {
            continue;
        }
        let pose = peer.drawn_pose(id)?;
        let (colour, _) = table_tint(Some(&peer.table), id.0);
        cubes.push(CubeInstance {
            position: pose.position,
            rotation: pose.rotation,
            half_extents: peer.world.half_extents(id)?,
            colour,
            flags: 0,
        });
    }
    // The shown player's own hands, and the others as this peer plays them out (what its player would see).
    push_hand_boxes(&peer.avatar, peer.player(), &mut cubes);
    push_remote_avatar_boxes(peer.remote_avatars(), peer.player(), &mut cubes);
    Ok(cubes)
}
