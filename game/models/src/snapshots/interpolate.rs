//! Drawing between snapshots. Positions follow the cubic Hermite curve through both snapshots' positions with
//! their linear velocities as tangents, so a cube moving steadily is drawn moving steadily and a falling one
//! falls along a curve, not a chain of straight segments; rotations are slerped (the angular velocities do not
//! improve it enough at these rates to pay for a rotation spline). Across a missing snapshot the newest one is
//! extrapolated with its velocities, briefly.

use glam::{Quat, Vec3};
use tumble_engine::physics::BodyState;

/// A drawn pose and the velocity the drawing moves it with (for telling smooth motion from a jump).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Drawn {
    pub position: Vec3,
    pub rotation: Quat,
    pub velocity: Vec3,
}

/// The pose a fraction `t` (0..=1) of the way from `a` to `b`, which are `dt_s` apart.
pub fn hermite(a: &BodyState, b: &BodyState, t: f32, dt_s: f32) -> Drawn {
    let (t2, t3) = (t * t, t * t * t);
    let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
    let h10 = t3 - 2.0 * t2 + t;
    let h01 = -2.0 * t3 + 3.0 * t2;
    let h11 = t3 - t2;
    let (ta, tb) = (a.linear_velocity * dt_s, b.linear_velocity * dt_s);
    let position = a.position * h00 + ta * h10 + b.position * h01 + tb * h11;
    // d/dt of the curve, over dt to make it per second.
    let d00 = 6.0 * t2 - 6.0 * t;
    let d10 = 3.0 * t2 - 4.0 * t + 1.0;
    let d01 = -6.0 * t2 + 6.0 * t;
    let d11 = 3.0 * t2 - 2.0 * t;
    let velocity = if dt_s > 0.0 {
        (a.position * d00 + ta * d10 + b.position * d01 + tb * d11) / dt_s
    } else {
        b.linear_velocity
    };
    Drawn {
        position,
        rotation: a.rotation.slerp(b.rotation, t).normalize(),
        velocity,
    }
}

/// `a` carried `e_s` seconds forward by its velocities (gravity left out: a brief guess, corrected by the next
/// snapshot).
pub fn extrapolate(a: &BodyState, e_s: f32) -> Drawn {
    Drawn {
        position: a.position + a.linear_velocity * e_s,
        rotation: (Quat::from_scaled_axis(a.angular_velocity * e_s) * a.rotation).normalize(),
        velocity: a.linear_velocity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(p: Vec3, v: Vec3, q: Quat) -> BodyState {
        BodyState {
            position: p,
            rotation: q,
            linear_velocity: v,
            angular_velocity: Vec3::ZERO,
            at_rest: false,
        }
    }

    #[test]
    fn hermite_meets_both_ends_and_follows_a_thrown_cube_exactly() {
        // A cube thrown at 3 m/s sideways, falling under gravity: a parabola, which a cubic Hermite reproduces.
        let g = Vec3::new(0.0, -9.81, 0.0);
        let v0 = Vec3::new(3.0, 4.0, 0.0);
        let at = |t: f32| state(v0 * t + g * (0.5 * t * t), v0 + g * t, Quat::from_rotation_z(t));
        let dt = 1.0 / 30.0;
        let (a, b) = (at(0.0), at(dt));
        assert!(hermite(&a, &b, 0.0, dt).position.distance(a.position) < 1e-6);
        assert!(hermite(&a, &b, 1.0, dt).position.distance(b.position) < 1e-6);
        for k in 1..10 {
            let t = k as f32 / 10.0;
            let d = hermite(&a, &b, t, dt);
            let truth = at(t * dt);
            assert!(d.position.distance(truth.position) < 1e-5, "at {t}: {d:?}");
            assert!(d.velocity.distance(truth.linear_velocity) < 1e-3, "at {t}: {d:?}");
            assert!(d.rotation.angle_between(truth.rotation) < 1e-3);
        }
        // Linear interpolation through the same two points misses the curve's middle by g·dt²/8.
        let mid = (a.position + b.position) * 0.5;
        assert!(mid.distance(at(dt * 0.5).position) > 9.81 * dt * dt / 8.0 * 0.9);
    }

    #[test]
    fn extrapolation_moves_with_the_velocities() {
        let mut a = state(Vec3::ZERO, Vec3::new(2.0, 0.0, 0.0), Quat::IDENTITY);
        a.angular_velocity = Vec3::new(0.0, 1.0, 0.0);
        let d = extrapolate(&a, 0.5);
        assert!(d.position.distance(Vec3::new(1.0, 0.0, 0.0)) < 1e-6);
        assert!(d.rotation.angle_between(Quat::from_rotation_y(0.5)) < 1e-5);
    }
}
