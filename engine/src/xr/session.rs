//! A whole VR session: runtime, Vulkan, session, play space, swapchains, actions and the frame loop.
//!
//! The caller's loop, once per display frame:
//! 1. [`XrSession::poll_events`] handles lifecycle events (begins and ends the session as the runtime asks) and
//!    says whether to go on; while the session is not running there is no frame to make (sleep a little);
//! 2. [`XrSession::wait_frame`] blocks until the runtime wants the next frame and begins it, giving the predicted
//!    display time;
//! 3. [`XrSession::locate_hands`] syncs the actions (only while focused) and locates both hands at that time —
//!    then the caller steps its simulation with them;
//! 4. [`XrSession::end_frame`] locates the views as late as possible, renders (for now: clears) both eyes into the
//!    two-layer swapchain in one multiview pass, and submits a projection layer (with depth where offered).

use ash::vk;
use glam::{Quat, Vec3};
use openxr as xr;
use xr::sys::Handle as _;

use super::actions::{self, Actions, HandInput, HandSpaces, HAND_COUNT};
use super::clear::ClearPass;
use super::lifecycle::{Lifecycle, LifecycleAction, SessionState};
use super::runtime::{self, Runtime};
use super::space::{create_play_space, PlaySpaceChoice};
use super::swapchain::{pick_format, EyeSwapchain, COLOR_FORMATS, DEPTH_FORMATS, VIEW_COUNT};
use super::vulkan::XrVulkan;
use super::{xr_err, XrError};

const VIEW_CONFIGURATION: xr::ViewConfigurationType = xr::ViewConfigurationType::PRIMARY_STEREO;
/// Depth range written to the depth swapchain (m), given to the compositor with the depth layer: the renderer's.
pub use crate::view_depth::{FAR_M as FAR_Z_M, NEAR_M as NEAR_Z_M};
/// How long one wait for a swapchain image the runtime has handed back may take (ns): the runtime releases them
/// within a frame. A wait that times out is tried again, up to [`IMAGE_WAITS`] times, then the frame fails.
const IMAGE_WAIT_NS: i64 = 1_000_000_000;
const IMAGE_WAITS: u32 = 3;

/// Options of a session.
#[derive(Clone, Debug)]
pub struct XrSessionConfig {
    pub app_name: String,
    /// Instance extensions for a desktop window (a mirror): the window system's surface extensions, as
    /// `ash_window::enumerate_required_extensions` names them. With any, the device also gets `VK_KHR_swapchain`
    /// where it has it ([`XrVulkan::can_present`]).
    pub window_extensions: Vec<&'static std::ffi::CStr>,
}

/// One frame's timing, from `xrWaitFrame`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameTiming {
    pub predicted_display_time_ns: i64,
    pub predicted_display_period_ns: i64,
    pub should_render: bool,
}

/// One eye at the frame's predicted display time, in the play space (y up, metres; the field-of-view angles
/// in radians, left and down negative), ready for a view and an asymmetric projection matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EyeView {
    pub position: Vec3,
    pub orientation: Quat,
    pub fov_left_rad: f32,
    pub fov_right_rad: f32,
    pub fov_up_rad: f32,
    pub fov_down_rad: f32,
}

/// The depth swapchain image acquired for a frame.
#[derive(Clone, Copy, Debug)]
pub struct DepthTarget {
    pub index: usize,
    pub image: vk::Image,
    /// A 2D-array view of both layers.
    pub view: vk::ImageView,
    pub format: vk::Format,
}

/// The swapchain images acquired for one frame, and the eyes to render into them (eye `i` → array layer `i`).
#[derive(Clone, Copy, Debug)]
pub struct FrameTarget {
    pub color_index: usize,
    pub color_image: vk::Image,
    /// A 2D-array view of both layers.
    pub color_view: vk::ImageView,
    pub color_format: vk::Format,
    pub depth: Option<DepthTarget>,
    pub extent: vk::Extent2D,
    pub eyes: [EyeView; VIEW_COUNT as usize],
}

/// What [`XrSession::submit_frame`] submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSubmitted {
    /// Views in the projection layer: 2 for a stereo frame, 0 when nothing was rendered.
    pub views: u32,
    pub depth: bool,
}

