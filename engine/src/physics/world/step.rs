//! One fixed step, stage by stage: the order of [`World::step`] (gravity → broadphase → narrowphase → islands
//! (wake) → solve → floor check → rest detection), and the collision stages (bounds, broadphase pairs, contacts of
//! moving bodies). Each stage lives in the file of its idea: `wake.rs`, `solve.rs`, `sleep.rs`.
//!
//! Every loop of a step runs over the bodies of the awake set (`awake_set.rs`) or the contacts of those bodies,
//! never over the whole world: a resting body nothing touches is not visited at all.

use glam::Vec3;

use super::super::body::MAX_LINEAR_SPEED_M_S;
use super::super::broadphase::GROUND;
use super::super::contact::{NO_CONTACT, SPECULATIVE_DISTANCE_M};
use super::super::parallel::Runner;
use super::super::{BodyId, BodyKind};
use super::{FlushDenormals, StepReport, World, POSE_REFERENCE_TOLERANCE};

impl World {
    /// Advances the world by one fixed step and says what happened.
    pub fn step(&mut self) -> &StepReport {
        let _flush = FlushDenormals::enable();
        self.steps += 1;
        self.report.step = self.steps;
        self.report.contacts.clear();
        self.report.fell_below_floor.clear();
        self.awake.collect(&mut self.awake_ids);

        if self.nothing_moves() {
            // Everything rests and nothing was touched from outside: the step would change nothing.
            self.report.max_penetration = 0.0;
            self.report.awake_bodies = 0;
            self.report.resting_bodies = self.resting;
            return &self.report;
        }
        self.looks += 1;
        // The workers wait for this step's loops warm (a copy of the handle: no allocation).
        let workers = self.workers.clone();
        let _warm = (workers.threads() > 1).then(|| workers.warm());
        self.apply_gravity();
        self.update_broadphase();
        self.report.max_penetration = self.update_contacts();
        if self.wake_islands() {
            // Woken bodies' contacts with each other were skipped above: compute them now.
            let deepest = self.update_contacts_of_woken();
            self.report.max_penetration = self.report.max_penetration.max(deepest);
        }
        self.sort_updated_contacts();
        // The woken bodies joined the awake set: from here on it is the bodies simulated or moved this step.
        self.awake.collect(&mut self.awake_ids);
        self.simulated_ids.clear();
        for &i in &self.awake_ids {
            let i = i as usize;
            if self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i] {
                self.simulated_ids.push(i as u32);
                self.simulated[i] = true;
            }
        }
        self.solve();
        self.remove_fallen();
        self.detect_rest();

