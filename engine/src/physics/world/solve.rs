//! The solver stage of a step: solver slots for this step's bodies only, contacts ordered from the ground up, then
//! `contact_solver` (seed, warm start, velocity passes, shock pass, restitution), integration and the position
//! passes.

use glam::{Mat3, Mat3A, Quat, Vec3, Vec3A};

use super::super::body::{MAX_ANGULAR_SPEED_RAD_S, MAX_LINEAR_SPEED_M_S};
use super::super::broadphase::GROUND;
use super::super::contact_solver::{self as solver, SolverParams};
use super::super::parallel::{Runner, SlotsMut};
use super::super::stack_order::{lower_body, UNSUPPORTED};
use super::{World, CONVERGED_IMPULSE_PER_KG, NO_SLOT};

impl World {
    pub(super) fn solve(&mut self) {
        // Solver slots for this step's bodies only: slot 0 is the ground (it weighs nothing and never moves), then
        // the simulated bodies, then whatever else a solved contact touches (resting or kinematic bodies, fixed
        // for the solver), given a slot as the constraints meet them.
        let sb = &mut self.solver_bodies;
        for v in [&mut sb.v, &mut sb.w, &mut sb.dp, &mut sb.dtheta] {
            v.clear();
            v.push(Vec3A::ZERO);
        }
        sb.inv_mass.clear();
        sb.inv_mass.push(0.0);
        sb.inv_inertia.clear();
        sb.inv_inertia.push(Mat3A::ZERO);
        sb.inv_inertia_scalar.clear();
        sb.inv_inertia_scalar.push(0.0);
        self.slot_body.clear();
        for k in 0..self.simulated_ids.len() {
            self.solver_slot(self.simulated_ids[k]);
        }

        let up = -self.config.gravity.normalize_or_zero();
        self.stack.compute(
            &self.contacts.contacts,
            &self.updated_ids,
            &self.simulated_ids,
            &self.simulated,
            (up, self.looks),
        );
        // Ground up: contacts ordered by the height of the body they hold up (ties keep pair order), so a body's
        // supports always come before the contacts that rest on it. Small keys are sorted, not constraints.
        let level = &self.stack.level;
        self.order_unsorted.clear();
        for (rank, &k) in self.updated_ids.iter().enumerate() {
            let c = &self.contacts.contacts[k as usize];
            let (a, b) = (c.a as usize, c.b);
            let b_simulated = b != GROUND && self.simulated[b as usize];
            if c.manifold.count > 0 && (self.simulated[a] || b_simulated) && !self.remote_hand_shoves_remote(c) {
                let level_b = if b == GROUND { 0 } else { level[b as usize] };
                self.order_unsorted.push((level[a].max(level_b), rank as u32));
            }
        }
        sort_by_level(&self.order_unsorted, &mut self.level_counts, &mut self.order);
        // Sized first and then filled in place (see `solver::prepare`); the length rarely changes from a step to
        // the next, so this usually writes nothing.
        self.constraints
            .resize(self.order.len(), solver::ContactConstraint::default());
        self.anchors.resize(self.order.len(), solver::ContactAnchors::default());
        // Whether every constraint is where it was in the last executed step, between the same slots with the same
        // lower body: then the schedules built then still hold (they depend on nothing else).
        // Solver slots in constraint order (so the same contacts get the same slots, whatever the threads), then
        // each constraint built on its own.
        self.order_slots.clear();
        // Whether any constraint is new this step (seeding has nothing to do otherwise, below).
        let mut any_fresh = false;
        for o in 0..self.order.len() {
            let k = self.updated_ids[self.order[o].1 as usize];
            let c = &self.contacts.contacts[k as usize];
            let (a, b) = (c.a, c.b);
            any_fresh |= c.fresh;
            let slot_a = self.solver_slot(a);
            let slot_b = if b == GROUND { 0 } else { self.solver_slot(b) };
            self.order_slots.push((slot_a, slot_b));
        }
        let slots = self.slot_body.len() + 1;
        // The velocity passes' schedule depends on the constraints' slots alone: built again only when those
        // changed, and with it where each constraint lies (group order, so the passes stream through memory).
        let layout_holds = self.order_slots == self.placed_slots;
        if !layout_holds {
            let order_slots = &self.order_slots;
            self.schedule
                .build_from(order_slots.len(), slots, |o| Some(order_slots[o]));
            self.schedule.place_in_group_order(&mut self.placed);
            self.placed_slots.clone_from(&self.order_slots);
        }
        let changed = {
            // The world is read by every worker, so the loop's own state is taken out of it for the loop.
            let mut progress = std::mem::take(&mut self.progress);
            let constraints = SlotsMut::new(&mut self.constraints);
            let anchors = SlotsMut::new(&mut self.anchors);
            let world = &*self;
            let mut run = Runner {
                workers: &world.workers,
                progress: &mut progress,
                share: world.share,
            };
            let changed = run.chunks(world.order.len(), PREPARE_PER_CHUNK, &|range, changed| {
                // Place by place, so the constraints are written as they lie in memory.
                for at in range {
                    let o = world.placed[at] as usize;
                    if !world.prepare_constraint(o, up, (constraints.get(at), anchors.get(at)), &world.solver_bodies) {
                        *changed = 1.0;
                    }
                }
            });
            self.progress = progress;
            changed
        };
        // Whether every constraint is where it was in the last executed step, between the same slots with the same
        // lower body: then the shock pass's schedule built then still holds (it depends on nothing else).
        let shock_schedule_holds = layout_holds && changed == 0.0;
        let params = SolverParams {
            dt: self.config.dt,
            max_depenetration_velocity: self.config.max_depenetration_velocity,
            restitution_threshold: self.config.restitution_threshold,
            position_iterations: self.config.position_iterations,
        };
        // One weight per slot: the ground's and every body's that does not move is nothing.
        let weight_impulse = self.config.gravity.length() * self.config.dt;
        self.weight.clear();
        self.weight.push(0.0);
        for k in 0..self.slot_body.len() {
            let i = self.slot_body[k] as usize;
            self.weight.push(if self.simulated[i] {
                weight_impulse / self.inv_mass[i]
            } else {
                0.0
            });
        }
        self.load.resize(slots, 0.0);
        // The weight of a body released this step is new to its supports.
        self.new_load.clear();
        self.new_load.push(0.0);
        let mut any_new_load = false;
        for k in 0..self.slot_body.len() {
            let i = self.slot_body[k] as usize;
            let new = self.weight_is_new[i] && self.simulated[i];
            any_new_load |= new;
            self.new_load.push(if new { self.weight[k + 1] } else { 0.0 });
            self.weight_is_new[i] = false;
        }
        self.supports.resize(slots, 0);
        // Seeding writes only fresh constraints and those under a new load, and a load is new only where a body's
        // weight is or a fresh contact brings it: with neither, it would change nothing (a pile that holds, sleeping
        // off, has neither; the walk down it was a serial stretch of every step).
        if any_fresh || any_new_load {
            solver::seed_fresh_contacts(
                (&mut self.constraints, &self.anchors),
                self.config.gravity.normalize_or_zero().into(),
                &self.weight,
                solver::SeedScratch {
                    load: &mut self.load,
                    new_load: &mut self.new_load,
                    supports: &mut self.supports,
                },
            );
        }
        let sb = &mut self.solver_bodies;
        if !shock_schedule_holds {
            self.shock_schedule
                .build(&self.constraints, slots, solver::ContactConstraint::has_lower);
        }
        if self.share {
            self.schedule.deal(self.workers.threads());
            self.shock_schedule.deal(self.workers.threads());
        }
        let mut run = Runner {
            workers: &self.workers,
            progress: &mut self.progress,
            share: self.share,
        };
        solver::warm_start(&mut self.constraints, &self.schedule, sb, &mut run);
        let iterations = self.config.velocity_iterations;
        // Stop early once a pass changes no impulse by more than the tolerance: a settled pile converges in one.
        let tolerance = CONVERGED_IMPULSE_PER_KG * self.config.gravity.length() * self.config.dt;
        for k in 0..iterations {
            if solver::solve(&mut self.constraints, &self.schedule, sb, &params, k, &mut run) <= tolerance
                && self.config.velocity_early_stop
            {
                break;
            }
        }
        solver::shock_pass(
            &self.constraints,
            &self.shock_schedule,
            sb,
            &params,
            &mut self.column_loads,
            &mut run,
        );
        solver::apply_restitution((&mut self.constraints, &self.anchors), sb, params.restitution_threshold);
        solver::store_impulses(
            (&self.constraints, &self.anchors),
            &mut self.contacts.contacts,
            &mut run,
        );
        for k in 0..slots {
            sb.dp[k] = sb.v[k] * params.dt;
            sb.dtheta[k] = sb.w[k] * params.dt;
        }
        let position_iterations = self.config.position_iterations;
        for k in 0..position_iterations {
            solver::solve_positions(
                (&self.constraints, &self.anchors),
                &self.schedule,
                sb,
                &params,
                k + 1 == position_iterations,
                &mut run,
            );
        }
        for &i in &self.simulated_ids {
            let (i, k) = (i as usize, self.slot[i as usize] as usize);
            self.linear_velocity[i] = Vec3::from(sb.v[k]).clamp_length_max(MAX_LINEAR_SPEED_M_S);
            self.angular_velocity[i] = Vec3::from(sb.w[k]).clamp_length_max(MAX_ANGULAR_SPEED_RAD_S);
        }
        self.integrate_positions();
        for &i in &self.slot_body {
            self.slot[i as usize] = NO_SLOT;
        }
    }