/// Everything a VR session owns. Fields drop in declaration order: what is made from the session and the device
/// first, then the session, then Vulkan, then the OpenXR instance.
pub struct XrSession {
    clear: ClearPass,
    color: EyeSwapchain,
    depth: Option<EyeSwapchain>,
    hand_spaces: HandSpaces,
    play_space: xr::Space,
    frame_stream: xr::FrameStream<xr::Vulkan>,
    frame_waiter: xr::FrameWaiter,
    session: xr::Session<xr::Vulkan>,
    actions: Actions,
    vulkan: XrVulkan,
    runtime: Runtime,
    lifecycle: Lifecycle,
    event_buffer: xr::EventDataBuffer,
    blend_mode: xr::EnvironmentBlendMode,
    play_space_choice: PlaySpaceChoice,
    views: [xr::sys::View; VIEW_COUNT as usize],
    /// Images are acquired for the current frame (between `acquire_frame` and `submit_frame`).
    acquired: bool,
    /// Swapchain image waits that timed out (and were tried again).
    image_wait_timeouts: u64,
    /// The display rate asked for (`XR_FB_display_refresh_rate`), when the runtime lets us choose.
    refresh_rate_hz: Option<f32>,
    /// The eyes' positions when position tracking was last valid, kept through orientation-only frames.
    last_eye_positions: Option<[xr::sys::Vector3f; 2]>,
    /// Frames drawn with orientation only (positional tracking lost).
    frames_orientation_only: u64,
    /// A reference space change (recentring) arrived since the game last asked, and how many so far.
    recentred: bool,
    recentres: u64,
}

impl XrSession {
    /// Connects to the runtime and builds the session up to (not including) `xrBeginSession`, which waits for the
    /// runtime's READY.
    pub fn new(config: &XrSessionConfig) -> Result<XrSession, XrError> {
        let runtime = runtime::connect(&config.app_name)?;
        let instance = runtime.instance.clone();
        let vulkan = XrVulkan::new(&runtime, &config.window_extensions)?;
        // Actions and their bindings must exist before the session's action sets are attached.
        let actions = Actions::new(&instance)?;
        // SAFETY: the handles are the live instance, physical device and device made through this runtime for
        // this system, and the queue family has the queue we use.
        let (session, frame_waiter, frame_stream) = unsafe {
            instance.create_session::<xr::Vulkan>(
                runtime.system,
                &xr::vulkan::SessionCreateInfo {
                    instance: ash::vk::Handle::as_raw(vulkan.instance.handle()) as _,
                    physical_device: ash::vk::Handle::as_raw(vulkan.physical_device) as _,
                    device: ash::vk::Handle::as_raw(vulkan.device.handle()) as _,
                    queue_family_index: vulkan.queue_family_index,
                    queue_index: 0,
                },
            )
        }
        .map_err(xr_err("xrCreateSession"))?;
        session
            .attach_action_sets(&[&actions.set])
            .map_err(xr_err("xrAttachSessionActionSets"))?;
        let (play_space, play_space_choice) = create_play_space(&session)?;
        let hand_spaces = HandSpaces::new(&actions, &session)?;
        let refresh_rate_hz = if runtime.refresh_rate {
            choose_refresh_rate(&session)
        } else {
            None
        };

        let blend_mode = instance
            .enumerate_environment_blend_modes(runtime.system, VIEW_CONFIGURATION)
            .map_err(xr_err("xrEnumerateEnvironmentBlendModes"))?
            .first()
            .copied()
            .ok_or_else(|| XrError::Unsupported("an environment blend mode".into()))?;
        let extent = eye_extent(&runtime, device_max_image_dimension(&vulkan))?;
        let formats = session
            .enumerate_swapchain_formats()
            .map_err(xr_err("xrEnumerateSwapchainFormats"))?;
        let formats: Vec<i64> = formats.into_iter().map(|f| f as i64).collect();
        let color_format = pick_format(&formats, &COLOR_FORMATS)
            .ok_or_else(|| XrError::Unsupported(format!("an 8-bit RGBA swapchain format (offered: {formats:?})")))?;
        let color = EyeSwapchain::new(&session, &vulkan, color_format, extent, vk::ImageAspectFlags::COLOR)?;
        let depth = match pick_format(&formats, &DEPTH_FORMATS).filter(|_| runtime.depth_layer) {
            Some(f) => Some(EyeSwapchain::new(
                &session,
                &vulkan,
                f,
                extent,
                vk::ImageAspectFlags::DEPTH,
            )?),
            None => None,
        };
        let clear = ClearPass::new(&vulkan, &color, depth.as_ref())?;
        tracing::info!(space = ?play_space_choice.ty, blend = ?blend_mode, depth = depth.is_some(),
            bound_profiles = actions.bound_profiles, "OpenXR session created");
        let empty_view = xr::sys::View {
            ty: xr::sys::View::TYPE,
            next: std::ptr::null_mut(),
            pose: xr::Posef::IDENTITY,
            fov: xr::Fovf::default(),
        };
        Ok(XrSession {
            clear,
            color,
            depth,
            hand_spaces,
            play_space,
            frame_stream,
            frame_waiter,
            session,
            actions,
            vulkan,
            runtime,
            lifecycle: Lifecycle::default(),
            event_buffer: xr::EventDataBuffer::new(),
            blend_mode,
            play_space_choice,
            views: [empty_view; VIEW_COUNT as usize],
            acquired: false,
            image_wait_timeouts: 0,
            refresh_rate_hz,
            last_eye_positions: None,
            frames_orientation_only: 0,
            recentred: false,
            recentres: 0,
        })
    }

