//! The main pass's images: one layer per view, multisampled colour and depth plus the single-sampled result
//! (`resolved`) when MSAA is on, the single-sampled depth when the renderer keeps it (for an XR depth layer), and
//! the framebuffer over them. Rebuilt on resize or view-count change.

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
    /// Single-sampled depth resolved from `depth` (sample 0), when the depth is kept with MSAA on.
    depth_resolved: Option<Image>,
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
        // Without MSAA a kept depth is the depth attachment itself, stored and copied out.
        let depth_usage = if formats.keep_depth && !msaa {
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC
        } else {
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | transient
        };
        let depth = create_image(
            device,
            props,
            &desc(formats.depth, formats.samples, depth_usage, vk::ImageAspectFlags::DEPTH),
        )?;
        let depth_resolved = if formats.keep_depth && msaa {
            Some(create_image(
                device,
                props,
                &desc(
                    formats.depth,
                    vk::SampleCountFlags::TYPE_1,
                    vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
                    vk::ImageAspectFlags::DEPTH,
                ),
            )?)
        } else {
            None
        };
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
        let mut views: Vec<vk::ImageView> = match &msaa_colour {
            Some(c) => vec![c.view, depth.view, resolved.view],
            None => vec![resolved.view, depth.view],
        };
        views.extend(depth_resolved.as_ref().map(|d| d.view));
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
            depth_resolved,
            resolved,
            framebuffer,
        })
    }

    /// The single-sampled depth the pass leaves in TRANSFER_SRC_OPTIMAL, when it keeps one.
    pub fn kept_depth(&self, keep_depth: bool) -> Option<vk::Image> {
        match (&self.depth_resolved, keep_depth) {
            (Some(d), _) => Some(d.image),
            (None, true) => Some(self.depth.image),
            (None, false) => None,
        }
    }

    /// The main pass's attachments when it resolves into images someone else owns (`external_pass.rs`): the
    /// multisampled colour and depth stay the renderer's own; `colour` (and `depth`, when the depth is kept) take
    /// the places of the result and the kept depth. Views of one layer per view; the count used comes second.
    pub fn external_attachments(
        &self,
        colour: vk::ImageView,
        depth: Option<vk::ImageView>,
    ) -> ([vk::ImageView; 4], usize) {
        let none = vk::ImageView::null();
        match (&self.msaa_colour, depth) {
            (Some(c), Some(d)) => ([c.view, self.depth.view, colour, d], 4),
            (Some(c), None) => ([c.view, self.depth.view, colour, none], 3),
            // Without MSAA the colour is drawn into directly, and a kept depth is the depth attachment itself.
            (None, Some(d)) => ([colour, d, none, none], 2),
            (None, None) => ([colour, self.depth.view, none, none], 2),
        }
    }

    /// Number of clear values the main pass takes (one per attachment).
    pub fn attachment_count(&self) -> usize {
        match (&self.msaa_colour, &self.depth_resolved) {
            (Some(_), Some(_)) => 4,
            (Some(_), None) => 3,
            (None, _) => 2,
        }
    }

    pub fn destroy(&self, device: &ash::Device) {
        // SAFETY: the GPU is idle.
        unsafe { device.destroy_framebuffer(self.framebuffer, None) };
        if let Some(c) = &self.msaa_colour {
            destroy_image(device, c);
        }
        destroy_image(device, &self.depth);
        if let Some(d) = &self.depth_resolved {
            destroy_image(device, d);
        }
        destroy_image(device, &self.resolved);
    }
}
