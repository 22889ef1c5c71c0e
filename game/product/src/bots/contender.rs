//! The contender: makes conflicts on purpose. Two players conflict when both grab the same cube within a round
//! trip, before either has heard of the other's grab; the host then judges and one loses. So the contender
//! anticipates: it watches the other players' hands as its peer plays them out (`anticipate`: per hand, with
//! velocity), predicts which still, free cube a reaching hand is heading for and when it will get there, goes to
//! that cube first and squeezes just before the seen hand arrives. What it sees is a jitter buffer's delay old, so
//! squeezing [`SQUEEZE_AHEAD_S`] before the *seen* arrival lands its grab close to the other player's real one.
//!
//! Between reaches it waits with a hand over where the others have been reaching (the piles in the middle), ready
//! to go. Fallbacks, as before: it catches cubes in flight (the catcher's plan) and now and then chases a cube
//! another player holds (its squeeze is refused while the cube is held). A cube it gets is lifted clear of the
//! piles around and tossed at the tallest stack from there, so its hand stays where the reaching is.

use glam::Vec3;
use tumble_engine::physics::{BodyId, BodyState, World};

use super::anticipate::{self, grip_point, Aim};
use super::fetch::HAND_CLEARANCE_M;
use super::motion::HAND_SPEED_M_S;
use super::scan;
use super::thrower::{THROW_SPEED_MAX_M_S, THROW_SPEED_MIN_M_S};
use super::{ballistic, catcher, thrower, Bot, BotView, Task};
use crate::avatar::HandSide;
use crate::interaction::select::point_box_distance;

/// The hand squeezes once it is this close (m) to the cube's surface (the interaction reaches 10 cm).
const SQUEEZE_DISTANCE_M: f32 = 0.06;
/// Steps a squeeze waits for the hold.
const SQUEEZE_WAIT_STEPS: u64 = 10;
/// One wait in this many ends in a chase of a held cube, when there is one.
const CHASE_ONE_IN: usize = 4;
/// A chase longer than this (steps, 4 s) is given up.
const CHASE_TIMEOUT_STEPS: u64 = 360;
/// The contender squeezes when the seen hand is this long (s) from the cube. The seen hand is the other player's
/// of one-way delay plus a playout delay ago (about 80 ms from the host, 140 ms from another guest over a 100 ms
/// round trip), and that player squeezes about 30 ms after arriving: squeezing 60 ms ahead of the seen arrival
/// lands the grab within about 50 ms of the other's, inside the window of either (one way: 50 or 100 ms).
pub const SQUEEZE_AHEAD_S: f32 = 0.06;
/// A squeeze may still come this many steps after the seen arrival (the other's grab is still in flight).
const LATE_STEPS: u64 = 3;
/// Steps the predicted aim may point at another cube, or at none, before the contender gives up on it (a hand
/// turning from crossing to coming down points past its cube for a few steps while its smoothed velocity turns).
const DOUBT_STEPS: u32 = 8;
/// Reaches further off than this (s, as seen) are not contested yet: the seen hand may still turn, and a hand
/// drifting slowly with its player's head would hold the contender to a cube nobody is coming for.
const MAX_ETA_S: f32 = 1.2;
/// A contest is dropped for another reach that arrives at least this many steps sooner.
const SWITCH_SOONER_STEPS: u64 = 9;
/// Steps between choices while waiting with nothing to contest: 1.5 s.
const CAMP_STEPS: u64 = 135;
/// The waiting hand is this far (m) above the centre of the others' reaching.
const CAMP_ABOVE_M: f32 = 0.5;
/// Steps of a toss's swing at constant velocity, the grip opening on the last: at least the interaction's velocity
/// window (5), so the cube leaves at the swing's velocity.
const TOSS_SWING_STEPS: u64 = 8;
/// A toss is lifted clear of the piles within this distance (m, horizontally) of the hand.
const TOSS_CLEAR_RADIUS_M: f32 = 1.5;
/// Cubes this close (m, horizontally) to a tower spot are part of a tower: nobody takes them.
const TOWER_KEEP_OUT_M: f32 = scan::COLUMN_RADIUS_M + 0.6;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Chase {
    pub(super) cube: BodyId,
    pub(super) hand: HandSide,
    squeezed_at: Option<u64>,
    give_up_at: u64,
}

