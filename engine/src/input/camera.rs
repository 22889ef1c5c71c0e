//! A free-flying camera: WASD (and arrows) move in the view's plane, E/Q up and down, Shift faster; dragging with
//! the right mouse button turns it. It also answers where the cursor points (a ray from the eye through a pixel),
//! without reference to any projection convention, so the renderer may flip or reverse depth as it likes.

use glam::{Mat4, Quat, Vec2, Vec3};

use super::state::{Action, InputState};

/// Walking speed (m/s), and the factor Shift gives it.
pub const MOVE_SPEED_M_S: f32 = 4.0;
pub const FAST_FACTOR: f32 = 4.0;
/// Turn per pixel of mouse motion (rad).
pub const LOOK_RAD_PER_PIXEL: f32 = 0.003;
/// Vertical field of view (rad): 60°.
pub const FOV_Y_RAD: f32 = std::f32::consts::FRAC_PI_3;
/// Near and far planes (m): the range every view is drawn with (`crate::view_depth`).
pub use crate::view_depth::{FAR_M, NEAR_M};
/// Pitch stays short of straight up or down, where yaw would lose its meaning.
const MAX_PITCH_RAD: f32 = 1.55;

/// Position, yaw about +y and pitch about the camera's x axis (right-handed, looking down -z at yaw 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlyCamera {
    pub position: Vec3,
    pub yaw: f32,
    pub pitch: f32,
}

impl Default for FlyCamera {
    /// Standing 9 m back from the origin at head height, looking slightly down at the play area.
    fn default() -> Self {
        Self {
            position: Vec3::new(0.0, 4.0, 9.0),
            yaw: 0.0,
            pitch: -0.35,
        }
    }
}

impl FlyCamera {
    /// A camera looking 20° down at a sphere (`center`, `radius` m) from the +z side, far enough back to see it all.
    pub fn framing(center: Vec3, radius: f32) -> FlyCamera {
        let pitch = -0.35f32;
        let distance = radius.max(0.5) / (FOV_Y_RAD * 0.5).sin();
        let back = Quat::from_rotation_x(pitch) * Vec3::Z;
        FlyCamera {
            position: center + back * distance,
            yaw: 0.0,
            pitch,
        }
    }

    pub fn rotation(&self) -> Quat {
        Quat::from_rotation_y(self.yaw) * Quat::from_rotation_x(self.pitch)
    }

    pub fn forward(&self) -> Vec3 {
        self.rotation() * Vec3::NEG_Z
    }

    /// World → view (right-handed, y up, looking down -z).
    pub fn view(&self) -> Mat4 {
        Mat4::look_to_rh(self.position, self.forward(), Vec3::Y)
    }

    /// View → clip with depth 0..1 (Vulkan's range; the renderer flips y if it wants to).
    pub fn projection(&self, aspect: f32) -> Mat4 {
        Mat4::perspective_rh(FOV_Y_RAD, aspect.max(1e-3), NEAR_M, FAR_M)
    }

    /// Moves and turns by one frame of input.
    pub fn update(&mut self, input: &InputState, dt_s: f32) {
        self.yaw -= input.look_delta.x * LOOK_RAD_PER_PIXEL;
        self.pitch = (self.pitch - input.look_delta.y * LOOK_RAD_PER_PIXEL).clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
        let axis = |plus: Action, minus: Action| f32::from(input.is_held(plus)) - f32::from(input.is_held(minus));
        let local = Vec3::new(
            axis(Action::MoveRight, Action::MoveLeft),
            axis(Action::MoveUp, Action::MoveDown),
            -axis(Action::MoveForward, Action::MoveBack),
        );
        let speed = MOVE_SPEED_M_S * if input.is_held(Action::Fast) { FAST_FACTOR } else { 1.0 };
        // Forward and sideways stay level (walking, not flying nose-first), up is world up.
        let flat = Quat::from_rotation_y(self.yaw);
        let step = flat * Vec3::new(local.x, 0.0, local.z) + Vec3::Y * local.y;
        self.position += step.normalize_or_zero() * speed * dt_s;
    }

    /// The ray from the eye through pixel `cursor` of a `size` window (physical pixels, origin top left): origin
    /// and unit direction.
    pub fn ray_through(&self, cursor: Vec2, size: Vec2) -> (Vec3, Vec3) {
        let size = size.max(Vec2::ONE);
        let ndc = Vec2::new(2.0 * cursor.x / size.x - 1.0, 1.0 - 2.0 * cursor.y / size.y);
        let tan = (FOV_Y_RAD * 0.5).tan();
        let local = Vec3::new(ndc.x * tan * size.x / size.y, ndc.y * tan, -1.0);
        (self.position, (self.rotation() * local).normalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_centre_pixel_looks_forward_and_a_corner_projects_back_onto_itself() {
        let camera = FlyCamera {
            position: Vec3::new(1.0, 2.0, 3.0),
            yaw: 0.4,
            pitch: -0.2,
        };
        let size = Vec2::new(800.0, 600.0);
        let (origin, dir) = camera.ray_through(size * 0.5, size);
        assert_eq!(origin, camera.position);
        assert!(dir.distance(camera.forward()) < 1e-6);
        // A point along the ray through pixel (100, 50) projects back to that pixel.
        let (o, d) = camera.ray_through(Vec2::new(100.0, 50.0), size);
        let clip = camera.projection(size.x / size.y) * camera.view() * (o + d * 7.0).extend(1.0);
        let ndc = clip.truncate() / clip.w;
        let pixel = Vec2::new((ndc.x + 1.0) * 0.5 * size.x, (1.0 - ndc.y) * 0.5 * size.y);
        assert!(pixel.distance(Vec2::new(100.0, 50.0)) < 0.01, "{pixel}");
        assert!((0.0..=1.0).contains(&ndc.z), "depth 0..1: {}", ndc.z);
    }

    #[test]
    fn framing_puts_the_sphere_in_view() {
        let (center, radius) = (Vec3::new(3.0, 2.0, -1.0), 6.0);
        let camera = FlyCamera::framing(center, radius);
        assert!(camera.forward().dot((center - camera.position).normalize()) > 0.9999);
        let distance = camera.position.distance(center);
        assert!(
            radius / distance <= (FOV_Y_RAD * 0.5).sin() + 1e-6,
            "the sphere fits the vertical field of view"
        );
    }

    #[test]
    fn wasd_moves_level_and_looking_turns() {
        let mut camera = FlyCamera::default();
        let start = camera.position;
        let mut input = InputState::default();
        input.set(Action::MoveForward, true);
        camera.update(&input, 0.5);
        assert!(
            (camera.position - start).distance(Vec3::new(0.0, 0.0, -2.0)) < 1e-5,
            "level despite the pitch"
        );
        input.set(Action::MoveForward, false);
        input.set(Action::MoveUp, true);
        input.set(Action::Fast, true);
        camera.update(&input, 0.25);
        assert!((camera.position.y - (start.y + 4.0)).abs() < 1e-5);
        input.look_delta = Vec2::new(100.0, 10_000.0);
        camera.update(&InputState::default(), 0.0);
        camera.update(&input, 0.0);
        assert!((camera.yaw + 0.3).abs() < 1e-6);
        assert_eq!(camera.pitch, -MAX_PITCH_RAD);
    }
}
