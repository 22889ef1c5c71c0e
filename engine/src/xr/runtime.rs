//! The OpenXR loader, instance and system: the part that tells "no VR here" (no loader, no runtime, no headset)
//! from a real failure, with a message that says what to install or start.

use openxr as xr;

use super::{xr_err, XrError};

/// The runtime's instance and its head-mounted system, with what it offered.
pub struct Runtime {
    pub entry: xr::Entry,
    pub instance: xr::Instance,
    pub system: xr::SystemId,
    /// "Monado(XRT) by Collabora et al '25.0.0' 25.0.0", for logs and reports.
    pub runtime_name: String,
    pub system_name: String,
    /// `XR_KHR_composition_layer_depth` was offered and is enabled: submit depth with the colour.
    pub depth_layer: bool,
    /// `XR_FB_display_refresh_rate` was offered and is enabled: the session picks the display's rate.
    pub refresh_rate: bool,
}

/// Opens the loader, creates an instance with `XR_KHR_vulkan_enable2` (and the depth layer when offered) and
/// finds the head-mounted display.
pub fn connect(app_name: &str) -> Result<Runtime, XrError> {
    // SAFETY: the library is the Khronos loader (or whatever the system put under its soname), which implements
    // the core entry points by definition.
    let entry = unsafe { xr::Entry::load(&()) }.map_err(|e| match e {
        xr::EntryError::Load(e) => XrError::LoaderMissing(e.to_string()),
        xr::EntryError::Xr(result) => XrError::NoRuntime(result.to_string()),
    })?;
    let available = entry.enumerate_extensions().map_err(runtime_missing)?;
    if !available.khr_vulkan_enable2 {
        return Err(XrError::Unsupported("XR_KHR_vulkan_enable2 (Vulkan rendering)".into()));
    }
    let mut wanted = xr::ExtensionSet::default();
    wanted.khr_vulkan_enable2 = true;
    wanted.khr_composition_layer_depth = available.khr_composition_layer_depth;
    wanted.fb_display_refresh_rate = available.fb_display_refresh_rate;

    let app_info = xr::ApplicationInfo {
        application_name: app_name,
        application_version: 1,
        engine_name: "tumble",
        engine_version: 1,
        api_version: xr::Version::new(1, 0, 0),
    };
    let instance = entry
        .create_instance(&app_info, &wanted, &[], &())
        .map_err(runtime_missing)?;
    let props = instance.properties().map_err(xr_err("xrGetInstanceProperties"))?;
    let runtime_name = format!("{} {}", props.runtime_name, props.runtime_version);

    let system = instance
        .system(xr::FormFactor::HEAD_MOUNTED_DISPLAY)
        .map_err(|result| match result {
            xr::sys::Result::ERROR_FORM_FACTOR_UNAVAILABLE | xr::sys::Result::ERROR_FORM_FACTOR_UNSUPPORTED => {
                XrError::NoHeadset(format!("{runtime_name}: {result}"))
            }
            result => XrError::Xr {
                what: "xrGetSystem",
                result,
            },
        })?;
    let system_name = instance
        .system_properties(system)
        .map(|p| p.system_name)
        .map_err(xr_err("xrGetSystemProperties"))?;
    tracing::info!(runtime = %runtime_name, system = %system_name, depth_layer = wanted.khr_composition_layer_depth,
        "OpenXR runtime");
    Ok(Runtime {
        entry,
        instance,
        system,
        runtime_name,
        system_name,
        depth_layer: wanted.khr_composition_layer_depth,
        refresh_rate: wanted.fb_display_refresh_rate,
    })
}

/// The loader's answers when it finds no active runtime, or the runtime cannot reach its service (Monado without
/// `monado-service` answers RUNTIME_FAILURE): both mean "start one".
fn runtime_missing(result: xr::sys::Result) -> XrError {
    match result {
        xr::sys::Result::ERROR_RUNTIME_UNAVAILABLE
        | xr::sys::Result::ERROR_RUNTIME_FAILURE
        | xr::sys::Result::ERROR_INSTANCE_LOST => XrError::NoRuntime(result.to_string()),
        result => XrError::Xr {
            what: "xrCreateInstance",
            result,
        },
    }
}
