//! `tumble compare`: the cube game played by seeded bots over one network model, every player's machine in one
//! process, joined through `tumble-net` endpoints and the link simulator in memory on a simulated clock (the
//! loopback harness's link, [`super::loopback`]; with more than two players a host and its guests,
//! [`super::star_link`]), one 90 Hz frame at a time; one JSON object out. Models: `lockstep`
//! ([`tumble_models::lockstep`], 2 to 4 players: `--players`), `snapshots` ([`super::compare_snapshots`]) and `predict`
//! ([`super::compare_predict`]), two players each, and `authority` ([`super::compare_authority`], the session's state
//! sync, 2 to 4 players), their figures defined there. `--model all` runs each in turn.
//!
//! A frame on each machine: sample the bot's input, run the steps that are due ([`LockstepPeer::advance`]), send
//! one packet on each connection; then the link runs until the next frame, delivering. Every machine starts frame
//! 0 at the same clock time, so a step's delay from player 1 sampling its input to any screen is read off one
//! clock. The measured run is `--seconds` of frames; then, sampling no more, all run on until every sampled step
//! is simulated and every exchange's checksums compared (at most [`DRAIN_LIMIT_S`]), so the worlds are compared
//! at the same step.
//!
//! Figures (player 1 is the endpoint that hosts, "up" is player 1 → a guest, "down" a guest → player 1):
//! - `kbps_mean_up` / `kbps_mean_down`: a connection's datagrams with IP/UDP headers over the measured run, in
//!   that direction, the busiest connection's; `kbps_mean` the larger. With more than two players the host relays
//!   every guest's inputs to the others, so up carries three players' inputs.
//! - `input_to_screen_ms`: on player 1's machine, mean time from sampling its input for a step to simulating that
//!   step (lockstep: one-way latency + playout delay, since the step also needs the others' inputs; with guests
//!   relayed through the host, the slowest guest's path decides).
//! - `remote_delay_ms`: on the other machines, mean time from sampling an input for a step (every player samples
//!   step n at the same time) to simulating it; the largest of them.
//! - `host_input_to_screen_ms`, `guest_input_to_screen_ms`, `host_sees_guest_ms`, `guest_sees_host_ms`: every model's
//!   four delays from both sides ([`crate::sides`]); in lockstep a machine shows a step once it has every
//!   player's input for it, so it sees its own input and the others' alike late.
//! - `hitch_frames`: frames, on all machines, that had a step due and waited for a missing input
//!   (`hitch_fraction` of all frames counted, from each machine's first step).
//! - `corrections`, `correction_max_m`: null — lockstep corrects nothing (a desync is counted instead), so there is
//!   nothing to measure.
//! - `desyncs`: checksum exchanges found different (each machine's over its connections; the largest count).
//! - `bit_identical_at_end`: every machine at the same step with the same game checksum (every body's bits and
//!   the colours).
//! - `cpu_ms_per_step`: wall time of one game step (forces, physics, colours), mean over all machines.

use crate::sides::{slowest, with_sides, DecidedAt, InputLag, MeanDelay, Sides};
use crate::with_run;
use std::path::{Path, PathBuf};
use tumble_game::run_settings::{LinkArgs, RunSettings};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use tumble_engine::physics::{World, WorldConfig};
use tumble_engine::scene::load_scene;
use tumble_net::EndpointEvent;

use super::loopback::{link_time, SUBTICKS_PER_STEP, TICK_S};
use super::star_link::StarLink;
use tumble_game::cube_game::{CubeBot, CubeInput};
use tumble_game::STEP_HZ;
use tumble_models::inputs::packet::MAX_INPUT_PACKET_BYTES;
use tumble_models::lockstep::peer::MAX_PLAYERS;
use tumble_models::lockstep::playout::{PlayoutConfig, MAX_DELAY_S};
use tumble_models::lockstep::{checksum::CHECKSUM_EVERY_STEPS, LockstepPeer};

/// After the measured run, the most simulated time both sides get to simulate every sampled step (s).
pub const DRAIN_LIMIT_S: f64 = 60.0;

