//! A scripted bot hand grabs, throws, passes and places cubes in the shipped scenes, through exactly the path the
//! desktop view and VR use: script → `Avatar::update` → `Interaction::update` → `World::step`.

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyDesc, BodyId, World};
use tumble_game::avatar::{Avatar, HandSide, Pose};
use tumble_game::interaction::script::{AvatarScript, HandScript};
use tumble_game::interaction::{Interaction, InteractionEvent};
use tumble_tests::{positions, scene_world};

const DT: f32 = tumble_game::STEP_S as f32;

/// One player driven by a script.
struct Bot {
    script: AvatarScript,
    avatar: Avatar,
    interaction: Interaction,
    step: u32,
    events: Vec<InteractionEvent>,
}

impl Bot {
    fn new(script: AvatarScript) -> Bot {
        Bot {
            script,
            avatar: Avatar::default(),
            interaction: Interaction::default(),
            step: 0,
            events: Vec::new(),
        }
    }

    fn step(&mut self, world: &mut World) {
        self.avatar.update(&self.script.sample(self.step), DT);
        self.interaction
            .update(world, &self.avatar)
            .expect("the world accepts the interaction");
        self.events.extend_from_slice(self.interaction.events());
        world.step();
        self.step += 1;
    }

    fn run_until(&mut self, world: &mut World, step: u32) {
        while self.step < step {
            self.step(world);
        }
    }

    fn releases(&self) -> Vec<(HandSide, BodyId, Vec3)> {
        let released = |e: &InteractionEvent| match *e {
            InteractionEvent::Released {
                hand,
                body,
                linear_velocity,
                ..
            } => Some((hand, body, linear_velocity)),
            _ => None,
        };
        self.events.iter().filter_map(released).collect()
    }
}

fn body_at(world: &World, position: Vec3) -> BodyId {
    world
        .body_ids()
        .find(|&id| world.state(id).unwrap().position.distance(position) < 0.05)
        .unwrap_or_else(|| panic!("no body at {position}"))
}

fn right_hand(script: HandScript) -> AvatarScript {
    AvatarScript {
        hands: [None, Some(script)],
        ..AvatarScript::default()
    }
}

fn settle(world: &mut World) {
    for _ in 0..600 {
        if world.all_at_rest() {
            return;
        }
        world.step();
    }
    panic!("the scene did not settle in 600 steps");
}

#[test]
fn a_thrown_cube_leaves_at_the_hands_speed_and_knocks_a_tower_over() {
    let mut world = scene_world("table64", true);
    settle(&mut world);
    let cube = body_at(&world, Vec3::new(-2.0, 0.5, 0.0));
    let tower: Vec<BodyId> = (0..4)
        .map(|k| body_at(&world, Vec3::new(1.0, 0.5 + k as f32, 0.0)))
        .collect();
    let throw_velocity = Vec3::new(12.0, 1.0, 0.0);
    // Grab from above, lift high enough to fly over the pyramid between, pull back, then swing at a constant
    // velocity and let go on the last swing step, while the hand still moves.
    let swing_from = Vec3::new(-2.6, 4.05, 0.0);
    let script = HandScript::starting_at(Vec3::new(-2.0, 1.05, 0.0))
        .grip_to(10, 1.0)
        .move_to(60, Vec3::new(-2.0, 4.05, 0.0))
        .move_to(90, swing_from)
        .hold_until(100)
        .move_to(106, swing_from + throw_velocity * (6.0 * DT))
        .key(107, swing_from + throw_velocity * (7.0 * DT), 0.0)
        .build()
        .unwrap();
    let start = positions(&world);
    let mut bot = Bot::new(right_hand(script));
    bot.run_until(&mut world, 108);
    let releases = bot.releases();
    assert_eq!(releases.len(), 1, "{:?}", bot.events);
    let (_, body, velocity) = releases[0];
    assert_eq!(body, cube);
    let error = velocity.distance(throw_velocity) / throw_velocity.length();
    eprintln!(
        "throw: released at {velocity} for a hand at {throw_velocity}: {:.3} % off",
        error * 100.0
    );
    assert!(error < 0.01, "released at {velocity}, hand at {throw_velocity}");
    bot.run_until(&mut world, 108 + 180);
    let end = positions(&world);
    let knocked = tower
        .iter()
        .map(|id| start[id.index()].distance(end[id.index()]))
        .fold(0.0, f32::max);
    eprintln!("throw: the tower's cubes moved up to {knocked:.2} m");
    assert!(knocked > 0.5, "the tower moved only {knocked} m");
}

