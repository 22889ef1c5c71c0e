//! The `tumble session` command line: the flags, the drivers they name, and the two ways to run (one process on a
//! simulated clock, or `--processes`: one OS process per player over UDP on 127.0.0.1).

use std::path::PathBuf;
use tumble_game::run_settings::{LinkArgs, RunSettings};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::session::{run_session, SessionConfig, SessionReport, DEFAULT_SESSION_KBPS_BUDGET};
use tumble_game::session::peer::PeerConfig;

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
    /// The link: `--link` and the flags that change its parts
    #[command(flatten)]
    pub link: LinkArgs,
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
    /// [default: 30, or fewer where the budget leaves too little room]
    #[arg(long, value_name = "P")]
    pub packets_per_s: Option<u32>,
    /// Print the JSON object on stdout (always printed; accepted for the documented command line)
    #[arg(long)]
    pub json: bool,
}

pub use tumble_game::bots::{make_driver, DRIVER_NAMES};
pub use tumble_game::desktop::scenes::default_scene;
pub use tumble_game::session::net_play::world_maker;

impl SessionArgs {
    /// The run's settings, for a scene of `cube_count` cubes (what a packet must have room for).
    pub fn config(&self, cube_count: usize) -> Result<SessionConfig> {
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
        let send_every_steps = match self.packets_per_s {
            Some(p) if p == 0 || !tumble_game::STEP_HZ.is_multiple_of(p) => bail!(
                "--packets-per-s must divide the 90 physics steps a second (90, 45, 30, 18, 15, 10, ...), not {p}"
            ),
            Some(p) => tumble_game::STEP_HZ / p,
            None => PeerConfig::fitting(self.kbps_budget, cube_count).send_every_steps,
        };
        Ok(SessionConfig {
            run: RunSettings::new(self.seconds, self.seed, self.link.config()),
            send_every_steps,
            players: self.players,
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

/// Runs `tumble session` and returns its report.
pub fn run(args: &SessionArgs) -> Result<SessionReport> {
    let seats = args.seats()?;
    let scene = args.scene.clone().unwrap_or_else(default_scene);
    let make_world = world_maker(&scene).with_context(|| format!("scene {}", scene.display()))?;
    let config = args.config(make_world()?.body_count())?;
    if args.processes {
        return crate::processes::run_processes(&config, &scene, &seats);
    }
    let mut drivers = seats
        .iter()
        .enumerate()
        .map(|(i, name)| make_driver(name, i as u8 + 1, config.run.seed.wrapping_add(i as u64)))
        .collect::<Result<Vec<_>>>()?;
    run_session(config, make_world, &mut drivers)
}
