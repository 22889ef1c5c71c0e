//! The persistent contacts: one per pair of bodies whose enlarged boxes overlap (or a box that reaches the
//! ground), kept in slots that are reused, each linked into both bodies' lists, so a body's contacts are found
//! without looking at anyone else's (Box2D's contact edges). A step brings up to date only the contacts of bodies
//! that may move, and every new point takes the impulses of last step's point with the same feature id (warm
//! starting). Whatever is done in order is done in pair order: the lists a step works on are sorted by
//! [`Contact::key`], so slot numbers never show in the results.

use glam::{Mat3, Quat, Vec3};

use super::box_box::{collide_box_box, BoxContact};
use super::box_plane::{collide_box_plane, OrientedBox};
use super::broadphase::GROUND;
use super::manifold::{CandidatePoint, Manifold, ManifoldPoint, MAX_MANIFOLD_POINTS};
use super::parallel::{Runner, SlotsMut};
use super::BodyId;

/// Points closer than this are generated ahead of time, so the solver stops bodies before they overlap (metres).
/// Each pair adds how far the two bodies can move towards each other this step, so fast cubes don't tunnel.
pub const SPECULATIVE_DISTANCE_M: f32 = 0.02;
/// A new point with no feature-id match takes the impulse of an old point at most this far away (metres).
pub const WARM_START_MATCH_DISTANCE_M: f32 = 0.02;
/// A contact whose deepest point is within this gap counts as touching (islands, report), in metres.
pub const TOUCHING_SEPARATION_M: f32 = 0.005;

/// One touching pair in the last step: who touched whom, and how hard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactReport {
    pub a: BodyId,
    /// `None` for the ground plane.
    pub b: Option<BodyId>,
    /// Unit normal from A to B.
    pub normal: Vec3,
    /// Largest normal impulse of any point this step (N·s).
    pub max_normal_impulse: f32,
    /// Largest speed at which the surfaces approached before the solver ran (m/s).
    pub approach_speed: f32,
}

/// A pair of bodies and their manifold. `b == GROUND` for the ground plane.
#[derive(Clone, Copy, Debug)]
pub struct Contact {
    pub a: u32,
    pub b: u32,
    pub manifold: Manifold,
    /// Manifold recomputed this step (a body of the pair was awake or moved from outside).
    pub updated: bool,
    /// No point of the new manifold matched an old one: the solver has nothing to warm start from.
    pub fresh: bool,
    /// The manifold has been computed at least once.
    pub built: bool,
    /// The executed step (`looks`) in which the manifold was last computed: until the next, its normal, points
    /// and anchors stand, and so does every constraint row built from them on bodies whose inertia does not turn
    /// with them (`contact_solver::prepare`).
    pub built_in_look: u64,
    /// Where the two bodies were when the manifold was computed, and its points' separations then: a kept
    /// manifold's separations follow the bodies' relative motion since, so slow sinking is seen, not ratcheted.
    pub built_at: [Vec3; 2],
    pub built_separation: [f32; MAX_MANIFOLD_POINTS],
    /// Neighbours in body a's list (`[0]`) and body b's (`[1]`, unused for the ground); [`NO_CONTACT`] ends a list.
    pub(crate) next: [u32; 2],
    pub(crate) prev: [u32; 2],
}

/// No contact: the end of a list, or a free slot's body.
pub const NO_CONTACT: u32 = u32::MAX;

impl Contact {
    pub fn new(a: u32, b: u32) -> Contact {
        Contact {
            a,
            b,
            manifold: Manifold::default(),
            updated: false,
            fresh: true,
            built: false,
            built_in_look: 0,
            built_at: [Vec3::ZERO; 2],
            built_separation: [0.0; MAX_MANIFOLD_POINTS],
            next: [NO_CONTACT; 2],
            prev: [NO_CONTACT; 2],
        }
    }

    /// Sort key: the pair (a, b), the ground after every body.
    pub fn key(&self) -> u64 {
        u64::from(self.a) << 32 | u64::from(self.b)
    }

    /// Whether the slot holds a contact.
    pub fn live(&self) -> bool {
        self.a != NO_CONTACT
    }

