//! The renderer's one error type. A missing loader or driver is "unavailable here" (the binary exits 2), not a bug.

use ash::vk;

/// The packages that make Vulkan work on Debian/Ubuntu, named in every "no Vulkan" message.
pub const VULKAN_PACKAGES_HINT: &str =
    "install the Vulkan loader and a driver, e.g. `apt-get install libvulkan1 mesa-vulkan-drivers` \
     (Mesa's lavapipe renders on any CPU)";

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// `libvulkan.so.1` could not be opened.
    #[error("no Vulkan loader ({0}); {hint}", hint = VULKAN_PACKAGES_HINT)]
    NoLoader(String),
    /// The loader works but no device can run the renderer (no driver, or none with Vulkan 1.2 and multiview).
    #[error("no usable Vulkan device ({0}); {hint}", hint = VULKAN_PACKAGES_HINT)]
    NoDevice(String),
    /// A Vulkan call failed; `what` names the call.
    #[error("Vulkan call {what} failed: {result}")]
    Vulkan { what: &'static str, result: vk::Result },
    /// The caller's frame data breaks a documented limit (too many cubes or views, a zero extent, ...).
    #[error("bad frame input: {0}")]
    Input(String),
    /// The window or its surface cannot be used (bad handle, unsupported surface).
    #[error("window: {0}")]
    Window(String),
    /// The egui overlay renderer failed.
    #[error("overlay: {0}")]
    Overlay(String),
}

impl RenderError {
    /// True when rendering cannot happen on this machine at all (exit code 2), rather than an error.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, RenderError::NoLoader(_) | RenderError::NoDevice(_))
    }
}

/// `.ctx("vkCreateX")` on an ash result: the Vulkan error with the call's name.
pub(crate) trait VkContext<T> {
    fn ctx(self, what: &'static str) -> Result<T, RenderError>;
}

impl<T> VkContext<T> for Result<T, vk::Result> {
    fn ctx(self, what: &'static str) -> Result<T, RenderError> {
        self.map_err(|result| RenderError::Vulkan { what, result })
    }
}
