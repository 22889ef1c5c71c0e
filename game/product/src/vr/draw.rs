//! Drawing a VR frame with `engine::render`: the renderer runs on the session's own Vulkan device (made through
//! the runtime) and draws both eyes in its one multiview pass, resolved straight into the swapchain image the
//! runtime handed us (layer 0 left eye, layer 1 right) and left in the layout the compositor reads
//! (`Renderer::begin_frame_into`: no copy pass); the pass's depth is resolved the same way into the depth swapchain
//! image, so the compositor gets a depth layer to reproject with. Where the swapchain's formats are not the pass's
//! own, and with a pass per eye (`--pass-per-eye`: lavapipe draws a multiview pass into an image's first layer
//! whatever the view's base layer), the renderer draws into its own target and the frame copies it in
//! (`record_copy_into`, `record_depth_copy_into`). The eyes come from the runtime at the frame's predicted display time; so do
//! the player's hands, and the cubes they hold with them; every other cube is drawn between the last two physics
//! steps, as far along as the display time is past the last step (a frame between two steps draws in-between
//! poses, at any refresh rate); highlights come from `game::interaction`. Nothing here allocates per frame.

use tumble_engine::physics::{BodyId, World};
use tumble_engine::render::{
    record_copy_into, record_depth_copy_into, submit_with_mirror, submit_with_mirror_from, vk, CubeInstance,
    ExternalImage, ExternalTarget, ExternalVulkan, FrameInput, Gpu, Mirror, PassTimes, RenderError, Renderer, View,
};
use tumble_engine::xr::{FrameTarget, XrSession};

use super::hands::PlaySpace;
use crate::avatar::{Avatar, HandSide};
use crate::draw::{cube_flags, push_hand_boxes, push_remote_avatar_boxes, session_flags, table_tint, AVATAR_BOXES_MAX};
use crate::interaction::Interaction;
use crate::interpolate::PoseBuffer;
use crate::session::peer::Peer;

/// The scene renderer on the session's device, and the frame data it reuses.
pub struct VrRenderer {
    // Field order is drop order: the mirror and the renderers before the (non-owning) Gpu whose device they use.
    /// The desktop mirror of the left eye, when a window was opened.
    mirror: Option<Mirror>,
    /// One renderer drawing both eyes in one multiview pass; or, with `pass_per_eye`, one per eye drawing one view.
    renderers: Vec<Renderer>,
    gpu: Gpu,
    cubes: Vec<CubeInstance>,
    /// How the last frame reached the swapchain images.
    output: SwapchainOutput,
}

/// How a frame reaches the runtime's swapchain images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapchainOutput {
    /// The main pass resolved into them: no copy.
    Resolve,
    /// Drawn into the renderer's own target and copied in (formats that are not the pass's own, a pass per eye).
    Copy,
}

impl SwapchainOutput {
    /// The report's name for it.
    pub fn name(self) -> &'static str {
        match self {
            SwapchainOutput::Resolve => "resolve",
            SwapchainOutput::Copy => "copy",
        }
    }
}

impl VrRenderer {
    /// A renderer for `xr`'s eye size and two views. The session must outlive it. `pass_per_eye` draws each eye in
    /// a pass of its own instead of one multiview pass (`--pass-per-eye`: for comparing, or a driver whose
    /// multiview fails). With `window`, the left eye is shown there too (where the device can present to it).
    pub fn new(
        xr: &XrSession,
        body_count: usize,
        pass_per_eye: bool,
        window: Option<&super::mirror_window::MirrorWindow>,
    ) -> Result<VrRenderer, RenderError> {
        let v = xr.vulkan();
        let gpu = Gpu::from_external(ExternalVulkan {
            entry: v.entry.clone(),
            instance: v.instance.clone(),
            physical_device: v.physical_device,
            device: v.device.clone(),
            queue_family: v.queue_family_index,
            queue_index: 0,
        });
        let (width, height) = xr.eye_extent();
        // Each keeps its depth for the compositor's depth layer (reprojection), when the session has one, and times
        // every frame: the report's GPU figures are per frame, not one frame in eight repeated.
        let new = |views| {
            let mut renderer = match xr.has_depth_layer() {
                true => Renderer::new_keeping_depth(&gpu, width, height, views),
                false => Renderer::new(&gpu, width, height, views),
            }?;
            renderer.time_every_frame();
            Ok::<Renderer, RenderError>(renderer)
        };
        let renderers = if pass_per_eye {
            vec![new(1)?, new(1)?]
        } else {
            vec![new(2)?]
        };
        tracing::info!(width, height, msaa = ?gpu.info.msaa_samples, pass_per_eye, "VR renderer on the session's device");
        let mirror = window.and_then(|w| open_mirror(&gpu, w, xr.vulkan().can_present));
        Ok(VrRenderer {
            mirror,
            renderers,
            gpu,
            cubes: Vec::with_capacity(body_count + AVATAR_BOXES_MAX + super::notice::MAX_NOTICE_BOXES),
            output: if pass_per_eye {
                SwapchainOutput::Copy
            } else {
                SwapchainOutput::Resolve
            },
        })
    }

