//! Shader modules, the descriptor layout, the main multiview render pass and the three pipelines (ground and boxes
//! in the main pass, boxes into the shadow map). The main pass's view mask depends on the view count, so
//! [`MainPass`] is rebuilt when that changes (the stereo toggle), not per frame.

use std::ffi::CStr;

use ash::vk;

use super::error::{RenderError, VkContext};

/// Reads a SPIR-V file compiled by `engine/build.rs` (copied into aligned words once, at start-up).
macro_rules! spirv {
    ($name:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".spv"))
    };
}

/// A shader module and its entry point's name (naga keeps the WGSL function's name).
#[derive(Clone, Copy)]
pub(crate) struct Stage {
    pub module: vk::ShaderModule,
    pub entry: &'static CStr,
}

fn shader(device: &ash::Device, bytes: &[u8], entry: &'static CStr) -> Result<Stage, RenderError> {
    let words = ash::util::read_spv(&mut std::io::Cursor::new(bytes)).map_err(|_| RenderError::Vulkan {
        what: "reading SPIR-V",
        result: vk::Result::ERROR_INVALID_SHADER_NV,
    })?;
    let info = vk::ShaderModuleCreateInfo::default().code(&words);
    // SAFETY: valid device and SPIR-V from our build.
    let module = unsafe { device.create_shader_module(&info, None) }.ctx("vkCreateShaderModule")?;
    Ok(Stage { module, entry })
}

/// The shader modules, compiled at build time from `shaders/scene.wgsl`.
pub(crate) struct Shaders {
    pub vs_box: Stage,
    pub fs_box: Stage,
    pub vs_ground: Stage,
    pub fs_ground: Stage,
    pub vs_shadow: Stage,
}

impl Shaders {
    pub fn new(device: &ash::Device) -> Result<Shaders, RenderError> {
        Ok(Shaders {
            vs_box: shader(device, spirv!("vs_box"), c"vs_box")?,
            fs_box: shader(device, spirv!("fs_box"), c"fs_box")?,
            vs_ground: shader(device, spirv!("vs_ground"), c"vs_ground")?,
            fs_ground: shader(device, spirv!("fs_ground"), c"fs_ground")?,
            vs_shadow: shader(device, spirv!("vs_shadow"), c"vs_shadow")?,
        })
    }

    pub fn destroy(&self, device: &ash::Device) {
        for s in [self.vs_box, self.fs_box, self.vs_ground, self.fs_ground, self.vs_shadow] {
            // SAFETY: no pipeline is being created from them any more.
            unsafe { device.destroy_shader_module(s.module, None) };
        }
    }
}

/// Set 0: frame uniforms, the box records, the shadow map and its comparison sampler, the cubes' draw order.
pub(crate) fn descriptor_layout(device: &ash::Device) -> Result<vk::DescriptorSetLayout, RenderError> {
    let all = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
    let binding = |b: u32, t: vk::DescriptorType| {
        vk::DescriptorSetLayoutBinding::default()
            .binding(b)
            .descriptor_type(t)
            .descriptor_count(1)
            .stage_flags(all)
    };
    let bindings = [
        binding(0, vk::DescriptorType::UNIFORM_BUFFER),
        binding(1, vk::DescriptorType::STORAGE_BUFFER),
        binding(2, vk::DescriptorType::SAMPLED_IMAGE),
        binding(3, vk::DescriptorType::SAMPLER),
        binding(4, vk::DescriptorType::STORAGE_BUFFER),
    ];
    let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
    // SAFETY: valid device.
    unsafe { device.create_descriptor_set_layout(&info, None) }.ctx("vkCreateDescriptorSetLayout")
}

/// Formats and sample count of the main pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MainFormats {
    pub colour: vk::Format,
    pub depth: vk::Format,
    pub samples: vk::SampleCountFlags,
    /// Keep the depth as a single-sampled layered image after the pass (for an XR compositor's depth layer).
    pub keep_depth: bool,
}

/// The multiview render pass for one view count and its two pipelines.
pub(crate) struct MainPass {
    pub render_pass: vk::RenderPass,
    pub ground: vk::Pipeline,
    pub boxes: vk::Pipeline,
    pub view_count: u32,
}

