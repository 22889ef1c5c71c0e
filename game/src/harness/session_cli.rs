//! The `tumble session` command line: the flags, the drivers they name, and the two ways to run (one process on a
//! simulated clock, or `--processes`: one OS process per player over UDP on 127.0.0.1).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use tumble_engine::physics::{World, WorldConfig};
use tumble_engine::scene::load_scene;

use crate::authority::NOBODY;
use crate::avatar::AvatarInput;
use crate::avatar::HandSide;
use crate::bots::{Bot, BotKind, BotView, SeenHand};
use crate::harness::conflict::ConflictDriver;
use crate::harness::session::{
    run_session, Driver, ScriptDriver, SessionConfig, SessionReport, DEFAULT_SESSION_KBPS_BUDGET,
};
use crate::session::peer::Peer;

/// Flags of `tumble session` (link flags mean what they mean for `tumble loopback`: one way, each direction).
#[derive(Args, Debug, Clone)]
pub struct SessionArgs {
    /// Players, the host included (1 to 4)
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub players: usize,
    /// What plays each seat, host first, comma-separated: builder, thrower, contender, catcher, hostile, idle
    /// [default: builder,thrower,contender,catcher]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub bots: Vec<String>,
    /// Seconds to run; the bots stop 10 s before the end so the world can rest
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub seconds: f64,
    /// One-way delay added in each direction (ms): 50 is a 100 ms round trip
    #[arg(long, value_name = "L", default_value_t = 0.0)]
    pub latency_ms: f64,
    /// ± jitter on each direction's delay (ms)
    #[arg(long, value_name = "J", default_value_t = 0.0)]
    pub jitter_ms: f64,
    /// Loss in each direction (percent)
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub loss_pct: f64,
    /// Duplicates in each direction (percent)
    #[arg(long, value_name = "D", default_value_t = 0.0)]
    pub dup_pct: f64,
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Scene file [default: assets/scenes/table64.toml]
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// One OS process per player, over UDP on 127.0.0.1, each with the link simulator in front of its socket
    #[arg(long)]
    pub processes: bool,
    /// Kill this player's process or peer at --kill-at-s, with no goodbye (1: the host, 2 to 4: a guest)
    #[arg(long, value_name = "K", requires = "kill_at_s")]
    pub kill_player: Option<u8>,
    #[arg(long, value_name = "T", requires = "kill_player")]
    pub kill_at_s: Option<f64>,
    /// This player quits cleanly at --quit-at-s, saying goodbye (1: the host, 2 to 4: a guest)
    #[arg(long, value_name = "K", requires = "quit_at_s", conflicts_with = "kill_player")]
    pub quit_player: Option<u8>,
    #[arg(long, value_name = "T", requires = "quit_player")]
    pub quit_at_s: Option<f64>,
    /// The last guest joins at this time instead of at the start
    #[arg(long, value_name = "T")]
    pub join_at_s: Option<f64>,
    /// Two guests grab the same cube in the same step, again and again (the others idle)
    #[arg(long)]
    pub conflict_test: bool,
    /// The host has no hands (a dedicated host)
    #[arg(long)]
    pub headless: bool,
    /// Per-connection budget, each direction (kbps, IP/UDP headers included)
    #[arg(long, value_name = "K", default_value_t = DEFAULT_SESSION_KBPS_BUDGET)]
    pub kbps_budget: u32,
    /// Packets a second on each connection, a divisor of the 90 physics steps (90, 45, 30, 18, 15, 10, ...)
    #[arg(long, value_name = "P", default_value_t = 90)]
    pub packets_per_s: u32,
    /// Print the JSON object on stdout (always printed; accepted for the documented command line)
    #[arg(long)]
    pub json: bool,
}

/// The shipped default scene, found from the working directory or the source tree.
pub fn default_scene() -> PathBuf {
    let local = PathBuf::from("assets/scenes/table64.toml");
    if local.exists() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/scenes/table64.toml")
}

