//! The drivers of a networked game's seats: each step's hands for one player, from a bot, a script or nothing.
//! `tumble host --bots`, `tumble local` and the test bench's `tumble session` choose them by name
//! ([`make_driver`]).

use anyhow::{bail, Result};

use super::conflict::ConflictDriver;
use super::{Bot, BotKind, BotView, SeenHand};
use crate::authority::NOBODY;
use crate::avatar::{AvatarInput, HandSide};
use crate::session::peer::Peer;

/// Makes one player's hands move: called once per step for each player.
pub trait Driver: Send {
    /// This step's input for the player on `peer` (`active`: false once the run is settling).
    fn input(&mut self, step: u64, peer: &Peer, active: bool) -> AvatarInput;

    /// Called after the step's deliveries, just before the physics step: game code that drives bodies with
    /// forces (the cube game) pushes them here. Does nothing unless a driver needs it.
    fn before_physics(&mut self, _step: u64, _peer: &mut Peer, _active: bool) -> Result<()> {
        Ok(())
    }

    /// Wall time this driver spent driving its player (s), for the harness's CPU figures.
    fn cpu_s(&self) -> f64 {
        0.0
    }
}

/// Plays a keyframed [`AvatarScript`](crate::interaction::script::AvatarScript); no script: hands untracked.
pub struct ScriptDriver(pub Option<crate::interaction::script::AvatarScript>);

impl Driver for ScriptDriver {
    fn input(&mut self, step: u64, _peer: &Peer, _active: bool) -> AvatarInput {
        match &self.0 {
            Some(script) => script.sample(step.min(u64::from(u32::MAX)) as u32),
            None => AvatarInput::default(),
        }
    }
}

/// Every name `--bots` accepts (and `conflict`, which `--conflict-test` uses).
pub const DRIVER_NAMES: [&str; 7] = [
    "builder",
    "thrower",
    "contender",
    "catcher",
    "hostile",
    "idle",
    "conflict",
];

/// The driver for a seat.
pub fn make_driver(name: &str, player: u8, seed: u64) -> Result<Box<dyn Driver>> {
    let bot = |kind| -> Box<dyn Driver> { Box::new(BotDriver::new(Bot::new(kind, player, seed))) };
    Ok(match name {
        "builder" => bot(BotKind::Builder),
        "thrower" => bot(BotKind::Thrower),
        "contender" => bot(BotKind::Contender),
        "catcher" => bot(BotKind::Catcher),
        "conflict" => Box::new(ConflictDriver::new()),
        // The hostile guest's hands stay still: what it does is forge messages (`session::hostile`).
        "idle" | "hostile" => Box::new(ScriptDriver(None)),
        other => bail!("unknown bot '{other}': one of {}", DRIVER_NAMES.join(", ")),
    })
}

/// A hand further than this from its head (m) is reaching out; a resting hand is 0.63 m from it.
const REACHING_OUT_M: f32 = 0.8;

/// A bot in a seat: it sees its peer's world, its own hands, the cubes others hold there and the other players'
/// hands as its peer plays them out.
pub struct BotDriver {
    bot: Bot,
    others_holding: Vec<u32>,
    other_hands: Vec<SeenHand>,
}

impl BotDriver {
    pub fn new(bot: Bot) -> Self {
        Self {
            bot,
            others_holding: Vec::with_capacity(16),
            other_hands: Vec::with_capacity(16),
        }
    }
}

impl Driver for BotDriver {
    fn input(&mut self, step: u64, peer: &Peer, active: bool) -> AvatarInput {
        self.others_holding.clear();
        self.other_hands.clear();
        let me = peer.player();
        for c in 0..peer.table.len() as u32 {
            let h = peer.table.holder(c);
            if h != NOBODY && h != me {
                self.others_holding.push(c);
            }
        }
        // The other players' tracked hands as this peer plays them out: what a player would see of them. A hand
        // near its head is at rest, not reaching.
        for player in (1..=super::seat::SEATS as u8).filter(|&p| p != me) {
            if let Some(avatar) = peer.remote_avatar(player) {
                let head = avatar.head.position;
                let seen = HandSide::BOTH
                    .into_iter()
                    .zip(&avatar.hands)
                    .filter(|(_, h)| h.tracked)
                    .map(|(side, h)| SeenHand {
                        player,
                        side,
                        position: h.pose.position,
                        head,
                        holding: h.held.is_some(),
                        reaching: h.pose.position.distance(head) > REACHING_OUT_M,
                    });
                self.other_hands.extend(seen);
            }
        }
        let view = BotView {
            world: &peer.world,
            me: &peer.interaction,
            others_holding: &self.others_holding,
            other_hands: &self.other_hands,
            active,
        };
        self.bot.step(step, &view)
    }
}
