//! The persistent contact list: one entry per broadphase pair, kept in pair order so it can be merged with a new
//! pair list in one pass. Each step the pairs that involve a moving body get a fresh manifold, and every new point
//! takes the impulses of last step's point with the same feature id (warm starting).

use glam::{Mat3, Quat, Vec3};

use super::box_box::{collide_box_box, BoxContact};
use super::box_plane::{collide_box_plane, OrientedBox};
use super::broadphase::GROUND;
use super::manifold::{CandidatePoint, Manifold, ManifoldPoint, MAX_MANIFOLD_POINTS};
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
    /// Where the two bodies were when the manifold was computed, and its points' separations then: a kept
    /// manifold's separations follow the bodies' relative motion since, so slow sinking is seen, not ratcheted.
    pub built_at: [Vec3; 2],
    pub built_separation: [f32; MAX_MANIFOLD_POINTS],
}

impl Contact {
    fn new(a: u32, b: u32) -> Contact {
        Contact {
            a,
            b,
            manifold: Manifold::default(),
            updated: false,
            fresh: true,
            built: false,
            built_at: [Vec3::ZERO; 2],
            built_separation: [0.0; MAX_MANIFOLD_POINTS],
        }
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

/// All contacts, in pair order.
#[derive(Clone, Debug, Default)]
pub struct ContactSet {
    pub contacts: Vec<Contact>,
    scratch: Vec<Contact>,
}

impl ContactSet {
    /// Makes room for `contacts` contacts without allocating while stepping.
    pub fn reserve(&mut self, contacts: usize) {
        self.contacts.reserve(contacts.saturating_sub(self.contacts.len()));
        self.scratch.reserve(contacts.saturating_sub(self.scratch.len()));
    }

    /// Replaces the contact list by one entry per pair, keeping existing entries (and their impulses).
    /// Both lists are sorted by pair, so this is one merge.
    pub fn sync_with_pairs(&mut self, pairs: &[(u32, u32)]) {
        self.scratch.clear();
        let mut old = self.contacts.iter().peekable();
        for &(a, b) in pairs {
            while old.next_if(|c| (c.a, c.b) < (a, b)).is_some() {}
            match old.next_if(|c| (c.a, c.b) == (a, b)) {
                Some(c) => self.scratch.push(*c),
                None => self.scratch.push(Contact::new(a, b)),
            }
        }
        std::mem::swap(&mut self.contacts, &mut self.scratch);
    }

    /// Brings every contact for which `active(a) || active(b)` up to date, and returns the deepest overlap among
    /// them (metres, ≥ 0). A manifold is recomputed only when one of its bodies `moved` (see
    /// [`World`](super::World)'s pose references); otherwise last step's manifold still holds to within the
    /// reference tolerance and is kept, impulses included. With `again`, only contacts not yet updated this step
    /// are looked at (bodies woken after the first pass).
    pub fn update(&mut self, poses: &BodyPoses, active: &[bool], moved: &[bool], again: bool) -> f32 {
        let mut deepest = 0.0f32;
        for c in &mut self.contacts {
            let (a, b) = (c.a as usize, c.b);
            let involved = active[a] || (b != GROUND && active[b as usize]);
            if again && (c.updated || !involved) {
                continue;
            }
            c.updated = involved;
            if !c.updated {
                continue;
            }
            let position_b = if b == GROUND {
                Vec3::ZERO
            } else {
                poses.position[b as usize]
            };
            if c.built && !moved[a] && (b == GROUND || !moved[b as usize]) {
                c.fresh = false;
                let shift = c
                    .manifold
                    .normal
                    .dot((position_b - c.built_at[1]) - (poses.position[a] - c.built_at[0]));
                for (p, s0) in c.manifold.points_mut().iter_mut().zip(c.built_separation) {
                    p.separation = s0 + shift;
                    deepest = deepest.max(-p.separation);
                }
                continue;
            }
            c.built = true;
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
        }
        deepest
    }

    /// Appends to `out` every updated contact that touched or pushed this step.
    pub fn report(&self, out: &mut Vec<ContactReport>) {
        for c in self.contacts.iter().filter(|c| c.updated && c.manifold.count > 0) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_keeps_surviving_contacts_and_adds_new_ones_in_order() {
        let mut set = ContactSet::default();
        set.sync_with_pairs(&[(0, 1), (1, 2)]);
        set.contacts[1].manifold.count = 3;
        set.sync_with_pairs(&[(0, 2), (1, 2), (1, GROUND)]);
        let keys: Vec<_> = set.contacts.iter().map(|c| (c.a, c.b, c.manifold.count)).collect();
        assert_eq!(keys, vec![(0, 2, 0), (1, 2, 3), (1, GROUND, 0)]);
    }
}
