//! The renderer's bench (`tumble render-bench`): draws one scene for a number of frames at a chosen size, views
//! and sample count, with the output a real frame would have (nothing, a readback, the copy into XR swapchain
//! images, or the main pass resolved straight into them), and reports the GPU time of each pass from timestamp queries, the CPU time to record and submit, the
//! shader invocations per pass (overdraw) and where the buffers live. Every frame is waited for before the next is
//! recorded, so the GPU times are one frame's, never two frames overlapping.

use std::time::Instant;

use ash::vk;
use serde::Serialize;

use super::device::Gpu;
use super::error::{RenderError, VkContext};
use super::external::{record_copy_into, record_depth_copy_into, ExternalImage};
use super::external_pass::ExternalTarget;
use super::memory::{create_image, destroy_buffer, destroy_image, Buffer, Image, ImageDesc};
use super::offscreen::{readback_buffer, record_readback};
use super::renderer::{PassStatistics, PassTimes, Renderer, RESULT_FORMAT};
use super::scene_data::{CubeInstance, FrameInput, View};

/// What follows the main pass in a benched frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchOutput {
    /// Nothing: the frame ends with the main pass (its resolve included).
    None,
    /// Copied into a host-visible buffer, as `tumble screenshot` reads it.
    Readback,
    /// Copied into a layered colour and a layered depth image, as `tumble vr` fills the runtime's swapchain images
    /// where it cannot resolve into them.
    XrCopy,
    /// The main pass resolved straight into those images (colour and depth), as `tumble vr` does: nothing follows
    /// the main pass.
    XrResolve,
}

/// What to draw and how often.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Per view (px).
    pub width: u32,
    pub height: u32,
    /// 1 (desktop) or 2 (stereo, one multiview pass).
    pub views: u32,
    /// Samples per pixel: 1 or the device's MSAA (4 on every device the renderer has met).
    pub msaa: u32,
    /// Frames measured, after `warmup` frames that are not.
    pub frames: u32,
    pub warmup: u32,
    pub output: BenchOutput,
    /// Turn every cube a little each frame, so nothing drawn can be kept from the frame before (the shadow map).
    pub moving: bool,
}

/// p50, p95 and max of one figure over the measured frames.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

/// GPU time per pass (ms).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct GpuTimes {
    pub shadow: Spread,
    /// Ground and boxes in every view, with the MSAA resolve.
    pub main: Spread,
    pub output: Spread,
    pub total: Spread,
}

/// Shader invocations per pass in the last measured frame; per pixel for the main pass's fragments (pixels of
/// every view: over 1 means pixels shaded more than once — overdraw — or per sample).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct BenchStatistics {
    pub shadow_vertex_invocations: u64,
    pub shadow_fragment_invocations: u64,
    pub main_vertex_invocations: u64,
    pub main_fragment_invocations: u64,
    pub main_fragments_per_pixel: f64,
}

/// The memory property flags of the memory type each per-frame buffer got.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BenchMemory {
    pub boxes: Vec<&'static str>,
    pub uniforms: Vec<&'static str>,
}

/// What `tumble render-bench --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub device: String,
    pub device_type: String,
    pub driver: String,
    pub width: u32,
    pub height: u32,
    pub views: u32,
    pub msaa: u32,
    /// Boxes drawn (cubes; the bench draws no avatars).
    pub cubes: usize,
    pub frames: u32,
    pub warmup: u32,
    pub output: BenchOutput,
    pub moving: bool,
    /// `null` on a queue without timestamps.
    pub gpu_ms: Option<GpuTimes>,
    /// Time to record and submit a frame (`begin_frame`, the output's commands, `submit`): p50 and p99 (µs).
    pub cpu_record_submit_us_p50: f64,
    pub cpu_record_submit_us_p99: f64,
    /// `null` where the device has no pipeline statistics queries.
    pub pipeline_statistics: Option<BenchStatistics>,
    pub memory: BenchMemory,
}

