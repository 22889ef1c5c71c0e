//! Scripted bots (`tumble_game::bots`) playing in one shared world, no network: each bot has its own `Avatar` and
//! `Interaction`, and every step goes bot → `Avatar::update` → `Interaction::update`, then one `World::step` — the
//! path a session takes for each player.

use glam::Vec3;
use tumble_engine::physics::{BodyDesc, BodyId, BodyState, World, WorldConfig};
use tumble_game::avatar::{Avatar, HandSide};
use tumble_game::bots::ballistic;
use tumble_game::bots::{Bot, BotKind, BotView, SeenHand};
use tumble_game::interaction::{Interaction, InteractionEvent};
use tumble_tests::alloc::{thread_allocations, PerThreadCounting};
use tumble_tests::scene_world;

// Allocations counted per thread, so the other tests of this file, running beside the no-allocation one, do not
// count against it.
#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

const STEPS_PER_S: u64 = tumble_game::STEP_HZ as u64;

/// One player: a bot and what a session would keep for it.
struct Player {
    bot: Bot,
    avatar: Avatar,
    interaction: Interaction,
    events: Vec<InteractionEvent>,
    /// Per-step hand speeds (m/s): the fastest at or under 6 m/s, and the slowest and fastest above it (swings).
    hand_speeds: HandSpeeds,
}

#[derive(Clone, Copy, Debug)]
struct HandSpeeds {
    walk_max: f32,
    swing_min: f32,
    swing_max: f32,
}

/// One world and its players, stepped as a session would step them.
struct Table {
    world: World,
    players: Vec<Player>,
    step: u64,
    active: bool,
    /// Scratch for each player's view of the others (reserved once).
    others_holding: Vec<u32>,
    other_hands: Vec<SeenHand>,
    /// Allocations made inside `Bot::step` (counted only when `count_bot_allocations`).
    bot_allocations: u64,
}

impl Table {
    fn new(world: World, bots: &[(BotKind, u8, u64)]) -> Table {
        let players = bots
            .iter()
            .map(|&(kind, player, seed)| Player {
                bot: Bot::new(kind, player, seed),
                avatar: Avatar::default(),
                interaction: Interaction::default(),
                events: Vec::with_capacity(4096),
                hand_speeds: HandSpeeds {
                    walk_max: 0.0,
                    swing_min: f32::MAX,
                    swing_max: 0.0,
                },
            })
            .collect();
        Table {
            world,
            players,
            step: 0,
            active: true,
            others_holding: Vec::with_capacity(16),
            other_hands: Vec::with_capacity(16),
            bot_allocations: 0,
        }
    }

    fn step(&mut self) {
        let dt = self.world.config().dt;
        for i in 0..self.players.len() {
            self.others_holding.clear();
            self.other_hands.clear();
            for (j, other) in self.players.iter().enumerate() {
                if j != i {
                    self.others_holding.extend(other.interaction.held_cubes().map(|b| b.0));
                    let player = other.bot.player();
                    self.other_hands.extend(HandSide::BOTH.map(|side| SeenHand {
                        player,
                        side,
                        position: other.avatar.hands[side.index()].pose.position,
                        head: other.avatar.head.position,
                        holding: other.interaction.hand(side).held.is_some(),
                        reaching: true,
                    }));
                }
            }
            let player = &mut self.players[i];
            let view = BotView {
                world: &self.world,
                me: &player.interaction,
                others_holding: &self.others_holding,
                other_hands: &self.other_hands,
                active: self.active,
            };
            let before = thread_allocations();
            let input = player.bot.step(self.step, &view);
            self.bot_allocations += thread_allocations() - before;
            let before: [Vec3; 2] = [0, 1].map(|h| player.avatar.hands[h].pose.position);
            player.avatar.update(&input, dt);
            if self.step > 0 {
                for (h, was) in before.iter().enumerate() {
                    let speed = player.avatar.hands[h].pose.position.distance(*was) / dt;
                    let s = &mut player.hand_speeds;
                    if speed <= 6.0 {
                        s.walk_max = s.walk_max.max(speed);
                    } else {
                        s.swing_min = s.swing_min.min(speed);
                        s.swing_max = s.swing_max.max(speed);
                    }
                }
            }
            player
                .interaction
                .update(&mut self.world, &player.avatar)
                .expect("the world accepts the interaction");
            if player.events.len() + 4 <= player.events.capacity() {
                player.events.extend_from_slice(player.interaction.events());
            }
        }
        self.world.step();
        self.step += 1;
    }

