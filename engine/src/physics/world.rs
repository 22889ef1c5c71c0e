//! The [`World`]: owns every body (as flat arrays indexed by [`BodyId`]), the broadphase, the contacts and the
//! islands, and runs one fixed step at a time:
//!
//! gravity → broadphase → narrowphase → islands (wake) → stack order → seed, warm start, velocity passes, shock
//! pass, restitution → integrate → position passes → floor check → rest detection.
//!
//! State in and out is plain data ([`BodyState`]); a [`WorldSnapshot`] holds everything a step reads, so
//! restoring one and stepping on repeats the same bits.

use glam::{Mat3, Mat3A, Quat, Vec3, Vec3A};

use super::body::{
    inverse_mass_properties, validate_pose, validate_velocities, MAX_ANGULAR_SPEED_RAD_S, MAX_FRICTION,
    MAX_LINEAR_SPEED_M_S, MAX_POSITION_M,
};
use super::broadphase::{Aabb, Broadphase, GROUND};
use super::contact::{BodyPoses, Contact, ContactSet, SPECULATIVE_DISTANCE_M};
use super::contact_solver::{self as solver, ContactConstraint, SolverBodies, SolverParams};
use super::island::Islands;
use super::rest::{MotionHistory, RestThresholds, REST_WINDOW};
use super::stack_order::{holds_up, lower_body, StackOrder};
use super::{BodyDesc, BodyId, BodyKind, BodyState, ContactReport, PhysicsError};

/// Flushes denormal floats to zero while a step runs and puts the caller's setting back afterwards. Resting
/// bodies' residual velocities and tiny rotation components decay into denormals (below 1e-38), and arithmetic on
/// denormals is several times slower on x86; zero is as good an answer at that size. The setting is the same on
/// every step, so results stay deterministic.
struct FlushDenormals {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

impl FlushDenormals {
    /// MXCSR bits: flush-to-zero (15) and denormals-are-zero (6).
    #[cfg(target_arch = "x86_64")]
    const MXCSR_FTZ_DAZ: u32 = 0x8040;

    #[allow(deprecated)]
    fn enable() -> FlushDenormals {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: MXCSR only changes how SSE rounds and treats tiny values; it is restored on drop.
            let saved = unsafe { std::arch::x86_64::_mm_getcsr() };
            unsafe { std::arch::x86_64::_mm_setcsr(saved | Self::MXCSR_FTZ_DAZ) };
            FlushDenormals { saved }
        }
        #[cfg(not(target_arch = "x86_64"))]
        FlushDenormals {}
    }
}

impl Drop for FlushDenormals {
    #[allow(deprecated)]
    fn drop(&mut self) {
        // SAFETY: puts back the value read in `enable`.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            std::arch::x86_64::_mm_setcsr(self.saved)
        };
    }
}

/// What the narrowphase reads of the bodies; a macro so the borrow is of the fields, not of the whole world.
macro_rules! poses {
    ($w:expr) => {
        BodyPoses {
            position: &$w.position,
            rotation: &$w.rotation,
            half: &$w.half,
            linear_velocity: &$w.linear_velocity,
            angular_velocity: &$w.angular_velocity,
            ground: $w.config.ground_height,
            dt: $w.config.dt,
        }
    };
}

/// A body whose pose stays within this distance (m) and angle (rad) of its reference pose, moving slower than this
/// per step, keeps its contact manifolds instead of recomputing them: a settled pile without rest detection then
/// costs no narrowphase. Far below the contact slop, so what it changes is invisible.
pub const POSE_REFERENCE_TOLERANCE: f32 = 2.0e-5;

/// The velocity passes stop when no impulse changed by more than this fraction of a 1 kg body's weight impulse
/// (m·g·dt) in a pass.
pub const CONVERGED_IMPULSE_PER_KG: f32 = 1.0e-3;

/// A [`World::set_state`] that moves a body less than this (m), turns it less than [`SNAP_TURN_RAD`] and changes
/// the speed of its points less than [`SNAP_POINT_SPEED_M_S`] is the same state re-quantized, not a push: state
/// sync snaps every body to its quantized state before every step (errors up to 0.12 mm, 0.45 mrad and 0.5 mm/s
/// per axis), and that must not start rest windows over. Anything larger does.
pub const SNAP_DISTANCE_M: f32 = 0.001;
pub const SNAP_TURN_RAD: f32 = 0.002;
pub const SNAP_POINT_SPEED_M_S: f32 = 0.004;

/// A contact whose surfaces approached faster than this (m/s) on top of one step of gravity is a hit and starts
/// both bodies' rest windows over. One step of gravity (0.11 m/s at 90 Hz) is the speed at which every resting
/// body meets its support before the solver stops it; a hit adds to that.
pub const HIT_SPEED_M_S: f32 = 0.05;

/// Strongest gravity a world may have (m/s², 100 g): its weight impulses and seeded loads stay far from overflow.
pub const MAX_GRAVITY_M_S2: f32 = 1000.0;

/// Contacts per body the step buffers are sized for when bodies are added.
pub const RESERVED_CONTACTS_PER_BODY: usize = 6;

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
    /// Overlap is pushed out no faster than this (m/s). 1 m/s, as the reference sample found best.
    pub max_depenetration_velocity: f32,
    /// Most velocity passes per step; they stop early once a pass changes nothing. The shock pass follows them.
    pub velocity_iterations: u32,
    /// Position passes per step that push overlapping bodies apart.
    pub position_iterations: u32,
    /// Impacts slower than this (m/s) do not bounce.
    pub restitution_threshold: f32,
    /// Rest detection and island sleeping on or off.
    pub sleep: bool,
    /// A body that moved less than this (m) over the rest window is still… (8 mm by default: under quantization
    /// the solver's unconverged friction can leave a settled pile creeping one position quantum, 1/4096 m, per
    /// step on every axis, 6.3 mm over the window, and that creep is what rest detection is there to stop; speed
    /// and acceleration are checked as well, see [`super::rest`])
    pub rest_linear_threshold: f32,
    /// …if it also turned less than this (rad).
    pub rest_angular_threshold: f32,
    /// Bodies that fall below this height (m) are reported once and taken out of the simulation.
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
            velocity_iterations: 3,
            position_iterations: 2,
            restitution_threshold: 1.0,
            sleep: true,
            rest_linear_threshold: 0.008,
            rest_angular_threshold: 0.01,
            world_floor_y: -100.0,
        }
    }
}

