//! [`Renderer`]: the frame loop shared by every output (offscreen readback, window, XR images). A frame is
//! `begin_frame` (wait for this slot's previous use, write the mapped buffers, record the shadow and main passes)
//! → the output records its copy/blit into the returned command buffer → `submit`. Two frames in flight, each
//! with its own command buffer, fence, uniform and box buffers and timestamp queries; everything is made once, so
//! a steady-state frame allocates nothing.

use ash::vk;
use glam::Vec3;

use super::casters::Casters;
use super::device::Gpu;
use super::draw_order::DrawOrder;
use super::error::{RenderError, VkContext};
use super::external_pass::{ExternalPass, ExternalTarget};
use super::ground::GROUND_VERTICES;
use super::instances::{
    boxes_needed, gpu_frame, split_views, validate, write_boxes, GpuBox, GpuFrame, WrittenBoxes, GPU_BOX_BYTES,
    GPU_FRAME_BYTES, INITIAL_BOX_CAPACITY,
};
use super::memory::{create_buffer, destroy_buffer, Access, Buffer};
use super::pipeline::{descriptor_layout, graphics_pipeline, MainFormats, MainPass, PipelineDesc, Shaders};
use super::scene_data::{FrameInput, INITIAL_CUBE_CAPACITY, MAX_VIEWS};
use super::shadow::{light_view_proj, Shadow, SHADOW_SIZE_PX};
use super::targets::Targets;

/// Frames the CPU may record ahead of the GPU.
pub const FRAMES_IN_FLIGHT: usize = 2;

/// Colour format of the main pass's result: sRGB, so shaders write linear light and the bytes are display-ready.
pub const RESULT_FORMAT: vk::Format = vk::Format::R8G8B8A8_SRGB;

/// Sky colour behind everything (linear RGB).
const CLEAR_RGB: [f32; 3] = [0.32, 0.45, 0.62];

/// Timestamp queries of a frame, by index: the start, after the shadow pass, after the main pass (with its
/// resolve), and the end (after whatever the output recorded). Mesa 25.0's lavapipe writes a timestamp recorded
/// after a multiview pass into one query per view of that pass (as if still inside it), so a pool with no room
/// past such a query overflows and the driver's queue thread segfaults (docs/mesa-multiview-crash.md, reproduced by
/// `engine/examples/multiview_clear.rs`): each query written after the main pass gets `MAX_VIEWS` slots. The slack
/// is never read.
const QUERY_START: u32 = 0;
const QUERY_AFTER_SHADOW: u32 = 1;
const QUERY_AFTER_MAIN: u32 = 2;
const QUERY_END: u32 = QUERY_AFTER_MAIN + MAX_VIEWS as u32;
const QUERY_POOL_SIZE: u32 = QUERY_END + MAX_VIEWS as u32;

/// Pipeline statistics gathered per pass when the device allows them: vertex and fragment shader invocations
/// (fragment invocations over the pixels drawn show the overdraw), one query for the shadow pass, one for the main.
const STATISTICS: vk::QueryPipelineStatisticFlags = vk::QueryPipelineStatisticFlags::from_raw(
    vk::QueryPipelineStatisticFlags::VERTEX_SHADER_INVOCATIONS.as_raw()
        | vk::QueryPipelineStatisticFlags::FRAGMENT_SHADER_INVOCATIONS.as_raw(),
);
const STATISTICS_QUERIES: u32 = 2;

/// What a shadow map was drawn from: the cubes' generation (`casters.rs`), the other boxes written (count and
/// checksum), whether the map was split per view, and the light's transform (its bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ShadowKey {
    cubes: u64,
    boxes: WrittenBoxes,
    split: bool,
    light: [u32; 16],
}

/// A box's triangles: two per face over the face's four corners (`box_corner` in shaders/scene.wgsl), so the
/// vertex shader runs 24 times a box rather than 36.
const BOX_INDICES: [u16; 36] = {
    let mut indices = [0u16; 36];
    let mut face = 0;
    while face < 6 {
        let base = 4 * face as u16;
        let quad = [0, 1, 2, 0, 2, 3];
        let mut k = 0;
        while k < 6 {
            indices[6 * face + k] = base + quad[k];
            k += 1;
        }
        face += 1;
    }
    indices
};

/// Frames between two that write timestamps (and statistics), unless [`Renderer::time_every_frame`]: reading query
/// results back costs lavapipe about 16 µs, as much as recording the frame's passes, for a figure an overlay shows a
/// few times a second.
const TIMED_EVERY_FRAMES: u64 = 8;

/// Bytes of one entry of the cubes' draw order.
const ORDER_ENTRY_BYTES: u64 = std::mem::size_of::<u32>() as u64;

/// GPU time of one finished frame, per pass (ms), from its timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassTimes {
    /// The shadow map: cleared and the casters drawn.
    pub shadow_ms: f32,
    /// The main pass: ground and boxes in every view, with the MSAA resolve.
    pub main_ms: f32,
    /// What the output recorded after the main pass (a readback copy, the copy into XR images, a blit).
    pub output_ms: f32,
    pub total_ms: f32,
}

/// Shader invocations of one finished frame, per pass ([`Renderer::pass_statistics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStatistics {
    pub shadow_vertex_invocations: u64,
    pub shadow_fragment_invocations: u64,
    pub main_vertex_invocations: u64,
    pub main_fragment_invocations: u64,
}

