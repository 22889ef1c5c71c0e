//! One fixed step, stage by stage: the order of [`World::step`] (gravity → broadphase → narrowphase → islands
//! (wake) → solve → floor check → rest detection), and the collision stages (bounds, broadphase pairs, contacts of
//! moving bodies). Each stage lives in the file of its idea: `wake.rs`, `solve.rs`, `sleep.rs`.

use glam::Vec3;

use super::super::body::MAX_LINEAR_SPEED_M_S;
use super::super::contact::SPECULATIVE_DISTANCE_M;
use super::super::{BodyId, BodyKind};
use super::{FlushDenormals, StepReport, World, POSE_REFERENCE_TOLERANCE};

impl World {
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
    pub(super) fn nothing_moves(&self) -> bool {
        self.config.sleep
            && (0..self.kind.len()).all(|i| {
                !self.moved_from_outside[i]
                    && match self.kind[i] {
                        BodyKind::Dynamic => self.at_rest[i] || self.removed[i],
                        BodyKind::Kinematic => !self.is_moving_kinematic(i),
                    }
            })
    }

    pub(super) fn apply_gravity(&mut self) {
        let dv = self.config.gravity * self.config.dt;
        for i in 0..self.kind.len() {
            if self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i] {
                self.linear_velocity[i] = (self.linear_velocity[i] + dv).clamp_length_max(MAX_LINEAR_SPEED_M_S);
            }
        }
    }

    pub(super) fn update_broadphase(&mut self) {
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

    pub(super) fn update_contacts(&mut self) -> f32 {
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
    pub(super) fn pose_moved(&mut self, i: usize) -> bool {
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

    pub(super) fn remove_fallen(&mut self) {
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
}