impl WorldConfig {
    fn validate(&self) -> Result<(), PhysicsError> {
        let finite = self.gravity.is_finite()
            && [
                self.dt,
                self.ground_friction,
                self.ground_restitution,
                self.max_depenetration_velocity,
            ]
            .iter()
            .chain(&[
                self.restitution_threshold,
                self.rest_linear_threshold,
                self.rest_angular_threshold,
            ])
            .chain(&[self.world_floor_y, self.ground_height.unwrap_or(0.0)])
            .all(|x| x.is_finite());
        let checks = [
            (finite, "every value must be finite"),
            (self.dt > 0.0 && self.dt <= 0.1, "dt must be in (0, 0.1] s"),
            (
                (1..=256).contains(&self.velocity_iterations),
                "velocity_iterations must be 1..=256",
            ),
            (self.position_iterations <= 256, "position_iterations must be 0..=256"),
            (
                self.max_depenetration_velocity > 0.0 && self.max_depenetration_velocity <= MAX_LINEAR_SPEED_M_S,
                "max_depenetration_velocity must be in (0, 50] m/s",
            ),
            (
                self.gravity.length() <= MAX_GRAVITY_M_S2,
                "gravity must be at most 1000 m/s²",
            ),
            (
                [self.ground_height.unwrap_or(0.0), self.world_floor_y]
                    .iter()
                    .all(|y| y.abs() <= MAX_POSITION_M),
                "ground_height and world_floor_y must lie within ±4096 m",
            ),
            (
                (0.0..=MAX_FRICTION).contains(&self.ground_friction),
                "ground_friction must be in 0..=10",
            ),
            (self.restitution_threshold >= 0.0, "restitution_threshold must be ≥ 0"),
            (
                (0.0..=1.0).contains(&self.ground_restitution),
                "ground_restitution must be in 0..=1",
            ),
            (
                self.rest_linear_threshold >= 0.0 && self.rest_angular_threshold >= 0.0,
                "rest thresholds must be ≥ 0",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(PhysicsError::InvalidConfig(why)),
            None => Ok(()),
        }
    }
}

/// What the last step did.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    /// Steps taken so far, this one included.
    pub step: u64,
    /// Touching pairs among bodies that were simulated this step, with how hard they pushed.
    pub contacts: Vec<ContactReport>,
    /// Bodies that fell below the world floor this step; they are out of the simulation from now on.
    pub fell_below_floor: Vec<BodyId>,
    /// Dynamic bodies simulated this step.
    pub awake_bodies: usize,
    /// Dynamic bodies at rest after this step.
    pub resting_bodies: usize,
    /// Deepest overlap of any recomputed contact point at the start of the step (m, ≥ 0).
    pub max_penetration: f32,
}

/// The simulation: bodies as flat arrays indexed by body id, plus everything a step carries to the next.
#[derive(Clone, Debug)]
pub struct World {
    config: WorldConfig,
    kind: Vec<BodyKind>,
    half: Vec<Vec3>,
    inv_mass: Vec<f32>,
    inv_inertia_local: Vec<Vec3>,
    friction: Vec<f32>,
    restitution: Vec<f32>,
    position: Vec<Vec3>,
    rotation: Vec<Quat>,
    linear_velocity: Vec<Vec3>,
    angular_velocity: Vec<Vec3>,
    at_rest: Vec<bool>,
    /// Fell below the world floor: out of the simulation until its state is set again.
    removed: Vec<bool>,
    /// State set from outside since the last step: its contacts must be recomputed.
    moved_from_outside: Vec<bool>,
    /// May the world's own rest detection put this body to rest? Off for a body another peer has authority over:
    /// it rests only when that peer says so (through [`World::set_state`]).
    rest_detection: Vec<bool>,
    /// Per body: simulated for everyone by another peer (see [`World::set_remote`]).
    remote: Vec<bool>,
    /// Per body: awake since an island woke it that only remote bodies moved (nothing of this peer's own); such a
    /// body wakes no resting remote body until something of this peer's own moves its island (`wake_islands`).
    woken_by_remote: Vec<bool>,
    /// Rest detection's window of recent poses and velocities (see [`super::rest`]).
    history: Vec<MotionHistory>,
    /// Touching contacts per body last step and this step (see [`World::wake_bodies_that_lost_a_contact`]).
    touching_before: Vec<u32>,
    touching_now: Vec<u32>,
    /// Pose each body had when its contacts were last computed (see [`POSE_REFERENCE_TOLERANCE`]).
    reference_position: Vec<Vec3>,
    reference_rotation: Vec<Quat>,
    broadphase: Broadphase,
    contacts: ContactSet,
    islands: Islands,
    stack: StackOrder,
    steps: u64,
    // Per-step scratch, kept to avoid allocating while running.
    bounds: Vec<Option<Aabb>>,
    active: Vec<bool>,
    moved: Vec<bool>,
    simulated: Vec<bool>,
    solver_bodies: SolverBodies,
    constraints: Vec<ContactConstraint>,
    /// (stack level, contact index) of the contacts solved this step, sorted.
    order: Vec<(u32, u32)>,
    /// Seeding scratch: weight impulse, carried load and support count per solver slot.
    weight: Vec<f32>,
    load: Vec<f32>,
    supports: Vec<u32>,
    report: StepReport,
}

/// A saved world; restoring it and stepping on gives bit-identical results.
#[derive(Clone, Debug)]
pub struct WorldSnapshot(World);

impl World {
    pub fn new(config: WorldConfig) -> Result<World, PhysicsError> {
        config.validate()?;
        Ok(World {
            config,
            kind: Vec::new(),
            half: Vec::new(),
            inv_mass: Vec::new(),
            inv_inertia_local: Vec::new(),
            friction: Vec::new(),
            restitution: Vec::new(),
            position: Vec::new(),
            rotation: Vec::new(),
            linear_velocity: Vec::new(),
            angular_velocity: Vec::new(),
            at_rest: Vec::new(),
            removed: Vec::new(),
            moved_from_outside: Vec::new(),
            rest_detection: Vec::new(),
            remote: Vec::new(),
            woken_by_remote: Vec::new(),
            history: Vec::new(),
            touching_before: Vec::new(),
            touching_now: Vec::new(),
            reference_position: Vec::new(),
            reference_rotation: Vec::new(),
            broadphase: Broadphase::default(),
            contacts: ContactSet::default(),
            islands: Islands::default(),
            stack: StackOrder::default(),
            steps: 0,
            bounds: Vec::new(),
            active: Vec::new(),
            moved: Vec::new(),
            simulated: Vec::new(),
            solver_bodies: SolverBodies::default(),
            constraints: Vec::new(),
            order: Vec::new(),
            weight: Vec::new(),
            load: Vec::new(),
            supports: Vec::new(),
            report: StepReport::default(),
        })
    }

    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// Adds a body; refuses non-finite or absurd values (see [`super::body`] for the limits).
    pub fn add_body(&mut self, desc: &BodyDesc) -> Result<BodyId, PhysicsError> {
        let d = desc.validated()?;
        // Mass is kept for kinematic bodies too when they have a density, so `set_kind` can make them dynamic.
        let (inv_mass, inv_inertia) = inverse_mass_properties(d.half_extents, d.density)?;
        let id = BodyId(self.kind.len() as u32);
        self.kind.push(d.kind);
        self.half.push(d.half_extents);
        self.inv_mass.push(inv_mass);
        self.inv_inertia_local.push(inv_inertia);
        self.friction.push(d.friction);
        self.restitution.push(d.restitution);
        self.position.push(d.position);
        self.rotation.push(d.rotation);
        self.linear_velocity.push(d.linear_velocity);
        self.angular_velocity.push(d.angular_velocity);
        self.at_rest.push(false);
        self.removed.push(false);
        self.moved_from_outside.push(true);
        self.rest_detection.push(true);
        self.remote.push(false);
        self.woken_by_remote.push(false);
        self.history.push(MotionHistory::default());
        self.touching_before.push(0);
        self.touching_now.push(0);
        self.reference_position.push(d.position);
        self.reference_rotation.push(d.rotation);
        self.moved.push(true);
        self.broadphase.add_body();
        self.bounds.push(None);
        self.active.push(false);
        self.simulated.push(false);
        self.reserve_step_buffers();
        Ok(id)
    }

