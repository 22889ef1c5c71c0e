//! The directional light's shadow map: one depth image the boxes are drawn into from the light, sampled with a
//! comparison sampler by the main pass. The light's orthographic box is fitted to the frame's boxes each frame.

use ash::vk;
use glam::{Mat4, Vec3};

use super::error::{RenderError, VkContext};
use super::memory::{create_image, destroy_image, Image, ImageDesc};
use super::scene_data::FrameInput;

/// Shadow map size (texels per side).
pub(crate) const SHADOW_SIZE_PX: u32 = 2048;
/// Smallest radius the light's box covers (m), so a scene of one cube still gets a sensible shadow.
const MIN_SHADOW_RADIUS_M: f32 = 4.0;
/// Largest radius (m): beyond this the shadow would be too coarse to help; distant cubes go unshadowed.
const MAX_SHADOW_RADIUS_M: f32 = 60.0;

pub(crate) struct Shadow {
    pub image: Image,
    pub render_pass: vk::RenderPass,
    pub framebuffer: vk::Framebuffer,
    pub sampler: vk::Sampler,
}

impl Shadow {
    pub fn new(
        device: &ash::Device,
        props: &vk::PhysicalDeviceMemoryProperties,
        format: vk::Format,
    ) -> Result<Shadow, RenderError> {
        let extent = vk::Extent2D {
            width: SHADOW_SIZE_PX,
            height: SHADOW_SIZE_PX,
        };
        let image = create_image(
            device,
            props,
            &ImageDesc {
                extent,
                layers: 1,
                format,
                samples: vk::SampleCountFlags::TYPE_1,
                usage: vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::SAMPLED,
                aspect: vk::ImageAspectFlags::DEPTH,
            },
        )?;
        let attachment = [vk::AttachmentDescription::default()
            .format(format)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)];
        let depth_ref = vk::AttachmentReference {
            attachment: 0,
            layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        };
        let subpass = [vk::SubpassDescription::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .depth_stencil_attachment(&depth_ref)];
        // Before: the previous frame's main pass sampled the map. After: this frame's main pass samples it.
        let fragment_tests = vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        let deps = [
            vk::SubpassDependency::default()
                .src_subpass(vk::SUBPASS_EXTERNAL)
                .dst_subpass(0)
                .src_stage_mask(vk::PipelineStageFlags::FRAGMENT_SHADER)
                .dst_stage_mask(fragment_tests)
                .src_access_mask(vk::AccessFlags::SHADER_READ)
                .dst_access_mask(vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE),
            vk::SubpassDependency::default()
                .src_subpass(0)
                .dst_subpass(vk::SUBPASS_EXTERNAL)
                .src_stage_mask(fragment_tests)
                .dst_stage_mask(vk::PipelineStageFlags::FRAGMENT_SHADER)
                .src_access_mask(vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE)
                .dst_access_mask(vk::AccessFlags::SHADER_READ),
        ];
        let info = vk::RenderPassCreateInfo::default()
            .attachments(&attachment)
            .subpasses(&subpass)
            .dependencies(&deps);
        // SAFETY: valid device; all objects are destroyed in `destroy`.
        unsafe {
            let render_pass = device
                .create_render_pass(&info, None)
                .ctx("vkCreateRenderPass (shadow)")?;
            let views = [image.view];
            let fb = vk::FramebufferCreateInfo::default()
                .render_pass(render_pass)
                .attachments(&views)
                .width(SHADOW_SIZE_PX)
                .height(SHADOW_SIZE_PX)
                .layers(1);
            let framebuffer = device
                .create_framebuffer(&fb, None)
                .ctx("vkCreateFramebuffer (shadow)")?;
            let sampler_info = vk::SamplerCreateInfo::default()
                .mag_filter(vk::Filter::LINEAR)
                .min_filter(vk::Filter::LINEAR)
                .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .compare_enable(true)
                .compare_op(vk::CompareOp::LESS_OR_EQUAL);
            let sampler = device.create_sampler(&sampler_info, None).ctx("vkCreateSampler")?;
            Ok(Shadow {
                image,
                render_pass,
                framebuffer,
                sampler,
            })
        }
    }

    pub fn destroy(&self, device: &ash::Device) {
        // SAFETY: the GPU is idle (the renderer waits before destroying).
        unsafe {
            device.destroy_sampler(self.sampler, None);
            device.destroy_framebuffer(self.framebuffer, None);
            device.destroy_render_pass(self.render_pass, None);
        }
        destroy_image(device, &self.image);
    }
}

/// The light's world → clip transform: an orthographic box along the light around the frame's boxes — the cubes'
/// `bounds` (lowest and highest centre, largest half-diagonal: `casters.rs`) and the avatars.
pub(crate) fn light_view_proj(input: &FrameInput, bounds: Option<(Vec3, Vec3, f32)>) -> Mat4 {
    let (mut lo, mut hi) = match bounds {
        Some((lo, hi, reach)) => (lo - Vec3::splat(reach), hi + Vec3::splat(reach)),
        None => (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
    };
    for a in input.avatars {
        lo = lo.min(a.head.position - 0.3);
        hi = hi.max(a.head.position + 0.3);
    }
    let (centre, radius) = if lo.x <= hi.x {
        (
            (lo + hi) * 0.5,
            ((hi - lo).length() * 0.5).clamp(MIN_SHADOW_RADIUS_M, MAX_SHADOW_RADIUS_M),
        )
    } else {
        (Vec3::ZERO, MIN_SHADOW_RADIUS_M)
    };
    let towards_light = -input.light_direction.normalize_or(Vec3::NEG_Y);
    let up = if towards_light.y.abs() > 0.99 { Vec3::Z } else { Vec3::Y };
    let eye = centre + towards_light * (radius + 1.0);
    let view = Mat4::look_at_rh(eye, centre, up);
    Mat4::orthographic_rh(-radius, radius, -radius, radius, 0.0, 2.0 * radius + 2.0) * view
}
