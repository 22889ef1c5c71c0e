//! The catcher: watches for cubes in flight, predicts each one's path (`ballistic`, as the physics step will fly
//! it), picks the first point on it that a free hand can reach in time, waits there and squeezes about 50 ms
//! before the cube's face comes within reach (the interaction keeps a closed hand grabbing for 100 ms). A caught
//! cube is passed to the other hand, then put down by the seat or thrown at the tallest stack.
//!
//! The contender uses the same plan (without the catcher's range) to go for the cube a catcher would catch.

use glam::Vec3;
use tumble_engine::physics::BodyId;

use super::ballistic::{position_after, velocity_after};
use super::motion::HAND_SPEED_M_S;
use super::scan;
use super::seat::rest_hand;
use super::{place, thrower, Bot, BotKind, BotView, Task};
use crate::avatar::HandSide;
use crate::interaction::REACH_M;

/// A catcher only goes for catches within this distance (m, horizontally) of its resting hands.
pub const CATCH_RANGE_M: f32 = 5.0;
/// A catcher waits this far (m) in front of its seat, at the edge of the piles, where throws fly.
pub const CATCHER_STAND_IN_M: f32 = 1.5;
/// Catch points lower than this (m) are left to the ground.
pub const CATCH_MIN_HEIGHT_M: f32 = 0.9;
/// How far ahead (steps) a path is followed: 1.5 s.
pub const CATCH_LOOKAHEAD_STEPS: u32 = 135;
/// The squeeze comes this many steps (≈ 50 ms) before the cube's face is within reach.
pub const SQUEEZE_LEAD_STEPS: u64 = 4;
/// Steps the hand needs in hand beyond the travel time: to be still and squeezed before the cube comes.
const SPARE_STEPS: u32 = SQUEEZE_LEAD_STEPS as u32 + 4;
/// A catch not made this many steps after the planned arrival was missed.
const MISS_STEPS: u64 = 10;
/// A cube that leaves its predicted path by more than this (m) — it hit something — is planned again.
const OFF_PATH_M: f32 = 0.3;
/// Steps the receiving hand gets to take a passed cube.
const PASS_TIMEOUT_STEPS: u64 = 270;
/// Steps the giving hand waits, open, after a pass.
const PASS_LET_GO_STEPS: u64 = 10;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Catch {
    pub(super) cube: BodyId,
    pub(super) hand: HandSide,
    /// Where the cube's centre will be at `arrive_step`: where the hand waits.
    point: Vec3,
    arrive_step: u64,
    squeeze_step: u64,
    squeezed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum PassStage {
    Reach,
    LetGo { since: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Pass {
    pub(super) cube: BodyId,
    /// The hand giving the cube; the other one takes it.
    from: HandSide,
    stage: PassStage,
    give_up_at: u64,
}

/// The earliest catch a free hand can make: a catcher within [`CATCH_RANGE_M`] of its resting hands, a contender
/// anywhere its hand can get to in time.
pub(super) fn plan(bot: &Bot, view: &BotView) -> Option<Catch> {
    let mut best: Option<Catch> = None;
    for id in view.world.body_ids() {
        let Some(s) = scan::dynamic(view.world, id) else {
            continue;
        };
        if !scan::is_flying(&s) || bot.just_released(id) || view.others_holding.contains(&id.0) {
            continue;
        }
        if let Some(catch) = first_reachable(bot, view, id, s.position, s.linear_velocity) {
            if best.is_none_or(|b| catch.arrive_step < b.arrive_step) {
                best = Some(catch);
            }
        }
    }
    best
}

/// The first point of the cube's predicted path that a free hand reaches with time to spare.
fn first_reachable(bot: &Bot, view: &BotView, cube: BodyId, p0: Vec3, v0: Vec3) -> Option<Catch> {
    let centre = (bot.rest_hand(HandSide::Left) + bot.rest_hand(HandSide::Right)) * 0.5;
    for n in SPARE_STEPS + 1..=CATCH_LOOKAHEAD_STEPS {
        let point = position_after(p0, v0, bot.gravity, bot.dt, n);
        if point.y < CATCH_MIN_HEIGHT_M {
            return None;
        }
        if bot.kind == BotKind::Catcher && scan::flat_distance(point, centre) > CATCH_RANGE_M {
            continue;
        }
        let reach_m = HAND_SPEED_M_S * bot.dt * (n - SPARE_STEPS) as f32;
        let reaches =
            |h: &HandSide| view.me.hand(*h).held.is_none() && bot.hands[h.index()].position.distance(point) <= reach_m;
        if let Some(hand) = [HandSide::Right, HandSide::Left].into_iter().find(reaches) {
            let speed = velocity_after(v0, bot.gravity, bot.dt, n).length().max(0.1);
            // The face (half a cube, plus reach) comes within reach this many steps before the centre arrives.
            let in_reach = ((0.5 + REACH_M) / (speed * bot.dt)).ceil() as u64;
            let arrive_step = bot.now + n as u64;
            return Some(Catch {
                cube,
                hand,
                point,
                arrive_step,
                squeeze_step: arrive_step.saturating_sub(in_reach + SQUEEZE_LEAD_STEPS).max(bot.now),
                squeezed: false,
            });
        }
    }
    None
}

pub(super) fn next(bot: &mut Bot, view: &BotView) -> Task {
    match plan(bot, view) {
        Some(catch) => Task::Catch(catch),
        None => bot.rest_for(0.1, 0.2),
    }
}

pub(super) fn step_catch(bot: &mut Bot, view: &BotView, mut c: Catch) -> Task {
    if view.me.hand(c.hand).held.is_some() {
        return bot.after_grab(view, c.hand);
    }
    let Some(s) = scan::dynamic(view.world, c.cube) else {
        return bot.rest_for(0.1, 0.3); // caught by someone else, or gone
    };
    if bot.now > c.arrive_step + MISS_STEPS {
        return bot.rest_for(0.1, 0.3);
    }
    if bot.now < c.arrive_step {
        let n = (c.arrive_step - bot.now) as u32;
        let predicted = position_after(s.position, s.linear_velocity, bot.gravity, bot.dt, n);
        if predicted.distance(c.point) > OFF_PATH_M && !c.squeezed {
            return plan(bot, view).map_or_else(|| bot.rest_for(0.1, 0.3), Task::Catch);
        }
    }
    let hand = &mut bot.hands[c.hand.index()];
    hand.approach(c.point, HAND_SPEED_M_S, bot.dt);
    if bot.now >= c.squeeze_step && !c.squeezed {
        c.squeezed = true;
        bot.count_attempt(view, c.cube);
    }
    // A quick squeeze: the grip jumps closed on the planned step rather than ramping, so the timing is exact.
    bot.hands[c.hand.index()].grip = if c.squeezed { 1.0 } else { 0.0 };
    Task::Catch(c)
}

pub(super) fn after_grab(bot: &mut Bot, view: &BotView, hand: HandSide) -> Task {
    let Some(held) = view.me.hand(hand).held else {
        return bot.rest_for(0.1, 0.3);
    };
    Task::Pass(Pass {
        cube: held.body,
        from: hand,
        stage: PassStage::Reach,
        give_up_at: bot.now + PASS_TIMEOUT_STEPS,
    })
}

/// The other hand goes into the held cube and squeezes (taking it from the first hand), then the first opens.
pub(super) fn step_pass(bot: &mut Bot, view: &BotView, mut p: Pass) -> Task {
    let to = p.from.other();
    let held_by = |h: HandSide| view.me.hand(h).held.is_some_and(|held| held.body == p.cube);
    if !held_by(p.from) && !held_by(to) || bot.now >= p.give_up_at {
        return after_pass(bot, view);
    }
    let (giver, taker) = (p.from.index(), to.index());
    p.stage = match p.stage {
        PassStage::Reach => {
            let centre = view
                .world
                .state(p.cube)
                .map_or(bot.hands[taker].position, |s| s.position);
            let there = bot.hands[taker].approach(centre, HAND_SPEED_M_S, bot.dt);
            bot.hands[taker].grip_towards(if there { 1.0 } else { 0.0 });
            if held_by(to) {
                PassStage::LetGo { since: bot.now }
            } else {
                PassStage::Reach
            }
        }
        PassStage::LetGo { since } => {
            bot.hands[giver].grip_towards(0.0);
            if bot.now >= since + PASS_LET_GO_STEPS {
                return after_pass(bot, view);
            }
            PassStage::LetGo { since }
        }
    };
    Task::Pass(p)
}

/// With the cube in one hand: put it down in front of the seat, or throw it.
fn after_pass(bot: &mut Bot, view: &BotView) -> Task {
    let Some(hand) = bot.holding(view) else {
        return bot.rest_for(0.2, 0.5);
    };
    if bot.random_bool() {
        thrower::start(bot, view, hand)
    } else {
        let aside = bot.rng.next_f64() as f32 * 2.0 - 1.0;
        place::start(bot, view, hand, bot.seat.put_aside_spot(aside))
    }
}

impl Bot {
    /// Where `side` rests for the head as it stands now.
    fn rest_hand(&self, side: HandSide) -> Vec3 {
        rest_hand(self.head.position, self.seat.forward, side)
    }
}
