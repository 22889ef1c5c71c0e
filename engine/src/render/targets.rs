//! The main pass's images: one layer per view, multisampled colour and depth plus the single-sampled result
//! (`resolved`) when MSAA is on, and the framebuffer over them. Rebuilt on resize or view-count change.

use ash::vk;

use super::error::{RenderError, VkContext};
use super::memory::{create_image, destroy_image, Image, ImageDesc};
use super::pipeline::MainFormats;

pub(crate) struct Targets {
    pub extent: vk::Extent2D,
    pub layers: u32,
    /// Multisampled colour; `None` without MSAA (then `resolved` is drawn into directly).
    msaa_colour: Option<Image>,
    depth: Image,
    /// The frame's result: single-sampled, `layers` layers, TRANSFER_SRC_OPTIMAL after the pass.
    pub resolved: Image,
    pub framebuffer: vk::Framebuffer,
}

impl Targets {
    pub fn new(
        device: &ash::Device,
        props: &vk::PhysicalDeviceMemoryProperties,
        formats: MainFormats,
        render_pass: vk::RenderPass,
        extent: vk::Extent2D,
        layers: u32,
    ) -> Result<Targets, RenderError> {
        let msaa = formats.samples != vk::SampleCountFlags::TYPE_1;
        let desc = |format, samples, usage, aspect| ImageDesc {
            extent,
            layers,
            format,
            samples,
            usage,
            aspect,
        };
        let transient = vk::ImageUsageFlags::TRANSIENT_ATTACHMENT;
        let msaa_colour = if msaa {
            Some(create_image(
                device,
                props,
                &desc(
                    formats.colour,
                    formats.samples,
                    vk::ImageUsageFlags::COLOR_ATTACHMENT | transient,
                    vk::ImageAspectFlags::COLOR,
                ),
            )?)
        } else {
            None
        };
        let depth = create_image(
            device,
            props,
            &desc(
                formats.depth,
                formats.samples,
                vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | transient,
                vk::ImageAspectFlags::DEPTH,
            ),
        )?;
        let resolved = create_image(
            device,
            props,
            &desc(
                formats.colour,
                vk::SampleCountFlags::TYPE_1,
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
                vk::ImageAspectFlags::COLOR,
            ),
        )?;
        let views: Vec<vk::ImageView> = match &msaa_colour {
            Some(c) => vec![c.view, depth.view, resolved.view],
            None => vec![resolved.view, depth.view],
        };
        // Multiview: the framebuffer has one layer; the view mask spreads draws over the image layers.
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(render_pass)
            .attachments(&views)
            .width(extent.width)
            .height(extent.height)
            .layers(1);
        // SAFETY: valid device and views.
        let framebuffer = unsafe { device.create_framebuffer(&info, None) }.ctx("vkCreateFramebuffer (main)")?;
        Ok(Targets {
            extent,
            layers,
            msaa_colour,
            depth,
            resolved,
            framebuffer,
        })
    }

    /// Number of clear values the main pass takes (one per attachment).
    pub fn attachment_count(&self) -> usize {
        if self.msaa_colour.is_some() {
            3
        } else {
            2
        }
    }

    pub fn destroy(&self, device: &ash::Device) {
        // SAFETY: the GPU is idle.
        unsafe { device.destroy_framebuffer(self.framebuffer, None) };
        if let Some(c) = &self.msaa_colour {
            destroy_image(device, c);
        }
        destroy_image(device, &self.depth);
        destroy_image(device, &self.resolved);
    }
}
