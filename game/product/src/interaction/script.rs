//! Scripted hands for bots and tests (and `tumble vr`'s scripted grab mode): a hand moves through keyframes
//! (step, pose, grip), linearly in between, so "move over the tower, squeeze, lift, swing, let go" is a few lines.
//! Sampling a script allocates nothing.

use glam::{Quat, Vec3};

use crate::avatar::{AvatarInput, HandInput, Pose, HAND_COUNT};

/// One point of a script: at `step` the hand is at `pose` with `grip`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    pub step: u32,
    pub pose: Pose,
    pub grip: f32,
}

/// Why a script was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScriptError {
    #[error("a hand script needs at least one keyframe")]
    Empty,
    #[error("keyframe {index}: step {step} does not come after the previous keyframe's")]
    NotIncreasing { index: usize, step: u32 },
    #[error("keyframe {index}: pose or grip is not finite, or the rotation is not a unit quaternion")]
    BadValue { index: usize },
}

/// A hand's path through keyframes. Before the first keyframe the hand is at the first, after the last at the last.
#[derive(Clone, Debug, PartialEq)]
pub struct HandScript {
    keys: Vec<Keyframe>,
}

impl HandScript {
    /// Checks that steps strictly increase and every value is sane.
    pub fn new(keys: Vec<Keyframe>) -> Result<HandScript, ScriptError> {
        if keys.is_empty() {
            return Err(ScriptError::Empty);
        }
        for (index, k) in keys.iter().enumerate() {
            if !k.pose.is_sane() || !k.grip.is_finite() {
                return Err(ScriptError::BadValue { index });
            }
            if index > 0 && k.step <= keys[index - 1].step {
                return Err(ScriptError::NotIncreasing { index, step: k.step });
            }
        }
        Ok(HandScript { keys })
    }

    /// A script built step by step: `HandScript::starting_at(p).grip_to(10, 1.0).move_to(60, q)...`.
    pub fn starting_at(position: Vec3) -> ScriptBuilder {
        ScriptBuilder {
            keys: vec![Keyframe {
                step: 0,
                pose: Pose::new(position, Quat::IDENTITY),
                grip: 0.0,
            }],
        }
    }

    /// The step of the last keyframe.
    pub fn last_step(&self) -> u32 {
        self.keys.last().map_or(0, |k| k.step)
    }

    /// The hand at `step`: pose and grip interpolated between the keyframes around it.
    pub fn sample(&self, step: u32) -> HandInput {
        let next = self.keys.partition_point(|k| k.step <= step);
        let (pose, grip) = if next == 0 {
            (self.keys[0].pose, self.keys[0].grip)
        } else if next == self.keys.len() {
            let k = self.keys[next - 1];
            (k.pose, k.grip)
        } else {
            let (a, b) = (self.keys[next - 1], self.keys[next]);
            let t = (step - a.step) as f32 / (b.step - a.step) as f32;
            let pose = Pose::new(
                a.pose.position.lerp(b.pose.position, t),
                a.pose.rotation.lerp(b.pose.rotation, t),
            );
            (pose, a.grip + (b.grip - a.grip) * t)
        };
        HandInput {
            tracked: true,
            pose,
            grip,
            ..HandInput::default()
        }
    }
}

/// Builds a [`HandScript`] from the previous keyframe: each call adds one keyframe at an absolute step.
#[derive(Clone, Debug)]
pub struct ScriptBuilder {
    keys: Vec<Keyframe>,
}

impl ScriptBuilder {
    fn last(&self) -> Keyframe {
        *self.keys.last().expect("a builder starts with one keyframe")
    }

    /// Moves to `position` by `step`, keeping rotation and grip.
    pub fn move_to(mut self, step: u32, position: Vec3) -> Self {
        let last = self.last();
        self.keys.push(Keyframe {
            step,
            pose: Pose::new(position, last.pose.rotation),
            ..last
        });
        self
    }

    /// Turns to `rotation` by `step`, keeping position and grip.
    pub fn turn_to(mut self, step: u32, rotation: Quat) -> Self {
        let last = self.last();
        self.keys.push(Keyframe {
            step,
            pose: Pose::new(last.pose.position, rotation),
            ..last
        });
        self
    }

    /// Changes the grip to `grip` by `step`, staying put.
    pub fn grip_to(mut self, step: u32, grip: f32) -> Self {
        let last = self.last();
        self.keys.push(Keyframe { step, grip, ..last });
        self
    }

    /// Moves to `position` and changes the grip to `grip` by `step` (let go mid-swing, for a throw).
    pub fn key(mut self, step: u32, position: Vec3, grip: f32) -> Self {
        let last = self.last();
        self.keys.push(Keyframe {
            step,
            pose: Pose::new(position, last.pose.rotation),
            grip,
        });
        self
    }

    /// Stays as it is until `step`.
    pub fn hold_until(mut self, step: u32) -> Self {
        let last = self.last();
        self.keys.push(Keyframe { step, ..last });
        self
    }

    pub fn build(self) -> Result<HandScript, ScriptError> {
        HandScript::new(self.keys)
    }
}

/// Scripts for a whole avatar: hands without a script are untracked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AvatarScript {
    pub head: Option<Pose>,
    pub hands: [Option<HandScript>; HAND_COUNT],
}

impl AvatarScript {
    pub fn sample(&self, step: u32) -> AvatarInput {
        let mut input = AvatarInput {
            head: self.head,
            ..AvatarInput::default()
        };
        for (hand, script) in input.hands.iter_mut().zip(&self.hands) {
            if let Some(script) = script {
                *hand = script.sample(step);
            }
        }
        input
    }

    /// The step after which nothing changes any more.
    pub fn last_step(&self) -> u32 {
        self.hands
            .iter()
            .flatten()
            .map(HandScript::last_step)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_interpolate_between_keyframes_and_hold_at_the_ends() {
        let script = HandScript::starting_at(Vec3::ZERO)
            .move_to(10, Vec3::new(1.0, 0.0, 0.0))
            .grip_to(20, 1.0)
            .build()
            .unwrap();
        assert_eq!(script.sample(5).pose.position, Vec3::new(0.5, 0.0, 0.0));
        assert_eq!(script.sample(15).grip, 0.5);
        assert_eq!(script.sample(15).pose.position, Vec3::X);
        assert_eq!(script.sample(1000).grip, 1.0);
        assert_eq!(script.last_step(), 20);
        assert!(script.sample(0).tracked);
    }

    #[test]
    fn bad_scripts_are_refused() {
        assert_eq!(HandScript::new(vec![]), Err(ScriptError::Empty));
        let back = HandScript::starting_at(Vec3::ZERO)
            .move_to(5, Vec3::X)
            .move_to(5, Vec3::Y)
            .build();
        assert_eq!(back, Err(ScriptError::NotIncreasing { index: 2, step: 5 }));
        let nan = HandScript::starting_at(Vec3::ZERO).grip_to(3, f32::NAN).build();
        assert_eq!(nan, Err(ScriptError::BadValue { index: 1 }));
    }
}