/// Draws `cubes` in `views` (one per view of the options) `warmup + frames` times on `gpu` and reports.
pub fn run_bench(
    gpu: &Gpu,
    options: &BenchOptions,
    views: &[View],
    cubes: &[CubeInstance],
) -> Result<BenchReport, RenderError> {
    if views.len() as u32 != options.views {
        return Err(RenderError::Input(format!(
            "{} views given for a bench of {}",
            views.len(),
            options.views
        )));
    }
    if options.frames == 0 {
        return Err(RenderError::Input("0 frames to measure".into()));
    }
    let samples = vk::SampleCountFlags::from_raw(options.msaa);
    let keep_depth = matches!(options.output, BenchOutput::XrCopy | BenchOutput::XrResolve);
    let mut renderer = Renderer::with_samples(gpu, options.width, options.height, options.views, keep_depth, samples)?;
    renderer.time_every_frame();
    renderer.collect_statistics()?;
    let output = Output::new(gpu, options)?;
    let mut frame_cubes = cubes.to_vec();
    let mut cpu_us = Vec::with_capacity(options.frames as usize);
    let mut times: Vec<PassTimes> = Vec::with_capacity(options.frames as usize);
    let mut statistics: Option<PassStatistics> = None;
    let run = (|| {
        for frame in 0..options.warmup + options.frames {
            if options.moving {
                let turn = glam::Quat::from_rotation_y(1e-3 * (frame + 1) as f32);
                for (moved, c) in frame_cubes.iter_mut().zip(cubes) {
                    moved.rotation = c.rotation * turn;
                }
            }
            let input = FrameInput::new(views, &frame_cubes);
            let start = Instant::now();
            let cmd = match output.resolve_target() {
                // SAFETY: the stand-in images are alive and ours alone; they live as long as the renderer's frames.
                Some(target) => unsafe { renderer.begin_frame_into(&input, &target) }?,
                None => renderer.begin_frame(&input)?,
            };
            // SAFETY: `cmd` records this renderer's frame; the output's images and buffer are ours alone.
            unsafe { output.record(&gpu.device, &renderer, cmd) };
            renderer.submit(&[], &[], &[])?;
            let elapsed = start.elapsed();
            renderer.wait_last_submitted()?;
            if frame >= options.warmup {
                cpu_us.push(elapsed.as_secs_f64() * 1e6);
                if let Some(t) = renderer.pass_times() {
                    times.push(t);
                }
                statistics = renderer.pass_statistics();
            }
        }
        Ok::<(), RenderError>(())
    })();
    renderer.wait_idle();
    output.destroy(&gpu.device);
    run?;
    let pixels = f64::from(options.width) * f64::from(options.height) * f64::from(options.views);
    let (boxes, uniforms) = renderer.buffer_memory();
    Ok(BenchReport {
        device: gpu.info.name.clone(),
        device_type: device_type(gpu.info.device_type).into(),
        driver: gpu.info.driver.clone(),
        width: options.width,
        height: options.height,
        views: options.views,
        msaa: renderer.samples(),
        cubes: cubes.len(),
        frames: options.frames,
        warmup: options.warmup,
        output: options.output,
        moving: options.moving,
        gpu_ms: (!times.is_empty()).then(|| GpuTimes {
            shadow: spread(times.iter().map(|t| t.shadow_ms)),
            main: spread(times.iter().map(|t| t.main_ms)),
            output: spread(times.iter().map(|t| t.output_ms)),
            total: spread(times.iter().map(|t| t.total_ms)),
        }),
        cpu_record_submit_us_p50: quantile(&mut cpu_us, 0.5),
        cpu_record_submit_us_p99: quantile(&mut cpu_us, 0.99),
        pipeline_statistics: statistics.map(|s| BenchStatistics {
            shadow_vertex_invocations: s.shadow_vertex_invocations,
            shadow_fragment_invocations: s.shadow_fragment_invocations,
            main_vertex_invocations: s.main_vertex_invocations,
            main_fragment_invocations: s.main_fragment_invocations,
            main_fragments_per_pixel: s.main_fragment_invocations as f64 / pixels,
        }),
        memory: BenchMemory {
            boxes: memory_names(boxes),
            uniforms: memory_names(uniforms),
        },
    })
}

fn spread(values: impl Iterator<Item = f32>) -> Spread {
    let mut v: Vec<f64> = values.map(f64::from).collect();
    Spread {
        p50: quantile(&mut v, 0.5),
        p95: quantile(&mut v, 0.95),
        max: quantile(&mut v, 1.0),
    }
}

/// The `q` quantile (nearest rank) of `values`; 0 when empty.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

fn device_type(t: vk::PhysicalDeviceType) -> &'static str {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual",
        vk::PhysicalDeviceType::CPU => "cpu",
        _ => "other",
    }
}

fn memory_names(flags: vk::MemoryPropertyFlags) -> Vec<&'static str> {
    [
        (vk::MemoryPropertyFlags::DEVICE_LOCAL, "device-local"),
        (vk::MemoryPropertyFlags::HOST_VISIBLE, "host-visible"),
        (vk::MemoryPropertyFlags::HOST_COHERENT, "host-coherent"),
        (vk::MemoryPropertyFlags::HOST_CACHED, "host-cached"),
    ]
    .into_iter()
    .filter(|(f, _)| flags.contains(*f))
    .map(|(_, name)| name)
    .collect()
}

/// The output's own resources: a readback buffer, or a layered colour and depth image standing for a runtime's
/// swapchain images.
enum Output {
    None,
    Readback(Buffer),
    /// Stand-ins for a runtime's swapchain images, copied into or (`resolve`) resolved into.
    Xr {
        colour: Image,
        depth: Image,
        extent: vk::Extent2D,
        layers: u32,
        depth_format: vk::Format,
        resolve: bool,
    },
}

