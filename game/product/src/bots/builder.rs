//! The builder: towers of 5–10 cubes on the spots near its seat. It takes the loose cube nearest the tower, carries
//! it over the piles and puts it down slowly on top; when the tower reaches its height, or has lost cubes (knocked
//! over), it starts the next one on its next spot.

use tumble_net::rng::Rng;

use super::seat::BUILD_SPOTS;
use super::{fetch, place, scan, Bot, BotView, Task};
use crate::avatar::HandSide;

/// Tower heights a builder aims for (cubes).
pub const TOWER_MIN_CUBES: u32 = 5;
pub const TOWER_MAX_CUBES: u32 = 10;
/// A tower that has this many cubes fewer than it had was knocked over.
const KNOCKED_LOSS_CUBES: u32 = 2;

/// The tower being built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Build {
    /// Which of the seat's spots.
    spot: usize,
    /// Cubes it should reach.
    goal: u32,
    /// The most it has had.
    best: u32,
}

impl Build {
    pub(super) fn new(rng: &mut Rng) -> Build {
        Build {
            spot: 0,
            goal: random_goal(rng),
            best: 0,
        }
    }
}

fn random_goal(rng: &mut Rng) -> u32 {
    TOWER_MIN_CUBES + rng.below((TOWER_MAX_CUBES - TOWER_MIN_CUBES + 1) as usize) as u32
}

pub(super) fn next(bot: &mut Bot, view: &BotView) -> Task {
    let mut spot = bot.seat.build_spot(bot.build.spot);
    let count = scan::column(view.world, spot).count;
    bot.build.best = bot.build.best.max(count);
    if count >= bot.build.goal || count + KNOCKED_LOSS_CUBES <= bot.build.best {
        bot.build.spot = (bot.build.spot + 1) % BUILD_SPOTS;
        bot.build.goal = random_goal(&mut bot.rng);
        spot = bot.seat.build_spot(bot.build.spot);
        bot.build.best = scan::column(view.world, spot).count;
    }
    match fetch::pick_free(bot, view, spot) {
        Some(cube) => fetch::start(bot, view, cube, HandSide::Right),
        None => bot.rest_for(0.5, 1.5),
    }
}

pub(super) fn after_grab(bot: &mut Bot, view: &BotView, hand: HandSide) -> Task {
    let spot = bot.seat.build_spot(bot.build.spot);
    place::start(bot, view, hand, spot)
}
