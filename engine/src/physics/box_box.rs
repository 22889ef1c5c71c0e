//! Box against box: the separating axis test over 15 axes, then either face clipping (a face of one box clipped
//! against the side planes of the other's face, Sutherland–Hodgman) or an edge contact: the crossing of the two
//! edges plus every corner of either box that lies over the other along the normal (see `docs/physics-contacts.md`). Every point
//! carries a feature id built from the faces, edges and clip planes that made it, so the same touching features
//! give the same id on the next step and the solver can warm start from last step's impulse.

use glam::Vec3;

use super::box_plane::OrientedBox;
use super::contact::SPECULATIVE_DISTANCE_M;
use super::manifold::{reduce_to_four, CandidatePoint, MAX_MANIFOLD_POINTS};

/// An edge axis must beat the best face axis by this much to be chosen (relative part, for deep overlaps)…
const EDGE_RELATIVE_TOLERANCE: f32 = 0.95;
/// …and by this much in metres; faces give four stable points, edges only one, so ties go to faces.
const AXIS_ABSOLUTE_TOLERANCE_M: f32 = 0.005;
/// Face B must beat face A by this relative margin, so that resting stacks keep the same reference face.
const FACE_RELATIVE_TOLERANCE: f32 = 0.98;
/// Edge pairs closer to parallel than this (squared sine) are skipped: face axes already cover them.
const PARALLEL_EPSILON: f32 = 1.0e-6;

/// Side planes are moved out by this much (metres), so a face lying exactly on another (a built stack) keeps its
/// four corners, and their ids, when it slides a hair sideways instead of being clipped into new points.
const CLIP_TOLERANCE_M: f32 = 0.001;

/// Feature-id tags that keep face points, edge points and the corner points of an edge contact apart.
const EDGE_FEATURE_TAG: u32 = 1 << 16;
const REFERENCE_IS_B_TAG: u32 = 1 << 15;
const EDGE_CORNER_TAG: u32 = 1 << 14;

/// Candidates an edge contact gathers before the reduction to four: the crossing point and every corner of both
/// boxes.
const EDGE_CANDIDATES: usize = 17;

/// A vertex of the polygon being clipped, in the reference box's local frame.
#[derive(Clone, Copy, Default)]
struct ClipVertex {
    local: Vec3,
    /// 0..4: an incident corner; 8..40: where polygon edge `(id - 8) / 4` crossed side plane `(id - 8) % 4`.
    id: u32,
    /// Label of the polygon edge that leaves this vertex: 0..4 incident edges, 4..8 reference side planes.
    out_edge: u32,
}

fn axes(b: &OrientedBox) -> [Vec3; 3] {
    [b.axes.x_axis, b.axes.y_axis, b.axes.z_axis]
}

fn sign(x: f32) -> f32 {
    if x >= 0.0 {
        1.0
    } else {
        -1.0
    }
}

/// The separating axis test's result: the best (least overlapping) face axis of each box and edge pair, each as
/// a signed separation in metres (negative = overlap along that axis).
struct Sat {
    face_a: f32,
    face_a_axis: usize,
    face_b: f32,
    face_b_axis: usize,
    edge: f32,
    /// (axis of A, axis of B) whose cross product is the best edge axis, and the sign that makes it point A → B.
    edge_axes: (usize, usize),
    edge_sign: f32,
}

impl Sat {
    /// Separation along the best of all 15 axes: the penetration depth when negative (for boxes the minimum
    /// translation is always along one of the 15 axes).
    fn separation(&self) -> f32 {
        self.face_a.max(self.face_b).max(self.edge)
    }
}

