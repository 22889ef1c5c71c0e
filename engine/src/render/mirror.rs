//! [`Mirror`]: one eye of a VR frame shown in a desktop window, for the people around the player (what SteamVR
//! calls the mirror). It blits an image the renderer made for the headset — the first layer, the left eye, of the
//! renderer's result or of the swapchain image the frame resolved into — into a window swapchain on the session's
//! own device, inside the headset frame's command buffer.
//!
//! The headset sets the pace, never the window: an image is acquired with no wait (a frame with none free shows
//! nothing new in the window), and the present mode is the first of MAILBOX, IMMEDIATE and FIFO_RELAXED the window
//! offers, FIFO only when it offers nothing else (the acquire still never waits). The eye is scaled to fit the
//! window, keeping its aspect, on black.

use ash::vk;
use raw_window_handle::{RawDisplayHandle, RawWindowHandle};

use super::device::Gpu;
use super::error::{RenderError, VkContext};
use super::external::ExternalImage;
use super::renderer::{Renderer, FRAMES_IN_FLIGHT};
use super::swapchain::{
    preferred_surface_format, record_into_window_image, swapchain_extent, swapchain_image_count, WindowImageNext,
};

/// Present modes in the order a mirror wants them: none waits for the display.
const PRESENT_MODES: [vk::PresentModeKHR; 4] = [
    vk::PresentModeKHR::MAILBOX,
    vk::PresentModeKHR::IMMEDIATE,
    vk::PresentModeKHR::FIFO_RELAXED,
    vk::PresentModeKHR::FIFO,
];

/// The swapchain of the mirror window, rebuilt when the window changes size.
struct Chain {
    handle: vk::SwapchainKHR,
    extent: vk::Extent2D,
    images: Vec<vk::Image>,
    /// Signalled by the frame that blits into an image; presentation waits on it. One per image.
    blitted: Vec<vk::Semaphore>,
}

/// A window image acquired for this frame: blit into it with [`Mirror::record_blit`], submit the frame waiting on
/// `acquired` and signalling `blitted`, then [`Mirror::present`] it.
#[derive(Clone, Copy, Debug)]
pub struct MirrorImage {
    index: u32,
    image: vk::Image,
    extent: vk::Extent2D,
    pub acquired: vk::Semaphore,
    pub blitted: vk::Semaphore,
}

/// The mirror window's Vulkan side. Dropped before the device (it waits for the device to be idle).
pub struct Mirror {
    device: ash::Device,
    physical_device: vk::PhysicalDevice,
    queue: vk::Queue,
    surface: vk::SurfaceKHR,
    surface_fn: ash::khr::surface::Instance,
    swapchain_fn: ash::khr::swapchain::Device,
    format: vk::SurfaceFormatKHR,
    present_mode: vk::PresentModeKHR,
    chain: Option<Chain>,
    /// Signalled when an acquired image is free; one per renderer frame slot (free again once the slot's fence is
    /// waited, which `begin_frame` does before the slot is reused).
    acquired: [vk::Semaphore; FRAMES_IN_FLIGHT],
    window_extent: vk::Extent2D,
    stale: bool,
    /// Frames shown in the window.
    pub presented: u64,
    /// Swapchains made for the window (the first, then one per resize or out-of-date swapchain).
    pub builds: u64,
}

impl Mirror {
    /// A mirror into the window of `display` / `window` (`width` × `height` pixels) on `gpu`, whose instance was
    /// made with the window system's surface extensions and whose device with `VK_KHR_swapchain`.
    ///
    /// # Safety
    /// The window must outlive the mirror.
    pub unsafe fn new(
        gpu: &Gpu,
        display: RawDisplayHandle,
        window: RawWindowHandle,
        width: u32,
        height: u32,
    ) -> Result<Mirror, RenderError> {
        // SAFETY: the caller keeps the window alive; the instance has the surface extensions.
        let surface = unsafe { ash_window::create_surface(&gpu.entry, &gpu.instance, display, window, None) }
            .ctx("vkCreateSurfaceKHR")?;
        // SAFETY: per this function's contract.
        unsafe { Self::from_surface(gpu, surface, width, height) }
    }

