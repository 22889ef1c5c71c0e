//! Rendering into images someone else owns: OpenXR swapchain images (`XR_KHR_vulkan_enable2`).
//!
//! The OpenXR runtime creates the Vulkan instance and device (through `xrCreateVulkanInstanceKHR` /
//! `xrCreateVulkanDeviceKHR`), so the renderer is built on those handles with [`XrRenderer::new`]. What to ask the
//! runtime for:
//! - instance: API version [`VULKAN_API_VERSION`] (1.2); no instance extensions;
//! - device: no extensions; enable the multiview feature — chain [`required_device_features`] into the
//!   `VkDeviceCreateInfo`; one queue from a graphics family;
//! - swapchain images: a 2-layer array (`arraySize = 2`, one layer per eye), usage `COLOR_ATTACHMENT |
//!   TRANSFER_DST` (`XR_SWAPCHAIN_USAGE_COLOR_ATTACHMENT_BIT | XR_SWAPCHAIN_USAGE_TRANSFER_DST_BIT`), any colour
//!   format the device can blit to (an sRGB one such as `R8G8B8A8_SRGB` keeps colours right).
//!
//! Per frame, after `xrWaitSwapchainImage`: [`XrRenderer::render`] with the two eyes' views and the image; it
//! draws the multiview pass into the renderer's own target and copies (or blits) each layer into the image's
//! matching layer ([`record_copy_into`], which `tumble vr` records into its own frames too), leaving the image in
//! the layout it came in (`COLOR_ATTACHMENT_OPTIMAL` for OpenXR), then submits. Call
//! `xrReleaseSwapchainImage` after it returns. A renderer made with [`Renderer::new_keeping_depth`] also keeps
//! the frame's depth, which [`record_depth_copy_into`] copies into a depth swapchain image for the compositor's
//! depth layer (`XR_KHR_composition_layer_depth`), drawn with the planes of `crate::view_depth`.

use ash::vk;

use super::device::{ExternalVulkan, Gpu};
use super::error::RenderError;
use super::renderer::Renderer;
use super::scene_data::FrameInput;

#[allow(unused_imports)] // for the module docs' links
use super::device::{required_device_features, VULKAN_API_VERSION};

/// One externally owned colour image to render into.
#[derive(Clone, Copy, Debug)]
pub struct ExternalImage {
    pub image: vk::Image,
    /// Size of each layer in pixels.
    pub extent: vk::Extent2D,
    /// Layers to fill, one per view (2 for a stereo swapchain image).
    pub layers: u32,
    /// The layout the image is in now and must be left in (`COLOR_ATTACHMENT_OPTIMAL` for OpenXR).
    pub layout: vk::ImageLayout,
    /// Its format: the renderer's own result format is copied, any other blitted.
    pub format: vk::Format,
}

/// The renderer on a device that an OpenXR runtime created.
pub struct XrRenderer {
    // Drop order: the renderer's objects go before the (unowned) device wrapper.
    renderer: Renderer,
    gpu: Gpu,
}

impl XrRenderer {
    /// Builds the renderer on the runtime's handles (not destroyed on drop) for eyes of `width` × `height`.
    pub fn new(handles: ExternalVulkan, width: u32, height: u32) -> Result<XrRenderer, RenderError> {
        let gpu = Gpu::from_external(handles);
        let renderer = Renderer::new_keeping_depth(&gpu, width, height, 2)?;
        Ok(XrRenderer { renderer, gpu })
    }

    /// The device facts (name, MSAA, timestamps).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// GPU time of the most recent finished frame (ms).
    pub fn gpu_time_ms(&self) -> Option<f32> {
        self.renderer.gpu_time_ms()
    }

    /// Draws `input` (one view per layer of `target`) and copies it into `target`, and its depth into `depth`
    /// when given (an XR depth swapchain image); submitted on return. Returns whether the depth was written (not
    /// when the formats differ: submit no depth layer then).
    pub fn render(
        &mut self,
        input: &FrameInput,
        target: &ExternalImage,
        depth: Option<&ExternalImage>,
    ) -> Result<bool, RenderError> {
        render_into(&mut self.renderer, &self.gpu.device, input, target, depth)
    }
}