/// The network models of issue 14.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    Lockstep,
    Snapshots,
    Predict,
    Authority,
    /// State synchronization (the 2015 series' third model): player 1's machine simulates and sends every cube's
    /// state; the other simulates too, applies them and sends its inputs.
    StateSync,
    All,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// The network model to measure, or all of them in turn
    #[arg(long, value_enum)]
    pub model: Model,
    /// Scene file: the field of cubes (TOML; e.g. assets/scenes/cubes900.toml); the player cubes are added
    #[arg(long, value_name = "FILE")]
    pub scene: PathBuf,
    /// Simulated seconds to measure (90 frames each)
    #[arg(long, value_name = "S", default_value_t = 20.0)]
    pub seconds: f64,
    /// The link: `--link` and the flags that change its parts
    #[command(flatten)]
    pub link: LinkArgs,
    /// Seeds the link simulator and the bots
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Lockstep and authority: players, 2 to 4 (player 1 hosts; with more than two it relays to the guests)
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub players: usize,
    /// Lockstep: the playout delay past the first input's arrival, and the least it adapts to (ms); snapshots: the
    /// client's playout delay, or the least it adapts to
    #[arg(long, value_name = "MS", default_value_t = 100.0)]
    pub playout_ms: f64,
    /// Lockstep and snapshots: keep the playout delay fixed (no adapting to measured lateness)
    #[arg(long)]
    pub fixed_playout: bool,
    /// Predict: the server's slack between a client input's arrival and its step (ms, rounded to 90 Hz steps)
    #[arg(long, value_name = "MS", default_value_t = 33.0)]
    pub predict_buffer_ms: f64,
    /// Predict: keep the solver's world-wide early stop of its velocity passes (the engine's default; off for
    /// predict, see compare_predict::world_config)
    #[arg(long)]
    pub predict_early_stop: bool,
    /// Snapshots: snapshots the server sends per second (10-60)
    #[arg(long, value_name = "HZ", default_value_t = 30)]
    pub snapshot_hz: u32,
    /// Snapshots: send every body's raw floats (no quantizing, no delta), for comparison
    #[arg(long)]
    pub no_compression: bool,
    /// Authority: the state sync's budget per connection and direction, IP/UDP headers included (kbps)
    #[arg(long, value_name = "KBPS", default_value_t = super::session::DEFAULT_SESSION_KBPS_BUDGET)]
    pub kbps_budget: u32,
    /// Authority: packets a second on each connection, a divisor of the 90 physics steps (90, 45, 30, ...)
    /// [default: 30, or fewer where the budget leaves too little room]
    #[arg(long, value_name = "P")]
    pub packets_per_s: Option<u32>,
    /// Authority: each peer pushes with its own player's input only, not the others' relayed inputs (a control)
    #[arg(long, hide = true)]
    pub no_remote_inputs: bool,
    /// Play it in the desktop view instead of measuring: your machine left, the other side's right; the keys play
    /// player 1 (predict: the client), bots the others; the overlay switches the model and the link (`--model
    /// all` starts with lockstep; `--seconds` is ignored)
    #[arg(long)]
    pub view: bool,
    /// With --view: close after this many frames (smoke tests under a virtual display)
    #[arg(long, value_name = "N", requires = "view")]
    pub frames: Option<u64>,
}

impl CompareArgs {
    /// The run's length, seed and link.
    pub fn run_settings(&self) -> RunSettings {
        RunSettings::new(self.seconds, self.seed, self.link.config())
    }
}

/// One lockstep run's settings.
#[derive(Debug, Clone)]
pub struct LockstepConfig {
    /// 2 to [`MAX_PLAYERS`].
    pub players: usize,
    /// Length, seed and link.
    pub run: RunSettings,
    pub playout: PlayoutConfig,
    pub checksum_every_steps: u64,
    /// Replace every n-th packet player 1 sends with garbage (tests: the receiver must refuse it and go on).
    pub garbage_every_n_packets: Option<u64>,
    /// Frames each player's input is held back on its way to its machine (player 1, every guest): 0 in every
    /// real run; the tests' control of the input-to-screen and "sees" figures ([`crate::sides`]).
    pub input_lag_frames: [usize; 2],
}

impl Default for LockstepConfig {
    fn default() -> Self {
        LockstepConfig {
            run: RunSettings::default(),
            players: 2,
            playout: PlayoutConfig::default(),
            checksum_every_steps: CHECKSUM_EVERY_STEPS,
            garbage_every_n_packets: None,
            input_lag_frames: [0; 2],
        }
    }
}

