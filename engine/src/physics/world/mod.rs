//! The [`World`]: owns every body (as flat arrays indexed by [`BodyId`]), the broadphase, the contacts and the
//! islands, and runs one fixed step at a time:
//!
//! gravity → broadphase → narrowphase → islands (wake) → stack order → seed, warm start, velocity passes, shock
//! pass, restitution → integrate → position passes → floor check → rest detection.
//!
//! State in and out is plain data ([`BodyState`]); a [`WorldSnapshot`] holds everything a step reads, so
//! restoring one and stepping on repeats the same bits.

use glam::{Mat3, Quat, Vec3};

use super::awake_set::AwakeSet;
use super::body::{
    inverse_mass_properties, validate_pose, validate_velocities, MAX_FRICTION, MAX_LINEAR_SPEED_M_S, MAX_POSITION_M,
};
use super::broadphase::{Aabb, Broadphase, GROUND};
use super::contact::{ContactSet, NO_CONTACT};
use super::contact_solver::{ContactAnchors, ContactConstraint, SolverBodies};
use super::island::Islands;
use super::rest::MotionHistory;
use super::solver_lanes::Schedule;
use super::stack_order::StackOrder;
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
        $crate::physics::contact::BodyPoses {
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

mod impulse;
mod sleep;
mod solve;
mod step;
mod wake;

use wake::counts_as_touching;

/// A body whose pose stays within this distance (m) and angle (rad) of its reference pose, moving slower than this
/// per step, keeps its contact manifolds instead of recomputing them: a settled pile without rest detection then
/// costs no narrowphase. Far below the contact slop, so what it changes is invisible.
pub const POSE_REFERENCE_TOLERANCE: f32 = 2.0e-5;

/// A remote body meeting a remote hand (see `World::remote_hand_shoves_remote`) is held up by it when their contact's
/// normal is within this cosine of straight up (45°).
pub const HELD_SUPPORT_COS: f32 = 0.7;

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

/// A body without a solver slot this step.
const NO_SLOT: u32 = u32::MAX;

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
    /// Most velocity passes per step; they stop early once a pass changes nothing (see
    /// [`WorldConfig::velocity_early_stop`]). The shock pass follows them.
    pub velocity_iterations: u32,
    /// Stop the velocity passes once a pass changes no impulse anywhere in the world by more than the tolerance
    /// (true, the default). That test is world-wide, so with it a body's bits depend on every contact in the
    /// world, not only on those it touches; a world that must reproduce another's bits for one body while the
    /// rest differs (client-side prediction: the client's copy of the other player is not the server's) turns it
    /// off and always runs every pass.
    pub velocity_early_stop: bool,
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
            velocity_early_stop: true,
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
    /// How many bodies are at rest (kept as `at_rest` changes, so a step never counts them).
    resting: usize,
    /// Fell below the world floor: out of the simulation until its state is set again.
    removed: Vec<bool>,
    /// State set from outside since the last step: its contacts must be recomputed.
    moved_from_outside: Vec<bool>,
    /// Turned dynamic since the last step (a released cube): its weight is new to whatever holds it up, and the
    /// solver's seeding hands it to the contacts under it (`contact_solver::seed_fresh_contacts`).
    weight_is_new: Vec<bool>,
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
    /// Touching contacts per body when last counted (see [`World::wake_bodies_that_lost_a_contact`]); a body's
    /// count is redone only in a step that may change it (`recount`).
    touching: Vec<u32>,
    /// Bodies whose touching contacts must be counted again this step (a contact of theirs was updated, added or
    /// removed, or `set_remote` changed how they count), and the flag that keeps each listed once.
    recount: Vec<u32>,
    in_recount: Vec<bool>,
    /// Pose each body had when its contacts were last computed (see [`POSE_REFERENCE_TOLERANCE`]).
    reference_position: Vec<Vec3>,
    reference_rotation: Vec<Quat>,
    broadphase: Broadphase,
    contacts: ContactSet,
    islands: Islands,
    stack: StackOrder,
    steps: u64,
    /// The bodies a step looks at (see `awake_set.rs`): everything that moves or may have moved since it was last
    /// looked at. Everything else rests untouched and costs a step nothing.
    awake: AwakeSet,
    // Per-step scratch, kept to avoid allocating while running.
    /// This step's members of `awake`, ascending.
    awake_ids: Vec<u32>,
    /// Bodies simulated this step, ascending.
    simulated_ids: Vec<u32>,
    /// Bodies woken by their island this step.
    woken_ids: Vec<u32>,
    /// Contacts brought up to date this step (`Contact::updated`), in pair order once the islands are woken.
    updated_ids: Vec<u32>,
    /// (pair key, slot) of `updated_ids`, for sorting them.
    sort_keys: Vec<(u64, u32)>,
    /// The last sort of `updated_ids`: the list as it came and as it went, and `ContactSet::changes` then. While
    /// no contact was inserted or removed every slot has the same key, so the same list sorts the same way.
    sorted_from: Vec<u32>,
    sorted_to: Vec<u32>,
    sorted_at_changes: u64,
    /// The bodies whose contacts a step brings up to date (`World::update_contacts`); the last listing of their
    /// contacts, the bodies it was listed from and `ContactSet::changes` then (while neither changed, it is listed
    /// again as it was); whether this step's listed contacts have their `Contact::updated` flags set.
    active_ids: Vec<u32>,
    listed: Vec<u32>,
    listed_from: Vec<u32>,
    listed_at_changes: u64,
    updated_flags_set: bool,
    /// Bodies whose enlarged box changed this step, and the bodies the broadphase found near one.
    leavers: Vec<u32>,
    candidates: Vec<u32>,
    /// Bodies that lost a contact this step.
    lost: Vec<u32>,
    /// Per body: may move this step (awake, a moving kinematic body or set from outside); set for `awake_ids`.
    active: Vec<bool>,
    /// Per body: the executed step (`looks`) in which its pose counts as moved, so its contacts are recomputed
    /// rather than kept (see [`World::pose_moved`]). A stamp, not a flag: nothing needs clearing afterwards.
    moved_at: Vec<u64>,
    /// Steps that ran (not skipped because nothing moved).
    looks: u64,
    simulated: Vec<bool>,
    /// Per body: its slot in the solver's arrays this step (slot 0 is the ground), or [`NO_SLOT`] for none.
    slot: Vec<u32>,
    /// The body in each solver slot (slot k holds `slot_body[k - 1]`).
    slot_body: Vec<u32>,
    solver_bodies: SolverBodies,
    constraints: Vec<ContactConstraint>,
    /// What the velocity and shock passes never read of each constraint, at the same index (`ContactAnchors`).
    anchors: Vec<ContactAnchors>,
    /// The constraints in groups solved side by side (`solver_lanes`): all of them, and those of the shock pass.
    schedule: Schedule,
    shock_schedule: Schedule,
    /// The constraints' solver slots (a, b), in constraint order, that `schedule` was built for, and which
    /// constraint of that order lies at each index of `constraints` (group order, see
    /// `Schedule::place_in_group_order` and `World::solve`).
    placed_slots: Vec<(u32, u32)>,
    placed: Vec<u32>,
    /// (stack level, index in `updated_ids`) of the contacts solved this step, sorted; `order_unsorted` the same
    /// in `updated_ids` order, and `level_counts` the counting sort's buckets (see `sort_by_level`).
    order: Vec<(u32, u32)>,
    order_unsorted: Vec<(u32, u32)>,
    level_counts: Vec<u32>,
    /// Seeding scratch: weight impulse, carried load, the part of it new this step (it reaches the body through a
    /// fresh contact) and support count per solver slot.
    weight: Vec<f32>,
    load: Vec<f32>,
    new_load: Vec<f32>,
    supports: Vec<u32>,
    /// The shock pass's sums over columns (see `contact_solver::ColumnLoads`).
    column_loads: super::contact_solver::ColumnLoads,
    /// This step's constraints' solver slots (a, b), in constraint order.
    order_slots: Vec<(u32, u32)>,
    /// The threads a step shares its work with ([`World::set_threads`]); the bits do not depend on how many.
    workers: super::workers::Workers,
    /// What the parallel loops keep between uses (`parallel.rs`).
    progress: super::parallel::Progress,
    /// A step shares its work out when it has at least this many contacts to bring up to date
    /// ([`World::set_min_contacts_to_share`]); `share` says whether this step does.
    min_contacts_to_share: usize,
    share: bool,
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
            resting: 0,
            removed: Vec::new(),
            moved_from_outside: Vec::new(),
            weight_is_new: Vec::new(),
            rest_detection: Vec::new(),
            remote: Vec::new(),
            woken_by_remote: Vec::new(),
            history: Vec::new(),
            touching: Vec::new(),
            recount: Vec::new(),
            in_recount: Vec::new(),
            reference_position: Vec::new(),
            reference_rotation: Vec::new(),
            broadphase: Broadphase::default(),
            contacts: ContactSet::default(),
            islands: Islands::default(),
            stack: StackOrder::default(),
            steps: 0,
            awake: AwakeSet::default(),
            awake_ids: Vec::new(),
            simulated_ids: Vec::new(),
            woken_ids: Vec::new(),
            updated_ids: Vec::new(),
            sort_keys: Vec::new(),
            sorted_from: Vec::new(),
            sorted_to: Vec::new(),
            sorted_at_changes: u64::MAX,
            active_ids: Vec::new(),
            listed: Vec::new(),
            listed_from: Vec::new(),
            listed_at_changes: u64::MAX,
            updated_flags_set: false,
            leavers: Vec::new(),
            candidates: Vec::new(),
            lost: Vec::new(),
            active: Vec::new(),
            moved_at: Vec::new(),
            looks: 0,
            simulated: Vec::new(),
            slot: Vec::new(),
            slot_body: Vec::new(),
            solver_bodies: SolverBodies::default(),
            constraints: Vec::new(),
            anchors: Vec::new(),
            schedule: Schedule::default(),
            shock_schedule: Schedule::default(),
            placed_slots: Vec::new(),
            placed: Vec::new(),
            order: Vec::new(),
            order_unsorted: Vec::new(),
            level_counts: Vec::new(),
            weight: Vec::new(),
            load: Vec::new(),
            new_load: Vec::new(),
            supports: Vec::new(),
            column_loads: Default::default(),
            order_slots: Vec::new(),
            workers: super::workers::Workers::new(1),
            progress: Default::default(),
            min_contacts_to_share: super::parallel::MIN_CONTACTS_TO_SHARE,
            share: false,
            report: StepReport::default(),
        })
    }

    /// Steps on `threads` threads from now on (the caller's and `threads - 1` workers, started at the next step;
    /// clamped to 1..=64). The result is bit for bit the same for any number: only the time a step takes changes.
    /// A new world steps on one thread.
    pub fn set_threads(&mut self, threads: usize) {
        if threads != self.workers.threads() {
            self.workers = super::workers::Workers::new(threads);
        }
    }

    /// The threads a step runs on.
    pub fn threads(&self) -> usize {
        self.workers.threads()
    }

    /// With more than one thread, a step shares its work out only when it has at least `contacts` contacts to
    /// bring up to date (default [`MIN_CONTACTS_TO_SHARE`](super::parallel::MIN_CONTACTS_TO_SHARE): below it,
    /// one thread is faster). Tests set 0 so that every step shares. The bits never depend on it.
    pub fn set_min_contacts_to_share(&mut self, contacts: usize) {
        self.min_contacts_to_share = contacts;
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
        self.weight_is_new.push(false);
        self.rest_detection.push(true);
        self.remote.push(false);
        self.woken_by_remote.push(false);
        self.history.push(MotionHistory::default());
        self.touching.push(0);
        self.in_recount.push(false);
        self.reference_position.push(d.position);
        self.reference_rotation.push(d.rotation);
        self.moved_at.push(0);
        self.broadphase.add_body();
        self.contacts.add_body();
        self.active.push(false);
        self.simulated.push(false);
        self.slot.push(NO_SLOT);
        self.awake.resize(self.kind.len());
        self.awake.insert(id.0);
        self.reserve_step_buffers();
        Ok(id)
    }

    /// Sizes the per-step buffers for the bodies there are, so a running scene never allocates: room for
    /// [`RESERVED_CONTACTS_PER_BODY`] contacts per body (a cube in a dense pile touches up to about six others).
    fn reserve_step_buffers(&mut self) {
        let n = self.kind.len();
        let contacts = RESERVED_CONTACTS_PER_BODY * n;
        self.broadphase.reserve(n);
        self.contacts.reserve(contacts);
        self.islands.reserve(n);
        self.stack.reserve(n, contacts);
        for v in [
            &mut self.awake_ids,
            &mut self.simulated_ids,
            &mut self.woken_ids,
            &mut self.leavers,
            &mut self.candidates,
            &mut self.lost,
            &mut self.recount,
            &mut self.slot_body,
            &mut self.active_ids,
            &mut self.listed_from,
        ] {
            v.reserve(n.saturating_sub(v.len()));
        }
        self.updated_ids
            .reserve(contacts.saturating_sub(self.updated_ids.len()));
        for v in [&mut self.sorted_from, &mut self.sorted_to, &mut self.listed] {
            v.reserve(contacts.saturating_sub(v.len()));
        }
        self.sort_keys.reserve(contacts.saturating_sub(self.sort_keys.len()));
        self.constraints
            .reserve(contacts.saturating_sub(self.constraints.len()));
        self.anchors.reserve(contacts.saturating_sub(self.anchors.len()));
        self.placed_slots
            .reserve(contacts.saturating_sub(self.placed_slots.len()));
        self.placed.reserve(contacts.saturating_sub(self.placed.len()));
        for v in [&mut self.order, &mut self.order_unsorted] {
            v.reserve(contacts.saturating_sub(v.len()));
        }
        // A level is below the number of bodies; one more bucket for the unsupported, one for the prefix sum.
        self.level_counts
            .reserve((n + 2).saturating_sub(self.level_counts.len()));
        self.schedule.reserve(n + 1, contacts);
        self.shock_schedule.reserve(n + 1, contacts);
        self.report
            .contacts
            .reserve(contacts.saturating_sub(self.report.contacts.len()));
        self.report
            .fell_below_floor
            .reserve(n.saturating_sub(self.report.fell_below_floor.len()));
        for v in [&mut self.load, &mut self.new_load, &mut self.weight] {
            v.reserve((n + 1).saturating_sub(v.len()));
        }
        self.supports.reserve((n + 1).saturating_sub(self.supports.len()));
        self.column_loads.reserve(n + 1);
        let sb = &mut self.solver_bodies;
        for v in [&mut sb.v, &mut sb.w, &mut sb.dp, &mut sb.dtheta] {
            v.reserve((n + 1).saturating_sub(v.len()));
        }
        sb.inv_mass.reserve((n + 1).saturating_sub(sb.inv_mass.len()));
        sb.inv_inertia.reserve((n + 1).saturating_sub(sb.inv_inertia.len()));
        sb.inv_inertia_scalar
            .reserve((n + 1).saturating_sub(sb.inv_inertia_scalar.len()));
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

    /// A body's surface: its friction and restitution (as its [`BodyDesc`] gave them).
    pub fn material(&self, id: BodyId) -> Result<(f32, f32), PhysicsError> {
        let i = self.check(id)?;
        Ok((self.friction[i], self.restitution[i]))
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
        self.set_at_rest(i, s.at_rest && self.kind[i] == BodyKind::Dynamic);
        self.removed[i] = false;
        self.moved_from_outside[i] = true;
        self.woken_by_remote[i] = false;
        self.awake.insert(i as u32);
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
    /// And a remote kinematic body (a cube in another player's hand) shoves no other remote body: they pass through
    /// each other here (see `remote_hand_shoves_remote`).
    pub fn set_remote(&mut self, id: BodyId, remote: bool) -> Result<(), PhysicsError> {
        let i = self.check(id)?;
        if self.remote[i] == remote {
            return Ok(());
        }
        // Its contacts are counted another way from now on: no loss can be told from the last step's count. It is
        // counted anew next step, against zero.
        self.touching[i] = 0;
        self.mark_recount(i as u32);
        // Nor may its neighbours see one: a cube this peer no longer simulates (its authority returned it) stops
        // counting for a remote cube resting on it, which lost nothing. Their last counts are redone as the new
        // flag would have given them.
        let up = -self.config.gravity.normalize_or_zero();
        let mut k = self.contacts.first(i as u32);
        while k != NO_CONTACT {
            let c = &self.contacts.contacts[k as usize];
            k = self.contacts.next(k, i as u32);
            if !c.touching() || c.b == GROUND {
                continue;
            }
            let (j, j_is_a) = if c.a as usize == i {
                (c.b as usize, false)
            } else {
                (c.a as usize, true)
            };
            let was = counts_as_touching(c, j_is_a, [self.remote[j], !remote], up);
            let now = counts_as_touching(c, j_is_a, [self.remote[j], remote], up);
            let before = &mut self.touching[j];
            *before = (*before + u32::from(now)).saturating_sub(u32::from(was));
        }
        self.remote[i] = remote;
        Ok(())
    }

    /// True when contact `c` is a remote kinematic body (a cube in another player's hand, following the hand as
    /// this peer plays it out) shoving another remote body, which it then passes through here: the meeting is the
    /// holder's to simulate, with the hand where it really is; here the hand is a guess a trip behind, and where it
    /// overlapped a cube that its authority's world had apart from it, each state that put the cube back was
    /// followed by a push out of the guessed hand (a remote stack's cube kicked 7-10 cm in a step, again after every
    /// state: 600 s, four bots, 5 % loss). The cube moves when its authority's states say so, eased as any received
    /// state is. A remote body resting on the hand (its normal within [`HELD_SUPPORT_COS`] of up) is still held up:
    /// it would otherwise fall through between states.
    pub(super) fn remote_hand_shoves_remote(&self, c: &super::contact::Contact) -> bool {
        if c.b == GROUND {
            return false;
        }
        let (a, b) = (c.a as usize, c.b as usize);
        let (a_kinematic, b_kinematic) = (self.kind[a] == BodyKind::Kinematic, self.kind[b] == BodyKind::Kinematic);
        if !(self.remote[a] && self.remote[b]) || a_kinematic == b_kinematic {
            return false;
        }
        // The normal points from a to b: b rests on a when it points up, a on b when it points down.
        let up = -self.config.gravity.normalize_or_zero();
        let rests_on_hand = if a_kinematic {
            c.manifold.normal.dot(up) > HELD_SUPPORT_COS
        } else {
            c.manifold.normal.dot(up) < -HELD_SUPPORT_COS
        };
        !rests_on_hand
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
        self.awake.insert(i as u32);
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
        self.weight_is_new[i] = kind == BodyKind::Dynamic;
        self.linear_velocity[i] = Vec3::ZERO;
        self.angular_velocity[i] = Vec3::ZERO;
        self.set_at_rest(i, false);
        self.moved_from_outside[i] = true;
        self.woken_by_remote[i] = false;
        self.history[i].clear();
        self.awake.insert(i as u32);
        Ok(())
    }

    /// World-space points of the touching contacts (at most `max`, in slot order), for a debug view; `out` is
    /// cleared first and only grows up to `max`, so a buffer reserved once is never reallocated.
    pub fn contact_points(&self, out: &mut Vec<Vec3>, max: usize) {
        out.clear();
        for c in self.contacts.contacts.iter().filter(|c| c.live() && c.touching()) {
            let centre = self.position[c.a as usize];
            for p in c.manifold.points() {
                if out.len() == max {
                    return;
                }
                out.push(centre + p.anchor_a);
            }
        }
    }

    /// The bodies touching `id` now (the ground left out), from its contact list: for tools that explain what a
    /// body did. An id out of range touches nothing.
    pub fn touching_bodies(&self, id: BodyId) -> impl Iterator<Item = BodyId> + '_ {
        let body = id.0;
        let mut k = if id.index() < self.kind.len() {
            self.contacts.first(body)
        } else {
            NO_CONTACT
        };
        std::iter::from_fn(move || {
            while k != NO_CONTACT {
                let c = &self.contacts.contacts[k as usize];
                k = self.contacts.next(k, body);
                let other = c.other(body);
                if c.touching() && other != GROUND {
                    return Some(BodyId(other));
                }
            }
            None
        })
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

    /// Sets body i's rest flag, keeping the count of resting bodies.
    fn set_at_rest(&mut self, i: usize, at_rest: bool) {
        if self.at_rest[i] != at_rest {
            self.at_rest[i] = at_rest;
            if at_rest {
                self.resting += 1;
            } else {
                self.resting -= 1;
            }
        }
    }

    /// Has body i's touching contacts counted again next time they are counted.
    fn mark_recount(&mut self, i: u32) {
        if !self.in_recount[i as usize] {
            self.in_recount[i as usize] = true;
            self.recount.push(i);
        }
    }

    /// Bodies in the set of those a step looks at (see `awake_set.rs`); the rest cost a step nothing.
    pub fn awake_set_len(&self) -> usize {
        self.awake.len()
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
}

#[cfg(test)]
mod tests {
    use super::super::rest::REST_WINDOW;
    use super::*;

    fn cube(y: f32) -> BodyDesc {
        BodyDesc {
            position: Vec3::new(0.0, y, 0.0),
            ..BodyDesc::default()
        }
    }

    #[test]
    fn touching_bodies_names_the_cubes_a_cube_touches_and_never_the_ground() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let [bottom, middle, top] = [0.5, 1.5, 2.5].map(|y| world.add_body(&cube(y)).unwrap());
        let beside = world
            .add_body(&BodyDesc {
                position: Vec3::new(3.0, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        for _ in 0..5 {
            world.step();
        }
        let of = |id| world.touching_bodies(id).collect::<Vec<_>>();
        assert_eq!(of(bottom), vec![middle]);
        let mut m = of(middle);
        m.sort_by_key(|b| b.0);
        assert_eq!(m, vec![bottom, top]);
        assert_eq!(of(top), vec![middle]);
        assert!(of(beside).is_empty());
        assert!(of(BodyId(99)).is_empty());
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

    /// A settled pyramid of rows `rows` down to 1 along x, and the ids of its cubes.
    fn settled_pyramid(world: &mut World, rows: u32) -> Vec<BodyId> {
        let mut ids = Vec::new();
        for row in 0..rows {
            for k in 0..rows - row {
                let x = k as f32 - (rows - row - 1) as f32 * 0.5;
                ids.push(world.add_body(&cube(0.5 + row as f32)).unwrap());
                let s = BodyState {
                    position: Vec3::new(x, 0.5 + row as f32, 0.0),
                    ..world.state(*ids.last().unwrap()).unwrap()
                };
                world.set_state(*ids.last().unwrap(), &s).unwrap();
            }
        }
        for _ in 0..300 {
            world.step();
        }
        assert!(world.all_at_rest(), "the pyramid settles");
        ids
    }

    #[test]
    fn a_resting_pile_is_not_visited_while_a_cube_tumbles_beside_it() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let pile = settled_pyramid(&mut world, 8);
        assert_eq!(
            world.awake_set_len(),
            0,
            "a settled pile leaves the awake set in the step it rests"
        );
        let mover = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 3.0, 20.0),
                angular_velocity: Vec3::new(3.0, 5.0, 1.0),
                ..BodyDesc::default()
            })
            .unwrap();
        for _ in 0..60 {
            let report = world.step();
            assert_eq!(report.awake_bodies, 1);
            assert_eq!(report.resting_bodies, pile.len());
            assert!(report.contacts.iter().all(|c| c.a == mover && c.b.is_none()));
            // Only the tumbling cube is looked at: no resting body is in the set a step walks.
            assert_eq!(world.awake_set_len(), 1);
            assert_eq!(world.updated_ids.len(), 0, "flags are cleared at the end of a step");
        }
    }

    #[test]
    fn a_thrown_cube_still_wakes_a_resting_pile_and_a_rerun_is_identical() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let pile = settled_pyramid(&mut world, 6);
        let thrown = world
            .add_body(&BodyDesc {
                position: Vec3::new(-6.0, 2.5, 0.0),
                linear_velocity: Vec3::new(12.0, 1.0, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let saved = world.snapshot();
        let run = |world: &mut World| {
            let mut most_awake = 0;
            for _ in 0..400 {
                most_awake = most_awake.max(world.step().awake_bodies);
            }
            (most_awake, world.checksum())
        };
        let (most_awake, first) = run(&mut world);
        assert!(most_awake > 5, "the hit woke the pile ({most_awake} awake at most)");
        let moved = pile
            .iter()
            .filter(|&&id| world.state(id).unwrap().position.y < 0.5 + 0.4)
            .count();
        assert!(moved > 0 && world.state(thrown).unwrap().position.x > -5.0);
        world.restore(&saved);
        assert_eq!(run(&mut world).1, first, "same inputs, same bits");
    }

    #[test]
    fn a_cube_whose_support_is_grabbed_away_falls() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let bottom = world.add_body(&cube(0.5)).unwrap();
        let top = world.add_body(&cube(1.5)).unwrap();
        for _ in 0..40 {
            world.step();
        }
        assert!(world.all_at_rest() && world.awake_set_len() == 0);
        world.set_kind(bottom, BodyKind::Kinematic).unwrap();
        let mut x = 0.0;
        for _ in 0..90 {
            x += 0.05;
            world
                .set_kinematic_target(bottom, Vec3::new(x, 0.5, 0.0), Quat::IDENTITY)
                .unwrap();
            world.step();
        }
        let y = world.state(top).unwrap().position.y;
        assert!(y < 0.51, "the top cube stayed in mid-air at {y} m");
    }

    #[test]
    fn the_contacts_are_exactly_the_pairs_of_overlapping_enlarged_boxes() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        settled_pyramid(&mut world, 5);
        for k in 0..12 {
            world
                .add_body(&BodyDesc {
                    position: Vec3::new(-8.0 + k as f32 * 1.3, 2.0 + (k % 3) as f32, 1.0 - (k % 2) as f32 * 2.5),
                    linear_velocity: Vec3::new(((k * 7) % 5) as f32 - 2.0, 0.0, ((k * 3) % 4) as f32 - 1.5),
                    angular_velocity: Vec3::new(1.0, (k % 4) as f32, 0.5),
                    ..BodyDesc::default()
                })
                .unwrap();
        }
        let ground = world.config.ground_height;
        for _ in 0..200 {
            world.step();
            let n = world.body_count() as u32;
            let mut expected = Vec::new();
            for a in 0..n {
                for b in a + 1..n {
                    if world.broadphase.fat(a).overlaps(world.broadphase.fat(b)) {
                        expected.push((a, b));
                    }
                }
                if world.broadphase.reaches_ground(a, ground) {
                    expected.push((a, GROUND));
                }
            }
            let mut found: Vec<(u32, u32)> = world
                .contacts
                .contacts
                .iter()
                .filter(|c| c.live())
                .map(|c| (c.a, c.b))
                .collect();
            found.sort_unstable();
            expected.sort_unstable();
            assert_eq!(found, expected);
            // Every body's list holds exactly its contacts.
            for i in 0..n {
                let mut k = world.contacts.first(i);
                let mut listed = 0;
                while k != NO_CONTACT {
                    let c = &world.contacts.contacts[k as usize];
                    assert!(c.live() && (c.a == i || c.b == i));
                    listed += 1;
                    k = world.contacts.next(k, i);
                }
                assert_eq!(listed, found.iter().filter(|p| p.0 == i || p.1 == i).count());
            }
        }
    }
}
