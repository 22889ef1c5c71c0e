//! Sequential impulses over rigid (not soft) contacts, then a separate position pass:
//!
//! 1. warm start: apply last step's impulses (matched by feature id); contacts with nothing to warm start from are
//!    seeded with the weight they carry;
//! 2. velocity passes, ordered from the ground up: friction at the manifold's centre (two tangents and a twist),
//!    then non-penetration per point (a speculative point may close its gap this step, no more);
//! 3. shock pass: the same constraints once more, holding each contact's lower body fixed;
//! 4. restitution for impacts above the threshold;
//! 5. (the world integrates positions with these velocities);
//! 6. position passes: overlap beyond [`LINEAR_SLOP_M`] is removed by moving the bodies directly, never faster
//!    than the maximum depenetration velocity. Velocities are untouched, so push-out adds no energy (no pops).
//!
//! Why rigid: a soft contact is a spring, and a spring under 29 cubes compresses — Box2D-style 30 Hz contacts sag a
//! 30-cube column by 24 cm. Rigid contacts carry the column's weight exactly once their impulses are right, and
//! the seeding, the ground-up order and the shock pass get them right in the first step and keep them right.

use glam::{Mat3A, Vec3, Vec3A, Vec4};

use super::contact::{Contact, TOUCHING_SEPARATION_M};
use super::manifold::MAX_MANIFOLD_POINTS;
use super::parallel::{Runner, SlotsMut};
use super::solver_lanes::{used_lanes, Schedule, LANES, NO_LANE};

/// Overlap allowed before push-out starts (metres): well under the quantization step of 1/4096 m, so 30 stacked
/// contacts lose less than 3 mm even at the slop.
pub const LINEAR_SLOP_M: f32 = 0.0001;
/// Passes over one contact in the shock pass: with the lower body fixed, a contact is a small problem of its own.
pub const SHOCK_LOCAL_ITERATIONS: u32 = 2;
/// Fraction of the remaining overlap (beyond the slop) removed per position pass.
pub const PUSH_OUT_FACTOR: f32 = 0.2;
/// A fresh contact whose points approach no faster than this (m/s) was set down, not hit: the load it brings is
/// handed to the contacts under it at once ([`seed_fresh_contacts`]).
pub const SET_DOWN_SPEED_M_S: f32 = 0.05;
/// The least radius twist friction acts at (m): a contact patch is never a point. Where a manifold's points sit on
/// one spot (a corner on the floor) their spread is zero and nothing resisted a spin about the normal: a cube
/// standing on a corner and leaning on another by its opposite corner turned about its diagonal at 0.08 rad/s,
/// its centre still, to the end of a session, so it never rested (5 % loss, seed 2, with the rocking rest rule).
/// At 1 cm such a spin stops within a third of a second; a manifold of several points spreads wider than this.
pub const MIN_TWIST_RADIUS_M: f32 = 0.01;

/// Per-body data the solver reads and writes. The last slot is a body that never moves (the ground); bodies that
/// are resting or kinematic have zero inverse mass, so impulses never change their velocity.
#[derive(Clone, Debug, Default)]
pub struct SolverBodies {
    pub v: Vec<Vec3A>,
    pub w: Vec<Vec3A>,
    pub inv_mass: Vec<f32>,
    pub inv_inertia: Vec<Mat3A>,
    /// The inverse inertia when it is the same about every axis (a cube, or 0 for what does not move), else NaN.
    /// Such a body's world inverse inertia is this times the identity whatever its rotation, so the rows of a
    /// contact on it depend only on the contact's geometry, which stands between recomputations.
    pub inv_inertia_scalar: Vec<f32>,
    /// Displacement and small-angle rotation this step (integration plus position correction).
    pub dp: Vec<Vec3A>,
    pub dtheta: Vec<Vec3A>,
}

/// One direction of a constraint between two bodies: lever arms crossed with the direction, the same weighted by
/// each body's inverse inertia, and the effective mass (plain, and with the lower body held fixed).
///
/// The two masses ride in the unused fourth lanes of the crossed lever arms (`Vec3A` is a 16-byte SSE register
/// whose fourth lane nothing reads: `element_sum`, `dot` and `cross` take x, y and z only), so a row is 64 bytes
/// instead of 80 and a constraint 736 instead of 848. The passes stream every constraint several times a step,
/// and large_pyramid's constraints are far beyond the caches; the values and the order of operations are
/// unchanged, so the bits are too.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    /// `ra × direction` in x, y, z; the effective mass in w.
    ra_x_mass: Vec4,
    /// `rb × direction` in x, y, z; the effective mass with the lower body fixed in w.
    rb_x_shock_mass: Vec4,
    ia: Vec3A,
    ib: Vec3A,
}

impl Row {
    #[inline(always)]
    fn ra_x(&self) -> Vec3A {
        Vec3A::from_vec4(self.ra_x_mass)
    }

    #[inline(always)]
    fn rb_x(&self) -> Vec3A {
        Vec3A::from_vec4(self.rb_x_shock_mass)
    }

    #[inline(always)]
    fn mass(&self) -> f32 {
        self.ra_x_mass.w
    }

    #[inline(always)]
    fn shock_mass(&self) -> f32 {
        self.rb_x_shock_mass.w
    }
}

/// A point as the velocity and shock passes see it; its anchors are in [`ContactAnchors`].
#[derive(Clone, Copy, Debug, Default)]
struct ConstraintPoint {
    normal: Row,
    separation: f32,
    normal_impulse: f32,
    max_normal_impulse: f32,
}

/// What the velocity and shock passes read and write, pass after pass: what only set-up, seeding, restitution,
/// storing and the position passes need is in [`ContactAnchors`], at the same index, so the passes stream 608
/// bytes a constraint instead of 736.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContactConstraint {
    a: u32,
    b: u32,
    normal: Vec3A,
    tangents: [Vec3A; 2],
    friction: f32,
    restitution: f32,
    count: u8,
    /// Which body is nearer the ground (held fixed in the shock pass): 0 neither, 1 body a, 2 body b.
    lower: u8,
    /// Nothing to warm start from: seeded with the weight it carries instead.
    fresh: bool,
    /// Friction acts at the centre of the points: two tangent rows and a twist about the normal.
    tangent_rows: [Row; 2],
    twist: Row,
    /// Mean distance of the points from their centre, at least [`MIN_TWIST_RADIUS_M`]: twist friction is limited to
    /// μ·N·radius.
    twist_radius: f32,
    tangent_impulse: [f32; 2],
    twist_impulse: f32,
    points: [ConstraintPoint; MAX_MANIFOLD_POINTS],
}

/// The rest of a constraint (see [`ContactConstraint`]): the contact it came from, each point's lever arms (for
/// the position passes) and its normal velocity before the solve (negative = approaching; for seeding, restitution
/// and the report).
#[derive(Clone, Copy, Debug, Default)]
pub struct ContactAnchors {
    contact: u32,
    /// The executed step that built this constraint's rows, and the masses they were built with (bits of the two
    /// bodies' inverse masses and scalar inverse inertias); 0 for rows never built. See [`prepare`].
    rows_look: u64,
    row_masses: [u32; 4],
    ra: [Vec3A; MAX_MANIFOLD_POINTS],
    rb: [Vec3A; MAX_MANIFOLD_POINTS],
    relative_velocity: [f32; MAX_MANIFOLD_POINTS],
}

// The passes stream every constraint several times a step: keep it at the size the split and the rows' packing
// give (see `Row`).
const _: () = assert!(std::mem::size_of::<ContactConstraint>() == 608);

impl ContactConstraint {
    /// The two solver slots it joins.
    pub fn bodies(&self) -> (u32, u32) {
        (self.a, self.b)
    }

    /// Whether the shock pass works on it (one of its bodies is nearer the ground).
    pub fn has_lower(&self) -> bool {
        self.lower != 0
    }

    /// Multipliers on each body's response: in the shock pass the lower body does not move.
    fn response(&self, shock: bool) -> (f32, f32) {
        match (shock, self.lower) {
            (true, 1) => (0.0, 1.0),
            (true, 2) => (1.0, 0.0),
            _ => (1.0, 1.0),
        }
    }

    fn total_normal_impulse(&self) -> f32 {
        self.points[..self.count as usize]
            .iter()
            .map(|p| p.normal_impulse)
            .sum()
    }
}

/// Solver settings taken from the world configuration.
#[derive(Clone, Copy, Debug)]
pub struct SolverParams {
    pub dt: f32,
    pub max_depenetration_velocity: f32,
    pub restitution_threshold: f32,
    pub position_iterations: u32,
}

/// Two unit tangents perpendicular to `n`, chosen by a fixed rule so the same normal always gives the same basis.
fn tangent_basis(n: Vec3A) -> [Vec3A; 2] {
    let t1 = if n.x.abs() < 0.57735 {
        Vec3A::new(0.0, n.z, -n.y)
    } else {
        Vec3A::new(n.y, -n.x, 0.0)
    }
    .normalize();
    [t1, n.cross(t1)]
}

fn inverse(k: f32) -> f32 {
    if k > 0.0 {
        1.0 / k
    } else {
        0.0
    }
}

/// The masses of a constraint's two bodies, loaded once for all its rows (seven of them for four points).
struct RowBodies {
    inv_mass: [f32; 2],
    inv_inertia: [Mat3A; 2],
    /// [`SolverBodies::inv_inertia_scalar`]: NaN where the matrix is needed.
    inv_inertia_scalar: [f32; 2],
}

impl RowBodies {
    #[inline(always)]
    fn load(bodies: &SolverBodies, (a, b): (usize, usize)) -> RowBodies {
        RowBodies {
            inv_mass: [bodies.inv_mass[a], bodies.inv_mass[b]],
            inv_inertia: [bodies.inv_inertia[a], bodies.inv_inertia[b]],
            inv_inertia_scalar: [bodies.inv_inertia_scalar[a], bodies.inv_inertia_scalar[b]],
        }
    }

