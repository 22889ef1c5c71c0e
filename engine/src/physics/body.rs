//! Bodies as plain data: what a caller describes ([`BodyDesc`]), what it reads and writes every step
//! ([`BodyState`]), and the limits every value is checked against before it reaches the solver.

use glam::{Quat, Vec3};

use super::PhysicsError;

/// Index of a body in its [`World`](super::World). Ids are dense and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BodyId(pub u32);

impl BodyId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// How a body moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// Moved by gravity and contacts.
    Dynamic,
    /// Moved only by the velocity its owner sets (held cubes, hands); pushes dynamic bodies, is never pushed.
    Kinematic,
}

/// Largest linear speed a body may have; faster values are clamped, not refused. Thrown cubes reach 20 m/s.
pub const MAX_LINEAR_SPEED_M_S: f32 = 50.0;
/// Largest angular speed a body may have; faster values are clamped. Keeps rotation per step under 0.6 rad.
pub const MAX_ANGULAR_SPEED_RAD_S: f32 = 50.0;
/// Bodies must start inside this distance of the origin on every axis.
pub const MAX_POSITION_M: f32 = 4096.0;
/// Half extents must lie in this range: smaller boxes tunnel, larger ones break the broadphase's cell size.
pub const MIN_HALF_EXTENT_M: f32 = 0.01;
pub const MAX_HALF_EXTENT_M: f32 = 16.0;
/// Density range in kg/m³ (cubes default to 1, as in the reference sample's unit masses). The lower end keeps
/// the lightest, smallest box's mass (8e-9 kg) and moment of inertia (5e-13 kg·m²) normal floats with finite
/// inverses; without it a density of 1e-38 gave a mass that rounds to zero and an infinite inverse mass.
pub const MIN_DENSITY_KG_M3: f32 = 1.0e-3;
pub const MAX_DENSITY_KG_M3: f32 = 100_000.0;
/// Friction coefficients above this are refused (1.0 is already rubber on concrete).
pub const MAX_FRICTION: f32 = 10.0;

/// Everything needed to create a body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyDesc {
    pub kind: BodyKind,
    pub half_extents: Vec3,
    /// kg/m³; mass = density × volume. A kinematic body uses it only if it is made dynamic (`World::set_kind`).
    pub density: f32,
    pub friction: f32,
    /// Bounciness in 0..=1, applied only above the world's restitution threshold.
    pub restitution: f32,
    pub position: Vec3,
    pub rotation: Quat,
    pub linear_velocity: Vec3,
    pub angular_velocity: Vec3,
}

impl Default for BodyDesc {
    /// A one-metre dynamic cube at the origin, density 1, friction 0.6, no bounce.
    fn default() -> Self {
        Self {
            kind: BodyKind::Dynamic,
            half_extents: Vec3::splat(0.5),
            density: 1.0,
            friction: 0.6,
            restitution: 0.0,
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        }
    }
}

/// A body's full dynamic state: what state sync reads, quantizes and writes back every step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyState {
    pub position: Vec3,
    pub rotation: Quat,
    pub linear_velocity: Vec3,
    pub angular_velocity: Vec3,
    /// True when rest detection has put the body to sleep (its velocities are then zero).
    pub at_rest: bool,
}

fn check_finite(field: &'static str, v: &[f32]) -> Result<(), PhysicsError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(PhysicsError::NotFinite { field })
    }
}

fn check_range(field: &'static str, value: f32, min: f32, max: f32) -> Result<(), PhysicsError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(PhysicsError::OutOfRange { field, value, min, max })
    }
}

/// Refuses non-finite or absurd poses; returns the rotation normalised. A rotation must be a unit quaternion
/// give or take 1 %, so that a caller's bug (a zero or unnormalised quaternion) is reported, not hidden.
pub(crate) fn validate_pose(position: Vec3, rotation: Quat) -> Result<Quat, PhysicsError> {
    check_finite("position", &position.to_array())?;
    check_finite("rotation", &rotation.to_array())?;
    for p in position.to_array() {
        check_range("position", p, -MAX_POSITION_M, MAX_POSITION_M)?;
    }
    let len = rotation.length();
    check_range("rotation length", len, 0.99, 1.01)?;
    Ok(rotation / len)
}

