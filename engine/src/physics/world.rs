//! (stub API, being written)
use glam::{Quat, Vec3};

use super::{BodyDesc, BodyId, BodyKind, BodyState, ContactReport, PhysicsError};

/// How a world simulates. Every field has a sensible default ([`WorldConfig::default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldConfig {
    /// m/s².
    pub gravity: Vec3,
    /// Fixed step in seconds (1/90 s by default).
    pub dt: f32,
    /// Height of the ground plane (normal +y), or `None` for no ground.
    pub ground_height: Option<f32>,
    pub ground_friction: f32,
    pub ground_restitution: f32,
    /// Overlap is pushed out no faster than this (m/s).
    pub max_depenetration_velocity: f32,
    pub velocity_iterations: u32,
    pub relax_iterations: u32,
    /// Impacts slower than this (m/s) do not bounce.
    pub restitution_threshold: f32,
    /// Rest detection and island sleeping on or off.
    pub sleep: bool,
    /// A body that moved less than this (m) over the rest window is still.
    pub rest_linear_threshold: f32,
    /// …and turned less than this (rad).
    pub rest_angular_threshold: f32,
    /// Bodies that fall below this height are reported and taken out of the simulation.
    pub world_floor_y: f32,
}

impl Default for WorldConfig {
    fn default() -> Self {
        Self {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            dt: 1.0 / 90.0,
            ground_height: Some(0.0),
            ground_friction: 0.6,
            ground_restitution: 0.0,
            max_depenetration_velocity: 1.0,
            velocity_iterations: 8,
            relax_iterations: 2,
            restitution_threshold: 1.0,
            sleep: true,
            rest_linear_threshold: 0.005,
            rest_angular_threshold: 0.01,
            world_floor_y: -100.0,
        }
    }
}

/// What the last step did.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    pub step: u64,
    pub contacts: Vec<ContactReport>,
    pub fell_below_floor: Vec<BodyId>,
    pub awake_bodies: usize,
    pub resting_bodies: usize,
    /// Deepest overlap of any contact point at the start of the step (m, ≥ 0).
    pub max_penetration: f32,
}

#[derive(Clone, Debug)]
pub struct World {
    config: WorldConfig,
    report: StepReport,
}

/// A saved world; restoring it and stepping on gives bit-identical results.
#[derive(Clone, Debug)]
pub struct WorldSnapshot(World);

impl World {
    pub fn new(config: WorldConfig) -> Result<World, PhysicsError> {
        Ok(World { config, report: StepReport::default() })
    }
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }
    pub fn add_body(&mut self, _desc: &BodyDesc) -> Result<BodyId, PhysicsError> {
        todo!()
    }
    pub fn body_count(&self) -> usize {
        0
    }
    pub fn kind(&self, _id: BodyId) -> Result<BodyKind, PhysicsError> {
        todo!()
    }
    pub fn half_extents(&self, _id: BodyId) -> Result<Vec3, PhysicsError> {
        todo!()
    }
    pub fn state(&self, _id: BodyId) -> Result<BodyState, PhysicsError> {
        todo!()
    }
    pub fn set_state(&mut self, _id: BodyId, _state: &BodyState) -> Result<(), PhysicsError> {
        todo!()
    }
    pub fn set_kinematic_target(&mut self, _id: BodyId, _position: Vec3, _rotation: Quat) -> Result<(), PhysicsError> {
        todo!()
    }
    pub fn step(&mut self) -> &StepReport {
        &self.report
    }
    pub fn report(&self) -> &StepReport {
        &self.report
    }
    pub fn all_at_rest(&self) -> bool {
        todo!()
    }
    pub fn snapshot(&self) -> WorldSnapshot {
        WorldSnapshot(self.clone())
    }
    pub fn restore(&mut self, snapshot: &WorldSnapshot) {
        self.clone_from(&snapshot.0)
    }
    pub fn checksum(&self) -> u64 {
        todo!()
    }
}