    /// A mirror into `surface`, `width` × `height` pixels (a window's, or `Gpu::with_headless_surface`'s in tests),
    /// which it takes: it is destroyed with the mirror, or here if the mirror cannot be made.
    ///
    /// # Safety
    /// `surface` was made from `gpu`'s instance and nothing else destroys it; what it shows outlives the mirror.
    pub unsafe fn from_surface(
        gpu: &Gpu,
        surface: vk::SurfaceKHR,
        width: u32,
        height: u32,
    ) -> Result<Mirror, RenderError> {
        let surface_fn = ash::khr::surface::Instance::new(&gpu.entry, &gpu.instance);
        let made = Self::finish(gpu, surface, &surface_fn, width, height);
        if made.is_err() {
            // SAFETY: nothing else uses the surface.
            unsafe { surface_fn.destroy_surface(surface, None) };
        }
        made
    }

    fn finish(
        gpu: &Gpu,
        surface: vk::SurfaceKHR,
        surface_fn: &ash::khr::surface::Instance,
        width: u32,
        height: u32,
    ) -> Result<Mirror, RenderError> {
        // SAFETY: plain queries on live handles.
        let (supported, formats, modes) = unsafe {
            (
                surface_fn
                    .get_physical_device_surface_support(gpu.physical_device, gpu.queue_family, surface)
                    .ctx("vkGetPhysicalDeviceSurfaceSupportKHR")?,
                surface_fn
                    .get_physical_device_surface_formats(gpu.physical_device, surface)
                    .ctx("vkGetPhysicalDeviceSurfaceFormatsKHR")?,
                surface_fn
                    .get_physical_device_surface_present_modes(gpu.physical_device, surface)
                    .ctx("vkGetPhysicalDeviceSurfacePresentModesKHR")?,
            )
        };
        if !supported {
            return Err(RenderError::Window(
                "the headset's queue cannot present to the mirror window".into(),
            ));
        }
        let format = preferred_surface_format(&formats)
            .ok_or(RenderError::Window("the mirror window offers no format".into()))?;
        let present_mode = PRESENT_MODES
            .into_iter()
            .find(|m| modes.contains(m))
            .unwrap_or(vk::PresentModeKHR::FIFO);
        let mut acquired = [vk::Semaphore::null(); FRAMES_IN_FLIGHT];
        for i in 0..FRAMES_IN_FLIGHT {
            // SAFETY: valid device; destroyed in Drop, or here when a later one fails.
            match unsafe { gpu.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) } {
                Ok(s) => acquired[i] = s,
                Err(result) => {
                    for &s in &acquired[..i] {
                        // SAFETY: unused so far.
                        unsafe { gpu.device.destroy_semaphore(s, None) };
                    }
                    return Err(RenderError::Vulkan {
                        what: "vkCreateSemaphore",
                        result,
                    });
                }
            }
        }
        tracing::info!(?present_mode, format = ?format.format, "mirror window");
        Ok(Mirror {
            device: gpu.device.clone(),
            physical_device: gpu.physical_device,
            queue: gpu.queue,
            surface,
            surface_fn: surface_fn.clone(),
            swapchain_fn: ash::khr::swapchain::Device::new(&gpu.instance, &gpu.device),
            format,
            present_mode,
            chain: None,
            acquired,
            window_extent: vk::Extent2D { width, height },
            stale: true,
            presented: 0,
            builds: 0,
        })
    }

    /// The window's new size in pixels; 0 × 0 while minimised (nothing is shown then).
    pub fn resize(&mut self, width: u32, height: u32) {
        let extent = vk::Extent2D { width, height };
        if extent != self.window_extent {
            self.window_extent = extent;
            self.stale = true;
        }
    }

    /// A window image for the frame in renderer slot `slot` ([`Renderer::recording_slot`] while it records), or
    /// `None` when none is free right now, the window is minimised, or its swapchain was just remade.
    pub fn acquire(&mut self, slot: usize) -> Result<Option<MirrorImage>, RenderError> {
        if self.stale {
            self.rebuild()?;
        }
        let Some(chain) = self.chain.as_ref() else {
            return Ok(None);
        };
        let acquired = self.acquired[slot % FRAMES_IN_FLIGHT];
        // SAFETY: live swapchain; the semaphore is unsignalled (its last wait was in a submission the slot's fence
        // has seen finish, or it was never signalled).
        let result = unsafe {
            self.swapchain_fn
                .acquire_next_image(chain.handle, 0, acquired, vk::Fence::null())
        };
        match result {
            Ok((index, suboptimal)) => {
                self.stale |= suboptimal;
                Ok(Some(MirrorImage {
                    index,
                    image: chain.images[index as usize],
                    extent: chain.extent,
                    acquired,
                    blitted: chain.blitted[index as usize],
                }))
            }
            Err(vk::Result::NOT_READY | vk::Result::TIMEOUT) => Ok(None),
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                self.stale = true;
                Ok(None)
            }
            Err(e) => Err(RenderError::Vulkan {
                what: "vkAcquireNextImageKHR (mirror)",
                result: e,
            }),
        }
    }

    /// Records, in `renderer`'s frame (after the main pass, before its submit), the result's first layer scaled
    /// into `target` on black, leaving it ready to present.
    ///
    /// # Safety
    /// `cmd` is recording `renderer`'s frame; `target` was acquired for it, and the frame's submission waits on
    /// `target.acquired` at the TRANSFER stage.
    pub unsafe fn record_blit(&self, renderer: &Renderer, cmd: vk::CommandBuffer, target: &MirrorImage) {
        let source = renderer.result_image();
        // SAFETY: per the function's contract; the result is TRANSFER_SRC and readable by transfers after the main
        // pass (its render pass's external dependency).
        unsafe { self.record_blit_of(cmd, source.image, source.extent, target) };
    }

    /// [`Mirror::record_blit`] from the first layer of `source`, an image someone else owns that the frame's main
    /// pass resolved into (`Renderer::begin_frame_into`): moved to TRANSFER_SRC for the blit and back to
    /// `source.layout` after it.
    ///
    /// # Safety
    /// As [`Mirror::record_blit`]; `source` is in `source.layout`, written by the frame's main pass as a colour
    /// attachment, has TRANSFER_SRC usage, and is the caller's for this frame.
    pub unsafe fn record_blit_from(&self, cmd: vk::CommandBuffer, source: &ExternalImage, target: &MirrorImage) {
        let range = super::memory::layers_range(vk::ImageAspectFlags::COLOR, 1);
        let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        let to_src = super::memory::image_barrier(
            source.image,
            range,
            (vk::AccessFlags::COLOR_ATTACHMENT_WRITE, vk::AccessFlags::TRANSFER_READ),
            (source.layout, src),
        );
        // Whoever owns the image synchronises its own reads after the frame (for OpenXR, the swapchain release).
        let back = super::memory::image_barrier(
            source.image,
            range,
            (vk::AccessFlags::empty(), vk::AccessFlags::empty()),
            (src, source.layout),
        );
        let none = vk::DependencyFlags::empty();
        let transfer = vk::PipelineStageFlags::TRANSFER;
        // SAFETY: per the function's contract.
        unsafe {
            self.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                transfer,
                none,
                &[],
                &[],
                &[to_src],
            );
            self.record_blit_of(cmd, source.image, source.extent, target);
            self.device.cmd_pipeline_barrier(
                cmd,
                transfer,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                none,
                &[],
                &[],
                &[back],
            );
        }
    }

    /// The blit of `source`'s first layer (`extent`, in TRANSFER_SRC_OPTIMAL) into `target`.
    ///
    /// # Safety
    /// As [`Mirror::record_blit`], with `source` in TRANSFER_SRC_OPTIMAL and readable by transfers.
    unsafe fn record_blit_of(
        &self,
        cmd: vk::CommandBuffer,
        source_image: vk::Image,
        source_extent: vk::Extent2D,
        target: &MirrorImage,
    ) {
        let source = (source_image, source_extent);
        let (x0, y0, x1, y1) = fit(source.1, target.extent);
        let layer = vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        };
        let corner = vk::Offset3D {
            x: source.1.width as i32,
            y: source.1.height as i32,
            z: 1,
        };
        let blit = vk::ImageBlit {
            src_subresource: layer,
            src_offsets: [vk::Offset3D::default(), corner],
            dst_subresource: layer,
            dst_offsets: [vk::Offset3D { x: x0, y: y0, z: 0 }, vk::Offset3D { x: x1, y: y1, z: 1 }],
        };
        // SAFETY: per the function's contract.
        unsafe {
            record_into_window_image(
                &self.device,
                cmd,
                source.0,
                target.image,
                &[blit],
                vk::Filter::LINEAR,
                WindowImageNext::PRESENT,
            );
        }
    }

    /// Shows `image` once the submitted frame has signalled its `blitted` semaphore.
    pub fn present(&mut self, image: &MirrorImage) -> Result<(), RenderError> {
        let Some(chain) = self.chain.as_ref() else {
            return Ok(());
        };
        let waits = [image.blitted];
        let chains = [chain.handle];
        let indices = [image.index];
        let info = vk::PresentInfoKHR::default()
            .wait_semaphores(&waits)
            .swapchains(&chains)
            .image_indices(&indices);
        // SAFETY: the image was acquired from this swapchain and its blit submitted, signalling `blitted`.
        match unsafe { self.swapchain_fn.queue_present(self.queue, &info) } {
            Ok(suboptimal) => {
                self.stale |= suboptimal;
                self.presented += 1;
                Ok(())
            }
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                self.stale = true;
                Ok(())
            }
            Err(e) => Err(RenderError::Vulkan {
                what: "vkQueuePresentKHR (mirror)",
                result: e,
            }),
        }
    }

    /// Makes the swapchain for the window's size (none while minimised), after the device has finished with the
    /// old one. A rare pause (the window was resized), never per frame.
    fn rebuild(&mut self) -> Result<(), RenderError> {
        // SAFETY: waiting is always valid; after it no submission uses the old chain's images or semaphores.
        unsafe { self.device.device_wait_idle() }.ctx("vkDeviceWaitIdle")?;
        // SAFETY: plain query.
        let caps = unsafe {
            self.surface_fn
                .get_physical_device_surface_capabilities(self.physical_device, self.surface)
        }
        .ctx("vkGetPhysicalDeviceSurfaceCapabilitiesKHR")?;
        let extent = swapchain_extent(&caps, self.window_extent);
        let old = self.chain.take();
        self.stale = false;
        if extent.width == 0 || extent.height == 0 {
            if let Some(old) = old {
                self.destroy_chain(old);
            }
            return Ok(());
        }
        if !caps.supported_usage_flags.contains(vk::ImageUsageFlags::TRANSFER_DST) {
            return Err(RenderError::Window(
                "the mirror window's images cannot be blitted to".into(),
            ));
        }
        let count = swapchain_image_count(&caps);
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(self.surface)
            .min_image_count(count)
            .image_format(self.format.format)
            .image_color_space(self.format.color_space)
            .image_extent(extent)
            .image_array_layers(1)
            .image_usage(vk::ImageUsageFlags::TRANSFER_DST)
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
            .present_mode(self.present_mode)
            .clipped(true)
            .old_swapchain(old.as_ref().map_or(vk::SwapchainKHR::null(), |c| c.handle));
        // SAFETY: valid surface and device; the chain is destroyed in destroy_chain.
        let made = unsafe { self.swapchain_fn.create_swapchain(&info, None) }.ctx("vkCreateSwapchainKHR");
        if let Some(old) = old {
            self.destroy_chain(old);
        }
        let handle = made?;
        // SAFETY: a live swapchain.
        let images = match unsafe { self.swapchain_fn.get_swapchain_images(handle) } {
            Ok(images) => images,
            Err(e) => {
                // SAFETY: nothing uses it yet.
                unsafe { self.swapchain_fn.destroy_swapchain(handle, None) };
                return Err(RenderError::Vulkan {
                    what: "vkGetSwapchainImagesKHR",
                    result: e,
                });
            }
        };
        let mut chain = Chain {
            handle,
            extent,
            images,
            blitted: Vec::new(),
        };
        for _ in 0..chain.images.len() {
            // SAFETY: valid device; destroyed with the chain.
            match unsafe { self.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) } {
                Ok(s) => chain.blitted.push(s),
                Err(e) => {
                    self.destroy_chain(chain);
                    return Err(RenderError::Vulkan {
                        what: "vkCreateSemaphore",
                        result: e,
                    });
                }
            }
        }
        self.chain = Some(chain);
        self.builds += 1;
        Ok(())
    }

    fn destroy_chain(&self, chain: Chain) {
        // SAFETY: the device is idle (rebuild and Drop wait first); nothing else holds these.
        unsafe {
            for s in chain.blitted {
                self.device.destroy_semaphore(s, None);
            }
            self.swapchain_fn.destroy_swapchain(chain.handle, None);
        }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        // SAFETY: after the wait nothing in flight uses the chain, the semaphores or the surface.
        unsafe {
            let _ = self.device.device_wait_idle();
        }
        if let Some(chain) = self.chain.take() {
            self.destroy_chain(chain);
        }
        // SAFETY: as above.
        unsafe {
            for s in self.acquired {
                self.device.destroy_semaphore(s, None);
            }
            self.surface_fn.destroy_surface(self.surface, None);
        }
    }
}

