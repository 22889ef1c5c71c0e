//! The third engine: a scene run through Jolt Physics, only with the `jolt` cargo feature. Jolt comes from
//! `oxijolt-sys` (Jolt 5.6.0 and the joltc C wrapper, both pinned inside the crate, built from source with CMake
//! in its Release configuration; the crate turns Jolt's link-time optimization off): [`JOLT_BUILD`] says which Jolt
//! this binary linked, read from the build's own manifest.
//!
//! Matched to Tumble's world: dt (one collision step per update), gravity, box half extents, density, friction and
//! restitution per body, the initial pose and velocities, sleeping on or off. Jolt's own: every `PhysicsSettings`
//! field (10 velocity and 2 position steps, Baumgarte 0.2, speculative distance 2 cm, penetration slop 2 cm), each
//! box's convex radius (`JPH_DEFAULT_CONVEX_RADIUS`, 5 cm, Jolt's default), and Jolt's friction and restitution
//! combination (geometric mean and max, as Tumble's). Shapes are shared as Jolt's samples share them: one box
//! shape for every body of the same size and density (a scene of 1 m cubes makes one shape). The ground is a
//! static box whose top face is the plane y = ground height, 2 km across. The job system runs every job on the
//! calling thread as it is queued (Jolt's `JobSystemSingleThreaded` does the same), so Jolt runs on one thread
//! like Tumble and Rapier.
//!
//! `last_max_penetration` is the deepest overlap measured from the poses (the runner's `max_overlap_m` measures
//! the same thing): no contact listener is installed, so nothing but the step itself runs inside `step()`.

use std::ffi::c_void;
use std::ptr;
use std::sync::OnceLock;

use anyhow::{bail, ensure, Result};
use glam::{Mat3, Quat, Vec3};
use oxijolt_sys::*;
use serde::Serialize;
use tumble_engine::physics::box_plane::OrientedBox;
use tumble_engine::physics::overlap::deepest_overlap;
use tumble_engine::physics::{BodyDesc, BodyKind, BodyState, WorldConfig};

use crate::runner::Simulation;

/// Half the ground box's width (m) and its thickness below the plane.
const GROUND_HALF_WIDTH_M: f32 = 1000.0;
const GROUND_HALF_HEIGHT_M: f32 = 1.0;
/// Body pairs and contact constraints Jolt may hold: enough for large_pyramid's contacts.
const MAX_BODY_PAIRS: u32 = 1 << 18;
const MAX_CONTACT_CONSTRAINTS: u32 = 1 << 18;
/// Jolt's default convex radius (m), as every box of Jolt's samples has it.
const CONVEX_RADIUS_M: f32 = JPH_DEFAULT_CONVEX_RADIUS as f32;

/// Jolt's `BodyID::cInvalidBodyID`, what body creation returns when it fails.
const INVALID_BODY_ID: JPH_BodyID = u32::MAX;

const OL_NON_MOVING: JPH_ObjectLayer = 0;
const OL_MOVING: JPH_ObjectLayer = 1;
const BPL_NON_MOVING: JPH_BroadPhaseLayer = 0;
const BPL_MOVING: JPH_BroadPhaseLayer = 1;

/// Which Jolt this binary runs and how it was built, for every report (JSON field `jolt`).
#[derive(Clone, Debug, Serialize)]
pub struct JoltBuild {
    /// Jolt's version as the crate's build wrote it into its manifest (`jolt_version=`), or `None` when the
    /// manifest could not be read at build time.
    pub version: Option<&'static str>,
    /// Where Jolt comes from.
    pub source: String,
    /// How it was built.
    pub build: String,
}

/// The Jolt this binary linked. The version and switches come from `oxijolt-sys-manifest.txt`, which the crate's
/// build script writes next to the libraries it built (read by `benches/build.rs`).
pub fn jolt_build() -> JoltBuild {
    let version = option_env!("TUMBLE_JOLT_VERSION");
    let switches = option_env!("TUMBLE_JOLT_SWITCHES").unwrap_or("manifest not read");
    JoltBuild {
        version,
        source: format!(
            "oxijolt-sys {} (bundled Jolt {} at commit {}, joltc {})",
            option_env!("TUMBLE_OXIJOLT_SYS_VERSION").unwrap_or("?"),
            version.unwrap_or("?"),
            &JOLT_COMMIT[..JOLT_COMMIT.len().min(10)],
            &JOLTC_COMMIT[..JOLTC_COMMIT.len().min(10)],
        ),
        build: format!(
            "from source with CMake, Release, LTO off (the crate sets INTERPROCEDURAL_OPTIMIZATION OFF), Jolt's \
             default x86-64 switches (SSE4.2, AVX2, FMA; no AVX-512); {switches}"
        ),
    }
}