    /// Sizes the per-step buffers for the bodies there are, so a running scene never allocates: room for
    /// [`RESERVED_CONTACTS_PER_BODY`] contacts per body (a cube in a dense pile touches up to about six others).
    fn reserve_step_buffers(&mut self) {
        let n = self.kind.len();
        let contacts = RESERVED_CONTACTS_PER_BODY * n;
        self.broadphase.reserve(contacts);
        self.contacts.reserve(contacts);
        self.stack.reserve(n, contacts);
        self.constraints
            .reserve(contacts.saturating_sub(self.constraints.len()));
        self.order.reserve(contacts.saturating_sub(self.order.len()));
        self.report
            .contacts
            .reserve(contacts.saturating_sub(self.report.contacts.len()));
        self.report
            .fell_below_floor
            .reserve(n.saturating_sub(self.report.fell_below_floor.len()));
        for v in [&mut self.load, &mut self.weight] {
            v.reserve((n + 1).saturating_sub(v.len()));
        }
        self.supports.reserve((n + 1).saturating_sub(self.supports.len()));
        let sb = &mut self.solver_bodies;
        for v in [&mut sb.v, &mut sb.w, &mut sb.dp, &mut sb.dtheta] {
            v.reserve((n + 1).saturating_sub(v.len()));
        }
        sb.inv_mass.reserve((n + 1).saturating_sub(sb.inv_mass.len()));
        sb.inv_inertia.reserve((n + 1).saturating_sub(sb.inv_inertia.len()));
    }

    pub fn body_count(&self) -> usize {
        self.kind.len()
    }

    pub fn body_ids(&self) -> impl Iterator<Item = BodyId> {
        (0..self.kind.len() as u32).map(BodyId)
    }

    fn check(&self, id: BodyId) -> Result<usize, PhysicsError> {
        if id.index() < self.kind.len() {
            Ok(id.index())
        } else {
            Err(PhysicsError::UnknownBody(id.0))
        }
    }

    pub fn kind(&self, id: BodyId) -> Result<BodyKind, PhysicsError> {
        Ok(self.kind[self.check(id)?])
    }

    pub fn half_extents(&self, id: BodyId) -> Result<Vec3, PhysicsError> {
        Ok(self.half[self.check(id)?])
    }

    /// Out of the simulation after falling below the world floor.
    pub fn is_removed(&self, id: BodyId) -> Result<bool, PhysicsError> {
        Ok(self.removed[self.check(id)?])
    }

    pub fn state(&self, id: BodyId) -> Result<BodyState, PhysicsError> {
        let i = self.check(id)?;
        Ok(BodyState {
            position: self.position[i],
            rotation: self.rotation[i],
            linear_velocity: self.linear_velocity[i],
            angular_velocity: self.angular_velocity[i],
            at_rest: self.at_rest[i],
        })
    }

