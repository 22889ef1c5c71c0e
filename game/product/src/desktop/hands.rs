//! Desktop input → a player's hands: the mouse hands sit on the cursor ray (left button: right hand; middle button
//! or G: left hand), the gamepad hands float before the camera (sticks and triggers). Whichever was used last
//! drives the hands. The head is the camera. The result is the same [`AvatarInput`] VR and bots give.

use glam::Vec2;
use tumble_engine::input::{Action, FlyCamera, GamepadHands, GamepadState, HandTarget, InputState, MouseHand};
use tumble_engine::physics::World;

use crate::avatar::{AvatarInput, HandInput, HandSide, Pose, Ray};
use crate::interaction::{select, Interaction};

/// Which device moves the hands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HandSource {
    #[default]
    Mouse,
    Gamepad,
}

impl HandSource {
    pub fn name(self) -> &'static str {
        match self {
            HandSource::Mouse => "mouse",
            HandSource::Gamepad => "gamepad",
        }
    }
}

/// Rays reach this far (m).
pub const RAY_LENGTH_M: f32 = 200.0;

#[derive(Clone, Debug, Default)]
pub struct DesktopHands {
    pub source: HandSource,
    mouse: [MouseHand; 2],
    pad: GamepadHands,
}

impl DesktopHands {
    /// This frame's avatar input. `window_size` in physical pixels; `pointer_free`: the overlay does not want the
    /// mouse (over a panel, clicks are the overlay's).
    #[allow(clippy::too_many_arguments)]
    pub fn avatar_input(
        &mut self,
        camera: &FlyCamera,
        input: &InputState,
        window_size: Vec2,
        pad: &GamepadState,
        world: &World,
        interaction: &Interaction,
        dt_s: f32,
        pointer_free: bool,
    ) -> AvatarInput {
        let grips = [input.is_held(Action::GripLeft), input.is_held(Action::GripRight)];
        if pad.active {
            self.source = HandSource::Gamepad;
        } else if (pointer_free && grips.iter().any(|&g| g)) || !pad.connected {
            self.source = HandSource::Mouse;
        }
        let mut out = AvatarInput {
            head: Some(Pose::new(camera.position, camera.rotation())),
            ..AvatarInput::default()
        };
        match self.source {
            HandSource::Gamepad => {
                let targets = self.pad.targets(camera, pad, dt_s);
                for (hand, target) in out.hands.iter_mut().zip(targets) {
                    *hand = hand_input(&target);
                }
            }
            HandSource::Mouse => {
                let Some(cursor) = input.cursor else {
                    // No cursor in the window: hands untracked, so a held cube stays where it was.
                    for (hand, &grip) in out.hands.iter_mut().zip(&grips) {
                        hand.grip = f32::from(u8::from(grip));
                    }
                    return out;
                };
                let ray = camera.ray_through(cursor, window_size);
                let held = [HandSide::Left, HandSide::Right].map(|s| interaction.hand(s).held.map(|h| h.body));
                let selection = Ray {
                    origin: ray.0,
                    direction: ray.1,
                    max_distance: RAY_LENGTH_M,
                };
                let hit = select::raycast(world, &selection, &held).map(|(_, t)| t);
                for side in HandSide::BOTH {
                    let i = side.index();
                    let grip = grips[i] && (pointer_free || held[i].is_some());
                    let target = self.mouse[i].target(camera, ray, hit, held[i].is_some(), input.wheel, grip);
                    out.hands[i] = hand_input(&target);
                }
            }
        }
        out
    }
}

fn hand_input(target: &HandTarget) -> HandInput {
    HandInput {
        tracked: true,
        pose: Pose::new(target.position, target.rotation),
        grip: target.grip,
        ray: target.ray.map(|(origin, direction)| Ray {
            origin,
            direction,
            max_distance: RAY_LENGTH_M,
        }),
        linear_velocity: None,
        angular_velocity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::Avatar;
    use glam::Vec3;
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    #[test]
    fn the_mouse_grabs_what_is_under_the_cursor_and_the_wheel_pushes_it_away() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let cube = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 0.5, -5.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let camera = FlyCamera {
            position: Vec3::new(0.0, 0.5, 0.0),
            yaw: 0.0,
            pitch: 0.0,
        };
        let size = Vec2::new(800.0, 600.0);
        let mut input = InputState::default();
        input.cursor = Some(size * 0.5);
        let (mut hands, mut avatar, mut interaction) =
            (DesktopHands::default(), Avatar::default(), Interaction::default());
        let pad = GamepadState::default();
        let mut frame = |input: &InputState, avatar: &mut Avatar, interaction: &mut Interaction, world: &mut World| {
            let a = hands.avatar_input(
                &camera,
                input,
                size,
                &pad,
                world,
                interaction,
                crate::STEP_S as f32,
                true,
            );
            avatar.update(&a, crate::STEP_S as f32);
            interaction.update(world, avatar).unwrap();
            world.step();
            a
        };
        let a = frame(&input, &mut avatar, &mut interaction, &mut world);
        assert!(
            (a.hands[1].pose.position.z + 4.5).abs() < 1e-5,
            "the hand sits on the near face"
        );
        assert_eq!(interaction.hand(HandSide::Right).hovered, Some(cube));
        input.set(Action::GripRight, true);
        frame(&input, &mut avatar, &mut interaction, &mut world);
        assert!(interaction.is_held(cube));
        input.end_frame();
        input.wheel = 4.0;
        frame(&input, &mut avatar, &mut interaction, &mut world);
        // A kinematic body moves at most 50 m/s: the cube takes a few steps to catch up with a 1 m jump.
        input.end_frame();
        for _ in 0..3 {
            frame(&input, &mut avatar, &mut interaction, &mut world);
        }
        let z = world.state(cube).unwrap().position.z;
        assert!((z + 6.0).abs() < 1e-4, "pushed 1 m further along the ray: {z}");
        // Over the overlay a click does not grab, but a held cube stays held.
        input.end_frame();
        let a = hands.avatar_input(
            &camera,
            &input,
            size,
            &pad,
            &world,
            &interaction,
            crate::STEP_S as f32,
            false,
        );
        assert_eq!(a.hands[1].grip, 1.0);
        assert_eq!(a.hands[0].grip, 0.0);
    }

    #[test]
    fn an_active_gamepad_takes_the_hands() {
        let world = World::new(WorldConfig::default()).unwrap();
        let mut hands = DesktopHands::default();
        let pad = GamepadState {
            connected: true,
            active: true,
            right_trigger: 1.0,
            ..GamepadState::default()
        };
        let a = hands.avatar_input(
            &FlyCamera::default(),
            &InputState::default(),
            Vec2::new(800.0, 600.0),
            &pad,
            &world,
            &Interaction::default(),
            crate::STEP_S as f32,
            true,
        );
        assert_eq!(hands.source, HandSource::Gamepad);
        assert!(a.hands[1].ray.is_none(), "gamepad hands select by reach, like VR");
        assert_eq!(a.hands[1].grip, 1.0);
        assert!(a.hands.iter().all(|h| h.tracked));
    }
}