/// Going for the cube another player's hand is heading for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Contest {
    pub(super) cube: BodyId,
    pub(super) hand: HandSide,
    /// The other hand (`anticipate::track_index`).
    rival: usize,
    /// The step at which the rival's hand is seen to reach the cube, as last predicted.
    arrive_step: u64,
    /// Steps in a row the rival has seemed to aim at another cube.
    doubt: u32,
    squeezed_at: Option<u64>,
}

/// Tossing a cube it got.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Toss {
    pub(super) hand: HandSide,
    pub(super) cube: BodyId,
    stage: TossStage,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum TossStage {
    /// Straight up, clear of the piles around.
    Lift { to: Vec3 },
    /// `since`: the step the swing's first move was made on.
    Swing { velocity: Vec3, since: u64 },
}

/// Waiting with a hand over where the others reach.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Camp {
    pub(super) hand: HandSide,
    until: u64,
}

/// What to do with free hands: a catch or a contest if there is one, else wait where the others reach (or, now and
/// then, chase a held cube).
pub(super) fn next(bot: &mut Bot, view: &BotView) -> Task {
    if let Some(task) = interrupt(bot, view) {
        return task;
    }
    let Some(hand) = bot.free_hand(view) else {
        return bot.rest_for(0.2, 0.4);
    };
    let chase = bot.rng.below(CHASE_ONE_IN) == 0;
    if let Some(cube) = held_cube(bot, view).filter(|_| chase) {
        return Task::Chase(Chase {
            cube,
            hand,
            squeezed_at: None,
            give_up_at: bot.now + CHASE_TIMEOUT_STEPS,
        });
    }
    Task::Camp(Camp {
        hand,
        until: bot.now + CAMP_STEPS,
    })
}

/// Something better than what a free contender is doing: a cube in flight to catch, or a hand to beat to a cube.
pub(super) fn interrupt(bot: &mut Bot, view: &BotView) -> Option<Task> {
    if bot.holding(view).is_some() {
        return None;
    }
    if let Some(catch) = catcher::plan(bot, view) {
        return Some(Task::Catch(catch));
    }
    find_contest(bot, view).map(Task::Contest)
}

/// The reach the contender can get to first, the soonest: for every tracked empty hand on its way to a cube, the
/// free hand gets over that cube before the seen hand arrives (or within [`LATE_STEPS`] of it).
fn find_contest(bot: &mut Bot, view: &BotView) -> Option<Contest> {
    let hand = bot.free_hand(view)?;
    let from = bot.hands[hand.index()].position;
    let mut best: Option<Contest> = None;
    for rival in 0..anticipate::TRACKED_HANDS {
        let Some(aim) = rival_aim(bot, view, rival).filter(|a| a.eta_s <= MAX_ETA_S) else {
            continue;
        };
        bot.tracks.note_reach(rival, aim.grip);
        let arrive_step = arrival_step(bot, aim.eta_s);
        let travel_steps = (from.distance(aim.grip) / (HAND_SPEED_M_S * bot.dt)).ceil() as u64;
        if bot.now + travel_steps > arrive_step + LATE_STEPS || best.is_some_and(|b| b.arrive_step <= arrive_step) {
            continue;
        }
        best = Some(Contest {
            cube: aim.cube,
            hand,
            rival,
            arrive_step,
            doubt: 0,
            squeezed_at: None,
        });
    }
    best
}

/// Where tracked hand `rival` is heading, among the cubes the contender would take.
fn rival_aim(bot: &Bot, view: &BotView, rival: usize) -> Option<Aim> {
    let track = bot.tracks.get(rival)?;
    anticipate::predict(view.world, track, |id, s| takeable(bot, view, id, s))
}

/// A cube anyone might reach for: still, not held, not in a tower, nothing on it, not just let go of by this bot.
fn takeable(bot: &Bot, view: &BotView, id: BodyId, s: &BodyState) -> bool {
    scan::is_still(s)
        && !view.others_holding.contains(&id.0)
        && !bot.just_released(id)
        && bot
            .spots
            .iter()
            .all(|&spot| scan::flat_distance(spot, s.position) > TOWER_KEEP_OUT_M)
        && !scan::has_cube_on_top(view.world, id, s.position)
}

/// The step at which something `eta_s` away (s) arrives.
fn arrival_step(bot: &Bot, eta_s: f32) -> u64 {
    bot.now + (eta_s / bot.dt).round() as u64
}