    /// Body `side`'s inverse world inertia times `v`: a scale for a body alike about every axis.
    #[inline(always)]
    fn turn(&self, side: usize, v: Vec3A) -> Vec3A {
        let scalar = self.inv_inertia_scalar[side];
        if scalar.is_nan() {
            self.inv_inertia[side] * v
        } else {
            v * scalar
        }
    }

    /// Both bodies' inertia is alike about every axis: the rows do not depend on how the bodies are turned.
    fn rows_ignore_rotation(&self) -> bool {
        !self.inv_inertia_scalar[0].is_nan() && !self.inv_inertia_scalar[1].is_nan()
    }

    /// The bits the rows are built from besides the contact's geometry and the lower body.
    fn bits(&self) -> [u32; 4] {
        [
            self.inv_mass[0].to_bits(),
            self.inv_mass[1].to_bits(),
            self.inv_inertia_scalar[0].to_bits(),
            self.inv_inertia_scalar[1].to_bits(),
        ]
    }
}

/// A row along `linear` acting at lever arms `ra`, `rb` (a zero `linear` with `angular` set makes a pure twist
/// row) between the two bodies of `bodies`.
#[inline(always)]
fn make_row(bodies: &RowBodies, linear: Vec3A, angular: Vec3A, (ra, rb): (Vec3A, Vec3A), lower: u8) -> Row {
    let (ra_x, rb_x) = if linear == Vec3A::ZERO {
        (angular, angular)
    } else {
        (ra.cross(linear), rb.cross(linear))
    };
    let (ia, ib) = (bodies.turn(0, ra_x), bodies.turn(1, rb_x));
    let lin = linear.length_squared();
    let ka = bodies.inv_mass[0] * lin + ra_x.dot(ia);
    let kb = bodies.inv_mass[1] * lin + rb_x.dot(ib);
    let mass = inverse(ka + kb);
    // With neither body held, the shock pass's mass is the plain one: no second division.
    let shock_mass = match lower {
        1 => inverse(kb),
        2 => inverse(ka),
        _ => mass,
    };
    Row {
        ra_x_mass: ra_x.extend(mass),
        rb_x_shock_mass: rb_x.extend(shock_mass),
        ia,
        ib,
    }
}

/// Where a constraint comes from: contact `contact_index` (`contact`) between solver slots `a` and `b`, its mixed
/// friction and restitution, which body is lower (see `stack_order::lower_body`), and the executed step (`look`).
pub struct PrepareInput<'a> {
    pub contact_index: u32,
    pub contact: &'a Contact,
    pub a: u32,
    pub b: u32,
    pub friction: f32,
    pub restitution: f32,
    pub lower: u8,
    pub look: u64,
}

/// Builds the constraint for a contact in `out`, in place: a constraint and its anchors are 800 bytes, and one
/// built on the stack and then pushed costs a copy of all of it (a few per cent of a step).
///
/// The slot held the same contact's constraint in the last executed step, and when its manifold was not
/// recomputed since, neither body's inertia depends on its rotation (cubes), and the masses and the lower body
/// are the same, the rows there are exactly what building them again would give: they are kept, and only what
/// changes every step (slots, velocities, separations, impulses) is written. Same inputs, same bits, built or
/// kept; a still pile with sleeping off builds almost none.
///
/// Returns whether the slot holds the same constraint as in the last executed step, as far as the schedules see
/// it: the same contact between the same solver slots with the same lower body.
pub fn prepare(
    (out, anchors): (&mut ContactConstraint, &mut ContactAnchors),
    input: PrepareInput<'_>,
    bodies: &SolverBodies,
) -> bool {
    let PrepareInput {
        contact_index,
        contact: c,
        a,
        b,
        friction,
        restitution,
        lower,
        look,
    } = input;
    let m = &c.manifold;
    let (ia, ib) = (a as usize, b as usize);
    let row_bodies = RowBodies::load(bodies, (ia, ib));
    let same = anchors.rows_look != 0
        && anchors.rows_look + 1 == look
        && anchors.contact == contact_index
        && out.lower == lower;
    let same_slots = same && out.a == a && out.b == b;
    let kept =
        same && c.built_in_look != look && row_bodies.rows_ignore_rotation() && anchors.row_masses == row_bodies.bits();
    if kept {
        let n = out.normal;
        for (k, (mp, cp)) in m.points().iter().zip(&mut out.points).enumerate() {
            let (ra, rb) = (anchors.ra[k], anchors.rb[k]);
            let dv = bodies.v[ib] + bodies.w[ib].cross(rb) - bodies.v[ia] - bodies.w[ia].cross(ra);
            cp.separation = mp.separation;
            cp.normal_impulse = mp.normal_impulse;
            cp.max_normal_impulse = 0.0;
            anchors.relative_velocity[k] = n.dot(dv).min(-mp.bounce_speed);
        }
    } else {
        build_rows((out, anchors), m, &row_bodies, lower, bodies, (ia, ib));
        out.lower = lower;
        anchors.row_masses = row_bodies.bits();
    }
    anchors.rows_look = look;
    anchors.contact = contact_index;
    let tangents = out.tangents;
    let tangent_impulse = Vec3A::from(m.tangent_impulse);
    out.a = a;
    out.b = b;
    out.friction = friction;
    out.restitution = restitution;
    out.fresh = c.fresh;
    out.tangent_impulse = [tangent_impulse.dot(tangents[0]), tangent_impulse.dot(tangents[1])];
    out.twist_impulse = m.twist_impulse;
    same_slots
}

/// Everything of a constraint that follows from the manifold and the bodies' masses: normal, tangents, rows,
/// anchors, twist radius; and each point's separation, impulse and normal velocity.
fn build_rows(
    (out, anchors): (&mut ContactConstraint, &mut ContactAnchors),
    m: &super::manifold::Manifold,
    row_bodies: &RowBodies,
    lower: u8,
    bodies: &SolverBodies,
    (ia, ib): (usize, usize),
) {
    let n = Vec3A::from(m.normal);
    let tangents = tangent_basis(n);
    let count = m.count as usize;
    let (mut centre_a, mut centre_b) = (Vec3A::ZERO, Vec3A::ZERO);
    for (k, cp) in out.points.iter_mut().enumerate() {
        let Some(mp) = m.points().get(k) else {
            *cp = ConstraintPoint::default();
            anchors.ra[k] = Vec3A::ZERO;
            anchors.rb[k] = Vec3A::ZERO;
            anchors.relative_velocity[k] = 0.0;
            continue;
        };
        let (ra, rb) = (Vec3A::from(mp.anchor_a), Vec3A::from(mp.anchor_b));
        centre_a += ra;
        centre_b += rb;
        let dv = bodies.v[ib] + bodies.w[ib].cross(rb) - bodies.v[ia] - bodies.w[ia].cross(ra);
        *cp = ConstraintPoint {
            normal: make_row(row_bodies, n, Vec3A::ZERO, (ra, rb), lower),
            separation: mp.separation,
            normal_impulse: mp.normal_impulse,
            max_normal_impulse: 0.0,
        };
        anchors.ra[k] = ra;
        anchors.rb[k] = rb;
        anchors.relative_velocity[k] = n.dot(dv).min(-mp.bounce_speed);
    }
    let scale = 1.0 / count.max(1) as f32;
    let (centre_a, centre_b) = (centre_a * scale, centre_b * scale);
    let twist_radius = m
        .points()
        .iter()
        .map(|p| (Vec3A::from(p.anchor_a) - centre_a).length())
        .sum::<f32>()
        * scale;
    let twist_radius = twist_radius.max(MIN_TWIST_RADIUS_M);
    let t0 = make_row(row_bodies, tangents[0], Vec3A::ZERO, (centre_a, centre_b), lower);
    let t1 = make_row(row_bodies, tangents[1], Vec3A::ZERO, (centre_a, centre_b), lower);
    out.normal = n;
    out.tangents = tangents;
    out.count = m.count;
    out.tangent_rows = [t0, t1];
    out.twist = make_row(row_bodies, Vec3A::ZERO, n, (centre_a, centre_b), lower);
    out.twist_radius = twist_radius;
}

/// The solver bodies as the passes reach them, possibly from several workers at once (`parallel.rs`).
///
/// SAFETY (the contract every pass here keeps): a pass reads and writes through a view only the two bodies of the
/// constraints it is given, and runs them through `Runner::groups`, which starts a group only after every earlier
/// group on the same bodies is done (with release/acquire between the workers): no body is read or written by
/// two workers at once. The ground (slot 0) is read by all and never written: it has no mass, so every push
/// leaves its +0 velocity as it is, and writing it back would change nothing. The view lives no longer than the
/// `&mut SolverBodies` it was made from, and nothing else touches those while it does.
#[derive(Clone, Copy)]
struct BodiesView {
    v: *mut Vec3A,
    w: *mut Vec3A,
    dp: *mut Vec3A,
    dtheta: *mut Vec3A,
    inv_mass: *const f32,
    len: usize,
    /// Slots of `dp` and `dtheta` (the velocity passes run before they are filled).
    displacement_len: usize,
}

unsafe impl Send for BodiesView {}
unsafe impl Sync for BodiesView {}

impl BodiesView {
    fn new(bodies: &mut SolverBodies) -> BodiesView {
        let len = bodies.v.len();
        assert!(bodies.w.len() == len && bodies.inv_mass.len() == len);
        let displacement_len = bodies.dp.len().min(bodies.dtheta.len());
        BodiesView {
            v: bodies.v.as_mut_ptr(),
            w: bodies.w.as_mut_ptr(),
            dp: bodies.dp.as_mut_ptr(),
            dtheta: bodies.dtheta.as_mut_ptr(),
            inv_mass: bodies.inv_mass.as_ptr(),
            len,
            displacement_len,
        }
    }

