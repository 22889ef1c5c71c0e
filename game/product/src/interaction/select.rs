//! Selection: which cube a hand points at (a ray against every cube's oriented box) or reaches (the nearest cube
//! whose box is within reach of the hand). Plain functions over the world's bodies in id order, so ties go to
//! the lower id and the answer depends on nothing but the inputs.

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyId, BodyKind, World};

use crate::avatar::Ray;

/// Distance (m) along `ray` at which it enters the box at `center` with `rotation` and `half` extents; 0 when the
/// origin is inside; `None` when it misses or the box is beyond `ray.max_distance`. Slab test in the box's frame.
pub fn ray_box(ray: &Ray, center: Vec3, rotation: Quat, half: Vec3) -> Option<f32> {
    let inv = rotation.conjugate();
    let origin = inv * (ray.origin - center);
    let dir = inv * ray.direction.normalize_or_zero();
    let (mut enter, mut exit) = (0.0f32, ray.max_distance);
    for axis in 0..3 {
        let (o, d, h) = (origin[axis], dir[axis], half[axis]);
        if d.abs() < 1e-12 {
            if o.abs() > h {
                return None;
            }
            continue;
        }
        let (t0, t1) = ((-h - o) / d, (h - o) / d);
        enter = enter.max(t0.min(t1));
        exit = exit.min(t0.max(t1));
        if enter > exit {
            return None;
        }
    }
    Some(enter)
}

/// Distance (m) from `point` to the box's surface; 0 inside.
pub fn point_box_distance(point: Vec3, center: Vec3, rotation: Quat, half: Vec3) -> f32 {
    let local = rotation.conjugate() * (point - center);
    (local.abs() - half).max(Vec3::ZERO).length()
}

/// A body a hand could select: dynamic and in the simulation, or kinematic and in `also` (cubes our own hands
/// hold, so one hand can take a cube from the other).
fn selectable(world: &World, id: BodyId, also: &[Option<BodyId>]) -> bool {
    match (world.kind(id), world.is_removed(id)) {
        (Ok(BodyKind::Dynamic), Ok(false)) => true,
        (Ok(BodyKind::Kinematic), Ok(false)) => also.contains(&Some(id)),
        _ => false,
    }
}

/// The nearest selectable body `ray` hits and the distance to it.
pub fn raycast(world: &World, ray: &Ray, also: &[Option<BodyId>]) -> Option<(BodyId, f32)> {
    let mut best: Option<(BodyId, f32)> = None;
    for id in world.body_ids() {
        if !selectable(world, id, also) {
            continue;
        }
        let (Ok(state), Ok(half)) = (world.state(id), world.half_extents(id)) else {
            continue;
        };
        if let Some(t) = ray_box(ray, state.position, state.rotation, half) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((id, t));
            }
        }
    }
    best
}

/// The selectable body whose box is nearest `point`, if within `reach` (m).
pub fn nearest_within(world: &World, point: Vec3, reach: f32, also: &[Option<BodyId>]) -> Option<(BodyId, f32)> {
    let mut best: Option<(BodyId, f32)> = None;
    for id in world.body_ids() {
        if !selectable(world, id, also) {
            continue;
        }
        let (Ok(state), Ok(half)) = (world.state(id), world.half_extents(id)) else {
            continue;
        };
        // Cheap reject before the rotation: farther than the bounding sphere plus reach.
        if state.position.distance_squared(point) > (half.length() + reach).powi(2) {
            continue;
        }
        let d = point_box_distance(point, state.position, state.rotation, half);
        if d <= reach && best.is_none_or(|(_, b)| d < b) {
            best = Some((id, d));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    fn ray(origin: Vec3, direction: Vec3) -> Ray {
        Ray {
            origin,
            direction,
            max_distance: 100.0,
        }
    }

    #[test]
    fn ray_box_hits_faces_and_misses_beside() {
        let half = Vec3::splat(0.5);
        let hit = ray_box(
            &ray(Vec3::new(-5.0, 0.0, 0.0), Vec3::X),
            Vec3::ZERO,
            Quat::IDENTITY,
            half,
        );
        assert_eq!(hit, Some(4.5));
        let miss = ray_box(
            &ray(Vec3::new(-5.0, 0.6, 0.0), Vec3::X),
            Vec3::ZERO,
            Quat::IDENTITY,
            half,
        );
        assert_eq!(miss, None);
        // Turned 45° about y the corner sticks out to 0.707 along x.
        let turned = Quat::from_rotation_y(std::f32::consts::FRAC_PI_4);
        let t = ray_box(&ray(Vec3::new(-5.0, 0.0, 0.0), Vec3::X * 3.0), Vec3::ZERO, turned, half).unwrap();
        assert!((t - (5.0 - 0.5f32.sqrt())).abs() < 1e-5, "{t}");
        assert_eq!(
            ray_box(&ray(Vec3::ZERO, Vec3::Y), Vec3::ZERO, Quat::IDENTITY, half),
            Some(0.0)
        );
        let short = Ray {
            max_distance: 4.0,
            ..ray(Vec3::new(-5.0, 0.0, 0.0), Vec3::X)
        };
        assert_eq!(ray_box(&short, Vec3::ZERO, Quat::IDENTITY, half), None);
        assert_eq!(
            ray_box(
                &ray(Vec3::new(5.0, 0.0, 0.0), Vec3::X),
                Vec3::ZERO,
                Quat::IDENTITY,
                half
            ),
            None
        );
    }

    #[test]
    fn point_distance_is_zero_inside_and_euclidean_outside() {
        let half = Vec3::splat(0.5);
        assert_eq!(
            point_box_distance(Vec3::splat(0.2), Vec3::ZERO, Quat::IDENTITY, half),
            0.0
        );
        let d = point_box_distance(Vec3::new(1.5, 1.5, 0.0), Vec3::ZERO, Quat::IDENTITY, half);
        assert!((d - 2.0f32.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn raycast_takes_the_nearest_and_skips_kinematic_bodies_not_ours() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let far = world
            .add_body(&BodyDesc {
                position: Vec3::new(5.0, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let near = world
            .add_body(&BodyDesc {
                position: Vec3::new(2.0, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let r = ray(Vec3::new(0.0, 0.5, 0.0), Vec3::X);
        assert_eq!(raycast(&world, &r, &[]), Some((near, 1.5)));
        world.set_kind(near, BodyKind::Kinematic).unwrap();
        assert_eq!(raycast(&world, &r, &[]), Some((far, 4.5)));
        assert_eq!(raycast(&world, &r, &[Some(near)]), Some((near, 1.5)));
        assert_eq!(
            nearest_within(&world, Vec3::new(4.6, 0.5, 0.0), 0.2, &[]),
            Some((far, 0.0))
        );
        assert_eq!(nearest_within(&world, Vec3::new(3.2, 0.5, 0.0), 0.2, &[]), None);
    }
}