struct FrameSlot {
    /// The shadow and main passes as last recorded, for an untimed frame (0) and a timed one (1): submitted again
    /// as they are while what they record stays the same — only the buffers' contents change from frame to frame —
    /// and recorded again when it does not ([`Recording`]).
    passes: [vk::CommandBuffer; 2],
    recorded: [Option<Recording>; 2],
    /// What the caller records after the passes (copies out, blits), begun fresh each frame and submitted after
    /// them.
    output: vk::CommandBuffer,
    fence: vk::Fence,
    uniforms: Buffer,
    boxes: Buffer,
    /// Box records `boxes` holds, and the cubes' draw order entries `order` holds.
    box_capacity: usize,
    /// The cubes' draw order (`u32` indices), as of `order_version`.
    order: Buffer,
    order_version: u64,
    set: vk::DescriptorSet,
    queries: vk::QueryPool,
    /// Pipeline statistics (shadow, main) when the device has them.
    statistics: Option<vk::QueryPool>,
    /// Submitted at least once since creation (its timestamps can be read after its fence).
    submitted: bool,
    /// Its last frame wrote timestamps (and statistics): see [`TIMED_EVERY_FRAMES`].
    timed: bool,
}

/// Everything a recording of the passes depends on besides the buffers' contents: equal, the last recording is
/// submitted again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Recording {
    main_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    box_count: u32,
    shadow_boxes: Option<u32>,
    statistics: bool,
    /// [`Renderer::resources_changed`] when recorded: a new target, pipeline or buffer since makes every recording
    /// stale (their handles may even be reused).
    resources: u64,
}

/// The single-sampled image the last recorded main pass drew into: one layer per view, in
/// `TRANSFER_SRC_OPTIMAL` once the pass has run, format [`RESULT_FORMAT`].
#[derive(Clone, Copy, Debug)]
pub struct ResultImage {
    pub image: vk::Image,
    pub extent: vk::Extent2D,
    pub layers: u32,
    /// The frame's depth, single-sampled, same extent and layers, in `TRANSFER_SRC_OPTIMAL` once the pass has
    /// run, when the renderer keeps it ([`Renderer::new_keeping_depth`]); values 0 (near) to 1 (far) between
    /// `view_depth::NEAR_M` and `FAR_M`.
    pub depth: Option<vk::Image>,
    pub depth_format: vk::Format,
}

/// The scene renderer: shadow pass + multiview main pass into its own layered target.
pub struct Renderer {
    device: ash::Device,
    queue: vk::Queue,
    memory_properties: vk::PhysicalDeviceMemoryProperties,
    formats: MainFormats,
    shaders: Shaders,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    descriptor_pool: vk::DescriptorPool,
    command_pool: vk::CommandPool,
    /// [`BOX_INDICES`], written once.
    box_indices: Buffer,
    shadow: Shadow,
    shadow_pipeline: vk::Pipeline,
    main: MainPass,
    targets: Targets,
    /// The main pass into images someone else owns, once a frame has asked for it ([`Renderer::begin_frame_into`]).
    external: Option<ExternalPass>,
    frames: Vec<FrameSlot>,
    current: usize,
    /// The slot `begin_frame` recorded into and `submit` has not sent yet.
    recording: Option<usize>,
    timestamp_period_ns: Option<f32>,
    pipeline_statistics: bool,
    /// Frames begun, and how often one writes timestamps.
    frames_begun: u64,
    /// Counts the changes of targets, pipelines and buffers that the passes' recordings name.
    resources_changed: u64,
    /// Times the passes were recorded (the other frames submitted an earlier recording again).
    passes_recorded: u64,
    timed_every: u64,
    /// The cubes' draw order, nearest first (`draw_order.rs`), and what the cubes add up to (`casters.rs`).
    draw_order: DrawOrder,
    casters: Casters,
    /// What the shadow map holds (the last submitted frame that drew it), and what the frame being recorded drew
    /// into it: a frame whose boxes and light match the map's draws no shadow pass.
    shadow_drawn: Option<ShadowKey>,
    shadow_recording: Option<ShadowKey>,
    pass_times: Option<PassTimes>,
    statistics: Option<PassStatistics>,
}

impl Renderer {
    /// A renderer drawing `view_count` views of `width` × `height` pixels each on `gpu`'s device and queue. The
    /// `Gpu` must outlive the renderer.
    pub fn new(gpu: &Gpu, width: u32, height: u32, view_count: u32) -> Result<Renderer, RenderError> {
        Renderer::with_depth(gpu, width, height, view_count, false)
    }

    /// [`Renderer::new`], keeping each frame's depth after the main pass (resolved to one sample with MSAA) for a
    /// compositor's depth layer: [`ResultImage::depth`], copied out by `record_depth_copy_into`.
    pub fn new_keeping_depth(gpu: &Gpu, width: u32, height: u32, view_count: u32) -> Result<Renderer, RenderError> {
        Renderer::with_depth(gpu, width, height, view_count, true)
    }

    fn with_depth(
        gpu: &Gpu,
        width: u32,
        height: u32,
        view_count: u32,
        keep_depth: bool,
    ) -> Result<Renderer, RenderError> {
        Renderer::with_samples(gpu, width, height, view_count, keep_depth, gpu.info.msaa_samples)
    }

