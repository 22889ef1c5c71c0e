//! The smallest program that crashes Mesa 25.0's lavapipe in a multiview render pass (docs/mesa-multiview-crash.md).
//!
//! It uses nothing of Tumble but ash: one colour image with `--views` array layers, a render pass whose one
//! subpass has the view mask `(1 << views) - 1` and clears the image on load, a framebuffer of one layer (as
//! multiview wants), and one command buffer that begins and ends that pass with no draw in it. No shader, no
//! pipeline, no depth, no MSAA. Then it waits for the queue and reads the clear colour back from every layer.
//!
//! ```text
//! cargo run -p tumble-engine --features render --example multiview_clear -- [--views N] [--load clear|dont-care]
//! ```
//!
//! On Debian 12's Mesa 22.3.6 every form prints `ok`. On trixie's Mesa 25.0.7 `--views 2` with a cleared load
//! segfaults in lavapipe's queue thread, while `--views 1` and `--load dont-care` print `ok`.

use ash::vk;

const WIDTH: u32 = 64;
const HEIGHT: u32 = 64;
const CLEAR: [f32; 4] = [0.25, 0.5, 0.75, 1.0];

fn main() {
    let mut views = 2u32;
    let mut clear_on_load = true;
    let mut depth = false;
    let mut samples = 1u32;
    let mut timestamps = 0u32;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--views", Some(n)) => views = n.parse().expect("--views N (1 to 4)"),
            ("--load", Some(l)) => clear_on_load = l == "clear",
            ("--depth", Some(d)) => depth = d == "on",
            ("--samples", Some(n)) => samples = n.parse().expect("--samples 1|4"),
            ("--timestamps", Some(n)) => timestamps = n.parse().expect("--timestamps POOL_SIZE"),
            _ => {
                eprintln!("usage: multiview_clear [--views N] [--load clear|dont-care]");
                std::process::exit(2);
            }
        }
    }
    // SAFETY: a straight-line Vulkan program; every handle is used on the thread that made it and outlived by
    // nothing.
    unsafe { run(views.clamp(1, 4), clear_on_load, depth, samples, timestamps) }
}

