//! The depth range every projection is made with, in one place. The renderer's projections (desktop camera,
//! stereo preview, VR eyes) and the depth layer an OpenXR compositor is given must agree: a compositor that
//! reprojects with other planes than the depth was drawn with puts everything at the wrong distance.

/// Near plane (m): close enough for a hand in front of the face.
pub const NEAR_M: f32 = 0.05;
/// Far plane (m): the ground plane's horizon fades long before it.
pub const FAR_M: f32 = 300.0;
