//! Pushing a dynamic body from outside the solver: an impulse applied at its centre of mass, as game code that
//! drives bodies with forces needs (a force F over one step is the impulse F·dt). The body wakes and its rest
//! window starts over: a body something keeps pushing is not at rest, however slowly it moves.

use glam::{Mat3, Vec3};

use super::World;
use crate::physics::body::validate_velocities;
use crate::physics::{BodyId, BodyKind, PhysicsError};

impl World {
    /// A body's mass (kg): infinite for a kinematic body created without a density.
    pub fn mass(&self, id: BodyId) -> Result<f32, PhysicsError> {
        let i = self.check(id)?;
        let inv = self.inv_mass[i];
        Ok(if inv > 0.0 { 1.0 / inv } else { f32::INFINITY })
    }

    /// Adds `linear` (N·s) and `angular` (N·m·s, world frame) impulses at a dynamic body's centre of mass: its
    /// velocities change by `linear / m` and `I⁻¹ · angular` (then clamped to the body speed limits). A body at rest
    /// wakes (its island wakes with it in the next step) and its rest window starts over. Non-finite impulses are
    /// refused and change nothing; a zero impulse, a kinematic body and a body that fell below the world floor are
    /// left as they are (kinematic bodies move only by their targets).
    pub fn apply_impulse(&mut self, id: BodyId, linear: Vec3, angular: Vec3) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        if !linear.is_finite() {
            return Err(PhysicsError::NotFinite {
                field: "linear impulse",
            });
        }
        if !angular.is_finite() {
            return Err(PhysicsError::NotFinite {
                field: "angular impulse",
            });
        }
        if self.kind[i] != BodyKind::Dynamic || self.removed[i] || (linear == Vec3::ZERO && angular == Vec3::ZERO) {
            return Ok(());
        }
        let r = Mat3::from_quat(self.rotation[i]);
        let inv_inertia = r * Mat3::from_diagonal(self.inv_inertia_local[i]) * r.transpose();
        let (v, w) = validate_velocities(
            self.linear_velocity[i] + linear * self.inv_mass[i],
            self.angular_velocity[i] + inv_inertia * angular,
        )?;
        self.linear_velocity[i] = v;
        self.angular_velocity[i] = w;
        self.set_at_rest(i, false);
        self.history[i].clear();
        self.woken_by_remote[i] = false;
        self.awake.insert(i as u32);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physics::{BodyDesc, WorldConfig};

    fn resting_cube(world: &mut World, x: f32) -> BodyId {
        world
            .add_body(&BodyDesc {
                position: Vec3::new(x, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap()
    }

    fn settle(world: &mut World) {
        for _ in 0..200 {
            world.step();
        }
        assert!(world.all_at_rest());
    }

    #[test]
    fn an_impulse_wakes_a_resting_cube_and_changes_its_velocity_by_impulse_over_mass() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let id = resting_cube(&mut world, 0.0);
        let neighbour = resting_cube(&mut world, 1.0);
        settle(&mut world);
        let mass = world.mass(id).unwrap();
        assert_eq!(mass, 1.0, "a 1 m cube of density 1");
        world.apply_impulse(id, Vec3::new(3.0, 2.0, 0.0), Vec3::ZERO).unwrap();
        let s = world.state(id).unwrap();
        assert!(!s.at_rest);
        assert_eq!(s.linear_velocity, Vec3::new(3.0, 2.0, 0.0));
        world.step();
        assert!(world.state(id).unwrap().position.y > 0.5, "it lifts off");
        for _ in 0..10 {
            world.step();
        }
        assert!(
            world.state(neighbour).unwrap().position.x > 1.0,
            "it pushed its resting neighbour away"
        );
    }

    #[test]
    fn an_angular_impulse_spins_the_cube_by_the_inverse_inertia() {
        let mut world = World::new(WorldConfig {
            gravity: Vec3::ZERO,
            ground_height: None,
            ..WorldConfig::default()
        })
        .unwrap();
        let id = resting_cube(&mut world, 0.0);
        // A 1 m cube of 1 kg: I = m (1² + 1²) / 12 = 1/6 about every axis.
        world.apply_impulse(id, Vec3::ZERO, Vec3::new(0.0, 1.0, 0.0)).unwrap();
        let w = world.state(id).unwrap().angular_velocity;
        assert!((w - Vec3::new(0.0, 6.0, 0.0)).length() < 1e-4, "{w}");
    }

    #[test]
    fn bad_impulses_are_refused_and_kinematic_or_unknown_bodies_are_not_pushed() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let id = resting_cube(&mut world, 0.0);
        settle(&mut world);
        let before = world.checksum();
        assert!(world
            .apply_impulse(id, Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ZERO)
            .is_err());
        assert!(world.apply_impulse(id, Vec3::ZERO, Vec3::splat(f32::INFINITY)).is_err());
        world.apply_impulse(id, Vec3::ZERO, Vec3::ZERO).unwrap();
        assert_eq!(world.checksum(), before, "nothing changed");
        assert!(world.state(id).unwrap().at_rest, "a zero impulse wakes nothing");
        assert!(world.apply_impulse(BodyId(7), Vec3::X, Vec3::ZERO).is_err());
        world.set_kind(id, BodyKind::Kinematic).unwrap();
        world.apply_impulse(id, Vec3::X, Vec3::ZERO).unwrap();
        assert_eq!(world.state(id).unwrap().linear_velocity, Vec3::ZERO);
        // A huge finite impulse is clamped to the speed limit, never NaN.
        world.set_kind(id, BodyKind::Dynamic).unwrap();
        world.apply_impulse(id, Vec3::splat(1e30), Vec3::splat(1e30)).unwrap();
        let s = world.state(id).unwrap();
        assert!(s.linear_velocity.is_finite() && s.angular_velocity.is_finite());
        world.step();
        assert!(world.state(id).unwrap().position.is_finite());
    }
}