/// The 15-axis test: `None` as soon as one axis separates the boxes by more than `margin`.
fn separating_axes(a: &OrientedBox, b: &OrientedBox, margin: f32) -> Option<Sat> {
    let t = b.center - a.center;
    let reach = a.half.length() + b.half.length() + margin;
    if t.length_squared() > reach * reach {
        return None;
    }
    let (aa, ba) = (axes(a), axes(b));
    let (ha, hb) = (a.half.to_array(), b.half.to_array());
    // Everything in A's frame: r[i][j] = A_i·B_j, tl = the centre offset. The edge axes then cost a few
    // multiplies each instead of a cross product and a normalisation (Gottschalk's OBB test).
    let mut r = [[0.0f32; 3]; 3];
    let mut abs_r = [[0.0f32; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            r[i][j] = aa[i].dot(ba[j]);
            abs_r[i][j] = r[i][j].abs();
        }
    }
    let tl = [t.dot(aa[0]), t.dot(aa[1]), t.dot(aa[2])];
    let mut sat = Sat {
        face_a: f32::NEG_INFINITY,
        face_a_axis: 0,
        face_b: f32::NEG_INFINITY,
        face_b_axis: 0,
        edge: f32::NEG_INFINITY,
        edge_axes: (0, 0),
        edge_sign: 1.0,
    };
    for i in 0..3 {
        let rb = hb[0] * abs_r[i][0] + hb[1] * abs_r[i][1] + hb[2] * abs_r[i][2];
        let s = tl[i].abs() - ha[i] - rb;
        if s > margin {
            return None;
        }
        if s > sat.face_a {
            (sat.face_a, sat.face_a_axis) = (s, i);
        }
    }
    for j in 0..3 {
        let ra = ha[0] * abs_r[0][j] + ha[1] * abs_r[1][j] + ha[2] * abs_r[2][j];
        let s = (tl[0] * r[0][j] + tl[1] * r[1][j] + tl[2] * r[2][j]).abs() - hb[j] - ra;
        if s > margin {
            return None;
        }
        if s > sat.face_b {
            (sat.face_b, sat.face_b_axis) = (s, j);
        }
    }
    for i in 0..3 {
        let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
        for j in 0..3 {
            // |A_i × B_j|² = 1 − (A_i·B_j)².
            let len2 = 1.0 - r[i][j] * r[i][j];
            if len2 < PARALLEL_EPSILON {
                continue;
            }
            let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
            let ra = ha[i1] * abs_r[i2][j] + ha[i2] * abs_r[i1][j];
            let rb = hb[j1] * abs_r[i][j2] + hb[j2] * abs_r[i][j1];
            let d = tl[i2] * r[i1][j] - tl[i1] * r[i2][j];
            let s = (d.abs() - ra - rb) / len2.sqrt();
            if s > margin {
                return None;
            }
            if s > sat.edge {
                (sat.edge, sat.edge_axes, sat.edge_sign) = (s, (i, j), sign(d));
            }
        }
    }
    Some(sat)
}

/// How deep two boxes overlap (m, ≥ 0): the smallest distance that would separate them, 0 when they don't touch.
/// A check on the contacts, measured from the poses alone, so it sees overlap that no manifold reports.
pub fn overlap_depth(a: &OrientedBox, b: &OrientedBox) -> f32 {
    separating_axes(a, b, 0.0).map_or(0.0, |sat| (-sat.separation()).max(0.0))
}

/// What [`collide_box_box`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoxContact {
    /// Unit normal from A to B.
    pub normal: Vec3,
    /// Points written; 0 when the boxes are farther apart than the margin.
    pub count: usize,
    /// The boxes meet only along the rim of the reference face: an edge lies on an edge, as where the joints of two
    /// columns built side by side meet. Such a contact stops overlap but holds nothing up.
    pub rim: bool,
}

/// Contacts between boxes `a` and `b` within `margin`: writes up to four points into `out`.
pub fn collide_box_box(
    a: &OrientedBox,
    b: &OrientedBox,
    margin: f32,
    out: &mut [CandidatePoint; MAX_MANIFOLD_POINTS],
) -> BoxContact {
    let Some(sat) = separating_axes(a, b, margin) else {
        return BoxContact::default();
    };
    let t = b.center - a.center;
    let use_b = sat.face_b > FACE_RELATIVE_TOLERANCE * sat.face_a + AXIS_ABSOLUTE_TOLERANCE_M;
    let face = if use_b { sat.face_b } else { sat.face_a };
    if sat.edge > EDGE_RELATIVE_TOLERANCE * face + AXIS_ABSOLUTE_TOLERANCE_M {
        let (i, j) = sat.edge_axes;
        let edge_normal = axes(a)[i].cross(axes(b)[j]).normalize() * sat.edge_sign;
        let count = edge_contact(a, b, sat.edge_axes, edge_normal, margin, out);
        return BoxContact {
            normal: edge_normal,
            count,
            rim: false,
        };
    }
    if use_b {
        let found = face_contact(b, a, sat.face_b_axis, -t, margin, REFERENCE_IS_B_TAG, out);
        BoxContact {
            normal: -found.normal,
            ..found
        }
    } else {
        face_contact(a, b, sat.face_a_axis, t, margin, 0, out)
    }
}

