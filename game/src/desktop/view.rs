//! What one frame shows, as plain data for the renderer: every cube's interpolated pose, size, colour and
//! highlight, the hands, and the camera. Filled into reused buffers, so a running frame allocates nothing.

use glam::{Mat4, Quat, Vec3};
use tumble_engine::physics::{BodyId, World};

use super::interpolate::PoseBuffer;
use crate::avatar::{Avatar, HandSide};
use crate::interaction::Interaction;

/// Authority colours (linear RGB): white for the default; blue, red, green, yellow for players 1-4.
pub const AUTHORITY_COLOURS: [[f32; 3]; 5] = [
    [0.9, 0.9, 0.9],
    [0.2, 0.4, 1.0],
    [1.0, 0.25, 0.2],
    [0.25, 0.85, 0.3],
    [1.0, 0.85, 0.2],
];

/// How a cube is highlighted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Highlight {
    #[default]
    None,
    /// A hand would grab it now.
    Hovered,
    /// In a hand.
    Held,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeDraw {
    pub position: Vec3,
    pub rotation: Quat,
    pub half_extents: Vec3,
    pub colour: [f32; 3],
    pub highlight: Highlight,
    pub at_rest: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandDraw {
    pub position: Vec3,
    pub rotation: Quat,
    pub grip: f32,
    pub tracked: bool,
}

/// One frame's scene.
#[derive(Clone, Debug, Default)]
pub struct FrameView {
    pub cubes: Vec<CubeDraw>,
    pub hands: Vec<HandDraw>,
    pub view: Mat4,
    pub projection: Mat4,
    /// Both eyes side by side (the stereo preview).
    pub stereo: bool,
}

impl FrameView {
    /// Refills the view from the simulation; `alpha` blends the last two steps' poses.
    pub fn fill(&mut self, world: &World, poses: &PoseBuffer, alpha: f32, avatar: &Avatar, interaction: &Interaction) {
        self.cubes.clear();
        for (i, id) in world.body_ids().enumerate().take(poses.len()) {
            if world.is_removed(id).unwrap_or(true) {
                continue;
            }
            let (position, rotation) = poses.interpolated(i, alpha);
            self.cubes.push(CubeDraw {
                position,
                rotation,
                half_extents: world.half_extents(id).unwrap_or(Vec3::splat(0.5)),
                colour: AUTHORITY_COLOURS[0],
                highlight: highlight(interaction, id),
                at_rest: world.state(id).is_ok_and(|s| s.at_rest),
            });
        }
        self.hands.clear();
        for side in HandSide::BOTH {
            let hand = avatar.hand(side);
            self.hands.push(HandDraw {
                position: hand.pose.position,
                rotation: hand.pose.rotation,
                grip: hand.grip,
                tracked: hand.tracked,
            });
        }
    }
}

fn highlight(interaction: &Interaction, id: BodyId) -> Highlight {
    if interaction.is_held(id) {
        Highlight::Held
    } else if HandSide::BOTH.iter().any(|&s| interaction.hand(s).hovered == Some(id)) {
        Highlight::Hovered
    } else {
        Highlight::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{AvatarInput, HandInput, Pose};
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    #[test]
    fn hovered_and_held_cubes_are_highlighted() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        for x in [0.0, 3.0] {
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
        let marks: Vec<_> = view.cubes.iter().map(|c| c.highlight).collect();
        assert_eq!(marks, vec![Highlight::Hovered, Highlight::Held]);
        assert_eq!(view.hands.len(), 2);
        assert_eq!(view.hands[1].grip, 1.0);
    }
}
