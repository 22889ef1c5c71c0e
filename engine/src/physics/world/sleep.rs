//! Rest detection at the end of a step: each simulated body's window of poses and velocities, restarted by hits,
//! and islands whose bodies are all still put to rest (see `rest.rs` for what "still" means).

use glam::Vec3;

use super::super::broadphase::GROUND;
use super::super::rest::RestThresholds;
use super::{World, HIT_SPEED_M_S};

impl World {
    /// Records each simulated body's pose and velocities; islands whose bodies are all still go to rest with zero
    /// velocity (they are below the rest speed already, so nothing visible is lost).
    pub(super) fn detect_rest(&mut self) {
        if !self.config.sleep {
            // Nothing reads the windows without rest detection (a world's configuration never changes).
            return;
        }
        self.restart_windows_of_hit_bodies();
        for k in 0..self.simulated_ids.len() {
            let i = self.simulated_ids[k] as usize;
            if self.simulated[i] {
                let (p, q) = (self.position[i], self.rotation[i]);
                self.history[i].push(p, q, self.linear_velocity[i], self.angular_velocity[i]);
                self.history[i].observe_trend(self.half[i].length());
            }
        }
        let thresholds = RestThresholds::new(self.config.rest_linear_threshold, self.config.rest_angular_threshold);
        // A body without rest detection of its own (a networked cube another peer has authority over) still
        // counts for its island by what it does here: when it is still too, the bodies beside it may rest, and it
        // waits awake for its authority's word. Counting it as never still made two cubes of two authorities that
        // touch keep each other awake for ever, each peer waiting for the other's cube to rest first.
        for k in 0..self.simulated_ids.len() {
            let i = self.simulated_ids[k] as usize;
            if self.simulated[i] && !self.history[i].is_still(self.half[i].length(), &thresholds) {
                self.islands.mark_not_still(i as u32);
            }
        }
        for k in 0..self.simulated_ids.len() {
            let i = self.simulated_ids[k] as usize;
            if self.simulated[i] && self.rest_detection[i] && self.islands.is_still(i as u32) {
                self.set_at_rest(i, true);
                self.woken_by_remote[i] = false;
                self.linear_velocity[i] = Vec3::ZERO;
                self.angular_velocity[i] = Vec3::ZERO;
            }
        }
    }

    /// Starts the rest window over for both bodies of every contact solved this step that is new (nothing to warm
    /// start from) or whose surfaces met faster than [`HIT_SPEED_M_S`] beyond one step of gravity: what happened
    /// before the hit says nothing about whether the body can rest after it.
    pub(super) fn restart_windows_of_hit_bodies(&mut self) {
        let hit_speed = HIT_SPEED_M_S + self.config.gravity.length() * self.config.dt;
        for c in self.updated_ids.iter().map(|&k| &self.contacts.contacts[k as usize]) {
            if !c.touching() {
                continue;
            }
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