    fn run_for(&mut self, seconds: u64) {
        for _ in 0..seconds * STEPS_PER_S {
            self.step();
        }
    }
}

fn settle(world: &mut World) {
    for _ in 0..600 {
        if world.all_at_rest() {
            return;
        }
        world.step();
    }
    panic!("the scene did not settle");
}

fn empty_world() -> World {
    World::new(WorldConfig::default()).unwrap()
}

fn add_cube(world: &mut World, position: Vec3) -> BodyId {
    world
        .add_body(&BodyDesc {
            position,
            ..BodyDesc::default()
        })
        .unwrap()
}

/// Cubes stacked straight on `spot`: how many lie within half a cube of it, one on another from the ground up.
fn stacked_on(world: &World, spot: Vec3) -> usize {
    let mut heights: Vec<f32> = world
        .body_ids()
        .map(|id| world.state(id).unwrap().position)
        .filter(|p| Vec3::new(p.x - spot.x, 0.0, p.z - spot.z).length() < 0.5)
        .map(|p| p.y)
        .collect();
    heights.sort_by(f32::total_cmp);
    heights
        .iter()
        .enumerate()
        .take_while(|&(k, &y)| (y - (0.5 + k as f32)).abs() < 0.15)
        .count()
}

#[test]
fn a_builder_alone_on_table64_builds_a_tower_of_five_or_more() {
    let mut world = scene_world("table64", true);
    settle(&mut world);
    let mut table = Table::new(world, &[(BotKind::Builder, 1, 11)]);
    table.run_for(60);
    let builder = &table.players[0].bot;
    let towers: Vec<usize> = builder
        .build_spots()
        .iter()
        .map(|&spot| stacked_on(&table.world, spot))
        .collect();
    let c = builder.counters();
    eprintln!("builder, 60 s on table64: towers {towers:?} cubes; {c:?}");
    let tallest = towers.iter().copied().max().unwrap();
    assert!(tallest >= 5, "the tallest tower has {tallest} cubes ({c:?})");
    assert!(c.places as usize >= tallest, "{c:?}");
    assert_eq!(c.throws, 0);
}

/// A thrower, three loose cubes and a three-cube tower at the centre. At the release the tower is taken away, so
/// the cube flies free: how close does its centre come to the point aimed at?
fn throw_in_free_air(seed: u64) -> (f32, f32, f32) {
    let mut world = empty_world();
    let tower: Vec<BodyId> = (0..3)
        .map(|k| add_cube(&mut world, Vec3::new(0.0, 0.5 + k as f32, 0.0)))
        .collect();
    for x in [-1.5, 0.0, 1.5] {
        add_cube(&mut world, Vec3::new(x, 0.5, 3.0));
    }
    settle(&mut world);
    let mut table = Table::new(world, &[(BotKind::Thrower, 1, seed)]);
    let released = loop {
        assert!(table.step < 30 * STEPS_PER_S, "no throw in 30 s");
        table.step();
        let released = table.players[0].interaction.events().iter().find_map(|e| match *e {
            InteractionEvent::Released {
                body, linear_velocity, ..
            } => Some((body, linear_velocity)),
            _ => None,
        });
        if let Some(r) = released {
            break r;
        }
    };
    let (cube, cube_velocity) = released;
    let hand_speed = table.players[0].avatar.hand(HandSide::Right).linear_velocity.length();
    for &id in &tower {
        let s = table.world.state(id).unwrap();
        let away = BodyState {
            position: s.position + Vec3::new(30.0, 0.0, 0.0),
            ..s
        };
        table.world.set_state(id, &away).unwrap();
    }
    // The bot records its throw when it sees the release, on its next step.
    table.step();
    let record = *table.players[0].bot.last_throw().expect("the throw is recorded");
    assert_eq!(record.cube, cube);
    let mut closest = f32::MAX;
    for _ in 0..record.flight_steps + 30 {
        let p = table.world.state(cube).unwrap().position;
        closest = closest.min(p.distance(record.target));
        table.world.step();
    }
    (hand_speed, cube_velocity.length(), closest)
}