impl LockstepConfig {
    /// The settings `tumble compare` was given.
    pub fn from_args(args: &CompareArgs) -> Self {
        LockstepConfig {
            run: args.run_settings(),
            players: args.players,
            playout: PlayoutConfig {
                delay_s: args.playout_ms / 1000.0,
                adaptive: !args.fixed_playout,
                ..PlayoutConfig::default()
            },
            ..LockstepConfig::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(2..=MAX_PLAYERS).contains(&self.players) {
            bail!("--players must be 2 to {MAX_PLAYERS} (got {})", self.players);
        }
        validate_run(&self.run)?;
        check_flag("--playout-ms", self.playout.delay_s * 1000.0, MAX_DELAY_S * 1000.0)
    }
}

/// The settings every model's run shares, checked alike (`RunSettings::validate`).
pub(crate) fn validate_run(run: &RunSettings) -> Result<()> {
    Ok(run.validate()?)
}

/// `flag`'s value `v` is a finite number in 0..=`hi`.
pub(crate) fn check_flag(flag: &str, v: f64, hi: f64) -> Result<()> {
    if !(v.is_finite() && (0.0..=hi).contains(&v)) {
        bail!("{flag} must be in 0..={hi} (got {v})");
    }
    Ok(())
}

/// What a lockstep run measured (see the module doc for each figure).
#[derive(Debug, Clone)]
pub struct LockstepReport {
    pub players: usize,
    pub cubes: usize,
    pub frames: u64,
    pub kbps_mean_up: f64,
    pub kbps_mean_down: f64,
    pub input_to_screen_ms: f64,
    pub remote_delay_ms: f64,
    /// Per player.
    pub hitch_frames: Vec<u64>,
    pub counted_frames: Vec<u64>,
    pub catchup_frames: Vec<u64>,
    pub idle_frames: Vec<u64>,
    pub desyncs: u64,
    pub checksums_compared: Vec<u64>,
    pub first_desync_step: Option<u64>,
    pub steps_at_end: Vec<u64>,
    pub bit_identical_at_end: bool,
    pub cpu_ms_per_step: f64,
    pub playout_delay_ms: Vec<f64>,
    pub inputs_per_packet_mean: f64,
    pub packets_refused: Vec<u64>,
    pub coloured_max: usize,
    /// Both sides' input to screen and how late each sees the other ([`crate::sides`]; the slowest guest's).
    pub sides: Sides,
}

impl LockstepReport {
    pub fn hitch_fraction(&self) -> f64 {
        self.hitch_frames.iter().sum::<u64>() as f64 / self.counted_frames.iter().sum::<u64>().max(1) as f64
    }

