//! Reach for a loose cube and take it: the hand goes over the piles to 5 cm above the cube's top, squeezes, and
//! waits for the interaction to say the cube is held. A cube that starts moving, that someone else takes, or that
//! the squeeze does not get is given up (and left alone for a while).

use glam::Vec3;
use tumble_engine::physics::{BodyId, BodyState};

use super::motion::HAND_SPEED_M_S;
use super::scan::{self, COLUMN_RADIUS_M};
use super::{Bot, BotView, Task, CONTEST_RADIUS_M};
use crate::avatar::HandSide;

/// The hand stops this far (m) above the cube's highest point: within the interaction's 10 cm reach.
pub const GRIP_ABOVE_M: f32 = 0.05;
/// An empty hand passes this far (m) above the piles on its way.
pub const HAND_CLEARANCE_M: f32 = 0.3;
/// Cubes whose centres are within this distance (m, horizontally) of the path count as under it.
pub const CORRIDOR_M: f32 = 1.0;
/// Steps a squeeze waits for the hold before giving up.
const SQUEEZE_WAIT_STEPS: u64 = 12;
/// A reach that takes longer than this (steps, 10 s) is given up.
const FETCH_TIMEOUT_STEPS: u64 = 900;
/// Cubes this close (m, horizontally) to any tower spot belong to a tower: nobody takes them.
const TOWER_KEEP_OUT_M: f32 = COLUMN_RADIUS_M + 0.6;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Fetch {
    pub(super) cube: BodyId,
    pub(super) hand: HandSide,
    cruise_y: f32,
    squeezed_at: Option<u64>,
    give_up_at: u64,
}

/// Loose cubes: still, not in anyone's hand or reach, not part of a tower, nothing lying on them, not one this bot
/// just failed to get. The one nearest `near`.
pub(super) fn pick_free(bot: &Bot, view: &BotView, near: Vec3) -> Option<BodyId> {
    let accept = |id: BodyId, s: &BodyState| {
        scan::is_still(s)
            && !view.others_holding.contains(&id.0)
            && !bot.recently_failed(id)
            && !bot.just_released(id)
            && bot
                .spots
                .iter()
                .all(|&spot| scan::flat_distance(spot, s.position) > TOWER_KEEP_OUT_M)
            && view
                .other_hands
                .iter()
                .all(|h| !h.reaching || h.position.distance(s.position) > CONTEST_RADIUS_M)
            && !scan::has_cube_on_top(view.world, id, s.position)
    };
    scan::nearest(view.world, near, accept).map(|(id, _)| id)
}

/// Goes for `cube` with `hand`.
pub(super) fn start(bot: &mut Bot, view: &BotView, cube: BodyId, hand: HandSide) -> Task {
    let Some(state) = scan::dynamic(view.world, cube) else {
        return bot.rest_for(0.2, 0.5);
    };
    let from = bot.hands[hand.index()].position;
    let cruise_y = scan::path_top(view.world, from, state.position, CORRIDOR_M) + HAND_CLEARANCE_M;
    Task::Fetch(Fetch {
        cube,
        hand,
        cruise_y,
        squeezed_at: None,
        give_up_at: bot.now + FETCH_TIMEOUT_STEPS,
    })
}

pub(super) fn step(bot: &mut Bot, view: &BotView, mut f: Fetch) -> Task {
    if view.me.hand(f.hand).held.is_some() {
        return bot.after_grab(view, f.hand);
    }
    let i = f.hand.index();
    match f.squeezed_at {
        None => {
            let usable = scan::dynamic(view.world, f.cube)
                .filter(|s| scan::is_still(s) && !view.others_holding.contains(&f.cube.0));
            let Some(state) = usable.filter(|_| bot.now < f.give_up_at) else {
                return give_up(bot, f.cube);
            };
            let top = scan::top_of(view.world, f.cube, &state);
            let grip_at = Vec3::new(state.position.x, top + GRIP_ABOVE_M, state.position.z);
            bot.hands[i].grip_towards(0.0);
            if bot.hands[i].travel(grip_at, f.cruise_y, HAND_SPEED_M_S, bot.dt) {
                f.squeezed_at = Some(bot.now);
                bot.count_attempt(view, f.cube);
            }
        }
        Some(at) => {
            bot.hands[i].grip_towards(1.0);
            if bot.now > at + SQUEEZE_WAIT_STEPS {
                return give_up(bot, f.cube);
            }
        }
    }
    Task::Fetch(f)
}

fn give_up(bot: &mut Bot, cube: BodyId) -> Task {
    bot.remember_failed(cube);
    bot.rest_for(0.2, 0.6)
}