unsafe extern "C" fn run_job(_context: *mut c_void, job: JPH_JobFunction, arg: *mut c_void) {
    if let Some(job) = job {
        // SAFETY: Jolt hands a job function and its argument; running it now, once, is what queueing asks.
        unsafe { job(arg) };
    }
}

unsafe extern "C" fn run_jobs(_context: *mut c_void, job: JPH_JobFunction, args: *mut *mut c_void, count: u32) {
    if let Some(job) = job {
        for i in 0..count as usize {
            // SAFETY: `args` holds `count` job arguments.
            unsafe { job(*args.add(i)) };
        }
    }
}

fn global_init() -> Result<()> {
    static INIT: OnceLock<bool> = OnceLock::new();
    // SAFETY: JPH_Init registers Jolt's allocator, factory and types once per process.
    let ok = *INIT.get_or_init(|| unsafe { JPH_Init() });
    ensure!(ok, "JPH_Init failed");
    Ok(())
}

fn jv(v: Vec3) -> JPH_Vec3 {
    JPH_Vec3 { x: v.x, y: v.y, z: v.z }
}

fn jq(q: Quat) -> JPH_Quat {
    let q = q.normalize();
    JPH_Quat {
        x: q.x,
        y: q.y,
        z: q.z,
        w: q.w,
    }
}

/// One box shape per distinct (half extents, density), shared by every body that has them.
struct Shapes {
    made: Vec<(Vec3, f32, *mut JPH_Shape)>,
}

impl Shapes {
    fn get(&mut self, half: Vec3, density: f32) -> Result<*mut JPH_Shape> {
        if let Some(&(_, _, s)) = self.made.iter().find(|(h, d, _)| *h == half && *d == density) {
            return Ok(s);
        }
        // SAFETY: JoltC returns a box with one reference, ours, released in Drop.
        let shape = unsafe {
            let b = JPH_BoxShape_Create(&jv(half), CONVEX_RADIUS_M);
            ensure!(!b.is_null(), "Jolt refused a box {half}");
            JPH_ConvexShape_SetDensity(b.cast(), density);
            b.cast::<JPH_Shape>()
        };
        self.made.push((half, density, shape));
        Ok(shape)
    }
}

impl Drop for Shapes {
    fn drop(&mut self) {
        for &(_, _, s) in &self.made {
            // SAFETY: drops the reference `get` took; bodies still using a shape hold their own.
            unsafe { JPH_Shape_Destroy(s) };
        }
    }
}

pub struct JoltSim {
    system: *mut JPH_PhysicsSystem,
    jobs: *mut JPH_JobSystem,
    ids: Vec<JPH_BodyID>,
    ground: Option<JPH_BodyID>,
    dynamic: Vec<bool>,
    halves: Vec<Vec3>,
    shapes: Shapes,
    dt: f32,
    ground_height: Option<f32>,
}

