//! The third engine: a scene run through Jolt Physics 5.0 (the sources ship inside `joltc-sys`, built with CMake
//! and a C++ compiler through the JoltC wrapper), only with the `jolt` cargo feature.
//!
//! Matched to Tumble's world as far as JoltC 0.3 exposes Jolt: dt (one collision step per update), gravity
//! (Jolt's is fixed at −9.81 m/s² along y, so a scene's gravity must point down and is matched with each body's
//! gravity factor), box half extents, density, friction and restitution per body, the initial pose and
//! velocities, sleeping on or off. Jolt's own: every `PhysicsSettings` field (10 velocity and 2 position steps,
//! Baumgarte 0.2, speculative distance 2 cm, penetration slop 2 cm) and each box's 5 cm convex radius, and Jolt's
//! friction and restitution combination (geometric mean and max, as Tumble's). The ground is a static box whose
//! top face is the plane y = ground height, 2 km across. The job system has no worker thread: the calling thread
//! runs every job, so Jolt runs on one thread like Tumble and Rapier.
//!
//! JoltC 0.3 has no contact listener, so `last_max_penetration` is the deepest overlap measured from the poses
//! (the runner's `max_overlap_m` measures the same thing).

use std::ffi::{c_uint, c_void, CStr};
use std::ptr;
use std::sync::OnceLock;

use anyhow::{bail, ensure, Result};
use glam::{Mat3, Quat, Vec3};
use joltc_sys::*;
use tumble_engine::physics::box_plane::OrientedBox;
use tumble_engine::physics::overlap::deepest_overlap;
use tumble_engine::physics::{BodyDesc, BodyKind, BodyState, WorldConfig};

use crate::runner::Simulation;

// joltc-sys 0.3.1 links Jolt and JoltC (static C++ libraries) but not the C++ runtime they need.
#[cfg(all(unix, not(target_vendor = "apple")))]
#[link(name = "stdc++")]
extern "C" {}
#[cfg(target_vendor = "apple")]
#[link(name = "c++")]
extern "C" {}

/// Jolt's gravity (m/s², along −y), which JoltC 0.3 cannot change: scenes are matched by each body's gravity factor.
const JOLT_GRAVITY_M_S2: f32 = 9.81;
/// Half the ground box's width (m) and its thickness below the plane.
const GROUND_HALF_WIDTH_M: f32 = 1000.0;
const GROUND_HALF_HEIGHT_M: f32 = 1.0;
/// Jolt's temporary allocator for a step (bytes): enough for large_pyramid's contacts.
const TEMP_ALLOCATOR_BYTES: c_uint = 256 * 1024 * 1024;
const MAX_BODY_PAIRS: c_uint = 1 << 18;
const MAX_CONTACT_CONSTRAINTS: c_uint = 1 << 18;

const OL_NON_MOVING: JPC_ObjectLayer = 0;
const OL_MOVING: JPC_ObjectLayer = 1;
const BPL_NON_MOVING: JPC_BroadPhaseLayer = 0;
const BPL_MOVING: JPC_BroadPhaseLayer = 1;
const BPL_COUNT: JPC_BroadPhaseLayer = 2;

unsafe extern "C" fn bpl_count(_this: *const c_void) -> c_uint {
    BPL_COUNT as c_uint
}

unsafe extern "C" fn bpl_of(_this: *const c_void, layer: JPC_ObjectLayer) -> JPC_BroadPhaseLayer {
    if layer == OL_NON_MOVING {
        BPL_NON_MOVING
    } else {
        BPL_MOVING
    }
}

unsafe extern "C" fn object_vs_broad_phase(_this: *const c_void, a: JPC_ObjectLayer, b: JPC_BroadPhaseLayer) -> bool {
    a == OL_MOVING || b == BPL_MOVING
}

unsafe extern "C" fn object_vs_object(_this: *const c_void, a: JPC_ObjectLayer, b: JPC_ObjectLayer) -> bool {
    a == OL_MOVING || b == OL_MOVING
}

const BPL: JPC_BroadPhaseLayerInterfaceFns = JPC_BroadPhaseLayerInterfaceFns {
    GetNumBroadPhaseLayers: Some(bpl_count),
    GetBroadPhaseLayer: Some(bpl_of),
};
const OVB: JPC_ObjectVsBroadPhaseLayerFilterFns = JPC_ObjectVsBroadPhaseLayerFilterFns {
    ShouldCollide: Some(object_vs_broad_phase),
};
const OVO: JPC_ObjectLayerPairFilterFns = JPC_ObjectLayerPairFilterFns {
    ShouldCollide: Some(object_vs_object),
};