    #[inline(always)]
    fn v(&self, k: usize) -> Vec3A {
        assert!(k < self.len);
        // SAFETY: in bounds; see the type's contract.
        unsafe { *self.v.add(k) }
    }

    #[inline(always)]
    fn w(&self, k: usize) -> Vec3A {
        assert!(k < self.len);
        // SAFETY: in bounds; see the type's contract.
        unsafe { *self.w.add(k) }
    }

    #[inline(always)]
    fn inv_mass(&self, k: usize) -> f32 {
        assert!(k < self.len);
        // SAFETY: in bounds; read-only for the view's life.
        unsafe { *self.inv_mass.add(k) }
    }

    #[inline(always)]
    fn set_velocity(&self, k: usize, v: Vec3A, w: Vec3A) {
        assert!(k < self.len);
        if k != 0 {
            // SAFETY: in bounds; see the type's contract.
            unsafe {
                *self.v.add(k) = v;
                *self.w.add(k) = w;
            }
        }
    }

    #[inline(always)]
    fn displacement(&self, k: usize) -> (Vec3A, Vec3A) {
        assert!(k < self.displacement_len);
        // SAFETY: in bounds; see the type's contract.
        unsafe { (*self.dp.add(k), *self.dtheta.add(k)) }
    }

    #[inline(always)]
    fn set_displacement(&self, k: usize, dp: Vec3A, dtheta: Vec3A) {
        assert!(k < self.displacement_len);
        if k != 0 {
            // SAFETY: in bounds; see the type's contract.
            unsafe {
                *self.dp.add(k) = dp;
                *self.dtheta.add(k) = dtheta;
            }
        }
    }
}

/// The constraints as the passes reach them: a group's constraints are handed out as `&mut` to the one worker
/// that runs the group. SAFETY: as [`BodiesView`]: a schedule puts each constraint in one group, and a group runs
/// once per pass; the view lives no longer than the `&mut [ContactConstraint]` it was made from.
#[derive(Clone, Copy)]
struct ConstraintsView {
    ptr: *mut ContactConstraint,
    len: usize,
}

unsafe impl Send for ConstraintsView {}
unsafe impl Sync for ConstraintsView {}

impl ConstraintsView {
    fn new(constraints: &mut [ContactConstraint]) -> ConstraintsView {
        ConstraintsView {
            ptr: constraints.as_mut_ptr(),
            len: constraints.len(),
        }
    }

    /// The group's first `N` constraints, or `None` should two of them be one (a schedule never gives that).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn lanes<const N: usize>(&self, group: &[u32; LANES]) -> Option<[&mut ContactConstraint; N]> {
        let lanes: [usize; N] = std::array::from_fn(|l| group[l] as usize);
        for l in 0..N {
            assert!(lanes[l] < self.len);
            if lanes[..l].contains(&lanes[l]) {
                return None;
            }
        }
        // SAFETY: in bounds and distinct; only this group's worker holds them (see the type's contract).
        Some(std::array::from_fn(|l| unsafe { &mut *self.ptr.add(lanes[l]) }))
    }

    /// One constraint of the group.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn one(&self, k: u32) -> &mut ContactConstraint {
        assert!((k as usize) < self.len);
        // SAFETY: in bounds; only this group's worker holds it.
        unsafe { &mut *self.ptr.add(k as usize) }
    }
}

/// The velocities of one contact's two bodies, loaded once per contact and written back once, so the inner loops
/// touch only registers. `scale_a`/`scale_b` are 0 for a body held fixed (the lower body in the shock pass).
struct Pair {
    va: Vec3A,
    wa: Vec3A,
    vb: Vec3A,
    wb: Vec3A,
    ma: f32,
    mb: f32,
    scale_a: f32,
    scale_b: f32,
}

impl Pair {
    #[inline(always)]
    fn load(bodies: &BodiesView, c: &ContactConstraint, (scale_a, scale_b): (f32, f32)) -> Pair {
        let (a, b) = (c.a as usize, c.b as usize);
        Pair {
            va: bodies.v(a),
            wa: bodies.w(a),
            vb: bodies.v(b),
            wb: bodies.w(b),
            ma: bodies.inv_mass(a) * scale_a,
            mb: bodies.inv_mass(b) * scale_b,
            scale_a,
            scale_b,
        }
    }

    #[inline(always)]
    fn store(&self, bodies: &BodiesView, c: &ContactConstraint) {
        let (a, b) = (c.a as usize, c.b as usize);
        bodies.set_velocity(a, self.va, self.wa);
        bodies.set_velocity(b, self.vb, self.wb);
    }

    /// Applies `impulse` along a row: −to A, +to B. `linear` is the row's direction (zero for a twist).
    #[inline(always)]
    fn push(&mut self, linear: Vec3A, row: &Row, impulse: f32) {
        self.va -= linear * (self.ma * impulse);
        self.wa -= row.ia * (self.scale_a * impulse);
        self.vb += linear * (self.mb * impulse);
        self.wb += row.ib * (self.scale_b * impulse);
    }

    /// Speed of B against A along a row. One horizontal sum instead of three dot products: the passes are
    /// latency-bound (each row waits for the previous row's update), and horizontal adds are the slow part.
    #[inline(always)]
    fn speed(&self, linear: Vec3A, row: &Row) -> f32 {
        (linear * (self.vb - self.va) + self.wb * row.rb_x() - self.wa * row.ra_x()).element_sum()
    }
}

const BOTH: (f32, f32) = (1.0, 1.0);

/// Per-slot scratch for [`seed_fresh_contacts`], each as long as the weights. `new_load` comes in holding the
/// weight impulse of each body whose weight is new this step (a released cube), 0 for the others.
pub struct SeedScratch<'a> {
    pub load: &'a mut [f32],
    pub new_load: &'a mut [f32],
    pub supports: &'a mut [u32],
}

/// Gives contacts that have nothing to warm start from the impulse of the weight they carry, found from the top
/// of each stack down: every body passes on its own weight and what rests on it, shared equally among the
/// contacts it rests on. Exact for a column, close for a pyramid; without it a stack built in one step starts
/// with unequal corner impulses and the first steps set it rocking. `weight[i]` is body i's weight impulse
/// (m·|g|·dt, 0 for bodies that don't move).
///
/// A load that is new this step — the weight of a body released this step, or what reaches a body through a fresh
/// contact it was set down on (touching, approaching slower than [`SET_DOWN_SPEED_M_S`]): a cube added on a
/// standing stack — is passed on down as well, and added to the warm-started contacts
/// under it, shared equally among their points. Left
/// to the velocity passes, the few passes a step makes hand the new weight to one corner after another, and a
/// tall awake stack under a placed cube leans a little more every step (tower30 leaned 10 cm in 600 steps).
pub fn seed_fresh_contacts(
    (constraints, anchors): (&mut [ContactConstraint], &[ContactAnchors]),
    gravity_dir: Vec3A,
    weight: &[f32],
    scratch: SeedScratch<'_>,
) {
    let SeedScratch {
        load,
        new_load,
        supports,
    } = scratch;
    load.copy_from_slice(weight);
    supports.iter_mut().for_each(|s| *s = 0);
    let upper_lower = |c: &ContactConstraint| match c.lower {
        1 => Some((c.b as usize, c.a as usize)),
        2 => Some((c.a as usize, c.b as usize)),
        _ => None,
    };
    for c in constraints.iter() {
        if let Some((upper, _)) = upper_lower(c) {
            supports[upper] += 1;
        }
    }
    // Constraints are ordered from the ground up, so walking them backwards sees each body's full load before
    // it is passed down.
    for (c, anchors) in constraints.iter_mut().zip(anchors).rev() {
        let Some((upper, lower)) = upper_lower(c) else { continue };
        let count = supports[upper].max(1) as f32;
        let share = load[upper] / count;
        load[lower] += share;
        // Only the part of the weight along the normal is carried by the normal impulse.
        let along = if c.lower == 1 { c.normal } else { -c.normal }
            .dot(-gravity_dir)
            .max(0.0);
        if c.count == 0 {
            continue;
        }
        let points = &mut c.points[..c.count as usize];
        if c.fresh {
            let per_point = share * along / points.len() as f32;
            let set_down = points
                .iter()
                .zip(&anchors.relative_velocity)
                .all(|(p, &v)| p.separation <= TOUCHING_SEPARATION_M && v >= -SET_DOWN_SPEED_M_S);
            points.iter_mut().for_each(|p| p.normal_impulse = per_point);
            // A body set down here (touching, hardly approaching) brings its load to everything under it; an impact
            // is the velocity passes' to share out.
            if set_down {
                new_load[lower] += share;
            }
        } else if new_load[upper] > 0.0 {
            let new_share = new_load[upper] / count;
            let per_point = new_share * along / points.len() as f32;
            points.iter_mut().for_each(|p| p.normal_impulse += per_point);
            new_load[lower] += new_share;
        }
    }
}

/// Applies last step's impulses, constraint by constraint in `schedule`'s order (all constraints).
pub fn warm_start(
    constraints: &mut [ContactConstraint],
    schedule: &Schedule,
    bodies: &mut SolverBodies,
    run: &mut Runner,
) {
    let bodies = BodiesView::new(bodies);
    let warm = |c: &ContactConstraint| {
        let mut pair = Pair::load(&bodies, c, BOTH);
        for p in &c.points[..c.count as usize] {
            pair.push(c.normal, &p.normal, p.normal_impulse);
        }
        for t in 0..2 {
            pair.push(c.tangents[t], &c.tangent_rows[t], c.tangent_impulse[t]);
        }
        pair.push(Vec3A::ZERO, &c.twist, c.twist_impulse);
        pair.store(&bodies, c);
    };
    if !run.shares(schedule.groups.len()) {
        // One thread: in list order, streaming (the schedule's order gives the same bits).
        constraints.iter().for_each(warm);
        return;
    }
    let constraints = &*constraints;
    run.groups(schedule, &|g, _| {
        for &k in schedule.groups[g].iter().take_while(|&&k| k != NO_LANE) {
            warm(&constraints[k as usize]);
        }
    });
}