unsafe fn run(views: u32, clear_on_load: bool, with_depth: bool, samples: u32, pool_size: u32) {
    let entry = unsafe { ash::Entry::load() }.expect("no Vulkan loader");
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_1);
    let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
        .expect("vkCreateInstance");
    let pd = unsafe { instance.enumerate_physical_devices() }.expect("devices")[0];
    let props = unsafe { instance.get_physical_device_properties(pd) };
    let name = props
        .device_name_as_c_str()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let family = unsafe { instance.get_physical_device_queue_family_properties(pd) }
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .expect("a graphics queue") as u32;
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let mut multiview = vk::PhysicalDeviceMultiviewFeatures::default().multiview(true);
    let device_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .push_next(&mut multiview);
    let device = unsafe { instance.create_device(pd, &device_info, None) }.expect("vkCreateDevice");
    let queue = unsafe { device.get_device_queue(family, 0) };
    eprintln!(
        "device: {name}; {views} views, load {}, depth {with_depth}, {samples} samples, timestamp pool {pool_size}",
        if clear_on_load { "CLEAR" } else { "DONT_CARE" }
    );

    // The images, `views` layers each: colour (multisampled with --samples 4, then resolved into a single-sampled
    // one, which is read back), and depth with --depth on.
    let format = vk::Format::R8G8B8A8_UNORM;
    let depth_format = vk::Format::D32_SFLOAT;
    let sample_count = vk::SampleCountFlags::from_raw(samples);
    let msaa = samples > 1;
    let colour_usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
    let target = |format, samples, usage, aspect| unsafe {
        make_image(&instance, pd, &device, format, samples, usage, aspect, views)
    };
    let colour = target(format, sample_count, colour_usage, vk::ImageAspectFlags::COLOR);
    let resolved = msaa.then(|| {
        target(
            format,
            vk::SampleCountFlags::TYPE_1,
            colour_usage,
            vk::ImageAspectFlags::COLOR,
        )
    });
    let depth = with_depth.then(|| {
        target(
            depth_format,
            sample_count,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        )
    });
    let result = resolved.unwrap_or(colour);

    // The render pass: one subpass over all layers (multiview), clearing on load.
    let load = if clear_on_load {
        vk::AttachmentLoadOp::CLEAR
    } else {
        vk::AttachmentLoadOp::DONT_CARE
    };
    let describe = |format, samples, final_layout| {
        vk::AttachmentDescription::default()
            .format(format)
            .samples(samples)
            .load_op(load)
            .store_op(vk::AttachmentStoreOp::STORE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(final_layout)
    };
    let transfer_src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    let mut attachment = vec![describe(format, sample_count, transfer_src)];
    let mut views_of = vec![colour.2];
    let colour_ref = [vk::AttachmentReference {
        attachment: 0,
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    }];
    let mut resolve_ref = [vk::AttachmentReference::default()];
    let mut depth_ref = vk::AttachmentReference::default();
    if let Some(r) = resolved {
        resolve_ref[0] = vk::AttachmentReference {
            attachment: attachment.len() as u32,
            layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        };
        attachment.push(describe(format, vk::SampleCountFlags::TYPE_1, transfer_src));
        views_of.push(r.2);
    }
    if let Some(d) = depth {
        depth_ref = vk::AttachmentReference {
            attachment: attachment.len() as u32,
            layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        };
        attachment.push(describe(
            depth_format,
            sample_count,
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        ));
        views_of.push(d.2);
    }
    let mut subpass = vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&colour_ref);
    if msaa {
        subpass = subpass.resolve_attachments(&resolve_ref);
    }
    if with_depth {
        subpass = subpass.depth_stencil_attachment(&depth_ref);
    }
    let subpass = [subpass];
    let masks = [(1u32 << views) - 1];
    let mut multiview_info = vk::RenderPassMultiviewCreateInfo::default()
        .view_masks(&masks)
        .correlation_masks(&masks);
    let pass_info = vk::RenderPassCreateInfo::default()
        .attachments(&attachment)
        .subpasses(&subpass)
        .push_next(&mut multiview_info);
    let pass = unsafe { device.create_render_pass(&pass_info, None) }.expect("vkCreateRenderPass");
    let fb_info = vk::FramebufferCreateInfo::default()
        .render_pass(pass)
        .attachments(&views_of)
        .width(WIDTH)
        .height(HEIGHT)
        .layers(1);
    let framebuffer = unsafe { device.create_framebuffer(&fb_info, None) }.expect("vkCreateFramebuffer");
    let image = result.0;

    // A buffer to read every layer back into.
    let bytes = u64::from(WIDTH * HEIGHT * 4 * views);
    let buffer_info = vk::BufferCreateInfo::default()
        .size(bytes)
        .usage(vk::BufferUsageFlags::TRANSFER_DST);
    let buffer = unsafe { device.create_buffer(&buffer_info, None) }.expect("vkCreateBuffer");
    let needs = unsafe { device.get_buffer_memory_requirements(buffer) };
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let buffer_memory = unsafe { allocate(&instance, pd, &device, needs, host) };
    unsafe { device.bind_buffer_memory(buffer, buffer_memory, 0) }.expect("bind");

    // Begin and end the pass (no draw), copy the layers out, submit, wait.
    let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
    let pool = unsafe { device.create_command_pool(&pool_info, None) }.expect("vkCreateCommandPool");
    let alloc = vk::CommandBufferAllocateInfo::default()
        .command_pool(pool)
        .command_buffer_count(1);
    let cmd = unsafe { device.allocate_command_buffers(&alloc) }.expect("vkAllocateCommandBuffers")[0];
    unsafe { device.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()) }.expect("begin");
    // With --timestamps P: a pool of P queries, a timestamp before the pass (query 0) and one after it (query 1),
    // both outside the render pass, where each writes exactly one query.
    let queries = (pool_size >= 2).then(|| {
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(pool_size);
        let pool = unsafe { device.create_query_pool(&info, None) }.expect("vkCreateQueryPool");
        unsafe {
            device.cmd_reset_query_pool(cmd, pool, 0, pool_size);
            device.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, pool, 0);
        }
        pool
    });
    let colour_clear = vk::ClearValue {
        color: vk::ClearColorValue { float32: CLEAR },
    };
    let depth_clear = vk::ClearValue {
        depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
    };
    let clears: Vec<vk::ClearValue> = attachment
        .iter()
        .map(|a| {
            if a.format == depth_format {
                depth_clear
            } else {
                colour_clear
            }
        })
        .collect();
    let begin = vk::RenderPassBeginInfo::default()
        .render_pass(pass)
        .framebuffer(framebuffer)
        .render_area(
            vk::Extent2D {
                width: WIDTH,
                height: HEIGHT,
            }
            .into(),
        )
        .clear_values(&clears);
    unsafe {
        device.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
        device.cmd_end_render_pass(cmd);
        if let Some(pool) = queries {
            device.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, 1);
        }
        let to_transfer = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ);
        device.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[to_transfer],
            &[],
            &[],
        );
        let region = vk::BufferImageCopy::default()
            .image_subresource(vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: views,
            })
            .image_extent(vk::Extent3D {
                width: WIDTH,
                height: HEIGHT,
                depth: 1,
            });
        device.cmd_copy_image_to_buffer(cmd, image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, buffer, &[region]);
        device.end_command_buffer(cmd).expect("end");
        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        device
            .queue_submit(queue, &submit, vk::Fence::null())
            .expect("vkQueueSubmit");
        device.queue_wait_idle(queue).expect("vkQueueWaitIdle");
    }

    // What each layer's first pixel holds.
    let mapped = unsafe { device.map_memory(buffer_memory, 0, bytes, vk::MemoryMapFlags::empty()) }.expect("map");
    // SAFETY: mapped, `bytes` long, and the copy has finished.
    let pixels = unsafe { std::slice::from_raw_parts(mapped as *const u8, bytes as usize) };
    let layer_bytes = (WIDTH * HEIGHT * 4) as usize;
    for layer in 0..views as usize {
        let p = &pixels[layer * layer_bytes..layer * layer_bytes + 4];
        eprintln!("layer {layer}: first pixel {p:?}");
    }
    if let Some(pool) = queries {
        let mut ticks = [0u64; 2];
        let read = unsafe { device.get_query_pool_results(pool, 0, &mut ticks, vk::QueryResultFlags::TYPE_64) };
        eprintln!("timestamps: {read:?}, {} ticks apart", ticks[1].wrapping_sub(ticks[0]));
        unsafe { device.destroy_query_pool(pool, None) };
    }
    println!("ok");
    unsafe {
        device.device_wait_idle().ok();
        device.destroy_command_pool(pool, None);
        device.destroy_framebuffer(framebuffer, None);
        device.destroy_render_pass(pass, None);
        for (image, memory, view) in [Some(colour), resolved, depth].into_iter().flatten() {
            device.destroy_image_view(view, None);
            device.destroy_image(image, None);
            device.free_memory(memory, None);
        }
        device.destroy_buffer(buffer, None);
        device.free_memory(buffer_memory, None);
        device.destroy_device(None);
        instance.destroy_instance(None);
    }
}