fn global_init() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| unsafe {
        JPC_RegisterDefaultAllocator();
        JPC_FactoryInit();
        JPC_RegisterTypes();
    });
}

fn jv(v: Vec3) -> JPC_Vec3 {
    JPC_Vec3 {
        x: v.x,
        y: v.y,
        z: v.z,
        _w: v.z,
    }
}

fn jr(v: Vec3) -> JPC_RVec3 {
    JPC_RVec3 {
        x: v.x,
        y: v.y,
        z: v.z,
        _w: v.z,
    }
}

fn jq(q: Quat) -> JPC_Quat {
    let q = q.normalize();
    JPC_Quat {
        x: q.x,
        y: q.y,
        z: q.z,
        w: q.w,
    }
}

fn box_shape(half: Vec3, density: f32) -> Result<*mut JPC_Shape> {
    let settings = JPC_BoxShapeSettings {
        HalfExtent: jv(half),
        Density: density,
        ..Default::default()
    };
    let mut shape: *mut JPC_Shape = ptr::null_mut();
    let mut err: *mut JPC_String = ptr::null_mut();
    // SAFETY: the settings outlive the call; JoltC writes either the shape or an error string.
    unsafe {
        if JPC_BoxShapeSettings_Create(&settings, &mut shape, &mut err) {
            Ok(shape)
        } else {
            bail!("Jolt refused a box {half}: {:?}", CStr::from_ptr(JPC_String_c_str(err)))
        }
    }
}

pub struct JoltSim {
    system: *mut JPC_PhysicsSystem,
    temp: *mut JPC_TempAllocatorImpl,
    jobs: *mut JPC_JobSystemThreadPool,
    bpl: *mut JPC_BroadPhaseLayerInterface,
    ovb: *mut JPC_ObjectVsBroadPhaseLayerFilter,
    ovo: *mut JPC_ObjectLayerPairFilter,
    ids: Vec<JPC_BodyID>,
    ground: Option<JPC_BodyID>,
    dynamic: Vec<bool>,
    halves: Vec<Vec3>,
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
        let g = config.gravity;
        ensure!(
            g.x == 0.0 && g.z == 0.0 && g.y <= 0.0,
            "Jolt (through JoltC 0.3) only takes gravity along −y, got {g}"
        );
        let gravity_factor = -g.y / JOLT_GRAVITY_M_S2;
        global_init();
        // SAFETY: plain JoltC calls in the order its smoke test makes them; every pointer made here is deleted in
        // Drop, bodies before the system.
        unsafe {
            let temp = JPC_TempAllocatorImpl_new(TEMP_ALLOCATOR_BYTES);
            // No worker thread: the thread that calls Update runs the jobs.
            let jobs = JPC_JobSystemThreadPool_new3(JPC_MAX_PHYSICS_JOBS as _, JPC_MAX_PHYSICS_BARRIERS as _, 0);
            let bpl = JPC_BroadPhaseLayerInterface_new(ptr::null(), BPL);
            let ovb = JPC_ObjectVsBroadPhaseLayerFilter_new(ptr::null_mut(), OVB);
            let ovo = JPC_ObjectLayerPairFilter_new(ptr::null_mut(), OVO);
            let system = JPC_PhysicsSystem_new();
            JPC_PhysicsSystem_Init(
                system,
                bodies.len() as c_uint + 16,
                0,
                MAX_BODY_PAIRS,
                MAX_CONTACT_CONSTRAINTS,
                bpl,
                ovb,
                ovo,
            );
            let mut sim = Self {
                system,
                temp,
                jobs,
                bpl,
                ovb,
                ovo,
                ids: Vec::with_capacity(bodies.len()),
                ground: None,
                dynamic: Vec::with_capacity(bodies.len()),
                halves: bodies.iter().map(|b| b.half_extents).collect(),
                dt: config.dt,
                ground_height: config.ground_height,
            };
            let bi = JPC_PhysicsSystem_GetBodyInterface(system);
            if let Some(h) = config.ground_height {
                let half = Vec3::new(GROUND_HALF_WIDTH_M, GROUND_HALF_HEIGHT_M, GROUND_HALF_WIDTH_M);
                let settings = JPC_BodyCreationSettings {
                    Position: jr(Vec3::new(0.0, h - GROUND_HALF_HEIGHT_M, 0.0)),
                    MotionType: JPC_MOTION_TYPE_STATIC,
                    ObjectLayer: OL_NON_MOVING,
                    Shape: box_shape(half, 1.0)?,
                    Friction: config.ground_friction,
                    Restitution: config.ground_restitution,
                    ..Default::default()
                };
                let body = JPC_BodyInterface_CreateBody(bi, &settings);
                ensure!(!body.is_null(), "Jolt made no ground body");
                let id = JPC_Body_GetID(body);
                JPC_BodyInterface_AddBody(bi, id, JPC_ACTIVATION_DONT_ACTIVATE);
                sim.ground = Some(id);
            }
            for (i, b) in bodies.iter().enumerate() {
                let h = b.half_extents;
                ensure!(
                    h.min_element() > 0.0 && h.is_finite(),
                    "body {i}: half extents must be positive, got {h}"
                );
                let motion = match b.kind {
                    BodyKind::Dynamic => JPC_MOTION_TYPE_DYNAMIC,
                    BodyKind::Kinematic => JPC_MOTION_TYPE_KINEMATIC,
                };
                let settings = JPC_BodyCreationSettings {
                    Position: jr(b.position),
                    Rotation: jq(b.rotation),
                    LinearVelocity: jv(b.linear_velocity),
                    AngularVelocity: jv(b.angular_velocity),
                    MotionType: motion,
                    ObjectLayer: OL_MOVING,
                    Shape: box_shape(h, b.density)?,
                    Friction: b.friction,
                    Restitution: b.restitution,
                    AllowSleeping: config.sleep,
                    GravityFactor: gravity_factor,
                    ..Default::default()
                };
                let body = JPC_BodyInterface_CreateBody(bi, &settings);
                ensure!(!body.is_null(), "Jolt made no body {i} (out of bodies?)");
                let id = JPC_Body_GetID(body);
                JPC_BodyInterface_AddBody(bi, id, JPC_ACTIVATION_ACTIVATE);
                sim.ids.push(id);
                sim.dynamic.push(b.kind == BodyKind::Dynamic);
            }
            JPC_PhysicsSystem_OptimizeBroadPhase(system);
            Ok(sim)
        }
    }

    fn body_interface(&self) -> *mut JPC_BodyInterface {
        // SAFETY: the system lives as long as self.
        unsafe { JPC_PhysicsSystem_GetBodyInterface(self.system) }
    }
}

