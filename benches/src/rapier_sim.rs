//! The reference: a scene run through Rapier (rapier3d 0.36, single-threaded: no `parallel` feature), matched to
//! Tumble's world as closely as Rapier allows.
//!
//! What is matched: dt, gravity, cuboid half extents, density (mass = density × volume in both), friction and
//! restitution per body, the ground (a half-space whose boundary is the plane y = ground height, with the world's
//! ground friction and restitution), initial pose and velocities, sleeping on or off.
//! - Friction combines with [`CoefficientCombineRule::GeometricMean`] (√(fa·fb)), exactly Tumble's rule.
//! - Restitution combines with [`CoefficientCombineRule::Max`] (Box2D's rule; Tumble applies restitution only above
//!   its threshold, which Rapier has no equivalent for).
//!
//! What is Rapier's own: every [`IntegrationParameters`] field except `dt` keeps Rapier's default (4 solver
//! iterations with 1 internal PGS and 1 stabilization iteration, soft contacts, max corrective velocity 3 m/s,
//! allowed linear error 5 mm, prediction distance 2 cm, contact clustering and recycling on), and sleeping uses
//! Rapier's own activation thresholds. Rapier has no world floor; bodies that fall off the ground keep falling.

use anyhow::{ensure, Result};
use glam::{Quat, Vec3};
use rapier3d::math::{Pose, Rotation, Vector};
use rapier3d::prelude::{
    CoefficientCombineRule, ColliderBuilder, IntegrationParameters, PhysicsWorld, RigidBodyBuilder, RigidBodyHandle,
    SharedShape,
};
use tumble_engine::physics::{BodyDesc, BodyKind, BodyState, WorldConfig};

use crate::runner::Simulation;

fn rv(v: Vec3) -> Vector {
    Vector::new(v.x, v.y, v.z)
}

fn rq(q: Quat) -> Rotation {
    Rotation::from_xyzw(q.x, q.y, q.z, q.w).normalize()
}

fn tv(v: Vector) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

fn tq(q: Rotation) -> Quat {
    Quat::from_xyzw(q.x, q.y, q.z, q.w)
}

pub struct RapierSim {
    world: PhysicsWorld,
    /// Scene body index → Rapier handle.
    handles: Vec<RigidBodyHandle>,
    /// Scene body index → half extents (m).
    halves: Vec<Vec3>,
    ground_height: Option<f32>,
}

impl RapierSim {
    /// Builds the Rapier world for `bodies` under `config` (`config.sleep` turns sleeping on or off per body).
    pub fn new(config: &WorldConfig, bodies: &[BodyDesc]) -> Result<Self> {
        Self::with_parameters(config, bodies, IntegrationParameters::default())
    }

    /// The same world held to Tumble's iteration budget, for a comparison that is honest both ways: one solver
    /// iteration (Rapier's default takes four substeps, each integrating and re-solving), in it as many velocity
    /// passes as Tumble makes at most (`velocity_iterations` plus its shock pass) and as many stabilization passes
    /// as Tumble's position passes (`position_iterations`). Everything else stays Rapier's default.
    pub fn with_tumble_budget(config: &WorldConfig, bodies: &[BodyDesc]) -> Result<Self> {
        let budget = IntegrationParameters {
            num_solver_iterations: 1,
            num_internal_pgs_iterations: config.velocity_iterations as usize + 1,
            num_internal_stabilization_iterations: config.position_iterations as usize,
            ..IntegrationParameters::default()
        };
        Self::with_parameters(config, bodies, budget)
    }