/// What a placement moved, in metres, between the release and two seconds later.
struct Placement {
    /// The placed cube, absolutely.
    cube: f32,
    /// The placed cube relative to the cube it was put on (a tall stack shortens a little under the added weight).
    cube_on_top: f32,
    /// Every other body.
    stack: f32,
}

/// Adds a cube beside a settled stack, then a bot grabs it from above, lifts it over the stack's top cube, lowers it
/// slowly (0.1 m/s) until it is `gap` above, holds still for half a second and lets go.
fn place_on(scene: &str, top: Vec3, gap: f32) -> Placement {
    let mut world = scene_world(scene, true);
    settle(&mut world);
    let top_id = body_at(&world, top);
    let top_y = world.state(top_id).unwrap().position.y;
    let aside = Vec3::new(top.x, 0.5, top.z + 3.0);
    let cube = world
        .add_body(&BodyDesc {
            position: aside,
            ..BodyDesc::default()
        })
        .unwrap();
    // The hand grabs the top face 5 cm above it; the cube hangs 0.55 m below the hand.
    let hang = 0.55;
    let above = Vec3::new(top.x, top_y + 1.0 + gap + hang, top.z);
    let lower_m = 0.3;
    let lower_steps = (lower_m / 0.1 / DT).round() as u32;
    let script = HandScript::starting_at(aside + Vec3::Y * hang)
        .grip_to(10, 1.0)
        .move_to(150, above + Vec3::new(0.0, lower_m, 3.0))
        .move_to(250, above + Vec3::Y * lower_m)
        .move_to(250 + lower_steps, above)
        .hold_until(295 + lower_steps)
        .grip_to(300 + lower_steps, 0.0)
        .build()
        .unwrap();
    let mut bot = Bot::new(right_hand(script));
    bot.run_until(&mut world, 295 + lower_steps);
    assert_eq!(bot.interaction.held_cubes().collect::<Vec<_>>(), vec![cube]);
    let held_at = world.state(cube).unwrap().position;
    assert!(
        (held_at.y - (top_y + 1.0 + gap)).abs() < 1e-4,
        "held at {held_at}, top at {top_y}"
    );
    while bot.releases().is_empty() {
        bot.step(&mut world);
    }
    assert_eq!(bot.releases()[0].2, Vec3::ZERO, "placed, not thrown");
    let before = positions(&world);
    bot.run_until(&mut world, bot.step + 180);
    let after = positions(&world);
    assert!(world.state(cube).unwrap().at_rest, "the placed cube rests");
    let moved = |id: BodyId| before[id.index()].distance(after[id.index()]);
    let on_top = |p: &[Vec3]| p[cube.index()] - p[top_id.index()];
    Placement {
        cube: moved(cube),
        cube_on_top: on_top(&before).distance(on_top(&after)),
        stack: world.body_ids().filter(|&id| id != cube).map(moved).fold(0.0, f32::max),
    }
}

/// Places a cube on `scene`'s top cube, released 0 and 2 mm above it, and checks that neither it nor the stack
/// moves.
fn check_placements(scene: &str, top: Vec3) {
    for gap in [0.0, 0.002] {
        let p = place_on(scene, top, gap);
        eprintln!(
            "place on {scene} (released {:.0} mm above): the cube moved {:.3} mm ({:.3} mm relative to the cube \
             under it), the stack {:.3} mm",
            gap * 1000.0,
            p.cube * 1000.0,
            p.cube_on_top * 1000.0,
            p.stack * 1000.0
        );
        assert!(
            p.cube_on_top <= 0.001 + gap,
            "{scene}: the placed cube moved {} m on its stack",
            p.cube_on_top
        );
        assert!(p.stack <= 0.005, "{scene}: the stack moved {} m", p.stack);
    }
}

#[test]
fn a_cube_placed_slowly_on_a_stack_stays_where_it_was_put() {
    check_placements("pyramid20", pyramid_top());
}

/// This passed once only because rest detection put the woken tower back to sleep on the poses it had rested in;
/// with a woken body seen still for a whole window, the solver leaned tower30 by a centimetre under the placed cube
/// until a released body's weight was handed to the contacts under it at once (`seed_fresh_contacts`).
#[test]
fn a_cube_placed_slowly_on_tower30_stays_where_it_was_put() {
    check_placements("tower30", Vec3::new(0.0, 29.5, 0.0));
}

/// The top cube of the shipped pyramid20 scene.
fn pyramid_top() -> Vec3 {
    let world = scene_world("pyramid20", true);
    world
        .body_ids()
        .map(|id| world.state(id).unwrap().position)
        .max_by(|a, b| a.y.total_cmp(&b.y))
        .unwrap()
}