/// An image of `layers` layers, its memory and a 2D-array view of it.
#[allow(clippy::too_many_arguments)]
unsafe fn make_image(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    device: &ash::Device,
    format: vk::Format,
    samples: vk::SampleCountFlags,
    usage: vk::ImageUsageFlags,
    aspect: vk::ImageAspectFlags,
    layers: u32,
) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
    let info = vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(format)
        .extent(vk::Extent3D {
            width: WIDTH,
            height: HEIGHT,
            depth: 1,
        })
        .mip_levels(1)
        .array_layers(layers)
        .samples(samples)
        .tiling(vk::ImageTiling::OPTIMAL)
        .usage(usage);
    let image = unsafe { device.create_image(&info, None) }.expect("vkCreateImage");
    let needs = unsafe { device.get_image_memory_requirements(image) };
    let memory = unsafe { allocate(instance, pd, device, needs, vk::MemoryPropertyFlags::DEVICE_LOCAL) };
    unsafe { device.bind_image_memory(image, memory, 0) }.expect("bind");
    let range = vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: layers,
    };
    let view_info = vk::ImageViewCreateInfo::default()
        .image(image)
        .view_type(vk::ImageViewType::TYPE_2D_ARRAY)
        .format(format)
        .subresource_range(range);
    let view = unsafe { device.create_image_view(&view_info, None) }.expect("vkCreateImageView");
    (image, memory, view)
}

/// Memory of a type `needs` allows that has `flags`.
unsafe fn allocate(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    device: &ash::Device,
    needs: vk::MemoryRequirements,
    flags: vk::MemoryPropertyFlags,
) -> vk::DeviceMemory {
    let types = unsafe { instance.get_physical_device_memory_properties(pd) };
    let index = (0..types.memory_type_count)
        .find(|&i| {
            needs.memory_type_bits & (1 << i) != 0 && types.memory_types[i as usize].property_flags.contains(flags)
        })
        .expect("a memory type");
    let info = vk::MemoryAllocateInfo::default()
        .allocation_size(needs.size)
        .memory_type_index(index);
    unsafe { device.allocate_memory(&info, None) }.expect("vkAllocateMemory")
}
