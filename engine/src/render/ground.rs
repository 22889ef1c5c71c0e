//! The ground's outline on screen: the part of each view where the view ray meets the plane y = 0 between the
//! near and far planes, as a few triangles whose corners carry the plane's own depth. The ground pass draws them
//! with ordinary depth testing: depth interpolated across a flat polygon is exact, so the fragment shader never
//! writes depth and early depth tests reject every ground pixel behind a cube before it is shaded. The corners
//! all lie inside the view (clip space x, y in −1..1, depth 0..1), so no triangle reaches the clipper (lavapipe in
//! Mesa 22 drops clipped triangles in multiview layers other than the first).

use glam::{Mat4, Vec2, Vec3, Vec4};

/// Vertices of the ground's triangle list per view: the screen rectangle cut by two lines has at most six
/// corners, a fan of four triangles. Unused triangles are collapsed onto one point (they cover no pixel).
pub(crate) const GROUND_VERTICES: usize = 12;

/// Most corners the cut rectangle can have.
const MAX_CORNERS: usize = 6;

/// The ground's triangles for the view whose world → clip transform is `clip_from_world` (Vulkan clip space,
/// depth 0..1): `GROUND_VERTICES` clip positions of points on the plane, not divided by w, so the shaders
/// interpolate the world position along them with perspective. Each lies on or inside the view volume exactly.
pub(crate) fn ground_triangles(clip_from_world: Mat4) -> [[f32; 4]; GROUND_VERTICES] {
    let world_from_clip = clip_from_world.inverse();
    let mut corners = [Vec2::ZERO; MAX_CORNERS + 2];
    let mut n = 4;
    corners[..4].copy_from_slice(&[
        Vec2::new(-1.0, -1.0),
        Vec2::new(1.0, -1.0),
        Vec2::new(1.0, 1.0),
        Vec2::new(-1.0, 1.0),
    ]);
    // A pixel sees the ground when its ray starts above it (the near plane's point has y ≥ 0) and ends at or below
    // it (the far plane's point has y ≤ 0). Each is a line on screen: a point's homogeneous y is affine in the
    // pixel's x and y, and its w keeps one sign over the view.
    for (depth, keep_sign) in [(0.0f32, 1.0f32), (1.0, -1.0)] {
        let w_sign = (world_from_clip * Vec4::new(0.0, 0.0, depth, 1.0)).w.signum();
        let side = |p: Vec2| keep_sign * w_sign * (world_from_clip * Vec4::new(p.x, p.y, depth, 1.0)).y;
        n = cut(&mut corners, n, side);
    }
    let mut out = [[0.0f32; 4]; GROUND_VERTICES];
    if n < 3 {
        return out;
    }
    let clip = |p: Vec2| {
        let near = world_from_clip * Vec4::new(p.x, p.y, 0.0, 1.0);
        let far = world_from_clip * Vec4::new(p.x, p.y, 1.0, 1.0);
        let (near, far) = (near.truncate() / near.w, far.truncate() / far.w);
        let ray = far - near;
        let t = if ray.y < 0.0 {
            (-near.y / ray.y).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let hit: Vec3 = near + ray * t;
        let c = clip_from_world * hit.extend(1.0);
        // x and y from the corner itself (exactly ±w on the view's edges), depth kept within 0..w.
        [p.x * c.w, p.y * c.w, c.z.clamp(0.0, c.w), c.w]
    };
    for t in 0..GROUND_VERTICES / 3 {
        // A fan from corner 0; past the last triangle, every vertex is corner 0 (a point).
        let (b, c) = if t + 2 < n { (t + 1, t + 2) } else { (0, 0) };
        out[3 * t] = clip(corners[0]);
        out[3 * t + 1] = clip(corners[b]);
        out[3 * t + 2] = clip(corners[c]);
    }
    out
}

/// Cuts the convex polygon `corners[..n]` to where `side` (affine) is ≥ 0; returns the new corner count.
fn cut(corners: &mut [Vec2; MAX_CORNERS + 2], n: usize, side: impl Fn(Vec2) -> f32) -> usize {
    let mut kept = [Vec2::ZERO; MAX_CORNERS + 2];
    let mut m = 0;
    for i in 0..n {
        let (a, b) = (corners[i], corners[(i + 1) % n]);
        let (sa, sb) = (side(a), side(b));
        if sa >= 0.0 && m < kept.len() {
            kept[m] = a;
            m += 1;
        }
        if (sa >= 0.0) != (sb >= 0.0) && m < kept.len() {
            kept[m] = a + (b - a) * (sa / (sa - sb));
            m += 1;
        }
    }
    *corners = kept;
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::scene_data::View;

    /// Where a pixel's ray meets the ground, found per pixel as the old full-screen ground shader did.
    fn ray_hit(clip_from_world: Mat4, p: Vec2) -> Option<f32> {
        let inv = clip_from_world.inverse();
        let near = inv * Vec4::new(p.x, p.y, 0.0, 1.0);
        let far = inv * Vec4::new(p.x, p.y, 1.0, 1.0);
        let (near, far) = (near.truncate() / near.w, far.truncate() / far.w);
        let ray = far - near;
        let t = -near.y / ray.y;
        (ray.y < 0.0 && (0.0..=1.0).contains(&t)).then(|| {
            let c = clip_from_world * (near + ray * t).extend(1.0);
            c.z / c.w
        })
    }

    /// Whether `p` lies in one of the triangles, and the depth interpolated there.
    fn covered(tris: &[[f32; 4]; GROUND_VERTICES], p: Vec2) -> Option<f32> {
        for t in tris.chunks(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|v| Vec3::new(v[0], v[1], v[2]) / v[3]);
            let area = (b.x - a.x) * (c.y - a.y) - (c.x - a.x) * (b.y - a.y);
            if area.abs() < 1e-9 {
                continue;
            }
            let w1 = ((p.x - a.x) * (c.y - a.y) - (c.x - a.x) * (p.y - a.y)) / area;
            let w2 = ((b.x - a.x) * (p.y - a.y) - (p.x - a.x) * (b.y - a.y)) / area;
            let w0 = 1.0 - w1 - w2;
            if w0 >= -1e-5 && w1 >= -1e-5 && w2 >= -1e-5 {
                return Some(w0 * a.z + w1 * b.z + w2 * c.z);
            }
        }
        None
    }

    #[test]
    fn the_triangles_cover_exactly_the_pixels_that_see_the_ground_at_the_planes_depth() {
        let views = [
            View::look_at(Vec3::new(0.0, 1.7, 8.0), Vec3::new(0.0, 1.0, 0.0), 1.75, 0.93),
            View::look_at(Vec3::new(3.0, 12.0, 30.0), Vec3::ZERO, 1.0, 1.78),
            View::look_at(Vec3::new(0.0, 5.0, 0.0), Vec3::new(0.0, 0.0, 0.01), 1.2, 1.0),
            View::look_at(Vec3::new(0.0, 1.0, 0.0), Vec3::new(0.3, 8.0, -2.0), 1.2, 1.0),
        ];
        for (k, view) in views.iter().enumerate() {
            let m = view.clip_from_world();
            let tris = ground_triangles(m);
            let mut seen = 0;
            for i in 0..41 {
                for j in 0..41 {
                    // Off the grid lines a little, so no sample sits exactly on an edge.
                    let p = Vec2::new(-0.99 + i as f32 * 0.0493, -0.99 + j as f32 * 0.0491);
                    let (want, got) = (ray_hit(m, p), covered(&tris, p));
                    match (want, got) {
                        (Some(w), Some(g)) => {
                            seen += 1;
                            assert!((w - g).abs() < 1e-4, "view {k} at {p}: depth {g}, the plane's {w}");
                        }
                        (None, None) => {}
                        _ => {
                            // Only a pixel within a hair of the horizon or the near line may differ.
                            let near_edge = [(0.004, 0.0), (-0.004, 0.0), (0.0, 0.004), (0.0, -0.004)]
                                .iter()
                                .any(|&(dx, dy)| ray_hit(m, p + Vec2::new(dx, dy)).is_some() != want.is_some());
                            assert!(near_edge, "view {k} at {p}: plane {want:?}, triangles {got:?}");
                        }
                    }
                }
            }
            let expected_some = k != 3;
            assert_eq!(seen > 0, expected_some, "view {k} sees the ground: {seen} samples");
        }
    }

    #[test]
    fn every_corner_lies_inside_the_view() {
        let view = View::look_at(Vec3::new(2.0, 1.7, 8.0), Vec3::new(-1.0, 0.5, 0.0), 1.75, 1.2);
        for v in ground_triangles(view.clip_from_world()) {
            let w = v[3];
            assert!(
                w > 0.0 && v[0].abs() <= w && v[1].abs() <= w && (0.0..=w).contains(&v[2]),
                "{v:?}"
            );
        }
    }
}