#[test]
fn a_throw_leaves_the_hand_at_6_to_12_m_s_and_passes_through_its_target() {
    for seed in [1, 2, 3] {
        let (hand, cube, closest) = throw_in_free_air(seed);
        eprintln!(
            "throw (seed {seed}): hand at {hand:.2} m/s, cube at {cube:.2} m/s, passes {:.3} m from the target",
            closest
        );
        assert!((6.0..=12.5).contains(&hand), "hand at {hand} m/s");
        assert!((hand - cube).abs() < 0.05, "the cube leaves at the hand's speed");
        assert!(closest <= 1.5, "passed {closest} m from the target");
    }
}

#[test]
fn a_thrown_cube_knocks_the_top_off_the_tallest_tower() {
    let mut world = empty_world();
    let top = (0..4)
        .map(|k| add_cube(&mut world, Vec3::new(0.0, 0.5 + k as f32, 0.0)))
        .last()
        .unwrap();
    add_cube(&mut world, Vec3::new(0.0, 0.5, 3.0));
    settle(&mut world);
    let start = world.state(top).unwrap().position;
    let mut table = Table::new(world, &[(BotKind::Thrower, 1, 5)]);
    while table.players[0].bot.counters().throws == 0 {
        assert!(table.step < 30 * STEPS_PER_S, "no throw in 30 s");
        table.step();
    }
    table.run_for(2);
    let moved = table.world.state(top).unwrap().position.distance(start);
    eprintln!("thrower: the tower's top cube moved {moved:.2} m");
    assert!(moved > 0.5, "the top cube moved only {moved} m");
}

#[test]
fn a_catcher_catches_cubes_thrown_at_it() {
    let mut world = empty_world();
    let cubes: Vec<BodyId> = (0..5)
        .map(|k| add_cube(&mut world, Vec3::new(-4.0 + 2.0 * k as f32, 0.5, -5.0)))
        .collect();
    settle(&mut world);
    let config = *world.config();
    let mut table = Table::new(world, &[(BotKind::Catcher, 1, 3)]);
    // Player 1 stands at (0, 0, 6) facing −z with its hands at about (±0.25, 1.2, 5.7): each cube is launched
    // from 2 m up across the play area to pass just in front of them, one every 3 s, a little to the side each time.
    let mut launched = 0;
    for (k, &cube) in cubes.iter().enumerate() {
        while table.step < (k as u64 * 3 + 1) * STEPS_PER_S {
            table.step();
        }
        let from = Vec3::new(k as f32 * 0.5 - 1.0, 2.0, -2.0);
        let to = Vec3::new(k as f32 * 0.2 - 0.4, 1.5, 5.0);
        let (velocity, _) = ballistic::aim(from, to, 9.0, config.gravity, config.dt);
        let s = table.world.state(cube).unwrap();
        if table.players[0].interaction.is_held(cube) {
            continue;
        }
        let thrown = BodyState {
            position: from,
            linear_velocity: velocity,
            at_rest: false,
            ..s
        };
        table.world.set_state(cube, &thrown).unwrap();
        launched += 1;
    }
    table.run_for(4);
    let c = *table.players[0].bot.counters();
    eprintln!("catcher: {launched} cubes thrown at it; {c:?}");
    assert!(c.catches >= 1, "{c:?}");
    // Caught cubes are passed to the other hand: a grab from the other hand each.
    let passes = table.players[0]
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                InteractionEvent::Grabbed {
                    from_other_hand: true,
                    ..
                }
            )
        })
        .count();
    assert!(passes >= 1, "no hand-to-hand pass");
    assert!(c.throws + c.places >= 1, "{c:?}");
}

