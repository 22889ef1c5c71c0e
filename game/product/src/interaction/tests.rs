//! Unit tests of the interaction on small hand-built worlds; the scene scenarios are in `tests/tests/interaction.rs`.

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyDesc, BodyId, BodyKind, World, WorldConfig};

use super::*;
use crate::avatar::{AvatarInput, HandInput};

const DT: f32 = crate::STEP_S as f32;

/// A world with one resting cube on the ground at x = 0, and a player.
struct Rig {
    world: World,
    cube: BodyId,
    avatar: Avatar,
    interaction: Interaction,
    input: AvatarInput,
}

impl Rig {
    fn new() -> Rig {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let cube = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let mut input = AvatarInput::default();
        for hand in &mut input.hands {
            *hand = HandInput {
                tracked: true,
                pose: Pose::new(Vec3::new(0.0, 3.0, 0.0), Quat::IDENTITY),
                ..HandInput::default()
            };
        }
        Rig {
            world,
            cube,
            avatar: Avatar::default(),
            interaction: Interaction::default(),
            input,
        }
    }

    fn hand(&mut self, side: HandSide) -> &mut HandInput {
        &mut self.input.hands[side.index()]
    }

    fn step(&mut self) {
        self.avatar.update(&self.input, DT);
        self.interaction.update(&mut self.world, &self.avatar).unwrap();
        self.world.step();
    }

    fn held(&self, side: HandSide) -> Option<BodyId> {
        self.interaction.hand(side).held.map(|h| h.body)
    }

    fn cube_position(&self) -> Vec3 {
        self.world.state(self.cube).unwrap().position
    }
}

#[test]
fn a_hand_grabs_on_the_grips_rising_edge_not_by_touching_while_closed() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    rig.hand(right).grip = 1.0;
    for _ in 0..CATCH_WINDOW_STEPS + 2 {
        rig.step();
    }
    // Closed long ago, now moved onto the cube: it is hovered but not grabbed.
    rig.hand(right).pose.position = Vec3::new(0.3, 0.9, 0.0);
    rig.step();
    assert_eq!(rig.interaction.hand(right).hovered, Some(rig.cube));
    assert_eq!(rig.held(right), None);
    rig.hand(right).grip = 0.0;
    rig.step();
    rig.hand(right).grip = 0.8;
    rig.step();
    assert_eq!(rig.held(right), Some(rig.cube));
    assert_eq!(rig.world.kind(rig.cube).unwrap(), BodyKind::Kinematic);
    assert_eq!(rig.interaction.hand(right).hovered, None);
    assert_eq!(
        rig.interaction.events(),
        &[InteractionEvent::Grabbed {
            hand: right,
            body: rig.cube,
            from_other_hand: false
        }]
    );
    assert_eq!(rig.interaction.held_cubes().collect::<Vec<_>>(), vec![rig.cube]);
}

#[test]
fn a_closing_hand_catches_what_arrives_within_the_window_only() {
    let mut rig = Rig::new();
    let left = HandSide::Left;
    rig.hand(left).grip = 1.0;
    rig.step();
    rig.hand(left).pose.position = Vec3::new(0.0, 1.05, 0.0);
    rig.step();
    assert_eq!(rig.held(left), Some(rig.cube), "reached within the catch window");
}

#[test]
fn the_grip_has_hysteresis() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    rig.hand(right).pose.position = Vec3::new(0.0, 1.0, 0.0);
    rig.hand(right).grip = 0.69;
    rig.step();
    assert_eq!(rig.held(right), None, "below the grab threshold");
    rig.hand(right).grip = 0.7;
    rig.step();
    assert_eq!(rig.held(right), Some(rig.cube));
    rig.hand(right).grip = 0.31;
    rig.step();
    assert_eq!(rig.held(right), Some(rig.cube), "above the release threshold");
    rig.hand(right).grip = 0.3;
    rig.step();
    assert_eq!(rig.held(right), None);
    assert_eq!(rig.world.kind(rig.cube).unwrap(), BodyKind::Dynamic);
    assert!(matches!(rig.interaction.events(), [InteractionEvent::Released { .. }]));
}

#[test]
fn a_held_cube_keeps_its_grab_offset_as_the_hand_moves_and_turns() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    rig.hand(right).pose.position = Vec3::new(0.2, 1.0, 0.1);
    rig.hand(right).grip = 1.0;
    rig.step();
    assert_eq!(
        rig.cube_position(),
        Vec3::new(0.0, 0.5, 0.0),
        "grabbing does not move the cube"
    );
    let turn = Quat::from_rotation_y(1.0);
    for k in 1..=60 {
        let t = k as f32 / 60.0;
        rig.hand(right).pose = Pose::new(Vec3::new(0.2, 1.0 + 2.0 * t, 0.1), Quat::IDENTITY.slerp(turn, t));
        rig.step();
    }
    let expected = Vec3::new(0.2, 3.0, 0.1) + turn * Vec3::new(-0.2, -0.5, -0.1);
    let state = rig.world.state(rig.cube).unwrap();
    assert!(
        state.position.distance(expected) < 1e-4,
        "{} vs {expected}",
        state.position
    );
    assert!(state.rotation.dot(turn).abs() > 1.0 - 1e-5);
}

