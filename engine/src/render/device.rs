//! The Vulkan instance, the choice of physical device, the logical device and its one graphics queue.
//!
//! The loader is opened at run time (ash's `loaded`), so a machine without `libvulkan1` gets
//! [`RenderError::NoLoader`] instead of a link failure. Device choice: a discrete GPU first, then integrated,
//! virtual, and last a CPU device such as Mesa's lavapipe; every candidate needs Vulkan 1.2 and multiview.
//! Validation layers are on in debug builds when installed. [`Gpu::from_external`] wraps handles that someone
//! else created (an OpenXR runtime through `XR_KHR_vulkan_enable2`) without taking ownership.

use std::ffi::{c_char, CStr};

use ash::{ext::debug_utils, vk};
use raw_window_handle::RawDisplayHandle;

use super::error::{RenderError, VkContext};
use crate::vk_validation::{create_messenger, Messenger, VALIDATION_LAYER};

/// The API version the renderer asks for: 1.2, where multiview and depth resolve are core.
pub use crate::vk_common::VULKAN_API_VERSION;

/// Device extensions the renderer needs beyond core 1.1 when drawing to a window (none for offscreen or XR).
pub const WINDOW_DEVICE_EXTENSIONS: &[&CStr] = &[ash::khr::swapchain::NAME];

/// The instance, device and queue the renderer draws with, and what it learnt about the device.
pub struct Gpu {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical_device: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub queue_family: u32,
    pub info: GpuInfo,
    pub(crate) memory_properties: vk::PhysicalDeviceMemoryProperties,
    debug: Option<Messenger>,
    /// False for [`Gpu::from_external`]: the handles belong to the caller and are not destroyed here.
    owned: bool,
}

/// Facts about the chosen device that the rest of the renderer needs.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    pub name: String,
    pub device_type: vk::PhysicalDeviceType,
    /// Highest of 4x, 2x, 1x supported for both colour and depth attachments.
    pub msaa_samples: vk::SampleCountFlags,
    pub depth_format: vk::Format,
    /// Nanoseconds per timestamp tick; `None` when the queue has no timestamps.
    pub timestamp_period_ns: Option<f32>,
    /// The driver's name and version text (`VkPhysicalDeviceDriverProperties`), e.g. "llvmpipe Mesa 22.3.6".
    pub driver: String,
    /// Pipeline statistics queries were enabled on this device (only on devices the renderer creates itself).
    pub pipeline_statistics: bool,
}

/// Handles created by someone else (an OpenXR runtime): the renderer uses them and never destroys them. The
/// device must have been created with API version ≥ 1.2 and the `multiview` feature enabled
/// ([`required_device_features`]); `queue` must support graphics.
pub struct ExternalVulkan {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical_device: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue_family: u32,
    pub queue_index: u32,
}

/// The device features the renderer enables: `multiview` (core 1.1). XR passes this chain to the runtime.
pub fn required_device_features() -> vk::PhysicalDeviceMultiviewFeatures<'static> {
    vk::PhysicalDeviceMultiviewFeatures::default().multiview(true)
}

/// Opens the Vulkan loader; the error names the packages to install.
pub fn load_vulkan() -> Result<ash::Entry, RenderError> {
    // SAFETY: loading the system's Vulkan loader library runs its initialisers; that is what it is for.
    unsafe { ash::Entry::load() }.map_err(|e| RenderError::NoLoader(e.to_string()))
}

impl Gpu {
    /// A device for offscreen rendering: no window extensions.
    pub fn headless() -> Result<Gpu, RenderError> {
        let entry = load_vulkan()?;
        let (instance, debug) = create_instance(&entry, &[])?;
        Gpu::finish(entry, instance, debug, &[], &|_, _| true, None)
    }

    /// A device for windows whose surfaces need `instance_extensions` (see `window_extensions`), with
    /// `VK_KHR_swapchain`: a mirror window's in tests, made without an OpenXR runtime. Whether its queue can present
    /// to a given window is asked when the mirror is made.
    pub fn for_window_extensions(instance_extensions: &[&CStr]) -> Result<Gpu, RenderError> {
        let entry = load_vulkan()?;
        let names: Vec<*const c_char> = instance_extensions.iter().map(|e| e.as_ptr()).collect();
        let (instance, debug) = create_instance(&entry, &names)?;
        Gpu::finish(entry, instance, debug, WINDOW_DEVICE_EXTENSIONS, &|_, _| true, None)
    }