#[test]
fn a_contender_goes_for_the_cubes_a_builder_holds_or_reaches_for() {
    let mut world = scene_world("table64", true);
    settle(&mut world);
    let mut table = Table::new(world, &[(BotKind::Builder, 1, 21), (BotKind::Contender, 2, 22)]);
    let mut on_builders_cubes = 0;
    let mut attempts = 0;
    for _ in 0..40 * STEPS_PER_S {
        table.step();
        let contender = &table.players[1].bot;
        if contender.counters().grab_attempts == attempts {
            continue;
        }
        attempts = contender.counters().grab_attempts;
        let Some(cube) = contender.target() else { continue };
        let builder = &table.players[0];
        let held = builder.interaction.is_held(cube);
        let reached_for = builder.bot.target() == Some(cube);
        let hand_near = builder
            .avatar
            .hands
            .iter()
            .any(|h| h.pose.position.distance(table.world.state(cube).unwrap().position) <= 1.0);
        if held || reached_for || hand_near {
            on_builders_cubes += 1;
        }
    }
    let (b, c) = (*table.players[0].bot.counters(), *table.players[1].bot.counters());
    eprintln!("contender vs builder, 40 s: {on_builders_cubes} squeezes on the builder's cubes; contender {c:?}, builder {b:?}");
    assert!(on_builders_cubes >= 3, "contender {c:?}");
    assert!(c.contested_attempts >= 3, "{c:?}");
}

fn four_bots(seed: u64) -> Table {
    let mut world = scene_world("table64", true);
    settle(&mut world);
    Table::new(
        world,
        &[
            (BotKind::Builder, 1, seed),
            (BotKind::Thrower, 2, seed + 1),
            (BotKind::Contender, 3, seed + 2),
            (BotKind::Catcher, 4, seed + 3),
        ],
    )
}

#[test]
fn the_same_seed_gives_the_same_world() {
    let run = |seed| {
        let mut table = four_bots(seed);
        table.run_for(20);
        let counters: Vec<_> = table.players.iter().map(|p| *p.bot.counters()).collect();
        (table.world.checksum(), counters)
    };
    let (a, counters) = run(7);
    let (b, _) = run(7);
    let (c, _) = run(8);
    eprintln!("four bots, 20 s: checksum {a:#018x}; {counters:?}");
    assert_eq!(a, b, "same seed, different worlds");
    assert_ne!(a, c, "another seed played the same game");
    assert!(counters.iter().map(|c| c.grabs).sum::<u32>() >= 4, "{counters:?}");
}

#[test]
fn bots_allocate_nothing_move_at_human_speeds_and_retire_when_told() {
    let mut table = four_bots(31);
    table.run_for(5);
    table.bot_allocations = 0;
    let before = thread_allocations();
    table.run_for(25);
    let whole_steps = thread_allocations() - before;
    let counters: Vec<_> = table.players.iter().map(|p| *p.bot.counters()).collect();
    eprintln!(
        "four bots, 25 s after warm-up: {} allocations in Bot::step, {whole_steps} in whole steps; {counters:?}",
        table.bot_allocations
    );
    assert_eq!(table.bot_allocations, 0);
    for p in &table.players {
        let s = p.hand_speeds;
        let swings = if s.swing_max > 0.0 {
            format!("swings {:.2}..{:.2} m/s", s.swing_min, s.swing_max)
        } else {
            "no swing".to_string()
        };
        eprintln!("{:?}: hands up to {:.2} m/s, {swings}", p.bot.kind(), s.walk_max);
        assert!(
            s.walk_max <= 3.0 + 1e-3,
            "{:?}: a hand moved at {} m/s",
            p.bot.kind(),
            s.walk_max
        );
        assert!(s.swing_max == 0.0 || (6.0..=12.0).contains(&s.swing_min) && s.swing_max <= 12.0);
    }
    table.active = false;
    table.run_for(10);
    for p in &table.players {
        assert!(p.bot.is_retired(), "{:?} still busy", p.bot.kind());
        assert_eq!(p.interaction.held_cubes().count(), 0);
    }
    assert!(
        table.world.all_at_rest(),
        "10 s after the bots stopped the world still moves"
    );
}