/// Loads the scene once to check it, and returns a maker of fresh worlds of it.
pub fn world_maker(path: &Path) -> Result<Box<dyn Fn() -> Result<World>>> {
    let scene = load_scene(path)?;
    scene.build_world(WorldConfig::default())?;
    Ok(Box::new(move || Ok(scene.build_world(WorldConfig::default())?)))
}

impl SessionArgs {
    pub fn config(&self) -> Result<SessionConfig> {
        if !(1..=4).contains(&self.players) {
            bail!("--players must be 1 to 4 (got {})", self.players);
        }
        for (flag, seat, at) in [
            ("--kill-player", self.kill_player, self.kill_at_s),
            ("--quit-player", self.quit_player, self.quit_at_s),
        ] {
            if let Some(k) = seat {
                if !(1..=self.players as u8).contains(&k) {
                    bail!("{flag} must name a player, 1 to {} (got {k})", self.players);
                }
            }
            if at.is_some_and(|t| !(t.is_finite() && t >= 0.0 && t < self.seconds)) {
                bail!("{flag}'s time must be within the run's {} s", self.seconds);
            }
        }
        if self.packets_per_s == 0 || 90 % self.packets_per_s != 0 {
            bail!(
                "--packets-per-s must divide the 90 physics steps a second (90, 45, 30, 18, 15, 10, ...), not {}",
                self.packets_per_s
            );
        }
        Ok(SessionConfig {
            send_every_steps: 90 / self.packets_per_s,
            players: self.players,
            seconds: self.seconds,
            latency_ms: self.latency_ms,
            jitter_ms: self.jitter_ms,
            loss_pct: self.loss_pct,
            dup_pct: self.dup_pct,
            seed: self.seed,
            kbps_budget: self.kbps_budget,
            kill_player: self.kill_player.zip(self.kill_at_s),
            quit_player: self.quit_player.zip(self.quit_at_s),
            join_at_s: self.join_at_s,
            headless_host: self.headless,
            hostile_players: self
                .seats()?
                .iter()
                .enumerate()
                .filter(|(i, name)| *i > 0 && name.as_str() == "hostile")
                .map(|(i, _)| i as u8 + 1)
                .collect(),
            pinned: Vec::new(),
        })
    }

    /// The driver name for each seat.
    pub fn seats(&self) -> Result<Vec<String>> {
        let mut seats: Vec<String> = if self.conflict_test {
            (0..self.players)
                .map(|i| if i == 1 || i == 2 { "conflict" } else { "idle" }.to_string())
                .collect()
        } else if self.bots.is_empty() {
            ["builder", "thrower", "contender", "catcher"]
                .map(String::from)
                .to_vec()
        } else {
            self.bots.clone()
        };
        if self.conflict_test && self.players < 3 {
            bail!("--conflict-test needs two guests: --players 3 or 4");
        }
        seats.resize(self.players, "idle".to_string());
        for s in &seats {
            if !DRIVER_NAMES.contains(&s.as_str()) {
                bail!("unknown bot '{s}': one of {}", DRIVER_NAMES.join(", "));
            }
        }
        Ok(seats)
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
        for player in (1..=crate::bots::seat::SEATS as u8).filter(|&p| p != me) {
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

/// Runs `tumble session` and returns its report.
pub fn run(args: &SessionArgs) -> Result<SessionReport> {
    let config = args.config()?;
    let seats = args.seats()?;
    let scene = args.scene.clone().unwrap_or_else(default_scene);
    if args.processes {
        return crate::harness::processes::run_processes(&config, &scene, &seats);
    }
    let make_world = world_maker(&scene).with_context(|| format!("scene {}", scene.display()))?;
    let mut drivers = seats
        .iter()
        .enumerate()
        .map(|(i, name)| make_driver(name, i as u8 + 1, config.seed.wrapping_add(i as u64)))
        .collect::<Result<Vec<_>>>()?;
    run_session(config, make_world, &mut drivers)
}
