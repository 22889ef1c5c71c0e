//! Contact manifolds: up to four points sharing one normal, each with a feature id so the solver can carry its
//! impulses from one step to the next (warm starting), and the reduction that keeps the four points that hold a
//! box best.

use glam::Vec3;

/// A manifold never holds more than this many points: four corners carry a resting box.
pub const MAX_MANIFOLD_POINTS: usize = 4;

/// One contact point. Anchors are world-space offsets from each body's centre (for the ground, from the origin).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ManifoldPoint {
    pub anchor_a: Vec3,
    pub anchor_b: Vec3,
    /// Distance between the surfaces along the normal: negative when they overlap, positive for a speculative point.
    pub separation: f32,
    /// Which features (faces, edges, vertices, clip planes) made this point; stable while the contact persists.
    pub id: u32,
    /// Accumulated normal impulse (N·s), kept for warm starting.
    pub normal_impulse: f32,
    /// Largest normal impulse applied during the last step (for the contact report).
    pub max_normal_impulse: f32,
    /// Normal speed at which the surfaces approached before the solver ran (m/s, positive = closing).
    pub approach_speed: f32,
    /// Approach speed of a point that was stopped short of the surface (speculatively) last step: when it
    /// touches, it bounces with this speed, not with what was left after the stop (m/s).
    pub bounce_speed: f32,
}

/// The contact between two bodies: a normal pointing from body A to body B and up to four points.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Manifold {
    pub normal: Vec3,
    pub points: [ManifoldPoint; MAX_MANIFOLD_POINTS],
    pub count: u8,
    /// The boxes meet only along the rim of the reference face (an edge on an edge, as between two columns built
    /// side by side): the contact stops overlap but holds nothing up, whatever its normal.
    pub rim: bool,
    /// Accumulated friction impulse at the points' centre, as a world vector so it survives a small turn of the
    /// tangent basis (N·s).
    pub tangent_impulse: Vec3,
    /// Accumulated friction impulse against twisting about the normal (N·m·s).
    pub twist_impulse: f32,
}

impl Manifold {
    pub fn points(&self) -> &[ManifoldPoint] {
        &self.points[..self.count as usize]
    }

    pub fn points_mut(&mut self) -> &mut [ManifoldPoint] {
        &mut self.points[..self.count as usize]
    }

    /// Deepest separation among the points, or +inf when there are none.
    pub fn min_separation(&self) -> f32 {
        self.points().iter().fold(f32::INFINITY, |m, p| m.min(p.separation))
    }
}

/// A candidate point during generation: world position (halfway between the surfaces), separation, feature id.
#[derive(Clone, Copy, Debug, Default)]
pub struct CandidatePoint {
    pub position: Vec3,
    pub separation: f32,
    pub id: u32,
}

/// Points within this distance (metres) of the deepest one compete on area; points farther away are speculative
/// and are kept only by closeness, because the one about to hit matters more than a wide footprint.
pub const REDUCTION_BAND_M: f32 = 0.01;