    /// Whether the left eye goes to a desktop window too.
    pub fn has_mirror(&self) -> bool {
        self.mirror.is_some()
    }

    /// Swapchains the mirror has made for its window so far (0 without a mirror).
    pub fn mirror_swapchain_builds(&self) -> u64 {
        self.mirror.as_ref().map_or(0, |m| m.builds)
    }

    /// Frames shown in the mirror window since the last call.
    pub fn take_mirror_frames(&mut self) -> u64 {
        self.mirror.as_mut().map_or(0, |m| std::mem::take(&mut m.presented))
    }

    /// The mirror window changed size, or (`None`) was closed.
    pub fn mirror_window_changed(&mut self, size: Option<(u32, u32)>) {
        match size {
            Some((w, h)) => {
                if let Some(m) = self.mirror.as_mut() {
                    m.resize(w, h);
                }
            }
            None => self.mirror = None,
        }
    }

    /// Draws the world into `target` (colour, and depth where the target has a depth image) and submits. `space`
    /// places the runtime's play space in the world; `shown` says where the frame draws things (see
    /// [`FramePoses`]). Returns whether the depth image was written (every eye's), so the frame may carry a depth
    /// layer.
    pub fn draw(
        &mut self,
        target: &FrameTarget,
        space: PlaySpace,
        world: &World,
        interaction: &Interaction,
        peer: Option<&Peer>,
        shown: &FramePoses<'_>,
    ) -> Result<bool, RenderError> {
        self.prepare(world, interaction, peer, shown);
        self.draw_prepared(target, space)
    }

    /// The boxes of a frame, from the world and hands as `shown` says: what [`VrRenderer::draw_prepared`] then
    /// draws. Apart so that a networked game's lock is held only while it is read, not while the frame is recorded.
    pub fn prepare(&mut self, world: &World, interaction: &Interaction, peer: Option<&Peer>, shown: &FramePoses<'_>) {
        fill_cube_instances(&mut self.cubes, world, interaction, peer, shown);
        push_hand_boxes(&shown.avatar, peer.map_or(1, Peer::player), &mut self.cubes);
        if let Some(p) = peer {
            push_remote_avatar_boxes(p.remote_avatars(), p.player(), &mut self.cubes);
        }
    }

    /// Adds a notice floating ahead of `head` (a world pose) to the boxes [`VrRenderer::prepare`] made.
    pub fn push_notice(&mut self, text: &str, head: &crate::avatar::Pose) {
        super::notice::push_notice_boxes(text, head, &mut self.cubes);
    }

    /// Draws the boxes [`VrRenderer::prepare`] made into `target` (colour, and depth where the target has a depth
    /// image) and submits; whether the depth image was written.
    pub fn draw_prepared(&mut self, target: &FrameTarget, space: PlaySpace) -> Result<bool, RenderError> {
        let eye = |i: usize| {
            let e = &target.eyes[i];
            View::from_pose_fov(
                space.point(e.position),
                space.yaw * e.orientation,
                e.fov_left_rad,
                e.fov_right_rad,
                e.fov_up_rad,
                e.fov_down_rad,
            )
        };
        let views = [eye(0), eye(1)];
        let device = &self.gpu.device;
        if let [renderer] = self.renderers.as_mut_slice() {
            let input = FrameInput::new(&views, &self.cubes);
            let colour = swapchain_image(target, 2);
            let depth = depth_image(target, 2);
            if renderer.can_resolve_into(colour.format, depth.map(|d| d.format)) {
                self.output = SwapchainOutput::Resolve;
                let into = ExternalTarget { colour, depth };
                // SAFETY: the images are alive and ours this frame; the session's swapchains live as long as this
                // renderer (made again with a new session), so no handle comes back as another image.
                let cmd = unsafe { renderer.begin_frame_into(&input, &into) }?;
                // SAFETY: the frame resolved into `colour` (COLOR_ATTACHMENT_OPTIMAL), made with TRANSFER_SRC usage.
                unsafe { submit_with_mirror_from(renderer, cmd, self.mirror.as_mut(), Some(&colour)) }?;
                return Ok(depth.is_some());
            }
            self.output = SwapchainOutput::Copy;
            let cmd = renderer.begin_frame(&input)?;
            // SAFETY: the command buffer is recording (begin_frame); the images are alive and ours this frame.
            let depth_written = unsafe {
                record_copy_into(device, renderer, cmd, &colour, 0);
                depth.is_some_and(|d| record_depth_copy_into(device, renderer, cmd, &d, 0))
            };
            submit_with_mirror(renderer, cmd, self.mirror.as_mut())?;
            return Ok(depth_written);
        }
        let mut depth = true;
        for (eye, renderer) in self.renderers.iter_mut().enumerate() {
            let cmd = renderer.begin_frame(&FrameInput::new(&views[eye..=eye], &self.cubes))?;
            let layer = eye as u32;
            // SAFETY: as above; each eye writes its own layer of the swapchain images.
            depth &= unsafe {
                record_copy_into(device, renderer, cmd, &swapchain_image(target, 1), layer);
                depth_image(target, 1).is_some_and(|d| record_depth_copy_into(device, renderer, cmd, &d, layer))
            };
            // The left eye's pass also feeds the mirror.
            let mirror = if eye == 0 { self.mirror.as_mut() } else { None };
            submit_with_mirror(renderer, cmd, mirror)?;
        }
        Ok(depth)
    }

