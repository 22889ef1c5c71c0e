//! Sequential impulses over rigid (not soft) contacts, then a separate position pass:
//!
//! 1. warm start: apply last step's impulses, matched by feature id;
//! 2. velocity passes: non-penetration (a speculative point may close its gap this step, no more) and Coulomb
//!    friction; the last pass runs from the ground up holding each contact's lower body fixed (shock propagation);
//! 3. restitution for impacts above the threshold;
//! 4. (the world integrates positions with these velocities);
//! 5. position passes: overlap beyond [`LINEAR_SLOP_M`] is removed by moving the bodies directly, never by more
//!    than the maximum depenetration velocity × dt per step. Velocities are untouched, so push-out adds no energy
//!    (no pops, no rocking towers).
//!
//! Why rigid: a soft contact is a spring, and a spring under 29 cubes compresses — Box2D-style 30 Hz contacts sag a
//! 30-cube column by 24 cm. Rigid contacts with warm starting and a shock pass carry the column's weight exactly,
//! so it keeps its built height.

use glam::{Mat3, Vec3};

use super::contact::Contact;
use super::manifold::MAX_MANIFOLD_POINTS;

/// Overlap allowed before push-out starts (metres): below the quantization step of 1/4096 m × 2, so quantized
/// stacks don't chatter, and small enough that 30 stacked contacts lose under 1 cm.
pub const LINEAR_SLOP_M: f32 = 0.0001;
/// Passes over one contact's points in the shock pass.
pub const SHOCK_LOCAL_ITERATIONS: u32 = 4;
/// Fraction of the remaining overlap (beyond the slop) removed per position pass.
pub const PUSH_OUT_FACTOR: f32 = 0.2;