/// Friction at the manifold's centre, for each lane: drives sliding to zero within the cone `|tangent| ≤ μN` and
/// twisting to zero within `|twist| ≤ μN·radius`. `normal_total` is N; `extra` holds impulses kept apart (the
/// shock pass's). Each step is done for every lane before the next, so the lanes' chains run interleaved.
#[inline(always)]
fn solve_friction<const N: usize>(
    pairs: &mut [Pair; N],
    cs: [&ContactConstraint; N],
    normal_total: [f32; N],
    shock: bool,
    extra: &mut [[f32; 3]; N],
) {
    let mass = |row: &Row| if shock { row.shock_mass() } else { row.mass() };
    let mut old = [[0.0f32; 2]; N];
    let mut new = [[0.0f32; 2]; N];
    for l in 0..N {
        let c = cs[l];
        old[l] = [c.tangent_impulse[0] + extra[l][0], c.tangent_impulse[1] + extra[l][1]];
        for t in 0..2 {
            let row = &c.tangent_rows[t];
            new[l][t] = old[l][t] - mass(row) * pairs[l].speed(c.tangents[t], row);
        }
    }
    for l in 0..N {
        let c = cs[l];
        let limit = c.friction * normal_total[l];
        let len2 = new[l][0] * new[l][0] + new[l][1] * new[l][1];
        if len2 > limit * limit {
            let scale = if len2 > 0.0 { limit / len2.sqrt() } else { 0.0 };
            new[l] = [new[l][0] * scale, new[l][1] * scale];
        }
        for t in 0..2 {
            pairs[l].push(c.tangents[t], &c.tangent_rows[t], new[l][t] - old[l][t]);
            extra[l][t] += new[l][t] - old[l][t];
        }
    }
    for l in 0..N {
        let c = cs[l];
        let twist_limit = c.friction * normal_total[l] * c.twist_radius;
        let old = c.twist_impulse + extra[l][2];
        let new = (old - mass(&c.twist) * pairs[l].speed(Vec3A::ZERO, &c.twist)).clamp(-twist_limit, twist_limit);
        pairs[l].push(Vec3A::ZERO, &c.twist, new - old);
        extra[l][2] += new - old;
    }
}

/// One velocity pass over all constraints (Gauss–Seidel: friction, then the normal at each point), a group of
/// `schedule` at a time (the same result as one constraint at a time in order, see `solver_lanes`). Odd passes
/// take the points in reverse order, so no corner is always solved first and a stack is not nudged the same way
/// every step. Returns the largest change of any impulse (N·s), so the caller can stop once nothing changes.
pub fn solve(
    constraints: &mut [ContactConstraint],
    schedule: &Schedule,
    bodies: &mut SolverBodies,
    params: &SolverParams,
    pass: u32,
    run: &mut Runner,
) -> f32 {
    let inv_dt = 1.0 / params.dt;
    let (bodies, constraints) = (BodiesView::new(bodies), ConstraintsView::new(constraints));
    run.groups(schedule, &|g, largest| {
        let group = &schedule.groups[g];
        let change = match used_lanes(group) {
            4 => solve_disjoint::<4>(&constraints, group, &bodies, inv_dt, pass),
            3 => solve_disjoint::<3>(&constraints, group, &bodies, inv_dt, pass),
            2 => solve_disjoint::<2>(&constraints, group, &bodies, inv_dt, pass),
            _ => solve_disjoint::<1>(&constraints, group, &bodies, inv_dt, pass),
        };
        *largest = largest.max(change);
    })
}

/// The first `N` lanes of `group` side by side (one by one should they not be distinct, which a schedule never
/// gives).
#[inline(always)]
fn solve_disjoint<const N: usize>(
    constraints: &ConstraintsView,
    group: &[u32; LANES],
    bodies: &BodiesView,
    inv_dt: f32,
    pass: u32,
) -> f32 {
    if let Some(cs) = constraints.lanes::<N>(group) {
        return solve_lanes(cs, bodies, inv_dt, pass);
    }
    let mut largest = 0.0f32;
    for &k in &group[..N] {
        largest = largest.max(solve_lanes([constraints.one(k)], bodies, inv_dt, pass));
    }
    largest
}

/// One velocity pass over `N` constraints that share no body but the ground.
#[inline(always)]
fn solve_lanes<const N: usize>(cs: [&mut ContactConstraint; N], bodies: &BodiesView, inv_dt: f32, pass: u32) -> f32 {
    let mut largest = 0.0f32;
    let mut pairs: [Pair; N] = std::array::from_fn(|l| Pair::load(bodies, cs[l], BOTH));
    let mut change = [[0.0f32; 3]; N];
    let totals: [f32; N] = std::array::from_fn(|l| cs[l].total_normal_impulse());
    solve_friction(&mut pairs, std::array::from_fn(|l| &*cs[l]), totals, false, &mut change);
    for l in 0..N {
        let c = &mut *cs[l];
        c.tangent_impulse = [c.tangent_impulse[0] + change[l][0], c.tangent_impulse[1] + change[l][1]];
        c.twist_impulse += change[l][2];
        largest = largest
            .max(change[l][0].abs())
            .max(change[l][1].abs())
            .max(change[l][2].abs());
    }
    for k in 0..MAX_MANIFOLD_POINTS {
        for l in 0..N {
            let c = &mut *cs[l];
            let count = c.count as usize;
            if k >= count {
                continue;
            }
            let p = &mut c.points[if pass.is_multiple_of(2) { k } else { count - 1 - k }];
            // Speculative: a gap may close this step, no more. Overlap is the position pass's job.
            let min_speed = -p.separation.max(0.0) * inv_dt;
            let vn = pairs[l].speed(c.normal, &p.normal);
            let new = (p.normal_impulse - p.normal.mass() * (vn - min_speed)).max(0.0);
            pairs[l].push(c.normal, &p.normal, new - p.normal_impulse);
            largest = largest.max((new - p.normal_impulse).abs());
            p.normal_impulse = new;
            p.max_normal_impulse = p.max_normal_impulse.max(new);
        }
    }
    for l in 0..N {
        pairs[l].store(bodies, cs[l]);
    }
    largest
}

/// Shock propagation: over constraints ordered from the ground up, makes each contact's upper body stop
/// approaching and sliding on the lower one, holding the lower body fixed. One such pass makes a whole stack
/// agree exactly, where plain Gauss–Seidel needs a number of passes that grows with the square of the stack's
/// height. Its impulses are kept out of the accumulated ones: they have no reaction on the lower body, so warm
/// starting from them would put momentum into the stack that was never there. The total normal impulse
/// (accumulated + this pass) stays ≥ 0, so a loaded corner can be pulled back as well as pushed — a pass that
/// could only push would turn rocking into lift. `schedule` groups the constraints with a lower body.
///
/// A contact that carries a column (its upper body and everything on it rest on one contact each, see
/// [`ColumnLoads`]) is answered exactly instead ([`weld`]): when the column as a whole can be held there — the
/// contact's accumulated impulse plus what the column still needs to move with the lower body has its centre
/// of pressure inside the points and its friction in the cone — the upper body is given the lower one's motion;
/// when it cannot, the column is all but still on it and its centre of mass (or that of one below it) is past
/// its points (a column past its balance starting to turn), the contact is left to the velocity passes, so the
/// column turns over the edge. The passes below, a few local
/// iterations with the lower body fixed, cannot do either for an offset patch: two of them leave a slip that is
/// never warm started and comes back the same every step (leaning columns below their limit crept 1 to 80 cm),
/// and more of them pull the far corners down with whatever impulse the unconverged velocity passes left there,
/// holding columns past their limit up.
pub fn shock_pass(
    constraints: &[ContactConstraint],
    schedule: &Schedule,
    bodies: &mut SolverBodies,
    params: &SolverParams,
    loads: &mut ColumnLoads,
    run: &mut Runner,
) {
    let inv_dt = 1.0 / params.dt;
    loads.compute(constraints, bodies);
    let (bodies, loads) = (BodiesView::new(bodies), ColumnView::new(loads));
    run.groups(schedule, &|g, _| {
        let group = &schedule.groups[g];
        let lane = |l: usize| &constraints[group[l] as usize];
        match used_lanes(group) {
            4 => shock_lanes::<4>(std::array::from_fn(lane), &bodies, inv_dt, &loads),
            3 => shock_lanes::<3>(std::array::from_fn(lane), &bodies, inv_dt, &loads),
            2 => shock_lanes::<2>(std::array::from_fn(lane), &bodies, inv_dt, &loads),
            _ => shock_lanes::<1>(std::array::from_fn(lane), &bodies, inv_dt, &loads),
        }
    });
}