    /// GPU time per pass of the last finished frame (the first eye's, with a pass per eye).
    pub fn pass_times(&self) -> Option<PassTimes> {
        self.renderers.first().and_then(Renderer::pass_times)
    }

    /// How the last frame reached the swapchain images.
    pub fn swapchain_output(&self) -> SwapchainOutput {
        self.output
    }

    /// Whether frames record anything after the main pass: a copy into the swapchain images, or the mirror's blit.
    /// Without (resolving into the swapchain, no mirror) a frame's GPU time has no output part.
    pub fn has_output_pass(&self) -> bool {
        self.output == SwapchainOutput::Copy || self.mirror.is_some()
    }
}

/// The mirror on this session's device, or `None` (logged) where it cannot be made: a device without
/// `VK_KHR_swapchain`, a window it cannot present to. VR goes on without it.
fn open_mirror(gpu: &Gpu, window: &super::mirror_window::MirrorWindow, can_present: bool) -> Option<Mirror> {
    if !can_present {
        tracing::warn!("the headset's Vulkan device cannot present to a window: no mirror");
        return None;
    }
    let (display, handle, (w, h)) = window
        .raw_handles()
        .map_err(|e| tracing::warn!("no mirror: {e}"))
        .ok()?;
    // SAFETY: the window (held by the game, dropped after the renderer) outlives the mirror.
    match unsafe { Mirror::new(gpu, display, handle, w, h) } {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!("no mirror window: {e}");
            None
        }
    }
}

/// The frame's swapchain colour image as `engine::render` copies into it (`layers` of them per copy), in the
/// layout the compositor reads.
fn swapchain_image(target: &FrameTarget, layers: u32) -> ExternalImage {
    ExternalImage {
        image: target.color_image,
        extent: target.extent,
        layers,
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        format: target.color_format,
    }
}

/// The frame's depth swapchain image, if the session has one, as `engine::render` copies the depth into it, in
/// the layout the compositor reads.
fn depth_image(target: &FrameTarget, layers: u32) -> Option<ExternalImage> {
    target.depth.map(|d| ExternalImage {
        image: d.image,
        extent: target.extent,
        layers,
        layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        format: d.format,
    })
}

/// Where a frame draws things: cubes `alpha` (0..1) of the way from the previous step's poses to the last one's
/// (`poses`: the world's, or in a session the shown peer's drawn poses), and the player's hands as `avatar` has them
/// at the display time, with the cubes they hold.
pub struct FramePoses<'a> {
    pub poses: &'a PoseBuffer,
    pub alpha: f32,
    pub avatar: Avatar,
}

/// The bodies a frame draws, in the order [`fill_cube_instances`] writes them: every body not removed.
pub fn drawn_bodies(world: &World) -> impl Iterator<Item = BodyId> + '_ {
    (0..world.body_count() as u32)
        .map(BodyId)
        .filter(|&id| !world.is_removed(id).unwrap_or(true))
}

