//! The solver stage of a step: solver bodies from the simulated ones, contacts ordered from the ground up, then
//! `contact_solver` (seed, warm start, velocity passes, shock pass, restitution), integration and the position
//! passes.

use glam::{Mat3, Mat3A, Quat, Vec3, Vec3A};

use super::super::body::{MAX_ANGULAR_SPEED_RAD_S, MAX_LINEAR_SPEED_M_S};
use super::super::broadphase::GROUND;
use super::super::contact_solver::{self as solver, SolverParams};
use super::super::stack_order::lower_body;
use super::{World, CONVERGED_IMPULSE_PER_KG};

impl World {
    pub(super) fn solve(&mut self) {
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
    pub(super) fn integrate_positions(&mut self) {
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
}
