//! Tumble's engine: everything below the game that is not networking.
//!
//! - [`physics`]: the rigid-body engine (boxes, ground plane, contacts, solver, rest detection). Headless: it
//!   depends on no window, GPU or audio library, so servers, tests and benches run it anywhere.
//! - [`scene`]: scene files (TOML under `assets/scenes/`) turned into bodies for a [`physics::World`].
//!
//! - [`input`] (feature `input`): winit and gilrs glue — keyboard, mouse and gamepad as plain per-frame data, a
//!   free camera, and hand targets for the desktop view.
//! - [`xr`] (feature `xr`): the OpenXR session, its Vulkan device, swapchains, actions and frame loop.
//!
//! `render` (feature `render`) is the Vulkan renderer on ash.

#[cfg(feature = "input")]
pub mod input;
pub mod physics;
#[cfg(feature = "render")]
pub mod render;
pub mod scene;
pub mod view_depth;
#[cfg(any(feature = "render", feature = "xr"))]
pub mod vk_common;
#[cfg(any(feature = "render", feature = "xr"))]
pub mod vk_validation;
#[cfg(feature = "xr")]
pub mod xr;
