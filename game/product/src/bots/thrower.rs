//! The thrower: takes a loose cube and throws it at the tallest stack it can find, every few seconds. The throw is
//! planned in whole steps (`ballistic::aim`): a release point 4–6 m from the target and up to 1.5 m above it, a
//! speed of 7–11 m/s, the flattest arc at that speed. The hand carries the cube to the start of an 8-step swing,
//! holds still, swings at the launch velocity and opens on the last step, so the interaction's 5-step velocity
//! average is exactly the swing's.

use glam::Vec3;
use tumble_engine::physics::BodyId;

use super::ballistic;
use super::fetch::{self, CORRIDOR_M, HAND_CLEARANCE_M};
use super::motion::HAND_SPEED_M_S;
use super::scan;
use super::{place, Bot, BotView, Task, ThrowRecord};
use crate::avatar::HandSide;

/// Release points lie this far (m, horizontally) from the target, on the thrower's side.
pub const THROW_DISTANCE_MIN_M: f32 = 4.0;
pub const THROW_DISTANCE_MAX_M: f32 = 6.0;
/// …and this high (m) above it, but never lower than [`MIN_RELEASE_HEIGHT_M`].
pub const THROW_RISE_MIN_M: f32 = 0.5;
pub const THROW_RISE_MAX_M: f32 = 1.5;
pub const MIN_RELEASE_HEIGHT_M: f32 = 1.2;
/// Launch speeds (m/s). `ballistic::aim` takes the first whole step at or under the speed, a few % slower.
pub const THROW_SPEED_MIN_M_S: f32 = 7.0;
pub const THROW_SPEED_MAX_M_S: f32 = 11.0;
/// Steps of the swing at constant velocity; the grip opens on the last. At least the velocity window (5).
pub const SWING_STEPS: u64 = 8;
/// Steps the hand holds still at the start of the swing (a wind-up pause).
const AIM_STEPS: u64 = 10;
/// Pause after a throw (s).
const PAUSE_MIN_S: f32 = 1.0;
const PAUSE_MAX_S: f32 = 3.0;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Carry,
    Aim {
        since: u64,
    },
    /// `since`: the step of the swing's first move.
    Swing {
        since: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Throw {
    pub(super) hand: HandSide,
    pub(super) cube: BodyId,
    target: Vec3,
    velocity: Vec3,
    flight_steps: u32,
    /// The hand's position when the swing starts.
    swing_from: Vec3,
    cruise_y: f32,
    stage: Stage,
}

impl Throw {
    pub(super) fn record(&self, cube: BodyId, release_step: u64) -> ThrowRecord {
        ThrowRecord {
            cube,
            target: self.target,
            velocity: self.velocity,
            flight_steps: self.flight_steps,
            release_step,
        }
    }
}

pub(super) fn next(bot: &mut Bot, view: &BotView) -> Task {
    let near = bot.hands[HandSide::Right.index()].position;
    match fetch::pick_free(bot, view, near) {
        Some(cube) => fetch::start(bot, view, cube, HandSide::Right),
        None => bot.rest_for(0.5, 1.5),
    }
}

pub(super) fn after_grab(bot: &mut Bot, view: &BotView, hand: HandSide) -> Task {
    start(bot, view, hand)
}

/// Plans a throw of the cube in `hand` at the top of the tallest stack (or puts it down by the seat if there is
/// none).
pub(super) fn start(bot: &mut Bot, view: &BotView, hand: HandSide) -> Task {
    let Some(held) = view.me.hand(hand).held else {
        return bot.rest_for(0.2, 0.5);
    };
    let target = scan::tallest(view.world, |id, _| !view.others_holding.contains(&id.0));
    let Some((_, target)) = target else {
        let spot = bot.seat.put_aside_spot(0.0);
        return place::start(bot, view, hand, spot);
    };
    let target = target.position;
    let i = hand.index();
    let from = bot.hands[i].position;
    let mut back = Vec3::new(from.x - target.x, 0.0, from.z - target.z).normalize_or_zero();
    if back == Vec3::ZERO {
        back = -bot.seat.forward;
    }
    let distance = bot
        .rng
        .range_f64(THROW_DISTANCE_MIN_M as f64, THROW_DISTANCE_MAX_M as f64) as f32;
    let rise = bot.rng.range_f64(THROW_RISE_MIN_M as f64, THROW_RISE_MAX_M as f64) as f32;
    let speed = bot
        .rng
        .range_f64(THROW_SPEED_MIN_M_S as f64, THROW_SPEED_MAX_M_S as f64) as f32;
    let mut release = target + back * distance + Vec3::Y * rise;
    release.y = release.y.max(MIN_RELEASE_HEIGHT_M);
    let (velocity, flight_steps) = ballistic::aim(release, target, speed, bot.gravity, bot.dt);
    // The cube is let go where the hand put it on the step before the grip opens.
    let cube_from_hand = bot.hands[i].rotation * held.offset.position;
    let swing_from = release - velocity * ((SWING_STEPS - 1) as f32 * bot.dt) - cube_from_hand;
    // Hand to the cube's bottom: the cube's centre below the hand plus its half height (under 0.87 m however turned).
    let hang = -cube_from_hand.y + 0.87;
    let cruise_y = scan::path_top(view.world, from, swing_from, CORRIDOR_M) + hang + HAND_CLEARANCE_M;
    Task::Throw(Throw {
        hand,
        cube: held.body,
        target,
        velocity,
        flight_steps,
        swing_from,
        cruise_y,
        stage: Stage::Carry,
    })
}

pub(super) fn step(bot: &mut Bot, view: &BotView, mut t: Throw) -> Task {
    if view.me.hand(t.hand).held.is_none() {
        return bot.rest_for(PAUSE_MIN_S, PAUSE_MAX_S);
    }
    let hand = &mut bot.hands[t.hand.index()];
    t.stage = match t.stage {
        Stage::Carry => {
            if hand.travel(t.swing_from, t.cruise_y, HAND_SPEED_M_S, bot.dt) {
                Stage::Aim { since: bot.now }
            } else {
                Stage::Carry
            }
        }
        // The swing's first step is the next one: its hand moves one step's worth.
        Stage::Aim { since } if bot.now >= since + AIM_STEPS => Stage::Swing { since: bot.now + 1 },
        Stage::Aim { since } => Stage::Aim { since },
        Stage::Swing { since } => {
            let k = (bot.now - since + 1).min(SWING_STEPS);
            hand.position = t.swing_from + t.velocity * (k as f32 * bot.dt);
            hand.grip = if k >= SWING_STEPS { 0.0 } else { 1.0 };
            Stage::Swing { since }
        }
    };
    Task::Throw(t)
}