    /// A device that can present to windows on `display`, chosen among those whose graphics queue can present to
    /// `surface_for` 's surface. Returns the surface too (the caller owns it).
    pub(crate) fn for_window(
        display: RawDisplayHandle,
        create_surface: &dyn Fn(&ash::Entry, &ash::Instance) -> Result<vk::SurfaceKHR, RenderError>,
    ) -> Result<(Gpu, vk::SurfaceKHR), RenderError> {
        let entry = load_vulkan()?;
        let extensions = ash_window::enumerate_required_extensions(display).ctx("enumerating surface extensions")?;
        let (instance, debug) = create_instance(&entry, extensions)?;
        let surface = match create_surface(&entry, &instance) {
            Ok(s) => s,
            Err(e) => {
                destroy_instance(&instance, debug);
                return Err(e);
            }
        };
        let surface_fn = ash::khr::surface::Instance::new(&entry, &instance);
        let can_present = |pd: vk::PhysicalDevice, family: u32| {
            // SAFETY: valid handles from this instance.
            unsafe { surface_fn.get_physical_device_surface_support(pd, family, surface) }.unwrap_or(false)
        };
        let gpu = Gpu::finish(
            entry,
            instance,
            debug,
            WINDOW_DEVICE_EXTENSIONS,
            &can_present,
            Some(surface),
        )?;
        Ok((gpu, surface))
    }

    /// Picks the device and creates it. On failure destroys `surface` (if any) and the instance.
    fn finish(
        entry: ash::Entry,
        instance: ash::Instance,
        debug: Option<Messenger>,
        device_extensions: &[&CStr],
        can_present: &dyn Fn(vk::PhysicalDevice, u32) -> bool,
        surface: Option<vk::SurfaceKHR>,
    ) -> Result<Gpu, RenderError> {
        let fail = |instance: &ash::Instance, debug, e| {
            if let Some(surface) = surface {
                // SAFETY: the surface was made from this instance and nothing else uses it.
                unsafe { ash::khr::surface::Instance::new(&entry, instance).destroy_surface(surface, None) };
            }
            destroy_instance(instance, debug);
            Err(e)
        };
        let picked = match pick_device(&instance, device_extensions, can_present) {
            Ok(p) => p,
            Err(e) => return fail(&instance, debug, e),
        };
        let (physical_device, queue_family) = picked;
        let priorities = [1.0f32];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let ext_ptrs: Vec<*const c_char> = device_extensions.iter().map(|e| e.as_ptr()).collect();
        let mut multiview = required_device_features();
        // SAFETY: plain query of a device from this instance.
        let supported = unsafe { instance.get_physical_device_features(physical_device) };
        // Pipeline statistics (vertex and fragment invocations per pass) for `render-bench`, where the device has them.
        let statistics = supported.pipeline_statistics_query == vk::TRUE;
        let enabled = vk::PhysicalDeviceFeatures::default().pipeline_statistics_query(statistics);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_info)
            .enabled_extension_names(&ext_ptrs)
            .enabled_features(&enabled)
            .push_next(&mut multiview);
        // SAFETY: the physical device came from this instance; the create info outlives the call.
        let device = match unsafe { instance.create_device(physical_device, &info, None) } {
            Ok(d) => d,
            Err(result) => {
                return fail(
                    &instance,
                    debug,
                    RenderError::Vulkan {
                        what: "vkCreateDevice",
                        result,
                    },
                )
            }
        };
        let mut gpu = Gpu::wrap(entry, instance, physical_device, device, queue_family, 0);
        gpu.debug = debug;
        gpu.owned = true;
        gpu.info.pipeline_statistics = statistics;
        tracing::info!(device = %gpu.info.name, kind = ?gpu.info.device_type, msaa = ?gpu.info.msaa_samples, "Vulkan device");
        Ok(gpu)
    }

    /// Wraps handles an OpenXR runtime (or any other owner) created; they are not destroyed when the `Gpu` drops.
    pub fn from_external(ext: ExternalVulkan) -> Gpu {
        Gpu::wrap(
            ext.entry,
            ext.instance,
            ext.physical_device,
            ext.device,
            ext.queue_family,
            ext.queue_index,
        )
    }

    fn wrap(
        entry: ash::Entry,
        instance: ash::Instance,
        physical_device: vk::PhysicalDevice,
        device: ash::Device,
        queue_family: u32,
        queue_index: u32,
    ) -> Gpu {
        // SAFETY: valid handles; the queue family and index were requested at device creation.
        let (queue, info, memory_properties) = unsafe {
            let queue = device.get_device_queue(queue_family, queue_index);
            let info = describe(&instance, physical_device, queue_family);
            (
                queue,
                info,
                instance.get_physical_device_memory_properties(physical_device),
            )
        };
        Gpu {
            entry,
            instance,
            physical_device,
            device,
            queue,
            queue_family,
            info,
            memory_properties,
            debug: None,
            owned: false,
        }
    }

    /// Blocks until the device has finished all work.
    pub fn wait_idle(&self) {
        // SAFETY: valid device. A lost device shows up again in the next call that matters; ignore it here.
        let _ = unsafe { self.device.device_wait_idle() };
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // SAFETY: everything made from the device was destroyed by its owners (they hold no `Gpu` past its life).
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
        }
        destroy_instance(&self.instance, self.debug.take());
    }
}

