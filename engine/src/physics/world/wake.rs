//! Who moves this step: islands of touching dynamic bodies (flooded from the bodies that may move), woken as a whole by an awake body, a
//! moving kinematic body or a lost contact — with the rules of networked worlds: a remote body never wakes another
//! remote one that rests, and a resting remote body wakes only when something of this peer's own moves its island.

use glam::Vec3;

use super::super::broadphase::GROUND;
use super::super::contact::{Contact, NO_CONTACT};
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

    /// Builds the islands of the bodies that may move (see `island.rs`) and wakes every resting body whose island
    /// holds an awake one, lost a contact or is pushed by a moving kinematic body. Woken bodies join the awake set
    /// and `woken_ids`. Returns true when some resting body was woken.
    pub(super) fn wake_islands(&mut self) -> bool {
        if !self.config.sleep {
            for k in 0..self.awake_ids.len() {
                self.set_at_rest(self.awake_ids[k] as usize, false);
            }
            return false;
        }
        self.wake_bodies_that_lost_a_contact();
        self.build_islands();
        for k in 0..self.lost.len() {
            self.islands.mark_awake_here(self.lost[k]);
        }
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k] as usize;
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
        self.mark_bodies_pushed_by_kinematic_ones();
        let mut woke = false;
        for m in 0..self.islands.members().len() {
            let i = self.islands.members()[m] as usize;
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
                self.set_at_rest(i, false);
                self.history[i].clear();
                // This step's gravity was given to awake bodies before islands were known. Without it the
                // warm-started contacts, which carry its weight, would kick it upwards by g·dt (0.11 m/s): a
                // woken 30-cube tower jumped and swayed by a centimetre.
                self.linear_velocity[i] += self.config.gravity * self.config.dt;
                self.awake.insert(i as u32);
                self.woken_ids.push(i as u32);
                woke = true;
            }
        }
        // A body in no island (kinematic, or out of the simulation) has no cause of this peer's own to keep.
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k];
            if !self.islands.contains(i) && !self.at_rest[i as usize] {
                self.woken_by_remote[i as usize] = false;
            }
        }
        woke
    }

    /// Islands of every body that may move or wake: flooded over touching contacts between dynamic bodies from
    /// the awake dynamic bodies, the bodies that lost a contact and those a moving kinematic body pushes. Islands
    /// of resting bodies nothing reaches are not built: nothing in them could change.
    fn build_islands(&mut self) {
        self.islands.clear();
        for k in 0..self.awake_ids.len() {
            let i = self.awake_ids[k];
            let u = i as usize;
            if self.kind[u] == BodyKind::Dynamic && !self.at_rest[u] && !self.removed[u] {
                self.flood_island(i);
            } else if self.is_moving_kinematic(u) {
                self.for_each_pushed(i, |w, pushed| w.flood_island(pushed));
            }
        }
        for k in 0..self.lost.len() {
            self.flood_island(self.lost[k]);
        }
    }

    /// Builds the island of `seed` (a dynamic body) unless it has one already.
    fn flood_island(&mut self, seed: u32) {
        if !self.islands.contains(seed) {
            let island = self.islands.start(seed);
            while let Some(i) = self.islands.next_pending() {
                let mut k = self.contacts.first(i);
                while k != NO_CONTACT {
                    let c = &self.contacts.contacts[k as usize];
                    k = self.contacts.next(k, i);
                    let j = c.other(i);
                    if c.touching()
                        && self.is_dynamic(c.a)
                        && self.is_dynamic(c.b)
                        && !self.remote_meets_resting_remote(c.a as usize, c.b as usize)
                        && !self.islands.contains(j)
                    {
                        self.islands.join(j, island);
                    }
                }
            }
        }
    }

    /// Calls `f` with every dynamic body that moving kinematic body `pusher` touches and may push (one remote body
    /// never moves another that rests).
    fn for_each_pushed(&mut self, pusher: u32, mut f: impl FnMut(&mut World, u32)) {
        let mut k = self.contacts.first(pusher);
        while k != NO_CONTACT {
            let c = &self.contacts.contacts[k as usize];
            k = self.contacts.next(k, pusher);
            let pushed = c.other(pusher);
            if c.touching()
                && pushed != GROUND
                && self.is_dynamic(pushed)
                && !self.remote_meets_resting_remote(pusher as usize, pushed as usize)
            {
                f(self, pushed);
            }
        }
    }

    /// A moving kinematic body wakes what it touches, and that cannot be still while pushed.
    fn mark_bodies_pushed_by_kinematic_ones(&mut self) {
        for k in 0..self.awake_ids.len() {
            let pusher = self.awake_ids[k];
            if !self.is_moving_kinematic(pusher as usize) {
                continue;
            }
            let here = !self.remote[pusher as usize];
            self.for_each_pushed(pusher, |w, pushed| {
                if here {
                    w.islands.mark_awake_here(pushed);
                } else {
                    w.islands.mark_awake(pushed);
                }
                w.islands.mark_not_still(pushed);
                w.history[pushed as usize].clear();
            });
        }
    }

    /// Counts the touching contacts of each body whose count may have changed (`recount`: an end of a contact
    /// updated this step, or of one the broadphase dropped, or a body `set_remote` changed). A dynamic body with
    /// fewer than when last counted lost something that held or pushed it, so it is woken with its island and its
    /// rest window starts over: a cube whose support was set elsewhere, grabbed away or removed must not stay asleep
    /// in mid-air, and one whose prop slid away must be seen still anew before it rests (its window would
    /// otherwise still hold the steps it was propped). Such bodies are listed in `lost`.
    pub(super) fn wake_bodies_that_lost_a_contact(&mut self) {
        for n in 0..self.updated_ids.len() {
            let c = &self.contacts.contacts[self.updated_ids[n] as usize];
            let (a, b) = (c.a, c.b);
            self.mark_recount(a);
            if b != GROUND {
                self.mark_recount(b);
            }
        }
        self.lost.clear();
        let up = -self.config.gravity.normalize_or_zero();
        for n in 0..self.recount.len() {
            let i = self.recount[n];
            self.in_recount[i as usize] = false;
            let now = self.count_touching(i, up);
            let lost = now < self.touching[i as usize];
            self.touching[i as usize] = now;
            if lost && self.kind[i as usize] == BodyKind::Dynamic && !self.removed[i as usize] {
                self.lost.push(i);
                self.history[i as usize].clear();
            }
        }
        self.recount.clear();
    }

    /// Body i's touching contacts that count for it (see [`counts_as_touching`]). A local cube that brushed a
    /// remote one's side and left (one pulled from beside it) takes nothing it stands on: waking it would only
    /// shake its stack by solver noise before its authority's next word.
    fn count_touching(&self, i: u32, up: Vec3) -> u32 {
        let mut count = 0;
        let mut k = self.contacts.first(i);
        while k != NO_CONTACT {
            let c = &self.contacts.contacts[k as usize];
            k = self.contacts.next(k, i);
            if !c.touching() {
                continue;
            }
            let other = c.other(i);
            let other_remote = other != GROUND && self.remote[other as usize];
            count += u32::from(counts_as_touching(
                c,
                c.a == i,
                [self.remote[i as usize], other_remote],
                up,
            ));
        }
        count
    }
}

/// Whether touching contact `c` counts for body a (`for_a`) or body b among the contacts whose loss wakes it, given
/// `[this body remote, the other body remote]` (the ground is never remote). Between two remote bodies nothing
/// counts: a remote body's supports that move away are its authority's to see (see `World::set_remote`). A remote
/// body counts only what of this peer's own holds it up: not the ground, which never moves away — a remote cube
/// leaning on it loses that contact only by its own motion here (a resting state applied a quantum off made the
/// ground contact of a tilted cube stop touching for a step, and the cube woke and was moved by the solver while
/// its authority had it at rest: 0.1 mm of rest jitter, over the touching towers at 10 % loss).
pub(super) fn counts_as_touching(c: &Contact, for_a: bool, [remote, other_remote]: [bool; 2], up: Vec3) -> bool {
    !remote || (!other_remote && c.b != GROUND && holds_up(c, for_a, up))
}
