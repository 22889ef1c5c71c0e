//! The hands as OpenXR actions: one action set with grip and aim poses, squeeze, trigger, thumbstick and a haptic
//! output, each with a left and a right subaction path; suggested bindings from [`super::bindings`]; per frame,
//! both hands read into a fixed [`HandInput`] pair at the predicted display time (no allocation).

use glam::{Quat, Vec2, Vec3};
use openxr as xr;

use super::bindings::{ActionKind, HAND_PATHS, PROFILES};
use super::{xr_err, XrError};

/// Hands per player, left first.
pub const HAND_COUNT: usize = 2;

/// One hand as the runtime reports it at one display time, in the session's play space (STAGE: metres, y up,
/// floor at y = 0). Poses are only meaningful when `tracked`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandInput {
    /// The grip pose (where the hand holds things) has a valid and tracked position and orientation.
    pub tracked: bool,
    pub grip_position: Vec3,
    pub grip_rotation: Quat,
    pub aim_tracked: bool,
    pub aim_position: Vec3,
    pub aim_rotation: Quat,
    /// The runtime's velocities of the grip, where it gives them (m/s, rad/s in play space).
    pub linear_velocity: Option<Vec3>,
    pub angular_velocity: Option<Vec3>,
    /// 0 open … 1 closed; 0 while the session is not focused.
    pub squeeze: f32,
    pub trigger: f32,
    pub thumbstick: Vec2,
}

impl Default for HandInput {
    fn default() -> Self {
        HandInput {
            tracked: false,
            grip_position: Vec3::ZERO,
            grip_rotation: Quat::IDENTITY,
            aim_tracked: false,
            aim_position: Vec3::ZERO,
            aim_rotation: Quat::IDENTITY,
            linear_velocity: None,
            angular_velocity: None,
            squeeze: 0.0,
            trigger: 0.0,
            thumbstick: Vec2::ZERO,
        }
    }
}

/// The action set and its actions, made before the session (bindings must be suggested before attaching).
pub struct Actions {
    pub set: xr::ActionSet,
    pub grip_pose: xr::Action<xr::Posef>,
    pub aim_pose: xr::Action<xr::Posef>,
    pub squeeze: xr::Action<f32>,
    pub trigger: xr::Action<f32>,
    pub thumbstick: xr::Action<xr::Vector2f>,
    pub haptic: xr::Action<xr::Haptic>,
    pub hand_paths: [xr::Path; HAND_COUNT],
    /// Profiles the runtime accepted bindings for.
    pub bound_profiles: usize,
}

impl Actions {
    pub fn new(instance: &xr::Instance) -> Result<Actions, XrError> {
        let set = instance
            .create_action_set("hands", "Hands", 0)
            .map_err(xr_err("xrCreateActionSet"))?;
        let hand_paths = [path(instance, HAND_PATHS[0])?, path(instance, HAND_PATHS[1])?];
        let names = |k: ActionKind| k.names();
        let (n, l) = names(ActionKind::GripPose);
        let grip_pose = set.create_action(n, l, &hand_paths).map_err(xr_err("xrCreateAction"))?;
        let (n, l) = names(ActionKind::AimPose);
        let aim_pose = set.create_action(n, l, &hand_paths).map_err(xr_err("xrCreateAction"))?;
        let (n, l) = names(ActionKind::Squeeze);
        let squeeze = set.create_action(n, l, &hand_paths).map_err(xr_err("xrCreateAction"))?;
        let (n, l) = names(ActionKind::Trigger);
        let trigger = set.create_action(n, l, &hand_paths).map_err(xr_err("xrCreateAction"))?;
        let (n, l) = names(ActionKind::Thumbstick);
        let thumbstick = set.create_action(n, l, &hand_paths).map_err(xr_err("xrCreateAction"))?;
        let (n, l) = names(ActionKind::Haptic);
        let haptic = set.create_action(n, l, &hand_paths).map_err(xr_err("xrCreateAction"))?;
        let mut actions = Actions {
            set,
            grip_pose,
            aim_pose,
            squeeze,
            trigger,
            thumbstick,
            haptic,
            hand_paths,
            bound_profiles: 0,
        };
        actions.bound_profiles = actions.suggest_bindings(instance)?;
        if actions.bound_profiles == 0 {
            return Err(XrError::Unsupported("any of our controller profiles".into()));
        }
        Ok(actions)
    }

    /// Suggests every profile's bindings; returns how many the runtime took.
    fn suggest_bindings(&self, instance: &xr::Instance) -> Result<usize, XrError> {
        let mut accepted = 0;
        for profile in PROFILES {
            let mut bindings = Vec::with_capacity(profile.suggestions.len() * HAND_COUNT);
            for hand in HAND_PATHS {
                for s in profile.suggestions {
                    let p = path(instance, &format!("{hand}{}", s.subpath))?;
                    bindings.push(match s.action {
                        ActionKind::GripPose => xr::Binding::new(&self.grip_pose, p),
                        ActionKind::AimPose => xr::Binding::new(&self.aim_pose, p),
                        ActionKind::Squeeze => xr::Binding::new(&self.squeeze, p),
                        ActionKind::Trigger => xr::Binding::new(&self.trigger, p),
                        ActionKind::Thumbstick => xr::Binding::new(&self.thumbstick, p),
                        ActionKind::Haptic => xr::Binding::new(&self.haptic, p),
                    });
                }
            }
            let profile_path = path(instance, profile.profile)?;
            match instance.suggest_interaction_profile_bindings(profile_path, &bindings) {
                Ok(()) => accepted += 1,
                Err(result) => tracing::warn!(profile = profile.profile, %result, "bindings not accepted"),
            }
        }
        Ok(accepted)
    }
}