/// The world's bodies as boxes into `out`, highlighted where a hand hovers or holds them; in a session (`peer`),
/// tinted by authority. Positions as [`FramePoses`] says; a body the pose buffer does not cover (a buffer not yet
/// recorded) is drawn where the world (or the peer) has it.
pub fn fill_cube_instances(
    out: &mut Vec<CubeInstance>,
    world: &World,
    interaction: &Interaction,
    peer: Option<&Peer>,
    shown: &FramePoses<'_>,
) {
    out.clear();
    let buffered = shown.poses.len() == world.body_count();
    for id in drawn_bodies(world) {
        let (Ok(state), Ok(half_extents)) = (world.state(id), world.half_extents(id)) else {
            continue;
        };
        let held_by = HandSide::BOTH
            .into_iter()
            .find_map(|side| interaction.hand(side).held.filter(|h| h.body == id).map(|h| (side, h)));
        let (position, rotation) = match held_by {
            // In this player's hand: where the hand is at display time, as the hold keeps it.
            Some((side, held)) if shown.avatar.hands[side.index()].tracked => {
                let p = shown.avatar.hands[side.index()].pose.compose(&held.offset);
                (p.position, p.rotation)
            }
            _ if buffered => shown.poses.interpolated(id.0 as usize, shown.alpha),
            _ => {
                let pose = peer.and_then(|p| p.drawn_pose(id).ok());
                pose.map_or((state.position, state.rotation), |p| (p.position, p.rotation))
            }
        };
        let (colour, _) = table_tint(peer.map(|p| &p.table), id.0);
        let flags = cube_flags(interaction, id, state.at_rest);
        out.push(CubeInstance {
            position,
            rotation,
            half_extents,
            colour,
            flags: if peer.is_some() { session_flags(flags) } else { flags },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{AvatarInput, HandInput, Pose};
    use glam::{Quat, Vec3};
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    /// Issue 13: two frames between the same two steps draw two different poses, each between the steps' own.
    #[test]
    fn frames_between_two_steps_draw_interpolated_poses() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let cube = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 5.0, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let mut poses = PoseBuffer::default();
        poses.reset(&world);
        for _ in 0..10 {
            world.step();
            poses.record(&world);
        }
        let (before, after) = (poses.interpolated(0, 0.0).0, poses.interpolated(0, 1.0).0);
        assert!(before.y > after.y, "the cube falls");
        let interaction = Interaction::default();
        let mut out = Vec::new();
        let mut drawn = |alpha| {
            let shown = FramePoses {
                poses: &poses,
                alpha,
                avatar: Avatar::default(),
            };
            fill_cube_instances(&mut out, &world, &interaction, None, &shown);
            out[cube.0 as usize].position
        };
        let (early, late) = (drawn(0.25), drawn(0.75));
        assert_ne!(early, late);
        assert!(
            before.y > early.y && early.y > late.y && late.y > after.y,
            "{before} {early} {late} {after}"
        );
        // Where the buffer does not cover the world (not recorded yet), the world's pose.
        let empty = PoseBuffer::default();
        let shown = FramePoses {
            poses: &empty,
            alpha: 0.5,
            avatar: Avatar::default(),
        };
        fill_cube_instances(&mut out, &world, &interaction, None, &shown);
        assert_eq!(out[0].position, world.state(cube).unwrap().position);
    }

    /// A cube in the player's hand is drawn with the hand at display time, not a step behind it.
    #[test]
    fn a_held_cube_is_drawn_with_the_hand_at_display_time() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        world
            .add_body(&BodyDesc {
                half_extents: Vec3::splat(0.1),
                position: Vec3::new(0.0, 1.0, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let mut avatar = Avatar::default();
        let mut interaction = Interaction::default();
        let hand = |x: f32, grip: f32| AvatarInput {
            hands: [
                HandInput::default(),
                HandInput {
                    tracked: true,
                    pose: Pose::new(Vec3::new(x, 1.0, 0.0), Quat::IDENTITY),
                    grip,
                    ..HandInput::default()
                },
            ],
            ..AvatarInput::default()
        };
        let mut poses = PoseBuffer::default();
        poses.reset(&world);
        for step in 0..20 {
            avatar.update(&hand(0.0, if step < 2 { 0.0 } else { 1.0 }), crate::STEP_S as f32);
            interaction.update(&mut world, &avatar).unwrap();
            world.step();
            poses.record(&world);
        }
        assert!(interaction.is_held(BodyId(0)), "the cube was grabbed");
        // The runtime has the hand 5 cm further on at display time.
        let mut shown_avatar = avatar;
        shown_avatar.update(&hand(0.05, 1.0), crate::STEP_S as f32);
        let shown = FramePoses {
            poses: &poses,
            alpha: 0.5,
            avatar: shown_avatar,
        };
        let mut out = Vec::new();
        fill_cube_instances(&mut out, &world, &interaction, None, &shown);
        let held = interaction.hand(HandSide::Right).held.unwrap();
        let expected = shown_avatar.hands[1].pose.compose(&held.offset).position;
        assert!(
            out[0].position.distance(expected) < 1e-5,
            "{} vs {expected}",
            out[0].position
        );
        assert!((out[0].position.x - world.state(BodyId(0)).unwrap().position.x - 0.05).abs() < 1e-3);
    }
}