impl Drop for JoltSim {
    fn drop(&mut self) {
        // SAFETY: everything here was made in `new` and is deleted once, bodies first.
        unsafe {
            let bi = self.body_interface();
            for &id in self.ids.iter().chain(self.ground.iter()) {
                JPC_BodyInterface_RemoveBody(bi, id);
                JPC_BodyInterface_DestroyBody(bi, id);
            }
            JPC_PhysicsSystem_delete(self.system);
            JPC_BroadPhaseLayerInterface_delete(self.bpl);
            JPC_ObjectVsBroadPhaseLayerFilter_delete(self.ovb);
            JPC_ObjectLayerPairFilter_delete(self.ovo);
            JPC_JobSystemThreadPool_delete(self.jobs);
            JPC_TempAllocatorImpl_delete(self.temp);
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
            let mut p = jr(Vec3::ZERO);
            let mut q = jq(Quat::IDENTITY);
            JPC_BodyInterface_GetPositionAndRotation(bi, id, &mut p, &mut q);
            let (mut v, mut w) = (jv(Vec3::ZERO), jv(Vec3::ZERO));
            JPC_BodyInterface_GetLinearAndAngularVelocity(bi, id, &mut v, &mut w);
            Ok(BodyState {
                position: Vec3::new(p.x, p.y, p.z),
                rotation: Quat::from_xyzw(q.x, q.y, q.z, q.w),
                linear_velocity: Vec3::new(v.x, v.y, v.z),
                angular_velocity: Vec3::new(w.x, w.y, w.z),
                at_rest: !JPC_BodyInterface_IsActive(bi, id),
            })
        }
    }

    fn step(&mut self) {
        // SAFETY: the system, allocator and job system live as long as self.
        unsafe {
            JPC_PhysicsSystem_Update(self.system, self.dt, 1, self.temp, self.jobs);
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
            .all(|(&id, &dynamic)| !dynamic || unsafe { !JPC_BodyInterface_IsActive(bi, id) })
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
}
