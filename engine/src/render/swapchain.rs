//! [`Presenter`]: the renderer in a window. The main pass renders into the renderer's own layered target, which is
//! blitted into the swapchain image (one view full size, or two views side by side for the stereo preview); the
//! egui overlay, when given, is drawn on top. The swapchain is rebuilt on resize and whenever acquire or present
//! says OUT_OF_DATE or SUBOPTIMAL; a zero-sized (minimised) window renders nothing. Two frames in flight.

use ash::vk;
use raw_window_handle::{HasDisplayHandle, HasWindowHandle};

use super::device::Gpu;
use super::error::{RenderError, VkContext};
use super::overlay::{Overlay, OverlayFrame};
use super::renderer::{Renderer, FRAMES_IN_FLIGHT};
use super::scene_data::FrameInput;

/// What [`Presenter::render`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameStatus {
    /// A frame went to the screen.
    Presented,
    /// Nothing drawn: the window has no area (minimised).
    Minimised,
    /// Nothing drawn: the swapchain was out of date and has been rebuilt; render again.
    Rebuilt,
}

struct Swapchain {
    handle: vk::SwapchainKHR,
    extent: vk::Extent2D,
    images: Vec<vk::Image>,
    views: Vec<vk::ImageView>,
    /// Overlay framebuffers, one per image.
    framebuffers: Vec<vk::Framebuffer>,
    /// Signalled when an image's rendering is done; one per image, as presentation holds it until reuse.
    render_finished: Vec<vk::Semaphore>,
}

/// The renderer drawing into a window's swapchain.
pub struct Presenter {
    // Field order is drop order where it matters: Drop tears down explicitly, then the Gpu goes last.
    renderer: Renderer,
    overlay: Option<Overlay>,
    swapchain: Option<Swapchain>,
    image_available: [vk::Semaphore; FRAMES_IN_FLIGHT],
    surface: vk::SurfaceKHR,
    surface_fn: ash::khr::surface::Instance,
    swapchain_fn: ash::khr::swapchain::Device,
    window_extent: vk::Extent2D,
    stale: bool,
    stereo_preview: bool,
    gpu: Gpu,
}