pub(super) fn step_contest(bot: &mut Bot, view: &BotView, mut c: Contest) -> Task {
    let i = c.hand.index();
    if view.me.hand(c.hand).held.is_some() {
        return bot.after_grab(view, c.hand);
    }
    if let Some(at) = c.squeezed_at {
        bot.hands[i].grip = 1.0;
        return if bot.now > at + SQUEEZE_WAIT_STEPS {
            bot.next_task(view)
        } else {
            Task::Contest(c)
        };
    }
    if let Some(sooner) = find_contest(bot, view).filter(|s| s.arrive_step + SWITCH_SOONER_STEPS <= c.arrive_step) {
        return Task::Contest(sooner);
    }
    match rival_aim(bot, view, c.rival) {
        Some(aim) if aim.cube == c.cube => {
            c.arrive_step = arrival_step(bot, aim.eta_s);
            c.doubt = 0;
        }
        // Turning, or gone another way: the last estimate stands for a few steps.
        _ if c.doubt >= DOUBT_STEPS => return bot.next_task(view),
        _ => c.doubt += 1,
    }
    let usable = scan::dynamic(view.world, c.cube).filter(|s| takeable(bot, view, c.cube, s));
    let (Some(state), Ok(half)) = (usable, view.world.half_extents(c.cube)) else {
        return bot.next_task(view);
    };
    let grip = grip_point(view.world, c.cube, &state);
    let hand = &mut bot.hands[i];
    hand.approach(grip, HAND_SPEED_M_S, bot.dt);
    hand.grip = 0.0;
    let gap = point_box_distance(hand.position, state.position, state.rotation, half);
    let ahead_steps = (SQUEEZE_AHEAD_S / bot.dt).round() as u64;
    if gap <= SQUEEZE_DISTANCE_M && bot.now + ahead_steps >= c.arrive_step {
        // A quick squeeze, as a catch's: the grip closes on the planned step rather than ramping.
        hand.grip = 1.0;
        c.squeezed_at = Some(bot.now);
        bot.count_attempt(view, c.cube);
    } else if bot.now > c.arrive_step + LATE_STEPS {
        return bot.next_task(view);
    }
    Task::Contest(c)
}

pub(super) fn step_camp(bot: &mut Bot, view: &BotView, c: Camp) -> Task {
    if let Some(task) = interrupt(bot, view) {
        return task;
    }
    if bot.now >= c.until {
        return next(bot, view);
    }
    let wait_at = bot.tracks.wait_point() + Vec3::Y * CAMP_ABOVE_M;
    let hand = &mut bot.hands[c.hand.index()];
    hand.approach(wait_at, HAND_SPEED_M_S, bot.dt);
    hand.grip_towards(0.0);
    Task::Camp(c)
}

/// The cube another player holds nearest the contender's right hand.
fn held_cube(bot: &Bot, view: &BotView) -> Option<BodyId> {
    let me = bot.hands[HandSide::Right.index()].position;
    let mut best: Option<(BodyId, f32)> = None;
    for &id in view.others_holding {
        let Some(p) = cube_position(view.world, BodyId(id)) else {
            continue;
        };
        let d = p.distance(me);
        if best.is_none_or(|(_, b)| d < b) {
            best = Some((BodyId(id), d));
        }
    }
    best.map(|(id, _)| id)
}
fn cube_position(world: &World, id: BodyId) -> Option<Vec3> {
    match world.is_removed(id) {
        Ok(false) => world.state(id).ok().map(|s| s.position),
        _ => None,
    }
}

/// Chasing a held cube: the hand follows it and squeezes when close (refused while the cube is held). A reach the
/// contender can beat, or a cube in flight, comes first.
pub(super) fn step(bot: &mut Bot, view: &BotView, mut c: Chase) -> Task {
    if view.me.hand(c.hand).held.is_some() {
        return bot.after_grab(view, c.hand);
    }
    if c.squeezed_at.is_none() {
        if let Some(task) = interrupt(bot, view) {
            return task;
        }
    }
    let (Ok(state), Ok(half)) = (view.world.state(c.cube), view.world.half_extents(c.cube)) else {
        return bot.rest_for(0.2, 0.4);
    };
    if bot.now >= c.give_up_at || view.world.is_removed(c.cube).unwrap_or(true) {
        return bot.rest_for(0.2, 0.4);
    }
    let hand = &mut bot.hands[c.hand.index()];
    hand.approach(state.position, HAND_SPEED_M_S, bot.dt);
    match c.squeezed_at {
        None => {
            hand.grip_towards(0.0);
            let gap = point_box_distance(hand.position, state.position, state.rotation, half);
            if gap <= SQUEEZE_DISTANCE_M && hand.grip == 0.0 {
                c.squeezed_at = Some(bot.now);
                bot.count_attempt(view, c.cube);
            }
        }
        Some(at) => {
            hand.grip_towards(1.0);
            if bot.now > at + SQUEEZE_WAIT_STEPS {
                return bot.rest_for(0.2, 0.5);
            }
        }
    }
    Task::Chase(c)
}

