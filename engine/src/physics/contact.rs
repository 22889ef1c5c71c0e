//! (being written)
use super::BodyId;
use glam::Vec3;

/// One touching pair in the last step: who touched whom, and how hard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactReport {
    pub a: BodyId,
    /// `None` for the ground plane.
    pub b: Option<BodyId>,
    /// Unit normal from A to B.
    pub normal: Vec3,
    /// Largest normal impulse of any point this step (N·s).
    pub max_normal_impulse: f32,
    /// Largest speed at which the surfaces approached before the solver ran (m/s).
    pub approach_speed: f32,
}
