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

/// Who reads and writes a buffer, which decides the memory it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Only the GPU.
    Device,
    /// The CPU writes it (every frame), the GPU reads it: mapped and coherent, and in the GPU's own memory where
    /// the device lets the CPU map some (DEVICE_LOCAL | HOST_VISIBLE: a discrete GPU's BAR window, an integrated
    /// GPU's or lavapipe's one memory), so the GPU's reads (every vertex reads its box) do not cross the bus;
    /// else in system memory. The CPU only writes it, in order: never read back from such memory.
    Upload,
    /// The GPU writes it, the CPU reads it: mapped and coherent, cached for the CPU where the device offers it
    /// (reads from uncached or device memory are slow).
    Readback,
}

impl Access {
    /// The memory properties the buffer must have, and those it prefers.
    fn wants(self) -> (vk::MemoryPropertyFlags, vk::MemoryPropertyFlags) {
        let mapped = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        match self {
            Access::Device => (vk::MemoryPropertyFlags::DEVICE_LOCAL, vk::MemoryPropertyFlags::empty()),
            Access::Upload => (mapped, vk::MemoryPropertyFlags::DEVICE_LOCAL),
            Access::Readback => (mapped, vk::MemoryPropertyFlags::HOST_CACHED),
        }
    }
}

/// The memory types to try for a buffer of `access` that may live in `bits`: the first with the preferred
/// properties too, then the first with the required ones (the preferred one's heap may be full: a BAR window is
/// 256 MB on many GPUs).
fn buffer_memory_types(
    props: &vk::PhysicalDeviceMemoryProperties,
    bits: u32,
    access: Access,
) -> Result<[u32; 2], RenderError> {
    let (required, preferred) = access.wants();
    let fallback = memory_type(props, bits, required)?;
    let best = memory_type(props, bits, required | preferred).unwrap_or(fallback);
    Ok([best, fallback])
}

/// A buffer; mapped ones ([`Access::Upload`], [`Access::Readback`]) are coherent and stay mapped, so a frame writes
/// them with a plain copy.
pub(crate) fn create_buffer(
    device: &ash::Device,
    props: &vk::PhysicalDeviceMemoryProperties,
    size: u64,
    usage: vk::BufferUsageFlags,
    access: Access,
) -> Result<Buffer, RenderError> {
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: valid device and create info; every object made here is destroyed in `destroy_buffer`.
    unsafe {
        let buffer = device.create_buffer(&info, None).ctx("vkCreateBuffer")?;
        let req = device.get_buffer_memory_requirements(buffer);
        let [best, fallback] = match buffer_memory_types(props, req.memory_type_bits, access) {
            Ok(types) => types,
            Err(e) => {
                device.destroy_buffer(buffer, None);
                return Err(e);
            }
        };
        let allocate = |type_index| {
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(type_index);
            device.allocate_memory(&alloc, None).map(|m| (m, type_index))
        };
        let allocated = match allocate(best) {
            Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY) if best != fallback => allocate(fallback),
            other => other,
        };
        let (memory, type_index) = match allocated.ctx("vkAllocateMemory (buffer)") {
            Ok(m) => m,
            Err(e) => {
                device.destroy_buffer(buffer, None);
                return Err(e);
            }
        };
        device.bind_buffer_memory(buffer, memory, 0).ctx("vkBindBufferMemory")?;
        let mapped = if access != Access::Device {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn properties(types: &[(vk::MemoryPropertyFlags, u32)]) -> vk::PhysicalDeviceMemoryProperties {
        let mut props = vk::PhysicalDeviceMemoryProperties {
            memory_type_count: types.len() as u32,
            memory_heap_count: 3,
            ..Default::default()
        };
        for (i, &(flags, heap)) in types.iter().enumerate() {
            props.memory_types[i] = vk::MemoryType {
                property_flags: flags,
                heap_index: heap,
            };
        }
        props
    }

    /// Per-frame uploads go to memory the GPU reads without crossing the bus where the device lets the CPU map
    /// some (a discrete GPU's BAR window), readbacks to memory the CPU reads cached; each falls back to plain
    /// mapped memory (the first choice's heap may be full), and a device with one memory for all (lavapipe, an
    /// integrated GPU) gets it for everything.
    #[test]
    fn uploads_prefer_device_memory_the_cpu_can_map_and_readbacks_cached_memory() {
        let device = vk::MemoryPropertyFlags::DEVICE_LOCAL;
        let mapped = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let cached = mapped | vk::MemoryPropertyFlags::HOST_CACHED;
        // A discrete GPU's usual list: VRAM, system memory (uncached, cached), and the BAR window.
        let discrete = properties(&[(device, 0), (mapped, 1), (cached, 1), (device | mapped, 2)]);
        let all = u32::MAX;
        assert_eq!(buffer_memory_types(&discrete, all, Access::Upload).unwrap(), [3, 1]);
        assert_eq!(buffer_memory_types(&discrete, all, Access::Readback).unwrap(), [2, 1]);
        assert_eq!(buffer_memory_types(&discrete, all, Access::Device).unwrap(), [0, 0]);
        // A buffer that may not live in the BAR window (its memory type bits) goes to system memory.
        assert_eq!(buffer_memory_types(&discrete, 0b0111, Access::Upload).unwrap(), [1, 1]);
        // Without a BAR window, and on a device with one memory for all.
        let no_bar = properties(&[(device, 0), (mapped, 1)]);
        assert_eq!(buffer_memory_types(&no_bar, all, Access::Upload).unwrap(), [1, 1]);
        assert_eq!(buffer_memory_types(&no_bar, all, Access::Readback).unwrap(), [1, 1]);
        let unified = properties(&[(device | cached, 0)]);
        assert_eq!(buffer_memory_types(&unified, all, Access::Upload).unwrap(), [0, 0]);
        // Nothing mapped at all: an error, not a buffer the CPU cannot write.
        let unmappable = properties(&[(device, 0)]);
        assert!(buffer_memory_types(&unmappable, all, Access::Upload).is_err());
    }
}