    /// The other body of the contact seen from `body` (`GROUND` for the ground).
    pub fn other(&self, body: u32) -> u32 {
        if self.a == body {
            self.b
        } else {
            self.a
        }
    }

    /// Which of the two link slots is body `body`'s.
    fn side(&self, body: u32) -> usize {
        usize::from(self.a != body)
    }

    pub fn touching(&self) -> bool {
        self.manifold.count > 0 && self.manifold.min_separation() <= TOUCHING_SEPARATION_M
    }
}

/// What the narrowphase needs to know of the bodies.
pub struct BodyPoses<'a> {
    pub position: &'a [Vec3],
    pub rotation: &'a [Quat],
    pub half: &'a [Vec3],
    pub linear_velocity: &'a [Vec3],
    pub angular_velocity: &'a [Vec3],
    pub ground: Option<f32>,
    pub dt: f32,
}

impl BodyPoses<'_> {
    fn oriented_box(&self, i: usize) -> OrientedBox {
        OrientedBox {
            center: self.position[i],
            axes: Mat3::from_quat(self.rotation[i]),
            half: self.half[i],
        }
    }

    /// How far body i's surface can move this step (metres): translation plus rotation at the farthest corner.
    pub fn motion_bound(&self, i: usize) -> f32 {
        (self.linear_velocity[i].length() + self.angular_velocity[i].length() * self.half[i].length()) * self.dt
    }
}

/// Last step's point for `p`: the one with the same feature id, else the nearest within
/// [`WARM_START_MATCH_DISTANCE_M`] (features can change when a face is clipped anew, the point does not).
fn matching_point<'a>(old: &'a [ManifoldPoint], p: &ManifoldPoint) -> Option<&'a ManifoldPoint> {
    old.iter().find(|o| o.id == p.id).or_else(|| {
        let max_d2 = WARM_START_MATCH_DISTANCE_M * WARM_START_MATCH_DISTANCE_M;
        old.iter()
            .map(|o| ((o.anchor_a - p.anchor_a).length_squared(), o))
            .filter(|(d2, _)| *d2 <= max_d2)
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .map(|(_, o)| o)
    })
}

/// All contacts, in slots, and each body's list of them.
#[derive(Debug, Default)]
pub struct ContactSet {
    /// Slots; a free one has `a == NO_CONTACT`.
    pub contacts: Vec<Contact>,
    free: Vec<u32>,
    /// Per body: the first contact of its list.
    first: Vec<u32>,
    /// Contacts inserted or removed so far: while it stands still, every slot holds the pair it held.
    pub changes: u64,
}

/// A copy of `v` with the same room reserved: a cloned world (a snapshot, a benchmark's copy) must not allocate
/// when it steps, and a derived clone keeps only the length.
pub fn clone_with_capacity<T: Clone>(v: &Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.capacity());
    out.extend_from_slice(v);
    out
}

impl Clone for ContactSet {
    fn clone(&self) -> Self {
        ContactSet {
            contacts: clone_with_capacity(&self.contacts),
            free: clone_with_capacity(&self.free),
            first: self.first.clone(),
            changes: self.changes,
        }
    }
}

impl ContactSet {
    /// Makes room for `contacts` contacts without allocating while stepping.
    pub fn reserve(&mut self, contacts: usize) {
        self.contacts.reserve(contacts.saturating_sub(self.contacts.len()));
        self.free.reserve(contacts.saturating_sub(self.free.len()));
    }

    /// Adds an empty list for one more body.
    pub fn add_body(&mut self) {
        self.first.push(NO_CONTACT);
    }

    /// Body i's first contact ([`NO_CONTACT`] for none); walk on with [`ContactSet::next`].
    pub fn first(&self, i: u32) -> u32 {
        self.first[i as usize]
    }

    /// The contact after `k` in body i's list.
    pub fn next(&self, k: u32, i: u32) -> u32 {
        let c = &self.contacts[k as usize];
        c.next[c.side(i)]
    }