impl JoltSim {
    /// Builds the Jolt world for `bodies` under `config` (`config.sleep` allows or forbids sleeping per body).
    pub fn new(config: &WorldConfig, bodies: &[BodyDesc]) -> Result<Self> {
        ensure!(
            config.dt.is_finite() && config.dt > 0.0,
            "dt must be positive, got {}",
            config.dt
        );
        global_init()?;
        // SAFETY: plain joltc calls in the order its samples make them; every object made here is destroyed in
        // Drop, bodies before the system (which owns the layer tables).
        unsafe {
            let job_config = JPH_JobSystemConfig {
                context: ptr::null_mut(),
                queueJob: Some(run_job),
                queueJobs: Some(run_jobs),
                maxConcurrency: 1,
                maxBarriers: JPH_MAX_PHYSICS_BARRIERS,
            };
            let jobs = JPH_JobSystemCallback_Create(&job_config);
            ensure!(!jobs.is_null(), "Jolt made no job system");
            let ovo = JPH_ObjectLayerPairFilterTable_Create(2);
            JPH_ObjectLayerPairFilterTable_EnableCollision(ovo, OL_MOVING, OL_NON_MOVING);
            JPH_ObjectLayerPairFilterTable_EnableCollision(ovo, OL_MOVING, OL_MOVING);
            let bpl = JPH_BroadPhaseLayerInterfaceTable_Create(2, 2);
            JPH_BroadPhaseLayerInterfaceTable_MapObjectToBroadPhaseLayer(bpl, OL_NON_MOVING, BPL_NON_MOVING);
            JPH_BroadPhaseLayerInterfaceTable_MapObjectToBroadPhaseLayer(bpl, OL_MOVING, BPL_MOVING);
            let ovb = JPH_ObjectVsBroadPhaseLayerFilterTable_Create(bpl, 2, ovo, 2);
            let settings = JPH_PhysicsSystemSettings {
                maxBodies: bodies.len() as u32 + 16,
                numBodyMutexes: 0,
                maxBodyPairs: MAX_BODY_PAIRS,
                maxContactConstraints: MAX_CONTACT_CONSTRAINTS,
                _padding: 0,
                broadPhaseLayerInterface: bpl,
                objectLayerPairFilter: ovo,
                objectVsBroadPhaseLayerFilter: ovb,
            };
            let system = JPH_PhysicsSystem_Create(&settings);
            if system.is_null() {
                JPH_JobSystem_Destroy(jobs);
                bail!("Jolt made no physics system");
            }
            JPH_PhysicsSystem_SetGravity(system, &jv(config.gravity));
            let mut sim = Self {
                system,
                jobs,
                ids: Vec::with_capacity(bodies.len()),
                ground: None,
                dynamic: Vec::with_capacity(bodies.len()),
                halves: bodies.iter().map(|b| b.half_extents).collect(),
                shapes: Shapes { made: Vec::new() },
                dt: config.dt,
                ground_height: config.ground_height,
            };
            let bi = JPH_PhysicsSystem_GetBodyInterface(system);
            if let Some(h) = config.ground_height {
                let half = Vec3::new(GROUND_HALF_WIDTH_M, GROUND_HALF_HEIGHT_M, GROUND_HALF_WIDTH_M);
                let shape = sim.shapes.get(half, 1.0)?;
                let s = JPH_BodyCreationSettings_Create3(
                    shape,
                    &jv(Vec3::new(0.0, h - GROUND_HALF_HEIGHT_M, 0.0)),
                    &jq(Quat::IDENTITY),
                    JPH_MotionType_Static,
                    OL_NON_MOVING,
                );
                JPH_BodyCreationSettings_SetFriction(s, config.ground_friction);
                JPH_BodyCreationSettings_SetRestitution(s, config.ground_restitution);
                let id = JPH_BodyInterface_CreateAndAddBody(bi, s, JPH_Activation_DontActivate);
                JPH_BodyCreationSettings_Destroy(s);
                ensure!(id != INVALID_BODY_ID, "Jolt made no ground body");
                sim.ground = Some(id);
            }
            for (i, b) in bodies.iter().enumerate() {
                let h = b.half_extents;
                ensure!(
                    h.min_element() > 0.0 && h.is_finite(),
                    "body {i}: half extents must be positive, got {h}"
                );
                let motion = match b.kind {
                    BodyKind::Dynamic => JPH_MotionType_Dynamic,
                    BodyKind::Kinematic => JPH_MotionType_Kinematic,
                };
                let shape = sim.shapes.get(h, b.density)?;
                let s = JPH_BodyCreationSettings_Create3(shape, &jv(b.position), &jq(b.rotation), motion, OL_MOVING);
                JPH_BodyCreationSettings_SetLinearVelocity(s, &jv(b.linear_velocity));
                JPH_BodyCreationSettings_SetAngularVelocity(s, &jv(b.angular_velocity));
                JPH_BodyCreationSettings_SetFriction(s, b.friction);
                JPH_BodyCreationSettings_SetRestitution(s, b.restitution);
                JPH_BodyCreationSettings_SetAllowSleeping(s, config.sleep);
                let id = JPH_BodyInterface_CreateAndAddBody(bi, s, JPH_Activation_Activate);
                JPH_BodyCreationSettings_Destroy(s);
                ensure!(id != INVALID_BODY_ID, "Jolt made no body {i} (out of bodies?)");
                sim.ids.push(id);
                sim.dynamic.push(b.kind == BodyKind::Dynamic);
            }
            JPH_PhysicsSystem_OptimizeBroadPhase(system);
            Ok(sim)
        }
    }

    fn body_interface(&self) -> *mut JPH_BodyInterface {
        // SAFETY: the system lives as long as self.
        unsafe { JPH_PhysicsSystem_GetBodyInterface(self.system) }
    }

    /// How many distinct shapes the bodies use (one for a scene of equal cubes), the ground's included.
    pub fn shape_count(&self) -> usize {
        self.shapes.made.len()
    }
}

impl Drop for JoltSim {
    fn drop(&mut self) {
        // SAFETY: everything here was made in `new` and is destroyed once, bodies first; the shapes (a field
        // dropped after this) outlive the bodies.
        unsafe {
            let bi = self.body_interface();
            for &id in self.ids.iter().chain(self.ground.iter()) {
                JPH_BodyInterface_RemoveAndDestroyBody(bi, id);
            }
            JPH_PhysicsSystem_Destroy(self.system);
            JPH_JobSystem_Destroy(self.jobs);
        }
    }
}