/// Records the frame and its copies into `target` (and `depth`), then submits (shared by [`XrRenderer`] and the
/// tests).
pub(crate) fn render_into(
    renderer: &mut Renderer,
    device: &ash::Device,
    input: &FrameInput,
    target: &ExternalImage,
    depth: Option<&ExternalImage>,
) -> Result<bool, RenderError> {
    if input.views.len() as u32 != target.layers || target.extent.width == 0 || target.extent.height == 0 {
        return Err(RenderError::Input(format!(
            "{} views for an image of {} layers, {}x{}",
            input.views.len(),
            target.layers,
            target.extent.width,
            target.extent.height
        )));
    }
    renderer.resize(target.extent.width, target.extent.height, target.layers)?;
    let cmd = renderer.begin_frame(input)?;
    // SAFETY: `cmd` is recording this renderer's frame; the caller owns `target` (and `depth`) for this frame.
    let depth_written = unsafe {
        record_copy_into(device, renderer, cmd, target, 0);
        depth.is_some_and(|d| record_depth_copy_into(device, renderer, cmd, d, 0))
    };
    renderer.submit(&[], &[], &[])?;
    Ok(depth_written)
}

/// Records, in `renderer`'s frame (`cmd`, after [`Renderer::begin_frame`], before its submit), the copy of the
/// result's `target.layers` layers into `target`'s layers from `first_layer` on: a copy when the formats match,
/// a blit otherwise; the size copied is the smaller of the two. The target's old contents in those layers are
/// dropped (UNDEFINED → TRANSFER_DST) and it ends in `target.layout`. The one path from the renderer into an
/// image someone else owns: [`XrRenderer`], and `tumble vr`, which draws each eye into its own layer when a
/// driver needs a pass per eye.
///
/// # Safety
/// `cmd` is recording `renderer`'s frame; `target.image` is alive, owned by the caller for this frame, and has the
/// layers named.
pub unsafe fn record_copy_into(
    device: &ash::Device,
    renderer: &Renderer,
    cmd: vk::CommandBuffer,
    target: &ExternalImage,
    first_layer: u32,
) {
    let result = renderer.result_image();
    let source = Source {
        image: result.image,
        extent: result.extent,
        format: super::RESULT_FORMAT,
        aspect: vk::ImageAspectFlags::COLOR,
    };
    // SAFETY: per the function's contract.
    unsafe { copy_layers(device, cmd, &source, target, first_layer) }
}

/// Records the copy of the frame's depth (a renderer made with [`Renderer::new_keeping_depth`]) into a depth
/// image someone else owns — an OpenXR depth swapchain image, for the compositor's depth layer — as
/// [`record_copy_into`] does colour: `target.layers` layers from `first_layer` on, ending in `target.layout`
/// (`DEPTH_STENCIL_ATTACHMENT_OPTIMAL` for OpenXR). Depth is copied, never converted: returns false, recording
/// nothing, when the renderer keeps no depth or the formats differ.
///
/// # Safety
/// As [`record_copy_into`]; `target` is a depth image.
pub unsafe fn record_depth_copy_into(
    device: &ash::Device,
    renderer: &Renderer,
    cmd: vk::CommandBuffer,
    target: &ExternalImage,
    first_layer: u32,
) -> bool {
    let result = renderer.result_image();
    let Some(depth) = result.depth.filter(|_| target.format == result.depth_format) else {
        return false;
    };
    let source = Source {
        image: depth,
        extent: result.extent,
        format: result.depth_format,
        aspect: vk::ImageAspectFlags::DEPTH,
    };
    // SAFETY: per the function's contract.
    unsafe { copy_layers(device, cmd, &source, target, first_layer) };
    true
}

/// An image the main pass left in TRANSFER_SRC_OPTIMAL, one layer per view.
struct Source {
    image: vk::Image,
    extent: vk::Extent2D,
    format: vk::Format,
    aspect: vk::ImageAspectFlags,
}

