//! The scripted thrower of the loopback harness: every so many steps, until the world is left time to settle, one
//! cube (chosen by a seeded generator, so a run is repeatable) is lifted to hand height, as a player would carry it
//! (held cubes are not sent as state), and launched to land on a random spot after a one-second flight, spinning.

use glam::Vec3;
use tumble_engine::physics::{BodyId, PhysicsError, World};

/// Height the cube is released from (m): about a standing player's hand.
const HAND_HEIGHT_M: f32 = 5.0;
/// Targets lie within this distance of the origin on x and z (m).
const TARGET_HALF_EXTENT_M: f32 = 4.0;
/// Target height (m): half a cube above the floor.
const TARGET_HEIGHT_M: f32 = 0.5;
/// Time from release to the target (s).
const FLIGHT_S: f32 = 1.0;
/// Launch spin on each axis lies within ± this (rad/s).
const MAX_SPIN_RAD_S: f32 = 5.0;
/// Gravity the flight is aimed under (m/s²), as the engine's default world applies.
const GRAVITY_M_S2: f32 = 9.81;

/// A seeded thrower (PCG-style LCG: the same seed gives the same throws on every build).
#[derive(Debug, Clone)]
pub struct Thrower {
    every_steps: u64,
    last_throw_step: u64,
    state: u64,
}

impl Thrower {
    /// Throws every `every_steps` steps (from step `every_steps` on), none after `last_throw_step`.
    pub fn new(every_steps: u64, last_throw_step: u64, seed: u64) -> Self {
        Self {
            every_steps: every_steps.max(1),
            last_throw_step,
            state: seed,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.state >> 33
    }

    /// Uniform in [0, 1) at 1/10000 resolution: integer-derived, so the same on every platform.
    fn unit(&mut self) -> f32 {
        (self.next() % 10_000) as f32 / 10_000.0
    }

    /// Throws a cube if `step` is a throw step, and says which. Removed cubes are skipped (setting their state
    /// would bring them back).
    pub fn maybe_throw(&mut self, step: u64, world: &mut World) -> Result<Option<BodyId>, PhysicsError> {
        let count = world.body_count() as u64;
        if step == 0 || !step.is_multiple_of(self.every_steps) || step > self.last_throw_step || count == 0 {
            return Ok(None);
        }
        let id = BodyId((self.next() % count) as u32);
        let target = Vec3::new(
            2.0 * TARGET_HALF_EXTENT_M * self.unit() - TARGET_HALF_EXTENT_M,
            TARGET_HEIGHT_M,
            2.0 * TARGET_HALF_EXTENT_M * self.unit() - TARGET_HALF_EXTENT_M,
        );
        let spin = Vec3::new(self.unit(), self.unit(), self.unit()) * (2.0 * MAX_SPIN_RAD_S) - MAX_SPIN_RAD_S;
        if world.is_removed(id)? {
            return Ok(None);
        }
        let mut s = world.state(id)?;
        s.position.y = HAND_HEIGHT_M;
        // Reaches the target after FLIGHT_S under gravity: v = d / t + g t / 2 upwards.
        s.linear_velocity = (target - s.position) / FLIGHT_S + Vec3::new(0.0, GRAVITY_M_S2 * FLIGHT_S / 2.0, 0.0);
        s.angular_velocity = spin;
        s.at_rest = false;
        world.set_state(id, &s)?;
        Ok(Some(id))
    }
}