    /// Handles every pending event. Returns false once the session is over (exiting, lost, or exit requested and
    /// nothing left to end).
    pub fn poll_events(&mut self) -> Result<bool, XrError> {
        loop {
            let event = self
                .runtime
                .instance
                .poll_event(&mut self.event_buffer)
                .map_err(xr_err("xrPollEvent"))?;
            let Some(event) = event else { break };
            let action = match event {
                xr::Event::SessionStateChanged(e) => {
                    let state = SessionState::from_xr(e.state());
                    tracing::info!(state = state.name(), "session state");
                    self.lifecycle.on_state_changed(state)
                }
                xr::Event::InstanceLossPending(_) => {
                    tracing::warn!("the OpenXR instance is about to be lost");
                    self.lifecycle.on_instance_loss_pending()
                }
                xr::Event::InteractionProfileChanged(_) => {
                    self.log_interaction_profiles();
                    LifecycleAction::None
                }
                xr::Event::EventsLost(e) => {
                    tracing::warn!(lost = e.lost_event_count(), "OpenXR events lost");
                    LifecycleAction::None
                }
                // The player recentred (or the runtime moved the play space): tracked poses jump. Said to the
                // game (`take_recentred`), which forgets hand motion across the jump.
                xr::Event::ReferenceSpaceChangePending(e) => {
                    tracing::info!(space = ?e.reference_space_type(), "reference space changing (recentred)");
                    self.recentred = true;
                    self.recentres += 1;
                    LifecycleAction::None
                }
                _ => LifecycleAction::None,
            };
            match action {
                LifecycleAction::Begin => {
                    self.session
                        .begin(VIEW_CONFIGURATION)
                        .map_err(xr_err("xrBeginSession"))?;
                }
                LifecycleAction::End => {
                    self.session.end().map_err(xr_err("xrEndSession"))?;
                }
                LifecycleAction::Exit | LifecycleAction::None => {}
            }
        }
        let done = self.lifecycle.exiting || (self.lifecycle.exit_requested && !self.lifecycle.running);
        Ok(!done)
    }

    /// Asks the runtime to end the session (it answers STOPPING, then EXITING); without a running session there
    /// is nothing to wait for.
    pub fn request_exit(&mut self) -> Result<(), XrError> {
        if self.lifecycle.exit_requested {
            return Ok(());
        }
        self.lifecycle.exit_requested = true;
        if self.lifecycle.running {
            self.session.request_exit().map_err(xr_err("xrRequestExitSession"))?;
        }
        Ok(())
    }

    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// True while frames are to be made (between begin and end of the session).
    pub fn is_running(&self) -> bool {
        self.lifecycle.running
    }

    /// Blocks until the runtime wants the next frame (`xrWaitFrame`), then begins it (`xrBeginFrame`).
    pub fn wait_frame(&mut self) -> Result<FrameTiming, XrError> {
        let state = self.frame_waiter.wait().map_err(xr_err("xrWaitFrame"))?;
        self.frame_stream.begin().map_err(xr_err("xrBeginFrame"))?;
        Ok(FrameTiming {
            predicted_display_time_ns: state.predicted_display_time.as_nanos(),
            predicted_display_period_ns: state.predicted_display_period.as_nanos(),
            should_render: state.should_render,
        })
    }

    /// Syncs the actions (while focused) and locates both hands at the frame's predicted display time.
    pub fn locate_hands(&mut self, timing: &FrameTiming, hands: &mut [HandInput; HAND_COUNT]) -> Result<(), XrError> {
        let focused = self.lifecycle.input_active();
        if focused {
            let active = [xr::ActiveActionSet::new(&self.actions.set)];
            self.session.sync_actions(&active).map_err(xr_err("xrSyncActions"))?;
        }
        actions::read_hands(
            &self.actions,
            &self.hand_spaces,
            &self.session,
            &self.play_space,
            xr::Time::from_nanos(timing.predicted_display_time_ns),
            focused,
            hands,
        )
    }

    /// A haptic pulse on `hand` (0 left, 1 right); ignored while not focused.
    pub fn pulse(&mut self, hand: usize, duration_ns: i64, amplitude: f32) -> Result<(), XrError> {
        if !self.lifecycle.input_active() || hand >= HAND_COUNT {
            return Ok(());
        }
        actions::pulse(&self.actions, &self.session, hand, duration_ns, amplitude)
    }