#[test]
fn a_cube_passes_from_hand_to_hand_and_is_put_down_by_the_other() {
    let mut world = scene_world("table64", true);
    settle(&mut world);
    let cube = body_at(&world, Vec3::new(-2.0, 0.5, 0.0));
    // Right hand grabs from the +x face and carries the cube up; the left hand waits on the -x side, takes it,
    // the right lets go, and the left sets it down again where it was.
    let right = HandScript::starting_at(Vec3::new(-1.45, 0.5, 0.0))
        .grip_to(10, 1.0)
        .move_to(60, Vec3::new(-1.45, 2.0, 0.0))
        .hold_until(100)
        .grip_to(110, 0.0)
        .move_to(150, Vec3::new(-0.5, 2.0, 0.0))
        .build()
        .unwrap();
    let left = HandScript::starting_at(Vec3::new(-2.9, 2.0, 0.0))
        .move_to(60, Vec3::new(-2.55, 2.0, 0.0))
        .grip_to(90, 1.0)
        .move_to(150, Vec3::new(-2.55, 1.0, 0.0))
        .move_to(200, Vec3::new(-2.55, 0.5015, 0.0))
        .hold_until(220)
        .grip_to(225, 0.0)
        .move_to(260, Vec3::new(-3.0, 2.5, 0.0))
        .build()
        .unwrap();
    let mut bot = Bot::new(AvatarScript {
        hands: [Some(left), Some(right)],
        head: Some(Pose::new(Vec3::new(-2.0, 1.7, 1.0), Quat::IDENTITY)),
    });
    bot.run_until(&mut world, 420);
    let grabs: Vec<_> = bot
        .events
        .iter()
        .filter_map(|e| match *e {
            InteractionEvent::Grabbed {
                hand,
                body,
                from_other_hand,
            } => Some((hand, body, from_other_hand)),
            _ => None,
        })
        .collect();
    assert_eq!(
        grabs,
        vec![(HandSide::Right, cube, false), (HandSide::Left, cube, true)],
        "{:?}",
        bot.events
    );
    assert_eq!(
        bot.releases(),
        vec![(HandSide::Left, cube, Vec3::ZERO)],
        "put down, not thrown"
    );
    let end = world.state(cube).unwrap();
    assert!(end.at_rest);
    assert!(
        end.position.distance(Vec3::new(-2.0, 0.5, 0.0)) < 0.01,
        "the cube ended at {}",
        end.position
    );
}

#[test]
fn a_hand_that_closes_just_before_a_thrown_cube_arrives_catches_it() {
    let mut world = World::new(tumble_engine::physics::WorldConfig::default()).unwrap();
    let cube = world
        .add_body(&BodyDesc {
            position: Vec3::new(0.0, 0.5, 0.0),
            ..BodyDesc::default()
        })
        .unwrap();
    // The right hand lifts the cube by its +x face to 2.5 m, pulls back, and throws it along +x at 4 m/s, letting
    // go at step 140 with the cube's centre at x = 0.
    let v = 4.0;
    let right = HandScript::starting_at(Vec3::new(0.55, 0.5, 0.0))
        .grip_to(10, 1.0)
        .move_to(60, Vec3::new(0.55, 2.5, 0.0))
        .move_to(100, Vec3::new(0.55 - v * 30.0 * DT, 2.5, 0.0))
        .hold_until(110)
        .move_to(139, Vec3::new(0.55 - v * DT, 2.5, 0.0))
        .key(140, Vec3::new(0.55, 2.5, 0.0), 0.0)
        .move_to(150, Vec3::new(0.55, 3.5, 0.0))
        .build()
        .unwrap();
    // The left hand waits 1.6 m down the line, a little low for the fall, and squeezes about 60 ms before the cube's
    // face reaches it (0.25 s after the release).
    let catch_at = Vec3::new(1.6, 2.5 - 0.2, 0.0);
    let left = HandScript::starting_at(catch_at)
        .hold_until(155)
        .grip_to(158, 1.0)
        .move_to(250, catch_at)
        .build()
        .unwrap();
    let mut bot = Bot::new(AvatarScript {
        hands: [Some(left), Some(right)],
        head: None,
    });
    bot.run_until(&mut world, 250);
    let grabs: Vec<_> = bot
        .events
        .iter()
        .filter_map(|e| match *e {
            InteractionEvent::Grabbed { hand, .. } => Some(hand),
            _ => None,
        })
        .collect();
    assert_eq!(grabs, vec![HandSide::Right, HandSide::Left], "{:?}", bot.events);
    assert_eq!(bot.interaction.held_cubes().collect::<Vec<_>>(), vec![cube]);
    let y = world.state(cube).unwrap().position.y;
    assert!(y > 2.0, "held in the air, at {y}");
}