    fn with_parameters(config: &WorldConfig, bodies: &[BodyDesc], parameters: IntegrationParameters) -> Result<Self> {
        ensure!(
            config.dt.is_finite() && config.dt > 0.0,
            "dt must be positive, got {}",
            config.dt
        );
        let mut world = PhysicsWorld::new();
        world.gravity = rv(config.gravity);
        world.integration_parameters = IntegrationParameters {
            dt: config.dt,
            ..parameters
        };
        if let Some(h) = config.ground_height {
            let ground = ColliderBuilder::new(SharedShape::halfspace(Vector::Y))
                .friction(config.ground_friction)
                .friction_combine_rule(CoefficientCombineRule::GeometricMean)
                .restitution(config.ground_restitution)
                .restitution_combine_rule(CoefficientCombineRule::Max);
            world.insert(RigidBodyBuilder::fixed().translation(Vector::new(0.0, h, 0.0)), ground);
        }
        let mut handles = Vec::with_capacity(bodies.len());
        for (i, b) in bodies.iter().enumerate() {
            let h = b.half_extents;
            ensure!(
                h.min_element() > 0.0 && h.is_finite(),
                "body {i}: half extents must be positive, got {h}"
            );
            let builder = match b.kind {
                BodyKind::Dynamic => RigidBodyBuilder::dynamic(),
                BodyKind::Kinematic => RigidBodyBuilder::kinematic_velocity_based(),
            };
            let body = builder
                .pose(Pose::from_parts(rv(b.position), rq(b.rotation)))
                .linvel(rv(b.linear_velocity))
                .angvel(rv(b.angular_velocity))
                .can_sleep(config.sleep);
            let collider = ColliderBuilder::cuboid(h.x, h.y, h.z)
                .density(b.density)
                .friction(b.friction)
                .friction_combine_rule(CoefficientCombineRule::GeometricMean)
                .restitution(b.restitution)
                .restitution_combine_rule(CoefficientCombineRule::Max);
            let (handle, _) = world.insert(body, collider);
            handles.push(handle);
        }
        let halves = bodies.iter().map(|b| b.half_extents).collect();
        Ok(Self {
            world,
            handles,
            halves,
            ground_height: config.ground_height,
        })
    }

    /// Deepest overlap (m, ≥ 0) among the contact manifolds as the last narrow phase left them (the narrow phase
    /// runs at the start of a step, so this is the overlap the step started from, as Tumble reports it): the most
    /// negative distance of any manifold point or solver contact.
    fn contact_penetration(&self) -> f32 {
        let mut deepest = 0.0f32;
        for pair in self.world.narrow_phase.contact_pairs() {
            for m in pair.manifolds() {
                for p in &m.points {
                    deepest = deepest.min(p.dist);
                }
                for c in &m.data.solver_contacts {
                    deepest = deepest.min(c.dist);
                }
            }
        }
        -deepest
    }

    pub fn world(&self) -> &PhysicsWorld {
        &self.world
    }
}

impl Simulation for RapierSim {
    fn body_count(&self) -> usize {
        self.handles.len()
    }

    fn state(&self, index: usize) -> Result<BodyState> {
        let Some(rb) = self.handles.get(index).and_then(|h| self.world.bodies.get(*h)) else {
            anyhow::bail!("no body with index {index}");
        };
        Ok(BodyState {
            position: tv(rb.translation()),
            rotation: tq(*rb.rotation()),
            linear_velocity: tv(rb.linvel()),
            angular_velocity: tv(rb.angvel()),
            at_rest: rb.is_sleeping(),
        })
    }

    fn step(&mut self) {
        self.world.step();
    }

    fn last_max_penetration(&self) -> f32 {
        self.contact_penetration()
    }

    fn half_extents(&self, index: usize) -> Result<Vec3> {
        match self.halves.get(index) {
            Some(h) => Ok(*h),
            None => anyhow::bail!("no body with index {index}"),
        }
    }

    fn ground_height(&self) -> Option<f32> {
        self.ground_height
    }