    /// Locates both views at the frame's display time (as late as possible: call right before recording) and
    /// acquires the swapchain images to render them into. `None` when there is nothing to render (the runtime said
    /// not to, or cannot place the views); [`XrSession::submit_frame`] must follow either way.
    ///
    /// The caller renders eye 0 (left) into array layer 0 and eye 1 into layer 1, submits its GPU work, and leaves
    /// the colour image in `COLOR_ATTACHMENT_OPTIMAL` (and the depth image, if it wrote one, in
    /// `DEPTH_STENCIL_ATTACHMENT_OPTIMAL`): the compositor reads them once they are released.
    pub fn acquire_frame(&mut self, timing: &FrameTiming) -> Result<Option<FrameTarget>, XrError> {
        self.acquired = false;
        let time = xr::Time::from_nanos(timing.predicted_display_time_ns);
        if !(timing.should_render && self.locate_views(time)?) {
            return Ok(None);
        }
        let instance = &self.runtime.instance;
        let (color_index, color_timeouts) = acquire(instance, &mut self.color.handle)?;
        let (depth_index, depth_timeouts) = match self.depth.as_mut() {
            Some(depth) => {
                let (i, t) = acquire(instance, &mut depth.handle)?;
                (Some(i), t)
            }
            None => (None, 0),
        };
        self.image_wait_timeouts += u64::from(color_timeouts + depth_timeouts);
        self.acquired = true;
        let eye = |v: &xr::sys::View| EyeView {
            position: actions::vec3(v.pose.position),
            orientation: actions::quat(v.pose.orientation),
            fov_left_rad: v.fov.angle_left,
            fov_right_rad: v.fov.angle_right,
            fov_up_rad: v.fov.angle_up,
            fov_down_rad: v.fov.angle_down,
        };
        Ok(Some(FrameTarget {
            color_index,
            color_image: self.color.images[color_index],
            color_view: self.color.views[color_index],
            color_format: self.color.format,
            depth: self.depth.as_ref().zip(depth_index).map(|(d, i)| DepthTarget {
                index: i,
                image: d.images[i],
                view: d.views[i],
                format: d.format,
            }),
            extent: self.color.extent,
            eyes: [eye(&self.views[0]), eye(&self.views[1])],
        }))
    }

    /// Releases the images [`XrSession::acquire_frame`] acquired and ends the frame (`xrEndFrame`) with one
    /// projection layer — with depth when `depth_written` and the runtime takes it — or with no layer when nothing
    /// was acquired.
    pub fn submit_frame(&mut self, timing: &FrameTiming, depth_written: bool) -> Result<FrameSubmitted, XrError> {
        let time = xr::Time::from_nanos(timing.predicted_display_time_ns);
        if !std::mem::take(&mut self.acquired) {
            self.submit(time, 0, false)?;
            return Ok(FrameSubmitted { views: 0, depth: false });
        }
        release(&self.runtime.instance, &self.color.handle)?;
        if let Some(depth) = self.depth.as_ref() {
            release(&self.runtime.instance, &depth.handle)?;
        }
        let depth = depth_written && self.depth.is_some();
        self.submit(time, VIEW_COUNT, depth)?;
        Ok(FrameSubmitted {
            views: VIEW_COUNT,
            depth,
        })
    }

    /// Clears both eyes of an acquired target to `rgba` (and far depth) in one multiview pass: the frame when no
    /// renderer draws one.
    pub fn clear_target(&mut self, target: &FrameTarget, rgba: [f32; 4]) -> Result<(), XrError> {
        let depth_index = target.depth.map_or(0, |d| d.index);
        self.clear.clear(target.color_index, depth_index, rgba)
    }

    /// [`XrSession::acquire_frame`], [`XrSession::clear_target`], [`XrSession::submit_frame`] (with depth).
    pub fn end_frame(&mut self, timing: &FrameTiming, rgba: [f32; 4]) -> Result<FrameSubmitted, XrError> {
        if let Some(target) = self.acquire_frame(timing)? {
            self.clear_target(&target, rgba)?;
        }
        self.submit_frame(timing, true)
    }

    /// The Vulkan instance, device and queue the session renders with (for `engine::render`).
    pub fn vulkan(&self) -> &XrVulkan {
        &self.vulkan
    }