/// Refuses non-finite velocities and clamps finite ones to the documented maxima.
pub(crate) fn validate_velocities(linear: Vec3, angular: Vec3) -> Result<(Vec3, Vec3), PhysicsError> {
    check_finite("linear_velocity", &linear.to_array())?;
    check_finite("angular_velocity", &angular.to_array())?;
    Ok((
        linear.clamp_length_max(MAX_LINEAR_SPEED_M_S),
        angular.clamp_length_max(MAX_ANGULAR_SPEED_RAD_S),
    ))
}

impl BodyDesc {
    /// Checks every field; returns the description with rotation normalised and speeds clamped.
    pub(crate) fn validated(&self) -> Result<BodyDesc, PhysicsError> {
        check_finite("half_extents", &self.half_extents.to_array())?;
        for h in self.half_extents.to_array() {
            check_range("half_extents", h, MIN_HALF_EXTENT_M, MAX_HALF_EXTENT_M)?;
        }
        check_finite("density", &[self.density])?;
        // A kinematic body may be massless (density 0: a hand); with a density it can be made dynamic later, so
        // that density must be one a dynamic body could have.
        if self.kind == BodyKind::Dynamic || self.density != 0.0 {
            check_range("density", self.density, MIN_DENSITY_KG_M3, MAX_DENSITY_KG_M3)?;
        }
        check_finite("friction", &[self.friction])?;
        check_range("friction", self.friction, 0.0, MAX_FRICTION)?;
        check_finite("restitution", &[self.restitution])?;
        check_range("restitution", self.restitution, 0.0, 1.0)?;
        let rotation = validate_pose(self.position, self.rotation)?;
        let (linear_velocity, angular_velocity) = validate_velocities(self.linear_velocity, self.angular_velocity)?;
        Ok(BodyDesc {
            rotation,
            linear_velocity,
            angular_velocity,
            ..*self
        })
    }
}

/// Inverse mass (1/kg) and inverse principal moments of inertia (1/(kg·m²)) of a solid box, or zeros for a
/// massless kinematic body (density 0). Refuses anything that is not finite and positive: the solver divides by
/// none of these, it multiplies by them, so an infinite one would turn the first contact into NaN.
pub(crate) fn inverse_mass_properties(half: Vec3, density: f32) -> Result<(f32, Vec3), PhysicsError> {
    if density == 0.0 {
        return Ok((0.0, Vec3::ZERO));
    }
    let mass = density * 8.0 * half.x * half.y * half.z;
    // Solid box: I = m/3 (hy² + hz², …) with half extents.
    let (x2, y2, z2) = (half.x * half.x, half.y * half.y, half.z * half.z);
    let inertia = Vec3::new(y2 + z2, x2 + z2, x2 + y2) * (mass / 3.0);
    let inverse = (1.0 / mass, Vec3::ONE / inertia);
    let usable = |x: f32| x.is_normal() && x > 0.0;
    if usable(inverse.0) && inverse.1.to_array().into_iter().all(usable) {
        Ok(inverse)
    } else {
        Err(PhysicsError::OutOfRange {
            field: "mass (density × volume)",
            value: mass,
            min: MIN_DENSITY_KG_M3 * 8.0 * MIN_HALF_EXTENT_M.powi(3),
            max: MAX_DENSITY_KG_M3 * 8.0 * MAX_HALF_EXTENT_M.powi(3),
        })
    }
}

impl BodyState {
    pub(crate) fn validated(&self) -> Result<BodyState, PhysicsError> {
        let rotation = validate_pose(self.position, self.rotation)?;
        let (linear_velocity, angular_velocity) = validate_velocities(self.linear_velocity, self.angular_velocity)?;
        let (linear_velocity, angular_velocity) = if self.at_rest {
            (Vec3::ZERO, Vec3::ZERO)
        } else {
            (linear_velocity, angular_velocity)
        };
        Ok(BodyState {
            rotation,
            linear_velocity,
            angular_velocity,
            ..*self
        })
    }
}
