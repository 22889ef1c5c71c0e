//! A player's tracked body as plain data: the head and two hands, as the input of one fixed step gives them
//! (OpenXR, mouse and gamepad, or a bot script), plus what the hands' recent motion says about their velocity.
//!
//! Every source fills the same [`AvatarInput`] once per 90 Hz step; [`Avatar::update`] checks it (a non-finite or
//! absurd pose means "not tracked this step": the hand keeps its last pose) and keeps a short history of per-step
//! velocities per hand, so a throw uses the hand's motion averaged over the last few steps rather than one noisy
//! step. Nothing here allocates.

use glam::{Quat, Vec3};

/// Hands per avatar.
pub const HAND_COUNT: usize = 2;
/// Steps the throw velocity is averaged over: 5 steps is 56 ms at 90 Hz — long enough to smooth tracking noise
/// and mouse quantization, short enough to follow the flick of a throw.
pub const VELOCITY_WINDOW_STEPS: usize = 5;
/// Hand positions farther than this from the origin on any axis are taken as tracking garbage (m).
pub const MAX_HAND_POSITION_M: f32 = 1000.0;

/// A position and an orientation (unit quaternion).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub position: Vec3,
    pub rotation: Quat,
}

impl Default for Pose {
    fn default() -> Self {
        Pose::IDENTITY
    }
}

impl Pose {
    pub const IDENTITY: Pose = Pose {
        position: Vec3::ZERO,
        rotation: Quat::IDENTITY,
    };

    pub fn new(position: Vec3, rotation: Quat) -> Pose {
        Pose { position, rotation }
    }

    /// `self ∘ local`: a pose given in this pose's frame, in the parent frame.
    pub fn compose(&self, local: &Pose) -> Pose {
        Pose {
            position: self.position + self.rotation * local.position,
            rotation: (self.rotation * local.rotation).normalize(),
        }
    }

    /// `self⁻¹ ∘ world`: a parent-frame pose in this pose's frame.
    pub fn relative(&self, world: &Pose) -> Pose {
        let inv = self.rotation.conjugate();
        Pose {
            position: inv * (world.position - self.position),
            rotation: (inv * world.rotation).normalize(),
        }
    }

    /// Finite, within [`MAX_HAND_POSITION_M`], and a unit rotation give or take 1 %.
    pub fn is_sane(&self) -> bool {
        self.position.is_finite()
            && self.position.abs().max_element() <= MAX_HAND_POSITION_M
            && self.rotation.is_finite()
            && (self.rotation.length() - 1.0).abs() <= 0.01
    }
}

/// Which hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HandSide {
    Left = 0,
    Right = 1,
}

impl HandSide {
    pub const BOTH: [HandSide; HAND_COUNT] = [HandSide::Left, HandSide::Right];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn other(self) -> HandSide {
        match self {
            HandSide::Left => HandSide::Right,
            HandSide::Right => HandSide::Left,
        }
    }
}

/// A selection ray: the desktop's mouse ray, or a VR controller's aim pose. `direction` need not be normalised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray {
    pub origin: Vec3,
    pub direction: Vec3,
    /// Cubes farther along the ray than this are not selected (m).
    pub max_distance: f32,
}

impl Ray {
    /// The point `t` metres along the (normalised) ray.
    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + self.direction.normalize_or_zero() * t
    }
}

/// One hand's input for one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandInput {
    /// False when the source lost the hand this step (the hand then keeps its last pose, and keeps what it holds).
    pub tracked: bool,
    /// The grip pose: where a held cube is attached.
    pub pose: Pose,
    /// How closed the hand is, 0 (open) to 1 (squeezed); grabbing uses hysteresis on it.
    pub grip: f32,
    /// Select along this ray (desktop mouse, VR aim); `None` selects the nearest cube within reach of the hand.
    pub ray: Option<Ray>,
    /// Velocities the source measured itself (OpenXR runtimes often do); `None` estimates them from pose history.
    pub linear_velocity: Option<Vec3>,
    pub angular_velocity: Option<Vec3>,
}

impl Default for HandInput {
    fn default() -> Self {
        Self {
            tracked: false,
            pose: Pose::IDENTITY,
            grip: 0.0,
            ray: None,
            linear_velocity: None,
            angular_velocity: None,
        }
    }
}

/// Everything a player's input gives for one step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AvatarInput {
    pub head: Option<Pose>,
    pub hands: [HandInput; HAND_COUNT],
}

/// One hand as the interaction sees it after [`Avatar::update`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandState {
    pub tracked: bool,
    pub pose: Pose,
    /// Clamped to 0..=1; a non-finite input keeps the previous value.
    pub grip: f32,
    pub ray: Option<Ray>,
    /// Averaged over the last [`VELOCITY_WINDOW_STEPS`] (or the source's own value), m/s and rad/s.
    pub linear_velocity: Vec3,
    pub angular_velocity: Vec3,
    history: VelocityHistory,
}

impl Default for HandState {
    fn default() -> Self {
        Self {
            tracked: false,
            pose: Pose::IDENTITY,
            grip: 0.0,
            ray: None,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            history: VelocityHistory::default(),
        }
    }
}

