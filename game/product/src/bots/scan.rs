//! What a bot looks for in the world: loose cubes it may take, the column on a spot, the tallest stack, how high
//! the piles are along a path, flying cubes. Plain loops over the bodies in id order (ties go to the lower id),
//! allocating nothing; the quadratic "is anything on top" check runs only when a bot picks a cube.

use glam::{Mat3, Vec3};
use tumble_engine::physics::{BodyId, BodyKind, BodyState, World};

/// Slower than this (m/s) counts as lying still, whether or not rest detection has said so yet.
pub const STILL_SPEED_M_S: f32 = 0.05;
/// Faster than this (m/s), higher than [`FLYING_MIN_HEIGHT_M`] and awake: in flight.
pub const FLYING_MIN_SPEED_M_S: f32 = 2.5;
pub const FLYING_MIN_HEIGHT_M: f32 = 0.8;
/// A cube whose centre is within this (m, horizontally) of a spot is in the spot's column.
pub const COLUMN_RADIUS_M: f32 = 0.5;

/// A dynamic body still in the simulation, and its state.
pub fn dynamic(world: &World, id: BodyId) -> Option<BodyState> {
    match (world.kind(id), world.is_removed(id)) {
        (Ok(BodyKind::Dynamic), Ok(false)) => world.state(id).ok(),
        _ => None,
    }
}

pub fn is_still(state: &BodyState) -> bool {
    state.at_rest || state.linear_velocity.length() < STILL_SPEED_M_S
}

/// The body's highest point (m): its centre plus the vertical reach of its turned box.
pub fn top_of(world: &World, id: BodyId, state: &BodyState) -> f32 {
    let half = world.half_extents(id).unwrap_or(Vec3::splat(0.5));
    let m = Mat3::from_quat(state.rotation);
    let reach = m.x_axis.y.abs() * half.x + m.y_axis.y.abs() * half.y + m.z_axis.y.abs() * half.z;
    state.position.y + reach
}

/// Horizontal distance (m).
pub fn flat_distance(a: Vec3, b: Vec3) -> f32 {
    Vec3::new(a.x - b.x, 0.0, a.z - b.z).length()
}

/// Another body rests on this one (its centre 0.6–1.4 m higher, within 0.8 m on x and z).
pub fn has_cube_on_top(world: &World, id: BodyId, position: Vec3) -> bool {
    world.body_ids().any(|other| {
        if other == id || world.is_removed(other).unwrap_or(true) {
            return false;
        }
        let Ok(s) = world.state(other) else {
            return false;
        };
        let d = s.position - position;
        d.x.abs() < 0.8 && d.z.abs() < 0.8 && d.y > 0.6 && d.y < 1.4
    })
}

/// The cubes lying on a spot: how many, the highest point, and the centre of the highest cube (the spot itself,
/// at ground height, when none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Column {
    pub count: u32,
    pub top_y: f32,
    pub top_center: Vec3,
}

/// The column of dynamic cubes within [`COLUMN_RADIUS_M`] of `spot` (held cubes are kinematic and not counted).
pub fn column(world: &World, spot: Vec3) -> Column {
    column_below(world, spot, f32::INFINITY)
}

/// The column on `spot` of the cubes whose centres are below `ceiling_y` (m): what is under a cube being put down,
/// not what may have landed on it.
pub fn column_below(world: &World, spot: Vec3, ceiling_y: f32) -> Column {
    let mut column = Column {
        count: 0,
        top_y: 0.0,
        top_center: Vec3::new(spot.x, 0.0, spot.z),
    };
    for id in world.body_ids() {
        let Some(s) = dynamic(world, id) else { continue };
        if flat_distance(s.position, spot) > COLUMN_RADIUS_M || s.position.y >= ceiling_y {
            continue;
        }
        column.count += 1;
        let top = top_of(world, id, &s);
        if top > column.top_y {
            column.top_y = top;
            column.top_center = s.position;
        }
    }
    column
}

/// The highest point of any dynamic body within `corridor_m` of the horizontal segment `from`–`to` (0 when none):
/// how high a hand must go to carry something across without hitting a pile.
pub fn path_top(world: &World, from: Vec3, to: Vec3, corridor_m: f32) -> f32 {
    path_top_below(world, from, to, corridor_m, f32::INFINITY)
}

/// [`path_top`] over the bodies whose centres are below `ceiling_y` (m).
pub fn path_top_below(world: &World, from: Vec3, to: Vec3, corridor_m: f32, ceiling_y: f32) -> f32 {
    let mut top = 0.0f32;
    for id in world.body_ids() {
        let Some(s) = dynamic(world, id) else { continue };
        if s.position.y < ceiling_y && flat_segment_distance(s.position, from, to) <= corridor_m {
            top = top.max(top_of(world, id, &s));
        }
    }
    top
}

