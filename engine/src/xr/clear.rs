//! The first frame, until `engine::render` draws the scene into the swapchains: one multiview render pass (view
//! mask 0b11, so one pass writes both array layers) that clears colour and depth and leaves the images in the
//! layouts the compositor expects. It also proves the device's multiview works before a renderer relies on it.
//!
//! Everything is made once: the render pass, a framebuffer per (colour image, depth image) pair, one command
//! buffer and a fence. Recording a frame allocates nothing.

use ash::vk;

use super::swapchain::{EyeSwapchain, VIEW_COUNT};
use super::vulkan::XrVulkan;
use super::{vk_err, XrError};

/// Both views in one pass.
const VIEW_MASK: u32 = (1 << VIEW_COUNT) - 1;
/// How long a frame's GPU work may take before we call the device lost (ns).
const FENCE_TIMEOUT_NS: u64 = 5_000_000_000;

pub struct ClearPass {
    device: ash::Device,
    queue: vk::Queue,
    render_pass: vk::RenderPass,
    /// Indexed by `colour image * depth images + depth image` (a single column without depth).
    framebuffers: Vec<vk::Framebuffer>,
    depth_images: usize,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    extent: vk::Extent2D,
}

impl ClearPass {
    pub fn new(vulkan: &XrVulkan, color: &EyeSwapchain, depth: Option<&EyeSwapchain>) -> Result<ClearPass, XrError> {
        let device = vulkan.device.clone();
        let mut pass = ClearPass {
            device: device.clone(),
            queue: vulkan.queue,
            render_pass: vk::RenderPass::null(),
            framebuffers: Vec::new(),
            depth_images: depth.map_or(1, |d| d.views.len()),
            pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            extent: color.extent,
        };
        pass.render_pass = create_render_pass(&device, color.format, depth.map(|d| d.format))?;
        for &cv in &color.views {
            for d in 0..pass.depth_images {
                let attachments = match depth {
                    Some(depth) => vec![cv, depth.views[d]],
                    None => vec![cv],
                };
                // With multiview the framebuffer has one layer; the view mask picks the array layers.
                let info = vk::FramebufferCreateInfo::default()
                    .render_pass(pass.render_pass)
                    .attachments(&attachments)
                    .width(color.extent.width)
                    .height(color.extent.height)
                    .layers(1);
                // SAFETY: views and render pass of this device, compatible formats.
                let fb = unsafe { device.create_framebuffer(&info, None) }.map_err(vk_err("vkCreateFramebuffer"))?;
                pass.framebuffers.push(fb);
            }
        }
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(vulkan.queue_family_index)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: plain object creation on a live device.
        unsafe {
            pass.pool = device
                .create_command_pool(&pool_info, None)
                .map_err(vk_err("vkCreateCommandPool"))?;
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(pass.pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            pass.cmd = device
                .allocate_command_buffers(&alloc)
                .map_err(vk_err("vkAllocateCommandBuffers"))?[0];
            pass.fence = device
                .create_fence(
                    &vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED),
                    None,
                )
                .map_err(vk_err("vkCreateFence"))?;
        }
        Ok(pass)
    }

    /// Clears both eyes of colour image `color_index` (and depth image `depth_index`) to `rgba` and far depth,
    /// and submits. Returns once submitted; the next call waits for this one's GPU work first.
    pub fn clear(&mut self, color_index: usize, depth_index: usize, rgba: [f32; 4]) -> Result<(), XrError> {
        let fb = self.framebuffers[color_index * self.depth_images + depth_index.min(self.depth_images - 1)];
        let clear_values = [
            vk::ClearValue {
                color: vk::ClearColorValue { float32: rgba },
            },
            vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
            },
        ];
        let cmd = self.cmd;
        // SAFETY: the fence guards the command buffer: it is only reset once its previous submission finished.
        unsafe {
            self.device
                .wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS)
                .map_err(vk_err("vkWaitForFences"))?;
            self.device
                .reset_fences(&[self.fence])
                .map_err(vk_err("vkResetFences"))?;
            self.device
                .reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .map_err(vk_err("vkResetCommandBuffer"))?;
            self.device
                .begin_command_buffer(
                    cmd,
                    &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
                .map_err(vk_err("vkBeginCommandBuffer"))?;
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(self.render_pass)
                .framebuffer(fb)
                .render_area(vk::Rect2D {
                    offset: vk::Offset2D { x: 0, y: 0 },
                    extent: self.extent,
                })
                .clear_values(&clear_values);
            self.device
                .cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
            self.device.cmd_end_render_pass(cmd);
            self.device
                .end_command_buffer(cmd)
                .map_err(vk_err("vkEndCommandBuffer"))?;
            let cmds = [cmd];
            let submit = vk::SubmitInfo::default().command_buffers(&cmds);
            self.device
                .queue_submit(self.queue, &[submit], self.fence)
                .map_err(vk_err("vkQueueSubmit"))?;
        }
        Ok(())
    }

    /// Waits for the last submission (before tearing down, or to time the GPU).
    pub fn wait_idle(&self) -> Result<(), XrError> {
        // SAFETY: a fence of this device.
        unsafe { self.device.wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS) }.map_err(vk_err("vkWaitForFences"))
    }
}

impl Drop for ClearPass {
    fn drop(&mut self) {
        // SAFETY: the GPU is done with everything once the fence is signalled (or the device is lost anyway).
        unsafe {
            let _ = self.device.wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS);
            self.device.destroy_fence(self.fence, None);
            self.device.destroy_command_pool(self.pool, None);
            for &fb in &self.framebuffers {
                self.device.destroy_framebuffer(fb, None);
            }
            self.device.destroy_render_pass(self.render_pass, None);
        }
    }
}

/// One subpass, both views, colour (+ depth) cleared and stored, ending in the attachment layouts OpenXR wants
/// the images in when they are released.
fn create_render_pass(
    device: &ash::Device,
    color: vk::Format,
    depth: Option<vk::Format>,
) -> Result<vk::RenderPass, XrError> {
    let mut attachments = vec![vk::AttachmentDescription::default()
        .format(color)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
        .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
    if let Some(depth) = depth {
        attachments.push(
            vk::AttachmentDescription::default()
                .format(depth)
                .samples(vk::SampleCountFlags::TYPE_1)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .stencil_load_op(vk::AttachmentLoadOp::CLEAR)
                .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL),
        );
    }
    let color_refs = [vk::AttachmentReference {
        attachment: 0,
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    }];
    let depth_ref = vk::AttachmentReference {
        attachment: 1,
        layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
    };
    let mut subpass = vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&color_refs);
    if depth.is_some() {
        subpass = subpass.depth_stencil_attachment(&depth_ref);
    }
    let subpasses = [subpass];
    let view_masks = [VIEW_MASK];
    let correlation_masks = [VIEW_MASK];
    let mut multiview = vk::RenderPassMultiviewCreateInfo::default()
        .view_masks(&view_masks)
        .correlation_masks(&correlation_masks);
    let info = vk::RenderPassCreateInfo::default()
        .attachments(&attachments)
        .subpasses(&subpasses)
        .push_next(&mut multiview);
    // SAFETY: a well-formed create info on a device with multiview enabled.
    unsafe { device.create_render_pass(&info, None) }.map_err(vk_err("vkCreateRenderPass"))
}
