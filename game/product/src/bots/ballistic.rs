//! Free flight as the physics step integrates it (gravity into the velocity, then the velocity into the position:
//! semi-implicit Euler), so a thrower's aim and a catcher's prediction agree with the world to the millimetre
//! while nothing is hit. Both work in whole steps: a throw reaches its target at the end of a step, a catch is
//! planned for one.

use glam::Vec3;

/// Longest flight a throw is planned for (steps): 3 s at 90 Hz.
pub const MAX_FLIGHT_STEPS: u32 = 270;

/// Where a body at `p0` with velocity `v0` is after `n` steps of `dt` under `gravity`, touching nothing:
/// `p0 + n·dt·v0 + g·dt²·n(n+1)/2`.
pub fn position_after(p0: Vec3, v0: Vec3, gravity: Vec3, dt: f32, n: u32) -> Vec3 {
    let n = n as f32;
    p0 + v0 * (n * dt) + gravity * (dt * dt * n * (n + 1.0) * 0.5)
}

/// Its velocity after `n` steps.
pub fn velocity_after(v0: Vec3, gravity: Vec3, dt: f32, n: u32) -> Vec3 {
    v0 + gravity * (dt * n as f32)
}

/// The launch velocity that carries a body from `from` to `to` in exactly `n` steps (inverse of
/// [`position_after`]).
pub fn velocity_for(from: Vec3, to: Vec3, gravity: Vec3, dt: f32, n: u32) -> Vec3 {
    let nf = n.max(1) as f32;
    (to - from - gravity * (dt * dt * nf * (nf + 1.0) * 0.5)) / (nf * dt)
}

/// A throw from `from` to `to` at about `speed` (m/s): the flattest arc (fewest whole steps) whose launch speed is
/// at most `speed`; if even the slowest arc is faster, that one. Returns the velocity and the steps of flight.
pub fn aim(from: Vec3, to: Vec3, speed: f32, gravity: Vec3, dt: f32) -> (Vec3, u32) {
    let mut slowest = (velocity_for(from, to, gravity, dt, 1), 1);
    for n in 1..=MAX_FLIGHT_STEPS {
        let v = velocity_for(from, to, gravity, dt, n);
        if v.length() <= speed {
            return (v, n);
        }
        if v.length() < slowest.0.length() {
            slowest = (v, n);
        }
    }
    slowest
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::{BodyDesc, BodyState, World, WorldConfig};

    #[test]
    fn an_aimed_throw_arrives_where_the_world_carries_it() {
        let config = WorldConfig {
            ground_height: None,
            ..WorldConfig::default()
        };
        let mut world = World::new(config).unwrap();
        let from = Vec3::new(0.0, 3.0, 5.0);
        let id = world
            .add_body(&BodyDesc {
                position: from,
                ..BodyDesc::default()
            })
            .unwrap();
        let to = Vec3::new(0.5, 2.0, -1.0);
        let (v, n) = aim(from, to, 9.0, config.gravity, config.dt);
        assert!(v.length() <= 9.0 && v.length() > 8.5, "{v} in {n} steps");
        let state = world.state(id).unwrap();
        world
            .set_state(
                id,
                &BodyState {
                    linear_velocity: v,
                    ..state
                },
            )
            .unwrap();
        for _ in 0..n {
            world.step();
        }
        let at = world.state(id).unwrap();
        assert!(at.position.distance(to) < 1e-3, "{} vs {to}", at.position);
        let predicted = velocity_after(v, config.gravity, config.dt, n);
        assert!(at.linear_velocity.distance(predicted) < 1e-3);
        assert!(position_after(from, v, config.gravity, config.dt, n).distance(to) < 1e-4);
    }
}