    /// Sets a body's whole state. A state equal to the current one changes nothing (so a resting body that is
    /// re-quantized to itself stays asleep); any other state is taken as given — resting if `at_rest`, awake
    /// otherwise, which wakes its island — and its contacts are recomputed next step. A state that wakes the body
    /// or differs by more than a re-quantization (see [`SNAP_DISTANCE_M`]) starts its rest window over, so it
    /// cannot fall back asleep on poses it had before. Refused values change nothing.
    pub fn set_state(&mut self, id: BodyId, state: &BodyState) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        let s = state.validated()?;
        let current = self.state(id)?;
        if s == current && !self.removed[i] {
            return Ok(());
        }
        let woken = current.at_rest && !s.at_rest;
        if woken || self.removed[i] || !self.is_snap(i, &current, &s) {
            self.history[i].clear();
        }
        self.position[i] = s.position;
        self.rotation[i] = s.rotation;
        self.linear_velocity[i] = s.linear_velocity;
        self.angular_velocity[i] = s.angular_velocity;
        self.at_rest[i] = s.at_rest && self.kind[i] == BodyKind::Dynamic;
        self.removed[i] = false;
        self.moved_from_outside[i] = true;
        self.woken_by_remote[i] = false;
        Ok(())
    }

    /// True when `to` differs from `from` by no more than state sync's re-quantization (see [`SNAP_DISTANCE_M`]).
    fn is_snap(&self, i: usize, from: &BodyState, to: &BodyState) -> bool {
        let radius = self.half[i].length();
        let turn = (to.rotation * from.rotation.conjugate()).xyz().length() * 2.0;
        let dv = to.linear_velocity - from.linear_velocity;
        let dw = to.angular_velocity - from.angular_velocity;
        from.position.distance(to.position) <= SNAP_DISTANCE_M
            && turn <= SNAP_TURN_RAD
            && dv.length() + dw.length() * radius <= SNAP_POINT_SPEED_M_S
    }

    /// Turns the world's own rest detection on (the default) or off for one body. With it off the body is never
    /// put to rest here (nor is its island), only by a [`World::set_state`] that says `at_rest`: the
    /// non-authority side of a networked cube rests exactly when, and where, the authority side's copy does.
    /// While such a body is awake but slow (waiting for that word) it does not wake resting bodies it touches.
    pub fn set_rest_detection(&mut self, id: BodyId, enabled: bool) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        self.rest_detection[i] = enabled;
        Ok(())
    }

    /// Marks a body as simulated for everyone by another peer (a networked cube under another player's authority,
    /// or held in another player's hand); off by default. The world still moves it between its authority's updates
    /// and it still pushes and is pushed by this peer's own bodies, but one remote body never wakes another that
    /// its authority put to rest: whether the second moves is for its own authority to say, and the two
    /// authorities' worlds see the meeting at different times and places (a remote hand grazing a remote stack
    /// here that it missed in its own world), so waking it here only makes it jump back when the next resting
    /// state arrives. Until then the resting one holds as if fixed. A resting remote body is woken by losing a
    /// contact only when what it lost held it up (a cube of this peer's taken from under it), not one at its side.
    pub fn set_remote(&mut self, id: BodyId, remote: bool) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        if self.remote[i] == remote {
            return Ok(());
        }
        // Its contacts are counted another way from now on: no loss can be told from the last step's count.
        self.touching_before[i] = 0;
        // Nor may its neighbours see one: a cube this peer no longer simulates (its authority returned it) stops
        // counting for a remote cube resting on it, which lost nothing. Their last counts are redone as the new
        // flag would have given them.
        let up = -self.config.gravity.normalize_or_zero();
        for c in self.contacts.contacts.iter().filter(|c| c.touching()) {
            let (j, j_is_a) = match (c.a as usize == i, c.b as usize == i) {
                (true, _) if c.b != GROUND => (c.b as usize, false),
                (false, true) => (c.a as usize, true),
                _ => continue,
            };
            let was = counts_as_touching(c, j_is_a, [self.remote[j], !remote], up);
            let now = counts_as_touching(c, j_is_a, [self.remote[j], remote], up);
            let before = &mut self.touching_before[j];
            *before = (*before + u32::from(now)).saturating_sub(u32::from(was));
        }
        self.remote[i] = remote;
        Ok(())
    }

    /// True when one of two remote bodies rests and the other does not: a meeting that wakes nothing here.
    fn remote_meets_resting_remote(&self, a: usize, b: usize) -> bool {
        self.remote[a] && self.remote[b] && self.at_rest[a] != self.at_rest[b]
    }

    /// Gives a kinematic body the velocities that carry it to `position` and `rotation` in one step.
    pub fn set_kinematic_target(&mut self, id: BodyId, position: Vec3, rotation: Quat) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        if self.kind[i] != BodyKind::Kinematic {
            return Err(PhysicsError::NotKinematic(id.0));
        }
        let rotation = validate_pose(position, rotation)?;
        let inv_dt = 1.0 / self.config.dt;
        let mut dq = rotation * self.rotation[i].conjugate();
        if dq.w < 0.0 {
            dq = -dq;
        }
        // Small-angle map from the quaternion difference to an angular velocity (2·xyz ≈ axis·angle).
        let angular = Vec3::new(dq.x, dq.y, dq.z) * (2.0 * inv_dt);
        let (linear, angular) = validate_velocities((position - self.position[i]) * inv_dt, angular)?;
        self.linear_velocity[i] = linear;
        self.angular_velocity[i] = angular;
        Ok(())
    }

    /// Makes a body dynamic or kinematic: a grabbed cube becomes kinematic (it follows the hand and pushes others),
    /// a released one dynamic again. The body keeps its pose, loses its velocities (the caller sets the ones it
    /// wants: a kinematic target, or the throw) and its rest history, and its contacts are recomputed next step.
    /// A kinematic body created without a density has no mass and cannot become dynamic.
    pub fn set_kind(&mut self, id: BodyId, kind: BodyKind) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        if self.kind[i] == kind {
            return Ok(());
        }
        if kind == BodyKind::Dynamic && self.inv_mass[i] == 0.0 {
            return Err(PhysicsError::Massless(id.0));
        }
        self.kind[i] = kind;
        self.linear_velocity[i] = Vec3::ZERO;
        self.angular_velocity[i] = Vec3::ZERO;
        self.at_rest[i] = false;
        self.moved_from_outside[i] = true;
        self.woken_by_remote[i] = false;
        self.history[i].clear();
        Ok(())
    }

    /// World-space points of the touching contacts (at most `max`), for a debug view; `out` is cleared first and
    /// only grows up to `max`, so a buffer reserved once is never reallocated.
    pub fn contact_points(&self, out: &mut Vec<Vec3>, max: usize) {
        out.clear();
        for c in self.contacts.contacts.iter().filter(|c| c.touching()) {
            let centre = self.position[c.a as usize];
            for p in c.manifold.points() {
                if out.len() == max {
                    return;
                }
                out.push(centre + p.anchor_a);
            }
        }
    }

    /// True when every dynamic body still in the simulation is at rest.
    pub fn all_at_rest(&self) -> bool {
        (0..self.kind.len()).all(|i| self.kind[i] != BodyKind::Dynamic || self.removed[i] || self.at_rest[i])
    }

    pub fn report(&self) -> &StepReport {
        &self.report
    }

    pub fn snapshot(&self) -> WorldSnapshot {
        WorldSnapshot(self.clone())
    }

    /// Puts the world back exactly as it was when `snapshot` was taken (reusing this world's buffers).
    pub fn restore(&mut self, snapshot: &WorldSnapshot) {
        self.clone_from(&snapshot.0)
    }

    /// FNV-1a hash of every body's exact state bits, in id order: equal checksums mean identical worlds.
    pub fn checksum(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bits: u32| {
            for byte in bits.to_le_bytes() {
                h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        };
        for i in 0..self.kind.len() {
            let floats = self.position[i]
                .to_array()
                .into_iter()
                .chain(self.rotation[i].to_array());
            let floats = floats
                .chain(self.linear_velocity[i].to_array())
                .chain(self.angular_velocity[i].to_array());
            floats.for_each(|f| eat(f.to_bits()));
            eat(u32::from(self.at_rest[i]) | u32::from(self.removed[i]) << 1);
        }
        h
    }

    fn is_moving_kinematic(&self, i: usize) -> bool {
        self.kind[i] == BodyKind::Kinematic
            && !self.removed[i]
            && (self.linear_velocity[i] != Vec3::ZERO || self.angular_velocity[i] != Vec3::ZERO)
    }

    fn aabb(&self, i: usize) -> Aabb {
        let r = Mat3::from_quat(self.rotation[i]);
        let h = self.half[i];
        let extent = r.x_axis.abs() * h.x + r.y_axis.abs() * h.y + r.z_axis.abs() * h.z;
        Aabb {
            min: self.position[i] - extent,
            max: self.position[i] + extent,
        }
    }

    /// Advances the world by one fixed step and says what happened.
    pub fn step(&mut self) -> &StepReport {
        let _flush = FlushDenormals::enable();
        let n = self.kind.len();
        self.steps += 1;
        self.report.step = self.steps;
        self.report.contacts.clear();
        self.report.fell_below_floor.clear();

        if self.nothing_moves() {
            // Everything rests and nothing was touched from outside: the step would change nothing.
            self.report.max_penetration = 0.0;
            self.report.awake_bodies = 0;
            self.report.resting_bodies = self.at_rest.iter().filter(|&&r| r).count();
            return &self.report;
        }
        self.apply_gravity();
        self.update_broadphase();
        self.report.max_penetration = self.update_contacts();
        if self.wake_islands() {
            // Woken bodies' contacts with each other were skipped above: compute them now.
            let deepest = self.contacts.update(&poses!(self), &self.active, &self.moved, true);
            self.report.max_penetration = self.report.max_penetration.max(deepest);
        }
        for i in 0..n {
            self.simulated[i] = self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i];
        }
        self.solve();
        self.remove_fallen();
        self.detect_rest();

        self.contacts.report(&mut self.report.contacts);
        self.report.awake_bodies = self.simulated.iter().filter(|&&s| s).count();
        self.report.resting_bodies = self.at_rest.iter().filter(|&&r| r).count();
        self.moved_from_outside.iter_mut().for_each(|m| *m = false);
        &self.report
    }

    /// True when rest detection is on and no body can move this step: every dynamic body rests (or is out of the
    /// simulation), no kinematic body moves, and no state was set from outside since the last step.
    fn nothing_moves(&self) -> bool {
        self.config.sleep
            && (0..self.kind.len()).all(|i| {
                !self.moved_from_outside[i]
                    && match self.kind[i] {
                        BodyKind::Dynamic => self.at_rest[i] || self.removed[i],
                        BodyKind::Kinematic => !self.is_moving_kinematic(i),
                    }
            })
    }

    fn apply_gravity(&mut self) {
        let dv = self.config.gravity * self.config.dt;
        for i in 0..self.kind.len() {
            if self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i] {
                self.linear_velocity[i] = (self.linear_velocity[i] + dv).clamp_length_max(MAX_LINEAR_SPEED_M_S);
            }
        }
    }

    fn update_broadphase(&mut self) {
        for i in 0..self.kind.len() {
            self.bounds[i] = if self.removed[i] {
                None
            } else {
                Some(
                    self.aabb(i)
                        .grown(SPECULATIVE_DISTANCE_M + poses!(self).motion_bound(i)),
                )
            };
        }
        if self.broadphase.update(&self.bounds, self.config.ground_height) {
            self.contacts.sync_with_pairs(self.broadphase.pairs());
        }
    }

    fn update_contacts(&mut self) -> f32 {
        for i in 0..self.kind.len() {
            let awake_dynamic = self.kind[i] == BodyKind::Dynamic && !self.at_rest[i];
            self.active[i] =
                !self.removed[i] && (awake_dynamic || self.is_moving_kinematic(i) || self.moved_from_outside[i]);
            self.moved[i] = self.pose_moved(i);
        }
        self.contacts.update(&poses!(self), &self.active, &self.moved, false)
    }

    /// Whether body i's contacts must be recomputed: it was set from outside, is moving fast enough to need a
    /// wider speculative margin, or has left its reference pose by more than the tolerance — in which case its
    /// current pose becomes the new reference. A body that only creeps keeps its manifolds, which stay exact to
    /// within [`POSE_REFERENCE_TOLERANCE`].
    fn pose_moved(&mut self, i: usize) -> bool {
        let (p, q) = (self.position[i], self.rotation[i]);
        let turn = q * self.reference_rotation[i].conjugate();
        let turned = 2.0 * Vec3::new(turn.x, turn.y, turn.z).length();
        // Speed as the last step left it: this step's gravity has already been added to awake bodies, and a cube
        // resting on the ground would otherwise always look fast.
        let gravity = if self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] {
            self.config.gravity
        } else {
            Vec3::ZERO
        };
        let speed = (self.linear_velocity[i] - gravity * self.config.dt).length()
            + self.angular_velocity[i].length() * self.half[i].length();
        let moved = self.moved_from_outside[i]
            || speed * self.config.dt > POSE_REFERENCE_TOLERANCE
            || p.distance(self.reference_position[i]) > POSE_REFERENCE_TOLERANCE
            || turned > POSE_REFERENCE_TOLERANCE;
        if moved {
            self.reference_position[i] = p;
            self.reference_rotation[i] = q;
        }
        moved
    }

    /// Slower than rest detection's thresholds spread over its window: as the last step left it (this step's
    /// gravity, already added to an awake body, taken back out).
    fn is_slow(&self, i: usize) -> bool {
        let window_s = REST_WINDOW as f32 * self.config.dt;
        let gravity = if self.at_rest[i] {
            Vec3::ZERO
        } else {
            self.config.gravity
        };
        let v = self.linear_velocity[i] - gravity * self.config.dt;
        v.length() * window_s <= self.config.rest_linear_threshold
            && self.angular_velocity[i].length() * window_s <= self.config.rest_angular_threshold
    }

    fn is_dynamic(&self, i: u32) -> bool {
        i != GROUND && self.kind[i as usize] == BodyKind::Dynamic
    }

    /// Builds islands from touching contacts and wakes every resting body whose island holds an awake one or is
    /// pushed by a moving kinematic body.
    /// Returns true when some resting body was woken (its `active` flag is then set, all others cleared).
    fn wake_islands(&mut self) -> bool {
        if !self.config.sleep {
            self.at_rest.iter_mut().for_each(|r| *r = false);
            return false;
        }
        let n = self.kind.len();
        self.islands.reset(n);
        for c in &self.contacts.contacts {
            if c.touching()
                && self.is_dynamic(c.a)
                && self.is_dynamic(c.b)
                && !self.remote_meets_resting_remote(c.a as usize, c.b as usize)
            {
                self.islands.union(c.a, c.b);
            }
        }
        self.wake_bodies_that_lost_a_contact();
        for i in 0..n {
            // A slow body that may not rest by itself only waits for its authority's word: it must not wake the
            // bodies its authority already put to rest (they hold it up as if fixed meanwhile).
            let waiting = !self.rest_detection[i] && self.is_slow(i);
            if self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i] && !waiting {
                if self.remote[i] || self.woken_by_remote[i] {
                    self.islands.mark_awake(i as u32);
                } else {
                    self.islands.mark_awake_here(i as u32);
                }
            }
        }
        for k in 0..self.contacts.contacts.len() {
            let c = &self.contacts.contacts[k];
            if !c.touching() || c.b == GROUND {
                continue;
            }
            let (a, b) = (c.a, c.b);
            for (pusher, pushed) in [(a, b), (b, a)] {
                if self.is_moving_kinematic(pusher as usize)
                    && self.is_dynamic(pushed)
                    && !self.remote_meets_resting_remote(pusher as usize, pushed as usize)
                {
                    if self.remote[pusher as usize] {
                        self.islands.mark_awake(pushed);
                    } else {
                        self.islands.mark_awake_here(pushed);
                    }
                    self.islands.mark_not_still(pushed);
                    self.history[pushed as usize].clear();
                }
            }
        }
        let mut woke = false;
        for i in 0..n {
            // A remote body its authority put to rest is woken only by something of this peer's own in its island.
            // An island that only remote bodies move (a remote cube knocking a default cube of the host's that
            // touches a third, resting cube of the same remote authority) would otherwise simulate that resting
            // cube here for the steps until its authority's next word: solver noise of a few hundredths of a
            // millimetre, drawn, while its authority has it at rest and unmoved. Whether it moves is its
            // authority's to say; until then it holds as if fixed.
            let here = self.islands.has_local_cause(i as u32);
            let wake = self.at_rest[i] && self.islands.is_awake(i as u32) && (here || !self.remote[i]);
            if !self.at_rest[i] || wake {
                // What this peer's own bodies move is this peer's own motion from now on.
                self.woken_by_remote[i] = if wake { !here } else { self.woken_by_remote[i] && !here };
            }
            if wake {
                // Its window still holds the poses it rested in: it must be seen still anew.
                self.at_rest[i] = false;
                self.history[i].clear();
                // This step's gravity was given to awake bodies before islands were known. Without it the
                // warm-started contacts, which carry its weight, would kick it upwards by g·dt (0.11 m/s): a
                // woken 30-cube tower jumped and swayed by a centimetre.
                self.linear_velocity[i] += self.config.gravity * self.config.dt;
            }
            self.active[i] = wake;
            woke |= wake;
        }
        woke
    }

    /// Counts each body's touching contacts. A dynamic body with fewer than last step lost something that held or
    /// pushed it, so it is woken with its island and its rest window starts over: a cube whose support was set
    /// elsewhere, grabbed away or removed must not stay asleep in mid-air, and one whose prop slid away must be
    /// seen still anew before it rests (its window would otherwise still hold the steps it was propped). Call
    /// after the islands' unions.
    fn wake_bodies_that_lost_a_contact(&mut self) {
        self.touching_now.iter_mut().for_each(|t| *t = 0);
        let up = -self.config.gravity.normalize_or_zero();
        // A local cube that brushed a remote one's side and left (one pulled from beside it) takes nothing it stands
        // on: waking it would only shake its stack by solver noise before its authority's next word.
        for c in self.contacts.contacts.iter().filter(|c| c.touching()) {
            let remote_b = c.b != GROUND && self.remote[c.b as usize];
            if counts_as_touching(c, true, [self.remote[c.a as usize], remote_b], up) {
                self.touching_now[c.a as usize] += 1;
            }
            if c.b != GROUND && counts_as_touching(c, false, [remote_b, self.remote[c.a as usize]], up) {
                self.touching_now[c.b as usize] += 1;
            }
        }
        for i in 0..self.kind.len() {
            let lost = self.touching_now[i] < self.touching_before[i];
            if lost && self.kind[i] == BodyKind::Dynamic && !self.removed[i] {
                self.islands.mark_awake_here(i as u32);
                self.history[i].clear();
            }
        }
        std::mem::swap(&mut self.touching_before, &mut self.touching_now);
    }

    fn solve(&mut self) {
        let n = self.kind.len();
        let sb = &mut self.solver_bodies;
        for v in [&mut sb.v, &mut sb.w, &mut sb.dp, &mut sb.dtheta] {
            v.clear();
            v.resize(n + 1, Vec3A::ZERO);
        }
        sb.inv_mass.clear();
        sb.inv_mass.resize(n + 1, 0.0);
        sb.inv_inertia.clear();
        sb.inv_inertia.resize(n + 1, Mat3A::ZERO);
        for i in 0..n {
            let moving_kinematic = self.is_moving_kinematic(i);
            let sb = &mut self.solver_bodies;
            if self.simulated[i] {
                let r = Mat3::from_quat(self.rotation[i]);
                sb.inv_inertia[i] = Mat3A::from(r * Mat3::from_diagonal(self.inv_inertia_local[i]) * r.transpose());
                sb.inv_mass[i] = self.inv_mass[i];
            }
            if self.simulated[i] || moving_kinematic {
                sb.v[i] = self.linear_velocity[i].into();
                sb.w[i] = self.angular_velocity[i].into();
            }
        }
        let sb = &mut self.solver_bodies;

        let up = -self.config.gravity.normalize_or_zero();
        self.stack.compute(&self.contacts.contacts, &self.simulated, up);
        // Ground up: contacts ordered by the height of the body they hold up (ties keep pair order), so a body's
        // supports always come before the contacts that rest on it. Small keys are sorted, not constraints.
        let level = &self.stack.level;
        self.order.clear();
        for (k, c) in self.contacts.contacts.iter().enumerate() {
            let (a, b) = (c.a as usize, c.b);
            let b_simulated = b != GROUND && self.simulated[b as usize];
            if c.updated && c.manifold.count > 0 && (self.simulated[a] || b_simulated) {
                let level_b = if b == GROUND { 0 } else { level[b as usize] };
                self.order.push((level[a].max(level_b), k as u32));
            }
        }
        self.order.sort_unstable();
        self.constraints.clear();
        for &(_, k) in &self.order {
            let c = &self.contacts.contacts[k as usize];
            let (a, b) = (c.a as usize, c.b);
            let (slot_b, friction_b, restitution_b) = if b == GROUND {
                (n as u32, self.config.ground_friction, self.config.ground_restitution)
            } else {
                (b, self.friction[b as usize], self.restitution[b as usize])
            };
            let friction = (self.friction[a] * friction_b).sqrt();
            let restitution = self.restitution[a].max(restitution_b);
            let lower = lower_body(c, level, &self.simulated, up);
            self.constraints
                .push(solver::prepare(k, c, c.a, slot_b, sb, friction, restitution, lower));
        }
        let params = SolverParams {
            dt: self.config.dt,
            max_depenetration_velocity: self.config.max_depenetration_velocity,
            restitution_threshold: self.config.restitution_threshold,
            position_iterations: self.config.position_iterations,
        };
        // One slot per body plus the static slot, which weighs nothing.
        self.weight.resize(n + 1, 0.0);
        let weight_impulse = self.config.gravity.length() * self.config.dt;
        for i in 0..n {
            self.weight[i] = if self.simulated[i] {
                weight_impulse / self.inv_mass[i]
            } else {
                0.0
            };
        }
        self.weight[n] = 0.0;
        self.load.resize(n + 1, 0.0);
        self.supports.resize(n + 1, 0);
        solver::seed_fresh_contacts(
            &mut self.constraints,
            self.config.gravity.normalize_or_zero().into(),
            &self.weight,
            &mut self.load,
            &mut self.supports,
        );
        let sb = &mut self.solver_bodies;
        solver::warm_start(&self.constraints, sb);
        let iterations = self.config.velocity_iterations;
        // Stop early once a pass changes no impulse by more than the tolerance: a settled pile converges in one.
        let tolerance = CONVERGED_IMPULSE_PER_KG * self.config.gravity.length() * self.config.dt;
        for k in 0..iterations {
            if solver::solve(&mut self.constraints, sb, &params, k) <= tolerance {
                break;
            }
        }
        solver::shock_pass(&self.constraints, sb, &params);
        solver::apply_restitution(&mut self.constraints, sb, params.restitution_threshold);
        solver::store_impulses(&self.constraints, &mut self.contacts.contacts);
        for i in 0..=n {
            sb.dp[i] = sb.v[i] * params.dt;
            sb.dtheta[i] = sb.w[i] * params.dt;
        }
        let position_iterations = self.config.position_iterations;
        for k in 0..position_iterations {
            solver::solve_positions(&self.constraints, sb, &params, k + 1 == position_iterations);
        }
        for i in 0..n {
            if self.simulated[i] {
                self.linear_velocity[i] = Vec3::from(sb.v[i]).clamp_length_max(MAX_LINEAR_SPEED_M_S);
                self.angular_velocity[i] = Vec3::from(sb.w[i]).clamp_length_max(MAX_ANGULAR_SPEED_RAD_S);
            }
        }
        self.integrate_positions();
    }

    /// Moves simulated and kinematic bodies by this step's displacement (solved velocity × dt plus position
    /// correction). Rotation uses the first-order quaternion update (no trig, so it is the same on every
    /// platform), then renormalises.
    fn integrate_positions(&mut self) {
        let dt = self.config.dt;
        for i in 0..self.kind.len() {
            let kinematic = self.is_moving_kinematic(i);
            if !(self.simulated[i] || kinematic) {
                continue;
            }
            let (dp, dtheta) = if kinematic {
                (self.linear_velocity[i] * dt, self.angular_velocity[i] * dt)
            } else {
                (self.solver_bodies.dp[i].into(), self.solver_bodies.dtheta[i].into())
            };
            self.position[i] += dp;
            let q = self.rotation[i];
            let spin = Quat::from_xyzw(dtheta.x, dtheta.y, dtheta.z, 0.0) * q;
            self.rotation[i] = (q + spin * 0.5).normalize();
        }
    }

    fn remove_fallen(&mut self) {
        for i in 0..self.kind.len() {
            if (self.simulated[i] || self.is_moving_kinematic(i)) && self.position[i].y < self.config.world_floor_y {
                self.removed[i] = true;
                self.simulated[i] = false;
                self.linear_velocity[i] = Vec3::ZERO;
                self.angular_velocity[i] = Vec3::ZERO;
                self.report.fell_below_floor.push(BodyId(i as u32));
            }
        }
    }

    /// Records each simulated body's pose and velocities; islands whose bodies are all still go to rest with zero
    /// velocity (they are below the rest speed already, so nothing visible is lost).
    fn detect_rest(&mut self) {
        let n = self.kind.len();
        self.restart_windows_of_hit_bodies();
        for i in 0..n {
            if self.simulated[i] {
                let (p, q) = (self.position[i], self.rotation[i]);
                self.history[i].push(p, q, self.linear_velocity[i], self.angular_velocity[i]);
            }
        }
        if !self.config.sleep {
            return;
        }
        let thresholds = RestThresholds::new(self.config.rest_linear_threshold, self.config.rest_angular_threshold);
        // A body without rest detection of its own (a networked cube another peer has authority over) still
        // counts for its island by what it does here: when it is still too, the bodies beside it may rest, and it
        // waits awake for its authority's word. Counting it as never still made two cubes of two authorities that
        // touch keep each other awake for ever, each peer waiting for the other's cube to rest first.
        for i in 0..n {
            let still = self.history[i].is_still(self.half[i].length(), &thresholds);
            if self.simulated[i] && !still {
                self.islands.mark_not_still(i as u32);
            }
        }
        for i in 0..n {
            if self.simulated[i] && self.rest_detection[i] && self.islands.is_still(i as u32) {
                self.at_rest[i] = true;
                self.woken_by_remote[i] = false;
                self.linear_velocity[i] = Vec3::ZERO;
                self.angular_velocity[i] = Vec3::ZERO;
            }
        }
    }

    /// Starts the rest window over for both bodies of every contact solved this step that is new (nothing to warm
    /// start from) or whose surfaces met faster than [`HIT_SPEED_M_S`] beyond one step of gravity: what happened
    /// before the hit says nothing about whether the body can rest after it.
    fn restart_windows_of_hit_bodies(&mut self) {
        let hit_speed = HIT_SPEED_M_S + self.config.gravity.length() * self.config.dt;
        for c in self.contacts.contacts.iter().filter(|c| c.updated && c.touching()) {
            let fastest = c.manifold.points().iter().fold(0.0f32, |m, p| m.max(p.approach_speed));
            if c.fresh || fastest > hit_speed {
                self.history[c.a as usize].clear();
                if c.b != GROUND {
                    self.history[c.b as usize].clear();
                }
            }
        }
    }
}