    /// The contact between a and b (a < b, b may be the ground), if there is one.
    pub fn find(&self, a: u32, b: u32) -> Option<u32> {
        let mut k = self.first(a);
        while k != NO_CONTACT {
            let c = &self.contacts[k as usize];
            if c.a == a && c.b == b {
                return Some(k);
            }
            k = self.next(k, a);
        }
        None
    }

    /// Adds a contact between a and b (a < b, b may be the ground) at the front of both lists; returns its slot.
    pub fn insert(&mut self, a: u32, b: u32) -> u32 {
        self.changes += 1;
        let mut c = Contact::new(a, b);
        let k = match self.free.pop() {
            Some(k) => k,
            None => {
                self.contacts.push(c);
                self.contacts.len() as u32 - 1
            }
        };
        let ends: &[u32] = if b == GROUND { &[a] } else { &[a, b] };
        for (side, &body) in ends.iter().enumerate() {
            let head = self.first[body as usize];
            c.next[side] = head;
            if head != NO_CONTACT {
                let h = &mut self.contacts[head as usize];
                let s = h.side(body);
                h.prev[s] = k;
            }
            self.first[body as usize] = k;
        }
        self.contacts[k as usize] = c;
        k
    }

    /// Removes contact `k` from both lists and frees its slot.
    pub fn remove(&mut self, k: u32) {
        self.changes += 1;
        let c = &self.contacts[k as usize];
        let (a, b, prev, next) = (c.a, c.b, c.prev, c.next);
        let ends: &[u32] = if b == GROUND { &[a] } else { &[a, b] };
        for (side, &body) in ends.iter().enumerate() {
            let (prev, next) = (prev[side], next[side]);
            if prev == NO_CONTACT {
                self.first[body as usize] = next;
            } else {
                let p = &mut self.contacts[prev as usize];
                let s = p.side(body);
                p.next[s] = next;
            }
            if next != NO_CONTACT {
                let n = &mut self.contacts[next as usize];
                let s = n.side(body);
                n.prev[s] = prev;
            }
        }
        self.contacts[k as usize].a = NO_CONTACT;
        self.free.push(k);
    }

    /// Brings contacts `ids` up to date (the world lists the contacts of the bodies that may move and marks them
    /// `updated`), and returns the deepest overlap among them (metres, ≥ 0). A manifold is recomputed only when
    /// one of its bodies `moved` (see [`World`](super::World)'s pose references); otherwise last step's manifold
    /// still holds to within the reference tolerance and is kept, impulses included. A body moved when its
    /// `moved_at` stamp is `now`.
    pub fn update(&mut self, poses: &BodyPoses, ids: &[u32], moved_at: &[u64], now: u64, run: &mut Runner) -> f32 {
        // The ids a step updates are distinct (each contact is listed once, marked `updated`): one worker each.
        let contacts = SlotsMut::new(&mut self.contacts);
        run.chunks(ids.len(), NARROWPHASE_PER_CHUNK, &|range, deepest| {
            for &k in &ids[range] {
                *deepest = deepest.max(update_one(contacts.get(k as usize), poses, moved_at, now));
            }
        })
    }

    /// Appends to `out` every contact of `ids` (updated this step, in pair order) that touched or pushed.
    pub fn report(&self, ids: &[u32], out: &mut Vec<ContactReport>) {
        for c in ids.iter().map(|&k| &self.contacts[k as usize]) {
            if c.manifold.count == 0 {
                continue;
            }
            let pts = c.manifold.points();
            let max_normal_impulse = pts.iter().fold(0.0f32, |m, p| m.max(p.max_normal_impulse));
            if max_normal_impulse <= 0.0 && !c.touching() {
                continue;
            }
            out.push(ContactReport {
                a: BodyId(c.a),
                b: (c.b != GROUND).then_some(BodyId(c.b)),
                normal: c.manifold.normal,
                max_normal_impulse,
                approach_speed: pts.iter().fold(0.0f32, |m, p| m.max(p.approach_speed)),
            });
        }
    }
}

/// Contacts a worker brings up to date at once.
const NARROWPHASE_PER_CHUNK: usize = 64;