impl Presenter {
    /// A presenter for `window` of `width` × `height` pixels (winit 0.30 windows qualify).
    ///
    /// # Safety
    /// `window` must outlive the presenter (the Vulkan surface refers to it).
    pub unsafe fn new<W: HasWindowHandle + HasDisplayHandle>(
        window: &W,
        width: u32,
        height: u32,
    ) -> Result<Presenter, RenderError> {
        let display = window
            .display_handle()
            .map_err(|e| RenderError::Window(e.to_string()))?
            .as_raw();
        let window_handle = window
            .window_handle()
            .map_err(|e| RenderError::Window(e.to_string()))?
            .as_raw();
        let create_surface = |entry: &ash::Entry, instance: &ash::Instance| {
            // SAFETY: the caller keeps the window alive for the presenter's life.
            unsafe { ash_window::create_surface(entry, instance, display, window_handle, None) }
                .ctx("vkCreateSurfaceKHR")
        };
        let (gpu, surface) = Gpu::for_window(display, &create_surface)?;
        let surface_fn = ash::khr::surface::Instance::new(&gpu.entry, &gpu.instance);
        let swapchain_fn = ash::khr::swapchain::Device::new(&gpu.instance, &gpu.device);
        let renderer = match Renderer::new(&gpu, width.max(1), height.max(1), 1) {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: nothing uses the surface yet.
                unsafe { surface_fn.destroy_surface(surface, None) };
                return Err(e);
            }
        };
        let mut image_available = [vk::Semaphore::null(); FRAMES_IN_FLIGHT];
        for s in &mut image_available {
            // SAFETY: valid device; destroyed in Drop.
            *s = unsafe { gpu.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }
                .ctx("vkCreateSemaphore")?;
        }
        let mut presenter = Presenter {
            renderer,
            overlay: None,
            swapchain: None,
            image_available,
            surface,
            surface_fn,
            swapchain_fn,
            window_extent: vk::Extent2D { width, height },
            stale: true,
            stereo_preview: false,
            gpu,
        };
        let format = presenter.surface_format()?;
        presenter.overlay = Some(Overlay::new(
            &presenter.gpu.instance,
            presenter.gpu.physical_device,
            &presenter.gpu.device,
            format.format,
        )?);
        presenter.rebuild()?;
        Ok(presenter)
    }

    /// The window's new size in pixels (from the resize event); 0 × 0 while minimised.
    pub fn resize(&mut self, width: u32, height: u32) {
        let extent = vk::Extent2D { width, height };
        if extent != self.window_extent {
            self.window_extent = extent;
            self.stale = true;
        }
    }

    /// Shows two views side by side (the caller then passes two views per frame).
    pub fn set_stereo_preview(&mut self, on: bool) {
        self.stereo_preview = on;
    }

    pub fn stereo_preview(&self) -> bool {
        self.stereo_preview
    }

    /// The size of one view in pixels (half the width in the stereo preview), for the caller's projection aspect.
    pub fn view_extent(&self) -> (u32, u32) {
        let e = self.swapchain.as_ref().map_or(self.window_extent, |s| s.extent);
        let n = if self.stereo_preview { 2 } else { 1 };
        ((e.width / n).max(1), e.height.max(1))
    }

    /// The device, for its name and facts.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// GPU time of the most recent finished frame (ms).
    pub fn gpu_time_ms(&self) -> Option<f32> {
        self.renderer.gpu_time_ms()
    }

    /// Draws one frame: `input.views` must hold 1 view, or 2 in the stereo preview; `overlay` is drawn on top.
    pub fn render(&mut self, input: &FrameInput, overlay: Option<OverlayFrame>) -> Result<FrameStatus, RenderError> {
        // Texture changes are applied even when nothing is drawn: egui sends its font atlas only once.
        let overlay = match overlay {
            Some(o) => {
                let slot = self.renderer.next_slot();
                let pool = self.renderer.command_pool();
                if let Some(ov) = self.overlay.as_mut() {
                    ov.apply(slot, o.textures_delta, self.gpu.queue, pool)?;
                }
                o.textures_delta.clear();
                Some((o.primitives, o.pixels_per_point))
            }
            None => None,
        };
        let want_views = if self.stereo_preview { 2 } else { 1 };
        if input.views.len() != want_views {
            return Err(RenderError::Input(format!(
                "{} views, but the presenter shows {want_views} (stereo preview {})",
                input.views.len(),
                if self.stereo_preview { "on" } else { "off" }
            )));
        }
        if self.window_extent.width == 0 || self.window_extent.height == 0 {
            return Ok(FrameStatus::Minimised);
        }
        if self.stale {
            self.rebuild()?;
            if self.swapchain.is_none() {
                return Ok(FrameStatus::Minimised);
            }
        }
        let (view_w, view_h) = self.view_extent();
        self.renderer.resize(view_w, view_h, want_views as u32)?;
        let slot = self.renderer.next_slot();
        let cmd = self.renderer.begin_frame(input)?;
        let sc = self.swapchain.as_ref().expect("rebuilt above");
        // SAFETY: the slot's fence was waited by begin_frame, so its semaphore is unsignalled and free.
        let acquired = unsafe {
            self.swapchain_fn
                .acquire_next_image(sc.handle, u64::MAX, self.image_available[slot], vk::Fence::null())
        };
        let image_index = match acquired {
            Ok((index, suboptimal)) => {
                self.stale |= suboptimal;
                index
            }
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                self.renderer.abandon_frame();
                self.stale = true;
                self.rebuild()?;
                return Ok(FrameStatus::Rebuilt);
            }
            Err(result) => {
                self.renderer.abandon_frame();
                return Err(RenderError::Vulkan {
                    what: "vkAcquireNextImageKHR",
                    result,
                });
            }
        };
        if let Some(ov) = self.overlay.as_mut() {
            if let Err(e) = ov.free_finished(slot) {
                self.renderer.abandon_frame();
                return Err(e);
            }
        }
        let recorded = self.record_present(cmd, image_index, overlay);
        if let Err(e) = recorded {
            self.renderer.abandon_frame();
            return Err(e);
        }
        let sc = self.swapchain.as_ref().expect("rebuilt above");
        let waits = [self.image_available[slot]];
        let stages = [vk::PipelineStageFlags::TRANSFER];
        let signals = [sc.render_finished[image_index as usize]];
        self.renderer.submit(&waits, &stages, &signals)?;
        let swapchains = [sc.handle];
        let indices = [image_index];
        let present = vk::PresentInfoKHR::default()
            .wait_semaphores(&signals)
            .swapchains(&swapchains)
            .image_indices(&indices);
        // SAFETY: the image was acquired and its rendering signals the semaphore waited on.
        match unsafe { self.swapchain_fn.queue_present(self.gpu.queue, &present) } {
            Ok(suboptimal) => self.stale |= suboptimal,
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => self.stale = true,
            Err(result) => {
                return Err(RenderError::Vulkan {
                    what: "vkQueuePresentKHR",
                    result,
                })
            }
        }
        Ok(FrameStatus::Presented)
    }

    /// Blits the views into the swapchain image, then the overlay (or just the layout change for presenting).
    fn record_present(
        &mut self,
        cmd: vk::CommandBuffer,
        image_index: u32,
        overlay: Option<(&[egui::ClippedPrimitive], f32)>,
    ) -> Result<(), RenderError> {
        let d = &self.gpu.device;
        let sc = self.swapchain.as_ref().expect("a swapchain while rendering");
        let image = sc.images[image_index as usize];
        let result = self.renderer.result_image();
        let with_overlay = overlay.is_some() && self.overlay.is_some() && !sc.framebuffers.is_empty();
        let after = if with_overlay {
            WindowImageNext {
                layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                stage: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                access: vk::AccessFlags::COLOR_ATTACHMENT_READ | vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
            }
        } else {
            WindowImageNext::PRESENT
        };
        let (w, h) = (result.extent.width as i32, result.extent.height as i32);
        let blit = |layer: u32| vk::ImageBlit {
            src_subresource: vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: layer,
                layer_count: 1,
            },
            src_offsets: [vk::Offset3D::default(), vk::Offset3D { x: w, y: h, z: 1 }],
            dst_subresource: vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            },
            dst_offsets: [
                vk::Offset3D {
                    x: w * layer as i32,
                    y: 0,
                    z: 0,
                },
                vk::Offset3D {
                    x: w * (layer as i32 + 1),
                    y: h,
                    z: 1,
                },
            ],
        };
        let blits = [blit(0), blit(1)];
        // SAFETY: cmd is recording; the result image is in TRANSFER_SRC_OPTIMAL after the main pass, readable by
        // transfers (the render pass's external dependency); the image was acquired for this frame.
        unsafe {
            record_into_window_image(
                d,
                cmd,
                result.image,
                image,
                &blits[..result.layers as usize],
                vk::Filter::NEAREST,
                after,
            );
        }
        if let (Some(ov), Some((primitives, pixels_per_point)), true) = (self.overlay.as_mut(), overlay, with_overlay) {
            ov.record(
                d,
                cmd,
                sc.framebuffers[image_index as usize],
                sc.extent,
                primitives,
                pixels_per_point,
            )?;
        }
        Ok(())
    }

    /// Rebuilds the swapchain for the current window size (waits for the GPU). Leaves none while minimised.
    fn rebuild(&mut self) -> Result<(), RenderError> {
        self.renderer.wait_idle();
        // SAFETY: plain query on a valid surface.
        let caps = unsafe {
            self.surface_fn
                .get_physical_device_surface_capabilities(self.gpu.physical_device, self.surface)
        }
        .ctx("vkGetPhysicalDeviceSurfaceCapabilitiesKHR")?;
        let extent = swapchain_extent(&caps, self.window_extent);
        let old = self.swapchain.take();
        if extent.width == 0 || extent.height == 0 {
            if let Some(old) = old {
                self.destroy_swapchain(old);
            }
            return Ok(());
        }
        let result = self.create_swapchain(extent, &caps, old.as_ref().map(|s| s.handle));
        if let Some(old) = old {
            self.destroy_swapchain(old);
        }
        let swapchain = result?;
        let swapchain = self.attach_framebuffers(swapchain)?;
        self.swapchain = Some(swapchain);
        self.stale = false;
        Ok(())
    }

    /// An sRGB format when the surface has one (the scene and overlay write linear light), else its first.
    fn surface_format(&self) -> Result<vk::SurfaceFormatKHR, RenderError> {
        // SAFETY: plain query.
        let formats = unsafe {
            self.surface_fn
                .get_physical_device_surface_formats(self.gpu.physical_device, self.surface)
        }
        .ctx("vkGetPhysicalDeviceSurfaceFormatsKHR")?;
        preferred_surface_format(&formats).ok_or(RenderError::Window("the surface offers no format".into()))
    }

    fn create_swapchain(
        &self,
        extent: vk::Extent2D,
        caps: &vk::SurfaceCapabilitiesKHR,
        old: Option<vk::SwapchainKHR>,
    ) -> Result<Swapchain, RenderError> {
        let d = &self.gpu.device;
        if !caps.supported_usage_flags.contains(vk::ImageUsageFlags::TRANSFER_DST) {
            return Err(RenderError::Window(
                "the window's swapchain images cannot be blitted to".into(),
            ));
        }
        let format = self.surface_format()?;
        let count = swapchain_image_count(caps);
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(self.surface)
            .min_image_count(count)
            .image_format(format.format)
            .image_color_space(format.color_space)
            .image_extent(extent)
            .image_array_layers(1)
            .image_usage(vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::COLOR_ATTACHMENT)
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
            // FIFO: always there, no tearing, and paces the loop to the display.
            .present_mode(vk::PresentModeKHR::FIFO)
            .clipped(true)
            .old_swapchain(old.unwrap_or_default());
        // SAFETY: valid surface and device; destroyed in destroy_swapchain.
        unsafe {
            let handle = self
                .swapchain_fn
                .create_swapchain(&info, None)
                .ctx("vkCreateSwapchainKHR")?;
            let images = self
                .swapchain_fn
                .get_swapchain_images(handle)
                .ctx("vkGetSwapchainImagesKHR")?;
            let mut views = Vec::with_capacity(images.len());
            let mut render_finished = Vec::with_capacity(images.len());
            for &image in &images {
                let view_info = vk::ImageViewCreateInfo::default()
                    .image(image)
                    .view_type(vk::ImageViewType::TYPE_2D)
                    .format(format.format)
                    .subresource_range(vk::ImageSubresourceRange {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        base_mip_level: 0,
                        level_count: 1,
                        base_array_layer: 0,
                        layer_count: 1,
                    });
                views.push(
                    d.create_image_view(&view_info, None)
                        .ctx("vkCreateImageView (swapchain)")?,
                );
                render_finished.push(
                    d.create_semaphore(&vk::SemaphoreCreateInfo::default(), None)
                        .ctx("vkCreateSemaphore")?,
                );
            }
            Ok(Swapchain {
                handle,
                extent,
                images,
                views,
                framebuffers: Vec::new(),
                render_finished,
            })
        }
    }

    fn attach_framebuffers(&self, mut sc: Swapchain) -> Result<Swapchain, RenderError> {
        let Some(overlay) = &self.overlay else { return Ok(sc) };
        for &view in &sc.views {
            let views = [view];
            let info = vk::FramebufferCreateInfo::default()
                .render_pass(overlay.render_pass)
                .attachments(&views)
                .width(sc.extent.width)
                .height(sc.extent.height)
                .layers(1);
            // SAFETY: valid device and view.
            let fb = unsafe { self.gpu.device.create_framebuffer(&info, None) }.ctx("vkCreateFramebuffer (overlay)");
            match fb {
                Ok(fb) => sc.framebuffers.push(fb),
                Err(e) => {
                    self.destroy_swapchain(sc);
                    return Err(e);
                }
            }
        }
        Ok(sc)
    }

    fn destroy_swapchain(&self, sc: Swapchain) {
        let d = &self.gpu.device;
        // SAFETY: the renderer waited for every frame (rebuild and Drop call wait_idle first); presentation of
        // the old images is over once the device is idle.
        unsafe {
            let _ = d.device_wait_idle();
            for fb in sc.framebuffers {
                d.destroy_framebuffer(fb, None);
            }
            for v in sc.views {
                d.destroy_image_view(v, None);
            }
            for s in sc.render_finished {
                d.destroy_semaphore(s, None);
            }
            self.swapchain_fn.destroy_swapchain(sc.handle, None);
        }
    }
}