    /// The head at the frame's predicted display time, in the play space: the midpoint of the eyes and their
    /// common orientation (halfway between the two eyes' own, which a canted display may turn apart). `None` while
    /// the runtime cannot place the views; with orientation tracked only, the eyes' last tracked positions (as the
    /// frame's views keep them). Located apart from the frame's views, which come later, as late as possible.
    pub fn locate_head(&mut self, timing: &FrameTiming) -> Result<Option<(glam::Vec3, glam::Quat)>, XrError> {
        let mut views = self.views;
        let time = xr::Time::from_nanos(timing.predicted_display_time_ns);
        let (count, flags) = self.locate_views_into(time, &mut views)?;
        if count != VIEW_COUNT {
            return Ok(None);
        }
        let positions = match view_tracking(flags) {
            ViewTracking::Full => [views[0].pose.position, views[1].pose.position],
            ViewTracking::OrientationOnly => match self.last_eye_positions {
                Some(last) => last,
                None => return Ok(None),
            },
            ViewTracking::None => return Ok(None),
        };
        let position = (actions::vec3(positions[0]) + actions::vec3(positions[1])) * 0.5;
        let (left, right) = (
            actions::quat(views[0].pose.orientation),
            actions::quat(views[1].pose.orientation),
        );
        let orientation = left.slerp(right, 0.5).normalize();
        let finite = position.is_finite() && orientation.is_finite();
        Ok(finite.then_some((position, orientation)))
    }

    /// Both views at `time` into the fixed array; false when the runtime cannot place them.
    fn locate_views(&mut self, time: xr::Time) -> Result<bool, XrError> {
        let mut views = self.views;
        let (count, flags) = self.locate_views_into(time, &mut views)?;
        self.views = views;
        if count != VIEW_COUNT {
            return Ok(false);
        }
        match view_tracking(flags) {
            ViewTracking::Full => {
                self.last_eye_positions = Some([self.views[0].pose.position, self.views[1].pose.position]);
                Ok(true)
            }
            // Positional tracking lost (a covered camera, the edge of the play area): the eyes keep their last
            // positions and turn as the head turns, so the world neither blanks nor jumps.
            ViewTracking::OrientationOnly => {
                if let Some(last) = self.last_eye_positions {
                    self.views[0].pose.position = last[0];
                    self.views[1].pose.position = last[1];
                }
                self.frames_orientation_only += 1;
                Ok(true)
            }
            ViewTracking::None => Ok(false),
        }
    }

    /// `xrLocateViews` at `time` in the play space into `views`: how many it located, and the view state flags.
    fn locate_views_into(
        &self,
        time: xr::Time,
        views: &mut [xr::sys::View; VIEW_COUNT as usize],
    ) -> Result<(u32, xr::ViewStateFlags), XrError> {
        let info = xr::sys::ViewLocateInfo {
            ty: xr::sys::ViewLocateInfo::TYPE,
            next: std::ptr::null(),
            view_configuration_type: VIEW_CONFIGURATION,
            display_time: time,
            space: self.play_space.as_raw(),
        };
        let mut state = xr::sys::ViewState {
            ty: xr::sys::ViewState::TYPE,
            next: std::ptr::null_mut(),
            view_state_flags: xr::ViewStateFlags::EMPTY,
        };
        let mut count = 0u32;
        for v in views.iter_mut() {
            v.ty = xr::sys::View::TYPE;
            v.next = std::ptr::null_mut();
        }
        // SAFETY: the output array has room for VIEW_COUNT views, which is what we say; the info is valid.
        let result = unsafe {
            (self.runtime.instance.fp().locate_views)(
                self.session.as_raw(),
                &info,
                &mut state,
                VIEW_COUNT,
                &mut count,
                views.as_mut_ptr(),
            )
        };
        if result.into_raw() < 0 {
            return Err(XrError::Xr {
                what: "xrLocateViews",
                result,
            });
        }
        Ok((count, state.view_state_flags))
    }