/// [`ContactSet::update`] for one contact: its manifold kept (shifted) or recomputed; returns its deepest overlap.
fn update_one(c: &mut Contact, poses: &BodyPoses, moved_at: &[u64], now: u64) -> f32 {
    let moved = |i: usize| moved_at[i] == now;
    let mut deepest = 0.0f32;
    let (a, b) = (c.a as usize, c.b);
    let position_b = if b == GROUND {
        Vec3::ZERO
    } else {
        poses.position[b as usize]
    };
    if c.built && !moved(a) && (b == GROUND || !moved(b as usize)) {
        c.fresh = false;
        let shift = c
            .manifold
            .normal
            .dot((position_b - c.built_at[1]) - (poses.position[a] - c.built_at[0]));
        for (p, s0) in c.manifold.points_mut().iter_mut().zip(c.built_separation) {
            p.separation = s0 + shift;
            deepest = deepest.max(-p.separation);
        }
        return deepest;
    }
    c.built = true;
    c.built_in_look = now;
    c.built_at = [poses.position[a], position_b];
    let mut points = [CandidatePoint::default(); MAX_MANIFOLD_POINTS];
    let box_a = poses.oriented_box(a);
    let (found, center_b) = if b == GROUND {
        let margin = SPECULATIVE_DISTANCE_M + poses.motion_bound(a);
        let ground = poses.ground.unwrap_or(f32::NEG_INFINITY);
        let count = collide_box_plane(&box_a, Vec3::Y, ground, margin, &mut points);
        let found = BoxContact {
            normal: -Vec3::Y,
            count,
            rim: false,
        };
        (found, Vec3::ZERO)
    } else {
        let b = b as usize;
        let margin = SPECULATIVE_DISTANCE_M + poses.motion_bound(a) + poses.motion_bound(b);
        let found = collide_box_box(&box_a, &poses.oriented_box(b), margin, &mut points);
        (found, poses.position[b])
    };
    let count = found.count;
    let old = c.manifold;
    c.manifold = Manifold {
        normal: found.normal,
        count: count as u8,
        rim: found.rim,
        ..Manifold::default()
    };
    c.fresh = true;
    for (p, cand) in c.manifold.points.iter_mut().zip(&points[..count]) {
        *p = ManifoldPoint {
            anchor_a: cand.position - box_a.center,
            anchor_b: cand.position - center_b,
            separation: cand.separation,
            id: cand.id,
            ..ManifoldPoint::default()
        };
        if let Some(o) = matching_point(old.points(), p) {
            p.normal_impulse = o.normal_impulse;
            p.bounce_speed = o.bounce_speed;
            c.fresh = false;
        }
        deepest = deepest.max(-cand.separation);
    }
    for (s0, p) in c.built_separation.iter_mut().zip(c.manifold.points()) {
        *s0 = p.separation;
    }
    if !c.fresh {
        c.manifold.tangent_impulse = old.tangent_impulse;
        c.manifold.twist_impulse = old.twist_impulse;
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contacts_are_found_from_either_body_and_slots_are_reused() {
        let mut set = ContactSet::default();
        for _ in 0..3 {
            set.add_body();
        }
        let k01 = set.insert(0, 1);
        let k12 = set.insert(1, 2);
        let k1g = set.insert(1, GROUND);
        let list = |set: &ContactSet, i: u32| {
            let mut out = Vec::new();
            let mut k = set.first(i);
            while k != NO_CONTACT {
                out.push(k);
                k = set.next(k, i);
            }
            out.sort_unstable();
            out
        };
        assert_eq!(list(&set, 1), vec![k01, k12, k1g]);
        set.remove(k12);
        assert_eq!(list(&set, 1), vec![k01, k1g]);
        assert_eq!(list(&set, 2), Vec::<u32>::new());
        assert_eq!(set.find(0, 1), Some(k01));
        assert_eq!(set.find(1, 2), None);
        assert_eq!(set.insert(0, 2), k12, "the freed slot is reused");
        assert_eq!(list(&set, 0), vec![k01, k12]);
        assert!(set.contacts[k12 as usize].key() < set.contacts[k1g as usize].key());
    }
}
