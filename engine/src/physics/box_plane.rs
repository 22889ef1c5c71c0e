//! Box against the ground plane: every corner within the speculative margin is a point; at most four are kept.

use glam::{Mat3, Vec3};

use super::manifold::{reduce_to_four, CandidatePoint, MAX_MANIFOLD_POINTS};

/// An oriented box in world space: centre, rotation as a matrix (columns are the box's axes), half extents.
#[derive(Clone, Copy, Debug)]
pub struct OrientedBox {
    pub center: Vec3,
    pub axes: Mat3,
    pub half: Vec3,
}

impl OrientedBox {
    /// Corner `i` (0..8): bit 0, 1, 2 choose the sign along axis x, y, z.
    pub fn corner(&self, i: usize) -> Vec3 {
        let s = |bit: usize, h: f32| if i & (1 << bit) != 0 { h } else { -h };
        self.center
            + self.axes.x_axis * s(0, self.half.x)
            + self.axes.y_axis * s(1, self.half.y)
            + self.axes.z_axis * s(2, self.half.z)
    }
}

/// Contacts between `b` and the plane `dot(plane_normal, p) = plane_offset` (solid below). Writes up to four
/// points (positions halfway between the surfaces, feature id = corner index) and returns their count. The
/// manifold normal, from the box to the plane, is `-plane_normal`.
pub fn collide_box_plane(
    b: &OrientedBox,
    plane_normal: Vec3,
    plane_offset: f32,
    margin: f32,
    out: &mut [CandidatePoint; MAX_MANIFOLD_POINTS],
) -> usize {
    // Quick reject: the box's lowest reach along the normal.
    let reach = b.half.x * b.axes.x_axis.dot(plane_normal).abs()
        + b.half.y * b.axes.y_axis.dot(plane_normal).abs()
        + b.half.z * b.axes.z_axis.dot(plane_normal).abs();
    if plane_normal.dot(b.center) - reach - plane_offset > margin {
        return 0;
    }
    let mut candidates = [CandidatePoint::default(); 8];
    let mut n = 0;
    for i in 0..8 {
        let v = b.corner(i);
        let separation = plane_normal.dot(v) - plane_offset;
        if separation <= margin {
            candidates[n] = CandidatePoint {
                position: v - plane_normal * (0.5 * separation),
                separation,
                id: i as u32,
            };
            n += 1;
        }
    }
    reduce_to_four(&candidates[..n], -plane_normal, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn cube_at(center: Vec3, rot: Quat) -> OrientedBox {
        OrientedBox {
            center,
            axes: Mat3::from_quat(rot),
            half: Vec3::splat(0.5),
        }
    }

    #[test]
    fn resting_cube_has_four_points_at_zero_separation() {
        let mut out = [CandidatePoint::default(); 4];
        let n = collide_box_plane(
            &cube_at(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY),
            Vec3::Y,
            0.0,
            0.02,
            &mut out,
        );
        assert_eq!(n, 4);
        for p in &out[..n] {
            assert!(p.separation.abs() < 1e-6);
            assert!(p.position.y.abs() < 1e-6);
        }
    }

    #[test]
    fn cube_on_an_edge_has_two_points() {
        let rot = Quat::from_rotation_z(std::f32::consts::FRAC_PI_4);
        let h = 0.5 * std::f32::consts::SQRT_2;
        let mut out = [CandidatePoint::default(); 4];
        let n = collide_box_plane(&cube_at(Vec3::new(0.0, h, 0.0), rot), Vec3::Y, 0.0, 0.02, &mut out);
        assert_eq!(n, 2);
    }

    #[test]
    fn sunk_cube_reports_penetration_and_high_cube_nothing() {
        let mut out = [CandidatePoint::default(); 4];
        let n = collide_box_plane(
            &cube_at(Vec3::new(0.0, 0.45, 0.0), Quat::IDENTITY),
            Vec3::Y,
            0.0,
            0.02,
            &mut out,
        );
        assert_eq!(n, 4);
        assert!((out[0].separation + 0.05).abs() < 1e-6);
        assert_eq!(
            collide_box_plane(
                &cube_at(Vec3::new(0.0, 0.6, 0.0), Quat::IDENTITY),
                Vec3::Y,
                0.0,
                0.02,
                &mut out
            ),
            0
        );
    }

    #[test]
    fn corner_down_cube_has_one_point() {
        let rot = Quat::from_rotation_z(0.6) * Quat::from_rotation_x(0.6);
        let b = cube_at(Vec3::new(0.0, 0.0, 0.0), rot);
        let lowest = (0..8).map(|i| b.corner(i).y).fold(f32::INFINITY, f32::min);
        let b = cube_at(Vec3::new(0.0, -lowest, 0.0), rot);
        let mut out = [CandidatePoint::default(); 4];
        let n = collide_box_plane(&b, Vec3::Y, 0.0, 0.01, &mut out);
        assert_eq!(n, 1);
    }
}