impl Drop for Presenter {
    fn drop(&mut self) {
        self.renderer.wait_idle();
        self.gpu.wait_idle();
        if let Some(sc) = self.swapchain.take() {
            self.destroy_swapchain(sc);
        }
        if let Some(mut ov) = self.overlay.take() {
            ov.destroy(&self.gpu.device);
        }
        // SAFETY: the device is idle; nothing uses these any more.
        unsafe {
            for s in self.image_available {
                self.gpu.device.destroy_semaphore(s, None);
            }
            self.surface_fn.destroy_surface(self.surface, None);
        }
    }
}

/// The size of a window's swapchain: the surface's own when it has one, else the window's, within the surface's
/// limits (shared with the VR mirror).
pub(super) fn swapchain_extent(caps: &vk::SurfaceCapabilitiesKHR, window: vk::Extent2D) -> vk::Extent2D {
    if caps.current_extent.width != u32::MAX {
        return caps.current_extent;
    }
    vk::Extent2D {
        width: window
            .width
            .clamp(caps.min_image_extent.width, caps.max_image_extent.width),
        height: window
            .height
            .clamp(caps.min_image_extent.height, caps.max_image_extent.height),
    }
}

/// What a window image is used for after the scene is blitted into it: its layout, and the stage and accesses that
/// wait for the blit.
#[derive(Clone, Copy, Debug)]
pub(super) struct WindowImageNext {
    pub layout: vk::ImageLayout,
    pub stage: vk::PipelineStageFlags,
    pub access: vk::AccessFlags,
}

