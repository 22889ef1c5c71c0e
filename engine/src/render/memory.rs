//! Buffers and images with their own memory. The renderer makes a handful of each at start-up (and on resize), so
//! one allocation per resource is simpler than a sub-allocator and costs nothing per frame.

use ash::vk;

use super::error::{RenderError, VkContext};

/// A buffer and its memory; `mapped` is non-null for host-visible buffers (mapped once, for their lifetime).
pub(crate) struct Buffer {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    pub mapped: *mut u8,
    pub size: u64,
    /// The memory type it got (its properties tell where it lives: `render-bench` reports them).
    pub memory_type: u32,
}

/// An image, its memory and one view over all its layers.
pub(crate) struct Image {
    pub image: vk::Image,
    pub memory: vk::DeviceMemory,
    pub view: vk::ImageView,
}

pub(crate) struct ImageDesc {
    pub extent: vk::Extent2D,
    pub layers: u32,
    pub format: vk::Format,
    pub samples: vk::SampleCountFlags,
    pub usage: vk::ImageUsageFlags,
    pub aspect: vk::ImageAspectFlags,
}

fn memory_type(
    props: &vk::PhysicalDeviceMemoryProperties,
    bits: u32,
    want: vk::MemoryPropertyFlags,
) -> Result<u32, RenderError> {
    (0..props.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(want))
        .ok_or(RenderError::Vulkan {
            what: "finding a memory type",
            result: vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
        })
}

/// A buffer; host-visible ones are coherent and stay mapped, so a frame writes them with a plain copy.
pub(crate) fn create_buffer(
    device: &ash::Device,
    props: &vk::PhysicalDeviceMemoryProperties,
    size: u64,
    usage: vk::BufferUsageFlags,
    host_visible: bool,
) -> Result<Buffer, RenderError> {
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: valid device and create info; every object made here is destroyed in `destroy_buffer`.
    unsafe {
        let buffer = device.create_buffer(&info, None).ctx("vkCreateBuffer")?;
        let req = device.get_buffer_memory_requirements(buffer);
        let want = if host_visible {
            vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
        } else {
            vk::MemoryPropertyFlags::DEVICE_LOCAL
        };
        let type_index = memory_type(props, req.memory_type_bits, want)?;
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(type_index);
        let memory = device.allocate_memory(&alloc, None).ctx("vkAllocateMemory (buffer)")?;
        device.bind_buffer_memory(buffer, memory, 0).ctx("vkBindBufferMemory")?;
        let mapped = if host_visible {
            device
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                .ctx("vkMapMemory")? as *mut u8
        } else {
            std::ptr::null_mut()
        };
        Ok(Buffer {
            buffer,
            memory,
            mapped,
            size,
            memory_type: type_index,
        })
    }
}

pub(crate) fn destroy_buffer(device: &ash::Device, buffer: &Buffer) {
    // SAFETY: the caller has waited until the GPU no longer uses the buffer.
    unsafe {
        device.destroy_buffer(buffer.buffer, None);
        device.free_memory(buffer.memory, None);
    }
}

/// A device-local 2D image with `layers` layers and a view of all of them.
pub(crate) fn create_image(
    device: &ash::Device,
    props: &vk::PhysicalDeviceMemoryProperties,
    desc: &ImageDesc,
) -> Result<Image, RenderError> {
    let info = vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(desc.format)
        .extent(vk::Extent3D {
            width: desc.extent.width,
            height: desc.extent.height,
            depth: 1,
        })
        .mip_levels(1)
        .array_layers(desc.layers)
        .samples(desc.samples)
        .tiling(vk::ImageTiling::OPTIMAL)
        .usage(desc.usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .initial_layout(vk::ImageLayout::UNDEFINED);
    // SAFETY: valid device and create infos; destroyed in `destroy_image`.
    unsafe {
        let image = device.create_image(&info, None).ctx("vkCreateImage")?;
        let req = device.get_image_memory_requirements(image);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(memory_type(
                props,
                req.memory_type_bits,
                vk::MemoryPropertyFlags::DEVICE_LOCAL,
            )?);
        let memory = device.allocate_memory(&alloc, None).ctx("vkAllocateMemory (image)")?;
        device.bind_image_memory(image, memory, 0).ctx("vkBindImageMemory")?;
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            // One layer: a plain 2D view (what a shader's texture_2d needs; a 1-view multiview pass takes it too).
            .view_type(if desc.layers == 1 {
                vk::ImageViewType::TYPE_2D
            } else {
                vk::ImageViewType::TYPE_2D_ARRAY
            })
            .format(desc.format)
            .subresource_range(layers_range(desc.aspect, desc.layers));
        let view = device.create_image_view(&view_info, None).ctx("vkCreateImageView")?;
        Ok(Image { image, memory, view })
    }
}

pub(crate) fn destroy_image(device: &ash::Device, image: &Image) {
    // SAFETY: the caller has waited until the GPU no longer uses the image.
    unsafe {
        device.destroy_image_view(image.view, None);
        device.destroy_image(image.image, None);
        device.free_memory(image.memory, None);
    }
}

/// Mip 0, layers 0..layers, of the given aspect.
pub(crate) fn layers_range(aspect: vk::ImageAspectFlags, layers: u32) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: layers,
    }
}

/// A barrier on `range` of `image` within one queue: the accesses `(before, after)` and the layout change
/// `(old, new)`.
pub(crate) fn image_barrier(
    image: vk::Image,
    range: vk::ImageSubresourceRange,
    (src, dst): (vk::AccessFlags, vk::AccessFlags),
    (old, new): (vk::ImageLayout, vk::ImageLayout),
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .src_access_mask(src)
        .dst_access_mask(dst)
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(range)
}
