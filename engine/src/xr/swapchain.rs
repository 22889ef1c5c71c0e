//! The session's swapchains: one colour swapchain with two array layers (layer 0 the left eye, 1 the right) so one
//! multiview pass renders both eyes, and a depth swapchain of the same shape for `XR_KHR_composition_layer_depth`
//! (the runtime reprojects better with depth). Formats are picked from the runtime's list in our order of
//! preference; each image gets a 2D-array view of both layers.

use ash::vk;
use ash::vk::Handle;
use openxr as xr;

use super::vulkan::{format_name, XrVulkan};
use super::{vk_err, xr_err, XrError};

/// Eyes, and so array layers per image.
pub const VIEW_COUNT: u32 = 2;

/// Colour formats we can render to, best first: sRGB so the compositor sees linear light encoded as it expects.
pub const COLOR_FORMATS: [vk::Format; 4] = [
    vk::Format::R8G8B8A8_SRGB,
    vk::Format::B8G8R8A8_SRGB,
    vk::Format::R8G8B8A8_UNORM,
    vk::Format::B8G8R8A8_UNORM,
];
/// Depth formats, best first.
pub const DEPTH_FORMATS: [vk::Format; 4] = [
    vk::Format::D32_SFLOAT,
    vk::Format::D24_UNORM_S8_UINT,
    vk::Format::X8_D24_UNORM_PACK32,
    vk::Format::D16_UNORM,
];

/// The first of `preferred` that the runtime offers.
pub fn pick_format(offered: &[i64], preferred: &[vk::Format]) -> Option<vk::Format> {
    preferred
        .iter()
        .copied()
        .find(|f| offered.contains(&i64::from(f.as_raw())))
}

/// One swapchain, its images and a 2D-array view of each.
pub struct EyeSwapchain {
    pub handle: xr::Swapchain<xr::Vulkan>,
    pub format: vk::Format,
    pub extent: vk::Extent2D,
    pub images: Vec<vk::Image>,
    pub views: Vec<vk::ImageView>,
    device: ash::Device,
}

impl EyeSwapchain {
    /// A swapchain of `format` at `extent` with two layers, for colour or depth (`aspect`).
    pub fn new(
        session: &xr::Session<xr::Vulkan>,
        vulkan: &XrVulkan,
        format: vk::Format,
        extent: vk::Extent2D,
        aspect: vk::ImageAspectFlags,
    ) -> Result<EyeSwapchain, XrError> {
        let usage = if aspect == vk::ImageAspectFlags::COLOR {
            // COLOR_ATTACHMENT: the renderer resolves into the swapchain directly; TRANSFER_DST: where it cannot
            // (another format), it copies its own target in; TRANSFER_SRC: the mirror window blits the left eye out.
            xr::SwapchainUsageFlags::COLOR_ATTACHMENT
                | xr::SwapchainUsageFlags::SAMPLED
                | xr::SwapchainUsageFlags::TRANSFER_DST
                | xr::SwapchainUsageFlags::TRANSFER_SRC
        } else {
            // DEPTH_STENCIL_ATTACHMENT: the renderer resolves its depth into it; TRANSFER_DST: or copies it in.
            xr::SwapchainUsageFlags::DEPTH_STENCIL_ATTACHMENT | xr::SwapchainUsageFlags::TRANSFER_DST
        };
        let handle = session
            .create_swapchain(&xr::SwapchainCreateInfo {
                create_flags: xr::SwapchainCreateFlags::EMPTY,
                usage_flags: usage,
                format: format.as_raw() as _,
                sample_count: 1,
                width: extent.width,
                height: extent.height,
                face_count: 1,
                array_size: VIEW_COUNT,
                mip_count: 1,
            })
            .map_err(xr_err("xrCreateSwapchain"))?;
        let images: Vec<vk::Image> = handle
            .enumerate_images()
            .map_err(xr_err("xrEnumerateSwapchainImages"))?
            .into_iter()
            .map(vk::Image::from_raw)
            .collect();
        let mut swapchain = EyeSwapchain {
            handle,
            format,
            extent,
            images: Vec::new(),
            views: Vec::with_capacity(images.len()),
            device: vulkan.device.clone(),
        };
        for &image in &images {
            let info = vk::ImageViewCreateInfo::default()
                .image(image)
                .view_type(vk::ImageViewType::TYPE_2D_ARRAY)
                .format(format)
                .subresource_range(vk::ImageSubresourceRange {
                    aspect_mask: aspect,
                    base_mip_level: 0,
                    level_count: 1,
                    base_array_layer: 0,
                    layer_count: VIEW_COUNT,
                });
            // SAFETY: the image belongs to this device (the runtime made it for our session).
            let view = unsafe { vulkan.device.create_image_view(&info, None) }.map_err(vk_err("vkCreateImageView"))?;
            swapchain.views.push(view);
        }
        swapchain.images = images;
        tracing::info!(format = %format_name(format.as_raw().into()), width = extent.width, height = extent.height,
            images = swapchain.images.len(), "swapchain");
        Ok(swapchain)
    }
}

impl Drop for EyeSwapchain {
    fn drop(&mut self) {
        // SAFETY: the views are ours; the GPU is idle when a session is torn down (see `XrSession::drop`).
        unsafe {
            for &v in &self.views {
                self.device.destroy_image_view(v, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srgb_is_preferred_and_order_is_ours_not_the_runtimes() {
        // Monado on lavapipe offers these (hello_xr's log: 91 97 43 50 37 44 4 100 126 124 125 129 130 127).
        let offered = [91, 97, 43, 50, 37, 44, 4, 100, 126, 124, 125, 129, 130, 127];
        assert_eq!(pick_format(&offered, &COLOR_FORMATS), Some(vk::Format::R8G8B8A8_SRGB));
        assert_eq!(pick_format(&offered, &DEPTH_FORMATS), Some(vk::Format::D32_SFLOAT));
        // 44 is B8G8R8A8_UNORM, 37 R8G8B8A8_UNORM: our order decides, not the runtime's.
        assert_eq!(pick_format(&[44, 37], &COLOR_FORMATS), Some(vk::Format::R8G8B8A8_UNORM));
    }

    #[test]
    fn nothing_usable_is_none() {
        assert_eq!(pick_format(&[91, 97], &COLOR_FORMATS), None);
        assert_eq!(pick_format(&[], &DEPTH_FORMATS), None);
    }
}