/// The last few per-step velocities of a hand, in a ring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct VelocityHistory {
    linear: [Vec3; VELOCITY_WINDOW_STEPS],
    angular: [Vec3; VELOCITY_WINDOW_STEPS],
    next: usize,
    len: usize,
    /// The pose the next step's velocity is measured from; `None` until the hand is first tracked.
    last: Option<Pose>,
}

impl VelocityHistory {
    fn push(&mut self, pose: Pose, dt: f32) {
        if let Some(last) = self.last {
            self.linear[self.next] = (pose.position - last.position) / dt;
            self.angular[self.next] = angular_step(last.rotation, pose.rotation) / dt;
            self.next = (self.next + 1) % VELOCITY_WINDOW_STEPS;
            self.len = (self.len + 1).min(VELOCITY_WINDOW_STEPS);
        }
        self.last = Some(pose);
    }

    fn average(&self) -> (Vec3, Vec3) {
        if self.len == 0 {
            return (Vec3::ZERO, Vec3::ZERO);
        }
        let n = self.len as f32;
        let sum = |v: &[Vec3]| v[..self.len].iter().fold(Vec3::ZERO, |a, &b| a + b) / n;
        (sum(&self.linear), sum(&self.angular))
    }

    /// A lost hand restarts its history: the jump back into tracking is not a velocity.
    fn forget(&mut self) {
        self.len = 0;
        self.last = None;
    }
}

/// The rotation vector (axis × angle, rad) turning `from` into `to`, for the small angles of one step. Plain
/// arithmetic (2·xyz of the shortest difference), no trig, so the same on every platform: at 10 rad/s one 90 Hz
/// step turns 0.11 rad and the approximation is off by 0.05 %.
pub fn angular_step(from: Quat, to: Quat) -> Vec3 {
    let mut dq = to * from.conjugate();
    if dq.w < 0.0 {
        dq = -dq;
    }
    Vec3::new(dq.x, dq.y, dq.z) * 2.0
}

/// A player's head and hands.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Avatar {
    pub head: Pose,
    pub hands: [HandState; HAND_COUNT],
}

impl Avatar {
    pub fn hand(&self, side: HandSide) -> &HandState {
        &self.hands[side.index()]
    }

    /// Takes one step's input (`dt` is the fixed step, s). Insane poses count as untracked; grips are clamped.
    pub fn update(&mut self, input: &AvatarInput, dt: f32) {
        if let Some(head) = input.head.filter(Pose::is_sane) {
            self.head = Pose::new(head.position, head.rotation.normalize());
        }
        for (hand, input) in self.hands.iter_mut().zip(&input.hands) {
            hand.update(input, dt);
        }
    }
}

impl HandState {
    /// Forgets the motion measured so far (the tracked poses jumped: a recentring): no velocity until the next
    /// samples, so a held cube is not thrown by the jump.
    pub fn forget_motion(&mut self) {
        self.history.forget();
        self.linear_velocity = Vec3::ZERO;
        self.angular_velocity = Vec3::ZERO;
    }

    fn update(&mut self, input: &HandInput, dt: f32) {
        if input.grip.is_finite() {
            self.grip = input.grip.clamp(0.0, 1.0);
        }
        self.ray = input.ray.filter(|r| {
            r.origin.is_finite()
                && r.direction.is_finite()
                && r.direction.length_squared() > 0.0
                && r.max_distance > 0.0
        });
        self.tracked = input.tracked && input.pose.is_sane();
        if !self.tracked {
            // Held still where it was last seen: no velocity, nothing thrown by a tracking glitch.
            self.history.forget();
            self.linear_velocity = Vec3::ZERO;
            self.angular_velocity = Vec3::ZERO;
            return;
        }
        self.pose = Pose::new(input.pose.position, input.pose.rotation.normalize());
        self.history.push(self.pose, dt);
        let (linear, angular) = self.history.average();
        let finite = |v: Option<Vec3>| v.filter(|v| v.is_finite());
        self.linear_velocity = finite(input.linear_velocity).unwrap_or(linear);
        self.angular_velocity = finite(input.angular_velocity).unwrap_or(angular);
    }
}

