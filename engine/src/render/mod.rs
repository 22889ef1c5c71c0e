//! `engine::render`: Tumble's Vulkan renderer, on `ash` (feature `render`).
//!
//! One multiview main pass (`VK_KHR_multiview`, core in Vulkan 1.1) draws N views — 1 for the desktop, 2 for
//! stereo — into a layered colour + depth target (MSAA where supported), after a shadow pass for the directional
//! light. Every box (cubes, avatar heads and hands, contact markers) is one instanced draw; the ground is a quad
//! with a procedural grid. Shaders are WGSL in `shaders/`, compiled to SPIR-V by `engine/build.rs` (naga).
//!
//! Per frame the caller passes plain data ([`FrameInput`]: views, cubes, avatars, contacts, light, debug modes);
//! interpolating between physics steps is the caller's job. Nothing is allocated per frame: box and uniform
//! buffers are sized at start ([`INITIAL_CUBE_CAPACITY`]), stay mapped, and grow (once, per frame slot) when a frame
//! has more boxes; two frames are in flight.
//!
//! Outputs, each a thin layer over [`Renderer`]:
//! - [`Offscreen`] (`offscreen.rs`): headless, reads the pixels back (views side by side) — `tumble screenshot`
//!   and the image test.
//! - [`Presenter`] (`swapchain.rs`): a window (raw-window-handle 0.6, e.g. winit 0.30) through `ash-window`; the
//!   views are blitted into the swapchain image (side by side in the stereo preview) and the egui overlay
//!   (`overlay.rs`, `egui-ash-renderer`) drawn on top. Swapchain rebuilt on resize, OUT_OF_DATE and SUBOPTIMAL;
//!   nothing drawn while minimised. `engine/examples/present.rs` is a runnable example (`xvfb-run` works).
//! - [`XrRenderer`] (`external.rs`): on the Vulkan instance/device an OpenXR runtime created
//!   ([`ExternalVulkan`]), drawing both eyes into the runtime's 2-layer swapchain images ([`ExternalImage`]). The
//!   module docs of `external.rs` list what to ask the runtime for: Vulkan 1.2, no extensions, the multiview
//!   feature ([`required_device_features`]), swapchain usage COLOR_ATTACHMENT | TRANSFER_DST.
//!
//! [`run_bench`] (`bench.rs`) is `tumble render-bench`: one scene drawn for a number of frames at a chosen size,
//! views, sample count and output, with the GPU time of each pass (timestamps), the CPU time to record and submit,
//! shader invocations per pass and where the buffers live.
//!
//! Files: `device.rs` (instance, device choice, [`Gpu`]), `memory.rs`, `pipeline.rs` (shaders, render pass,
//! pipelines), `shadow.rs`, `targets.rs`, `instances.rs` (frame data as the GPU reads it), `renderer.rs` (the frame
//! loop), `scene_data.rs` (the caller's types), `error.rs`.
//!
//! No Vulkan loader or no usable device gives [`RenderError::NoLoader`] / [`RenderError::NoDevice`], whose message
//! names the packages to install; [`RenderError::is_unavailable`] tells the binary to exit 2.

mod bench;
mod casters;
mod device;
mod draw_order;
mod error;
mod external;
mod external_pass;
mod ground;
mod instances;
mod memory;
mod mirror;
mod offscreen;
mod overlay;
mod pipeline;
mod renderer;
mod scene_data;
mod shadow;
mod swapchain;
mod targets;

pub use crate::vk_validation::{validation_layers_installed, validation_messages};
pub use ash;
pub use ash::vk;
pub use bench::{run_bench, BenchOptions, BenchOutput, BenchReport};
pub use device::{load_vulkan, required_device_features, ExternalVulkan, Gpu, GpuInfo, VULKAN_API_VERSION};
pub use egui;
pub use error::{RenderError, VULKAN_PACKAGES_HINT};
pub use external::{record_copy_into, record_depth_copy_into, ExternalImage, XrRenderer};
pub use external_pass::ExternalTarget;
pub use mirror::{submit_with_mirror, submit_with_mirror_from, window_extensions, Mirror, MirrorImage};
pub use offscreen::Offscreen;
pub use overlay::OverlayFrame;
pub use raw_window_handle;
pub use renderer::{PassStatistics, PassTimes, Renderer, ResultImage, FRAMES_IN_FLIGHT, MAX_EXTENT_PX, RESULT_FORMAT};
pub use scene_data::{
    authority_rgb, Avatar, CubeInstance, DebugModes, FrameInput, Pose, View, AUTHORITY_NONE_RGB, CUBE_FIRST_VIEW_ONLY,
    CUBE_FLAGS, CUBE_HELD, CUBE_RESTING, CUBE_SECOND_VIEW_ONLY, CUBE_SELECTED, DEFAULT_LIGHT_DIRECTION, FAR_M,
    INITIAL_CUBE_CAPACITY, MAX_AVATARS, MAX_CONTACT_MARKERS, MAX_VIEWS, NEAR_M, PLAYER_RGB,
};
pub use swapchain::{FrameStatus, Presenter};
