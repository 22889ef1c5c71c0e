//! How deep bodies overlap, measured from their poses alone. Not part of a step: a check on the contacts for tests
//! and the regression runner, which see through it any overlap that no manifold reports.

use glam::Vec3;

use super::box_box::overlap_depth;
use super::box_plane::OrientedBox;

/// Half of a box's axis-aligned bounds (m): what it reaches from its centre along x, y and z.
fn reach(b: &OrientedBox) -> Vec3 {
    b.axes.x_axis.abs() * b.half.x + b.axes.y_axis.abs() * b.half.y + b.axes.z_axis.abs() * b.half.z
}

/// Deepest overlap (m, ≥ 0) between any two of `boxes`, or a box and the ground plane `y = ground`: the smallest
/// distance that would separate the worst pair. Sort and sweep along x, so a pile costs about one box test per
/// touching pair. Allocates; never call it from a step.
pub fn deepest_overlap(boxes: &[OrientedBox], ground: Option<f32>) -> f32 {
    let reaches: Vec<Vec3> = boxes.iter().map(reach).collect();
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    // Ties keep index order, so the sweep is the same on every run (not that the maximum could differ).
    order.sort_by(|&i, &j| (boxes[i].center.x - reaches[i].x).total_cmp(&(boxes[j].center.x - reaches[j].x)));
    let mut deepest = 0.0f32;
    for (k, &i) in order.iter().enumerate() {
        if let Some(g) = ground {
            deepest = deepest.max(g - (boxes[i].center.y - reaches[i].y));
        }
        let max_x = boxes[i].center.x + reaches[i].x;
        for &j in &order[k + 1..] {
            if boxes[j].center.x - reaches[j].x > max_x {
                break;
            }
            let apart = (boxes[i].center - boxes[j].center).abs() - reaches[i] - reaches[j];
            if apart.y < 0.0 && apart.z < 0.0 {
                deepest = deepest.max(overlap_depth(&boxes[i], &boxes[j]));
            }
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Mat3, Quat};

    fn cube(center: Vec3, rot: Quat) -> OrientedBox {
        OrientedBox {
            center,
            axes: Mat3::from_quat(rot),
            half: Vec3::splat(0.5),
        }
    }

    #[test]
    fn touching_boxes_do_not_overlap_and_sunk_ones_do_by_the_separating_distance() {
        let ground = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let on_top = cube(Vec3::new(0.2, 1.5, 0.0), Quat::IDENTITY);
        assert_eq!(deepest_overlap(&[ground, on_top], Some(0.0)), 0.0);
        let sunk = cube(Vec3::new(0.2, 1.47, 0.1), Quat::from_rotation_y(0.4));
        let d = deepest_overlap(&[ground, sunk], Some(0.0));
        assert!((d - 0.03).abs() < 1e-5, "{d}");
        let in_ground = cube(Vec3::new(5.0, 0.49, 0.0), Quat::IDENTITY);
        let d = deepest_overlap(&[ground, on_top, in_ground], Some(0.0));
        assert!((d - 0.01).abs() < 1e-5, "{d}");
    }

    #[test]
    fn an_edge_driven_into_a_face_overlaps_by_its_depth() {
        // A cube turned 45° about z, its lowest edge 2 cm into the top face of the cube below.
        let h = 0.5 * std::f32::consts::SQRT_2;
        let below = cube(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let tilted = cube(
            Vec3::new(0.0, 1.0 + h - 0.02, 0.0),
            Quat::from_rotation_z(std::f32::consts::FRAC_PI_4),
        );
        let d = deepest_overlap(&[below, tilted], None);
        assert!((d - 0.02).abs() < 1e-4, "{d}");
    }
}