fn destroy_instance(instance: &ash::Instance, debug: Option<Messenger>) {
    // SAFETY: no device or surface of this instance is alive any more.
    unsafe {
        if let Some((loader, messenger)) = debug {
            loader.destroy_debug_utils_messenger(messenger, None);
        }
        instance.destroy_instance(None);
    }
}

fn create_instance(
    entry: &ash::Entry,
    extensions: &[*const c_char],
) -> Result<(ash::Instance, Option<Messenger>), RenderError> {
    let app = vk::ApplicationInfo::default()
        .application_name(c"tumble")
        .engine_name(c"tumble")
        .api_version(VULKAN_API_VERSION);
    let mut ext: Vec<*const c_char> = extensions.to_vec();
    let mut layers: Vec<*const c_char> = Vec::new();
    let validate = crate::vk_validation::wanted(entry);
    if validate {
        layers.push(VALIDATION_LAYER.as_ptr());
        ext.push(debug_utils::NAME.as_ptr());
    }
    let info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_layer_names(&layers)
        .enabled_extension_names(&ext);
    // SAFETY: the create info and its strings outlive the call.
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|result| match result {
        vk::Result::ERROR_INCOMPATIBLE_DRIVER => RenderError::NoDevice("no Vulkan driver is installed".into()),
        result => RenderError::Vulkan {
            what: "vkCreateInstance",
            result,
        },
    })?;
    let debug = if validate {
        Some(
            create_messenger(entry, &instance).map_err(|result| RenderError::Vulkan {
                what: "vkCreateDebugUtilsMessengerEXT",
                result,
            })?,
        )
    } else {
        None
    };
    if validate {
        tracing::info!("Vulkan validation layers on");
    }
    Ok((instance, debug))
}

/// The best device (discrete > integrated > virtual > CPU) with Vulkan 1.2, multiview, the extensions and a
/// graphics queue that `can_present` accepts.
fn pick_device(
    instance: &ash::Instance,
    extensions: &[&CStr],
    can_present: &dyn Fn(vk::PhysicalDevice, u32) -> bool,
) -> Result<(vk::PhysicalDevice, u32), RenderError> {
    // SAFETY: plain queries on a valid instance.
    let devices = unsafe { instance.enumerate_physical_devices() }.ctx("vkEnumeratePhysicalDevices")?;
    if devices.is_empty() {
        return Err(RenderError::NoDevice("the Vulkan loader found no device".into()));
    }
    let mut best: Option<(u32, vk::PhysicalDevice, u32)> = None;
    let mut rejected = Vec::new();
    for pd in devices {
        // SAFETY: pd came from this instance.
        let props = unsafe { instance.get_physical_device_properties(pd) };
        let name = props
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match suitability(instance, pd, &props, extensions, can_present) {
            Ok(family) => {
                let score = match props.device_type {
                    vk::PhysicalDeviceType::DISCRETE_GPU => 4,
                    vk::PhysicalDeviceType::INTEGRATED_GPU => 3,
                    vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
                    vk::PhysicalDeviceType::CPU => 1,
                    _ => 0,
                };
                if best.is_none_or(|(s, _, _)| score > s) {
                    best = Some((score, pd, family));
                }
            }
            Err(why) => rejected.push(format!("{name}: {why}")),
        }
    }
    best.map(|(_, pd, family)| (pd, family))
        .ok_or_else(|| RenderError::NoDevice(rejected.join("; ")))
}

