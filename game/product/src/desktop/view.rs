//! What one frame shows, in the renderer's plain types: every cube's interpolated pose, size, authority colour
//! (white without a session; held cubes brighter in one) and highlight flags, the hands as small paddles, and one view (two in the stereo preview). Filled into reused
//! buffers, so a running frame allocates nothing.

use glam::Vec3;
use tumble_engine::input::FlyCamera;
use tumble_engine::physics::World;
use tumble_engine::render::{CubeInstance, View};

use crate::avatar::Avatar;
use crate::draw::{cube_flags, push_hand_boxes, push_remote_avatar_boxes, session_flags, table_tint, SessionDraw};
use crate::interaction::Interaction;
use crate::interpolate::PoseBuffer;

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
    /// Refills the view from the simulation; `alpha` blends the last two steps' poses. `session`: a networked
    /// peer's (cubes tinted by authority, hands in the player's colour, the other players' heads and hands as
    /// played out); `None`: one world, every cube white.
    pub fn fill(
        &mut self,
        world: &World,
        poses: &PoseBuffer,
        alpha: f32,
        avatar: &Avatar,
        interaction: &Interaction,
        session: Option<SessionDraw<'_>>,
    ) {
        self.cubes.clear();
        for (i, id) in world.body_ids().enumerate().take(poses.len()) {
            if world.is_removed(id).unwrap_or(true) {
                continue;
            }
            let (position, rotation) = poses.interpolated(i, alpha);
            let resting = world.state(id).is_ok_and(|s| s.at_rest);
            let (colour, _) = table_tint(session.map(|s| s.table), id.0);
            let flags = cube_flags(interaction, id, resting);
            self.cubes.push(CubeInstance {
                position,
                rotation,
                half_extents: world.half_extents(id).unwrap_or(Vec3::splat(0.5)),
                colour,
                flags: if session.is_some() { session_flags(flags) } else { flags },
            });
        }
        push_hand_boxes(avatar, session.map_or(1, |s| s.player), &mut self.cubes);
        if let Some(s) = session {
            push_remote_avatar_boxes(s.remote, s.player, &mut self.cubes);
        }
    }

    /// Two views from one camera at `(eye, target)`, side by side (the cube game's two machines); `aspect` is one
    /// view's width / height.
    pub fn set_side_by_side(&mut self, (eye, target): (Vec3, Vec3), aspect: f32) {
        self.views.clear();
        let view = View::look_at(eye, target, tumble_engine::input::camera::FOV_Y_RAD, aspect);
        self.views.extend([view, view]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{AvatarInput, HandInput, Pose};
    use crate::draw::HAND_HALF_EXTENTS_M;
    use glam::Quat;
    use tumble_engine::physics::{BodyDesc, WorldConfig};
    use tumble_engine::render::{CUBE_HELD, CUBE_SELECTED};

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
        avatar.update(&input, crate::STEP_S as f32);
        interaction.update(&mut world, &avatar).unwrap();
        let mut view = FrameView::default();
        view.fill(&world, &poses, 1.0, &avatar, &interaction, None);
        let flags: Vec<_> = view.cubes.iter().map(|c| c.flags).collect();
        assert_eq!(
            flags,
            vec![CUBE_SELECTED, CUBE_HELD, 0, 0, 0, 0, 0, 0, 0],
            "three cubes, then two hands of three boxes (handle, ring, trigger)"
        );
        let right_handle = 3 + crate::draw::BOXES_PER_HAND;
        assert_eq!(view.cubes[right_handle].position, Vec3::new(3.0, 1.05, 0.0));
        assert_eq!(view.cubes[right_handle].half_extents, HAND_HALF_EXTENTS_M);
        // The closed hand's ring is lit near white, the open one's a darker shade of the colour.
        let ring = |k: usize| view.cubes[k + 1].colour;
        assert!(ring(right_handle)[0] > 0.9 && ring(3)[2] < view.cubes[3].colour[2]);
        view.set_camera(&FlyCamera::default(), 1.5, true);
        assert_eq!(view.views.len(), 2);
        let gap = view.views[0].eye_position().distance(view.views[1].eye_position());
        assert!((gap - EYE_SEPARATION_M).abs() < 1e-4, "{gap}");
        view.set_camera(&FlyCamera::default(), 1.5, false);
        assert_eq!(view.views.len(), 1);
    }
}
