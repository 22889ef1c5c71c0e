//! What one frame shows, in the renderer's plain types: every cube's interpolated pose, size, authority colour and
//! highlight flags, the hands as small paddles, and one view (two in the stereo preview). Filled into reused
//! buffers, so a running frame allocates nothing.

use glam::Vec3;
use tumble_engine::input::FlyCamera;
use tumble_engine::physics::{BodyId, World};
use tumble_engine::render::{
    authority_rgb, CubeInstance, View, CUBE_HELD, CUBE_RESTING, CUBE_SELECTED, MAX_CUBES, PLAYER_RGB,
};

use super::interpolate::PoseBuffer;
use crate::avatar::{Avatar, HandSide};
use crate::interaction::Interaction;

/// The hands drawn as flat paddles this big (half extents, m), in player 1's colour.
pub const HAND_HALF_EXTENTS_M: Vec3 = Vec3::new(0.045, 0.025, 0.09);
/// Eye separation of the stereo preview (m): a typical interpupillary distance.
pub const EYE_SEPARATION_M: f32 = 0.064;

/// One frame's scene.
#[derive(Clone, Debug, Default)]
pub struct FrameView {
    /// Cubes, then the tracked hands.
    pub cubes: Vec<CubeInstance>,
    /// One view, or two (left, right) in the stereo preview.
    pub views: Vec<View>,
}

impl FrameView {
    /// Refills the view from the simulation; `alpha` blends the last two steps' poses.
    pub fn fill(&mut self, world: &World, poses: &PoseBuffer, alpha: f32, avatar: &Avatar, interaction: &Interaction) {
        self.cubes.clear();
        for (i, id) in world.body_ids().enumerate().take(poses.len()) {
            if world.is_removed(id).unwrap_or(true) || self.cubes.len() + 2 >= MAX_CUBES {
                continue;
            }
            let (position, rotation) = poses.interpolated(i, alpha);
            let resting = world.state(id).is_ok_and(|s| s.at_rest);
            self.cubes.push(CubeInstance {
                position,
                rotation,
                half_extents: world.half_extents(id).unwrap_or(Vec3::splat(0.5)),
                colour: authority_rgb(0),
                flags: flags(interaction, id) | if resting { CUBE_RESTING } else { 0 },
            });
        }
        for side in HandSide::BOTH {
            let hand = avatar.hand(side);
            if hand.tracked {
                self.cubes.push(CubeInstance {
                    position: hand.pose.position,
                    rotation: hand.pose.rotation,
                    half_extents: HAND_HALF_EXTENTS_M,
                    colour: PLAYER_RGB[0],
                    flags: 0,
                });
            }
        }
    }

    /// The camera's view, or two eyes side by side; `aspect` is one view's width / height.
    pub fn set_camera(&mut self, camera: &FlyCamera, aspect: f32, stereo: bool) {
        self.views.clear();
        let (eye, target) = (camera.position, camera.position + camera.forward());
        let fov = tumble_engine::input::camera::FOV_Y_RAD;
        if stereo {
            self.views
                .extend(View::stereo_pair(eye, target, fov, aspect, EYE_SEPARATION_M));
        } else {
            self.views.push(View::look_at(eye, target, fov, aspect));
        }
    }
}

fn flags(interaction: &Interaction, id: BodyId) -> u32 {
    if interaction.is_held(id) {
        CUBE_HELD
    } else if HandSide::BOTH.iter().any(|&s| interaction.hand(s).hovered == Some(id)) {
        CUBE_SELECTED
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{AvatarInput, HandInput, Pose};
    use glam::Quat;
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    #[test]
    fn hovered_and_held_cubes_are_flagged_and_hands_drawn() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        for x in [0.0, 3.0, 6.0] {
            world
                .add_body(&BodyDesc {
                    position: Vec3::new(x, 0.5, 0.0),
                    ..BodyDesc::default()
                })
                .unwrap();
        }
        let mut poses = PoseBuffer::default();
        poses.reset(&world);
        let (mut avatar, mut interaction) = (Avatar::default(), Interaction::default());
        let mut input = AvatarInput::default();
        input.hands[0] = HandInput {
            tracked: true,
            pose: Pose::new(Vec3::new(0.0, 1.05, 0.0), Quat::IDENTITY),
            ..HandInput::default()
        };
        input.hands[1] = HandInput {
            tracked: true,
            pose: Pose::new(Vec3::new(3.0, 1.05, 0.0), Quat::IDENTITY),
            grip: 1.0,
            ..HandInput::default()
        };
        avatar.update(&input, 1.0 / 90.0);
        interaction.update(&mut world, &avatar).unwrap();
        let mut view = FrameView::default();
        view.fill(&world, &poses, 1.0, &avatar, &interaction);
        let flags: Vec<_> = view.cubes.iter().map(|c| c.flags).collect();
        assert_eq!(
            flags,
            vec![CUBE_SELECTED, CUBE_HELD, 0, 0, 0],
            "three cubes, then two hands"
        );
        assert_eq!(view.cubes[4].position, Vec3::new(3.0, 1.05, 0.0));
        assert_eq!(view.cubes[4].half_extents, HAND_HALF_EXTENTS_M);
        view.set_camera(&FlyCamera::default(), 1.5, true);
        assert_eq!(view.views.len(), 2);
        let gap = view.views[0].eye_position().distance(view.views[1].eye_position());
        assert!((gap - EYE_SEPARATION_M).abs() < 1e-4, "{gap}");
        view.set_camera(&FlyCamera::default(), 1.5, false);
        assert_eq!(view.views.len(), 1);
    }
}