impl MainPass {
    pub fn new(
        device: &ash::Device,
        shaders: &Shaders,
        layout: vk::PipelineLayout,
        formats: MainFormats,
        view_count: u32,
    ) -> Result<MainPass, RenderError> {
        let render_pass = main_render_pass(device, formats, view_count, OWN_RESULT_LAYOUTS)?;
        let ground = graphics_pipeline(
            device,
            &PipelineDesc {
                vs: shaders.vs_ground,
                fs: Some(shaders.fs_ground),
                layout,
                render_pass,
                samples: formats.samples,
                cull: vk::CullModeFlags::NONE,
                depth_bias: false,
            },
        );
        let boxes = graphics_pipeline(
            device,
            &PipelineDesc {
                vs: shaders.vs_box,
                fs: Some(shaders.fs_box),
                layout,
                render_pass,
                samples: formats.samples,
                cull: vk::CullModeFlags::BACK,
                depth_bias: false,
            },
        );
        match (ground, boxes) {
            (Ok(ground), Ok(boxes)) => Ok(MainPass {
                render_pass,
                ground,
                boxes,
                view_count,
            }),
            (ground, boxes) => {
                // SAFETY: nothing uses these yet.
                unsafe {
                    for p in [ground.as_ref().ok(), boxes.as_ref().ok()].into_iter().flatten() {
                        device.destroy_pipeline(*p, None);
                    }
                    device.destroy_render_pass(render_pass, None);
                }
                Err(ground.and(boxes).unwrap_err())
            }
        }
    }

    pub fn destroy(&self, device: &ash::Device) {
        // SAFETY: the GPU is idle.
        unsafe {
            device.destroy_pipeline(self.ground, None);
            device.destroy_pipeline(self.boxes, None);
            device.destroy_render_pass(self.render_pass, None);
        }
    }
}

/// The layouts the main pass leaves its result and its kept depth in: (colour, depth).
pub(crate) type ResultLayouts = (vk::ImageLayout, vk::ImageLayout);

/// The renderer's own result and kept depth end ready to be copied out (read back, blitted, copied into XR images).
pub(crate) const OWN_RESULT_LAYOUTS: ResultLayouts = (
    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
);

/// Attachments: with MSAA, 0 = multisampled colour, 1 = multisampled depth, 2 = single-sampled resolve (the
/// result) and, when the depth is kept, 3 = single-sampled depth (sample 0 of each pixel, resolved by the pass);
/// without MSAA, 0 = colour (the result), 1 = depth (itself kept when asked). Each is a 2D array with one layer per
/// view. The result (and the kept depth) ends in `result_layouts`: TRANSFER_SRC_OPTIMAL for the renderer's own
/// images ([`OWN_RESULT_LAYOUTS`]), ready to be read back, blitted to a swapchain or copied into XR images; the
/// attachment layouts an XR runtime's swapchain images are handed back in when the pass resolves straight into
/// them (`external_pass.rs`). Both kinds are compatible with the same pipelines: only final layouts differ. Made
/// with `vkCreateRenderPass2` (core 1.2), which has depth resolve.
pub(crate) fn main_render_pass(
    device: &ash::Device,
    f: MainFormats,
    view_count: u32,
    result_layouts: ResultLayouts,
) -> Result<vk::RenderPass, RenderError> {
    let msaa = f.samples != vk::SampleCountFlags::TYPE_1;
    let attachment = |format, samples, store, final_layout| {
        vk::AttachmentDescription2::default()
            .format(format)
            .samples(samples)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(store)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(final_layout)
    };
    let (store, dont) = (vk::AttachmentStoreOp::STORE, vk::AttachmentStoreOp::DONT_CARE);
    let (colour_final, depth_final) = result_layouts;
    let colour = if msaa {
        attachment(f.colour, f.samples, dont, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
    } else {
        attachment(f.colour, f.samples, store, colour_final)
    };
    let depth = if f.keep_depth && !msaa {
        attachment(f.depth, f.samples, store, depth_final)
    } else {
        attachment(
            f.depth,
            f.samples,
            dont,
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        )
    };
    let single = vk::SampleCountFlags::TYPE_1;
    let resolve = attachment(f.colour, single, store, colour_final).load_op(vk::AttachmentLoadOp::DONT_CARE);
    let depth_resolve = attachment(f.depth, single, store, depth_final).load_op(vk::AttachmentLoadOp::DONT_CARE);
    let attachments = [colour, depth, resolve, depth_resolve];
    let used = match (msaa, f.keep_depth) {
        (false, _) => 2,
        (true, false) => 3,
        (true, true) => 4,
    };
    let reference = |attachment, layout, aspect| {
        vk::AttachmentReference2::default()
            .attachment(attachment)
            .layout(layout)
            .aspect_mask(aspect)
    };
    let colour_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
    let depth_layout = vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    let colour_ref = [reference(0, colour_layout, vk::ImageAspectFlags::COLOR)];
    let depth_ref = reference(1, depth_layout, vk::ImageAspectFlags::DEPTH);
    let resolve_ref = [reference(2, colour_layout, vk::ImageAspectFlags::COLOR)];
    let depth_resolve_ref = reference(3, depth_layout, vk::ImageAspectFlags::DEPTH);
    // Sample 0: every implementation has it, and it is a depth some fragment really had (an average is not).
    let mut depth_resolve_info = vk::SubpassDescriptionDepthStencilResolve::default()
        .depth_resolve_mode(vk::ResolveModeFlags::SAMPLE_ZERO)
        .stencil_resolve_mode(vk::ResolveModeFlags::NONE)
        .depth_stencil_resolve_attachment(&depth_resolve_ref);
    // One bit per view: multiview (core 1.1) repeats every draw for each layer.
    let view_mask = (1u32 << view_count) - 1;
    let mut subpass = vk::SubpassDescription2::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .view_mask(view_mask)
        .color_attachments(&colour_ref)
        .depth_stencil_attachment(&depth_ref);
    if msaa {
        subpass = subpass.resolve_attachments(&resolve_ref);
        if f.keep_depth {
            subpass = subpass.push_next(&mut depth_resolve_info);
        }
    }
    let subpasses = [subpass];
    // The targets are shared by the frames in flight: wait for the previous frame's writes and its copies out of
    // the result and the kept depth (transfer) before clearing them; after the pass, both are read by a transfer
    // (a copy out, a readback, a mirror's blit). Images someone else owns are handed over by their owner (for
    // OpenXR, its wait on the swapchain image before this frame and the release after its submission).
    // Resolves, of depth too, run in the colour-output stage as colour writes.
    let deps = [
        vk::SubpassDependency2::default()
            .src_subpass(vk::SUBPASS_EXTERNAL)
            .dst_subpass(0)
            .src_stage_mask(
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
                    | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS
                    | vk::PipelineStageFlags::TRANSFER,
            )
            .dst_stage_mask(
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS,
            )
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE)
            .dst_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE),
        vk::SubpassDependency2::default()
            .src_subpass(0)
            .dst_subpass(vk::SUBPASS_EXTERNAL)
            .src_stage_mask(
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
            )
            .dst_stage_mask(vk::PipelineStageFlags::TRANSFER)
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ),
    ];
    let correlation = [view_mask];
    let info = vk::RenderPassCreateInfo2::default()
        .attachments(&attachments[..used])
        .subpasses(&subpasses)
        .dependencies(&deps)
        .correlated_view_masks(&correlation);
    // SAFETY: valid 1.2 device; the info outlives the call.
    unsafe { device.create_render_pass2(&info, None) }.ctx("vkCreateRenderPass2 (main)")
}