/// Clips the incident box's most anti-parallel face against the reference face `axis` of `r`. `t` points from the
/// reference centre to the incident centre. The normal returned is the reference normal (towards the incident box).
fn face_contact(
    r: &OrientedBox,
    inc: &OrientedBox,
    axis: usize,
    t: Vec3,
    margin: f32,
    tag: u32,
    out: &mut [CandidatePoint; MAX_MANIFOLD_POINTS],
) -> BoxContact {
    let (ra, ia) = (axes(r), axes(inc));
    let (hr, hi) = (r.half.to_array(), inc.half.to_array());
    let ref_sign = sign(t.dot(ra[axis]));
    let normal = ra[axis] * ref_sign;
    let ref_face = axis as u32 * 2 + u32::from(ref_sign < 0.0);

    // Incident face: the face of `inc` whose normal is most opposed to the reference normal.
    let mut j = 0;
    let mut best = -1.0;
    for (k, ax) in ia.iter().enumerate() {
        let d = ax.dot(normal).abs();
        if d > best {
            (best, j) = (d, k);
        }
    }
    let inc_sign = -sign(ia[j].dot(normal));
    let inc_face = j as u32 * 2 + u32::from(inc_sign < 0.0);
    let face_center = inc.center + ia[j] * (inc_sign * hi[j]);
    let (a1, a2) = ((j + 1) % 3, (j + 2) % 3);
    let (e1, e2) = (ia[a1] * hi[a1], ia[a2] * hi[a2]);

    let to_local = |p: Vec3| {
        let d = p - r.center;
        Vec3::new(d.dot(ra[0]), d.dot(ra[1]), d.dot(ra[2]))
    };
    // Two buffers the passes clip from one into the other, in turn (no copy back after each pass).
    let mut buffers = [[ClipVertex::default(); 8]; 2];
    for (k, (s1, s2)) in [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)]
        .into_iter()
        .enumerate()
    {
        buffers[0][k] = ClipVertex {
            local: to_local(face_center + e1 * s1 + e2 * s2),
            id: k as u32,
            out_edge: k as u32,
        };
    }
    let mut n = 4;
    let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
    let (hu, hw) = (hr[u] + CLIP_TOLERANCE_M, hr[w] + CLIP_TOLERANCE_M);
    let planes = [(u, 1.0, hu), (u, -1.0, hu), (w, 1.0, hw), (w, -1.0, hw)];
    for (side, &(ax, s, h)) in planes.iter().enumerate() {
        let [from, to] = &mut buffers;
        let (from, to) = if side % 2 == 0 { (from, to) } else { (to, from) };
        n = clip(&from[..n], ax, s, h, side as u32, to);
        if n == 0 {
            return BoxContact {
                normal,
                ..BoxContact::default()
            };
        }
    }

    // Four passes, an even number: the last one wrote the first buffer.
    let poly = &buffers[0];
    let mut candidates = [CandidatePoint::default(); 12];
    let mut count = 0;
    // A tumbling box can land on a corner that is not on the incident face yet: every other corner of the
    // incident box over the reference face and within the margin is a speculative point too. Only bodies that
    // move this step widen the margin, and only they can bring a new corner down.
    let moving = margin > SPECULATIVE_DISTANCE_M * 1.01;
    for k in (0..8).filter(|_| moving) {
        let corner = inc.corner(k);
        let local = to_local(corner);
        let on_face = ((k >> j) & 1 == 1) == (inc_sign > 0.0);
        let over = local[u].abs() <= hu && local[w].abs() <= hw;
        let separation = ref_sign * local[axis] - hr[axis];
        if !on_face && over && separation <= margin {
            poly_extra(
                &mut candidates,
                &mut count,
                corner - normal * (0.5 * separation),
                separation,
                tag | (ref_face << 12) | (0xF << 8) | (64 + k as u32),
            );
        }
    }
    for v in &poly[..n] {
        let separation = ref_sign * v.local[axis] - hr[axis];
        if separation <= margin {
            let world = r.center + ra[0] * v.local.x + ra[1] * v.local.y + ra[2] * v.local.z;
            candidates[count] = CandidatePoint {
                position: world - normal * (0.5 * separation),
                separation,
                id: tag | (ref_face << 12) | (inc_face << 8) | v.id,
            };
            count += 1;
        }
    }
    let touching = |v: &ClipVertex| ref_sign * v.local[axis] - hr[axis] <= margin;
    BoxContact {
        normal,
        count: reduce_to_four(&candidates[..count], normal, out),
        rim: on_rim(&poly[..n], &planes, touching),
    }
}

