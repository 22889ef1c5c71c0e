//! Headless rendering: the main pass into the renderer's own target, copied into a host-visible buffer and read
//! back as RGBA8 (sRGB) rows with the views side by side. No window, no display; runs on lavapipe.

use ash::vk;

use super::device::Gpu;
use super::error::RenderError;
use super::memory::{create_buffer, destroy_buffer, Access, Buffer};
use super::renderer::{Renderer, ResultImage};
use super::scene_data::FrameInput;

const BYTES_PER_PIXEL: u64 = 4;

/// A headless renderer with its own device: `render` returns the frame's pixels.
pub struct Offscreen {
    // Field order is drop order: the renderer and buffer go before the device they were made on.
    renderer: Renderer,
    readback: Buffer,
    gpu: Gpu,
}

impl Offscreen {
    /// A renderer on the best device (see [`Gpu::headless`]) for `view_count` views of `width` × `height` each.
    pub fn new(width: u32, height: u32, view_count: u32) -> Result<Offscreen, RenderError> {
        let gpu = Gpu::headless()?;
        let renderer = Renderer::new(&gpu, width, height, view_count)?;
        let readback = readback_buffer(&gpu, width, height, view_count)?;
        Ok(Offscreen {
            renderer,
            readback,
            gpu,
        })
    }

    /// The device the renderer runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The renderer, for its GPU time.
    pub fn renderer(&self) -> &Renderer {
        &self.renderer
    }

    /// Renders one frame and waits for it. The result is `width × views` pixels wide and `height` tall, RGBA8 in
    /// sRGB, rows top to bottom, view 0 on the left. `input.views` must have as many views as `new` was given.
    pub fn render(&mut self, input: &FrameInput) -> Result<&[u8], RenderError> {
        let result = self.renderer.result_image();
        if input.views.len() as u32 != result.layers {
            return Err(RenderError::Input(format!(
                "{} views for an offscreen target made for {}",
                input.views.len(),
                result.layers
            )));
        }
        let cmd = self.renderer.begin_frame(input)?;
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: cmd is recording; the result image is in TRANSFER_SRC_OPTIMAL after the main pass.
        unsafe {
            record_readback(&self.gpu.device, cmd, &result, self.readback.buffer);
            self.gpu.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
        }
        self.renderer.submit(&[], &[], &[])?;
        self.renderer.wait_last_submitted()?;
        // SAFETY: the copy has finished (fence waited); the buffer is mapped, coherent and `size` bytes long.
        Ok(unsafe { std::slice::from_raw_parts(self.readback.mapped, self.readback.size as usize) })
    }
}

/// A host-visible buffer for [`record_readback`]'s pixels of `view_count` views of `width` × `height`.
pub(crate) fn readback_buffer(gpu: &Gpu, width: u32, height: u32, view_count: u32) -> Result<Buffer, RenderError> {
    let size = u64::from(width) * u64::from(view_count) * u64::from(height) * BYTES_PER_PIXEL;
    create_buffer(
        &gpu.device,
        &gpu.memory_properties,
        size,
        vk::BufferUsageFlags::TRANSFER_DST,
        Access::Readback,
    )
}

/// Records the copy of `result` (in TRANSFER_SRC_OPTIMAL after the main pass) into `buffer` as RGBA8 rows `width ×
/// layers` long, each layer `width` pixels to the right of the one before (the views side by side).
///
/// # Safety
/// `cmd` is recording the frame that drew `result`; `buffer` holds `width × height × layers × 4` bytes.
pub(crate) unsafe fn record_readback(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    result: &ResultImage,
    buffer: vk::Buffer,
) {
    let (w, h) = (result.extent.width, result.extent.height);
    let region = |layer: u32| vk::BufferImageCopy {
        buffer_offset: u64::from(layer * w) * BYTES_PER_PIXEL,
        buffer_row_length: w * result.layers,
        buffer_image_height: h,
        image_subresource: vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: layer,
            layer_count: 1,
        },
        image_offset: vk::Offset3D::default(),
        image_extent: vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        },
    };
    let regions = [region(0), region(1)];
    // SAFETY: per the function's contract.
    unsafe {
        device.cmd_copy_image_to_buffer(
            cmd,
            result.image,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            buffer,
            &regions[..result.layers as usize],
        )
    };
}

impl Drop for Offscreen {
    fn drop(&mut self) {
        self.renderer.wait_idle();
        destroy_buffer(&self.gpu.device, &self.readback);
    }
}