/// The shock pass over `N` constraints that share no body but the ground.
#[inline(always)]
fn shock_lanes<const N: usize>(cs: [&ContactConstraint; N], bodies: &BodiesView, inv_dt: f32, loads: &ColumnView) {
    let mut pairs: [Pair; N] = std::array::from_fn(|l| Pair::load(bodies, cs[l], cs[l].response(true)));
    let mut pushed = [[0.0f32; MAX_MANIFOLD_POINTS]; N];
    let mut rubbed = [[0.0f32; 3]; N];
    let mut done = [false; N];
    for l in 0..N {
        done[l] = weld(cs[l], &mut pairs[l], loads) != Weld::Iterate;
        if done[l] {
            // Answered (or left alone): the passes below leave this lane's velocities as they are.
            let pair = &mut pairs[l];
            (pair.ma, pair.mb, pair.scale_a, pair.scale_b) = (0.0, 0.0, 0.0, 0.0);
        }
    }
    if done.iter().all(|&d| d) {
        for l in 0..N {
            pairs[l].store(bodies, cs[l]);
        }
        return;
    }
    for pass in 0..SHOCK_LOCAL_ITERATIONS {
        let normal_total: [f32; N] =
            std::array::from_fn(|l| cs[l].total_normal_impulse() + pushed[l].iter().sum::<f32>());
        solve_friction(&mut pairs, cs, normal_total, true, &mut rubbed);
        for i in 0..MAX_MANIFOLD_POINTS {
            for l in 0..N {
                let c = cs[l];
                let count = c.count as usize;
                if i >= count {
                    continue;
                }
                let k = if pass % 2 == 0 { i } else { count - 1 - i };
                let p = &c.points[k];
                let min_speed = -p.separation.max(0.0) * inv_dt;
                let vn = pairs[l].speed(c.normal, &p.normal);
                let new = (pushed[l][k] - p.normal.shock_mass() * (vn - min_speed)).max(-p.normal_impulse);
                pairs[l].push(c.normal, &p.normal, new - pushed[l][k]);
                pushed[l][k] = new;
            }
        }
    }
    for l in 0..N {
        pairs[l].store(bodies, cs[l]);
    }
}

/// A column that cannot be held is left to the velocity passes only while it moves on its lower body slower
/// than this (m/s, about one step of gravity at 90 Hz): a column starting to turn over an edge. Anything
/// faster (a cube thrown onto a column) keeps the shock pass's iterations, which stop it sinking in.
pub const HELD_SPEED_M_S: f32 = 0.11;

/// What [`weld`] did with a contact.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Weld {
    /// Not a column's contact, or apart: the shock pass's iterations answer it.
    Iterate,
    /// The upper body moves with the lower one.
    Held,
    /// The column cannot be held there and is all but still: the velocity passes' answer stands.
    LetGo,
}

/// The lever arm whose crossings with the two tangents are `u` (r × t0) and `w` (r × t1): the tangent rows keep
/// the friction centre's lever arms only crossed.
fn lever_from_tangent_rows(u: Vec3A, w: Vec3A, n: Vec3A, t: [Vec3A; 2]) -> Vec3A {
    t[0] * w.dot(n) - t[1] * u.dot(n) + n * u.dot(t[1])
}

/// The upper body's centre less the lower one's, from the contact's friction rows.
fn upper_from_lower(c: &ContactConstraint) -> Vec3A {
    let (n, t) = (c.normal, c.tangents);
    let rac = lever_from_tangent_rows(c.tangent_rows[0].ra_x(), c.tangent_rows[1].ra_x(), n, t);
    let rbc = lever_from_tangent_rows(c.tangent_rows[0].rb_x(), c.tangent_rows[1].rb_x(), n, t);
    if c.lower == 1 {
        rac - rbc
    } else {
        rbc - rac
    }
}

/// The contact's points seen along its normal, as (r × n)·t on the upper body: the contact plane turned a quarter,
/// which keeps what is inside what.
fn points_in_plane(c: &ContactConstraint, upper_is_b: bool) -> [[f32; 2]; MAX_MANIFOLD_POINTS] {
    let t = c.tangents;
    std::array::from_fn(|k| {
        let row = &c.points[k].normal;
        let x = if upper_is_b { row.rb_x() } else { row.ra_x() };
        [x.dot(t[0]), x.dot(t[1])]
    })
}

/// The exact shock answer for a contact that carries a column (see [`shock_pass`]).
fn weld(c: &ContactConstraint, pair: &mut Pair, view: &ColumnView) -> Weld {
    let loads = view.loads;
    let count = c.count as usize;
    let Some((up, low)) = upper_lower(c) else {
        return Weld::Iterate;
    };
    let upper_is_b = c.lower == 1;
    let column = loads.column.get(up).copied().unwrap_or(false);
    if !column || count < 3 || c.points[..count].iter().any(|p| p.separation > TOUCHING_SEPARATION_M) {
        return Weld::Iterate;
    }
    let x = upper_from_lower(c);
    // Impulses on the upper body count along the rows' direction for b.
    let s = if upper_is_b { 1.0 } else { -1.0 };
    let (v_up, w_up, v_low, w_low) = if upper_is_b {
        (pair.vb, pair.wb, pair.va, pair.wa)
    } else {
        (pair.va, pair.wa, pair.vb, pair.wb)
    };
    // What the column (mass M, first moment S and inertia J about the upper centre) needs to move with the lower
    // body: linear M·v + ω×(S + M·x), angular J·ω + S×(v + ω×x), less the momentum it has.
    let (mass, first) = (loads.mass[up], loads.first_moment[up]);
    let need_p = v_low * mass + w_low.cross(first + x * mass) - loads.momentum[up];
    let need_l = loads.inertia[up] * w_low + first.cross(v_low + w_low.cross(x)) - loads.angular[up];
    match holds(c, upper_is_b, need_p * s, need_l * s) {
        Hold::Holds if !view.held_below(low) => return Weld::Iterate,
        Hold::Holds => {}
        // A column of more than one body turning over an edge while all but still, where it or one below it
        // rests with its centre of mass past its points: the velocity passes' answer stands. (On a body alone
        // the iterations see the whole load, and their answer is kept.) A column whose centre of mass is over its
        // points everywhere below only rocks — a swaying tower, struck — and keeps the iterations: let go there,
        // nothing damped the sway (smash never settled, 28.9 m).
        Hold::Tips if loads.carries[up] && loads.unbalanced[up] && need_p.length() <= mass * HELD_SPEED_M_S => {
            return Weld::LetGo;
        }
        // Sliding, or hit: the iterations answer it.
        _ => return Weld::Iterate,
    }
    let dv = v_low + w_low.cross(x) - v_up;
    let dw = w_low - w_up;
    if upper_is_b {
        pair.vb += dv;
        pair.wb += dw;
    } else {
        pair.va += dv;
        pair.wa += dw;
    }
    view.set_held(up);
    Weld::Held
}

/// How the contact's accumulated impulses plus the wrench `p`, `l` (on the upper body about its centre,
/// along the rows' direction) can be given by the contact: the normal impulses together push, with their centre
/// of pressure inside the points (then some spread of them, each ≥ 0, gives it), and the friction and twist are
/// inside their limits.
fn holds(c: &ContactConstraint, upper_is_b: bool, p: Vec3A, l: Vec3A) -> Hold {
    let count = c.count as usize;
    let (n, t) = (c.normal, c.tangents);
    let lever_x = |row: &Row| if upper_is_b { row.rb_x() } else { row.ra_x() };
    let pt = [p.dot(t[0]), p.dot(t[1])];
    // The friction part acts at the centre; what is left of the moment is the normal impulses' and the twist's.
    let rest = l - lever_x(&c.tangent_rows[0]) * pt[0] - lever_x(&c.tangent_rows[1]) * pt[1];
    let q = points_in_plane(c, upper_is_b);
    let points = &c.points[..count];
    let total = points.iter().map(|p| p.normal_impulse).sum::<f32>() + p.dot(n);
    if total <= 0.0 {
        return Hold::Tips;
    }
    let moment = |i: usize| points.iter().zip(&q).map(|(p, q)| p.normal_impulse * q[i]).sum::<f32>() + rest.dot(t[i]);
    if !in_hull([moment(0) / total, moment(1) / total], &q[..count]) {
        return Hold::Tips;
    }
    let friction = [c.tangent_impulse[0] + pt[0], c.tangent_impulse[1] + pt[1]];
    let limit = c.friction * total;
    if friction[0] * friction[0] + friction[1] * friction[1] <= limit * limit
        && (c.twist_impulse + rest.dot(n)).abs() <= limit * c.twist_radius
    {
        Hold::Holds
    } else {
        Hold::Slides
    }
}

/// Whether the column's centre of mass (`com`, from the upper body's centre) lies over the contact's points,
/// seen along the normal.
fn balanced(c: &ContactConstraint, upper_is_b: bool, com: Vec3A) -> bool {
    let count = c.count as usize;
    let t = c.tangents;
    let q = points_in_plane(c, upper_is_b);
    let x = com.cross(c.normal);
    in_hull([x.dot(t[0]), x.dot(t[1])], &q[..count])
}

/// Whether a contact can hold a column ([`holds`]), and if not, why.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hold {
    Holds,
    /// The normal impulses cannot push with their centre inside the points: the column turns over an edge.
    Tips,
    /// Friction or twist past its limit.
    Slides,
}

/// Whether `p` lies in the convex hull of `points` (three or four): in one of the triangles of three of them.
fn in_hull(p: [f32; 2], points: &[[f32; 2]]) -> bool {
    let cross = |o: [f32; 2], a: [f32; 2], b: [f32; 2]| (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
    let n = points.len();
    for i in 0..n {
        for j in i + 1..n {
            for k in j + 1..n {
                let (a, b, c) = (points[i], points[j], points[k]);
                let d = [cross(a, b, p), cross(b, c, p), cross(c, a, p)];
                let negative = d.iter().any(|&d| d < 0.0);
                let positive = d.iter().any(|&d| d > 0.0);
                if !(negative && positive) {
                    return true;
                }
            }
        }
    }
    false
}

fn outer(a: Vec3A, b: Vec3A) -> Mat3A {
    Mat3A::from_cols(a * b.x, a * b.y, a * b.z)
}

fn upper_lower(c: &ContactConstraint) -> Option<(usize, usize)> {
    match c.lower {
        1 => Some((c.b as usize, c.a as usize)),
        2 => Some((c.a as usize, c.b as usize)),
        _ => None,
    }
}

/// Per solver slot, what the body and everything resting on it weigh and carry, where that is a column: a tree of
/// bodies each resting on one contact alone and touching nothing else (`column`). Momenta are taken after the
/// velocity passes; the contacts inside a column pass equal and opposite impulses, so the momentum of a column
/// differs from what it had before the passes by its contact with the lower body alone. Kept by the world so a
/// step allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct ColumnLoads {
    column: Vec<bool>,
    /// Something rests on the body.
    carries: Vec<bool>,
    supports: Vec<u32>,
    mass: Vec<f32>,
    /// Mass times the offset from the body's centre.
    first_moment: Vec<Vec3A>,
    /// About the body's centre.
    inertia: Vec<Mat3A>,
    /// The column's centre of mass is outside the points of the contact it rests on, or of one below it.
    unbalanced: Vec<bool>,
    momentum: Vec<Vec3A>,
    /// About the body's centre.
    angular: Vec<Vec3A>,
    /// The shock pass gave the body the motion of the one it rests on (set as the pass goes, from the ground up).
    held: Vec<bool>,
}