    pub fn to_json(&self, config: &LockstepConfig, scene: &str) -> Value {
        let report = with_run(
            &config.run,
            json!({
                "model": "lockstep",
                "players": self.players,
                "scene": scene,
                "cubes": self.cubes,
                "kbps_mean": self.kbps_mean_up.max(self.kbps_mean_down),
                "kbps_mean_up": self.kbps_mean_up,
                "kbps_mean_down": self.kbps_mean_down,
                "input_to_screen_ms": self.input_to_screen_ms,
                "remote_delay_ms": self.remote_delay_ms,
                "hitch_frames": self.hitch_frames.iter().sum::<u64>(),
                "hitch_frames_per_player": self.hitch_frames,
                "hitch_fraction": self.hitch_fraction(),
                "frames_counted_per_player": self.counted_frames,
                "catchup_frames_per_player": self.catchup_frames,
                "idle_frames_per_player": self.idle_frames,
                "corrections": null,
                "correction_max_m": null,
                "desyncs": self.desyncs,
                "first_desync_step": self.first_desync_step,
                "checksums_compared_per_player": self.checksums_compared,
                "steps_at_end_per_player": self.steps_at_end,
                "bit_identical_at_end": self.bit_identical_at_end,
                "cpu_ms_per_step": self.cpu_ms_per_step,
                "playout_floor_ms": config.playout.delay_s * 1000.0,
                "playout_adaptive": config.playout.adaptive,
                "playout_delay_ms_at_end_per_player": self.playout_delay_ms,
                "inputs_per_packet_mean": self.inputs_per_packet_mean,
                "packets_refused_per_player": self.packets_refused,
                "coloured_cubes_max": self.coloured_max,
            }),
        );
        with_sides(&self.sides, report)
    }
}

/// The lockstep machines and the links between them, one frame at a time.
pub struct LockstepRun {
    config: LockstepConfig,
    link: StarLink,
    handshake_ticks: u64,
    pub(crate) peers: Vec<LockstepPeer>,
    bots: Vec<CubeBot>,
    frame: u64,
    /// Frames of the measured run.
    frames: u64,
    buf: Vec<u8>,
    packets_sent_p1: u64,
    /// Player 1's input from a person (the desktop view) instead of its bot.
    human: Option<CubeInput>,
    /// Each player's input on its way to its machine, and when each player's input for a step was decided.
    lags: Vec<InputLag>,
    decided: Vec<DecidedAt>,
    /// `seen[p][q]`: on player p's machine, from player q deciding its input for a step to simulating that step.
    seen: [[MeanDelay; MAX_PLAYERS]; MAX_PLAYERS],
}

impl LockstepRun {
    /// Joins the endpoints (the handshakes run here) and builds one machine per world: copies of one scene's
    /// world, one per player.
    pub fn new(config: &LockstepConfig, worlds: Vec<World>) -> Result<Self> {
        config.validate()?;
        if worlds.len() != config.players {
            bail!("{} worlds for {} players", worlds.len(), config.players);
        }
        if worlds
            .iter()
            .any(|w| w.body_count() != worlds[0].body_count() || w.checksum() != worlds[0].checksum())
        {
            bail!("the worlds differ");
        }
        let link_config = config.run.link;
        let (link, handshake_ticks) = StarLink::connect(link_config, config.run.seed, config.players - 1)?;
        let every = config.checksum_every_steps;
        let players = config.players;
        let peers = worlds
            .into_iter()
            .enumerate()
            .map(|(p, world)| LockstepPeer::new(p, players, world, config.playout, every))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            config: config.clone(),
            link,
            handshake_ticks,
            peers,
            bots: (0..players as u64)
                .map(|p| CubeBot::new(config.run.seed.wrapping_add(p)))
                .collect(),
            frame: 0,
            frames: (config.run.seconds * STEP_HZ as f64).round() as u64,
            buf: vec![0u8; MAX_INPUT_PACKET_BYTES],
            packets_sent_p1: 0,
            human: None,
            lags: (0..players)
                .map(|p| InputLag::new(config.input_lag_frames[p.min(1)]))
                .collect(),
            decided: vec![DecidedAt::default(); players],
            seen: [[MeanDelay::default(); MAX_PLAYERS]; MAX_PLAYERS],
        })
    }

    /// Player 1 plays `input` from the next frame on (`None`: its bot again).
    pub fn set_human(&mut self, input: Option<CubeInput>) {
        self.human = input;
    }

    /// Bytes sent so far, IP/UDP headers included: (player 1 on its first connection, player 2).
    pub fn wire_bytes(&self) -> (u64, u64) {
        (self.link.wire_bytes(0, 0), self.link.wire_bytes(1, 0))
    }

    pub fn peers(&self) -> &[LockstepPeer] {
        &self.peers
    }

    /// True once the measured frames have run.
    pub fn measured(&self) -> bool {
        self.frame >= self.frames
    }

    /// One frame on every machine; `sample`: the bots play (false while draining).
    pub fn frame(&mut self, sample: bool) -> Result<()> {
        let k = self.frame;
        let t = link_time(self.handshake_ticks, k, 0, TICK_S);
        for p in 0..self.peers.len() {
            if sample {
                let (input, decided) = match self.human {
                    Some(input) if p == 0 => (input, Some(t)),
                    _ => self.lags[p].pass(self.bots[p].next_input(), t),
                };
                let step = self.peers[p].sample(t, input)?;
                self.decided[p].set(step, decided);
            }
            let before = self.peers[p].steps();
            self.peers[p].advance(t)?;
            // Each step simulated now, of the measured run: every player's input for it reaches this screen.
            for step in before..self.peers[p].steps().min(self.frames) {
                for (q, decided) in self.decided.iter().enumerate() {
                    if let Some(at) = decided.get(step) {
                        self.seen[p][q].add(t - at);
                    }
                }
            }
            for conn in 0..self.peers[p].connection_count() {
                self.send(p, conn, t)?;
            }
        }
        for sub in 0..SUBTICKS_PER_STEP {
            let now = link_time(self.handshake_ticks, k, sub, TICK_S);
            self.link.tick(now);
            self.receive(now)?;
        }
        self.frame += 1;
        Ok(())
    }

    fn send(&mut self, p: usize, conn: usize, t: f64) -> Result<()> {
        let mut n = self.peers[p].write_packet(conn, &mut self.buf)?;
        if p == 0 {
            self.packets_sent_p1 += 1;
            if self
                .config
                .garbage_every_n_packets
                .is_some_and(|every| every > 0 && self.packets_sent_p1.is_multiple_of(every))
            {
                // A packet no honest peer writes: the right tag, then bits that claim more than follows.
                self.buf[..8].copy_from_slice(&[0x4C, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
                n = 8;
            }
        }
        let (endpoint, to) = self.link.route(p, conn);
        if let Err(e) = endpoint.send(t, to, &self.buf[..n]) {
            tracing::warn!(player = p + 1, "lockstep packet not sent: {e}");
        }
        Ok(())
    }

    fn receive(&mut self, now: f64) -> Result<()> {
        for p in 0..self.peers.len() {
            while let Some(event) = self.link.endpoints[p].pop_event() {
                match event {
                    EndpointEvent::Received { peer, sequence } => {
                        let Some(conn) = self.link.connection_of(p, peer) else {
                            continue;
                        };
                        let endpoint = &mut self.link.endpoints[p];
                        match self.peers[p].read_packet(conn, now, endpoint.payload()) {
                            Ok(()) => {
                                endpoint.accept(peer, sequence);
                            }
                            Err(e) => tracing::debug!(player = p + 1, "lockstep packet refused: {e}"),
                        }
                    }
                    EndpointEvent::Disconnected { reason, .. } => {
                        bail!("player {} lost a connection: {reason:?}", p + 1)
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Runs the measured frames and the drain, and reports.
    pub fn run(mut self) -> Result<LockstepReport> {
        while !self.measured() {
            self.frame(true)?;
        }
        self.finish()
    }

    /// The four delays: player 1's, and the slowest guest's.
    fn sides(&self) -> Sides {
        let guests = 1..self.peers.len();
        let seen = &self.seen;
        Sides {
            host_input_to_screen: seen[0][0],
            guest_input_to_screen: slowest(guests.clone().map(|g| seen[g][g])),
            host_sees_guest: slowest(guests.clone().map(|g| seen[0][g])),
            guest_sees_host: slowest(guests.map(|g| seen[g][0])),
        }
    }

    /// Takes the measured figures, then drains (no more sampling) until every machine simulated every sampled
    /// step, and compares them.
    pub fn finish(mut self) -> Result<LockstepReport> {
        let seconds = self.frame as f64 / STEP_HZ as f64;
        let kbps = |bytes: u64| bytes as f64 * 8.0 / 1000.0 / seconds;
        let guests = self.peers.len() - 1;
        let up = (0..guests)
            .map(|c| kbps(self.link.wire_bytes(0, c)))
            .fold(0.0, f64::max);
        let down = (1..=guests)
            .map(|g| kbps(self.link.wire_bytes(g, 0)))
            .fold(0.0, f64::max);
        let stats: Vec<_> = self.peers.iter().map(|p| p.stats.clone()).collect();
        let drain_frames = (DRAIN_LIMIT_S * STEP_HZ as f64) as u64;
        // Until every sampled step ran everywhere and every machine compared every exchange's checksums on every
        // connection (the last ones are taken while draining).
        let exchanges = self.peers[0].sampled() / self.config.checksum_every_steps.max(1);
        for _ in 0..drain_frames {
            let done = |p: &LockstepPeer| p.steps() == p.sampled() && p.checksums_compared() >= exchanges;
            if self.peers.iter().all(done) {
                break;
            }
            self.frame(false)?;
        }
        let peers = &self.peers;
        let all_steps = peers.iter().map(|p| p.stats.steps).sum::<u64>().max(1) as f64;
        let mean_delay_ms = |p: &LockstepPeer| p.stats.step_delay_s_sum / p.stats.steps.max(1) as f64 * 1000.0;
        let inputs: u64 = stats.iter().map(|s| s.inputs_written).sum();
        let packets: u64 = stats.iter().map(|s| s.packets_written).sum();
        let a = &peers[0];
        let each = |f: &dyn Fn(&LockstepPeer) -> u64| peers.iter().map(f).collect::<Vec<u64>>();
        Ok(LockstepReport {
            players: peers.len(),
            cubes: a.world().body_count() - peers.len(),
            frames: self.frames,
            kbps_mean_up: up,
            kbps_mean_down: down,
            input_to_screen_ms: mean_delay_ms(a),
            remote_delay_ms: peers[1..].iter().map(mean_delay_ms).fold(0.0, f64::max),
            hitch_frames: stats.iter().map(|s| s.hitch_frames).collect(),
            counted_frames: stats.iter().map(|s| s.frames).collect(),
            catchup_frames: stats.iter().map(|s| s.catchup_frames).collect(),
            idle_frames: stats.iter().map(|s| s.idle_frames).collect(),
            desyncs: peers.iter().map(LockstepPeer::desyncs).max().unwrap_or(0),
            checksums_compared: each(&|p| p.checksums_compared()),
            first_desync_step: peers.iter().filter_map(LockstepPeer::first_desync_step).min(),
            steps_at_end: each(&|p| p.steps()),
            bit_identical_at_end: peers
                .iter()
                .all(|p| p.steps() == a.steps() && p.checksum() == a.checksum()),
            cpu_ms_per_step: peers.iter().map(|p| p.stats.step_cpu_s).sum::<f64>() / all_steps * 1000.0,
            playout_delay_ms: peers.iter().map(|p| p.playout().delay_s() * 1000.0).collect(),
            inputs_per_packet_mean: inputs as f64 / packets.max(1) as f64,
            packets_refused: each(&|p| p.stats.packets_refused),
            coloured_max: peers.iter().map(|p| p.stats.coloured_max).max().unwrap_or(0),
            sides: self.sides(),
        })
    }
}

/// Runs `config` on copies of a world, one per player.
pub fn run_lockstep(config: &LockstepConfig, worlds: Vec<World>) -> Result<LockstepReport> {
    LockstepRun::new(config, worlds)?.run()
}

/// Every model `--model all` runs, in the order it prints them.
pub const ALL_MODELS: [Model; 5] = [
    Model::Lockstep,
    Model::Snapshots,
    Model::Predict,
    Model::StateSync,
    Model::Authority,
];

/// `tumble compare`: the JSON object of the model asked for. `--model all`: an array of every model's object,
/// run one after another on the same scene, link and seed (with `--players` above 2, the two-player models run
/// with two).
pub fn run_cli(args: &CompareArgs) -> Result<Value> {
    if args.players != 2 && matches!(args.model, Model::Snapshots | Model::Predict) {
        bail!(
            "--players {}: snapshots and predict have two players (a server and a client)",
            args.players
        );
    }
    match args.model {
        Model::Lockstep => {}
        Model::Snapshots => return run_snapshots_cli(args),
        Model::Predict => return crate::compare_predict::run_cli(args),
        Model::Authority | Model::StateSync => return super::compare_authority::run_cli(args),
        Model::All => return run_all(args),
    }
    let config = LockstepConfig::from_args(args);
    config.validate()?;
    let (scene, world) = load_field(&args.scene, WorldConfig::default())?;
    tracing::info!(%scene, seconds = config.run.seconds, latency_ms = config.run.link.latency_ms,
        loss_pct = config.run.link.loss_pct, players = config.players, "lockstep: bots playing the cube game");
    let worlds = vec![world; config.players];
    let report = run_lockstep(&config, worlds)?;
    tracing::info!(
        hitch_frames = report.hitch_frames.iter().sum::<u64>(),
        desyncs = report.desyncs,
        bit_identical = report.bit_identical_at_end,
        "lockstep run done"
    );
    Ok(report.to_json(&config, &scene))
}

/// The scene file's name and its world built with `config`: the field every model's run copies.
pub(crate) fn load_field(path: &Path, config: WorldConfig) -> Result<(String, World)> {
    let scene = load_scene(path)?;
    let world = scene.build_world(config).context("building the scene's world")?;
    Ok((scene.name, world))
}

/// A scene of `assets/scenes/` and its world, for tests.
#[cfg(test)]
pub(crate) fn asset_field(file: &str, config: WorldConfig) -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenes")
        .join(file);
    load_field(&path, config).unwrap().1
}

/// `--model all`: every model of [`ALL_MODELS`] in turn.
fn run_all(args: &CompareArgs) -> Result<Value> {
    let mut all = Vec::new();
    for model in ALL_MODELS {
        let players = match model {
            Model::Snapshots | Model::Predict => 2,
            _ => args.players,
        };
        all.push(run_cli(&CompareArgs {
            model,
            players,
            ..args.clone()
        })?);
    }
    Ok(Value::Array(all))
}

/// `tumble compare --model snapshots` (see [`super::compare_snapshots`]; `--playout-ms` and `--fixed-playout` set
/// the client's playout delay).
fn run_snapshots_cli(args: &CompareArgs) -> Result<Value> {
    use super::compare_snapshots::{run_snapshots, SnapshotConfig};
    let config = SnapshotConfig::from_args(args);
    config.validate()?;
    let (scene, world) = load_field(&args.scene, WorldConfig::default())?;
    tracing::info!(%scene, seconds = config.run.seconds, snapshot_hz = config.snapshot_hz,
        compressed = config.compressed, "snapshots: two bots playing the cube game");
    let report = run_snapshots(&config, world)?;
    Ok(report.to_json(&config, &scene))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sides::assert_lag_controls;
    use tumble_engine::physics::BodyId;
    use tumble_net::LinkConfig;

    fn scene_world(file: &str) -> World {
        asset_field(file, WorldConfig::default())
    }

    fn run(file: &str, config: &LockstepConfig) -> LockstepReport {
        let worlds = (0..config.players).map(|_| scene_world(file)).collect();
        run_lockstep(config, worlds).unwrap()
    }

    fn link(latency_ms: f64, loss_pct: f64, seconds: f64) -> LockstepConfig {
        LockstepConfig {
            run: RunSettings {
                seconds,
                link: LinkConfig {
                    latency_ms,
                    loss_pct,
                    ..LockstepConfig::default().run.link
                },
                ..LockstepConfig::default().run
            },
            ..LockstepConfig::default()
        }
    }

    fn assert_in_sync(r: &LockstepReport, exchanges: u64) {
        assert!(r.bit_identical_at_end, "{r:?}");
        assert_eq!(r.desyncs, 0);
        assert_eq!(r.steps_at_end[0], r.frames);
        assert_eq!(
            r.checksums_compared,
            vec![exchanges; r.players],
            "every exchange compared on every machine"
        );
    }

    #[test]
    fn lockstep_at_250_ms_round_trip_and_5_pct_loss_stays_bit_identical() {
        let r = run("cubes900.toml", &link(125.0, 5.0, 20.0));
        // 20 s: exchanges after steps 90, 180, …, 1800, every one compared on both sides (the last while draining).
        assert_in_sync(&r, 20);
        assert_eq!(r.hitch_frames, [0, 0], "a 100 ms playout delay covers 5 % loss");
        assert!(r.coloured_max > 0, "the bots played: cubes were touched");
        // One-way latency + playout delay, within a frame and a tick.
        assert!((r.input_to_screen_ms - 225.0).abs() < 12.0, "{}", r.input_to_screen_ms);
        assert!((r.remote_delay_ms - 225.0).abs() < 12.0, "{}", r.remote_delay_ms);
        // Each side sees its own input and the other's as late as that.
        for figure in r.sides.ms() {
            assert!((figure - 225.0).abs() < 12.0, "{:?}", r.sides);
        }
    }

    /// The control of the four delays ([`crate::sides`]): in lockstep every screen shows a step once both
    /// players' inputs for it are there, so each machine sees its own input and the other's equally late; player
    /// 1's input held back 9 frames (100 ms) moves the two figures of player 1's input by that, player 2's held
    /// back 18 frames the other two by 200 ms.
    #[test]
    fn each_sides_delays_move_by_the_lag_of_the_input_they_carry() {
        let sides = |lag| {
            let config = LockstepConfig {
                input_lag_frames: lag,
                ..link(50.0, 0.0, 5.0)
            };
            run("cubes90.toml", &config).sides
        };
        let base = assert_lag_controls(sides);
        let [host, guest, host_sees, guest_sees] = base.ms();
        assert!(
            (host - host_sees).abs() < 1e-6 && (guest - guest_sees).abs() < 1e-6,
            "{base:?}"
        );
        // A one-way trip and the playout delay (100 ms), within a frame and a tick.
        assert!((host - 150.0).abs() < 12.0 && (guest - 150.0).abs() < 12.0, "{base:?}");
    }

    #[test]
    fn lockstep_at_2_s_round_trip_and_25_pct_loss_stays_bit_identical_without_hitches() {
        let config = LockstepConfig {
            playout: PlayoutConfig {
                delay_s: 0.25,
                ..PlayoutConfig::default()
            },
            ..link(1000.0, 25.0, 20.0)
        };
        let r = run("cubes90.toml", &config);
        assert_in_sync(&r, 20);
        assert!(r.hitch_fraction() < 0.01, "{}", r.hitch_fraction());
        assert!(
            r.inputs_per_packet_mean > 150.0,
            "about a round trip of inputs rides in every packet"
        );
    }

    #[test]
    fn four_players_through_the_host_stay_bit_identical_at_250_ms_round_trip_and_5_pct_loss() {
        let config = LockstepConfig {
            players: 4,
            ..link(125.0, 5.0, 10.0)
        };
        let r = run("cubes90.toml", &config);
        assert_eq!(r.players, 4);
        assert_in_sync(&r, 10);
        assert!(r.steps_at_end.iter().all(|&s| s == r.frames), "{:?}", r.steps_at_end);
        assert!(r.coloured_max > 0, "the bots played: cubes were touched");
        // A guest's input reaches another guest through the host: two one-way trips, so every machine's playout
        // settles on about that; the host's is a single trip behind the guests' inputs but waits for all.
        assert!(r.input_to_screen_ms > 225.0, "{}", r.input_to_screen_ms);
        assert!(r.remote_delay_ms > 300.0, "{}", r.remote_delay_ms);
        // Up carries three players' inputs, down one: up is larger, and less than three times down (the headers).
        assert!(
            r.kbps_mean_up > r.kbps_mean_down,
            "{} up, {} down",
            r.kbps_mean_up,
            r.kbps_mean_down
        );
        assert!(r.kbps_mean_up < 3.0 * r.kbps_mean_down);
    }

    #[test]
    fn bandwidth_does_not_depend_on_the_number_of_cubes() {
        let config = link(50.0, 5.0, 15.0);
        let small = run("cubes90.toml", &config);
        let large = run("cubes900.toml", &config);
        assert_eq!((small.cubes, large.cubes), (90, 900));
        for (a, b) in [
            (small.kbps_mean_up, large.kbps_mean_up),
            (small.kbps_mean_down, large.kbps_mean_down),
        ] {
            assert!((a - b).abs() <= 0.01 * a, "{a} kbps with 90 cubes, {b} with 900");
        }
    }

    #[test]
    fn a_world_changed_behind_the_protocols_back_is_detected_as_a_desync() {
        let config = link(40.0, 5.0, 10.0);
        let worlds = vec![scene_world("cubes90.toml"), scene_world("cubes90.toml")];
        let mut run = LockstepRun::new(&config, worlds).unwrap();
        for _ in 0..300 {
            run.frame(true).unwrap();
        }
        // Player 2's copy of a resting cube in a corner of the field moves by a millimetre.
        let world = run.peers[1].world_mut();
        let id = BodyId(0);
        let mut s = world.state(id).unwrap();
        s.position.x += 0.001;
        world.set_state(id, &s).unwrap();
        let tampered_at = run.peers[1].steps();
        let r = run.run().unwrap();
        assert!(r.desyncs >= 1, "{r:?}");
        let first = r.first_desync_step.unwrap();
        assert!(
            first >= tampered_at && first < tampered_at + 2 * CHECKSUM_EVERY_STEPS,
            "tampered before step {tampered_at}, detected after step {first}"
        );
        assert!(!r.bit_identical_at_end);
    }

    /// The control of `hitch_frames`: a fixed playout delay shorter than the link's one-way trip leaves steps
    /// waiting for the other's input, frame after frame (the default, a one-way trip plus its adaptive margin,
    /// never waits: the tests above).
    #[test]
    fn a_playout_delay_shorter_than_the_trip_hitches() {
        let config = LockstepConfig {
            playout: PlayoutConfig {
                delay_s: 0.0,
                adaptive: false,
                ..PlayoutConfig::default()
            },
            ..link(50.0, 5.0, 5.0)
        };
        let r = run("cubes90.toml", &config);
        assert!(r.hitch_frames.iter().all(|&h| h > 0), "{r:?}");
        assert!(r.hitch_fraction() > 0.01, "{}", r.hitch_fraction());
        assert!(r.bit_identical_at_end, "waiting costs time, never sync: {r:?}");
    }

    #[test]
    fn garbage_packets_are_refused_and_the_game_goes_on_in_sync() {
        let config = LockstepConfig {
            garbage_every_n_packets: Some(7),
            ..link(40.0, 0.0, 10.0)
        };
        let r = run("cubes90.toml", &config);
        assert!(r.packets_refused[1] >= 100, "{:?}", r.packets_refused);
        assert_eq!(r.packets_refused[0], 0);
        assert_in_sync(&r, 10);
    }

    #[test]
    fn bad_settings_are_errors() {
        for bad in [
            LockstepConfig {
                run: RunSettings {
                    seconds: -1.0,
                    ..LockstepConfig::default().run
                },
                ..LockstepConfig::default()
            },
            LockstepConfig {
                run: RunSettings {
                    link: LinkConfig {
                        loss_pct: 101.0,
                        ..LockstepConfig::default().run.link
                    },
                    ..LockstepConfig::default().run
                },
                ..LockstepConfig::default()
            },
            LockstepConfig {
                run: RunSettings {
                    link: LinkConfig {
                        latency_ms: f64::NAN,
                        ..LockstepConfig::default().run.link
                    },
                    ..LockstepConfig::default().run
                },
                ..LockstepConfig::default()
            },
        ] {
            assert!(bad.validate().is_err());
        }
        let args = CompareArgs {
            model: Model::Authority,
            scene: PathBuf::from("nowhere.toml"),
            seconds: 1.0,
            link: LinkArgs::default(),
            seed: 1,
            players: 2,
            playout_ms: 100.0,
            fixed_playout: false,
            predict_buffer_ms: 33.0,
            predict_early_stop: false,
            snapshot_hz: 30,
            no_compression: false,
            kbps_budget: 128,
            packets_per_s: None,
            no_remote_inputs: false,
            view: false,
            frames: None,
        };
        let e = run_cli(&CompareArgs {
            players: 3,
            model: Model::Predict,
            ..args.clone()
        })
        .unwrap_err();
        assert!(e.to_string().contains("two players"), "{e}");
        let missing = run_cli(&CompareArgs {
            model: Model::Lockstep,
            ..args
        });
        assert!(missing.is_err(), "a missing scene file is an error");
    }
}