/// Got one: lift it clear of the piles around and toss it at the tallest stack from there, so the hand stays among
/// the piles, ready for the next reach (a thrower's throw carries the cube metres away first, a put-down by the seat
/// and back takes five seconds or more). With no stack to aim at, the thrower's way: put it down by the seat.
pub(super) fn after_grab(bot: &mut Bot, view: &BotView, hand: HandSide) -> Task {
    let Some(held) = view.me.hand(hand).held else {
        return bot.next_task(view);
    };
    if scan::tallest(view.world, |id, _| !view.others_holding.contains(&id.0)).is_none() {
        return thrower::start(bot, view, hand);
    }
    let here = bot.hands[hand.index()].position;
    // Hand to the cube's bottom: the cube's centre below the hand plus its half height (under 0.87 m however turned).
    let hang = -(bot.hands[hand.index()].rotation * held.offset.position).y + 0.87;
    let clear_y = scan::path_top(view.world, here, here, TOSS_CLEAR_RADIUS_M) + hang + HAND_CLEARANCE_M;
    Task::Toss(Toss {
        hand,
        cube: held.body,
        stage: TossStage::Lift {
            to: Vec3::new(here.x, here.y.max(clear_y), here.z),
        },
    })
}

/// Up, then the swing: the hand moves at the launch velocity and opens on the last step.
pub(super) fn step_toss(bot: &mut Bot, view: &BotView, mut t: Toss) -> Task {
    if view.me.hand(t.hand).held.is_none() {
        return bot.next_task(view);
    }
    let i = t.hand.index();
    t.stage = match t.stage {
        TossStage::Lift { to } => {
            if !bot.hands[i].approach(to, HAND_SPEED_M_S, bot.dt) {
                return Task::Toss(t);
            }
            match toss_velocity(bot, view, t.cube) {
                Some(velocity) => TossStage::Swing {
                    velocity,
                    since: bot.now,
                },
                None => return thrower::start(bot, view, t.hand),
            }
        }
        TossStage::Swing { velocity, since } => {
            let k = bot.now - since;
            bot.hands[i].position += velocity * bot.dt;
            bot.hands[i].grip = if k >= TOSS_SWING_STEPS { 0.0 } else { 1.0 };
            TossStage::Swing { velocity, since }
        }
    };
    Task::Toss(t)
}