/// Whether touching contact `c` counts for body a (`for_a`) or body b among the contacts whose loss wakes it, given
/// `[this body remote, the other body remote]` (the ground is never remote). Between two remote bodies nothing
/// counts: a remote body's supports that move away are its authority's to see (see `World::set_remote`). A remote
/// body counts only what holds it up.
fn counts_as_touching(c: &Contact, for_a: bool, [remote, other_remote]: [bool; 2], up: Vec3) -> bool {
    !remote || (!other_remote && holds_up(c, for_a, up))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cube(y: f32) -> BodyDesc {
        BodyDesc {
            position: Vec3::new(0.0, y, 0.0),
            ..BodyDesc::default()
        }
    }

    #[test]
    fn a_kinematic_cube_ignores_gravity_and_falls_again_once_dynamic() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let id = world.add_body(&cube(2.0)).unwrap();
        world.set_kind(id, BodyKind::Kinematic).unwrap();
        assert_eq!(world.kind(id).unwrap(), BodyKind::Kinematic);
        for _ in 0..30 {
            world.step();
        }
        assert_eq!(
            world.state(id).unwrap().position.y,
            2.0,
            "a kinematic body does not fall"
        );
        world.set_kind(id, BodyKind::Dynamic).unwrap();
        for _ in 0..30 {
            world.step();
        }
        assert!(world.state(id).unwrap().position.y < 1.9, "a dynamic body falls");
    }

    #[test]
    fn a_kinematic_cube_follows_its_target_and_pushes_a_resting_cube() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let pushed = world.add_body(&cube(0.5)).unwrap();
        let held = world
            .add_body(&BodyDesc {
                position: Vec3::new(-1.5, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        for _ in 0..60 {
            world.step();
        }
        assert!(world.state(pushed).unwrap().at_rest);
        world.set_kind(held, BodyKind::Kinematic).unwrap();
        let mut x = -1.5;
        for _ in 0..90 {
            x += 0.01;
            world
                .set_kinematic_target(held, Vec3::new(x, 0.5, 0.0), Quat::IDENTITY)
                .unwrap();
            world.step();
        }
        let held_x = world.state(held).unwrap().position.x;
        assert!((held_x - x).abs() < 1e-4, "held cube at {held_x}, target {x}");
        let pushed_x = world.state(pushed).unwrap().position.x;
        assert!(pushed_x > 0.3, "the pushed cube moved to {pushed_x}");
        assert!(
            pushed_x - held_x > 0.95,
            "no deep overlap: {} m apart",
            pushed_x - held_x
        );
    }

    #[test]
    fn set_kind_refuses_unknown_ids_and_massless_bodies_without_changing_anything() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let id = world.add_body(&cube(0.5)).unwrap();
        assert_eq!(
            world.set_kind(BodyId(7), BodyKind::Kinematic),
            Err(PhysicsError::UnknownBody(7))
        );
        let hand = world
            .add_body(&BodyDesc {
                kind: BodyKind::Kinematic,
                density: 0.0,
                ..cube(3.0)
            })
            .unwrap();
        assert_eq!(
            world.set_kind(hand, BodyKind::Dynamic),
            Err(PhysicsError::Massless(hand.0))
        );
        assert_eq!(world.kind(hand).unwrap(), BodyKind::Kinematic);
        assert_eq!(world.kind(id).unwrap(), BodyKind::Dynamic);
    }

    /// A cube turned `deg` about z, resting on its lowest edge (45° is balance).
    fn cube_on_edge(deg: f32) -> BodyDesc {
        let a = deg.to_radians();
        BodyDesc {
            position: Vec3::new(0.0, 0.5 * (a.cos() + a.sin()), 0.0),
            rotation: Quat::from_rotation_z(a),
            ..BodyDesc::default()
        }
    }

    /// Steps until `id` is at rest (at most `max`), or `None`.
    fn steps_to_rest(world: &mut World, id: BodyId, max: u32) -> Option<u32> {
        (1..=max).find(|_| {
            world.step();
            world.state(id).unwrap().at_rest
        })
    }

    #[test]
    fn a_cube_on_an_edge_past_balance_is_not_put_to_rest_until_it_has_fallen() {
        for deg in [44.0, 46.0] {
            let mut world = World::new(WorldConfig::default()).unwrap();
            let id = world.add_body(&cube_on_edge(deg)).unwrap();
            let start = world.state(id).unwrap().rotation;
            let rested = steps_to_rest(&mut world, id, 600).expect("it lies flat in the end");
            let turned = world.state(id).unwrap().rotation.angle_between(start).to_degrees();
            assert!(
                turned > 43.0,
                "{deg}°: at rest after {rested} steps, turned only {turned}°"
            );
        }
    }

    #[test]
    fn a_woken_cube_must_be_still_for_a_whole_window_again() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let id = world.add_body(&cube(0.5)).unwrap();
        assert_eq!(steps_to_rest(&mut world, id, 100), Some(REST_WINDOW as u32));
        let woken = BodyState {
            at_rest: false,
            ..world.state(id).unwrap()
        };
        world.set_state(id, &woken).unwrap();
        assert_eq!(
            steps_to_rest(&mut world, id, 100),
            Some(REST_WINDOW as u32),
            "not on its old poses"
        );
    }

    #[test]
    fn a_woken_column_does_not_jump() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let ids: Vec<BodyId> = (0..5).map(|k| world.add_body(&cube(0.5 + k as f32)).unwrap()).collect();
        for _ in 0..40 {
            world.step();
        }
        assert!(world.all_at_rest());
        let top = world.state(ids[4]).unwrap();
        world.set_state(ids[4], &BodyState { at_rest: false, ..top }).unwrap();
        assert_eq!(world.step().awake_bodies, 5, "the whole column woke");
        for &id in &ids {
            let v = world.state(id).unwrap().linear_velocity;
            assert!(v.length() < 1e-3, "{id:?} was kicked to {v}");
        }
    }

    #[test]
    fn a_resting_cube_whose_support_is_set_elsewhere_falls() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let bottom = world.add_body(&cube(0.5)).unwrap();
        let top = world.add_body(&cube(1.5)).unwrap();
        for _ in 0..40 {
            world.step();
        }
        assert!(world.all_at_rest());
        // The bottom cube is set, resting, three metres away: nothing touches the top one any more.
        let moved = BodyState {
            position: Vec3::new(3.0, 0.5, 0.0),
            ..world.state(bottom).unwrap()
        };
        world.set_state(bottom, &moved).unwrap();
        for _ in 0..60 {
            world.step();
        }
        let y = world.state(top).unwrap().position.y;
        assert!(y < 0.51, "the top cube stayed in mid-air at {y} m");
    }

    #[test]
    fn a_moved_state_restarts_the_window_and_a_requantized_one_does_not() {
        for (shift, expected_extra_steps) in [(0.004, REST_WINDOW as u32), (0.0001, 0)] {
            let mut world = World::new(WorldConfig::default()).unwrap();
            let id = world.add_body(&cube(0.5)).unwrap();
            let head_start = 10;
            for _ in 0..head_start {
                world.step();
            }
            let mut s = world.state(id).unwrap();
            s.position.x += shift;
            world.set_state(id, &s).unwrap();
            let steps = steps_to_rest(&mut world, id, 100).unwrap();
            let expected = (REST_WINDOW as u32 - head_start).max(expected_extra_steps);
            assert_eq!(steps, expected, "set {shift} m away");
        }
    }

    #[test]
    fn switching_kinds_stays_deterministic() {
        let run = || {
            let mut world = World::new(WorldConfig::default()).unwrap();
            let ids: Vec<BodyId> = (0..3).map(|k| world.add_body(&cube(0.5 + k as f32)).unwrap()).collect();
            for step in 0..200 {
                if step == 20 {
                    world.set_kind(ids[2], BodyKind::Kinematic).unwrap();
                }
                if (20..60).contains(&step) {
                    let p = Vec3::new(0.0, 2.5 + 0.02 * (step - 20) as f32, 0.3);
                    world
                        .set_kinematic_target(ids[2], p, Quat::from_rotation_y(0.01 * step as f32))
                        .unwrap();
                }
                if step == 60 {
                    world.set_kind(ids[2], BodyKind::Dynamic).unwrap();
                }
                world.step();
            }
            world.checksum()
        };
        assert_eq!(run(), run());
    }
}
