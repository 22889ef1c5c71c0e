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
//! draws the multiview pass and resolves it straight into the image's layers ([`Renderer::begin_frame_into`]:
//! no copy), leaving the image in the layout it came in (`COLOR_ATTACHMENT_OPTIMAL` for OpenXR), then submits.
//! Call `xrReleaseSwapchainImage` after it returns. A renderer made with [`Renderer::new_keeping_depth`] resolves
//! the frame's depth (sample 0) into a depth swapchain image the same way, for the compositor's depth layer
//! (`XR_KHR_composition_layer_depth`), drawn with the planes of `crate::view_depth`. Where the images' formats are
//! not the pass's own ([`Renderer::can_resolve_into`]), the pass draws into the renderer's own target and is
//! copied (or blitted) into them: [`record_copy_into`] and [`record_depth_copy_into`].

use ash::vk;

use super::device::{ExternalVulkan, Gpu};
use super::error::RenderError;
use super::external_pass::ExternalTarget;
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

    /// Forgets the swapchain images drawn into so far (views of them are kept): call when the swapchain is made
    /// again, before its old images are destroyed.
    pub fn forget_swapchain_images(&mut self) {
        self.renderer.forget_external_images();
    }

    /// GPU time of the most recent finished frame (ms).
    pub fn gpu_time_ms(&self) -> Option<f32> {
        self.renderer.gpu_time_ms()
    }

    /// Draws `input` (one view per layer of `target`) into `target`, and its depth into `depth` when given (an XR
    /// depth swapchain image): resolved straight into them where the formats allow, else copied; submitted on
    /// return. Returns whether the depth was written (not when the formats differ: submit no depth layer then).
    pub fn render(
        &mut self,
        input: &FrameInput,
        target: &ExternalImage,
        depth: Option<&ExternalImage>,
    ) -> Result<bool, RenderError> {
        render_into(&mut self.renderer, &self.gpu.device, input, target, depth)
    }
}

/// Records the frame into `target` (and `depth`) — resolved into them, or drawn and copied where the formats
/// differ — then submits (shared by [`XrRenderer`] and the tests).
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
    if renderer.can_resolve_into(target.format, depth.map(|d| d.format)) {
        let into = ExternalTarget {
            colour: *target,
            depth: depth.copied(),
        };
        // SAFETY: the caller owns `target` (and `depth`) for this frame; see `XrRenderer::render`.
        unsafe { renderer.begin_frame_into(input, &into) }?;
        renderer.submit(&[], &[], &[])?;
        return Ok(depth.is_some());
    }
    render_copied(renderer, device, input, target, depth)
}

