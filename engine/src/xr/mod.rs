//! OpenXR: the VR session that puts Tumble on a headset (SteamVR, Monado, any OpenXR 1.0 runtime), on the
//! `openxr` crate with the loader opened at run time, so the binary starts (and says what is missing) on machines
//! without one.
//!
//! What it owns, in the order a session is built:
//! - [`runtime`]: the loader, the instance (`XR_KHR_vulkan_enable2`, `XR_KHR_composition_layer_depth` when
//!   offered) and the head-mounted system; the errors that mean "not here" (no loader, no runtime, no headset);
//! - [`vulkan`]: the Vulkan instance and device, created *through the runtime* (it adds what it needs to share
//!   images with its compositor), with multiview on for the one-pass stereo renderer;
//! - [`lifecycle`]: the session state machine (idle → ready → synchronized → visible → focused → stopping, loss
//!   pending, exiting) as plain data, and what each change asks of us (begin, end, exit);
//! - [`space`]: the STAGE reference space, or LOCAL with an estimated floor where a runtime has no STAGE;
//! - [`swapchain`]: one colour swapchain with two array layers (one per eye) and a depth swapchain;
//! - [`bindings`] and [`actions`]: grip and aim poses, squeeze, trigger, thumbstick and haptics for both hands,
//!   with suggested bindings for the common controllers;
//! - [`clear`]: a multiview render pass that clears both eyes, the first frame until `engine::render` draws one;
//! - [`session`]: all of the above together, and the frame loop on the runtime's predicted display time.
//!
//! Nothing in the frame loop allocates: views and hand poses are located into fixed arrays, the command buffer and
//! framebuffers are made once.

pub mod actions;
pub mod bindings;
pub mod clear;
pub mod lifecycle;
pub mod runtime;
pub mod session;
pub mod space;
pub mod swapchain;
pub mod vulkan;

pub use actions::{HandInput, HAND_COUNT};
pub use lifecycle::{Lifecycle, SessionState};
pub use session::{DepthTarget, EyeView, FrameSubmitted, FrameTarget, FrameTiming, XrSession, XrSessionConfig};

/// Why the VR session could not start or went on. [`XrError::is_unavailable`] tells "this machine has no VR"
/// (exit code 2) from a failure (exit code 1).
#[derive(Debug, thiserror::Error)]
pub enum XrError {
    #[error(
        "the OpenXR loader (libopenxr_loader.so.1) is not installed: install the package libopenxr-loader1 \
         (Debian/Ubuntu) and an OpenXR runtime ({0})"
    )]
    LoaderMissing(String),
    #[error(
        "no OpenXR runtime is running ({0}): start SteamVR (and make it the OpenXR runtime) or Monado \
         (monado-service), then try again"
    )]
    NoRuntime(String),
    #[error("the OpenXR runtime has no headset ({0}): connect one and start SteamVR or Monado, then try again")]
    NoHeadset(String),
    #[error(
        "the Vulkan loader (libvulkan.so.1) is not installed: install libvulkan1 and a driver \
         (mesa-vulkan-drivers on Debian/Ubuntu) ({0})"
    )]
    VulkanMissing(String),
    #[error("the OpenXR runtime lacks {0}, which Tumble needs")]
    Unsupported(String),
    #[error("OpenXR: {what} failed: {result}")]
    Xr {
        what: &'static str,
        result: openxr::sys::Result,
    },
    #[error("Vulkan: {what} failed: {result}")]
    Vulkan {
        what: &'static str,
        result: ash::vk::Result,
    },
}

impl XrError {
    /// True when VR is not available on this machine (no loader, runtime, headset or Vulkan), as opposed to a
    /// failure of a session that could have run.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            XrError::LoaderMissing(_) | XrError::NoRuntime(_) | XrError::NoHeadset(_) | XrError::VulkanMissing(_)
        )
    }
}

impl XrError {
    /// True when a call failed because the runtime lost the session or the instance (a headset unplugged, the
    /// runtime restarting): a new session may work where this one cannot.
    pub fn is_lost(&self) -> bool {
        use openxr::sys::Result as R;
        matches!(self, XrError::Xr { result, .. } if *result == R::ERROR_SESSION_LOST || *result == R::ERROR_INSTANCE_LOST)
    }
}

/// `map_err` helper: an OpenXR call that failed, named.
pub(crate) fn xr_err(what: &'static str) -> impl FnOnce(openxr::sys::Result) -> XrError {
    move |result| XrError::Xr { what, result }
}

/// `map_err` helper: a Vulkan call that failed, named.
pub(crate) fn vk_err(what: &'static str) -> impl FnOnce(ash::vk::Result) -> XrError {
    move |result| XrError::Vulkan { what, result }
}
