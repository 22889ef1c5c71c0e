//! Tumble's engine: everything below the game that is not networking.
//!
//! - [`physics`]: the rigid-body engine (boxes, ground plane, contacts, solver, rest detection). Headless: it
//!   depends on no window, GPU or audio library, so servers, tests and benches run it anywhere.
//! - [`scene`]: scene files (TOML under `assets/scenes/`) turned into bodies for a [`physics::World`].
//!
//! - [`xr`] (cargo feature `xr`): the OpenXR session, its Vulkan device, swapchains, actions and frame loop.
//!
//! Later issues add `render` (Vulkan on ash) and `input` (winit/gilrs glue) beside these.

pub mod physics;
#[cfg(feature = "render")]
pub mod render;
pub mod scene;
#[cfg(feature = "xr")]
pub mod xr;