/// Hand input `t` (0..1) of the way from `a` to `b`: poses blended, grip and rays from `b` (a button is pressed
/// or not), tracking from `b`. A hand that was not tracked in `a` starts at `b`.
pub fn blend_input(a: &AvatarInput, b: &AvatarInput, t: f32) -> AvatarInput {
    let mut out = *b;
    for (hand, (from, to)) in out.hands.iter_mut().zip(a.hands.iter().zip(&b.hands)) {
        if from.tracked && to.tracked {
            *hand = HandInput {
                pose: Pose::new(
                    from.pose.position.lerp(to.pose.position, t),
                    from.pose.rotation.lerp(to.pose.rotation, t),
                ),
                ..*to
            };
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: f32 = crate::STEP_S as f32;

    fn tracked(position: Vec3, rotation: Quat) -> AvatarInput {
        let mut input = AvatarInput::default();
        input.hands[1] = HandInput {
            tracked: true,
            pose: Pose::new(position, rotation),
            grip: 0.5,
            ..HandInput::default()
        };
        input
    }

    #[test]
    fn velocity_is_the_average_over_the_window() {
        let mut avatar = Avatar::default();
        let spin = Vec3::new(0.0, 3.0, 0.0);
        for step in 0..20 {
            let t = step as f32 * DT;
            avatar.update(
                &tracked(Vec3::new(2.0 * t, 1.0, -t), Quat::from_rotation_y(spin.y * t)),
                DT,
            );
        }
        let hand = avatar.hand(HandSide::Right);
        assert!(
            hand.linear_velocity.distance(Vec3::new(2.0, 0.0, -1.0)) < 1e-3,
            "{}",
            hand.linear_velocity
        );
        assert!(hand.angular_velocity.distance(spin) < 1e-2, "{}", hand.angular_velocity);
        // The left hand was never tracked: no velocity.
        assert_eq!(avatar.hand(HandSide::Left).linear_velocity, Vec3::ZERO);
    }

    /// A recentring moves the tracked hand 2 m between two samples; once the motion is forgotten, that jump is not
    /// a throw.
    #[test]
    fn a_jump_after_forgetting_the_motion_is_no_velocity() {
        let mut avatar = Avatar::default();
        for step in 0..10 {
            avatar.update(&tracked(Vec3::new(step as f32 * 0.01, 1.0, 0.0), Quat::IDENTITY), DT);
        }
        assert!(avatar.hand(HandSide::Right).linear_velocity.x > 0.5);
        avatar.hands[1].forget_motion();
        assert_eq!(avatar.hand(HandSide::Right).linear_velocity, Vec3::ZERO);
        avatar.update(&tracked(Vec3::new(2.1, 1.0, 0.0), Quat::IDENTITY), DT);
        let v = avatar.hand(HandSide::Right).linear_velocity.length();
        assert!(v < 1e-6, "{v} m/s from a 2 m jump");
        // Without forgetting, the same jump reads as a throw.
        let mut other = Avatar::default();
        for step in 0..10 {
            other.update(&tracked(Vec3::new(step as f32 * 0.01, 1.0, 0.0), Quat::IDENTITY), DT);
        }
        other.update(&tracked(Vec3::new(2.1, 1.0, 0.0), Quat::IDENTITY), DT);
        assert!(other.hand(HandSide::Right).linear_velocity.length() > 10.0);
    }

    #[test]
    fn a_sudden_stop_fades_out_over_the_window() {
        let mut avatar = Avatar::default();
        for step in 0..10 {
            avatar.update(&tracked(Vec3::new(step as f32 * 0.1, 1.0, 0.0), Quat::IDENTITY), DT);
        }
        avatar.update(&tracked(Vec3::new(0.9, 1.0, 0.0), Quat::IDENTITY), DT);
        let v = avatar.hand(HandSide::Right).linear_velocity.x;
        let expected = 9.0 * (VELOCITY_WINDOW_STEPS as f32 - 1.0) / VELOCITY_WINDOW_STEPS as f32;
        assert!((v - expected).abs() < 1e-3, "{v} vs {expected}");
    }

    #[test]
    fn garbage_input_is_untracked_and_changes_no_pose() {
        let mut avatar = Avatar::default();
        avatar.update(&tracked(Vec3::new(0.0, 1.0, 0.0), Quat::IDENTITY), DT);
        for bad in [
            tracked(Vec3::NAN, Quat::IDENTITY),
            tracked(Vec3::splat(1e6), Quat::IDENTITY),
            tracked(Vec3::ONE, Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
        ] {
            avatar.update(&bad, DT);
            let hand = avatar.hand(HandSide::Right);
            assert!(!hand.tracked);
            assert_eq!(hand.pose.position, Vec3::new(0.0, 1.0, 0.0));
            assert_eq!(hand.linear_velocity, Vec3::ZERO);
        }
        let mut nan_grip = tracked(Vec3::ONE, Quat::IDENTITY);
        nan_grip.hands[1].grip = f32::NAN;
        avatar.update(&nan_grip, DT);
        assert_eq!(avatar.hand(HandSide::Right).grip, 0.5);
    }

    #[test]
    fn runtime_velocities_win_over_the_estimate() {
        let mut avatar = Avatar::default();
        let mut input = tracked(Vec3::ZERO, Quat::IDENTITY);
        input.hands[1].linear_velocity = Some(Vec3::X);
        input.hands[1].angular_velocity = Some(Vec3::Z);
        avatar.update(&input, DT);
        assert_eq!(avatar.hand(HandSide::Right).linear_velocity, Vec3::X);
        assert_eq!(avatar.hand(HandSide::Right).angular_velocity, Vec3::Z);
    }

    #[test]
    fn compose_and_relative_are_inverse() {
        let hand = Pose::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_z(0.7));
        let cube = Pose::new(Vec3::new(-1.0, 0.5, 2.0), Quat::from_rotation_x(0.3));
        let back = hand.compose(&hand.relative(&cube));
        assert!(back.position.distance(cube.position) < 1e-5);
        assert!(back.rotation.dot(cube.rotation).abs() > 1.0 - 1e-6);
    }
}
