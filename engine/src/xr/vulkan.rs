//! The Vulkan instance and device of a VR session, created through the runtime (`XR_KHR_vulkan_enable2`): the
//! runtime picks the GPU that drives the headset and adds the extensions it needs to share swapchain images with
//! its compositor. We ask for Vulkan 1.2 and the multiview feature (one pass draws both eyes).
//!
//! `engine::render` records into the session's swapchain images with these handles.

use ash::vk;
use ash::vk::Handle;
use openxr as xr;

use super::runtime::Runtime;
use super::{xr_err, XrError};

/// The renderer's Vulkan version (1.2), asked of the runtime's instance and device.
pub use crate::vk_common::VULKAN_API_VERSION;

/// Vulkan as the VR session uses it. Destroyed (device, then instance) on drop, after everything made from it.
pub struct XrVulkan {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical_device: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue_family_index: u32,
    pub queue: vk::Queue,
    pub device_name: String,
    /// Whether the instance has a window system's surface extensions and the device `VK_KHR_swapchain`: a
    /// desktop window (a mirror) can show what this device draws.
    pub can_present: bool,
    /// The validation layers' messenger, in debug builds where they are installed.
    debug: Option<crate::vk_validation::Messenger>,
}

impl XrVulkan {
    /// Whether the Vulkan validation layers run on this instance (a debug build where they are installed).
    pub fn validation_on(&self) -> bool {
        self.debug.is_some()
    }

    /// Creates the instance and device through the runtime for `runtime.system`, the instance with
    /// `window_extensions` too where the loader has them all (for a desktop window; see [`XrVulkan::can_present`]).
    pub fn new(runtime: &Runtime, window_extensions: &[&'static std::ffi::CStr]) -> Result<XrVulkan, XrError> {
        // SAFETY: loads the system's Vulkan loader, which implements the core entry points by definition.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| XrError::VulkanMissing(e.to_string()))?;
        let reqs = runtime
            .instance
            .graphics_requirements::<xr::Vulkan>(runtime.system)
            .map_err(xr_err("xrGetVulkanGraphicsRequirements2KHR"))?;
        let wanted = xr::Version::new(1, 2, 0);
        // The runtime's maximum is the newest Vulkan it was tested with, not a limit: newer compatible versions
        // work (the device itself must offer 1.2, checked when it is picked).
        if reqs.max_api_version_supported < wanted {
            tracing::warn!(max = %reqs.max_api_version_supported, "the runtime was tested with Vulkan older than 1.2");
        }
        if reqs.min_api_version_supported > wanted {
            tracing::warn!(min = %reqs.min_api_version_supported, "the runtime wants a newer Vulkan than 1.2");
        }

        let validate = crate::vk_validation::wanted(&entry);
        let window_extensions = if window_extensions.is_empty() || has_instance_extensions(&entry, window_extensions) {
            window_extensions
        } else {
            tracing::warn!("the Vulkan loader lacks the window system's surface extensions: no mirror window");
            &[]
        };
        let instance = create_instance(&entry, runtime, validate, window_extensions)?;
        let debug = if validate {
            match crate::vk_validation::create_messenger(&entry, &instance) {
                Ok(m) => Some(m),
                Err(result) => {
                    tracing::warn!(?result, "no validation messenger: the layers run unheard");
                    None
                }
            }
        } else {
            None
        };
        if debug.is_some() {
            tracing::info!("Vulkan validation layers on (the runtime's instance)");
        }
        match create_device(entry.clone(), instance.clone(), runtime, !window_extensions.is_empty()) {
            Ok(mut vulkan) => {
                vulkan.debug = debug;
                Ok(vulkan)
            }
            Err(e) => {
                // SAFETY: nothing was made from the instance but a device creation that failed, and the messenger.
                unsafe {
                    if let Some((loader, messenger)) = debug {
                        loader.destroy_debug_utils_messenger(messenger, None);
                    }
                    instance.destroy_instance(None);
                }
                Err(e)
            }
        }
    }
}

impl Drop for XrVulkan {
    fn drop(&mut self) {
        // SAFETY: everything made from the device (swapchain image views, render pass, command pool) belongs to
        // structures dropped before this one (see `XrSession`'s field order), and the runtime's session is gone.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            if let Some((loader, messenger)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// Whether the loader offers every one of `names` as an instance extension.
fn has_instance_extensions(entry: &ash::Entry, names: &[&std::ffi::CStr]) -> bool {
    // SAFETY: a plain query of the loader.
    let Ok(available) = (unsafe { entry.enumerate_instance_extension_properties(None) }) else {
        return false;
    };
    names
        .iter()
        .all(|n| available.iter().any(|e| e.extension_name_as_c_str() == Ok(*n)))
}

/// The runtime's `xrCreateVulkanInstanceKHR` with our application info, `window_extensions` (with `validate`, also
/// the validation layer and `VK_EXT_debug_utils`); it adds its own extensions.
fn create_instance(
    entry: &ash::Entry,
    runtime: &Runtime,
    validate: bool,
    window_extensions: &[&'static std::ffi::CStr],
) -> Result<ash::Instance, XrError> {
    let app_info = vk::ApplicationInfo::default()
        .application_name(c"tumble")
        .engine_name(c"tumble")
        .api_version(VULKAN_API_VERSION);
    let layers = [crate::vk_validation::VALIDATION_LAYER.as_ptr()];
    let mut extensions: Vec<*const std::ffi::c_char> = window_extensions.iter().map(|n| n.as_ptr()).collect();
    if validate {
        extensions.push(ash::ext::debug_utils::NAME.as_ptr());
    }
    let mut create_info = vk::InstanceCreateInfo::default()
        .application_info(&app_info)
        .enabled_extension_names(&extensions);
    if validate {
        create_info = create_info.enabled_layer_names(&layers);
    }
    let gipa = get_instance_proc_addr(entry);
    // SAFETY: the create info and the function pointer are valid for the call; the runtime calls vkCreateInstance
    // with them plus its extensions.
    let raw = unsafe {
        runtime
            .instance
            .create_vulkan_instance(runtime.system, gipa, &create_info as *const _ as *const _)
    }
    .map_err(xr_err("xrCreateVulkanInstanceKHR"))?
    .map_err(|r| XrError::Vulkan {
        what: "vkCreateInstance (through the runtime)",
        result: vk::Result::from_raw(r),
    })?;
    // SAFETY: `raw` is a live instance created from `entry`'s loader.
    Ok(unsafe { ash::Instance::load(entry.static_fn(), vk::Instance::from_raw(raw as u64)) })
}

/// The runtime's physical device, one graphics queue, multiview on, created by `xrCreateVulkanDeviceKHR`; with
/// `present` (the instance has surface extensions), `VK_KHR_swapchain` too where the device has it.
fn create_device(
    entry: ash::Entry,
    instance: ash::Instance,
    runtime: &Runtime,
    present: bool,
) -> Result<XrVulkan, XrError> {
    // SAFETY: the instance came from xrCreateVulkanInstanceKHR, as vkGetVulkanGraphicsDevice2KHR requires.
    let raw_physical = unsafe {
        runtime
            .instance
            .vulkan_graphics_device(runtime.system, instance.handle().as_raw() as _)
    }
    .map_err(xr_err("xrGetVulkanGraphicsDevice2KHR"))?;
    let physical_device = vk::PhysicalDevice::from_raw(raw_physical as u64);

    // SAFETY: a valid physical device of this instance.
    let props = unsafe { instance.get_physical_device_properties(physical_device) };
    let device_name = props
        .device_name_as_c_str()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if props.api_version < VULKAN_API_VERSION {
        return Err(XrError::Unsupported(format!(
            "a Vulkan 1.2 device ({device_name} is older)"
        )));
    }
    let mut multiview = vk::PhysicalDeviceMultiviewFeatures::default();
    let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut multiview);
    // SAFETY: as above; the chain is well-formed.
    unsafe { instance.get_physical_device_features2(physical_device, &mut features) };
    if multiview.multiview == vk::FALSE {
        return Err(XrError::Unsupported(format!("multiview on {device_name}")));
    }

    // SAFETY: as above.
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical_device) };
    let queue_family_index = families
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .ok_or_else(|| XrError::Unsupported(format!("a graphics queue on {device_name}")))?
        as u32;