    /// [`Renderer::new`] (or [`Renderer::new_keeping_depth`] with `keep_depth`) drawing with `samples` per pixel
    /// rather than the device's best: 1, or up to [`GpuInfo::msaa_samples`](super::GpuInfo) (`render-bench --msaa`).
    pub fn with_samples(
        gpu: &Gpu,
        width: u32,
        height: u32,
        view_count: u32,
        keep_depth: bool,
        samples: vk::SampleCountFlags,
    ) -> Result<Renderer, RenderError> {
        check_size(width, height, view_count)?;
        if samples.as_raw().count_ones() != 1 || samples.as_raw() > gpu.info.msaa_samples.as_raw() {
            return Err(RenderError::Input(format!(
                "{} samples per pixel (this device draws 1 to {})",
                samples.as_raw(),
                gpu.info.msaa_samples.as_raw()
            )));
        }
        let device = gpu.device.clone();
        let formats = MainFormats {
            colour: RESULT_FORMAT,
            depth: gpu.info.depth_format,
            samples,
            keep_depth,
        };
        let shaders = Shaders::new(&device)?;
        let set_layout = descriptor_layout(&device)?;
        let layouts = [set_layout];
        let layout_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
        // SAFETY: valid device; every object made here is destroyed in Drop.
        let pipeline_layout =
            unsafe { device.create_pipeline_layout(&layout_info, None) }.ctx("vkCreatePipelineLayout")?;
        let shadow = Shadow::new(&device, &gpu.memory_properties, gpu.info.depth_format)?;
        let shadow_pipeline = graphics_pipeline(
            &device,
            &PipelineDesc {
                vs: shaders.vs_shadow,
                fs: None,
                layout: pipeline_layout,
                render_pass: shadow.render_pass,
                samples: vk::SampleCountFlags::TYPE_1,
                // A closed box's far side is always behind its near side from the light: half the fragments.
                cull: vk::CullModeFlags::BACK,
                depth_bias: true,
            },
        )?;
        let main = MainPass::new(&device, &shaders, pipeline_layout, formats, view_count)?;
        let extent = vk::Extent2D { width, height };
        let targets = Targets::new(
            &device,
            &gpu.memory_properties,
            formats,
            main.render_pass,
            extent,
            view_count,
        )?;
        let descriptor_pool = create_descriptor_pool(&device)?;
        let box_indices = create_buffer(
            &device,
            &gpu.memory_properties,
            std::mem::size_of_val(&BOX_INDICES) as u64,
            vk::BufferUsageFlags::INDEX_BUFFER,
            Access::Upload,
        )?;
        // SAFETY: mapped, coherent, and exactly the indices' size; no GPU work uses it yet.
        unsafe {
            std::ptr::copy_nonoverlapping(BOX_INDICES.as_ptr(), box_indices.mapped as *mut u16, BOX_INDICES.len())
        };
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(gpu.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: as above.
        let command_pool = unsafe { device.create_command_pool(&pool_info, None) }.ctx("vkCreateCommandPool")?;
        let mut renderer = Renderer {
            device,
            queue: gpu.queue,
            memory_properties: gpu.memory_properties,
            formats,
            shaders,
            set_layout,
            pipeline_layout,
            descriptor_pool,
            command_pool,
            box_indices,
            shadow,
            shadow_pipeline,
            main,
            targets,
            external: None,
            frames: Vec::with_capacity(FRAMES_IN_FLIGHT),
            current: 0,
            recording: None,
            timestamp_period_ns: gpu.info.timestamp_period_ns,
            pipeline_statistics: gpu.info.pipeline_statistics,
            frames_begun: 0,
            resources_changed: 0,
            passes_recorded: 0,
            timed_every: TIMED_EVERY_FRAMES,
            draw_order: DrawOrder::with_capacity(INITIAL_CUBE_CAPACITY),
            casters: Casters::default(),
            shadow_drawn: None,
            shadow_recording: None,
            pass_times: None,
            statistics: None,
        };
        for _ in 0..FRAMES_IN_FLIGHT {
            let slot = renderer.create_slot()?;
            renderer.frames.push(slot);
        }
        Ok(renderer)
    }

    fn create_slot(&self) -> Result<FrameSlot, RenderError> {
        let d = &self.device;
        let props = &self.memory_properties;
        let uniforms = create_buffer(
            d,
            props,
            GPU_FRAME_BYTES,
            vk::BufferUsageFlags::UNIFORM_BUFFER,
            Access::Upload,
        )?;
        let boxes = create_buffer(
            d,
            props,
            GPU_BOX_BYTES * INITIAL_BOX_CAPACITY as u64,
            vk::BufferUsageFlags::STORAGE_BUFFER,
            Access::Upload,
        )?;
        let order = create_buffer(
            d,
            props,
            ORDER_ENTRY_BYTES * INITIAL_BOX_CAPACITY as u64,
            vk::BufferUsageFlags::STORAGE_BUFFER,
            Access::Upload,
        )?;
        let cmd_info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(3);
        let layouts = [self.set_layout];
        let set_info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.descriptor_pool)
            .set_layouts(&layouts);
        let query_info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(QUERY_POOL_SIZE);
        // SAFETY: valid device and pools; destroyed in Drop.
        unsafe {
            let cmds = d.allocate_command_buffers(&cmd_info).ctx("vkAllocateCommandBuffers")?;
            let fence = d
                .create_fence(
                    &vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED),
                    None,
                )
                .ctx("vkCreateFence")?;
            let set = d.allocate_descriptor_sets(&set_info).ctx("vkAllocateDescriptorSets")?[0];
            let queries = d.create_query_pool(&query_info, None).ctx("vkCreateQueryPool")?;
            let uniform_info = [vk::DescriptorBufferInfo {
                buffer: uniforms.buffer,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }];
            let box_info = [vk::DescriptorBufferInfo {
                buffer: boxes.buffer,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }];
            let image_info = [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: self.shadow.image.view,
                image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            }];
            let order_info = [vk::DescriptorBufferInfo {
                buffer: order.buffer,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }];
            let sampler_info = [vk::DescriptorImageInfo {
                sampler: self.shadow.sampler,
                image_view: vk::ImageView::null(),
                image_layout: vk::ImageLayout::UNDEFINED,
            }];
            let write = |binding, ty| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(binding)
                    .descriptor_type(ty)
            };
            let writes = [
                write(0, vk::DescriptorType::UNIFORM_BUFFER).buffer_info(&uniform_info),
                write(1, vk::DescriptorType::STORAGE_BUFFER).buffer_info(&box_info),
                write(2, vk::DescriptorType::SAMPLED_IMAGE).image_info(&image_info),
                write(3, vk::DescriptorType::SAMPLER).image_info(&sampler_info),
                write(4, vk::DescriptorType::STORAGE_BUFFER).buffer_info(&order_info),
            ];
            d.update_descriptor_sets(&writes, &[]);
            Ok(FrameSlot {
                passes: [cmds[0], cmds[1]],
                recorded: [None; 2],
                output: cmds[2],
                fence,
                uniforms,
                boxes,
                box_capacity: INITIAL_BOX_CAPACITY,
                order,
                order_version: 0,
                set,
                queries,
                statistics: None,
                submitted: false,
                timed: false,
            })
        }
    }

    /// Changes the per-view size or the number of views (waits for the GPU; not for every frame).
    pub fn resize(&mut self, width: u32, height: u32, view_count: u32) -> Result<(), RenderError> {
        check_size(width, height, view_count)?;
        let extent = vk::Extent2D { width, height };
        if extent == self.targets.extent && view_count == self.targets.layers {
            return Ok(());
        }
        self.wait_idle();
        self.resources_changed += 1;
        // The external pass's framebuffers use the targets (and its pass, the view count): made again on next use.
        if let Some(mut external) = self.external.take() {
            // SAFETY: the GPU is idle (waited above).
            unsafe { external.destroy(&self.device) };
        }
        if view_count != self.main.view_count {
            let main = MainPass::new(
                &self.device,
                &self.shaders,
                self.pipeline_layout,
                self.formats,
                view_count,
            )?;
            self.main.destroy(&self.device);
            self.main = main;
        }
        let targets = Targets::new(
            &self.device,
            &self.memory_properties,
            self.formats,
            self.main.render_pass,
            extent,
            view_count,
        )?;
        self.targets.destroy(&self.device);
        self.targets = targets;
        Ok(())
    }

    /// Starts a frame: waits until this slot's previous frame is done, writes the frame's data and readies the
    /// shadow pass and the main pass (recorded, or the slot's earlier recording of the same passes kept to submit
    /// again: [`Renderer::passes_recorded`]). The caller may record more into the returned command buffer, which
    /// runs after the passes (reading [`Renderer::result_image`]), and must then call [`Renderer::submit`]. A
    /// different view count than the renderer has resizes it first.
    pub fn begin_frame(&mut self, input: &FrameInput) -> Result<vk::CommandBuffer, RenderError> {
        validate(input)?;
        self.begin(input, None)
    }

    /// Whether [`Renderer::begin_frame_into`] can resolve into colour images of `colour` format and depth images of
    /// `depth` format: the pass's own formats, and a depth image exactly when the renderer keeps its depth
    /// ([`Renderer::new_keeping_depth`]). Otherwise draw with [`Renderer::begin_frame`] and copy
    /// (`record_copy_into`), which converts colour formats.
    pub fn can_resolve_into(&self, colour: vk::Format, depth: Option<vk::Format>) -> bool {
        colour == self.formats.colour && depth == self.formats.keep_depth.then_some(self.formats.depth)
    }

    /// [`Renderer::begin_frame`], but the main pass resolves straight into `target` — colour, and depth when the
    /// renderer keeps it, one layer per view — which it leaves in the layouts
    /// `target` names (for OpenXR's swapchain images: `COLOR_ATTACHMENT_OPTIMAL`,
    /// `DEPTH_STENCIL_ATTACHMENT_OPTIMAL`); their old contents are dropped. No copy: the frame's work ends with the
    /// main pass. Resizes to `target`'s extent first. [`Renderer::result_image`] is not written by such a frame.
    /// Refused (an error, nothing recorded) where [`Renderer::can_resolve_into`] says no or the layers do not
    /// match the views.
    ///
    /// # Safety
    /// `target`'s images are alive, belong to this renderer's device, have the layers named, and are the caller's
    /// for this frame; an image destroyed since an earlier frame used it must not come back under the same handle
    /// before [`Renderer::forget_external_images`] (views of it are kept).
    pub unsafe fn begin_frame_into(
        &mut self,
        input: &FrameInput,
        target: &ExternalTarget,
    ) -> Result<vk::CommandBuffer, RenderError> {
        validate(input)?;
        let colour = &target.colour;
        let depth_format = target.depth.map(|d| d.format);
        if input.views.len() as u32 != colour.layers
            || target
                .depth
                .is_some_and(|d| d.layers != colour.layers || d.extent != colour.extent)
        {
            return Err(RenderError::Input(format!(
                "{} views for an image of {} layers (depth: {:?})",
                input.views.len(),
                colour.layers,
                target.depth.map(|d| d.layers)
            )));
        }
        if !self.can_resolve_into(colour.format, depth_format) {
            return Err(RenderError::Input(format!(
                "cannot resolve into {:?} (depth {depth_format:?}): the pass draws {:?} (depth {:?}, kept: {})",
                colour.format, self.formats.colour, self.formats.depth, self.formats.keep_depth
            )));
        }
        if self.recording.is_some() {
            return Err(RenderError::Input("begin_frame called twice without submit".into()));
        }
        self.resize(colour.extent.width, colour.extent.height, colour.layers)?;
        let layouts = (
            colour.layout,
            target
                .depth
                .map_or(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL, |d| d.layout),
        );
        if self
            .external
            .as_ref()
            .is_some_and(|p| !p.ends_in(layouts) || p.is_full())
        {
            self.forget_external_images();
        }
        let external = match &mut self.external {
            Some(e) => e,
            None => self.external.insert(ExternalPass::new(
                &self.device,
                self.formats,
                self.targets.layers,
                layouts,
            )?),
        };
        // SAFETY: per the function's contract; a full cache was emptied above after the GPU went idle.
        let framebuffer = unsafe { external.framebuffer(&self.device, &self.targets, target) }?;
        let pass = external.render_pass;
        self.begin(input, Some((pass, framebuffer)))
    }

    /// Drops the views and framebuffers kept for images someone else owns (waits for the GPU): call when those
    /// images are destroyed (an XR swapchain made again), before handles may be reused.
    pub fn forget_external_images(&mut self) {
        if let Some(mut external) = self.external.take() {
            self.wait_idle();
            self.resources_changed += 1;
            // SAFETY: the GPU is idle (waited above).
            unsafe { external.destroy(&self.device) };
        }
    }

    /// Both ways into a frame: into the renderer's own targets (`main` is `None`) or with another main pass and
    /// framebuffer over the same targets.
    fn begin(
        &mut self,
        input: &FrameInput,
        main: Option<(vk::RenderPass, vk::Framebuffer)>,
    ) -> Result<vk::CommandBuffer, RenderError> {
        if self.recording.is_some() {
            return Err(RenderError::Input("begin_frame called twice without submit".into()));
        }
        let views = input.views.len() as u32;
        if views != self.targets.layers {
            self.resize(self.targets.extent.width, self.targets.extent.height, views)?;
        }
        let slot_index = self.current;
        self.wait_slot(slot_index)?;
        let needed = boxes_needed(input);
        if needed > self.frames[slot_index].box_capacity {
            self.grow_boxes(slot_index, needed)?;
        }
        let slot = &mut self.frames[slot_index];
        // SAFETY: the slot's fence has signalled, so the GPU is done with its buffers; the box buffer is mapped and
        // holds `box_capacity` records.
        unsafe {
            self.casters
                .write(input.cubes, slot.boxes.mapped as *mut GpuBox, slot.box_capacity)
        };
        let split = split_views(input.views.len(), self.casters.flags);
        let light = light_view_proj(input, self.casters.bounds);
        let eye = input.views[0].eye_position();
        // Every view looks the same way give or take (eyes, or a camera): the first one's forward orders them all.
        let forward = -input.views[0].view.row(2).truncate().normalize_or(Vec3::NEG_Z);
        self.draw_order
            .update(input.cubes, eye, forward, self.casters.generation);
        let (order, order_version) = (self.draw_order.order(), self.draw_order.version);
        let slot = &mut self.frames[slot_index];
        // SAFETY: the slot's fence has signalled, so the GPU is done with its buffers; they are mapped, coherent
        // and sized for one GpuFrame, `box_capacity` GpuBoxes and as many order entries.
        let written = unsafe {
            let written = write_boxes(input, slot.boxes.mapped as *mut GpuBox, slot.box_capacity);
            (slot.uniforms.mapped as *mut GpuFrame).write(gpu_frame(
                input,
                light,
                SHADOW_SIZE_PX,
                written.count,
                split,
            ));
            if slot.order_version != order_version {
                let n = order.len().min(slot.box_capacity);
                std::ptr::copy_nonoverlapping(order.as_ptr(), slot.order.mapped as *mut u32, n);
                slot.order_version = order_version;
            }
            written
        };
        let box_count = written.count;
        // A split frame draws every box into both halves of the shadow map (the shader drops a box from the
        // half of the view it is not shown in).
        let shadow_boxes = if split { 2 * box_count } else { box_count };
        let key = ShadowKey {
            cubes: self.casters.generation,
            boxes: written,
            split,
            light: light.to_cols_array().map(f32::to_bits),
        };
        // Nothing that casts a shadow moved and the light stayed: the map already holds this frame's shadows.
        let draw_shadow = self.shadow_drawn != Some(key);
        let timed = self.frames_begun.is_multiple_of(self.timed_every);
        self.frames_begun += 1;
        let (main_pass, framebuffer) = main.unwrap_or((self.main.render_pass, self.targets.framebuffer));
        let recording = Recording {
            main_pass,
            framebuffer,
            box_count,
            shadow_boxes: draw_shadow.then_some(shadow_boxes),
            statistics: timed && self.frames[slot_index].statistics.is_some(),
            resources: self.resources_changed,
        };
        let variant = usize::from(timed);
        if self.frames[slot_index].recorded[variant] != Some(recording) {
            self.frames[slot_index].recorded[variant] = None;
            // SAFETY: the command buffer is not in use (fence waited) and comes from a resettable pool.
            unsafe { self.record(slot_index, variant, &recording, timed) }?;
            self.frames[slot_index].recorded[variant] = Some(recording);
            self.passes_recorded += 1;
        }
        let slot = &mut self.frames[slot_index];
        slot.timed = timed;
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the output command buffer is not in use (fence waited) and comes from a resettable pool.
        unsafe {
            self.device
                .reset_command_buffer(slot.output, vk::CommandBufferResetFlags::empty())
                .ctx("vkResetCommandBuffer")?;
            self.device
                .begin_command_buffer(slot.output, &begin)
                .ctx("vkBeginCommandBuffer")?;
        }
        self.shadow_recording = draw_shadow.then_some(key);
        self.recording = Some(slot_index);
        Ok(slot.output)
    }

    /// Replaces slot `index`'s box buffer (its fence waited) by one for at least `needed` records — the next power of
    /// two, so a scene that keeps growing reallocates a few times, not every frame — and points its descriptor set
    /// at it.
    fn grow_boxes(&mut self, index: usize, needed: usize) -> Result<(), RenderError> {
        let capacity = needed.next_power_of_two();
        let buffer = |entry_bytes: u64| {
            create_buffer(
                &self.device,
                &self.memory_properties,
                entry_bytes * capacity as u64,
                vk::BufferUsageFlags::STORAGE_BUFFER,
                Access::Upload,
            )
        };
        let boxes = buffer(GPU_BOX_BYTES)?;
        let order = match buffer(ORDER_ENTRY_BYTES) {
            Ok(o) => o,
            Err(e) => {
                destroy_buffer(&self.device, &boxes);
                return Err(e);
            }
        };
        tracing::debug!(slot = index, capacity, "box buffers grown");
        // The slot's descriptor set changes below: its recordings are stale.
        self.resources_changed += 1;
        let slot = &mut self.frames[index];
        destroy_buffer(&self.device, &slot.boxes);
        destroy_buffer(&self.device, &slot.order);
        slot.boxes = boxes;
        slot.order = order;
        slot.box_capacity = capacity;
        // The new order buffer holds nothing yet.
        slot.order_version = 0;
        let info = |b: &Buffer| {
            [vk::DescriptorBufferInfo {
                buffer: b.buffer,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }]
        };
        let (box_info, order_info) = (info(&slot.boxes), info(&slot.order));
        let write = |binding, info| {
            vk::WriteDescriptorSet::default()
                .dst_set(slot.set)
                .dst_binding(binding)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(info)
        };
        // SAFETY: the slot's fence has signalled, so no command buffer using the set is pending.
        unsafe {
            self.device
                .update_descriptor_sets(&[write(1, &box_info), write(4, &order_info)], &[])
        };
        Ok(())
    }

    /// Waits for the slot's last submission and reads its GPU time per pass (and its statistics).
    fn wait_slot(&mut self, index: usize) -> Result<(), RenderError> {
        let slot = &self.frames[index];
        // SAFETY: valid fence and query pools of this device.
        unsafe {
            self.device
                .wait_for_fences(&[slot.fence], true, u64::MAX)
                .ctx("vkWaitForFences")?;
            if !slot.submitted || !slot.timed {
                return Ok(());
            }
            if let Some(period_ns) = self.timestamp_period_ns {
                // The three written in a row, then the end: the slack past a query is never written, and asking
                // for an unwritten query would read as not ready.
                let mut ticks = [0u64; QUERY_POOL_SIZE as usize];
                let flags = vk::QueryResultFlags::TYPE_64;
                let read_start = self.device.get_query_pool_results(
                    slot.queries,
                    QUERY_START,
                    &mut ticks[..=QUERY_AFTER_MAIN as usize],
                    flags,
                );
                let read_end = self.device.get_query_pool_results(
                    slot.queries,
                    QUERY_END,
                    &mut ticks[QUERY_END as usize..=QUERY_END as usize],
                    flags,
                );
                if read_start.is_ok() && read_end.is_ok() {
                    let ms = |from: u32, to: u32| {
                        ticks[to as usize].wrapping_sub(ticks[from as usize]) as f32 * period_ns * 1e-6
                    };
                    self.pass_times = Some(PassTimes {
                        shadow_ms: ms(QUERY_START, QUERY_AFTER_SHADOW),
                        main_ms: ms(QUERY_AFTER_SHADOW, QUERY_AFTER_MAIN),
                        output_ms: ms(QUERY_AFTER_MAIN, QUERY_END),
                        total_ms: ms(QUERY_START, QUERY_END),
                    });
                }
            }
            if let Some(pool) = slot.statistics {
                // Two counters per query, in the order of their bits: vertex, then fragment invocations.
                let mut counts = [[0u64; 2]; STATISTICS_QUERIES as usize];
                let read = self
                    .device
                    .get_query_pool_results(pool, 0, &mut counts, vk::QueryResultFlags::TYPE_64);
                if read.is_ok() {
                    self.statistics = Some(PassStatistics {
                        shadow_vertex_invocations: counts[0][0],
                        shadow_fragment_invocations: counts[0][1],
                        main_vertex_invocations: counts[1][0],
                        main_fragment_invocations: counts[1][1],
                    });
                }
            }
        }
        Ok(())
    }

    /// Records slot `index`'s passes (command buffer `variant`) as `recording` says: the shadow pass when
    /// `recording.shadow_boxes` is some (else the map is kept as it is), the main pass into its framebuffer, and
    /// with `timed` the timestamps (and statistics, when collected).
    ///
    /// # Safety
    /// The command buffer is not in use by the GPU.
    unsafe fn record(
        &self,
        index: usize,
        variant: usize,
        recording: &Recording,
        timed: bool,
    ) -> Result<(), RenderError> {
        let d = &self.device;
        let slot = &self.frames[index];
        let cmd = slot.passes[variant];
        let statistics = slot.statistics.filter(|_| recording.statistics);
        let (box_count, shadow_boxes) = (recording.box_count, recording.shadow_boxes);
        let timestamp = |stage, query| {
            if timed {
                // SAFETY: cmd is recording; the query is in the slot's pool, reset below.
                unsafe { d.cmd_write_timestamp(cmd, stage, slot.queries, query) };
            }
        };
        // SAFETY: per the function's contract; all bound objects are alive.
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .ctx("vkResetCommandBuffer")?;
            // Submitted again while nothing it records changes: not one-time.
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .ctx("vkBeginCommandBuffer")?;
            if timed {
                d.cmd_reset_query_pool(cmd, slot.queries, 0, QUERY_POOL_SIZE);
            }
            if let Some(pool) = statistics {
                d.cmd_reset_query_pool(cmd, pool, 0, STATISTICS_QUERIES);
            }
            timestamp(vk::PipelineStageFlags::TOP_OF_PIPE, QUERY_START);
            if let Some(pool) = statistics {
                d.cmd_begin_query(cmd, pool, 0, vk::QueryControlFlags::empty());
            }

            let shadow_extent = vk::Extent2D {
                width: SHADOW_SIZE_PX,
                height: SHADOW_SIZE_PX,
            };
            let clear_depth = vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
            };
            let shadow_clear = [clear_depth];
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(self.shadow.render_pass)
                .framebuffer(self.shadow.framebuffer)
                .render_area(shadow_extent.into())
                .clear_values(&shadow_clear);
            if let Some(shadow_boxes) = shadow_boxes {
                d.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
                set_viewport(d, cmd, shadow_extent);
                if shadow_boxes > 0 {
                    d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.shadow_pipeline);
                    self.bind_set(cmd, slot.set);
                    d.cmd_bind_index_buffer(cmd, self.box_indices.buffer, 0, vk::IndexType::UINT16);
                    d.cmd_draw_indexed(cmd, BOX_INDICES.len() as u32, shadow_boxes, 0, 0, 0);
                }
                d.cmd_end_render_pass(cmd);
            }
            if let Some(pool) = statistics {
                d.cmd_end_query(cmd, pool, 0);
            }
            timestamp(vk::PipelineStageFlags::BOTTOM_OF_PIPE, QUERY_AFTER_SHADOW);
            if let Some(pool) = statistics {
                d.cmd_begin_query(cmd, pool, 1, vk::QueryControlFlags::empty());
            }

            let sky = vk::ClearValue {
                color: vk::ClearColorValue {
                    float32: [CLEAR_RGB[0], CLEAR_RGB[1], CLEAR_RGB[2], 1.0],
                },
            };
            let clears = [sky, clear_depth, sky, clear_depth];
            let extent = self.targets.extent;
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(recording.main_pass)
                .framebuffer(recording.framebuffer)
                .render_area(extent.into())
                .clear_values(&clears[..self.targets.attachment_count()]);
            d.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
            set_viewport(d, cmd, extent);
            // Boxes first: they cover much of the ground, so its fragments fail the depth test early.
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.main.boxes);
            self.bind_set(cmd, slot.set);
            if box_count > 0 {
                d.cmd_bind_index_buffer(cmd, self.box_indices.buffer, 0, vk::IndexType::UINT16);
                d.cmd_draw_indexed(cmd, BOX_INDICES.len() as u32, box_count, 0, 0, 0);
            }
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.main.ground);
            d.cmd_draw(cmd, GROUND_VERTICES as u32, 1, 0, 0);
            d.cmd_end_render_pass(cmd);
            if let Some(pool) = statistics {
                d.cmd_end_query(cmd, pool, 1);
            }
            timestamp(vk::PipelineStageFlags::BOTTOM_OF_PIPE, QUERY_AFTER_MAIN);
            d.end_command_buffer(cmd).ctx("vkEndCommandBuffer")?;
        }
        Ok(())
    }

    /// Binds the frame's descriptor set (after a pipeline: older validation layers track sets per pipeline).
    fn bind_set(&self, cmd: vk::CommandBuffer, set: vk::DescriptorSet) {
        // SAFETY: cmd is recording; the set matches the pipeline layout.
        unsafe {
            self.device.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.pipeline_layout,
                0,
                &[set],
                &[],
            )
        };
    }

    /// Ends and submits the frame begun by [`Renderer::begin_frame`], waiting on `waits` (each at the paired
    /// stage) and signalling `signals`. Returns without waiting for the GPU.
    pub fn submit(
        &mut self,
        waits: &[vk::Semaphore],
        wait_stages: &[vk::PipelineStageFlags],
        signals: &[vk::Semaphore],
    ) -> Result<(), RenderError> {
        let Some(index) = self.recording.take() else {
            return Err(RenderError::Input("submit called without begin_frame".into()));
        };
        let slot = &mut self.frames[index];
        // The passes, then what the caller recorded after them: in one submission, so the passes' barriers and
        // render pass dependencies order the caller's commands after them as within one command buffer.
        let cmds = [slot.passes[usize::from(slot.timed)], slot.output];
        let info = vk::SubmitInfo::default()
            .wait_semaphores(waits)
            .wait_dst_stage_mask(wait_stages)
            .command_buffers(&cmds)
            .signal_semaphores(signals);
        // SAFETY: the passes were recorded (this frame or an earlier one with the same `Recording`, whose buffers
        // and targets are still the same objects) and the output begun by begin_frame; neither is pending (the
        // slot's fence was waited).
        unsafe {
            if slot.timed {
                self.device.cmd_write_timestamp(
                    slot.output,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    slot.queries,
                    QUERY_END,
                );
            }
            self.device.end_command_buffer(slot.output).ctx("vkEndCommandBuffer")?;
            self.device.reset_fences(&[slot.fence]).ctx("vkResetFences")?;
            self.device
                .queue_submit(self.queue, &[info], slot.fence)
                .ctx("vkQueueSubmit")?;
        }
        slot.submitted = true;
        if let Some(key) = self.shadow_recording.take() {
            self.shadow_drawn = Some(key);
        }
        self.current = (index + 1) % FRAMES_IN_FLIGHT;
        Ok(())
    }

    /// How many frames recorded the shadow and main passes; every other frame submitted an earlier recording of its
    /// slot again (same targets, box count, shadow pass or not, timestamps or not): the box records, uniforms and
    /// draw order change in place, so frames of moving cubes record nothing once each slot has its recordings.
    pub fn passes_recorded(&self) -> u64 {
        self.passes_recorded
    }

    /// The frame slot being recorded (between `begin_frame` and `submit`), else the next one.
    pub fn recording_slot(&self) -> usize {
        self.recording.unwrap_or(self.current)
    }

    /// The frame slot (0..FRAMES_IN_FLIGHT) the next `begin_frame` records into, for per-slot resources of an output
    /// (semaphores, deferred frees).
    pub fn next_slot(&self) -> usize {
        self.current
    }

    /// Drops the frame `begin_frame` recorded without submitting it (the swapchain went out of date); the next
    /// `begin_frame` reuses the slot.
    pub fn abandon_frame(&mut self) {
        self.recording = None;
        self.shadow_recording = None;
    }

    /// Waits until the most recently submitted frame has finished on the GPU (offscreen readback needs this).
    pub fn wait_last_submitted(&mut self) -> Result<(), RenderError> {
        let last = (self.current + FRAMES_IN_FLIGHT - 1) % FRAMES_IN_FLIGHT;
        self.wait_slot(last)
    }

    /// The image the main pass draws into (see [`ResultImage`]).
    pub fn result_image(&self) -> ResultImage {
        ResultImage {
            image: self.targets.resolved.image,
            extent: self.targets.extent,
            layers: self.targets.layers,
            depth: self.targets.kept_depth(self.formats.keep_depth),
            depth_format: self.formats.depth,
        }
    }

    /// GPU time of the most recent finished frame that wrote timestamps (ms: one in [`TIMED_EVERY_FRAMES`]); `None`
    /// before the first one or on a queue without timestamps.
    pub fn gpu_time_ms(&self) -> Option<f32> {
        self.pass_times.map(|t| t.total_ms)
    }

    /// GPU time per pass of the most recent finished frame; `None` as for [`Renderer::gpu_time_ms`].
    pub fn pass_times(&self) -> Option<PassTimes> {
        self.pass_times
    }

    /// Writes timestamps (and statistics) in every frame rather than one in [`TIMED_EVERY_FRAMES`]
    /// (`render-bench`, which reports every frame's pass times).
    pub fn time_every_frame(&mut self) {
        self.timed_every = 1;
    }

    /// Gathers pipeline statistics per pass from the next frame on, where the device has them (`render-bench`; off
    /// otherwise: the queries cost every frame). Returns whether it can.
    pub fn collect_statistics(&mut self) -> Result<bool, RenderError> {
        if !self.pipeline_statistics {
            return Ok(false);
        }
        self.wait_idle();
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::PIPELINE_STATISTICS)
            .query_count(STATISTICS_QUERIES)
            .pipeline_statistics(STATISTICS);
        self.resources_changed += 1;
        for slot in &mut self.frames {
            if slot.statistics.is_none() {
                // SAFETY: valid device; destroyed in Drop.
                let pool =
                    unsafe { self.device.create_query_pool(&info, None) }.ctx("vkCreateQueryPool (statistics)")?;
                slot.statistics = Some(pool);
            }
        }
        Ok(true)
    }

    /// Shader invocations per pass of the most recent finished frame; `None` unless [`Renderer::collect_statistics`]
    /// was called on a device that has them (not one an XR runtime made), or before the first frame.
    pub fn pass_statistics(&self) -> Option<PassStatistics> {
        self.statistics
    }

    /// Samples per pixel of the main pass.
    pub fn samples(&self) -> u32 {
        self.formats.samples.as_raw()
    }

    /// The memory properties of the type each per-frame buffer got: (the box records', the uniform block's).
    pub fn buffer_memory(&self) -> (vk::MemoryPropertyFlags, vk::MemoryPropertyFlags) {
        let flags = |b: &Buffer| self.memory_properties.memory_types[b.memory_type as usize].property_flags;
        let slot = &self.frames[0];
        (flags(&slot.boxes), flags(&slot.uniforms))
    }

    /// The renderer's command pool (for one-off uploads such as the overlay's textures).
    pub fn command_pool(&self) -> vk::CommandPool {
        self.command_pool
    }

    /// Waits for every frame in flight.
    pub fn wait_idle(&mut self) {
        for i in 0..self.frames.len() {
            let _ = self.wait_slot(i);
        }
    }
}

