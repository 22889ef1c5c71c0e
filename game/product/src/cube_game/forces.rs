//! What a step's input does to the world, as impulses (force × dt) through `World::apply_impulse`: the player
//! cube rolls under a push at its centre plus a torque about the horizontal axis across the push (friction with
//! the ground turns the rest into tumbling), hovers on a spring above the ground and blows the cubes under it
//! away, or pulls the cubes near it in (katamari: they stay simulated, held only by the pull and their contacts).
//! Every scan over the cubes runs in id order, so the same world and inputs give the same bits.

use glam::Vec3;
use tumble_engine::physics::{BodyId, PhysicsError, World};

use super::input::CubeInput;

/// Push on the player cube while a direction is held (m/s², i.e. N per kg).
pub const ROLL_ACCEL_M_S2: f32 = 16.0;
/// Spin about the axis across the push, for tumbling (rad/s²).
pub const ROLL_SPIN_RAD_S2: f32 = 14.0;
/// No more push once the player moves this fast along the held direction (m/s).
pub const MAX_ROLL_SPEED_M_S: f32 = 7.0;
/// Height of the player cube's centre above the ground while hovering (m).
pub const HOVER_HEIGHT_M: f32 = 2.6;
/// Hover spring stiffness (m/s² per m below the hover height) and damping (m/s² per m/s of vertical speed).
pub const HOVER_STIFFNESS_S2: f32 = 40.0;
pub const HOVER_DAMPING_S: f32 = 7.0;
/// The spring lifts with at most this acceleration (m/s²): three g, so a hover from the ground is a hop.
pub const MAX_HOVER_ACCEL_M_S2: f32 = 30.0;
/// Cubes within this distance of the point under a hovering player are blown away (m)…
pub const BLOW_RADIUS_M: f32 = 6.0;
/// …with this acceleration at the centre, falling off linearly to none at the radius (m/s²).
pub const BLOW_ACCEL_M_S2: f32 = 28.0;
/// Cubes within this distance of a pulling player's centre are pulled towards it (m)…
pub const PULL_RADIUS_M: f32 = 4.5;
/// …with this acceleration, whatever their distance (m/s²).
pub const PULL_ACCEL_M_S2: f32 = 14.0;

/// One player's pushes for one step. `forward` is the player's view direction on the ground (unit, y = 0).
/// `may_push(id)` says whether another cube may be pushed (the authority model pushes only the cubes its peer
/// simulates for everyone; every other model pushes all).
pub fn apply_input(
    world: &mut World,
    player: BodyId,
    forward: Vec3,
    input: CubeInput,
    players: &[BodyId],
    mut may_push: impl FnMut(BodyId) -> bool,
) -> Result<(), PhysicsError> {
    if world.is_removed(player)? {
        return Ok(());
    }
    let dt = world.config().dt;
    roll(world, player, forward, input, dt)?;
    if input.has(CubeInput::HOVER) {
        hover(world, player, dt, players, &mut may_push)?;
    }
    if input.has(CubeInput::PULL) {
        pull(world, player, dt, players, &mut may_push)?;
    }
    Ok(())
}

/// The cubes `apply_input` would push for this input, in id order, appended to `out` (the player cube rolling
/// pushes only itself): what a peer claims before it pushes.
pub fn pushed_cubes(
    world: &World,
    player: BodyId,
    input: CubeInput,
    players: &[BodyId],
    out: &mut Vec<BodyId>,
) -> Result<(), PhysicsError> {
    if world.is_removed(player)? {
        return Ok(());
    }
    let position = world.state(player)?.position;
    if input.has(CubeInput::HOVER) {
        if let Some(ground) = world.config().ground_height {
            cubes_near(world, blow_centre(position, ground), BLOW_RADIUS_M, players, |id| {
                out.push(id)
            })?;
        }
    }
    if input.has(CubeInput::PULL) {
        cubes_near(world, position, PULL_RADIUS_M, players, |id| {
            // Blown and pulled at once: listed once.
            if !out.contains(&id) {
                out.push(id);
            }
        })?;
    }
    Ok(())
}

fn roll(world: &mut World, player: BodyId, forward: Vec3, input: CubeInput, dt: f32) -> Result<(), PhysicsError> {
    let (x, y) = input.direction();
    if (x, y) == (0, 0) {
        return Ok(());
    }
    let right = forward.cross(Vec3::Y);
    let dir = (right * x as f32 + forward * y as f32).normalize();
    let s = world.state(player)?;
    if s.linear_velocity.dot(dir) >= MAX_ROLL_SPEED_M_S {
        return Ok(());
    }
    let mass = world.mass(player)?;
    // Torque about the axis a cube rolling along `dir` turns about (up × dir), scaled by the inertia of a cube of
    // this mass and size so the spin rate does not depend on either.
    let half = world.half_extents(player)?.x;
    let inertia = mass * (2.0 * half) * (2.0 * half) / 6.0;
    let spin_axis = Vec3::Y.cross(dir);
    world.apply_impulse(
        player,
        dir * (ROLL_ACCEL_M_S2 * mass * dt),
        spin_axis * (ROLL_SPIN_RAD_S2 * inertia * dt),
    )
}