        self.contacts.report(&self.updated_ids, &mut self.report.contacts);
        self.report.awake_bodies = self
            .simulated_ids
            .iter()
            .filter(|&&i| self.simulated[i as usize])
            .count();
        self.report.resting_bodies = self.resting;
        self.retire_bodies_that_did_not_move();
        self.forget_step_flags();
        &self.report
    }

    /// True when rest detection is on and no body can move this step: every dynamic body rests (or is out of the
    /// simulation), no kinematic body moves, and no state was set from outside since the last step. Only the awake
    /// set can hold one that moves.
    pub(super) fn nothing_moves(&self) -> bool {
        self.config.sleep
            && self.awake_ids.iter().all(|&i| {
                let i = i as usize;
                !self.moved_from_outside[i]
                    && match self.kind[i] {
                        BodyKind::Dynamic => self.at_rest[i] || self.removed[i],
                        BodyKind::Kinematic => !self.is_moving_kinematic(i),
                    }
            })
    }

    /// Clears the per-body and per-contact flags this step set, touching only those (at the end of the step, so
    /// the next step, and a copy of the world, starts clean whatever this one did).
    fn forget_step_flags(&mut self) {
        if self.updated_flags_set {
            for &k in &self.updated_ids {
                self.contacts.contacts[k as usize].updated = false;
            }
        }
        self.updated_ids.clear();
        for &i in &self.simulated_ids {
            self.simulated[i as usize] = false;
        }
        self.simulated_ids.clear();
        self.woken_ids.clear();
        // The stack levels stay: the next step keeps them when nothing they depend on changed (`StackOrder`).
        self.islands.clear();
    }

    pub(super) fn apply_gravity(&mut self) {
        let dv = self.config.gravity * self.config.dt;
        for &i in &self.awake_ids {
            let i = i as usize;
            if self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i] {
                self.linear_velocity[i] = (self.linear_velocity[i] + dv).clamp_length_max(MAX_LINEAR_SPEED_M_S);
            }
        }
    }

    /// Bounds of the bodies that may have moved; each one that left its enlarged box drops the pairs it no longer
    /// has and finds its new ones. A body out of the awake set has not moved since it was last looked at, so its
    /// bounds are still inside its box.
    pub(super) fn update_broadphase(&mut self) {
        self.leavers.clear();
        for &i in &self.awake_ids {
            let bounds = if self.removed[i as usize] {
                None
            } else {
                let grow = SPECULATIVE_DISTANCE_M + poses!(self).motion_bound(i as usize);
                Some(self.aabb(i as usize).grown(grow))
            };
            if self.broadphase.update(i, bounds) {
                self.leavers.push(i);
            }
        }
        // Every box is final before any pair is judged, so a pair of two leavers is kept or dropped alike from
        // either side, and one that survives keeps its contact (and impulses) as a rebuild of all pairs would.
        for k in 0..self.leavers.len() {
            self.update_pairs_of(self.leavers[k]);
        }
    }

    /// Body i's enlarged box changed: drops its contacts whose boxes no longer overlap, adds those that now do.
    fn update_pairs_of(&mut self, i: u32) {
        let ground = self.config.ground_height;
        let mut k = self.contacts.first(i);
        while k != NO_CONTACT {
            let next = self.contacts.next(k, i);
            let other = self.contacts.contacts[k as usize].other(i);
            let kept = if other == GROUND {
                self.broadphase.reaches_ground(i, ground)
            } else {
                self.broadphase.fat(i).overlaps(self.broadphase.fat(other))
            };
            if !kept {
                self.contacts.remove(k);
                self.mark_recount(i);
                if other != GROUND {
                    self.mark_recount(other);
                }
            }
            k = next;
        }
        self.candidates.clear();
        self.broadphase.query(i, &mut self.candidates);
        // In id order, so new contacts take slots in pair order and a pile's contacts lie near each other in memory.
        self.candidates.sort_unstable();
        for c in 0..self.candidates.len() {
            let j = self.candidates[c];
            let (a, b) = (i.min(j), i.max(j));
            if self.contacts.find(a, b).is_none() {
                self.contacts.insert(a, b);
            }
        }
        if self.broadphase.reaches_ground(i, ground) && self.contacts.find(i, GROUND).is_none() {
            self.contacts.insert(i, GROUND);
        }
    }

    /// Marks which bodies may move this step and brings their contacts up to date (this step's `updated_ids`).
    pub(super) fn update_contacts(&mut self) -> f32 {
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k] as usize;
            let awake_dynamic = self.kind[i] == BodyKind::Dynamic && !self.at_rest[i];
            self.active[i] =
                !self.removed[i] && (awake_dynamic || self.is_moving_kinematic(i) || self.moved_from_outside[i]);
            if self.pose_moved(i) {
                self.moved_at[i] = self.looks;
            }
        }
        self.active_ids.clear();
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k];
            if self.active[i as usize] {
                self.active_ids.push(i);
            }
        }
        // The same bodies with the same contacts list the same contacts in the same order: a pile that holds
        // still, sleeping off, lists the last step's again without walking its 15,000 contacts (and their flags,
        // a cache line each, set now and cleared at the end).
        if self.contacts.changes == self.listed_at_changes && self.active_ids == self.listed_from {
            self.updated_ids.extend_from_slice(&self.listed);
            self.updated_flags_set = false;
        } else {
            for k in 0..self.active_ids.len() {
                self.list_contacts_of(self.active_ids[k]);
            }
            self.listed.clone_from(&self.updated_ids);
            self.listed_from.clone_from(&self.active_ids);
            self.listed_at_changes = self.contacts.changes;
            self.updated_flags_set = true;
        }
        // Shared out over the workers when there is enough to share (the woken bodies' contacts, listed later,
        // follow this step's choice).
        self.share = self.workers.threads() > 1 && self.updated_ids.len() >= self.min_contacts_to_share;
        let mut run = Runner {
            workers: &self.workers,
            progress: &mut self.progress,
            share: self.share,
        };
        self.contacts
            .update(&poses!(self), &self.updated_ids, &self.moved_at, self.looks, &mut run)
    }

    /// Whatever is done in order from here on is done in pair order, as if the contacts were one sorted list: the
    /// keys are gathered once and sorted with the slots (pairs are unique, so the order is total). A step that
    /// lists the same slots in the same order as the last sort, with no contact inserted or removed since, gets
    /// that sort's result without sorting again (a pile that holds still, sleeping off).
    fn sort_updated_contacts(&mut self) {
        if self.contacts.changes == self.sorted_at_changes && self.updated_ids == self.sorted_from {
            self.updated_ids.copy_from_slice(&self.sorted_to);
            return;
        }
        self.sorted_from.clear();
        self.sorted_from.extend_from_slice(&self.updated_ids);
        self.sort_keys.clear();
        for &k in &self.updated_ids {
            self.sort_keys.push((self.contacts.contacts[k as usize].key(), k));
        }
        self.sort_keys.sort_unstable();
        self.updated_ids.clear();
        self.updated_ids.extend(self.sort_keys.iter().map(|&(_, k)| k));
        self.sorted_to.clear();
        self.sorted_to.extend_from_slice(&self.updated_ids);
        self.sorted_at_changes = self.contacts.changes;
    }

    /// Appends body i's contacts not yet listed this step to `updated_ids`, marking them updated.
    fn list_contacts_of(&mut self, i: u32) {
        let mut k = self.contacts.first(i);
        while k != NO_CONTACT {
            let c = &mut self.contacts.contacts[k as usize];
            if !c.updated {
                c.updated = true;
                self.updated_ids.push(k);
            }
            k = self.contacts.next(k, i);
        }
    }

    /// The contacts of bodies woken this step that no awake body had brought up to date.
    fn update_contacts_of_woken(&mut self) -> f32 {
        if !self.updated_flags_set {
            // Listed from the last step's list: the flags that keep a contact from being listed twice are set now.
            for &k in &self.updated_ids {
                self.contacts.contacts[k as usize].updated = true;
            }
            self.updated_flags_set = true;
        }
        let start = self.updated_ids.len();
        for k in 0..self.woken_ids.len() {
            self.list_contacts_of(self.woken_ids[k]);
        }
        let mut run = Runner {
            workers: &self.workers,
            progress: &mut self.progress,
            share: self.share,
        };
        self.contacts.update(
            &poses!(self),
            &self.updated_ids[start..],
            &self.moved_at,
            self.looks,
            &mut run,
        )
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
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k] as usize;
            if (self.simulated[i] || self.is_moving_kinematic(i)) && self.position[i].y < self.config.world_floor_y {
                self.removed[i] = true;
                self.simulated[i] = false;
                self.linear_velocity[i] = Vec3::ZERO;
                self.angular_velocity[i] = Vec3::ZERO;
                self.report.fell_below_floor.push(BodyId(i as u32));
            }
        }
    }

    /// Ends the step for the awake set: a body that will not move next step leaves it, once its bounds are inside
    /// its enlarged box (otherwise it stays one more step for the broadphase to look at it). Its pose reference
    /// is brought up to date now, counting as moved in the next step that runs, exactly as if that step had
    /// looked at it: a settled pile leaves the set in the step it comes to rest. Every other body stays.
    fn retire_bodies_that_did_not_move(&mut self) {
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k] as usize;
            self.active[i] = false;
            self.moved_from_outside[i] = false;
            let moves = self.kind[i] == BodyKind::Dynamic && !self.at_rest[i] && !self.removed[i];
            if !moves && !self.is_moving_kinematic(i) && self.bounds_inside_box(i) {
                self.awake.remove(i as u32);
                if self.pose_moved(i) {
                    self.moved_at[i] = self.looks + 1;
                }
            }
        }
    }

    /// Whether the broadphase would leave body i as it is if looked at now.
    fn bounds_inside_box(&self, i: usize) -> bool {
        let fat = self.broadphase.fat(i as u32);
        if self.removed[i] {
            !fat.min.x.is_finite()
        } else {
            let grow = SPECULATIVE_DISTANCE_M + poses!(self).motion_bound(i);
            fat.contains(&self.aabb(i).grown(grow))
        }
    }
}