fn set_viewport(d: &ash::Device, cmd: vk::CommandBuffer, extent: vk::Extent2D) {
    let viewport = vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: extent.width as f32,
        height: extent.height as f32,
        min_depth: 0.0,
        max_depth: 1.0,
    };
    // SAFETY: cmd is recording.
    unsafe {
        d.cmd_set_viewport(cmd, 0, &[viewport]);
        d.cmd_set_scissor(cmd, 0, &[extent.into()]);
    }
}

/// The largest image side the renderer accepts (px): the minimum every Vulkan device supports.
pub const MAX_EXTENT_PX: u32 = 4096;

fn check_size(width: u32, height: u32, view_count: u32) -> Result<(), RenderError> {
    if width == 0 || height == 0 || width > MAX_EXTENT_PX || height > MAX_EXTENT_PX {
        return Err(RenderError::Input(format!(
            "size {width}x{height} (each side 1 to {MAX_EXTENT_PX} px)"
        )));
    }
    if view_count == 0 || view_count as usize > MAX_VIEWS {
        return Err(RenderError::Input(format!("{view_count} views (1 to {MAX_VIEWS})")));
    }
    Ok(())
}

fn create_descriptor_pool(device: &ash::Device) -> Result<vk::DescriptorPool, RenderError> {
    let n = FRAMES_IN_FLIGHT as u32;
    let size = |ty| vk::DescriptorPoolSize {
        ty,
        descriptor_count: n,
    };
    let sizes = [
        size(vk::DescriptorType::UNIFORM_BUFFER),
        size(vk::DescriptorType::STORAGE_BUFFER),
        size(vk::DescriptorType::STORAGE_BUFFER),
        size(vk::DescriptorType::SAMPLED_IMAGE),
        size(vk::DescriptorType::SAMPLER),
    ];
    let info = vk::DescriptorPoolCreateInfo::default().max_sets(n).pool_sizes(&sizes);
    // SAFETY: valid device.
    unsafe { device.create_descriptor_pool(&info, None) }.ctx("vkCreateDescriptorPool")
}

impl Drop for Renderer {
    fn drop(&mut self) {
        self.wait_idle();
        let d = &self.device;
        // SAFETY: every frame has finished (waited above); nothing else holds these objects.
        unsafe {
            for slot in &self.frames {
                d.destroy_fence(slot.fence, None);
                d.destroy_query_pool(slot.queries, None);
                if let Some(pool) = slot.statistics {
                    d.destroy_query_pool(pool, None);
                }
                destroy_buffer(d, &slot.uniforms);
                destroy_buffer(d, &slot.boxes);
                destroy_buffer(d, &slot.order);
            }
            d.destroy_command_pool(self.command_pool, None);
            destroy_buffer(d, &self.box_indices);
            d.destroy_descriptor_pool(self.descriptor_pool, None);
            self.targets.destroy(d);
            if let Some(external) = self.external.as_mut() {
                external.destroy(d);
            }
            self.main.destroy(d);
            d.destroy_pipeline(self.shadow_pipeline, None);
            self.shadow.destroy(d);
            d.destroy_pipeline_layout(self.pipeline_layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            self.shaders.destroy(d);
        }
    }
}