    /// Builds constraint `o` of this step's order (see `solver::prepare`); returns whether it is the same
    /// constraint as in the last executed step.
    fn prepare_constraint(
        &self,
        o: usize,
        up: Vec3,
        out: (&mut solver::ContactConstraint, &mut solver::ContactAnchors),
        solver_bodies: &solver::SolverBodies,
    ) -> bool {
        let k = self.updated_ids[self.order[o].1 as usize];
        let c = &self.contacts.contacts[k as usize];
        let (a, b) = (c.a as usize, c.b);
        let (slot_a, slot_b) = self.order_slots[o];
        let (friction_b, restitution_b) = if b == GROUND {
            (self.config.ground_friction, self.config.ground_restitution)
        } else {
            (self.friction[b as usize], self.restitution[b as usize])
        };
        let friction = (self.friction[a] * friction_b).sqrt();
        let restitution = self.restitution[a].max(restitution_b);
        let lower = lower_body(c, &self.stack.level, &self.simulated, up);
        solver::prepare(
            out,
            solver::PrepareInput {
                contact_index: k,
                contact: c,
                a: slot_a,
                b: slot_b,
                friction,
                restitution,
                lower,
                look: self.looks,
            },
            solver_bodies,
        )
    }

    /// Body i's solver slot, given one now if it has none this step: a simulated body with its mass, inertia and
    /// velocities; a moving kinematic body with its velocities and no mass; anything else fixed and at rest.
    #[inline]
    fn solver_slot(&mut self, i: u32) -> u32 {
        match self.slot[i as usize] {
            NO_SLOT => self.new_solver_slot(i as usize),
            k => k,
        }
    }

