//! Who moves this step: islands of touching dynamic bodies (union–find), woken as a whole by an awake body, a
//! moving kinematic body or a lost contact — with the rules of networked worlds: a remote body never wakes another
//! remote one that rests, and a resting remote body wakes only when something of this peer's own moves its island.

use glam::Vec3;

use super::super::broadphase::GROUND;
use super::super::contact::Contact;
use super::super::rest::REST_WINDOW;
use super::super::stack_order::holds_up;
use super::super::BodyKind;
use super::World;

impl World {
    /// Slower than rest detection's thresholds spread over its window: as the last step left it (this step's
    /// gravity, already added to an awake body, taken back out).
    pub(super) fn is_slow(&self, i: usize) -> bool {
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

    pub(super) fn is_dynamic(&self, i: u32) -> bool {
        i != GROUND && self.kind[i as usize] == BodyKind::Dynamic
    }

    /// Builds islands from touching contacts and wakes every resting body whose island holds an awake one or is
    /// pushed by a moving kinematic body.
    /// Returns true when some resting body was woken (its `active` flag is then set, all others cleared).
    pub(super) fn wake_islands(&mut self) -> bool {
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
    pub(super) fn wake_bodies_that_lost_a_contact(&mut self) {
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
}

/// Whether touching contact `c` counts for body a (`for_a`) or body b among the contacts whose loss wakes it, given
/// `[this body remote, the other body remote]` (the ground is never remote). Between two remote bodies nothing
/// counts: a remote body's supports that move away are its authority's to see (see `World::set_remote`). A remote
/// body counts only what holds it up.
pub(super) fn counts_as_touching(c: &Contact, for_a: bool, [remote, other_remote]: [bool; 2], up: Vec3) -> bool {
    !remote || (!other_remote && holds_up(c, for_a, up))
}
