//! Suggested bindings: which controller input drives which of our actions, per interaction profile. The runtime
//! picks the profile that matches the controllers in hand (and may remap them; SteamVR lets the user). A profile
//! the runtime rejects (an unknown path) is skipped with a warning, not fatal: the others still bind.
//!
//! Squeeze is a float action: analog grips (Touch, Index) give their value, click grips give 0 or 1. The Khronos
//! simple controller has only select and menu, so grab is on select/click there.

/// Our actions, one per input a hand has. The names are also the OpenXR action names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    GripPose,
    AimPose,
    Squeeze,
    Trigger,
    Thumbstick,
    Haptic,
}

impl ActionKind {
    pub const ALL: [ActionKind; 6] = [
        ActionKind::GripPose,
        ActionKind::AimPose,
        ActionKind::Squeeze,
        ActionKind::Trigger,
        ActionKind::Thumbstick,
        ActionKind::Haptic,
    ];

    /// The OpenXR action name (lower case, no spaces) and a localized name.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            ActionKind::GripPose => ("grip_pose", "Hand grip pose"),
            ActionKind::AimPose => ("aim_pose", "Hand aim pose"),
            ActionKind::Squeeze => ("squeeze", "Grab (squeeze)"),
            ActionKind::Trigger => ("trigger", "Trigger"),
            ActionKind::Thumbstick => ("thumbstick", "Thumbstick"),
            ActionKind::Haptic => ("haptic", "Haptic pulse"),
        }
    }
}

/// One suggested binding: an action and the input path under `/user/hand/{left,right}` that drives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suggestion {
    pub action: ActionKind,
    pub subpath: &'static str,
}

/// The bindings for one interaction profile, applied to both hands.
#[derive(Clone, Copy, Debug)]
pub struct ProfileBindings {
    pub profile: &'static str,
    pub suggestions: &'static [Suggestion],
}

const fn s(action: ActionKind, subpath: &'static str) -> Suggestion {
    Suggestion { action, subpath }
}

use ActionKind::{AimPose, GripPose, Haptic, Squeeze, Thumbstick, Trigger};

/// The profiles we suggest bindings for, and the paths (as the OpenXR registry defines them).
pub const PROFILES: &[ProfileBindings] = &[
    ProfileBindings {
        profile: "/interaction_profiles/khr/simple_controller",
        suggestions: &[
            s(GripPose, "/input/grip/pose"),
            s(AimPose, "/input/aim/pose"),
            s(Squeeze, "/input/select/click"),
            s(Haptic, "/output/haptic"),
        ],
    },
    ProfileBindings {
        profile: "/interaction_profiles/oculus/touch_controller",
        suggestions: &[
            s(GripPose, "/input/grip/pose"),
            s(AimPose, "/input/aim/pose"),
            s(Squeeze, "/input/squeeze/value"),
            s(Trigger, "/input/trigger/value"),
            s(Thumbstick, "/input/thumbstick"),
            s(Haptic, "/output/haptic"),
        ],
    },
    ProfileBindings {
        profile: "/interaction_profiles/valve/index_controller",
        suggestions: &[
            s(GripPose, "/input/grip/pose"),
            s(AimPose, "/input/aim/pose"),
            s(Squeeze, "/input/squeeze/value"),
            s(Trigger, "/input/trigger/value"),
            s(Thumbstick, "/input/thumbstick"),
            s(Haptic, "/output/haptic"),
        ],
    },
    ProfileBindings {
        profile: "/interaction_profiles/htc/vive_controller",
        suggestions: &[
            s(GripPose, "/input/grip/pose"),
            s(AimPose, "/input/aim/pose"),
            s(Squeeze, "/input/squeeze/click"),
            s(Trigger, "/input/trigger/value"),
            s(Thumbstick, "/input/trackpad"),
            s(Haptic, "/output/haptic"),
        ],
    },
    ProfileBindings {
        profile: "/interaction_profiles/microsoft/motion_controller",
        suggestions: &[
            s(GripPose, "/input/grip/pose"),
            s(AimPose, "/input/aim/pose"),
            s(Squeeze, "/input/squeeze/click"),
            s(Trigger, "/input/trigger/value"),
            s(Thumbstick, "/input/thumbstick"),
            s(Haptic, "/output/haptic"),
        ],
    },
];

/// The two hands' top-level paths, left first (the order of [`super::actions::HandInput`] arrays).
pub const HAND_PATHS: [&str; 2] = ["/user/hand/left", "/user/hand/right"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_binds_both_poses_a_grab_and_haptics() {
        for p in PROFILES {
            for needed in [GripPose, AimPose, Squeeze, Haptic] {
                assert!(
                    p.suggestions.iter().any(|s| s.action == needed),
                    "{} has no binding for {needed:?}",
                    p.profile
                );
            }
        }
    }

    #[test]
    fn the_simple_controller_grabs_on_select() {
        let simple = PROFILES
            .iter()
            .find(|p| p.profile.ends_with("khr/simple_controller"))
            .expect("simple controller profile");
        let grab = simple.suggestions.iter().find(|s| s.action == Squeeze).unwrap();
        assert_eq!(grab.subpath, "/input/select/click");
    }

    #[test]
    fn the_five_asked_for_profiles_are_there_once_and_paths_are_well_formed() {
        for wanted in [
            "khr/simple_controller",
            "oculus/touch_controller",
            "valve/index_controller",
            "htc/vive_controller",
            "microsoft/motion_controller",
        ] {
            let n = PROFILES.iter().filter(|p| p.profile.ends_with(wanted)).count();
            assert_eq!(n, 1, "{wanted}");
        }
        for p in PROFILES {
            assert!(p.profile.starts_with("/interaction_profiles/"));
            for s in p.suggestions {
                assert!(
                    s.subpath.starts_with("/input/") || s.subpath.starts_with("/output/"),
                    "{}",
                    s.subpath
                );
                assert!(!s.subpath.ends_with('/') && !s.subpath.contains(' '), "{}", s.subpath);
                let poses = matches!(s.action, GripPose | AimPose);
                assert_eq!(poses, s.subpath.ends_with("/pose"), "{} {:?}", s.subpath, s.action);
                assert_eq!(s.action == Haptic, s.subpath == "/output/haptic");
            }
            // One binding per action per profile: two would fight over the same action.
            for a in ActionKind::ALL {
                assert!(p.suggestions.iter().filter(|s| s.action == a).count() <= 1);
            }
        }
    }
}