/// [`render_into`] through the renderer's own target and a copy.
pub(crate) fn render_copied(
    renderer: &mut Renderer,
    device: &ash::Device,
    input: &FrameInput,
    target: &ExternalImage,
    depth: Option<&ExternalImage>,
) -> Result<bool, RenderError> {
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

    /// A stand-in for an OpenXR swapchain's images: a 2-layer colour image and a depth one, handed over in the
    /// attachment layouts a runtime gives them in, with buffers to read them back.
    struct StandIn {
        colour: crate::render::memory::Image,
        depth: crate::render::memory::Image,
        colour_readback: crate::render::memory::Buffer,
        depth_readback: crate::render::memory::Buffer,
        extent: vk::Extent2D,
        depth_format: vk::Format,
    }

    impl StandIn {
        fn new(gpu: &Gpu, extent: vk::Extent2D) -> StandIn {
            let image = |format, usage, aspect| {
                create_image(
                    &gpu.device,
                    &gpu.memory_properties,
                    &ImageDesc {
                        extent,
                        layers: 2,
                        format,
                        samples: vk::SampleCountFlags::TYPE_1,
                        usage: usage | vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC,
                        aspect,
                    },
                )
                .expect("image")
            };
            let bytes = u64::from(extent.width * extent.height * 4 * 2);
            let buffer = || {
                create_buffer(
                    &gpu.device,
                    &gpu.memory_properties,
                    bytes,
                    vk::BufferUsageFlags::TRANSFER_DST,
                    crate::render::memory::Access::Readback,
                )
                .expect("buffer")
            };
            let depth_format = gpu.info.depth_format;
            let stand_in = StandIn {
                colour: image(
                    vk::Format::R8G8B8A8_SRGB,
                    vk::ImageUsageFlags::COLOR_ATTACHMENT,
                    vk::ImageAspectFlags::COLOR,
                ),
                depth: image(
                    depth_format,
                    vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
                    vk::ImageAspectFlags::DEPTH,
                ),
                colour_readback: buffer(),
                depth_readback: buffer(),
                extent,
                depth_format,
            };
            // The runtime hands images over in COLOR_ATTACHMENT_OPTIMAL; get ours there first (UNDEFINED is not a
            // layout the image may be left in).
            transition(gpu, stand_in.colour.image, vk::ImageAspectFlags::COLOR);
            transition(gpu, stand_in.depth.image, vk::ImageAspectFlags::DEPTH);
            stand_in
        }

        /// The images as a renderer is given them, `layers` of them per frame.
        fn targets(&self, layers: u32) -> (ExternalImage, ExternalImage) {
            let colour = ExternalImage {
                image: self.colour.image,
                extent: self.extent,
                layers,
                layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                format: vk::Format::R8G8B8A8_SRGB,
            };
            let depth = ExternalImage {
                image: self.depth.image,
                layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                format: self.depth_format,
                ..colour
            };
            (colour, depth)
        }

        /// Both images' bytes, both layers (after the GPU is done with them).
        fn read(&self, gpu: &Gpu) -> (Vec<u8>, Vec<u8>) {
            read_back(
                gpu,
                self.colour.image,
                vk::ImageAspectFlags::COLOR,
                self.extent,
                self.colour_readback.buffer,
            );
            read_back(
                gpu,
                self.depth.image,
                vk::ImageAspectFlags::DEPTH,
                self.extent,
                self.depth_readback.buffer,
            );
            let bytes = (self.extent.width * self.extent.height * 4 * 2) as usize;
            // SAFETY: the copies finished (waited); the buffers are mapped and `bytes` long.
            unsafe {
                (
                    std::slice::from_raw_parts(self.colour_readback.mapped, bytes).to_vec(),
                    std::slice::from_raw_parts(self.depth_readback.mapped, bytes).to_vec(),
                )
            }
        }

        fn destroy(&self, gpu: &Gpu) {
            destroy_buffer(&gpu.device, &self.colour_readback);
            destroy_buffer(&gpu.device, &self.depth_readback);
            destroy_image(&gpu.device, &self.colour);
            destroy_image(&gpu.device, &self.depth);
        }
    }

    fn red_cube_scene() -> ([View; 2], [CubeInstance; 1]) {
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
        (views, [cube])
    }

    /// A stand-in for an OpenXR swapchain image: a 2-layer image in COLOR_ATTACHMENT_OPTIMAL, and a depth one,
    /// filled through `render_into` (what `XrRenderer::render` calls: the pass resolves straight into them), then
    /// read back: both eyes see the red cube, at the depth it really is.
    #[test]
    fn renders_both_eyes_into_an_external_two_layer_image() {
        let gpu = Gpu::headless().unwrap_or_else(|e| panic!("{e}"));
        let (w, h) = (64u32, 48u32);
        let extent = vk::Extent2D { width: w, height: h };
        let stand_in = StandIn::new(&gpu, extent);
        let mut renderer = Renderer::new_keeping_depth(&gpu, w, h, 2).expect("renderer");
        let (views, cubes) = red_cube_scene();
        let input = FrameInput::new(&views, &cubes);
        let (target, depth_target) = stand_in.targets(2);
        assert!(renderer.can_resolve_into(target.format, Some(depth_target.format)));
        let wrote_depth =
            render_into(&mut renderer, &gpu.device, &input, &target, Some(&depth_target)).expect("render");
        assert!(wrote_depth, "same format: the depth is resolved into the image");
        renderer.wait_last_submitted().expect("wait");
        // Under the validation layers (on in debug builds where installed): nothing reported.
        assert_eq!(
            crate::vk_validation::validation_messages(),
            0,
            "validation messages (logged, target \"vulkan\")"
        );
        let (pixels, depths) = stand_in.read(&gpu);
        let depth_format = stand_in.depth_format;
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
        stand_in.destroy(&gpu);
    }

    /// Resolving straight into the images (no copy pass) leaves in them exactly what drawing into the renderer's
    /// own target and copying out does — colour and depth, with MSAA and without.
    #[test]
    fn resolving_into_the_images_draws_what_the_copy_does() {
        let gpu = Gpu::headless().unwrap_or_else(|e| panic!("{e}"));
        let (w, h) = (64u32, 48u32);
        let extent = vk::Extent2D { width: w, height: h };
        let (views, cubes) = red_cube_scene();
        let input = FrameInput::new(&views, &cubes);
        for samples in [gpu.info.msaa_samples, vk::SampleCountFlags::TYPE_1] {
            let renderer = || Renderer::with_samples(&gpu, w, h, 2, true, samples).expect("renderer");
            let draw = |resolve: bool| {
                let stand_in = StandIn::new(&gpu, extent);
                let (colour, depth) = stand_in.targets(2);
                let mut r = renderer();
                let wrote_depth = if resolve {
                    render_into(&mut r, &gpu.device, &input, &colour, Some(&depth))
                } else {
                    render_copied(&mut r, &gpu.device, &input, &colour, Some(&depth))
                }
                .expect("render");
                assert!(wrote_depth);
                r.wait_last_submitted().expect("wait");
                let read = stand_in.read(&gpu);
                drop(r);
                stand_in.destroy(&gpu);
                read
            };
            let (resolved, copied) = (draw(true), draw(false));
            assert!(resolved.0 == copied.0, "{samples:?}: colour differs");
            assert!(resolved.1 == copied.1, "{samples:?}: depth differs");
            let red = resolved.0[(((h / 2) * w + w / 2) * 4) as usize];
            assert!(red > 100, "{samples:?}: the cube is drawn ({red})");
        }
        assert_eq!(crate::vk_validation::validation_messages(), 0, "validation messages");
    }

    /// Images the pass cannot resolve into (another colour format; a depth image for a renderer that keeps none,
    /// or none for one that does; layers that are not the views) are refused with an error, nothing recorded: the
    /// renderer draws its next frame as before.
    #[test]
    fn images_it_cannot_resolve_into_are_refused() {
        let gpu = Gpu::headless().unwrap_or_else(|e| panic!("{e}"));
        let extent = vk::Extent2D { width: 32, height: 24 };
        let stand_in = StandIn::new(&gpu, extent);
        let (colour, depth) = stand_in.targets(2);
        let (views, cubes) = red_cube_scene();
        let input = FrameInput::new(&views, &cubes);
        let mut keeping = Renderer::new_keeping_depth(&gpu, 32, 24, 2).expect("renderer");
        let mut plain = Renderer::new(&gpu, 32, 24, 2).expect("renderer");
        let bgra = ExternalImage {
            format: vk::Format::B8G8R8A8_SRGB,
            ..colour
        };
        let one_layer = ExternalImage { layers: 1, ..colour };
        let refused = [
            (true, bgra, Some(depth)),
            (true, colour, None),
            (true, one_layer, Some(ExternalImage { layers: 1, ..depth })),
            (false, colour, Some(depth)),
        ];
        for (keeps_depth, colour, depth) in refused {
            let renderer = if keeps_depth { &mut keeping } else { &mut plain };
            assert!(
                colour.layers != 2 || !renderer.can_resolve_into(colour.format, depth.map(|d| d.format)),
                "{colour:?} {depth:?}"
            );
            let into = ExternalTarget { colour, depth };
            // SAFETY: the stand-in's images are alive and ours.
            let result = unsafe { renderer.begin_frame_into(&input, &into) };
            assert!(matches!(result, Err(RenderError::Input(_))), "{colour:?} {depth:?}");
            renderer.begin_frame(&input).expect("still draws");
            renderer.submit(&[], &[], &[]).expect("submit");
        }
        assert!(plain.can_resolve_into(colour.format, None));
        keeping.wait_idle();
        plain.wait_idle();
        drop((keeping, plain));
        stand_in.destroy(&gpu);
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