/// Per-body data the solver reads and writes. Index `static_index` is a body that never moves (the ground); bodies
/// that are resting or kinematic have zero inverse mass, so impulses never change their velocity.
#[derive(Clone, Debug, Default)]
pub struct SolverBodies {
    pub v: Vec<Vec3>,
    pub w: Vec<Vec3>,
    pub inv_mass: Vec<f32>,
    pub inv_inertia: Vec<Mat3>,
    /// Displacement and small-angle rotation this step (integration plus position correction).
    pub dp: Vec<Vec3>,
    pub dtheta: Vec<Vec3>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ConstraintPoint {
    ra: Vec3,
    rb: Vec3,
    /// r × n and the inverse-inertia-weighted versions, for the normal and the two tangents.
    ra_n: Vec3,
    rb_n: Vec3,
    ia_n: Vec3,
    ib_n: Vec3,
    ra_t: [Vec3; 2],
    rb_t: [Vec3; 2],
    ia_t: [Vec3; 2],
    ib_t: [Vec3; 2],
    normal_mass: f32,
    tangent_mass: [f32; 2],
    /// The same masses with the lower body held fixed (shock propagation pass).
    shock_normal_mass: f32,
    shock_tangent_mass: [f32; 2],
    separation: f32,
    /// Normal velocity before the solve (negative = approaching), for restitution.
    relative_velocity: f32,
    normal_impulse: f32,
    tangent_impulse: [f32; 2],
    max_normal_impulse: f32,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ContactConstraint {
    a: u32,
    b: u32,
    contact: u32,
    normal: Vec3,
    tangents: [Vec3; 2],
    friction: f32,
    restitution: f32,
    count: u8,
    /// Which body is nearer the ground (held fixed in the shock pass): 0 neither, 1 body a, 2 body b.
    lower: u8,
    /// Nothing to warm start from: seeded with the weight it carries instead.
    fresh: bool,
    points: [ConstraintPoint; MAX_MANIFOLD_POINTS],
}

impl ContactConstraint {
    pub fn body_a(&self) -> u32 {
        self.a
    }

    pub fn body_b(&self) -> u32 {
        self.b
    }

    pub fn contact_index(&self) -> u32 {
        self.contact
    }

    /// Multipliers on each body's response: in the shock pass the lower body does not move.
    fn response(&self, shock: bool) -> (f32, f32) {
        match (shock, self.lower) {
            (true, 1) => (0.0, 1.0),
            (true, 2) => (1.0, 0.0),
            _ => (1.0, 1.0),
        }
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
fn tangent_basis(n: Vec3) -> [Vec3; 2] {
    let t1 = if n.x.abs() < 0.57735 {
        Vec3::new(0.0, n.z, -n.y)
    } else {
        Vec3::new(n.y, -n.x, 0.0)
    }
    .normalize();
    [t1, n.cross(t1)]
}

/// Builds one constraint per contact. `index(b)` maps a contact's body id to its solver slot.
#[allow(clippy::too_many_arguments)]
pub fn prepare(
    constraint: &mut ContactConstraint,
    contact_index: u32,
    c: &Contact,
    a: u32,
    b: u32,
    bodies: &SolverBodies,
    friction: f32,
    restitution: f32,
    lower: u8,
) {
    let m = &c.manifold;
    let (ia, ib) = (a as usize, b as usize);
    let (ma, mb) = (bodies.inv_mass[ia], bodies.inv_mass[ib]);
    let (iia, iib) = (bodies.inv_inertia[ia], bodies.inv_inertia[ib]);
    let n = m.normal;
    let tangents = tangent_basis(n);
    *constraint = ContactConstraint {
        a,
        b,
        contact: contact_index,
        normal: n,
        tangents,
        friction,
        restitution,
        count: m.count,
        lower,
        fresh: c.fresh,
        points: [ConstraintPoint::default(); MAX_MANIFOLD_POINTS],
    };
    let (sa, sb) = constraint.response(true);
    let inv = |k: f32| if k > 0.0 { 1.0 / k } else { 0.0 };
    for (cp, mp) in constraint.points.iter_mut().zip(m.points()) {
        let (ra, rb) = (mp.anchor_a, mp.anchor_b);
        let (ra_n, rb_n) = (ra.cross(n), rb.cross(n));
        let (ia_n, ib_n) = (iia * ra_n, iib * rb_n);
        let ka = ma + ra_n.dot(ia_n);
        let kb = mb + rb_n.dot(ib_n);
        cp.normal_mass = inv(ka + kb);
        cp.shock_normal_mass = inv(sa * ka + sb * kb);
        cp.ra = ra;
        cp.rb = rb;
        cp.ra_n = ra_n;
        cp.rb_n = rb_n;
        cp.ia_n = ia_n;
        cp.ib_n = ib_n;
        for (t, tangent) in tangents.iter().enumerate() {
            let (ra_t, rb_t) = (ra.cross(*tangent), rb.cross(*tangent));
            let (ia_t, ib_t) = (iia * ra_t, iib * rb_t);
            let ka = ma + ra_t.dot(ia_t);
            let kb = mb + rb_t.dot(ib_t);
            cp.tangent_mass[t] = inv(ka + kb);
            cp.shock_tangent_mass[t] = inv(sa * ka + sb * kb);
            cp.ra_t[t] = ra_t;
            cp.rb_t[t] = rb_t;
            cp.ia_t[t] = ia_t;
            cp.ib_t[t] = ib_t;
            cp.tangent_impulse[t] = mp.tangent_impulse.dot(*tangent);
        }
        cp.separation = mp.separation;
        cp.normal_impulse = mp.normal_impulse;
        let dv = bodies.v[ib] + bodies.w[ib].cross(rb) - bodies.v[ia] - bodies.w[ia].cross(ra);
        cp.relative_velocity = n.dot(dv);
    }
}

/// Applies `impulse` along `dir` (−to A, +to B). `(sa, sb)` scale each body's response (0 holds it fixed).
#[inline]
#[allow(clippy::too_many_arguments)]
fn apply(
    bodies: &mut SolverBodies,
    a: usize,
    b: usize,
    (sa, sb): (f32, f32),
    dir: Vec3,
    ia: Vec3,
    ib: Vec3,
    impulse: f32,
) {
    let (ja, jb) = (sa * impulse, sb * impulse);
    let (ma, mb) = (bodies.inv_mass[a], bodies.inv_mass[b]);
    bodies.v[a] -= dir * (ma * ja);
    bodies.w[a] -= ia * ja;
    bodies.v[b] += dir * (mb * jb);
    bodies.w[b] += ib * jb;
}

/// Gives contacts that have nothing to warm start from the impulse of the weight they carry, found from the top
/// of each stack down: every body passes its own weight and what rests on it, shared equally among the contacts
/// it rests on. Exact for a column, close for a pyramid; without it a stack built in one step starts with
/// unequal corner impulses, and the first steps set it rocking. `weight[i]` is body i's weight impulse
/// (m·|g|·dt, 0 for bodies that don't move); `load` and `supports` are scratch of the same length.
pub fn seed_fresh_contacts(
    constraints: &mut [ContactConstraint],
    gravity_dir: Vec3,
    weight: &[f32],
    load: &mut [f32],
    supports: &mut [u32],
) {
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
    for c in constraints.iter_mut().rev() {
        let Some((upper, lower)) = upper_lower(c) else { continue };
        let share = load[upper] / supports[upper].max(1) as f32;
        load[lower] += share;
        // Only the part of the weight along the normal is carried by the normal impulse.
        let along = if c.lower == 1 { c.normal } else { -c.normal }
            .dot(-gravity_dir)
            .max(0.0);
        if c.fresh && c.count > 0 {
            let per_point = share * along / c.count as f32;
            c.points[..c.count as usize]
                .iter_mut()
                .for_each(|p| p.normal_impulse = per_point);
        }
    }
}

pub fn warm_start(constraints: &[ContactConstraint], bodies: &mut SolverBodies) {
    for c in constraints {
        let (a, b) = (c.a as usize, c.b as usize);
        for p in &c.points[..c.count as usize] {
            apply(bodies, a, b, (1.0, 1.0), c.normal, p.ia_n, p.ib_n, p.normal_impulse);
            for t in 0..2 {
                apply(
                    bodies,
                    a,
                    b,
                    (1.0, 1.0),
                    c.tangents[t],
                    p.ia_t[t],
                    p.ib_t[t],
                    p.tangent_impulse[t],
                );
            }
        }
    }
}

/// One velocity pass over all constraints (Gauss–Seidel; per point friction, then the normal). Odd passes take
/// each contact's points in reverse order, so no corner is always solved first and the stack is not nudged the
/// same way every step.
pub fn solve(constraints: &mut [ContactConstraint], bodies: &mut SolverBodies, params: &SolverParams, pass: u32) {
    let inv_dt = 1.0 / params.dt;
    for c in constraints.iter_mut() {
        let count = c.count as usize;
        for k in 0..count {
            let k = if pass % 2 == 0 { k } else { count - 1 - k };
            solve_point_friction(c, k, bodies);
        }
        for k in 0..count {
            let k = if pass % 2 == 0 { k } else { count - 1 - k };
            solve_point_normal(c, k, bodies, inv_dt);
        }
    }
}

fn solve_point_friction(c: &mut ContactConstraint, k: usize, bodies: &mut SolverBodies) {
    let (a, b) = (c.a as usize, c.b as usize);
    let p = &mut c.points[k];
    let dv = bodies.v[b] - bodies.v[a];
    let (wa, wb) = (bodies.w[a], bodies.w[b]);
    let max_friction = c.friction * p.normal_impulse;
    let mut new = [0.0f32; 2];
    for t in 0..2 {
        let vt = c.tangents[t].dot(dv) + wb.dot(p.rb_t[t]) - wa.dot(p.ra_t[t]);
        new[t] = p.tangent_impulse[t] - p.tangent_mass[t] * vt;
    }
    // Coulomb cone: clamp the combined friction impulse to μ times the normal impulse.
    let len2 = new[0] * new[0] + new[1] * new[1];
    if len2 > max_friction * max_friction {
        let scale = if len2 > 0.0 { max_friction / len2.sqrt() } else { 0.0 };
        new = [new[0] * scale, new[1] * scale];
    }
    for (t, &value) in new.iter().enumerate() {
        let delta = value - p.tangent_impulse[t];
        p.tangent_impulse[t] = value;
        apply(bodies, a, b, (1.0, 1.0), c.tangents[t], p.ia_t[t], p.ib_t[t], delta);
    }
}

fn solve_point_normal(c: &mut ContactConstraint, k: usize, bodies: &mut SolverBodies, inv_dt: f32) {
    let (a, b) = (c.a as usize, c.b as usize);
    let p = &mut c.points[k];
    // Speculative: a gap may close this step, no more. Overlap is the position pass's job.
    let min_speed = -p.separation.max(0.0) * inv_dt;
    let vn = c.normal.dot(bodies.v[b] - bodies.v[a]) + bodies.w[b].dot(p.rb_n) - bodies.w[a].dot(p.ra_n);
    let new = (p.normal_impulse - p.normal_mass * (vn - min_speed)).max(0.0);
    let delta = new - p.normal_impulse;
    p.normal_impulse = new;
    p.max_normal_impulse = p.max_normal_impulse.max(new);
    apply(bodies, a, b, (1.0, 1.0), c.normal, p.ia_n, p.ib_n, delta);
}

/// Shock propagation: over constraints ordered from the ground up, pushes each contact's upper body so it no
/// longer approaches the lower one, holding the lower body fixed. One such pass makes a whole stack agree exactly,
/// where plain Gauss–Seidel needs a number of passes that grows with the square of the stack's height. It only
/// ever pushes, and its impulses are kept out of the accumulated ones (they have no reaction on the lower body,
/// so warm starting from them would put momentum into the stack that was never there).
pub fn shock_pass(constraints: &[ContactConstraint], bodies: &mut SolverBodies, params: &SolverParams) {
    let inv_dt = 1.0 / params.dt;
    for c in constraints.iter().filter(|c| c.lower != 0) {
        let (a, b) = (c.a as usize, c.b as usize);
        let response = c.response(true);
        let mut pushed = [0.0f32; MAX_MANIFOLD_POINTS];
        let mut rubbed = [[0.0f32; 2]; MAX_MANIFOLD_POINTS];
        // With the lower body fixed a contact is a small problem of its own: iterate its points until they agree,
        // or the corner solved first leaves the upper body spinning.
        let count = c.count as usize;
        for pass in 0..SHOCK_LOCAL_ITERATIONS {
            // Alternate the order of the points so no corner is always solved first.
            for k in 0..count {
                let k = if pass % 2 == 0 { k } else { count - 1 - k };
                let (p, total, friction) = (&c.points[k], &mut pushed[k], &mut rubbed[k]);
                // Friction carries sideways motion up the stack the same way the normal carries weight.
                let dv = bodies.v[b] - bodies.v[a];
                let max_friction = c.friction * (p.normal_impulse + *total);
                let mut new = [0.0f32; 2];
                for t in 0..2 {
                    let vt = c.tangents[t].dot(dv) + bodies.w[b].dot(p.rb_t[t]) - bodies.w[a].dot(p.ra_t[t]);
                    new[t] = (p.tangent_impulse[t] + friction[t]) - p.shock_tangent_mass[t] * vt;
                }
                let len2 = new[0] * new[0] + new[1] * new[1];
                if len2 > max_friction * max_friction {
                    let scale = if len2 > 0.0 { max_friction / len2.sqrt() } else { 0.0 };
                    new = [new[0] * scale, new[1] * scale];
                }
                for t in 0..2 {
                    let delta = new[t] - p.tangent_impulse[t] - friction[t];
                    friction[t] += delta;
                    apply(bodies, a, b, response, c.tangents[t], p.ia_t[t], p.ib_t[t], delta);
                }
                let min_speed = -p.separation.max(0.0) * inv_dt;
                let vn = c.normal.dot(bodies.v[b] - bodies.v[a]) + bodies.w[b].dot(p.rb_n) - bodies.w[a].dot(p.ra_n);
                // The total impulse (accumulated + this pass) must stay ≥ 0, so a loaded contact can be pulled
                // back as well as pushed; a pass that could only push would turn rocking into lift.
                let new = (*total - p.shock_normal_mass * (vn - min_speed)).max(-p.normal_impulse);
                let delta = new - *total;
                *total = new;
                apply(bodies, a, b, response, c.normal, p.ia_n, p.ib_n, delta);
            }
        }
    }
}

/// One position pass: moves bodies (through `dp`, `dtheta`) to remove overlap beyond the slop. The current
/// separation of each point is its separation at the start of the step plus the relative motion of its anchors.
pub fn solve_positions(
    constraints: &[ContactConstraint],
    bodies: &mut SolverBodies,
    params: &SolverParams,
    shock: bool,
) {
    let max_correction = params.max_depenetration_velocity * params.dt / params.position_iterations.max(1) as f32;
    for c in constraints {
        let (a, b) = (c.a as usize, c.b as usize);
        let (sa, sb) = c.response(shock);
        let shocked = shock && c.lower != 0;
        for p in &c.points[..c.count as usize] {
            let da = bodies.dp[a] + bodies.dtheta[a].cross(p.ra);
            let db = bodies.dp[b] + bodies.dtheta[b].cross(p.rb);
            let s = p.separation + c.normal.dot(db - da);
            let correction = (PUSH_OUT_FACTOR * (s + LINEAR_SLOP_M)).clamp(-max_correction, 0.0);
            if correction == 0.0 {
                continue;
            }
            let mass = if shocked { p.shock_normal_mass } else { p.normal_mass };
            let impulse = -correction * mass;
            let (ja, jb) = (sa * impulse, sb * impulse);
            bodies.dp[a] -= c.normal * (bodies.inv_mass[a] * ja);
            bodies.dtheta[a] -= p.ia_n * ja;
            bodies.dp[b] += c.normal * (bodies.inv_mass[b] * jb);
            bodies.dtheta[b] += p.ib_n * jb;
        }
    }
}

/// Bounces: for points that approached faster than the threshold and pushed, aim for −e × the approach speed.
pub fn apply_restitution(constraints: &mut [ContactConstraint], bodies: &mut SolverBodies, threshold: f32) {
    for c in constraints.iter_mut().filter(|c| c.restitution > 0.0) {
        let (a, b) = (c.a as usize, c.b as usize);
        for p in &mut c.points[..c.count as usize] {
            if p.relative_velocity > -threshold || p.max_normal_impulse == 0.0 {
                continue;
            }
            let vn = c.normal.dot(bodies.v[b] - bodies.v[a]) + bodies.w[b].dot(p.rb_n) - bodies.w[a].dot(p.ra_n);
            let new = (p.normal_impulse - p.normal_mass * (vn + c.restitution * p.relative_velocity)).max(0.0);
            let delta = new - p.normal_impulse;
            p.normal_impulse = new;
            p.max_normal_impulse = p.max_normal_impulse.max(new);
            apply(bodies, a, b, (1.0, 1.0), c.normal, p.ia_n, p.ib_n, delta);
        }
    }
}

/// Writes accumulated impulses back to the contacts for next step's warm start and the contact report.
pub fn store_impulses(constraints: &[ContactConstraint], contacts: &mut [Contact]) {
    for c in constraints {
        let m = &mut contacts[c.contact as usize].manifold;
        for (mp, p) in m.points_mut().iter_mut().zip(&c.points) {
            mp.normal_impulse = p.normal_impulse;
            mp.tangent_impulse = c.tangents[0] * p.tangent_impulse[0] + c.tangents[1] * p.tangent_impulse[1];
            mp.max_normal_impulse = p.max_normal_impulse;
            mp.approach_speed = (-p.relative_velocity).max(0.0);
        }
    }
}