pub(crate) struct PipelineDesc {
    pub vs: Stage,
    pub fs: Option<Stage>,
    pub layout: vk::PipelineLayout,
    pub render_pass: vk::RenderPass,
    pub samples: vk::SampleCountFlags,
    pub cull: vk::CullModeFlags,
    /// Slope-scaled depth bias, for the shadow map.
    pub depth_bias: bool,
}

/// A pipeline with no vertex input (shaders build geometry from vertex and instance indices), dynamic viewport
/// and scissor, depth test on.
pub(crate) fn graphics_pipeline(device: &ash::Device, d: &PipelineDesc) -> Result<vk::Pipeline, RenderError> {
    let mut stages = vec![vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::VERTEX)
        .module(d.vs.module)
        .name(d.vs.entry)];
    if let Some(fs) = d.fs {
        stages.push(
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(fs.module)
                .name(fs.entry),
        );
    }
    let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
    let assembly = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let viewport = vk::PipelineViewportStateCreateInfo::default()
        .viewport_count(1)
        .scissor_count(1);
    let raster = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(d.cull)
        .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
        .line_width(1.0)
        .depth_bias_enable(d.depth_bias)
        .depth_bias_constant_factor(if d.depth_bias { 1.5 } else { 0.0 })
        .depth_bias_slope_factor(if d.depth_bias { 2.0 } else { 0.0 });
    let multisample = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(d.samples);
    let depth = vk::PipelineDepthStencilStateCreateInfo::default()
        .depth_test_enable(true)
        .depth_write_enable(true)
        .depth_compare_op(vk::CompareOp::LESS);
    let blend_attachment =
        [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
    let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(if d.fs.is_some() {
        &blend_attachment[..]
    } else {
        &[]
    });
    let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
    let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
    let info = vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(&vertex_input)
        .input_assembly_state(&assembly)
        .viewport_state(&viewport)
        .rasterization_state(&raster)
        .multisample_state(&multisample)
        .depth_stencil_state(&depth)
        .color_blend_state(&blend)
        .dynamic_state(&dynamic)
        .layout(d.layout)
        .render_pass(d.render_pass)
        .subpass(0);
    // SAFETY: valid device; all referenced objects are alive.
    let pipelines = unsafe { device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
    pipelines.map(|p| p[0]).map_err(|(_, result)| RenderError::Vulkan {
        what: "vkCreateGraphicsPipelines",
        result,
    })
}