impl Simulation for JoltSim {
    fn body_count(&self) -> usize {
        self.ids.len()
    }

    fn state(&self, index: usize) -> Result<BodyState> {
        let Some(&id) = self.ids.get(index) else {
            bail!("no body with index {index}");
        };
        let bi = self.body_interface();
        // SAFETY: `id` is a live body of this system.
        unsafe {
            let mut p = jv(Vec3::ZERO);
            let mut q = jq(Quat::IDENTITY);
            JPH_BodyInterface_GetPositionAndRotation(bi, id, &mut p, &mut q);
            let (mut v, mut w) = (jv(Vec3::ZERO), jv(Vec3::ZERO));
            JPH_BodyInterface_GetLinearAndAngularVelocity(bi, id, &mut v, &mut w);
            Ok(BodyState {
                position: Vec3::new(p.x, p.y, p.z),
                rotation: Quat::from_xyzw(q.x, q.y, q.z, q.w),
                linear_velocity: Vec3::new(v.x, v.y, v.z),
                angular_velocity: Vec3::new(w.x, w.y, w.z),
                at_rest: !JPH_BodyInterface_IsActive(bi, id),
            })
        }
    }

    fn step(&mut self) {
        // SAFETY: the system and job system live as long as self. An update error (a cache full) would show as a
        // wrong result, not as memory unsafety; the sizes above hold the shipped scenes.
        unsafe {
            JPH_PhysicsSystem_Update(self.system, self.dt, 1, self.jobs);
        }
    }

    fn last_max_penetration(&self) -> f32 {
        let boxes: Vec<OrientedBox> = (0..self.ids.len())
            .filter_map(|i| {
                let s = self.state(i).ok()?;
                Some(OrientedBox {
                    center: s.position,
                    axes: Mat3::from_quat(s.rotation),
                    half: self.halves[i],
                })
            })
            .collect();
        deepest_overlap(&boxes, self.ground_height)
    }

    fn all_at_rest(&self) -> bool {
        let bi = self.body_interface();
        // SAFETY: every id is a live body of this system.
        self.ids
            .iter()
            .zip(&self.dynamic)
            .all(|(&id, &dynamic)| !dynamic || unsafe { !JPH_BodyInterface_IsActive(bi, id) })
    }

    fn half_extents(&self, index: usize) -> Result<Vec3> {
        match self.halves.get(index) {
            Some(h) => Ok(*h),
            None => bail!("no body with index {index}"),
        }
    }

    fn ground_height(&self) -> Option<f32> {
        self.ground_height
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{run_bodies, EngineKind, RunOptions};

    #[test]
    fn one_cube_falls_onto_the_ground_and_sleeps() {
        let cube = BodyDesc {
            position: Vec3::new(0.3, 2.0, -0.2),
            rotation: Quat::from_rotation_y(0.3),
            ..BodyDesc::default()
        };
        let opts = RunOptions {
            engine: EngineKind::Jolt,
            steps: 400,
            quantize: false,
            sleep: true,
        };
        let r = run_bodies("one_cube", WorldConfig::default(), &[cube], &opts).unwrap();
        assert_eq!((r.engine, r.bodies), (EngineKind::Jolt, 1));
        assert!(
            (r.max_displacement_m - 1.5).abs() < 0.03,
            "fell 1.5 m: {}",
            r.max_displacement_m
        );
        assert!(r.settle_step.is_some(), "Jolt put it to sleep");
        let sim = JoltSim::new(&WorldConfig::default(), &[cube]).unwrap();
        assert_eq!(sim.state(0).unwrap().position, cube.position);
    }

    #[test]
    fn equal_cubes_share_one_shape_with_jolts_convex_radius() {
        let cubes: Vec<BodyDesc> = (0..10)
            .map(|i| BodyDesc {
                position: Vec3::new(0.0, 0.5 + i as f32, 0.0),
                ..BodyDesc::default()
            })
            .collect();
        let sim = JoltSim::new(&WorldConfig::default(), &cubes).unwrap();
        // The ground's box and one cube shape.
        assert_eq!(sim.shape_count(), 2);
        let &(_, _, cube) = sim.shapes.made.last().unwrap();
        // SAFETY: the shape is a live box of this simulation.
        let radius = unsafe { JPH_BoxShape_GetConvexRadius(cube.cast()) };
        assert_eq!(radius, 0.05);
        let b = jolt_build();
        assert_eq!(b.version, Some("5.6.0"), "{b:?}");
    }
}