/// Submits the frame `cmd` records, with the result's left eye blitted into a mirror window image when one is free
/// (the frame then waits for that image, and the image is shown once the frame is done). The one way a frame
/// reaches the mirror: `tumble vr` and the mirror's tests both submit through it.
pub fn submit_with_mirror(
    renderer: &mut Renderer,
    cmd: vk::CommandBuffer,
    mirror: Option<&mut Mirror>,
) -> Result<(), RenderError> {
    // SAFETY: no source image: the mirror reads the renderer's own result.
    unsafe { submit_with_mirror_from(renderer, cmd, mirror, None) }
}

/// [`submit_with_mirror`] for a frame that resolved into `source` (`Renderer::begin_frame_into`): the mirror
/// blits that image's first layer; `None` blits the renderer's own result.
///
/// # Safety
/// With a source: as for [`Mirror::record_blit_from`].
pub unsafe fn submit_with_mirror_from(
    renderer: &mut Renderer,
    cmd: vk::CommandBuffer,
    mirror: Option<&mut Mirror>,
    source: Option<&ExternalImage>,
) -> Result<(), RenderError> {
    let Some(mirror) = mirror else {
        return renderer.submit(&[], &[], &[]);
    };
    let Some(image) = mirror.acquire(renderer.recording_slot())? else {
        return renderer.submit(&[], &[], &[]);
    };
    // SAFETY: `cmd` records this renderer's frame, after its main pass (and any copies); the image was acquired for
    // it, and the submission below waits on its `acquired` semaphore at the transfer stage; a source is as the
    // function's contract says.
    unsafe {
        match source {
            Some(source) => mirror.record_blit_from(cmd, source, &image),
            None => mirror.record_blit(renderer, cmd, &image),
        }
    }
    renderer.submit(&[image.acquired], &[vk::PipelineStageFlags::TRANSFER], &[image.blitted])?;
    mirror.present(&image)
}