    /// `xrEndFrame` with one projection layer of `views` views (none when 0), each chained to its depth info.
    fn submit(&mut self, time: xr::Time, views: u32, with_depth: bool) -> Result<(), XrError> {
        let extent = xr::Extent2Di {
            width: self.color.extent.width as i32,
            height: self.color.extent.height as i32,
        };
        let rect = xr::Rect2Di {
            offset: xr::Offset2Di { x: 0, y: 0 },
            extent,
        };
        let depth_infos: [xr::sys::CompositionLayerDepthInfoKHR; VIEW_COUNT as usize] =
            std::array::from_fn(|eye| xr::sys::CompositionLayerDepthInfoKHR {
                ty: xr::sys::CompositionLayerDepthInfoKHR::TYPE,
                next: std::ptr::null(),
                sub_image: xr::sys::SwapchainSubImage {
                    swapchain: self
                        .depth
                        .as_ref()
                        .map_or(xr::sys::Swapchain::NULL, |d| d.handle.as_raw()),
                    image_rect: rect,
                    image_array_index: eye as u32,
                },
                min_depth: 0.0,
                max_depth: 1.0,
                near_z: NEAR_Z_M,
                far_z: FAR_Z_M,
            });
        let has_depth = with_depth && self.depth.is_some();
        let projection_views: [xr::sys::CompositionLayerProjectionView; VIEW_COUNT as usize] =
            std::array::from_fn(|eye| xr::sys::CompositionLayerProjectionView {
                ty: xr::sys::CompositionLayerProjectionView::TYPE,
                next: if has_depth {
                    &depth_infos[eye] as *const _ as *const _
                } else {
                    std::ptr::null()
                },
                pose: self.views[eye].pose,
                fov: self.views[eye].fov,
                sub_image: xr::sys::SwapchainSubImage {
                    swapchain: self.color.handle.as_raw(),
                    image_rect: rect,
                    image_array_index: eye as u32,
                },
            });
        let layer = xr::sys::CompositionLayerProjection {
            ty: xr::sys::CompositionLayerProjection::TYPE,
            next: std::ptr::null(),
            layer_flags: xr::CompositionLayerFlags::EMPTY,
            space: self.play_space.as_raw(),
            view_count: views,
            views: projection_views.as_ptr(),
        };
        let layers = [&layer as *const _ as *const xr::sys::CompositionLayerBaseHeader];
        let info = xr::sys::FrameEndInfo {
            ty: xr::sys::FrameEndInfo::TYPE,
            next: std::ptr::null(),
            display_time: time,
            environment_blend_mode: self.blend_mode,
            layer_count: if views > 0 { 1 } else { 0 },
            layers: layers.as_ptr(),
        };
        // SAFETY: every pointer in the chain points at locals alive for the call; the frame was begun.
        let result = unsafe { (self.runtime.instance.fp().end_frame)(self.session.as_raw(), &info) };
        if result.into_raw() < 0 {
            return Err(XrError::Xr {
                what: "xrEndFrame",
                result,
            });
        }
        Ok(())
    }

    fn log_interaction_profiles(&self) {
        for (hand, &path) in self.actions.hand_paths.iter().enumerate() {
            let profile = self
                .session
                .current_interaction_profile(path)
                .ok()
                .filter(|p| *p != xr::Path::NULL)
                .and_then(|p| self.runtime.instance.path_to_string(p).ok());
            tracing::info!(
                hand,
                profile = profile.as_deref().unwrap_or("none"),
                "interaction profile"
            );
        }
    }

    pub fn runtime_name(&self) -> &str {
        &self.runtime.runtime_name
    }

    pub fn system_name(&self) -> &str {
        &self.runtime.system_name
    }

    pub fn device_name(&self) -> &str {
        &self.vulkan.device_name
    }

    /// Size of each eye's image (pixels).
    pub fn eye_extent(&self) -> (u32, u32) {
        (self.color.extent.width, self.color.extent.height)
    }

    pub fn has_depth_layer(&self) -> bool {
        self.depth.is_some()
    }

    /// "STAGE", or "LOCAL" with an estimated floor.
    pub fn play_space_name(&self) -> &'static str {
        if self.play_space_choice.ty == xr::ReferenceSpaceType::STAGE {
            "STAGE"
        } else {
            "LOCAL"
        }
    }

    pub fn bound_profiles(&self) -> usize {
        self.actions.bound_profiles
    }

    /// Swapchain image waits that timed out and were tried again (a runtime slow to hand images back).
    pub fn image_wait_timeouts(&self) -> u64 {
        self.image_wait_timeouts
    }

    /// Whether the play space was recentred since the last call (tracked poses jumped): the caller forgets motion
    /// measured across it.
    pub fn take_recentred(&mut self) -> bool {
        std::mem::take(&mut self.recentred)
    }

    /// Reference space changes (recentring) seen so far.
    pub fn recentres(&self) -> u64 {
        self.recentres
    }

    /// Frames drawn while only orientation was tracked (the eyes held at their last tracked positions).
    pub fn frames_orientation_only(&self) -> u64 {
        self.frames_orientation_only
    }

    /// The display refresh rate this session asked the runtime for, if it offers a choice.
    pub fn refresh_rate_hz(&self) -> Option<f32> {
        self.refresh_rate_hz
    }
}

impl Drop for XrSession {
    fn drop(&mut self) {
        // The GPU must be done with the swapchain images before the runtime destroys them.
        let _ = self.clear.wait_idle();
    }
}