#[test]
fn a_release_throws_with_the_hands_velocity_and_spin() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    let start = Vec3::new(0.0, 1.0, 0.0);
    rig.hand(right).pose.position = start;
    rig.hand(right).grip = 1.0;
    rig.step();
    // Lift, then swing at a constant 6 m/s forward and 2 m/s up while turning at 4 rad/s about z.
    let lift = Vec3::new(0.0, 2.0, 0.0);
    for k in 1..=30 {
        rig.hand(right).pose.position = start + lift * (k as f32 / 30.0);
        rig.step();
    }
    let (velocity, spin) = (Vec3::new(6.0, 2.0, 0.0), Vec3::new(0.0, 0.0, 4.0));
    let swing_start = rig.input.hands[1].pose.position;
    for k in 1..=20 {
        let t = k as f32 * DT;
        rig.hand(right).pose = Pose::new(swing_start + velocity * t, Quat::from_rotation_z(spin.z * t));
        rig.step();
    }
    // Let go while still swinging.
    let t = 21.0 * DT;
    rig.hand(right).pose = Pose::new(swing_start + velocity * t, Quat::from_rotation_z(spin.z * t));
    rig.hand(right).grip = 0.0;
    rig.avatar.update(&rig.input, DT);
    rig.interaction.update(&mut rig.world, &rig.avatar).unwrap();
    let [InteractionEvent::Released {
        linear_velocity,
        angular_velocity,
        ..
    }] = *rig.interaction.events()
    else {
        panic!("expected one release, got {:?}", rig.interaction.events());
    };
    let state = rig.world.state(rig.cube).unwrap();
    let r = state.position - rig.avatar.hand(right).pose.position;
    let expected = velocity + spin.cross(r);
    assert!(
        linear_velocity.distance(expected) < 0.01,
        "{linear_velocity} vs {expected}"
    );
    assert!(angular_velocity.distance(spin) < 0.01, "{angular_velocity}");
    assert_eq!(state.linear_velocity, linear_velocity);
    assert_eq!(rig.world.kind(rig.cube).unwrap(), BodyKind::Dynamic);
}

#[test]
fn a_slow_release_places_the_cube_with_no_velocity() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    rig.hand(right).pose.position = Vec3::new(0.0, 1.0, 0.0);
    rig.hand(right).grip = 1.0;
    rig.step();
    for k in 1..=10 {
        rig.hand(right).pose.position.x = 0.003 * k as f32; // 0.27 m/s … then
        rig.step();
    }
    for _ in 0..10 {
        rig.hand(right).pose.position.x += 0.0003; // … 0.027 m/s: tremor
        rig.step();
    }
    rig.hand(right).grip = 0.0;
    rig.step();
    assert!(matches!(
        rig.interaction.events(),
        [InteractionEvent::Released { linear_velocity, angular_velocity, .. }]
            if *linear_velocity == Vec3::ZERO && *angular_velocity == Vec3::ZERO
    ));
}

#[test]
fn the_other_hand_takes_a_held_cube() {
    let mut rig = Rig::new();
    let (left, right) = (HandSide::Left, HandSide::Right);
    rig.hand(right).pose.position = Vec3::new(0.4, 0.5, 0.0);
    rig.hand(right).grip = 1.0;
    rig.step();
    assert_eq!(rig.held(right), Some(rig.cube));
    for k in 1..=30 {
        rig.hand(right).pose.position = Vec3::new(0.4, 0.5 + 1.5 * k as f32 / 30.0, 0.0);
        rig.step();
    }
    rig.hand(left).pose.position = Vec3::new(-0.45, 2.0, 0.0);
    rig.step();
    assert_eq!(
        rig.interaction.hand(left).hovered,
        Some(rig.cube),
        "the other hand's cube is selectable"
    );
    rig.hand(left).grip = 1.0;
    rig.step();
    assert_eq!(rig.held(left), Some(rig.cube));
    assert_eq!(rig.held(right), None);
    assert_eq!(
        rig.interaction.events(),
        &[InteractionEvent::Grabbed {
            hand: left,
            body: rig.cube,
            from_other_hand: true
        }]
    );
    // The right hand opening now releases nothing; the cube stays with the left hand.
    rig.hand(right).grip = 0.0;
    rig.hand(left).pose.position.z = 0.5;
    rig.step();
    assert_eq!(rig.interaction.events(), &[]);
    assert!((rig.cube_position().z - 0.5).abs() < 1e-5);
    assert_eq!(rig.interaction.held_cubes().count(), 1);
}

#[test]
fn a_cube_that_leaves_the_world_is_no_longer_held() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    rig.hand(right).pose.position = Vec3::new(0.0, 1.0, 0.0);
    rig.hand(right).grip = 1.0;
    rig.step();
    // Far below the world floor (a teleporting hand): the kinematic cube follows at the world's top speed.
    rig.hand(right).pose.position.y = -200.0;
    let mut steps = 0;
    while rig.held(right).is_some() && steps < 1000 {
        rig.step();
        steps += 1;
    }
    assert_eq!(rig.held(right), None);
    assert!(matches!(rig.interaction.events(), [InteractionEvent::Released { .. }]));
}

#[test]
fn an_untracked_hand_holds_still_and_throws_nothing() {
    let mut rig = Rig::new();
    let right = HandSide::Right;
    rig.hand(right).pose.position = Vec3::new(0.0, 1.0, 0.0);
    rig.hand(right).grip = 1.0;
    rig.step();
    for k in 0..10 {
        rig.hand(right).pose.position.y = 1.0 + 0.1 * k as f32;
        rig.step();
    }
    let before = rig.cube_position();
    rig.hand(right).tracked = false;
    rig.hand(right).pose.position.y = 50.0;
    for _ in 0..5 {
        rig.step();
    }
    assert_eq!(rig.cube_position(), before);
    rig.hand(right).grip = 0.0;
    rig.step();
    assert!(matches!(
        rig.interaction.events(),
        [InteractionEvent::Released { linear_velocity, .. }] if *linear_velocity == Vec3::ZERO
    ));
}