/// The per-hand action spaces, made once the session exists.
pub struct HandSpaces {
    pub grip: [xr::Space; HAND_COUNT],
    pub aim: [xr::Space; HAND_COUNT],
}

impl HandSpaces {
    pub fn new(actions: &Actions, session: &xr::Session<xr::Vulkan>) -> Result<HandSpaces, XrError> {
        let space = |a: &xr::Action<xr::Posef>, hand: usize| {
            a.create_space(session, actions.hand_paths[hand], xr::Posef::IDENTITY)
                .map_err(xr_err("xrCreateActionSpace"))
        };
        Ok(HandSpaces {
            grip: [space(&actions.grip_pose, 0)?, space(&actions.grip_pose, 1)?],
            aim: [space(&actions.aim_pose, 0)?, space(&actions.aim_pose, 1)?],
        })
    }
}

/// Reads both hands at `time` in `base`. With `input_active` false (not focused) the poses are still located
/// (the hands are drawn where they are) but grips, triggers and sticks read as released.
pub fn read_hands(
    actions: &Actions,
    spaces: &HandSpaces,
    session: &xr::Session<xr::Vulkan>,
    base: &xr::Space,
    time: xr::Time,
    input_active: bool,
    out: &mut [HandInput; HAND_COUNT],
) -> Result<(), XrError> {
    for (hand, input) in out.iter_mut().enumerate() {
        let (loc, vel) = spaces.grip[hand].relate(base, time).map_err(xr_err("xrLocateSpace"))?;
        input.tracked = pose_tracked(loc.location_flags);
        if input.tracked {
            input.grip_position = vec3(loc.pose.position);
            input.grip_rotation = quat(loc.pose.orientation);
        }
        input.linear_velocity = vel
            .velocity_flags
            .contains(xr::SpaceVelocityFlags::LINEAR_VALID)
            .then(|| vec3(vel.linear_velocity));
        input.angular_velocity = vel
            .velocity_flags
            .contains(xr::SpaceVelocityFlags::ANGULAR_VALID)
            .then(|| vec3(vel.angular_velocity));
        let aim = spaces.aim[hand].locate(base, time).map_err(xr_err("xrLocateSpace"))?;
        input.aim_tracked = pose_tracked(aim.location_flags);
        if input.aim_tracked {
            input.aim_position = vec3(aim.pose.position);
            input.aim_rotation = quat(aim.pose.orientation);
        }
        if input_active {
            let sub = actions.hand_paths[hand];
            input.squeeze = float_state(&actions.squeeze, session, sub)?;
            input.trigger = float_state(&actions.trigger, session, sub)?;
            let stick = actions
                .thumbstick
                .state(session, sub)
                .map_err(xr_err("xrGetActionStateVector2f"))?;
            input.thumbstick = if stick.is_active {
                Vec2::new(stick.current_state.x, stick.current_state.y)
            } else {
                Vec2::ZERO
            };
        } else {
            input.squeeze = 0.0;
            input.trigger = 0.0;
            input.thumbstick = Vec2::ZERO;
        }
    }
    Ok(())
}

/// A short pulse on one hand (`hand` 0 left, 1 right).
pub fn pulse(
    actions: &Actions,
    session: &xr::Session<xr::Vulkan>,
    hand: usize,
    duration_ns: i64,
    amplitude: f32,
) -> Result<(), XrError> {
    let vibration = xr::HapticVibration::new()
        .amplitude(amplitude.clamp(0.0, 1.0))
        .duration(xr::Duration::from_nanos(duration_ns))
        .frequency(xr::FREQUENCY_UNSPECIFIED);
    actions
        .haptic
        .apply_feedback(session, actions.hand_paths[hand], &vibration)
        .map_err(xr_err("xrApplyHapticFeedback"))
}

fn float_state(action: &xr::Action<f32>, session: &xr::Session<xr::Vulkan>, sub: xr::Path) -> Result<f32, XrError> {
    let s = action.state(session, sub).map_err(xr_err("xrGetActionStateFloat"))?;
    Ok(if s.is_active {
        s.current_state.clamp(0.0, 1.0)
    } else {
        0.0
    })
}

/// Position and orientation both valid and tracked (not just inferred from the last known pose).
fn pose_tracked(flags: xr::SpaceLocationFlags) -> bool {
    flags.contains(
        xr::SpaceLocationFlags::POSITION_VALID
            | xr::SpaceLocationFlags::ORIENTATION_VALID
            | xr::SpaceLocationFlags::POSITION_TRACKED
            | xr::SpaceLocationFlags::ORIENTATION_TRACKED,
    )
}

fn path(instance: &xr::Instance, p: &str) -> Result<xr::Path, XrError> {
    instance.string_to_path(p).map_err(xr_err("xrStringToPath"))
}

pub(crate) fn vec3(v: xr::Vector3f) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

pub(crate) fn quat(q: xr::Quaternionf) -> Quat {
    Quat::from_xyzw(q.x, q.y, q.z, q.w)
}
