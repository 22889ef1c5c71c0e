//! What the renderer's Vulkan and the VR session's Vulkan (made through the OpenXR runtime) share.

use ash::vk;

/// The API version both ask for: 1.2, where multiview (1.1) and depth resolve in a render pass (for the depth
/// layer a compositor reprojects with) are core.
pub const VULKAN_API_VERSION: u32 = vk::API_VERSION_1_2;