/// Every vertex that makes a point lies within the clip tolerance of the same side plane (the planes sit
/// [`CLIP_TOLERANCE_M`] outside the reference face): the incident face meets the reference face only at its rim.
fn on_rim(poly: &[ClipVertex], planes: &[(usize, f32, f32); 4], touching: impl Fn(&ClipVertex) -> bool) -> bool {
    let mut near = [true; 4];
    let mut any = false;
    for v in poly.iter().filter(|v| touching(v)) {
        any = true;
        for (near, &(ax, s, h)) in near.iter_mut().zip(planes) {
            *near &= s * v.local[ax] >= h - 2.0 * CLIP_TOLERANCE_M;
        }
    }
    any && near.contains(&true)
}

fn poly_extra(out: &mut [CandidatePoint; 12], count: &mut usize, position: Vec3, separation: f32, id: u32) {
    out[*count] = CandidatePoint {
        position,
        separation,
        id,
    };
    *count += 1;
}

/// One Sutherland–Hodgman pass: keeps the part of `poly` where `s * local[axis] <= h`.
fn clip(poly: &[ClipVertex], axis: usize, s: f32, h: f32, side: u32, out: &mut [ClipVertex; 8]) -> usize {
    let mut n = 0;
    for (i, cur) in poly.iter().enumerate() {
        let next = &poly[(i + 1) % poly.len()];
        let dc = s * cur.local[axis] - h;
        let dn = s * next.local[axis] - h;
        if dc <= 0.0 && n < 8 {
            out[n] = *cur;
            n += 1;
        }
        if (dc <= 0.0) != (dn <= 0.0) && n < 8 {
            let f = dc / (dc - dn);
            let leaving = dc <= 0.0;
            out[n] = ClipVertex {
                local: cur.local + (next.local - cur.local) * f,
                id: 8 + cur.out_edge * 4 + side,
                out_edge: if leaving { 4 + side } else { cur.out_edge },
            };
            n += 1;
        }
    }
    n
}

/// Points of an edge contact: the crossing of the two support edges, and every corner of either box that lies
/// over the other along the normal within `margin`. Edges that cross give the one point they touch at; an edge
/// lying along an edge or on a face gives its two ends too (the corners over the other box); and a tumbling box's
/// next corner to land is a speculative point before it lands, not an overlap after.
fn edge_contact(
    a: &OrientedBox,
    b: &OrientedBox,
    axes_ij: (usize, usize),
    normal: Vec3,
    margin: f32,
    out: &mut [CandidatePoint; MAX_MANIFOLD_POINTS],
) -> usize {
    let mut candidates = [CandidatePoint::default(); EDGE_CANDIDATES];
    candidates[0] = edge_crossing(a, b, axes_ij, normal);
    let mut count = 1;
    for k in 0..8 {
        // B's corners against A, looking back along the normal; A's against B, looking along it.
        for (from_b, corner, other, dir) in [(1, b.corner(k), a, -normal), (0, a.corner(k), b, normal)] {
            let Some(separation) = ray_entry(other, corner, dir) else {
                continue;
            };
            if separation <= margin {
                candidates[count] = CandidatePoint {
                    position: corner + dir * (0.5 * separation),
                    separation,
                    id: EDGE_FEATURE_TAG | EDGE_CORNER_TAG | (from_b << 3) | k as u32,
                };
                count += 1;
            }
        }
    }
    reduce_to_four(&candidates[..count], normal, out)
}