/// Acquires the next image of `swapchain` and waits until the compositor is done with it; returns its index and
/// how many waits timed out first. The wait goes through the raw entry point: the openxr crate's `wait_image`
/// takes `XR_TIMEOUT_EXPIRED` (a success code) for a finished wait, and drawing into an image the compositor still
/// reads tears the frame. A timed-out wait is logged and tried again; [`IMAGE_WAITS`] of them fail the frame.
fn acquire(instance: &xr::Instance, swapchain: &mut xr::Swapchain<xr::Vulkan>) -> Result<(usize, u32), XrError> {
    let index = swapchain.acquire_image().map_err(xr_err("xrAcquireSwapchainImage"))? as usize;
    let info = xr::sys::SwapchainImageWaitInfo {
        ty: xr::sys::SwapchainImageWaitInfo::TYPE,
        next: std::ptr::null_mut(),
        timeout: xr::Duration::from_nanos(IMAGE_WAIT_NS),
    };
    for timeouts in 0..IMAGE_WAITS {
        // SAFETY: a live swapchain with an acquired, not yet waited image; `info` lives for the call.
        let result = unsafe { (instance.fp().wait_swapchain_image)(swapchain.as_raw(), &info) };
        match result {
            xr::sys::Result::SUCCESS => return Ok((index, timeouts)),
            xr::sys::Result::TIMEOUT_EXPIRED => {
                tracing::warn!(
                    timeouts = timeouts + 1,
                    "a swapchain image was not ready within 1 s; waiting again"
                );
            }
            error => {
                return Err(XrError::Xr {
                    what: "xrWaitSwapchainImage",
                    result: error,
                })
            }
        }
    }
    Err(XrError::Xr {
        what: "xrWaitSwapchainImage (3 waits of 1 s)",
        result: xr::sys::Result::TIMEOUT_EXPIRED,
    })
}

/// Releases the image [`acquire`] waited for (raw, as the wait was).
fn release(instance: &xr::Instance, swapchain: &xr::Swapchain<xr::Vulkan>) -> Result<(), XrError> {
    // SAFETY: a live swapchain whose acquired image was waited on.
    let result = unsafe { (instance.fp().release_swapchain_image)(swapchain.as_raw(), std::ptr::null()) };
    if result.into_raw() < 0 {
        return Err(XrError::Xr {
            what: "xrReleaseSwapchainImage",
            result,
        });
    }
    Ok(())
}

/// What a frame's views can be drawn with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ViewTracking {
    Full,
    /// Orientation tracked, position not: draw from the last tracked position.
    OrientationOnly,
    /// Not even orientation: draw nothing this frame.
    None,
}

fn view_tracking(flags: xr::ViewStateFlags) -> ViewTracking {
    match (
        flags.contains(xr::ViewStateFlags::ORIENTATION_VALID),
        flags.contains(xr::ViewStateFlags::POSITION_VALID),
    ) {
        (true, true) => ViewTracking::Full,
        (true, false) => ViewTracking::OrientationOnly,
        (false, _) => ViewTracking::None,
    }
}

/// The display rate we want: physics runs at 90 Hz, so frames and steps line up one to one.
pub const PREFERRED_REFRESH_HZ: f32 = 90.0;

/// Asks the runtime for [`pick_refresh_rate`]'s choice among the rates it offers; `None` (the runtime's default
/// stays) when it offers none or refuses. Logged either way.
fn choose_refresh_rate(session: &xr::Session<xr::Vulkan>) -> Option<f32> {
    let offered = match session.enumerate_display_refresh_rates() {
        Ok(rates) => rates,
        Err(result) => {
            tracing::warn!(%result, "xrEnumerateDisplayRefreshRatesFB failed: the runtime's refresh rate stays");
            return None;
        }
    };
    let rate = pick_refresh_rate(&offered)?;
    match session.request_display_refresh_rate(rate) {
        Ok(()) => {
            tracing::info!(rate_hz = rate, ?offered, "display refresh rate chosen");
            Some(rate)
        }
        Err(result) => {
            tracing::warn!(%result, rate_hz = rate, "xrRequestDisplayRefreshRateFB refused: the runtime's rate stays");
            None
        }
    }
}

/// 90 Hz where offered (within 0.5 Hz: runtimes report 89.9 or 90.0); otherwise the highest rate offered up to
/// 120 Hz (more frames cost the renderer, and past that the steps no longer line up usefully), or the lowest
/// offered when all are higher. `None` for no rates.
pub fn pick_refresh_rate(offered: &[f32]) -> Option<f32> {
    let finite = || offered.iter().copied().filter(|r| r.is_finite() && *r > 0.0);
    if let Some(r) = finite().find(|r| (r - PREFERRED_REFRESH_HZ).abs() <= 0.5) {
        return Some(r);
    }
    finite()
        .filter(|&r| r <= 120.5)
        .max_by(f32::total_cmp)
        .or_else(|| finite().min_by(f32::total_cmp))
}

/// The largest eye image the renderer draws (pixels a side): its targets are multisampled and layered, so a
/// runtime's recommendation past this (supersampling on a high-resolution headset) is scaled down to it.
pub const MAX_EYE_PIXELS: u32 = 4096;