/// Holds the player on a spring above the ground straight below it (the ground plane: cubes under it do not
/// count), and blows away the cubes near that point, pushing each along the line from the point to it.
fn hover(
    world: &mut World,
    player: BodyId,
    dt: f32,
    players: &[BodyId],
    may_push: &mut impl FnMut(BodyId) -> bool,
) -> Result<(), PhysicsError> {
    let Some(ground) = world.config().ground_height else {
        return Ok(());
    };
    let s = world.state(player)?;
    let height = s.position.y - ground;
    let g = -world.config().gravity.y;
    let lift = (g + HOVER_STIFFNESS_S2 * (HOVER_HEIGHT_M - height) - HOVER_DAMPING_S * s.linear_velocity.y)
        .clamp(0.0, MAX_HOVER_ACCEL_M_S2);
    let mass = world.mass(player)?;
    world.apply_impulse(player, Vec3::Y * (lift * mass * dt), Vec3::ZERO)?;
    for_cubes_near(
        world,
        blow_centre(s.position, ground),
        BLOW_RADIUS_M,
        players,
        may_push,
        |world, id, offset, d| {
            let push = BLOW_ACCEL_M_S2 * (1.0 - d / BLOW_RADIUS_M) * world.mass(id)? * dt;
            world.apply_impulse(id, offset / d * push, Vec3::ZERO)
        },
    )
}

/// Pulls every cube near the player towards its centre.
fn pull(
    world: &mut World,
    player: BodyId,
    dt: f32,
    players: &[BodyId],
    may_push: &mut impl FnMut(BodyId) -> bool,
) -> Result<(), PhysicsError> {
    let centre = world.state(player)?.position;
    for_cubes_near(
        world,
        centre,
        PULL_RADIUS_M,
        players,
        may_push,
        |world, id, offset, d| {
            let pull = PULL_ACCEL_M_S2 * world.mass(id)? * dt;
            world.apply_impulse(id, -offset / d * pull, Vec3::ZERO)
        },
    )
}

/// Calls `f(world, id, offset from centre, distance)` for every non-player cube whose centre lies within `radius`
/// of `centre` (and not on it) and that `may_push` allows, in id order.
fn for_cubes_near(
    world: &mut World,
    centre: Vec3,
    radius: f32,
    players: &[BodyId],
    may_push: &mut impl FnMut(BodyId) -> bool,
    mut f: impl FnMut(&mut World, BodyId, Vec3, f32) -> Result<(), PhysicsError>,
) -> Result<(), PhysicsError> {
    for i in 0..world.body_count() as u32 {
        let id = BodyId(i);
        if let Some((offset, d)) = near(world, id, centre, radius, players)? {
            if may_push(id) {
                f(world, id, offset, d)?;
            }
        }
    }
    Ok(())
}

/// Calls `f(id)` for every non-player cube within `radius` of `centre`, in id order.
fn cubes_near(
    world: &World,
    centre: Vec3,
    radius: f32,
    players: &[BodyId],
    mut f: impl FnMut(BodyId),
) -> Result<(), PhysicsError> {
    for i in 0..world.body_count() as u32 {
        if near(world, BodyId(i), centre, radius, players)?.is_some() {
            f(BodyId(i));
        }
    }
    Ok(())
}

/// The point the blow pushes away from: on the ground straight below the player at `position`.
fn blow_centre(position: Vec3, ground: f32) -> Vec3 {
    Vec3::new(position.x, ground, position.z)
}

/// Cube `id`'s offset from `centre` and distance, when it is a cube the blow or pull reaches: not a player, not
/// removed, its centre within `radius` (and not on `centre`, where the push has no direction).
fn near(
    world: &World,
    id: BodyId,
    centre: Vec3,
    radius: f32,
    players: &[BodyId],
) -> Result<Option<(Vec3, f32)>, PhysicsError> {
    if players.contains(&id) || world.is_removed(id)? {
        return Ok(None);
    }
    let offset = world.state(id)?.position - centre;
    let d = offset.length();
    Ok((d < radius && d > 1e-3).then_some((offset, d)))
}