/// The instance extensions Vulkan needs for a surface of `display`'s window system.
pub fn window_extensions(display: RawDisplayHandle) -> Result<Vec<&'static std::ffi::CStr>, RenderError> {
    let names = ash_window::enumerate_required_extensions(display).ctx("vkEnumerateInstanceExtensionProperties")?;
    // SAFETY: ash_window returns pointers to ash's static, NUL-terminated extension names.
    Ok(names.iter().map(|&p| unsafe { std::ffi::CStr::from_ptr(p) }).collect())
}

/// Where an image of `source` size lands in a window of `window` size, scaled to fit with its aspect kept and
/// centred: (x0, y0, x1, y1) in window pixels.
pub fn fit(source: vk::Extent2D, window: vk::Extent2D) -> (i32, i32, i32, i32) {
    let (sw, sh) = (source.width.max(1) as f32, source.height.max(1) as f32);
    let (ww, wh) = (window.width as f32, window.height as f32);
    let scale = (ww / sw).min(wh / sh);
    let (w, h) = ((sw * scale).round() as i32, (sh * scale).round() as i32);
    let (x0, y0) = ((window.width as i32 - w) / 2, (window.height as i32 - h) / 2);
    (x0, y0, x0 + w, y0 + h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(width: u32, height: u32) -> vk::Extent2D {
        vk::Extent2D { width, height }
    }

    /// A tall eye in a wide window: full height, centred, black bars left and right; and the other way round.
    #[test]
    fn the_eye_fits_the_window_keeping_its_aspect() {
        assert_eq!(fit(extent(896, 1007), extent(1280, 720)), (319, 0, 960, 720));
        assert_eq!(fit(extent(1000, 500), extent(500, 500)), (0, 125, 500, 375));
        assert_eq!(fit(extent(640, 480), extent(640, 480)), (0, 0, 640, 480));
    }
}