impl ColumnLoads {
    /// Room for `slots` solver slots.
    pub fn reserve(&mut self, slots: usize) {
        self.column.reserve(slots.saturating_sub(self.column.len()));
        self.carries.reserve(slots.saturating_sub(self.carries.len()));
        self.supports.reserve(slots.saturating_sub(self.supports.len()));
        self.mass.reserve(slots.saturating_sub(self.mass.len()));
        for v in [&mut self.first_moment, &mut self.momentum, &mut self.angular] {
            v.reserve(slots.saturating_sub(v.len()));
        }
        self.inertia.reserve(slots.saturating_sub(self.inertia.len()));
        self.unbalanced.reserve(slots.saturating_sub(self.unbalanced.len()));
        self.held.reserve(slots.saturating_sub(self.held.len()));
    }

    /// Sums the columns from the top down (constraints are ordered from the ground up).
    fn compute(&mut self, constraints: &[ContactConstraint], bodies: &SolverBodies) {
        let slots = bodies.v.len();
        self.column.clear();
        self.column.resize(slots, true);
        self.carries.clear();
        self.carries.resize(slots, false);
        self.supports.clear();
        self.supports.resize(slots, 0);
        self.mass.clear();
        self.mass.resize(slots, 0.0);
        self.first_moment.clear();
        self.first_moment.resize(slots, Vec3A::ZERO);
        self.inertia.clear();
        self.inertia.resize(slots, Mat3A::ZERO);
        self.momentum.clear();
        self.momentum.resize(slots, Vec3A::ZERO);
        self.angular.clear();
        self.angular.resize(slots, Vec3A::ZERO);
        self.unbalanced.clear();
        self.unbalanced.resize(slots, false);
        self.held.clear();
        self.held.resize(slots, false);
        for k in 0..slots {
            if bodies.inv_mass[k] > 0.0 {
                self.mass[k] = 1.0 / bodies.inv_mass[k];
                self.momentum[k] = bodies.v[k] * self.mass[k];
                self.inertia[k] = bodies.inv_inertia[k].inverse();
                self.angular[k] = self.inertia[k] * bodies.w[k];
            } else {
                self.column[k] = false;
            }
        }
        for c in constraints {
            match upper_lower(c) {
                Some((upper, _)) => self.supports[upper] += 1,
                None => {
                    self.column[c.a as usize] = false;
                    self.column[c.b as usize] = false;
                }
            }
        }
        for c in constraints.iter().rev() {
            let Some((upper, lower)) = upper_lower(c) else { continue };
            if self.supports[upper] != 1 {
                self.column[upper] = false;
            }
            if !self.column[upper] {
                self.column[lower] = false;
                continue;
            }
            let x = upper_from_lower(c);
            let (m, first, p) = (self.mass[upper], self.first_moment[upper], self.momentum[upper]);
            if c.count >= 3 {
                self.unbalanced[upper] = !balanced(c, c.lower == 1, first / m);
            }
            // The upper column's inertia moved from its centre of mass (c from the upper centre) to the lower
            // centre (c + x from there).
            let c = first / m;
            let point = |d: Vec3A| (Mat3A::IDENTITY * d.length_squared() - outer(d, d)) * m;
            let inertia = self.inertia[upper] - point(c) + point(c + x);
            self.inertia[lower] += inertia;
            self.mass[lower] += m;
            self.carries[lower] = true;
            self.first_moment[lower] += first + x * m;
            self.momentum[lower] += p;
            let angular = self.angular[upper] + x.cross(p);
            self.angular[lower] += angular;
        }
        for c in constraints {
            if let Some((upper, lower)) = upper_lower(c) {
                self.unbalanced[upper] |= self.unbalanced[lower];
            }
        }
    }
}

/// [`ColumnLoads`] as the shock pass reads it, possibly from several workers at once: the sums are read-only;
/// `held` is written by the contact a column rests on (its upper body has one support, so one contact writes it)
/// and read by the contacts on that body, which share the body and so run after it (see [`BodiesView`]'s
/// contract).
struct ColumnView<'a> {
    loads: &'a ColumnLoads,
    held: *mut bool,
    len: usize,
}

unsafe impl Sync for ColumnView<'_> {}

