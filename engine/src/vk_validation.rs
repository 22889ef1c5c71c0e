//! The Vulkan validation layers, shared by the renderer's own instances (`render`) and the VR session's
//! (`xr`, created through the runtime): whether they are installed, the messenger that logs what they report
//! (target `vulkan`), and one count of their warnings and errors for the whole process, which tests and
//! `tumble vr --json` read. They are on in debug builds (the tests) wherever `vulkan-validationlayers` is installed.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

use ash::{ext::debug_utils, vk};

pub(crate) const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// A debug messenger and the loader that destroys it.
pub(crate) type Messenger = (debug_utils::Instance, vk::DebugUtilsMessengerEXT);

/// Warnings and errors the validation layers reported in this process.
static VALIDATION_MESSAGES: AtomicU64 = AtomicU64::new(0);

/// Warnings and errors the Vulkan validation layers have reported in this process so far (0 when they are off).
pub fn validation_messages() -> u64 {
    VALIDATION_MESSAGES.load(Ordering::Relaxed)
}

/// Whether the validation layers are installed, so that debug builds run with them.
pub fn validation_layers_installed() -> bool {
    // SAFETY: loading the system's Vulkan loader; a missing one is an error, not undefined behaviour.
    unsafe { ash::Entry::load() }.is_ok_and(|entry| has_layer(&entry, VALIDATION_LAYER))
}

/// Whether this build turns the layers on: a debug build, with the layers installed.
pub(crate) fn wanted(entry: &ash::Entry) -> bool {
    cfg!(debug_assertions) && has_layer(entry, VALIDATION_LAYER)
}

pub(crate) fn has_layer(entry: &ash::Entry, name: &CStr) -> bool {
    // SAFETY: plain enumeration.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
    layers.iter().any(|l| l.layer_name_as_c_str() == Ok(name))
}

/// A messenger for warnings and errors on `instance` (made with the layer and `VK_EXT_debug_utils`).
pub(crate) fn create_messenger(entry: &ash::Entry, instance: &ash::Instance) -> Result<Messenger, vk::Result> {
    let loader = debug_utils::Instance::new(entry, instance);
    let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR)
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
        )
        .pfn_user_callback(Some(on_validation_message));
    // SAFETY: the callback is a plain function that lives for the whole program.
    let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }?;
    Ok((loader, messenger))
}

unsafe extern "system" fn on_validation_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut std::ffi::c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes a valid callback data struct whose message is a C string.
    let message = unsafe { data.as_ref().and_then(|d| d.message_as_c_str()) }.map(|m| m.to_string_lossy());
    let message = message.unwrap_or_default();
    VALIDATION_MESSAGES.fetch_add(1, Ordering::Relaxed);
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        tracing::error!(target: "vulkan", "{message}");
    } else {
        tracing::warn!(target: "vulkan", "{message}");
    }
    vk::FALSE
}
