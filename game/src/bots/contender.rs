//! The contender: makes conflicts on purpose. It goes for a cube another player holds (the nearest such), else the
//! cube nearest another player's hand (about to be grabbed), else the cube a catcher would catch; squeezes on
//! it when in reach and, if it gets the cube, throws it or puts it down by its own seat. In one shared world a
//! cube someone holds is kinematic and cannot be taken (the squeeze is counted all the same); in a session each
//! player's world decides locally and the host judges the claims.

use glam::Vec3;
use tumble_engine::physics::{BodyId, World};

use super::motion::HAND_SPEED_M_S;
use super::{catcher, place, scan, thrower, Bot, BotView, Task, CONTEST_RADIUS_M};
use crate::avatar::HandSide;
use crate::interaction::select::point_box_distance;

/// The hand squeezes once it is this close (m) to the cube's surface (the interaction reaches 10 cm).
const SQUEEZE_DISTANCE_M: f32 = 0.06;
/// Steps a squeeze waits for the hold.
const SQUEEZE_WAIT_STEPS: u64 = 10;
/// A chase longer than this (steps, 4 s) is given up.
const CHASE_TIMEOUT_STEPS: u64 = 360;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Chase {
    pub(super) cube: BodyId,
    pub(super) hand: HandSide,
    squeezed_at: Option<u64>,
    give_up_at: u64,
}

pub(super) fn next(bot: &mut Bot, view: &BotView) -> Task {
    if let Some(catch) = catcher::plan(bot, view) {
        return Task::Catch(catch);
    }
    let (Some(cube), Some(hand)) = (contested_cube(bot, view), bot.free_hand(view)) else {
        return bot.rest_for(0.2, 0.4);
    };
    Task::Chase(Chase {
        cube,
        hand,
        squeezed_at: None,
        give_up_at: bot.now + CHASE_TIMEOUT_STEPS,
    })
}

/// The held cube nearest the contender's right hand, else the cube nearest any other player's hand (within
/// [`CONTEST_RADIUS_M`] of its centre).
fn contested_cube(bot: &Bot, view: &BotView) -> Option<BodyId> {
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
    if let Some((id, _)) = best {
        return Some(id);
    }
    for hand in view.other_hands {
        let near = scan::nearest(view.world, *hand, |id, s| {
            s.position.distance(*hand) <= CONTEST_RADIUS_M && !bot.just_released(id)
        });
        if let Some((id, s)) = near {
            let d = s.position.distance(*hand);
            if best.is_none_or(|(_, b)| d < b) {
                best = Some((id, d));
            }
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

pub(super) fn step(bot: &mut Bot, view: &BotView, mut c: Chase) -> Task {
    if view.me.hand(c.hand).held.is_some() {
        return bot.after_grab(view, c.hand);
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

/// Got one: throw it at the tallest stack, or put it down in front of its own seat.
pub(super) fn after_grab(bot: &mut Bot, view: &BotView, hand: HandSide) -> Task {
    if bot.random_bool() {
        thrower::start(bot, view, hand)
    } else {
        let aside = bot.rng.next_f64() as f32 * 2.0 - 1.0;
        place::start(bot, view, hand, bot.seat.put_aside_spot(aside))
    }
}