    fn all_at_rest(&self) -> bool {
        self.handles.iter().all(|h| {
            self.world
                .bodies
                .get(*h)
                .is_none_or(|rb| !rb.is_dynamic() || rb.is_sleeping())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{run_bodies, EngineKind, RunOptions};

    fn falling_cube() -> BodyDesc {
        BodyDesc {
            position: Vec3::new(0.3, 2.0, -0.2),
            rotation: Quat::from_rotation_y(0.3),
            ..BodyDesc::default()
        }
    }

    #[test]
    fn one_cube_falls_and_comes_to_rest_on_the_ground() {
        let opts = RunOptions {
            engine: EngineKind::Rapier,
            steps: 400,
            quantize: false,
            sleep: true,
        };
        let r = run_bodies("one_cube", WorldConfig::default(), &[falling_cube()], &opts).unwrap();
        assert_eq!((r.engine, r.bodies, r.steps), (EngineKind::Rapier, 1, 400));
        let settle = r.settle_step.expect("the cube goes to sleep");
        assert!(settle > 40 && settle < 400, "settled at step {settle}");
        assert!(
            (r.max_displacement_m - 1.5).abs() < 0.02,
            "fell 1.5 m, got {}",
            r.max_displacement_m
        );
        assert!(r.max_drift_after_settle_m.unwrap() < 1e-4, "no drift once asleep");
        // Rapier's soft contacts let a 5 m/s landing sink about 2 cm for a step or two.
        assert!(r.max_penetration_m < 0.05, "penetration {}", r.max_penetration_m);
        assert_eq!(r.checksum.len(), 16);

        // The state the checksum was made from: resting on its face, centre 0.5 m up, velocities zero.
        let mut sim = RapierSim::new(&WorldConfig::default(), &[falling_cube()]).unwrap();
        for _ in 0..400 {
            sim.step();
        }
        let s = sim.state(0).unwrap();
        assert!(
            (s.position.y - 0.5).abs() < 0.01,
            "rests near y = 0.5, got {}",
            s.position.y
        );
        assert!(s.at_rest && sim.all_at_rest());
        assert_eq!(s.linear_velocity, Vec3::ZERO);
        assert_eq!(
            crate::runner::state_checksum(&[s]),
            u64::from_str_radix(&r.checksum, 16).unwrap(),
            "deterministic"
        );
    }

    #[test]
    fn without_sleep_nothing_settles_and_contacts_report_penetration() {
        let opts = RunOptions {
            engine: EngineKind::Rapier,
            steps: 200,
            quantize: false,
            sleep: false,
        };
        let r = run_bodies("one_cube", WorldConfig::default(), &[falling_cube()], &opts).unwrap();
        assert_eq!(r.settle_step, None);
        assert_eq!(r.max_drift_after_settle_m, None);
        assert!(r.max_penetration_m > 0.0, "a landing cube overlaps the ground a little");
    }

    #[test]
    fn config_is_matched() {
        let config = WorldConfig {
            dt: 1.0 / 60.0,
            gravity: Vec3::new(0.0, -3.0, 0.0),
            ..WorldConfig::default()
        };
        let desc = BodyDesc {
            half_extents: Vec3::new(0.5, 0.25, 1.0),
            density: 2.0,
            ..falling_cube()
        };
        let sim = RapierSim::new(&config, &[desc]).unwrap();
        let w = sim.world();
        assert_eq!(w.integration_parameters.dt, 1.0 / 60.0);
        assert_eq!(tv(w.gravity), config.gravity);
        let rb = &w.bodies[sim.handles[0]];
        assert!(
            (rb.mass() - 2.0 * 1.0 * 0.5 * 2.0).abs() < 1e-4,
            "mass = density × volume, got {}",
            rb.mass()
        );
        let s = sim.state(0).unwrap();
        assert!(s.position.distance(desc.position) < 1e-6 && s.rotation.angle_between(desc.rotation) < 1e-3);
    }

    #[test]
    fn the_budget_world_takes_tumbles_iteration_counts() {
        let config = WorldConfig {
            velocity_iterations: 5,
            position_iterations: 3,
            ..WorldConfig::default()
        };
        let sim = RapierSim::with_tumble_budget(&config, &[falling_cube()]).unwrap();
        let p = &sim.world().integration_parameters;
        assert_eq!(p.dt, config.dt);
        assert_eq!(
            (
                p.num_solver_iterations,
                p.num_internal_pgs_iterations,
                p.num_internal_stabilization_iterations
            ),
            (1, 6, 3),
            "one iteration: the velocity passes plus the shock pass, and the position passes"
        );
        let opts = RunOptions {
            engine: EngineKind::RapierBudget,
            steps: 300,
            quantize: false,
            sleep: true,
        };
        let r = run_bodies("one_cube", WorldConfig::default(), &[falling_cube()], &opts).unwrap();
        assert_eq!(r.engine, EngineKind::RapierBudget);
        assert!(
            (r.max_displacement_m - 1.5).abs() < 0.02,
            "fell 1.5 m: {}",
            r.max_displacement_m
        );
        assert!(r.settle_step.is_some(), "and went to sleep");
    }

    #[test]
    fn quantize_is_tumble_only() {
        let opts = RunOptions {
            engine: EngineKind::Rapier,
            steps: 1,
            quantize: true,
            sleep: true,
        };
        let err = run_bodies("one_cube", WorldConfig::default(), &[falling_cube()], &opts).unwrap_err();
        assert!(format!("{err}").contains("Tumble-only"), "{err}");
    }
}