/// Horizontal distance from `p` to the segment `a`–`b`.
fn flat_segment_distance(p: Vec3, a: Vec3, b: Vec3) -> f32 {
    let flat = |v: Vec3| Vec3::new(v.x, 0.0, v.z);
    let (p, a, b) = (flat(p), flat(a), flat(b));
    let ab = b - a;
    let t = if ab.length_squared() > 0.0 {
        ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0)
    } else {
        0.0
    };
    p.distance(a + ab * t)
}

/// The still dynamic cube with the highest top that `accept` lets through: the top of the tallest stack.
pub fn tallest(world: &World, accept: impl Fn(BodyId, &BodyState) -> bool) -> Option<(BodyId, BodyState)> {
    let mut best: Option<(BodyId, BodyState, f32)> = None;
    for id in world.body_ids() {
        let Some(s) = dynamic(world, id) else { continue };
        if !is_still(&s) || !accept(id, &s) {
            continue;
        }
        let top = top_of(world, id, &s);
        if best.is_none_or(|(_, _, b)| top > b) {
            best = Some((id, s, top));
        }
    }
    best.map(|(id, s, _)| (id, s))
}

/// The dynamic cube nearest `point` (centre distance) that `accept` lets through.
pub fn nearest(world: &World, point: Vec3, accept: impl Fn(BodyId, &BodyState) -> bool) -> Option<(BodyId, BodyState)> {
    let mut best: Option<(BodyId, BodyState, f32)> = None;
    for id in world.body_ids() {
        let Some(s) = dynamic(world, id) else { continue };
        if !accept(id, &s) {
            continue;
        }
        let d = s.position.distance_squared(point);
        if best.is_none_or(|(_, _, b)| d < b) {
            best = Some((id, s, d));
        }
    }
    best.map(|(id, s, _)| (id, s))
}

/// In flight: awake, fast and off the ground.
pub fn is_flying(state: &BodyState) -> bool {
    !state.at_rest && state.linear_velocity.length() >= FLYING_MIN_SPEED_M_S && state.position.y >= FLYING_MIN_HEIGHT_M
}

/// A world of unit cubes at `positions`, for the bots' tests.
#[cfg(test)]
pub(super) fn world_with(positions: &[Vec3]) -> World {
    use tumble_engine::physics::{BodyDesc, WorldConfig};
    let mut world = World::new(WorldConfig::default()).unwrap();
    for &position in positions {
        world
            .add_body(&BodyDesc {
                position,
                ..BodyDesc::default()
            })
            .unwrap();
    }
    world
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    #[test]
    fn columns_tops_and_paths() {
        let world = world_with(&[
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.0, 1.5, 0.0),
            Vec3::new(0.1, 2.5, 0.0),
            Vec3::new(3.0, 0.5, 0.0),
        ]);
        let c = column(&world, Vec3::ZERO);
        assert_eq!(c.count, 3);
        assert!((c.top_y - 3.0).abs() < 1e-6);
        assert_eq!(c.top_center, Vec3::new(0.1, 2.5, 0.0));
        assert!(has_cube_on_top(&world, BodyId(0), Vec3::new(0.0, 0.5, 0.0)));
        assert!(!has_cube_on_top(&world, BodyId(3), Vec3::new(3.0, 0.5, 0.0)));
        assert_eq!(tallest(&world, |_, _| true).unwrap().0, BodyId(2));
        assert_eq!(tallest(&world, |id, _| id != BodyId(2)).unwrap().0, BodyId(1));
        assert!((path_top(&world, Vec3::new(-5.0, 0.0, 1.0), Vec3::new(5.0, 0.0, 1.0), 1.2) - 3.0).abs() < 1e-6);
        assert!((path_top(&world, Vec3::new(2.0, 0.0, 0.0), Vec3::new(4.0, 0.0, 0.0), 0.5) - 1.0).abs() < 1e-6);
        assert_eq!(
            path_top(&world, Vec3::new(0.0, 0.0, 5.0), Vec3::new(3.0, 0.0, 5.0), 1.0),
            0.0
        );
        let nearest_to = nearest(&world, Vec3::new(2.5, 0.0, 0.0), |_, _| true).unwrap().0;
        assert_eq!(nearest_to, BodyId(3));
    }

    #[test]
    fn a_turned_cube_reaches_higher() {
        let mut world = world_with(&[Vec3::new(0.0, 1.0, 0.0)]);
        let mut s = world.state(BodyId(0)).unwrap();
        s.rotation = Quat::from_rotation_z(std::f32::consts::FRAC_PI_4);
        world.set_state(BodyId(0), &s).unwrap();
        let top = top_of(&world, BodyId(0), &world.state(BodyId(0)).unwrap());
        assert!((top - (1.0 + 0.5 * 2f32.sqrt())).abs() < 1e-5, "{top}");
    }
}