    fn new_solver_slot(&mut self, i: usize) -> u32 {
        let k = self.solver_bodies.v.len() as u32;
        let (mut v, mut w, mut inv_mass, mut inv_inertia) = (Vec3A::ZERO, Vec3A::ZERO, 0.0, Mat3A::ZERO);
        let mut inv_inertia_scalar = 0.0;
        if self.simulated[i] {
            let local = self.inv_inertia_local[i];
            inv_mass = self.inv_mass[i];
            if local.x == local.y && local.y == local.z {
                // Alike about every axis (a cube): R·(s·I)·Rᵀ is s·I whatever the rotation.
                inv_inertia = Mat3A::from_diagonal(local);
                inv_inertia_scalar = local.x;
            } else {
                let r = Mat3::from_quat(self.rotation[i]);
                inv_inertia = Mat3A::from(r * Mat3::from_diagonal(local) * r.transpose());
                inv_inertia_scalar = f32::NAN;
            }
        }
        if self.simulated[i] || self.is_moving_kinematic(i) {
            v = self.linear_velocity[i].into();
            w = self.angular_velocity[i].into();
        }
        let sb = &mut self.solver_bodies;
        sb.v.push(v);
        sb.w.push(w);
        sb.dp.push(Vec3A::ZERO);
        sb.dtheta.push(Vec3A::ZERO);
        sb.inv_mass.push(inv_mass);
        sb.inv_inertia.push(inv_inertia);
        sb.inv_inertia_scalar.push(inv_inertia_scalar);
        self.slot[i] = k;
        self.slot_body.push(i as u32);
        k
    }

    /// Moves simulated and kinematic bodies by this step's displacement (solved velocity × dt plus position
    /// correction). Rotation uses the first-order quaternion update (no trig, so it is the same on every
    /// platform), then renormalises.
    pub(super) fn integrate_positions(&mut self) {
        let dt = self.config.dt;
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k] as usize;
            let kinematic = self.is_moving_kinematic(i);
            if !(self.simulated[i] || kinematic) {
                continue;
            }
            let (dp, dtheta) = if kinematic {
                (self.linear_velocity[i] * dt, self.angular_velocity[i] * dt)
            } else {
                let slot = self.slot[i] as usize;
                (
                    self.solver_bodies.dp[slot].into(),
                    self.solver_bodies.dtheta[slot].into(),
                )
            };
            self.position[i] += dp;
            let q = self.rotation[i];
            let spin = Quat::from_xyzw(dtheta.x, dtheta.y, dtheta.z, 0.0) * q;
            self.rotation[i] = (q + spin * 0.5).normalize();
        }
    }
}

/// Constraints a worker builds at once.
const PREPARE_PER_CHUNK: usize = 64;

/// `entries` (level, rank), pushed in rank order, into `out` ordered by (level, rank) — what sorting the pairs gives,
/// since ranks are distinct and already ascending — by a stable counting sort over the levels: linear where a
/// comparison sort is not, and levels are few (below the number of bodies, or [`UNSUPPORTED`], counted last).
fn sort_by_level(entries: &[(u32, u32)], counts: &mut Vec<u32>, out: &mut Vec<(u32, u32)>) {
    let bucket = |level: u32, top: usize| if level == UNSUPPORTED { top } else { level as usize };
    let highest = entries
        .iter()
        .map(|&(level, _)| level)
        .filter(|&level| level != UNSUPPORTED)
        .max()
        .unwrap_or(0) as usize;
    // Buckets 0..=highest for the levels, highest + 1 for the unsupported; one more so the prefix sum fits.
    let top = highest + 1;
    counts.clear();
    counts.resize(top + 2, 0);
    for &(level, _) in entries {
        counts[bucket(level, top) + 1] += 1;
    }
    for b in 0..=top {
        counts[b + 1] += counts[b];
    }
    out.clear();
    out.resize(entries.len(), (0, 0));
    for &entry in entries {
        let b = bucket(entry.0, top);
        out[counts[b] as usize] = entry;
        counts[b] += 1;
    }
}