    let priorities = [1.0f32];
    let queue_infos = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(queue_family_index)
        .queue_priorities(&priorities)];
    // SAFETY: as above.
    let has_swapchain = present
        && unsafe { instance.enumerate_device_extension_properties(physical_device) }.is_ok_and(|exts| {
            exts.iter()
                .any(|e| e.extension_name_as_c_str() == Ok(ash::khr::swapchain::NAME))
        });
    let device_extensions = [ash::khr::swapchain::NAME.as_ptr()];
    let mut enable_multiview = vk::PhysicalDeviceMultiviewFeatures::default().multiview(true);
    let mut create_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queue_infos)
        .push_next(&mut enable_multiview);
    if has_swapchain {
        create_info = create_info.enabled_extension_names(&device_extensions);
    }
    // SAFETY: the create info and its chain are valid for the call.
    let raw_device = unsafe {
        runtime.instance.create_vulkan_device(
            runtime.system,
            get_instance_proc_addr(&entry),
            raw_physical,
            &create_info as *const _ as *const _,
        )
    }
    .map_err(xr_err("xrCreateVulkanDeviceKHR"))?
    .map_err(|r| XrError::Vulkan {
        what: "vkCreateDevice (through the runtime)",
        result: vk::Result::from_raw(r),
    })?;
    // SAFETY: a live device of this instance.
    let device = unsafe { ash::Device::load(instance.fp_v1_0(), vk::Device::from_raw(raw_device as u64)) };
    // SAFETY: family and index were in the create info.
    let queue = unsafe { device.get_device_queue(queue_family_index, 0) };
    tracing::info!(device = %device_name, queue_family_index, "Vulkan device created through the OpenXR runtime");
    Ok(XrVulkan {
        entry,
        instance,
        physical_device,
        device,
        queue_family_index,
        queue,
        device_name,
        can_present: has_swapchain,
        debug: None,
    })
}

/// ash's `vkGetInstanceProcAddr` in the type openxr wants (the same C function pointer).
fn get_instance_proc_addr(entry: &ash::Entry) -> xr::sys::platform::VkGetInstanceProcAddr {
    let f: vk::PFN_vkGetInstanceProcAddr = entry.static_fn().get_instance_proc_addr;
    // SAFETY: both are `PFN_vkGetInstanceProcAddr` in C; the Rust types differ only in how handles are spelled.
    unsafe { std::mem::transmute::<vk::PFN_vkGetInstanceProcAddr, xr::sys::platform::VkGetInstanceProcAddr>(f) }
}

/// A human name for a Vulkan format number, for logs.
pub fn format_name(format: i64) -> String {
    format!("{:?}", vk::Format::from_raw(format as i32))
}
