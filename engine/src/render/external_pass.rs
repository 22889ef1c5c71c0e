//! The main pass drawn straight into images someone else owns — an OpenXR runtime's swapchain images — instead of
//! into the renderer's own result and then copied: the MSAA resolve (and the depth's, sample 0) writes the
//! swapchain's layers, so a VR frame has no copy pass at all. The same pass as the renderer's own but for the
//! layouts it ends in (the ones the runtime hands its images back in), so the same pipelines draw it.
//!
//! Each image (and layer range) needs views and a framebuffer of its own. A runtime's swapchain has a handful of
//! images, used in turn, so they are made the first time an image comes and kept: nothing is made per frame once
//! every image has been seen. Kept at most [`MAX_FRAMEBUFFERS`]; past that (swapchains made again and again) they
//! are all dropped, after the GPU is idle, and made afresh.

use ash::vk;

use super::error::{RenderError, VkContext};
use super::external::ExternalImage;
use super::pipeline::{main_render_pass, MainFormats, ResultLayouts};
use super::targets::Targets;

/// Framebuffers kept for images someone else owns: a stereo swapchain of 3 images, its depth, a pass per eye —
/// with room for a swapchain made again once.
const MAX_FRAMEBUFFERS: usize = 16;

/// One frame's images to resolve into: colour, and depth when the renderer keeps it, one layer per view from
/// layer 0 on. (No first layer other than 0, so no pass per eye into a stereo image's second layer: Mesa 22's
/// lavapipe draws a multiview pass into the image's first layers whatever the view's base layer.)
#[derive(Clone, Copy, Debug)]
pub struct ExternalTarget {
    pub colour: ExternalImage,
    pub depth: Option<ExternalImage>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct FramebufferKey {
    colour: vk::Image,
    depth: vk::Image,
    layers: u32,
}

struct Framebuffer {
    key: FramebufferKey,
    colour_view: vk::ImageView,
    depth_view: vk::ImageView,
    framebuffer: vk::Framebuffer,
}

/// The pass into external images and the framebuffers made for them so far.
pub(crate) struct ExternalPass {
    pub render_pass: vk::RenderPass,
    layouts: ResultLayouts,
    framebuffers: Vec<Framebuffer>,
}

impl ExternalPass {
    pub fn new(
        device: &ash::Device,
        formats: MainFormats,
        view_count: u32,
        layouts: ResultLayouts,
    ) -> Result<ExternalPass, RenderError> {
        Ok(ExternalPass {
            render_pass: main_render_pass(device, formats, view_count, layouts)?,
            layouts,
            framebuffers: Vec::with_capacity(MAX_FRAMEBUFFERS),
        })
    }

    /// Whether this pass ends in `layouts` (else a new one is made for them).
    pub fn ends_in(&self, layouts: ResultLayouts) -> bool {
        self.layouts == layouts
    }

    /// Whether the framebuffers are full: the caller waits for the GPU and calls [`ExternalPass::forget`] first.
    pub fn is_full(&self) -> bool {
        self.framebuffers.len() >= MAX_FRAMEBUFFERS
    }

    /// The framebuffer over `targets` and `target`'s images, made on first use.
    ///
    /// # Safety
    /// `target`'s images are alive and belong to `device`; the GPU is done with anything dropped by a full cache
    /// (see [`ExternalPass::is_full`]).
    pub unsafe fn framebuffer(
        &mut self,
        device: &ash::Device,
        targets: &Targets,
        target: &ExternalTarget,
    ) -> Result<vk::Framebuffer, RenderError> {
        let key = FramebufferKey {
            colour: target.colour.image,
            depth: target.depth.map_or(vk::Image::null(), |d| d.image),
            layers: target.colour.layers,
        };
        if let Some(f) = self.framebuffers.iter().find(|f| f.key == key) {
            return Ok(f.framebuffer);
        }
        let view = |image: &ExternalImage, aspect| {
            let info = vk::ImageViewCreateInfo::default()
                .image(image.image)
                .view_type(vk::ImageViewType::TYPE_2D_ARRAY)
                .format(image.format)
                .subresource_range(vk::ImageSubresourceRange {
                    aspect_mask: aspect,
                    base_mip_level: 0,
                    level_count: 1,
                    base_array_layer: 0,
                    layer_count: image.layers,
                });
            // SAFETY: per the function's contract.
            unsafe { device.create_image_view(&info, None) }.ctx("vkCreateImageView (external)")
        };
        let colour_view = view(&target.colour, vk::ImageAspectFlags::COLOR)?;
        let depth_view = match target.depth.as_ref().map(|d| view(d, vk::ImageAspectFlags::DEPTH)) {
            Some(Ok(v)) => v,
            None => vk::ImageView::null(),
            Some(Err(e)) => {
                // SAFETY: made above, used by nothing.
                unsafe { device.destroy_image_view(colour_view, None) };
                return Err(e);
            }
        };
        let (views, used) = targets.external_attachments(colour_view, target.depth.map(|_| depth_view));
        // Multiview: the framebuffer has one layer; the view mask spreads draws over the views' layers.
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(self.render_pass)
            .attachments(&views[..used])
            .width(targets.extent.width)
            .height(targets.extent.height)
            .layers(1);
        // SAFETY: valid device, pass and views.
        let framebuffer = match unsafe { device.create_framebuffer(&info, None) }.ctx("vkCreateFramebuffer (external)")
        {
            Ok(f) => f,
            Err(e) => {
                // SAFETY: made above, used by nothing.
                unsafe {
                    device.destroy_image_view(colour_view, None);
                    device.destroy_image_view(depth_view, None);
                }
                return Err(e);
            }
        };
        tracing::debug!(layers = key.layers, "framebuffer for an external image");
        self.framebuffers.push(Framebuffer {
            key,
            colour_view,
            depth_view,
            framebuffer,
        });
        Ok(framebuffer)
    }

    /// Drops every framebuffer and view (the targets they use are remade, or the cache is full).
    ///
    /// # Safety
    /// The GPU is done with them.
    pub unsafe fn forget(&mut self, device: &ash::Device) {
        for f in self.framebuffers.drain(..) {
            // SAFETY: per the function's contract; destroying a null view is a no-op.
            unsafe {
                device.destroy_framebuffer(f.framebuffer, None);
                device.destroy_image_view(f.colour_view, None);
                device.destroy_image_view(f.depth_view, None);
            }
        }
    }

    /// # Safety
    /// The GPU is done with the pass and its framebuffers.
    pub unsafe fn destroy(&mut self, device: &ash::Device) {
        // SAFETY: per the function's contract.
        unsafe {
            self.forget(device);
            device.destroy_render_pass(self.render_pass, None);
        }
    }
}