fn suitability(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    props: &vk::PhysicalDeviceProperties,
    extensions: &[&CStr],
    can_present: &dyn Fn(vk::PhysicalDevice, u32) -> bool,
) -> Result<u32, &'static str> {
    if props.api_version < VULKAN_API_VERSION {
        return Err("older than Vulkan 1.2");
    }
    let mut multiview = vk::PhysicalDeviceMultiviewFeatures::default();
    let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut multiview);
    // SAFETY: pd is a 1.1 device, so the core 1.1 query exists.
    unsafe { instance.get_physical_device_features2(pd, &mut features) };
    if multiview.multiview == vk::FALSE {
        return Err("no multiview");
    }
    // SAFETY: plain queries.
    let available = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    if !extensions
        .iter()
        .all(|want| available.iter().any(|e| e.extension_name_as_c_str() == Ok(want)))
    {
        return Err("missing the swapchain extension");
    }
    // SAFETY: plain queries.
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    (0..families.len() as u32)
        .find(|&i| families[i as usize].queue_flags.contains(vk::QueueFlags::GRAPHICS) && can_present(pd, i))
        .ok_or("no graphics queue that can present")
}

/// # Safety
/// Valid instance and physical device of it.
unsafe fn describe(instance: &ash::Instance, pd: vk::PhysicalDevice, family: u32) -> GpuInfo {
    // SAFETY: per the function's contract.
    let (props, families) = unsafe {
        (
            instance.get_physical_device_properties(pd),
            instance.get_physical_device_queue_family_properties(pd),
        )
    };
    let limits = props.limits;
    let counts = limits.framebuffer_color_sample_counts & limits.framebuffer_depth_sample_counts;
    let msaa_samples = [vk::SampleCountFlags::TYPE_4, vk::SampleCountFlags::TYPE_2]
        .into_iter()
        .find(|&s| counts.contains(s))
        .unwrap_or(vk::SampleCountFlags::TYPE_1);
    let has_timestamps = limits.timestamp_compute_and_graphics == vk::TRUE
        || families
            .get(family as usize)
            .is_some_and(|f| f.timestamp_valid_bits > 0);
    let depth_needs = vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT | vk::FormatFeatureFlags::SAMPLED_IMAGE;
    let depth_format = [vk::Format::D32_SFLOAT, vk::Format::D16_UNORM]
        .into_iter()
        // SAFETY: plain query.
        .find(|&f| {
            unsafe { instance.get_physical_device_format_properties(pd, f) }
                .optimal_tiling_features
                .contains(depth_needs)
        })
        .unwrap_or(vk::Format::D16_UNORM);
    let mut driver_props = vk::PhysicalDeviceDriverProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver_props);
    // SAFETY: a 1.2 device (checked before it is picked), so the core query and its chain exist.
    unsafe { instance.get_physical_device_properties2(pd, &mut props2) };
    let text = |c: Result<&CStr, _>| c.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let driver = format!(
        "{} {}",
        text(driver_props.driver_name_as_c_str()),
        text(driver_props.driver_info_as_c_str())
    )
    .trim()
    .to_string();
    GpuInfo {
        driver,
        pipeline_statistics: false,
        name: props
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        device_type: props.device_type,
        msaa_samples,
        depth_format,
        timestamp_period_ns: has_timestamps.then_some(limits.timestamp_period),
    }
}