impl Output {
    fn new(gpu: &Gpu, options: &BenchOptions) -> Result<Output, RenderError> {
        let extent = vk::Extent2D {
            width: options.width,
            height: options.height,
        };
        match options.output {
            BenchOutput::None => Ok(Output::None),
            BenchOutput::Readback => Ok(Output::Readback(readback_buffer(
                gpu,
                options.width,
                options.height,
                options.views,
            )?)),
            BenchOutput::XrCopy | BenchOutput::XrResolve => {
                let image = |format, usage, aspect| {
                    create_image(
                        &gpu.device,
                        &gpu.memory_properties,
                        &ImageDesc {
                            extent,
                            layers: options.views,
                            format,
                            samples: vk::SampleCountFlags::TYPE_1,
                            usage,
                            aspect,
                        },
                    )
                };
                let colour = image(
                    RESULT_FORMAT,
                    vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_DST,
                    vk::ImageAspectFlags::COLOR,
                )?;
                let depth = match image(
                    gpu.info.depth_format,
                    vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_DST,
                    vk::ImageAspectFlags::DEPTH,
                ) {
                    Ok(d) => d,
                    Err(e) => {
                        destroy_image(&gpu.device, &colour);
                        return Err(e);
                    }
                };
                // The runtime hands its images over in their attachment layouts; start them there.
                let ready = Output::Xr {
                    colour,
                    depth,
                    extent,
                    layers: options.views,
                    depth_format: gpu.info.depth_format,
                    resolve: options.output == BenchOutput::XrResolve,
                };
                ready.to_attachment_layouts(gpu)?;
                Ok(ready)
            }
        }
    }

    /// Moves the XR stand-in images from UNDEFINED to the layouts a runtime gives them in, once.
    fn to_attachment_layouts(&self, gpu: &Gpu) -> Result<(), RenderError> {
        let Output::Xr {
            colour, depth, layers, ..
        } = self
        else {
            return Ok(());
        };
        let barrier = |image, aspect, layout| {
            vk::ImageMemoryBarrier::default()
                .old_layout(vk::ImageLayout::UNDEFINED)
                .new_layout(layout)
                .image(image)
                .subresource_range(super::memory::layers_range(aspect, *layers))
        };
        let barriers = [
            barrier(
                colour.image,
                vk::ImageAspectFlags::COLOR,
                vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            ),
            barrier(
                depth.image,
                vk::ImageAspectFlags::DEPTH,
                vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
            ),
        ];
        let d = &gpu.device;
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(gpu.queue_family);
        // SAFETY: a one-off command buffer on our own pool, waited for before the pool goes.
        unsafe {
            let pool = d.create_command_pool(&pool_info, None).ctx("vkCreateCommandPool")?;
            let result = (|| {
                let info = vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1);
                let cmd = d.allocate_command_buffers(&info).ctx("vkAllocateCommandBuffers")?[0];
                d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                    .ctx("vkBeginCommandBuffer")?;
                d.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &barriers,
                );
                d.end_command_buffer(cmd).ctx("vkEndCommandBuffer")?;
                let cmds = [cmd];
                let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
                d.queue_submit(gpu.queue, &submit, vk::Fence::null())
                    .ctx("vkQueueSubmit")?;
                d.queue_wait_idle(gpu.queue).ctx("vkQueueWaitIdle")
            })();
            d.destroy_command_pool(pool, None);
            result
        }
    }

    /// The images stand-in as the frame's resolve target, when the output resolves into them.
    fn resolve_target(&self) -> Option<ExternalTarget> {
        match self {
            Output::Xr { resolve: true, .. } => {
                let (colour, depth) = self.xr_images()?;
                Some(ExternalTarget {
                    colour,
                    depth: Some(depth),
                })
            }
            _ => None,
        }
    }

    /// The stand-in images as a renderer is given them: colour and depth.
    fn xr_images(&self) -> Option<(ExternalImage, ExternalImage)> {
        let Output::Xr {
            colour,
            depth,
            extent,
            layers,
            depth_format,
            ..
        } = self
        else {
            return None;
        };
        let target = |image, format, layout| ExternalImage {
            image,
            extent: *extent,
            layers: *layers,
            layout,
            format,
        };
        Some((
            target(colour.image, RESULT_FORMAT, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL),
            target(
                depth.image,
                *depth_format,
                vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
            ),
        ))
    }

    /// # Safety
    /// `cmd` records `renderer`'s frame; the output's resources are not in use by an earlier frame.
    unsafe fn record(&self, device: &ash::Device, renderer: &Renderer, cmd: vk::CommandBuffer) {
        match self {
            Output::None | Output::Xr { resolve: true, .. } => {}
            Output::Readback(buffer) => {
                // SAFETY: per the function's contract; the buffer was sized for the result's pixels.
                unsafe { record_readback(device, cmd, &renderer.result_image(), buffer.buffer) };
            }
            Output::Xr { .. } => {
                let Some((colour, depth)) = self.xr_images() else {
                    return;
                };
                // SAFETY: per the function's contract.
                unsafe {
                    record_copy_into(device, renderer, cmd, &colour, 0);
                    record_depth_copy_into(device, renderer, cmd, &depth, 0);
                }
            }
        }
    }

    fn destroy(&self, device: &ash::Device) {
        match self {
            Output::None => {}
            Output::Readback(buffer) => destroy_buffer(device, buffer),
            Output::Xr { colour, depth, .. } => {
                destroy_image(device, colour);
                destroy_image(device, depth);
            }
        }
    }
}