/// Where the line `p + t·dir` enters box `bx`, as the parameter t (negative when `p` is inside: then −t is how far
/// `p` must move against `dir` to leave the box), or `None` when the line misses the box.
fn ray_entry(bx: &OrientedBox, p: Vec3, dir: Vec3) -> Option<f32> {
    let d = p - bx.center;
    let (mut enter, mut leave) = (f32::NEG_INFINITY, f32::INFINITY);
    for (axis, h) in axes(bx).iter().zip(bx.half.to_array()) {
        let (offset, speed) = (d.dot(*axis), dir.dot(*axis));
        if speed.abs() < PARALLEL_EPSILON {
            if offset.abs() > h {
                return None;
            }
            continue;
        }
        let (t1, t2) = ((-h - offset) / speed, (h - offset) / speed);
        enter = enter.max(t1.min(t2));
        leave = leave.min(t1.max(t2));
    }
    (enter <= leave).then_some(enter)
}

/// The closest points of the two support edges along `normal`; one point halfway between them.
fn edge_crossing(a: &OrientedBox, b: &OrientedBox, (i, j): (usize, usize), normal: Vec3) -> CandidatePoint {
    let (aa, ba) = (axes(a), axes(b));
    let (ha, hb) = (a.half.to_array(), b.half.to_array());
    // The edge of A farthest along the normal and the edge of B farthest against it.
    let (mut pa, mut pb) = (a.center, b.center);
    let (mut id_a, mut id_b) = (i as u32 * 4, j as u32 * 4);
    let mut bit = 1;
    for k in (0..3).filter(|&k| k != i) {
        let s = sign(normal.dot(aa[k]));
        pa += aa[k] * (s * ha[k]);
        id_a |= if s > 0.0 { bit } else { 0 };
        bit <<= 1;
    }
    bit = 1;
    for k in (0..3).filter(|&k| k != j) {
        let s = -sign(normal.dot(ba[k]));
        pb += ba[k] * (s * hb[k]);
        id_b |= if s > 0.0 { bit } else { 0 };
        bit <<= 1;
    }
    let (da, db) = (aa[i], ba[j]);
    let r = pb - pa;
    let d = da.dot(db);
    let (e, f) = (da.dot(r), db.dot(r));
    let denom = 1.0 - d * d;
    let mut s = if denom > PARALLEL_EPSILON {
        ((e - d * f) / denom).clamp(-ha[i], ha[i])
    } else {
        0.0
    };
    let tt = (d * s - f).clamp(-hb[j], hb[j]);
    s = (d * tt + e).clamp(-ha[i], ha[i]);
    let qa = pa + da * s;
    let qb = pb + db * tt;
    CandidatePoint {
        position: (qa + qb) * 0.5,
        separation: (qb - qa).dot(normal),
        id: EDGE_FEATURE_TAG | (id_a << 8) | id_b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Mat3, Quat};
    use std::f32::consts::FRAC_PI_4;

    fn cube(center: Vec3, rot: Quat) -> OrientedBox {
        OrientedBox {
            center,
            axes: Mat3::from_quat(rot),
            half: Vec3::splat(0.5),
        }
    }

    fn collide(a: &OrientedBox, b: &OrientedBox, margin: f32) -> (Vec3, Vec<CandidatePoint>) {
        let mut out = [CandidatePoint::default(); 4];
        let found = collide_box_box(a, b, margin, &mut out);
        (found.normal, out[..found.count].to_vec())
    }

    #[test]
    fn face_face_stacked_cubes_give_four_corner_points() {
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let b = cube(Vec3::new(0.0, 1.5, 0.0), Quat::IDENTITY);
        let (n, pts) = collide(&a, &b, 0.02);
        assert_eq!(pts.len(), 4);
        assert!((n - Vec3::Y).length() < 1e-6, "normal from A up to B: {n}");
        for p in &pts {
            assert!(p.separation.abs() < 1e-6);
            assert!((p.position.y - 1.0).abs() < 1e-6);
            assert!((p.position.x.abs() - 0.5).abs() < 1e-6 && (p.position.z.abs() - 0.5).abs() < 1e-6);
        }
        let mut ids: Vec<u32> = pts.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 4, "feature ids are distinct");
    }

    #[test]
    fn cubes_meeting_edge_to_edge_touch_only_at_the_rim() {
        // The joint between two columns: B sits one level up in the next column, its bottom edge on A's top edge.
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let mut out = [CandidatePoint::default(); 4];
        let diagonal = collide_box_box(&a, &cube(Vec3::new(0.0, 1.5, 1.0), Quat::IDENTITY), 0.02, &mut out);
        assert!(diagonal.count > 0 && diagonal.rim, "{diagonal:?}");
        let stacked = collide_box_box(&a, &cube(Vec3::new(0.0, 1.5, 0.2), Quat::IDENTITY), 0.02, &mut out);
        assert!(stacked.count == 4 && !stacked.rim, "{stacked:?}");
    }

    #[test]
    fn face_face_offset_cubes_clip_to_the_overlap() {
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let b = cube(Vec3::new(0.5, 1.49, 0.0), Quat::IDENTITY);
        let (_, pts) = collide(&a, &b, 0.02);
        assert_eq!(pts.len(), 4);
        for p in &pts {
            assert!((p.separation + 0.01).abs() < 1e-5, "overlap 1 cm: {}", p.separation);
            // Side planes sit CLIP_TOLERANCE_M outside the reference face.
            let tol = CLIP_TOLERANCE_M + 1e-6;
            assert!(
                p.position.x >= -tol && p.position.x <= 0.5 + tol,
                "clipped to x in [0, 0.5]: {}",
                p.position.x
            );
        }
    }

    #[test]
    fn feature_ids_are_stable_under_a_small_motion() {
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let b1 = cube(Vec3::new(0.3, 1.5, 0.1), Quat::from_rotation_y(0.2));
        let b2 = cube(Vec3::new(0.301, 1.499, 0.1), Quat::from_rotation_y(0.201));
        let ids = |b: &OrientedBox| {
            let mut v: Vec<u32> = collide(&a, b, 0.02).1.iter().map(|p| p.id).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(ids(&b1), ids(&b2));
    }

    #[test]
    fn vertex_face_corner_down_gives_one_point() {
        // B balanced on a corner above A's top face.
        let rot = Quat::from_rotation_z(0.6154797) * Quat::from_rotation_x(FRAC_PI_4);
        let probe = cube(Vec3::ZERO, rot);
        let lowest = (0..8).map(|i| probe.corner(i).y).fold(f32::INFINITY, f32::min);
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let b = cube(Vec3::new(0.0, 1.0 - lowest - 0.005, 0.0), rot);
        let (n, pts) = collide(&a, &b, 0.02);
        assert_eq!(pts.len(), 1, "{pts:?}");
        assert!(n.dot(Vec3::Y) > 0.99);
        assert!((pts[0].separation + 0.005).abs() < 1e-4, "{}", pts[0].separation);
        assert!(pts[0].position.x.abs() < 1e-4 && pts[0].position.z.abs() < 1e-4);
    }

    #[test]
    fn edge_edge_crossed_edges_give_one_point_between_them() {
        // A turned 45° about z (edge along z on top), B turned 45° about x (edge along x at the bottom).
        let h = 0.5 * std::f32::consts::SQRT_2;
        let a = cube(Vec3::new(0.0, 0.0, 0.0), Quat::from_rotation_z(FRAC_PI_4));
        let b = cube(Vec3::new(0.0, 2.0 * h - 0.01, 0.0), Quat::from_rotation_x(FRAC_PI_4));
        let (n, pts) = collide(&a, &b, 0.02);
        assert_eq!(pts.len(), 1, "{pts:?}");
        assert!((n - Vec3::Y).length() < 1e-4, "{n}");
        assert!((pts[0].separation + 0.01).abs() < 1e-4, "{}", pts[0].separation);
        assert!(
            (pts[0].position - Vec3::new(0.0, h - 0.005, 0.0)).length() < 1e-4,
            "{}",
            pts[0].position
        );
        assert!(pts[0].id & EDGE_FEATURE_TAG != 0);
    }

    #[test]
    fn an_edge_lying_along_an_edge_gives_both_ends() {
        // Two roofs: both cubes turned 45° about z, the upper one also 1° about y, its lowest edge 5 mm into the
        // ridge of the lower one. The edges cross at 1°: within the margin along their whole common length.
        let h = 0.5 * std::f32::consts::SQRT_2;
        let a = cube(Vec3::ZERO, Quat::from_rotation_z(FRAC_PI_4));
        let rot = Quat::from_rotation_y(1f32.to_radians()) * Quat::from_rotation_z(FRAC_PI_4);
        let b = cube(Vec3::new(0.0, 2.0 * h - 0.005, 0.0), rot);
        // The face axes tie with the edge axis here (the roofs' slopes are parallel), so call the edge contact
        // directly with the ridge axes (z of both) and the upward normal.
        let mut out = [CandidatePoint::default(); 4];
        let count = edge_contact(&a, &b, (2, 2), Vec3::Y, 0.02, &mut out);
        let pts = &out[..count];
        assert!(pts.len() >= 2, "{pts:?}");
        let spread = pts.iter().map(|p| p.position.z).fold(f32::NEG_INFINITY, f32::max)
            - pts.iter().map(|p| p.position.z).fold(f32::INFINITY, f32::min);
        assert!(spread > 0.9, "points span the ridge, not one spot: {pts:?}");
        assert!(
            pts.iter().all(|p| p.separation < 0.02 && p.separation > -0.01),
            "{pts:?}"
        );
        assert!(pts.iter().all(|p| p.id & EDGE_FEATURE_TAG != 0));
    }

    #[test]
    fn a_ray_enters_a_box_where_its_surface_is() {
        let b = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let near = |t: Option<f32>, want: f32| t.is_some_and(|t| (t - want).abs() < 1e-6);
        assert!(
            near(ray_entry(&b, Vec3::new(0.2, 1.3, 0.1), -Vec3::Y), 0.3),
            "above: the gap"
        );
        assert!(
            near(ray_entry(&b, Vec3::new(0.2, 0.9, 0.1), -Vec3::Y), -0.1),
            "inside: minus the depth"
        );
        assert_eq!(
            ray_entry(&b, Vec3::new(0.7, 1.3, 0.1), -Vec3::Y),
            None,
            "beside: a miss"
        );
    }

    #[test]
    fn tilted_cube_resting_on_an_edge_gives_two_points() {
        let h = 0.5 * std::f32::consts::SQRT_2;
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let b = cube(Vec3::new(0.0, 1.0 + h - 0.002, 0.0), Quat::from_rotation_z(FRAC_PI_4));
        let (n, pts) = collide(&a, &b, 0.02);
        assert_eq!(pts.len(), 2, "{pts:?}");
        assert!(n.dot(Vec3::Y) > 0.999);
        for p in &pts {
            assert!((p.separation + 0.002).abs() < 1e-4);
        }
    }

    #[test]
    fn separated_beyond_margin_gives_nothing_and_within_margin_speculative_points() {
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        assert!(collide(&a, &cube(Vec3::new(0.0, 1.53, 0.0), Quat::IDENTITY), 0.02)
            .1
            .is_empty());
        let (_, pts) = collide(&a, &cube(Vec3::new(0.0, 1.51, 0.0), Quat::IDENTITY), 0.02);
        assert_eq!(pts.len(), 4);
        assert!(pts.iter().all(|p| (p.separation - 0.01).abs() < 1e-5));
    }

    #[test]
    fn side_by_side_normal_points_from_a_to_b() {
        let a = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let b = cube(Vec3::new(-0.99, 0.5, 0.0), Quat::IDENTITY);
        let (n, pts) = collide(&a, &b, 0.02);
        assert_eq!(pts.len(), 4);
        assert!((n + Vec3::X).length() < 1e-6, "{n}");
    }

    #[test]
    fn small_box_on_big_box_uses_the_big_face() {
        let big = OrientedBox {
            center: Vec3::new(0.0, 1.0, 0.0),
            axes: Mat3::IDENTITY,
            half: Vec3::new(2.0, 1.0, 2.0),
        };
        let small = OrientedBox {
            center: Vec3::new(1.0, 2.2, -0.5),
            axes: Mat3::from_quat(Quat::from_rotation_y(0.3)),
            half: Vec3::splat(0.2),
        };
        let (n, pts) = collide(&small, &big, 0.02);
        assert_eq!(pts.len(), 4);
        assert!(
            (n + Vec3::Y).length() < 1e-5,
            "from the small box down to the big one: {n}"
        );
        assert!(pts
            .iter()
            .all(|p| p.separation.abs() < 1e-5 && (p.position.y - 2.0).abs() < 1e-5));
    }
}