impl<'a> ColumnView<'a> {
    fn new(loads: &'a mut ColumnLoads) -> ColumnView<'a> {
        let (held, len) = (loads.held.as_mut_ptr(), loads.held.len());
        ColumnView { loads, held, len }
    }

    fn set_held(&self, k: usize) {
        assert!(k < self.len);
        // SAFETY: in bounds; one writer, ordered before its readers (see the type).
        unsafe { *self.held.add(k) = true }
    }

    /// Whether a column resting on `lower` can be held to it: `lower` is not part of a column (the ground, or a
    /// body of a pile, which the iterations answer as before), or was itself held to what it rests on. A body the
    /// iterations answered moved as if nothing rested on it, and holding the column above to that would hand its
    /// answer to the whole column.
    fn held_below(&self, lower: usize) -> bool {
        assert!(lower < self.len);
        // SAFETY: in bounds; written (if at all) before this read, see the type.
        unsafe { *self.held.add(lower) || !self.loads.column[lower] }
    }
}

/// One position pass: moves bodies (through `dp`, `dtheta`) to remove overlap beyond the slop, at most the
/// maximum depenetration velocity × dt per step. The current separation of each point is its separation at the
/// start of the step plus the relative motion of its anchors. With `shock`, the lower body stays put.
pub fn solve_positions(
    (constraints, anchors): (&[ContactConstraint], &[ContactAnchors]),
    schedule: &Schedule,
    bodies: &mut SolverBodies,
    params: &SolverParams,
    shock: bool,
    run: &mut Runner,
) {
    let max_correction = params.max_depenetration_velocity * params.dt / params.position_iterations.max(1) as f32;
    let bodies = BodiesView::new(bodies);
    let push_out = |c: &ContactConstraint, anchors: &ContactAnchors| {
        let (a, b) = (c.a as usize, c.b as usize);
        let (sa, sb) = c.response(shock);
        let ((mut dpa, mut dta), (mut dpb, mut dtb)) = (bodies.displacement(a), bodies.displacement(b));
        for (k, p) in c.points[..c.count as usize].iter().enumerate() {
            let da = dpa + dta.cross(anchors.ra[k]);
            let db = dpb + dtb.cross(anchors.rb[k]);
            let s = p.separation + c.normal.dot(db - da);
            let correction = (PUSH_OUT_FACTOR * (s + LINEAR_SLOP_M)).clamp(-max_correction, 0.0);
            if correction == 0.0 {
                continue;
            }
            let mass = if shock { p.normal.shock_mass() } else { p.normal.mass() };
            let impulse = -correction * mass;
            let (ja, jb) = (sa * impulse, sb * impulse);
            dpa -= c.normal * (bodies.inv_mass(a) * ja);
            dta -= p.normal.ia * ja;
            dpb += c.normal * (bodies.inv_mass(b) * jb);
            dtb += p.normal.ib * jb;
        }
        bodies.set_displacement(a, dpa, dta);
        bodies.set_displacement(b, dpb, dtb);
    };
    if !run.shares(schedule.groups.len()) {
        // One thread: in list order, streaming (the schedule's order gives the same bits).
        constraints.iter().zip(anchors).for_each(|(c, a)| push_out(c, a));
        return;
    }
    run.groups(schedule, &|g, _| {
        for &k in schedule.groups[g].iter().take_while(|&&k| k != NO_LANE) {
            push_out(&constraints[k as usize], &anchors[k as usize]);
        }
    });
}

/// Bounces: for points that approached faster than the threshold and pushed, aim for −e × the approach speed.
pub fn apply_restitution(
    (constraints, anchors): (&mut [ContactConstraint], &[ContactAnchors]),
    bodies: &mut SolverBodies,
    threshold: f32,
) {
    let bodies = &BodiesView::new(bodies);
    for (c, anchors) in constraints.iter_mut().zip(anchors).filter(|(c, _)| c.restitution > 0.0) {
        let mut pair = Pair::load(bodies, c, BOTH);
        let count = c.count as usize;
        for (p, &relative_velocity) in c.points[..count].iter_mut().zip(&anchors.relative_velocity) {
            // Only touching points bounce: a speculative point is stopped at the surface and bounces next step
            // (with the speed it came in at, kept as `bounce_speed`), not in mid-air.
            let touching = p.separation <= TOUCHING_SEPARATION_M;
            if !touching || relative_velocity > -threshold || p.max_normal_impulse == 0.0 {
                continue;
            }
            let vn = pair.speed(c.normal, &p.normal);
            let new = (p.normal_impulse - p.normal.mass() * (vn + c.restitution * relative_velocity)).max(0.0);
            pair.push(c.normal, &p.normal, new - p.normal_impulse);
            p.normal_impulse = new;
            p.max_normal_impulse = p.max_normal_impulse.max(new);
        }
        pair.store(bodies, c);
    }
}

/// Writes accumulated impulses back to the contacts for next step's warm start and the contact report.
pub fn store_impulses(
    (constraints, anchors): (&[ContactConstraint], &[ContactAnchors]),
    contacts: &mut [Contact],
    run: &mut Runner,
) {
    // Each contact is written by the one constraint made from it: a step makes one constraint per contact at most.
    let contacts = SlotsMut::new(contacts);
    run.chunks(constraints.len(), STORE_PER_CHUNK, &|range, _| {
        for (c, anchors) in constraints[range.clone()].iter().zip(&anchors[range]) {
            store_one(c, anchors, contacts.get(anchors.contact as usize));
        }
    });
}

/// Constraints a worker stores at once.
const STORE_PER_CHUNK: usize = 256;

fn store_one(c: &ContactConstraint, anchors: &ContactAnchors, contact: &mut Contact) {
    let m = &mut contact.manifold;
    m.tangent_impulse = Vec3::from(c.tangents[0] * c.tangent_impulse[0] + c.tangents[1] * c.tangent_impulse[1]);
    m.twist_impulse = c.twist_impulse;
    let bouncy = c.restitution > 0.0;
    for ((mp, p), &relative_velocity) in m.points_mut().iter_mut().zip(&c.points).zip(&anchors.relative_velocity) {
        mp.normal_impulse = p.normal_impulse;
        mp.max_normal_impulse = p.max_normal_impulse;
        mp.approach_speed = (-relative_velocity).max(0.0);
        let stopped_short = bouncy && p.separation > TOUCHING_SEPARATION_M && p.max_normal_impulse > 0.0;
        mp.bounce_speed = if stopped_short { mp.approach_speed } else { 0.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tangent_bases_are_orthonormal_and_repeatable() {
        for n in [
            Vec3A::Y,
            -Vec3A::Y,
            Vec3A::X,
            Vec3A::new(0.6, 0.0, 0.8),
            Vec3A::new(0.577, 0.577, 0.578).normalize(),
        ] {
            let [t1, t2] = tangent_basis(n);
            assert!((t1.length() - 1.0).abs() < 1e-6 && (t2.length() - 1.0).abs() < 1e-6);
            assert!(t1.dot(n).abs() < 1e-6 && t2.dot(n).abs() < 1e-6 && t1.dot(t2).abs() < 1e-6);
            assert_eq!(tangent_basis(n), [t1, t2]);
        }
    }

    /// Pseudo-random numbers from a fixed seed (a 64-bit LCG), in [-1, 1).
    struct Numbers(u64);

    impl Numbers {
        fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }

        fn vec(&mut self) -> Vec3A {
            Vec3A::new(self.next(), self.next(), self.next())
        }

        fn below(&mut self, n: u32) -> u32 {
            ((self.next() + 1.0) * 0.5 * n as f32) as u32 % n
        }
    }

    /// Random bodies (slot 0 the ground) and constraints among them, many sharing a body, some the ground.
    fn random_problem(seed: u64) -> (SolverBodies, Vec<ContactConstraint>) {
        let mut r = Numbers(seed);
        let slots = 40;
        let mut bodies = SolverBodies::default();
        for k in 0..slots {
            let moving = k != 0 && k % 7 != 0;
            bodies.v.push(if moving { r.vec() } else { Vec3A::ZERO });
            bodies.w.push(if moving { r.vec() } else { Vec3A::ZERO });
            bodies.inv_mass.push(if moving { 1.0 + r.next() * 0.5 } else { 0.0 });
            let d = Vec3A::new(2.0 + r.next(), 2.0 + r.next(), 2.0 + r.next());
            bodies.inv_inertia.push(if moving {
                Mat3A::from_diagonal(d.into())
            } else {
                Mat3A::ZERO
            });
            bodies.inv_inertia_scalar.push(if moving { f32::NAN } else { 0.0 });
        }
        let mut constraints = Vec::new();
        for _ in 0..300 {
            let a = 1 + r.below(slots - 1);
            let b = if r.next() < -0.7 { 0 } else { 1 + r.below(slots - 1) };
            if a == b {
                continue;
            }
            let normal = r.vec().normalize();
            let tangents = tangent_basis(normal);
            let lower = r.below(3) as u8;
            let (ia, ib) = (a as usize, b as usize);
            let (ca, cb) = (r.vec() * 0.5, r.vec() * 0.5);
            let row = |linear: Vec3A, angular: Vec3A, ra: Vec3A, rb: Vec3A| {
                make_row(&RowBodies::load(&bodies, (ia, ib)), linear, angular, (ra, rb), lower)
            };
            let mut c = ContactConstraint {
                a,
                b,
                normal,
                tangents,
                friction: 0.5 + r.next() * 0.3,
                count: 1 + r.below(4) as u8,
                lower,
                tangent_rows: [
                    row(tangents[0], Vec3A::ZERO, ca, cb),
                    row(tangents[1], Vec3A::ZERO, ca, cb),
                ],
                twist: row(Vec3A::ZERO, normal, ca, cb),
                twist_radius: 0.3,
                tangent_impulse: [r.next() * 0.1, r.next() * 0.1],
                twist_impulse: r.next() * 0.01,
                ..ContactConstraint::default()
            };
            for p in &mut c.points[..c.count as usize] {
                let (ra, rb) = (r.vec() * 0.5, r.vec() * 0.5);
                *p = ConstraintPoint {
                    normal: row(normal, Vec3A::ZERO, ra, rb),
                    separation: r.next() * 0.01,
                    normal_impulse: (r.next() + 1.0) * 0.2,
                    ..ConstraintPoint::default()
                };
            }
            constraints.push(c);
        }
        (bodies, constraints)
    }

    /// The solver's settings the pass tests run with.
    fn test_params() -> SolverParams {
        SolverParams {
            dt: 1.0 / 90.0,
            max_depenetration_velocity: 1.0,
            restitution_threshold: 1.0,
            position_iterations: 2,
        }
    }

    /// Runs `f` with a runner on `threads` threads of a pool of its own, sharing every loop.
    fn on_threads<R>(threads: usize, f: impl FnOnce(&mut Runner) -> R) -> R {
        let workers = super::super::workers::Workers::new(threads);
        let mut progress = super::super::parallel::Progress::default();
        let mut run = Runner {
            workers: &workers,
            progress: &mut progress,
            share: true,
        };
        f(&mut run)
    }

    /// A schedule of one constraint per group, in list order: plain sequential impulses.
    fn one_at_a_time(constraints: &[ContactConstraint], include: impl Fn(&ContactConstraint) -> bool) -> Schedule {
        let mut schedule = Schedule::default();
        for (k, _) in constraints.iter().enumerate().filter(|(_, c)| include(c)) {
            let mut group = [super::super::solver_lanes::NO_LANE; LANES];
            group[0] = k as u32;
            schedule.groups.push(group);
            // Run on one thread only: nothing to wait for.
            schedule.waits.push([super::super::solver_lanes::NO_WAIT; 2 * LANES]);
        }
        schedule
    }

    fn bits(bodies: &SolverBodies, constraints: &[ContactConstraint]) -> Vec<u32> {
        let mut out = Vec::new();
        for v in bodies.v.iter().chain(&bodies.w) {
            out.extend(v.to_array().map(f32::to_bits));
        }
        for c in constraints {
            out.extend(c.tangent_impulse.map(f32::to_bits));
            out.push(c.twist_impulse.to_bits());
            out.extend(c.points.iter().map(|p| p.normal_impulse.to_bits()));
            out.extend(c.points.iter().map(|p| p.max_normal_impulse.to_bits()));
        }
        out
    }

    /// Cube-like bodies (one inverse inertia about every axis), slot 0 the ground.
    fn cube_bodies(r: &mut Numbers) -> SolverBodies {
        let mut bodies = SolverBodies::default();
        for k in 0..3 {
            let moving = k != 0;
            bodies.v.push(if moving { r.vec() } else { Vec3A::ZERO });
            bodies.w.push(if moving { r.vec() } else { Vec3A::ZERO });
            bodies.inv_mass.push(if moving { 1.0 + r.next() * 0.5 } else { 0.0 });
            let s = if moving { 6.0 + r.next() } else { 0.0 };
            bodies.inv_inertia.push(Mat3A::from_diagonal(Vec3::splat(s)));
            bodies.inv_inertia_scalar.push(s);
        }
        bodies
    }

    fn constraint_bits(c: &ContactConstraint, anchors: &ContactAnchors) -> String {
        format!(
            "{c:?} {:?} {:?} {:?}",
            anchors.ra, anchors.rb, anchors.relative_velocity
        )
    }

    /// A constraint whose rows were kept from the last step is bit for bit the one built again from scratch;
    /// and the rows are built again when the manifold was recomputed, the lower body changed or the step is not
    /// the next one.
    #[test]
    fn kept_rows_are_the_rows_built_again() {
        let mut r = Numbers(7);
        let mut contact = Contact::new(1, 2);
        contact.manifold.normal = Vec3::from(r.vec().normalize());
        contact.manifold.count = 4;
        for p in contact.manifold.points_mut() {
            p.anchor_a = Vec3::from(r.vec() * 0.5);
            p.anchor_b = Vec3::from(r.vec() * 0.5);
            p.separation = r.next() * 0.01;
            p.normal_impulse = r.next() + 1.0;
        }
        contact.manifold.tangent_impulse = Vec3::from(r.vec() * 0.1);
        contact.built_in_look = 1;
        fn input(contact: &Contact, look: u64, lower: u8) -> PrepareInput<'_> {
            PrepareInput {
                contact_index: 5,
                contact,
                a: 1,
                b: 2,
                friction: 0.6,
                restitution: 0.0,
                lower,
                look,
            }
        }
        let mut bodies = cube_bodies(&mut r);
        let (mut kept, mut kept_anchors) = (ContactConstraint::default(), ContactAnchors::default());
        prepare((&mut kept, &mut kept_anchors), input(&contact, 1, 1), &bodies);
        // A step later: new velocities, separations and impulses; the same geometry.
        bodies.v[1] = r.vec();
        bodies.w[2] = r.vec();
        for p in contact.manifold.points_mut() {
            p.separation += 0.001;
            p.normal_impulse *= 1.5;
        }
        let rows_before = kept.points[2].normal.ia;
        prepare((&mut kept, &mut kept_anchors), input(&contact, 2, 1), &bodies);
        let (mut built, mut built_anchors) = (ContactConstraint::default(), ContactAnchors::default());
        prepare((&mut built, &mut built_anchors), input(&contact, 2, 1), &bodies);
        assert_eq!(
            constraint_bits(&kept, &kept_anchors),
            constraint_bits(&built, &built_anchors)
        );
        assert_eq!(kept.points[2].normal.ia, rows_before);

        // Rows are built again for a recomputed manifold, a new lower body or after a skipped step (the changed
        // anchor shows in them); only a manifold that stood since the last step keeps them (its geometry cannot
        // have changed: here it did, behind the stamp's back, to show the rows really are kept).
        let moved = |c: &mut Contact| c.manifold.points[2].anchor_a += Vec3::new(0.1, 0.0, 0.0);
        for (look, lower, rebuilt, built_again) in [
            (3, 1, true, true),
            (3, 2, false, true),
            (5, 1, false, true),
            (3, 1, false, false),
        ] {
            let mut changed = contact;
            moved(&mut changed);
            changed.built_in_look = if rebuilt { look } else { 1 };
            let (mut again, mut again_anchors) = (kept, kept_anchors);
            prepare((&mut again, &mut again_anchors), input(&changed, look, lower), &bodies);
            let (mut fresh, mut fresh_anchors) = (ContactConstraint::default(), ContactAnchors::default());
            prepare((&mut fresh, &mut fresh_anchors), input(&changed, look, lower), &bodies);
            assert_eq!(
                constraint_bits(&again, &again_anchors) == constraint_bits(&fresh, &fresh_anchors),
                built_again,
                "look {look} lower {lower} rebuilt {rebuilt}"
            );
        }
    }

    /// The groups solved side by side give exactly the bits of one constraint at a time, in order, on one thread
    /// or several.
    #[test]
    fn lanes_give_the_same_bits_as_one_at_a_time() {
        let params = test_params();
        for seed in 1..20 {
            let (bodies, constraints) = random_problem(seed);
            let mut results = Vec::new();
            for (side_by_side, threads) in [(false, 1), (true, 1), (true, 2), (true, 4)] {
                let result = on_threads(threads, |run| {
                    let (mut bodies, mut constraints) = (bodies.clone(), constraints.clone());
                    let (all, shock) = if side_by_side {
                        let (mut all, mut shock) = (Schedule::default(), Schedule::default());
                        all.build(&constraints, bodies.v.len(), |_| true);
                        shock.build(&constraints, bodies.v.len(), ContactConstraint::has_lower);
                        // The problem is one the lanes are used on.
                        assert!(all.groups.len() * 2 < constraints.len());
                        all.deal(threads);
                        shock.deal(threads);
                        (all, shock)
                    } else {
                        (
                            one_at_a_time(&constraints, |_| true),
                            one_at_a_time(&constraints, ContactConstraint::has_lower),
                        )
                    };
                    let mut largest = Vec::new();
                    for pass in 0..3 {
                        largest.push(solve(&mut constraints, &all, &mut bodies, &params, pass, run).to_bits());
                    }
                    let mut loads = ColumnLoads::default();
                    shock_pass(&constraints, &shock, &mut bodies, &params, &mut loads, run);
                    (bits(&bodies, &constraints), largest)
                });
                results.push(result);
            }
            for (k, result) in results.iter().enumerate() {
                assert_eq!(result, &results[0], "seed {seed}, run {k}");
            }
        }
    }

    /// Dealing a schedule to workers gives every group one worker, gives none more than its share of a wave (the
    /// wave's groups over the workers, rounded up), and lists
    /// each worker's groups in order.
    #[test]
    fn a_deal_gives_each_group_one_worker_and_each_wave_evenly() {
        for seed in 1..10 {
            let (bodies, constraints) = random_problem(seed);
            let mut schedule = Schedule::default();
            schedule.build(&constraints, bodies.v.len(), |_| true);
            for threads in [1, 2, 3, 4, 8] {
                schedule.deal(threads);
                let deal = &schedule.deal;
                assert_eq!(deal.threads, threads);
                assert_eq!(deal.start[threads] as usize, schedule.groups.len());
                for t in 0..threads {
                    let mine = &deal.by_owner[deal.start[t] as usize..deal.start[t + 1] as usize];
                    assert!(mine.windows(2).all(|w| w[0] < w[1]), "worker {t}'s groups in order");
                    for &g in mine {
                        assert_eq!(deal.owner[g as usize] as usize, t);
                        assert_eq!(deal.by_owner[deal.position[g as usize] as usize], g);
                    }
                }
                let waves = schedule.group_wave.last().map_or(0, |&w| w as usize + 1);
                for wave in 0..waves {
                    let mut load = vec![0usize; threads];
                    for (g, &w) in schedule.group_wave.iter().enumerate() {
                        if w as usize == wave {
                            load[deal.owner[g] as usize] += 1;
                        }
                    }
                    let (most, count) = (*load.iter().max().unwrap(), load.iter().sum::<usize>());
                    assert!(
                        most <= count.div_ceil(threads),
                        "seed {seed}, {threads} threads, wave {wave}: {load:?}"
                    );
                }
            }
        }
    }

    /// Constraints laid out in the groups' order (`Schedule::place_in_group_order`, as `World::solve` lays them)
    /// give the bits of the list's order, on one thread or two: every group names consecutive places, and the
    /// shock pass's schedule built over the new layout keeps the order of every two constraints on one body. The
    /// control: the list reversed, which does not keep that order, gives other bits.
    #[test]
    fn constraints_placed_in_group_order_give_the_bits_of_the_list() {
        let params = test_params();
        // Velocity passes then the shock pass over `constraints` laid out as `placed` says (place p holds list
        // constraint placed[p]); the bits in list order.
        let run_with = |bodies: &SolverBodies, constraints: &[ContactConstraint], placed: &[u32], threads: usize| {
            let mut bodies = bodies.clone();
            let mut laid: Vec<ContactConstraint> = placed.iter().map(|&k| constraints[k as usize]).collect();
            let (mut all, mut shock) = (Schedule::default(), Schedule::default());
            all.build(&laid, bodies.v.len(), |_| true);
            shock.build(&laid, bodies.v.len(), ContactConstraint::has_lower);
            all.deal(threads);
            shock.deal(threads);
            on_threads(threads, |run| {
                for pass in 0..3 {
                    solve(&mut laid, &all, &mut bodies, &params, pass, run);
                }
                shock_pass(&laid, &shock, &mut bodies, &params, &mut ColumnLoads::default(), run);
            });
            let mut in_list = constraints.to_vec();
            for (p, &k) in placed.iter().enumerate() {
                in_list[k as usize] = laid[p];
            }
            bits(&bodies, &in_list)
        };
        for seed in 1..20 {
            let (bodies, constraints) = random_problem(seed);
            let n = constraints.len();
            let list: Vec<u32> = (0..n as u32).collect();
            let mut schedule = Schedule::default();
            schedule.build(&constraints, bodies.v.len(), |_| true);
            let mut placed = Vec::new();
            schedule.place_in_group_order(&mut placed);
            let mut seen = vec![false; n];
            placed.iter().for_each(|&k| seen[k as usize] = true);
            assert!(
                seen.iter().all(|&s| s) && placed.len() == n,
                "seed {seed}: not a permutation"
            );
            assert_ne!(
                placed, list,
                "seed {seed}: the groups' order is the list's (nothing tested)"
            );
            let mut next = 0;
            for group in &schedule.groups {
                for &k in group.iter().take_while(|&&k| k != super::super::solver_lanes::NO_LANE) {
                    assert_eq!(k, next, "seed {seed}: groups name consecutive places");
                    next += 1;
                }
            }
            let expected = run_with(&bodies, &constraints, &list, 1);
            for threads in [1, 2] {
                assert_eq!(
                    run_with(&bodies, &constraints, &placed, threads),
                    expected,
                    "seed {seed}, {threads} threads"
                );
            }
            let reversed: Vec<u32> = list.iter().rev().copied().collect();
            assert_ne!(
                run_with(&bodies, &constraints, &reversed, 1),
                expected,
                "seed {seed}: the control"
            );
        }
    }

    /// Every constraint is in exactly one group; no two in a group share a body but the ground; and of two that
    /// share a body, the one first in the list is in an earlier group.
    #[test]
    fn schedules_keep_the_order_of_constraints_that_share_a_body() {
        for seed in 1..20 {
            let (bodies, constraints) = random_problem(seed);
            let mut schedule = Schedule::default();
            schedule.build(&constraints, bodies.v.len(), |_| true);
            let mut group_of = vec![usize::MAX; constraints.len()];
            for (g, group) in schedule.groups.iter().enumerate() {
                let used = super::super::solver_lanes::used_lanes(group);
                for (l, &k) in group[..used].iter().enumerate() {
                    assert_eq!(group_of[k as usize], usize::MAX, "constraint {k} twice");
                    group_of[k as usize] = g;
                    for &other in &group[..l] {
                        let (a, b) = constraints[k as usize].bodies();
                        let (c, d) = constraints[other as usize].bodies();
                        for s in [a, b] {
                            assert!(s == 0 || (s != c && s != d), "group {g} shares body {s}");
                        }
                    }
                }
            }
            assert!(group_of.iter().all(|&g| g != usize::MAX));
            for i in 0..constraints.len() {
                for j in i + 1..constraints.len() {
                    let (a, b) = constraints[i].bodies();
                    let (c, d) = constraints[j].bodies();
                    let shared = [a, b].iter().any(|&s| s != 0 && (s == c || s == d));
                    if shared {
                        assert!(group_of[i] < group_of[j], "constraints {i} and {j} out of order");
                    }
                }
            }
        }
    }
}