fn device_max_image_dimension(vulkan: &XrVulkan) -> u32 {
    // SAFETY: a plain query on the session's live physical device.
    let props = unsafe { vulkan.instance.get_physical_device_properties(vulkan.physical_device) };
    props.limits.max_image_dimension2_d
}

/// One image size for both eyes: the larger of the runtime's recommended sizes, clamped (see [`clamp_eye_extent`]).
fn eye_extent(runtime: &Runtime, device_max: u32) -> Result<vk::Extent2D, XrError> {
    let views = runtime
        .instance
        .enumerate_view_configuration_views(runtime.system, VIEW_CONFIGURATION)
        .map_err(xr_err("xrEnumerateViewConfigurationViews"))?;
    if views.len() != VIEW_COUNT as usize {
        return Err(XrError::Unsupported(format!(
            "stereo (the system has {} views)",
            views.len()
        )));
    }
    let width = views.iter().map(|v| v.recommended_image_rect_width).max().unwrap_or(0);
    let height = views.iter().map(|v| v.recommended_image_rect_height).max().unwrap_or(0);
    if width == 0 || height == 0 {
        return Err(XrError::Unsupported("a non-empty view size".into()));
    }
    let runtime_max = (
        views.iter().map(|v| v.max_image_rect_width).min().unwrap_or(0),
        views.iter().map(|v| v.max_image_rect_height).min().unwrap_or(0),
    );
    let (w, h) = clamp_eye_extent((width, height), runtime_max, device_max.min(MAX_EYE_PIXELS));
    if (w, h) != (width, height) {
        tracing::warn!(
            recommended = ?(width, height), used = ?(w, h),
            "eye images clamped to what the runtime, the device and the renderer take"
        );
    }
    Ok(vk::Extent2D { width: w, height: h })
}

/// `recommended` scaled down, keeping its aspect, until it fits the runtime's maximum (0: none given) and `limit`
/// on both sides; never below one pixel.
pub fn clamp_eye_extent(recommended: (u32, u32), runtime_max: (u32, u32), limit: u32) -> (u32, u32) {
    let cap = |max: u32| if max == 0 { limit } else { max.min(limit) };
    let (max_w, max_h) = (cap(runtime_max.0), cap(runtime_max.1));
    let (w, h) = recommended;
    let scale = (f64::from(max_w) / f64::from(w))
        .min(f64::from(max_h) / f64::from(h))
        .min(1.0);
    let fit = |v: u32, max: u32| ((f64::from(v) * scale).floor() as u32).clamp(1, max);
    (fit(w, max_w), fit(h, max_h))
}

#[cfg(test)]
mod clamp_tests {
    use super::*;

    #[test]
    fn orientation_alone_still_draws_and_nothing_tracked_does_not() {
        use xr::ViewStateFlags as F;
        assert_eq!(
            view_tracking(F::ORIENTATION_VALID | F::POSITION_VALID),
            ViewTracking::Full
        );
        assert_eq!(
            view_tracking(F::ORIENTATION_VALID | F::ORIENTATION_TRACKED),
            ViewTracking::OrientationOnly
        );
        assert_eq!(view_tracking(F::POSITION_VALID), ViewTracking::None);
        assert_eq!(view_tracking(F::EMPTY), ViewTracking::None);
    }

    #[test]
    fn ninety_hertz_where_offered_else_the_best_up_to_120() {
        assert_eq!(pick_refresh_rate(&[72.0, 80.0, 89.9, 120.0]), Some(89.9));
        assert_eq!(pick_refresh_rate(&[72.0, 120.0, 144.0]), Some(120.0));
        assert_eq!(pick_refresh_rate(&[60.0, 72.0]), Some(72.0));
        assert_eq!(pick_refresh_rate(&[144.0, 165.0]), Some(144.0));
        assert_eq!(pick_refresh_rate(&[f32::NAN]), None);
        assert_eq!(pick_refresh_rate(&[]), None);
    }

    #[test]
    fn eye_images_keep_their_aspect_and_fit_every_limit() {
        assert_eq!(
            clamp_eye_extent((2064, 2208), (4128, 4416), MAX_EYE_PIXELS),
            (2064, 2208)
        );
        // A supersampled recommendation past the renderer's limit: scaled, aspect kept.
        let (w, h) = clamp_eye_extent((5000, 6000), (0, 0), MAX_EYE_PIXELS);
        assert!(
            h == 4096 && (w as f64 / h as f64 - 5000.0 / 6000.0).abs() < 1e-3,
            "{w}x{h}"
        );
        // The runtime's own maximum, and a small device.
        assert_eq!(clamp_eye_extent((3000, 3000), (2000, 2500), 4096), (2000, 2000));
        assert_eq!(clamp_eye_extent((3000, 1500), (0, 0), 1024), (1024, 512));
    }
}