impl WindowImageNext {
    /// Straight to presentation, which waits on the frame's semaphore: no access to make visible.
    pub const PRESENT: WindowImageNext = WindowImageNext {
        layout: vk::ImageLayout::PRESENT_SRC_KHR,
        stage: vk::PipelineStageFlags::BOTTOM_OF_PIPE,
        access: vk::AccessFlags::empty(),
    };
}

/// Records `image` (a window's swapchain image, just acquired: its old contents are dropped) cleared to black, then
/// `blits` from the renderer's result into it, then moved on for `next`. Shared by the desktop window
/// ([`Presenter`]) and the VR mirror.
///
/// # Safety
/// `cmd` is recording; `result` is in TRANSFER_SRC_OPTIMAL and readable by transfers; `image` is the caller's for
/// this frame, with TRANSFER_DST usage, and the frame waits for it to be acquired at the TRANSFER stage.
pub(super) unsafe fn record_into_window_image(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    result: vk::Image,
    image: vk::Image,
    blits: &[vk::ImageBlit],
    filter: vk::Filter,
    next: WindowImageNext,
) {
    let colour = super::memory::layers_range(vk::ImageAspectFlags::COLOR, 1);
    let barrier = |access, layouts| super::memory::image_barrier(image, colour, access, layouts);
    let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
    let to_dst = barrier(
        (vk::AccessFlags::empty(), vk::AccessFlags::TRANSFER_WRITE),
        (vk::ImageLayout::UNDEFINED, dst),
    );
    let after = barrier((vk::AccessFlags::TRANSFER_WRITE, next.access), (dst, next.layout));
    // Clear first: the blits need not cover the image (an odd width, a letterboxed eye).
    let black = vk::ClearColorValue {
        float32: [0.0, 0.0, 0.0, 1.0],
    };
    let clear_then_blit = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
    let stage = vk::PipelineStageFlags::TRANSFER;
    let none = vk::DependencyFlags::empty();
    // SAFETY: per the function's contract.
    unsafe {
        d.cmd_pipeline_barrier(cmd, stage, stage, none, &[], &[], &[to_dst]);
        d.cmd_clear_color_image(cmd, image, dst, &black, &[colour]);
        d.cmd_pipeline_barrier(cmd, stage, stage, none, &[clear_then_blit], &[], &[]);
        d.cmd_blit_image(
            cmd,
            result,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            image,
            dst,
            blits,
            filter,
        );
        d.cmd_pipeline_barrier(cmd, stage, next.stage, none, &[], &[], &[after]);
    }
}

/// The format a window's swapchain uses: an sRGB one when the surface has it (the scene and overlay write linear
/// light), else its first.
pub(super) fn preferred_surface_format(formats: &[vk::SurfaceFormatKHR]) -> Option<vk::SurfaceFormatKHR> {
    formats
        .iter()
        .find(|f| matches!(f.format, vk::Format::B8G8R8A8_SRGB | vk::Format::R8G8B8A8_SRGB))
        .or(formats.first())
        .copied()
}

/// Images to ask of a swapchain: one more than the surface's minimum, so acquiring never waits on the display for
/// want of one, within its maximum.
pub(super) fn swapchain_image_count(caps: &vk::SurfaceCapabilitiesKHR) -> u32 {
    let count = caps.min_image_count + 1;
    match caps.max_image_count {
        0 => count,
        max => count.min(max),
    }
}
