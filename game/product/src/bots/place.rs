//! Carry the held cube to a spot and put it down: over the piles to 30 cm above whatever lies on the spot, lowered
//! slowly until its bottom is 2 mm above that, held still until the hand's averaged velocity is zero, then the
//! grip opens. Released that slowly the interaction places it with no velocity, so a tower grows straight.

use glam::Vec3;

use super::fetch::{CORRIDOR_M, HAND_CLEARANCE_M};
use super::motion::{HAND_SPEED_M_S, LOWER_SPEED_M_S};
use super::scan;
use super::{Bot, BotView, Task};
use crate::avatar::{HandSide, VELOCITY_WINDOW_STEPS};

/// The slow last stretch of the way down (m).
pub const LOWER_M: f32 = 0.3;
/// The placed cube's bottom is let go this far (m) above the top it is put on: no overlap to push out.
pub const PLACE_GAP_M: f32 = 0.002;
/// Boxes whose centres are this close (m, horizontally) can be under a placed cube.
const FOOTPRINT_M: f32 = 1.1;
/// Steps the hand holds still before opening: the velocity window, and a few more.
const SETTLE_STEPS: u64 = VELOCITY_WINDOW_STEPS as u64 + 4;
/// A placing that takes longer than this (steps, 20 s) lets go where it is.
const PLACE_TIMEOUT_STEPS: u64 = 1800;
/// A bot told to stop lets go of what it holds within this (steps, 3 s), put down or not: a session's last
/// seconds are for the world to rest in, and a cube caught high up and lowered slowly (seen: 3.8 m up when the
/// session's 10 s settle began, still held and moving at the end) would keep it awake to the end.
pub const RETIRE_PLACE_STEPS: u64 = 270;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Carry,
    Lower,
    Settle { since: u64 },
    Open,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Place {
    pub(super) hand: HandSide,
    /// On the ground: the cube goes on top of whatever lies within the column radius of it.
    spot: Vec3,
    cruise_y: f32,
    stage: Stage,
    give_up_at: u64,
}

/// Puts the cube held in `hand` on `spot`.
pub(super) fn start(bot: &mut Bot, view: &BotView, hand: HandSide, spot: Vec3) -> Task {
    start_within(bot, view, hand, spot, PLACE_TIMEOUT_STEPS)
}

/// [`start`], letting go where the hand is if the cube is not put down within `steps`.
pub(super) fn start_within(bot: &mut Bot, view: &BotView, hand: HandSide, spot: Vec3, steps: u64) -> Task {
    let Some(held) = view.me.hand(hand).held else {
        return bot.rest_for(0.1, 0.3);
    };
    let from = bot.hands[hand.index()].position;
    let hang = view.world.state(held.body).map_or(1.0, |s| {
        from.y - (2.0 * s.position.y - scan::top_of(view.world, held.body, &s))
    });
    let cruise_y = scan::path_top(view.world, from, spot, CORRIDOR_M) + hang + HAND_CLEARANCE_M;
    Task::Place(Place {
        hand,
        spot,
        cruise_y,
        stage: Stage::Carry,
        give_up_at: bot.now + steps,
    })
}

pub(super) fn step(bot: &mut Bot, view: &BotView, mut p: Place) -> Task {
    let Some(held) = view.me.hand(p.hand).held else {
        return bot.rest_for(0.3, 1.0);
    };
    let Ok(cube) = view.world.state(held.body) else {
        return bot.rest_for(0.3, 1.0);
    };
    let i = p.hand.index();
    let hand = &mut bot.hands[i];
    // Where the cube sits relative to the hand, and how far its box reaches down from its centre.
    let cube_from_hand = hand.rotation * held.offset.position;
    let half_height = scan::top_of(view.world, held.body, &cube) - cube.position.y;
    // On the column's top cube if the spot has one (a leaning tower is followed), on the ground otherwise; at the
    // height of the highest box under the cube's footprint, so it is never put down inside a neighbour. Only what
    // lies below the cube counts: a cube that landed on it would otherwise lift it forever.
    let column = scan::column_below(view.world, p.spot, cube.position.y);
    let on = if column.count > 0 { column.top_center } else { p.spot };
    let under = scan::path_top_below(view.world, on, on, FOOTPRINT_M, cube.position.y);
    let put_at = Vec3::new(on.x, under + half_height + PLACE_GAP_M, on.z);
    let hand_at = put_at - cube_from_hand;
    if bot.now >= p.give_up_at {
        p.stage = Stage::Open;
    }
    // Each guard moves the hand; a stage that is not done yet stays (the last arm).
    p.stage = match p.stage {
        Stage::Carry if hand.travel(hand_at + Vec3::Y * LOWER_M, p.cruise_y, HAND_SPEED_M_S, bot.dt) => Stage::Lower,
        // Slowly down; quickly up, when something came to lie under the cube on the way.
        Stage::Lower if hand.approach(hand_at, lower_speed(hand.position, hand_at), bot.dt) => {
            Stage::Settle { since: bot.now }
        }
        Stage::Settle { since } if bot.now >= since + SETTLE_STEPS => Stage::Open,
        Stage::Open => {
            hand.grip_towards(0.0);
            Stage::Open
        }
        stage => stage,
    };
    Task::Place(p)
}

fn lower_speed(hand: Vec3, target: Vec3) -> f32 {
    if target.y > hand.y {
        HAND_SPEED_M_S
    } else {
        LOWER_SPEED_M_S
    }
}