/// The launch velocity from where the swing will let the cube go to the top of the tallest stack, at a thrower's
/// speeds.
fn toss_velocity(bot: &mut Bot, view: &BotView, cube: BodyId) -> Option<Vec3> {
    let (_, target) = scan::tallest(view.world, |id, _| !view.others_holding.contains(&id.0))?;
    let from = view.world.state(cube).ok()?.position;
    let speed = bot
        .rng
        .range_f64(THROW_SPEED_MIN_M_S as f64, THROW_SPEED_MAX_M_S as f64) as f32;
    // Aimed from where the cube is let go, at the end of the swing, which itself depends on the aim: once is near
    // enough for a toss.
    let (first, _) = ballistic::aim(from, target.position, speed, bot.gravity, bot.dt);
    let release = from + first * ((TOSS_SWING_STEPS - 1) as f32 * bot.dt);
    Some(ballistic::aim(release, target.position, speed, bot.gravity, bot.dt).0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::Avatar;
    use crate::bots::{BotKind, SeenHand};
    use crate::interaction::{Interaction, InteractionEvent, GRAB_GRIP};
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    /// Steps the rival's hand needs from `start` over the target, then down to its grip point, at 3 m/s.
    const RIVAL_START_STEP: u64 = 240;

    /// Where player 1's right hand is seen at `step`: still until [`RIVAL_START_STEP`], then crossing at 2 m high
    /// along −z to over `grip`, then coming straight down to it, and stopping there.
    fn rival_hand(step: u64, from: Vec3, grip: Vec3, dt: f32) -> Vec3 {
        let travelled = step.saturating_sub(RIVAL_START_STEP) as f32 * HAND_SPEED_M_S * dt;
        let across = from.distance(Vec3::new(grip.x, from.y, grip.z));
        if travelled <= across {
            from + (Vec3::new(grip.x, from.y, grip.z) - from) * (travelled / across)
        } else {
            Vec3::new(grip.x, (from.y - (travelled - across)).max(grip.y), grip.z)
        }
    }

    #[test]
    fn the_contender_beats_a_seen_hand_to_the_cube_it_is_heading_for() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let mut add = |position| {
            world
                .add_body(&BodyDesc {
                    position,
                    ..BodyDesc::default()
                })
                .unwrap()
        };
        // The target, a cube off the rival's course, and one nearer the contender's seat (−z) than the target.
        let target = add(Vec3::new(2.0, 0.5, 0.0));
        let off_course = add(Vec3::new(3.25, 0.5, 2.0));
        let nearer_me = add(Vec3::new(-1.0, 0.5, -2.0));
        let dt = world.config().dt;
        let grip = Vec3::new(2.0, 1.0 + crate::bots::fetch::GRIP_ABOVE_M, 0.0);
        let from = Vec3::new(2.0, 2.0, 5.0);
        // The seen hand reaches the grip point after crossing 5 m and coming down 0.95 m at 3 m/s.
        let arrive_step = RIVAL_START_STEP + ((5.0 + (2.0 - grip.y)) / (HAND_SPEED_M_S * dt)).ceil() as u64;

        let mut bot = Bot::new(BotKind::Contender, 3, 7);
        let (mut avatar, mut interaction) = (Avatar::default(), Interaction::default());
        let mut squeezed_at = None;
        let mut grabbed = None;
        let mut aimed_at_target_from = None;
        for step in 0..arrive_step + 30 {
            let hand = rival_hand(step, from, grip, dt);
            let seen = [SeenHand {
                player: 1,
                side: HandSide::Right,
                position: hand,
                head: hand + Vec3::new(0.0, 0.3, 0.5),
                holding: false,
                reaching: true,
            }];
            let view = BotView {
                world: &world,
                me: &interaction,
                others_holding: &[],
                other_hands: &seen,
                active: true,
            };
            let input = bot.step(step, &view);
            if bot.target() == Some(target) {
                aimed_at_target_from.get_or_insert(step);
            }
            let right = input.hands[HandSide::Right.index()];
            if squeezed_at.is_none() && right.grip >= GRAB_GRIP {
                squeezed_at = Some(step);
                assert!(
                    right.pose.position.distance(grip) < 0.1,
                    "squeezed away from the cube: {right:?}"
                );
            }
            avatar.update(&input, dt);
            interaction.update(&mut world, &avatar).unwrap();
            for event in interaction.events() {
                if let InteractionEvent::Grabbed { body, .. } = event {
                    grabbed.get_or_insert((*body, step));
                }
            }
            world.step();
        }
        // It went for the cube the seen hand was heading for (not the ones nearer it or beside the course) as soon
        // as the course showed it, with time to get there first...
        let aimed = aimed_at_target_from.expect("the contender never went for the target");
        assert!(
            aimed + 60 < arrive_step,
            "aimed at {aimed}, the seen hand arrives at {arrive_step}"
        );
        // ...and squeezed just before the seen hand got there: within the one-way delay (50 ms ≈ 5 steps) of the
        // squeeze that hand's player makes about 30 ms after arriving, as of ~100 ms earlier.
        let squeezed = squeezed_at.expect("the contender never squeezed");
        let ahead = arrive_step as i64 - squeezed as i64;
        assert!(
            (1..=8).contains(&ahead),
            "squeezed {ahead} steps before the seen arrival"
        );
        assert_eq!(grabbed, Some((target, squeezed)));
        assert_ne!(grabbed.map(|g| g.0), Some(off_course));
        assert_ne!(grabbed.map(|g| g.0), Some(nearer_me));
        assert_eq!(bot.counters().contested_attempts, 1);
    }
}