/// Keeps at most four of `points`. Among the points within [`REDUCTION_BAND_M`] of the deepest: the deepest,
/// the one farthest from it, then the two that span the largest triangles on either side of that line — the
/// largest support polygon, which is what keeps a box from rocking. Free slots go to the closest remaining points.
/// Ties go to the earlier point, so the choice is deterministic.
pub fn reduce_to_four(
    points: &[CandidatePoint],
    normal: Vec3,
    out: &mut [CandidatePoint; MAX_MANIFOLD_POINTS],
) -> usize {
    let n = points.len();
    if n <= MAX_MANIFOLD_POINTS {
        out[..n].copy_from_slice(points);
        return n;
    }
    let mut first = 0;
    for (i, p) in points.iter().enumerate() {
        if p.separation < points[first].separation {
            first = i;
        }
    }
    let band = points[first].separation + REDUCTION_BAND_M;
    let in_band = |i: usize| points[i].separation <= band;
    let a = points[first].position;
    let mut second = usize::MAX;
    let mut best = -1.0;
    for (i, p) in points.iter().enumerate() {
        let d = (p.position - a).length_squared();
        if i != first && in_band(i) && d > best {
            best = d;
            second = i;
        }
    }
    let mut chosen = [first, second, usize::MAX, usize::MAX];
    if second != usize::MAX {
        let b = points[second].position;
        let (mut max_area, mut min_area) = (0.0f32, 0.0f32);
        for (i, p) in points.iter().enumerate() {
            if i == first || i == second || !in_band(i) {
                continue;
            }
            let area = (a - p.position).cross(b - p.position).dot(normal);
            if area > max_area {
                max_area = area;
                chosen[2] = i;
            }
            if area < min_area {
                min_area = area;
                chosen[3] = i;
            }
        }
    }
    // Fill empty slots with the closest points not yet chosen.
    for slot in 0..MAX_MANIFOLD_POINTS {
        if chosen[slot] != usize::MAX {
            continue;
        }
        let mut pick = usize::MAX;
        for i in 0..n {
            if !chosen.contains(&i) && (pick == usize::MAX || points[i].separation < points[pick].separation) {
                pick = i;
            }
        }
        chosen[slot] = pick;
    }
    let mut count = 0;
    for i in chosen {
        if i != usize::MAX {
            out[count] = points[i];
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(x: f32, z: f32, s: f32, id: u32) -> CandidatePoint {
        CandidatePoint {
            position: Vec3::new(x, 0.0, z),
            separation: s,
            id,
        }
    }

    #[test]
    fn reduction_keeps_deepest_and_the_widest_quad() {
        // An octagon of points with one deep point; the reduction must keep the deep one and span the polygon.
        let pts = [
            cp(1.0, 0.0, -0.01, 0),
            cp(0.7, 0.7, 0.0, 1),
            cp(0.0, 1.0, 0.0, 2),
            cp(-0.7, 0.7, 0.0, 3),
            cp(-1.0, 0.0, 0.0, 4),
            cp(-0.7, -0.7, 0.0, 5),
            cp(0.0, -1.0, 0.0, 6),
            cp(0.7, -0.7, 0.0, 7),
        ];
        let mut out = [CandidatePoint::default(); 4];
        let n = reduce_to_four(&pts, Vec3::Y, &mut out);
        assert_eq!(n, 4);
        let ids: Vec<u32> = out.iter().map(|p| p.id).collect();
        assert_eq!(ids[0], 0, "deepest first");
        assert_eq!(ids[1], 4, "farthest from the deepest");
        assert!(
            ids.contains(&2) && ids.contains(&6),
            "the two widest triangles: {ids:?}"
        );
    }

    #[test]
    fn reduction_keeps_the_corner_about_to_hit() {
        // Three corners on the ground and three speculative ones; the nearest speculative one must survive.
        let pts = [
            cp(0.0, 0.0, 0.0, 0),
            cp(1.0, 0.0, 0.0, 1),
            cp(0.0, 1.0, 0.0, 2),
            cp(1.0, 1.0, 0.05, 3),
            cp(0.5, 1.5, 0.2, 4),
            cp(1.5, 0.5, 0.3, 5),
        ];
        let mut out = [CandidatePoint::default(); 4];
        assert_eq!(reduce_to_four(&pts, Vec3::Y, &mut out), 4);
        let mut ids: Vec<u32> = out.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 1, 2, 3]);
    }

    #[test]
    fn reduction_passes_small_sets_through() {
        let pts = [cp(0.0, 0.0, 0.0, 7), cp(1.0, 0.0, 0.0, 9)];
        let mut out = [CandidatePoint::default(); 4];
        assert_eq!(reduce_to_four(&pts, Vec3::Y, &mut out), 2);
        assert_eq!((out[0].id, out[1].id), (7, 9));
    }
}
