//! The egui overlay, drawn over the presented frame by `egui-ash-renderer` in its own render pass on the
//! swapchain image. The desktop view builds the UI and hands over what `egui::Context::run` produced, as an
//! [`OverlayFrame`]; textures are uploaded before the frame and freed once the frame that last used them is done.

use ash::vk;

use super::error::{RenderError, VkContext};
use super::renderer::FRAMES_IN_FLIGHT;

/// One frame of egui output: `egui::Context::tessellate`'s primitives, the frame's texture changes, and
/// `pixels_per_point`. The presenter takes the texture changes out of `textures_delta` (leaving it empty, as egui
/// requires before it drops), whether or not the frame is drawn.
pub struct OverlayFrame<'a> {
    pub primitives: &'a [egui::ClippedPrimitive],
    pub textures_delta: &'a mut egui::TexturesDelta,
    pub pixels_per_point: f32,
}

/// Texture frees egui asks for in one frame beyond which they wait for a later frame (reserved once).
const PENDING_FREE_CAPACITY: usize = 64;

pub(crate) struct Overlay {
    renderer: egui_ash_renderer::Renderer<egui_ash_renderer::allocator::DefaultAllocator>,
    pub render_pass: vk::RenderPass,
    /// Textures to free once the slot's previous frame has finished (indexed by renderer frame slot).
    pending_free: [Vec<egui::TextureId>; FRAMES_IN_FLIGHT],
}

fn overlay_error(e: egui_ash_renderer::RendererError) -> RenderError {
    RenderError::Overlay(e.to_string())
}

impl Overlay {
    pub fn new(
        instance: &ash::Instance,
        physical_device: vk::PhysicalDevice,
        device: &ash::Device,
        format: vk::Format,
    ) -> Result<Overlay, RenderError> {
        let render_pass = overlay_render_pass(device, format)?;
        let options = egui_ash_renderer::Options {
            in_flight_frames: FRAMES_IN_FLIGHT,
            enable_depth_test: false,
            enable_depth_write: false,
            srgb_framebuffer: is_srgb(format),
        };
        let renderer = egui_ash_renderer::Renderer::with_default_allocator(
            instance,
            physical_device,
            device.clone(),
            egui_ash_renderer::RenderMode::RenderPass(render_pass),
            options,
        )
        .map_err(overlay_error)?;
        let pending_free = std::array::from_fn(|_| Vec::with_capacity(PENDING_FREE_CAPACITY));
        Ok(Overlay {
            renderer,
            render_pass,
            pending_free,
        })
    }

    /// Uploads the frame's new textures now and queues its frees behind `slot`'s next frame; empties `delta`.
    pub fn apply(
        &mut self,
        slot: usize,
        delta: &mut egui::TexturesDelta,
        queue: vk::Queue,
        pool: vk::CommandPool,
    ) -> Result<(), RenderError> {
        // egui's map: the order of uploads does not matter (each id is its own texture).
        #[allow(clippy::iter_over_hash_type)]
        for (id, deltas) in delta.set.drain() {
            for d in &deltas {
                self.renderer.set_texture(queue, pool, id, d).map_err(overlay_error)?;
            }
        }
        self.pending_free[slot].extend(delta.free.drain());
        Ok(())
    }

    /// Frees the textures queued behind `slot`, whose previous frame has finished.
    pub fn free_finished(&mut self, slot: usize) -> Result<(), RenderError> {
        for id in self.pending_free[slot].drain(..) {
            self.renderer.free_texture(id).map_err(overlay_error)?;
        }
        Ok(())
    }

    /// Records the overlay pass into `framebuffer` (the swapchain image, COLOR_ATTACHMENT_OPTIMAL → PRESENT_SRC).
    pub fn record(
        &mut self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        framebuffer: vk::Framebuffer,
        extent: vk::Extent2D,
        primitives: &[egui::ClippedPrimitive],
        pixels_per_point: f32,
    ) -> Result<(), RenderError> {
        let begin = vk::RenderPassBeginInfo::default()
            .render_pass(self.render_pass)
            .framebuffer(framebuffer)
            .render_area(extent.into());
        // SAFETY: cmd is recording; the framebuffer was made for this render pass.
        unsafe { device.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE) };
        let drawn = self.renderer.cmd_draw(cmd, extent, pixels_per_point, primitives);
        // SAFETY: as above.
        unsafe { device.cmd_end_render_pass(cmd) };
        drawn.map_err(overlay_error)
    }

    pub fn destroy(&mut self, device: &ash::Device) {
        for id in self.pending_free.iter_mut().flat_map(|p| p.drain(..)) {
            let _ = self.renderer.free_texture(id);
        }
        // SAFETY: the GPU is idle; the egui renderer's own objects go when it drops.
        unsafe { device.destroy_render_pass(self.render_pass, None) };
    }
}

fn is_srgb(format: vk::Format) -> bool {
    matches!(
        format,
        vk::Format::B8G8R8A8_SRGB | vk::Format::R8G8B8A8_SRGB | vk::Format::A8B8G8R8_SRGB_PACK32
    )
}

/// One colour attachment that keeps the blitted scene (LOAD) and ends ready to present.
fn overlay_render_pass(device: &ash::Device, format: vk::Format) -> Result<vk::RenderPass, RenderError> {
    let attachment = [vk::AttachmentDescription::default()
        .format(format)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::LOAD)
        .store_op(vk::AttachmentStoreOp::STORE)
        .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
        .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
        .final_layout(vk::ImageLayout::PRESENT_SRC_KHR)];
    let colour_ref = [vk::AttachmentReference {
        attachment: 0,
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    }];
    let subpass = [vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&colour_ref)];
    let info = vk::RenderPassCreateInfo::default()
        .attachments(&attachment)
        .subpasses(&subpass);
    // SAFETY: valid device.
    unsafe { device.create_render_pass(&info, None) }.ctx("vkCreateRenderPass (overlay)")
}