/// The copy (or, for colour of another format, blit) of `source`'s layers into `target`'s, with the barriers
/// around it.
///
/// # Safety
/// As [`record_copy_into`].
unsafe fn copy_layers(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    source: &Source,
    target: &ExternalImage,
    first_layer: u32,
) {
    let layers = target.layers;
    let src_range = vk::ImageSubresourceRange {
        aspect_mask: source.aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: layers,
    };
    let dst_range = vk::ImageSubresourceRange {
        base_array_layer: first_layer,
        ..src_range
    };
    let barrier = super::memory::image_barrier;
    let src_layout = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    let dst_layout = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
    // The main pass wrote the source: colour, and a resolved depth, as colour-output writes; an unresolved depth
    // by the depth tests.
    let (src_stage, src_access) = if source.aspect == vk::ImageAspectFlags::COLOR {
        (
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        )
    } else {
        (
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
        )
    };
    let to_transfer = [
        barrier(
            source.image,
            src_range,
            (src_access, vk::AccessFlags::TRANSFER_READ),
            (src_layout, src_layout),
        ),
        barrier(
            target.image,
            dst_range,
            (vk::AccessFlags::empty(), vk::AccessFlags::TRANSFER_WRITE),
            (vk::ImageLayout::UNDEFINED, dst_layout),
        ),
    ];
    // BOTTOM_OF_PIPE has no accesses: the copy's writes are made available here, and whoever owns the image
    // synchronises its own reads (for OpenXR, the release of the swapchain image after this submission).
    let back = [barrier(
        target.image,
        dst_range,
        (vk::AccessFlags::TRANSFER_WRITE, vk::AccessFlags::empty()),
        (dst_layout, target.layout),
    )];
    let sub = vk::ImageSubresourceLayers {
        aspect_mask: source.aspect,
        mip_level: 0,
        base_array_layer: 0,
        layer_count: layers,
    };
    let dst_sub = vk::ImageSubresourceLayers {
        base_array_layer: first_layer,
        ..sub
    };
    let (w, h) = (
        source.extent.width.min(target.extent.width),
        source.extent.height.min(target.extent.height),
    );
    // SAFETY: per the function's contract.
    unsafe {
        device.cmd_pipeline_barrier(
            cmd,
            src_stage,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_transfer,
        );
        if target.format == source.format {
            let region = vk::ImageCopy {
                src_subresource: sub,
                src_offset: vk::Offset3D::default(),
                dst_subresource: dst_sub,
                dst_offset: vk::Offset3D::default(),
                extent: vk::Extent3D {
                    width: w,
                    height: h,
                    depth: 1,
                },
            };
            device.cmd_copy_image(cmd, source.image, src_layout, target.image, dst_layout, &[region]);
        } else {
            let corner = vk::Offset3D {
                x: w as i32,
                y: h as i32,
                z: 1,
            };
            let region = vk::ImageBlit {
                src_subresource: sub,
                src_offsets: [vk::Offset3D::default(), corner],
                dst_subresource: dst_sub,
                dst_offsets: [vk::Offset3D::default(), corner],
            };
            device.cmd_blit_image(
                cmd,
                source.image,
                src_layout,
                target.image,
                dst_layout,
                &[region],
                vk::Filter::NEAREST,
            );
        }
        device.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::BOTTOM_OF_PIPE,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &back,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::memory::{create_buffer, create_image, destroy_buffer, destroy_image, ImageDesc};
    use crate::render::{authority_rgb, CubeInstance, View};
    use glam::{Quat, Vec3};

    /// A stand-in for an OpenXR swapchain image: a 2-layer image in COLOR_ATTACHMENT_OPTIMAL, and a depth one,
    /// filled through `render_into` (what `XrRenderer::render` calls), then read back: both eyes see the red cube,
    /// at the depth it really is.
    #[test]
    fn renders_both_eyes_into_an_external_two_layer_image() {
        let gpu = Gpu::headless().unwrap_or_else(|e| panic!("{e}"));
        let (w, h) = (64u32, 48u32);
        let extent = vk::Extent2D { width: w, height: h };
        let image = create_image(
            &gpu.device,
            &gpu.memory_properties,
            &ImageDesc {
                extent,
                layers: 2,
                format: vk::Format::R8G8B8A8_SRGB,
                samples: vk::SampleCountFlags::TYPE_1,
                usage: vk::ImageUsageFlags::COLOR_ATTACHMENT
                    | vk::ImageUsageFlags::TRANSFER_DST
                    | vk::ImageUsageFlags::TRANSFER_SRC,
                aspect: vk::ImageAspectFlags::COLOR,
            },
        )
        .expect("image");
        let bytes = u64::from(w * h * 4 * 2);
        let readback = create_buffer(
            &gpu.device,
            &gpu.memory_properties,
            bytes,
            vk::BufferUsageFlags::TRANSFER_DST,
            true,
        )
        .expect("buffer");
        let depth_format = gpu.info.depth_format;
        let depth_image = create_image(
            &gpu.device,
            &gpu.memory_properties,
            &ImageDesc {
                extent,
                layers: 2,
                format: depth_format,
                samples: vk::SampleCountFlags::TYPE_1,
                usage: vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
                    | vk::ImageUsageFlags::TRANSFER_DST
                    | vk::ImageUsageFlags::TRANSFER_SRC,
                aspect: vk::ImageAspectFlags::DEPTH,
            },
        )
        .expect("depth image");
        let depth_readback = create_buffer(
            &gpu.device,
            &gpu.memory_properties,
            u64::from(w * h * 4 * 2),
            vk::BufferUsageFlags::TRANSFER_DST,
            true,
        )
        .expect("buffer");
        let mut renderer = Renderer::new_keeping_depth(&gpu, w, h, 2).expect("renderer");
        let cube = CubeInstance {
            position: Vec3::new(0.0, 0.5, 0.0),
            rotation: Quat::IDENTITY,
            half_extents: Vec3::splat(0.5),
            colour: authority_rgb(2),
            flags: 0,
        };
        let views = View::stereo_pair(
            Vec3::new(0.0, 1.5, 3.0),
            Vec3::new(0.0, 0.5, 0.0),
            1.0,
            4.0 / 3.0,
            0.064,
        );
        let cubes = [cube];
        let input = FrameInput::new(&views, &cubes);
        // The runtime hands images over in COLOR_ATTACHMENT_OPTIMAL; get ours there first (UNDEFINED is not a
        // layout the image may be left in).
        transition(&gpu, image.image, vk::ImageAspectFlags::COLOR);
        transition(&gpu, depth_image.image, vk::ImageAspectFlags::DEPTH);
        let target = ExternalImage {
            image: image.image,
            extent,
            layers: 2,
            layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            format: vk::Format::R8G8B8A8_SRGB,
        };
        let depth_target = ExternalImage {
            image: depth_image.image,
            layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
            format: depth_format,
            ..target
        };
        let wrote_depth =
            render_into(&mut renderer, &gpu.device, &input, &target, Some(&depth_target)).expect("render");
        assert!(wrote_depth, "same format: the depth is copied");
        renderer.wait_last_submitted().expect("wait");
        // Under the validation layers (on in debug builds where installed): nothing reported.
        assert_eq!(
            crate::vk_validation::validation_messages(),
            0,
            "validation messages (logged, target \"vulkan\")"
        );
        read_back(&gpu, image.image, vk::ImageAspectFlags::COLOR, extent, readback.buffer);
        read_back(
            &gpu,
            depth_image.image,
            vk::ImageAspectFlags::DEPTH,
            extent,
            depth_readback.buffer,
        );
        // SAFETY: the copies finished (waited); the buffers are mapped and `bytes` long.
        let pixels = unsafe { std::slice::from_raw_parts(readback.mapped, bytes as usize) };
        let depths = unsafe { std::slice::from_raw_parts(depth_readback.mapped, bytes as usize) };
        for layer in 0..2usize {
            let centre = layer * (w * h * 4) as usize + (((h / 2) * w + w / 2) * 4) as usize;
            let [r, g, b] = [pixels[centre], pixels[centre + 1], pixels[centre + 2]];
            assert!(
                r > g + 40 && r > b + 40,
                "layer {layer}: the red cube should cover the centre, got {r},{g},{b}"
            );
            // The depth layer holds the distance the compositor is told: the cube's front face, 2.64 m along the
            // view axis from the eyes, through the planes of `view_depth` (D32: the bytes are the float).
            if depth_format == vk::Format::D32_SFLOAT {
                let d = f32::from_ne_bytes(depths[centre..centre + 4].try_into().unwrap());
                let (near, far) = (crate::view_depth::NEAR_M, crate::view_depth::FAR_M);
                let metres = near * far / (far - d * (far - near));
                assert!((metres - 2.635).abs() < 0.03, "layer {layer}: depth {d} is {metres} m");
                let corner = layer * (w * h * 4) as usize;
                let sky = f32::from_ne_bytes(depths[corner..corner + 4].try_into().unwrap());
                assert!(sky > d, "layer {layer}: above the cube is farther ({sky} vs {d})");
            }
        }
        drop(renderer);
        destroy_buffer(&gpu.device, &readback);
        destroy_buffer(&gpu.device, &depth_readback);
        destroy_image(&gpu.device, &image);
        destroy_image(&gpu.device, &depth_image);
    }

    /// Records and runs one-off commands in their own pool, waiting for the queue.
    fn one_off(gpu: &Gpu, record: impl FnOnce(vk::CommandBuffer)) {
        let d = &gpu.device;
        // SAFETY: test-only one-off submission on an idle queue.
        unsafe {
            let pool = d
                .create_command_pool(
                    &vk::CommandPoolCreateInfo::default().queue_family_index(gpu.queue_family),
                    None,
                )
                .unwrap();
            let cmd = d
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(pool)
                        .command_buffer_count(1),
                )
                .unwrap()[0];
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
            record(cmd);
            d.end_command_buffer(cmd).unwrap();
            let cmds = [cmd];
            d.queue_submit(
                gpu.queue,
                &[vk::SubmitInfo::default().command_buffers(&cmds)],
                vk::Fence::null(),
            )
            .unwrap();
            d.queue_wait_idle(gpu.queue).unwrap();
            d.destroy_command_pool(pool, None);
        }
    }

    /// The layout OpenXR hands an image over in: colour or depth attachment.
    fn attachment_layout(aspect: vk::ImageAspectFlags) -> vk::ImageLayout {
        if aspect == vk::ImageAspectFlags::COLOR {
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
        } else {
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
        }
    }

    fn transition(gpu: &Gpu, image: vk::Image, aspect: vk::ImageAspectFlags) {
        let barrier = vk::ImageMemoryBarrier::default()
            .old_layout(vk::ImageLayout::UNDEFINED)
            .new_layout(attachment_layout(aspect))
            .dst_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image)
            .subresource_range(crate::render::memory::layers_range(aspect, 2));
        // SAFETY: test-only commands on valid handles.
        one_off(gpu, |cmd| unsafe {
            gpu.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[barrier],
            )
        });
    }

    fn read_back(gpu: &Gpu, image: vk::Image, aspect: vk::ImageAspectFlags, extent: vk::Extent2D, buffer: vk::Buffer) {
        let barrier = vk::ImageMemoryBarrier::default()
            .old_layout(attachment_layout(aspect))
            .new_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image)
            .subresource_range(crate::render::memory::layers_range(aspect, 2));
        let region = vk::BufferImageCopy {
            buffer_offset: 0,
            buffer_row_length: 0,
            buffer_image_height: 0,
            image_subresource: vk::ImageSubresourceLayers {
                aspect_mask: aspect,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 2,
            },
            image_offset: vk::Offset3D::default(),
            image_extent: vk::Extent3D {
                width: extent.width,
                height: extent.height,
                depth: 1,
            },
        };
        // SAFETY: test-only commands on valid handles.
        one_off(gpu, |cmd| unsafe {
            gpu.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[barrier],
            );
            gpu.device
                .cmd_copy_image_to_buffer(cmd, image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, buffer, &[region]);
        });
    }
}
