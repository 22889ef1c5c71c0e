//! `tumble compare --model predict`: the server (player 1, the endpoint that hosts) and the predicting client
//! (player 2) in one process, joined by two `tumble-net` endpoints and the in-memory link simulator on a simulated
//! clock (as the lockstep run in [`crate::compare`]), one 90 Hz frame at a time, both bots playing.
//!
//! A frame: the server samples its bot, runs its step and sends its state; the client samples its bot, runs its
//! step (its cube answers now) and sends its unacked inputs; then the link runs until the next frame, delivering
//! (the client rewinds as states arrive). No drain: the client never lags its own inputs.
//!
//! Figures ("up" is player 1 → player 2, the server's states; "down" the client's inputs):
//! - `kbps_mean_up` / `kbps_mean_down`: each direction's datagrams with IP/UDP headers; `kbps_mean` the larger.
//! - `input_to_screen_ms`: on the client, the predicting player's machine: mean time from sampling its input for
//!   a step to simulating that step (0: the same frame). The server's own player has 0 as well.
//! - `remote_delay_ms`: on the server, how far behind the client's sampling its cube is simulated and shown: the
//!   offset, in steps of 1/90 s (one-way latency plus the server's input buffer).
//! - `host_input_to_screen_ms`, `guest_input_to_screen_ms`, `host_sees_guest_ms`, `guest_sees_host_ms`: the four
//!   delays from both sides ([`crate::sides`]): both players' cubes answer at once on their own machines; the
//!   server sees the client's input at the offset, the client the server's player in its newest state.
//! - `hitch_frames`, `hitch_fraction`: null — neither side ever waits; a client input late at the server is
//!   replaced by the last one (`late_inputs`), which the client sees as a correction.
//! - `desyncs`: null — the two sides compare no checksums (the client's cube is compared state by state instead:
//!   `states_compared`, `states_exact`).
//! - `corrections`: server states whose client cube differed from the prediction for its step by more than
//!   5 mm or 0.01 rad, each a rewind and replay (the first state, the join, rewinds uncounted unless it is the
//!   prediction to the bit — both machines hold the client's cube still until its first step, so it is).
//!   `correction_max_m`: the largest position error among them. `prediction_error_max_m`: among all states.
//! - `correction_jump_max_m`: the largest move of the client's cube in the present a correction made in the
//!   simulation (what an unsmoothed view would jump by); `correction_drawn_max_m`: the largest motion of the
//!   drawn cube in one frame beyond what the simulation moved it (the smoothing's easing, or a dropped offset).
//!   `others_rewind_moved_max_m`: the largest move a rewind made of any other body (what an unsmoothed view would
//!   jump by); `others_rewind_drawn_max_m`: the largest jump of any other body's drawn pose at a rewind that moved
//!   it within the draw smoothing's 8 m (the client draws them through it); `others_rewind_snapped`: moves past
//!   that, drawn as they are.
//! - `desyncs`: 0 — the server is the authority; a difference is a correction, never a desync.
//! - `bit_identical_at_end`: the newest server state compared at the end equalled the client's prediction for
//!   its step to the bit (the client's cube; the rest of the client's world is a prediction).
//! - `world_divergence_m_max` / `_mean`: the client's whole world against the server's at the same step, at the
//!   end: both players' hands off the keys for [`SETTLE_S`], then the server plays on alone until it has simulated
//!   the client's last step; the largest and the mean distance between a field cube's two positions (the player
//!   cubes apart: the client's own is the prediction the corrections measure; the server player's is drawn at the
//!   server's last state, a one-way latency behind by design); null if the server
//!   did not get there within 5 s. The server carries the cubes near the client's cube and, in turn, a few resting
//!   ones further away, which the client sets where its own copy rests elsewhere (`resting_cubes_set`).
//! - `cpu_ms_per_step`: wall time simulating, replays included, per step run, mean over both machines
//!   (`cpu_ms_per_step_client` / `_server` apart).

use crate::sides::{with_sides, DecidedAt, InputLag, Sides};
use crate::with_run;
use anyhow::{bail, Result};
use serde_json::{json, Value};
use tumble_engine::physics::{BodyId, World, WorldConfig};
use tumble_game::run_settings::RunSettings;
use tumble_net::PeerId;

use crate::compare::{check_flag, load_field, validate_run, CompareArgs};
use crate::loopback::{connect, link_time, read_packets, Link, LoopbackConfig, SUBTICKS_PER_STEP, TICK_S};
use tumble_game::cube_game::{CubeBot, CubeInput};
use tumble_game::STEP_HZ;
use tumble_models::inputs::packet::MAX_INPUT_PACKET_BYTES;
use tumble_models::predict::client::{ClientStats, PredictClient};
use tumble_models::predict::packet::MAX_STATE_PACKET_BYTES;
use tumble_models::predict::server::{PredictServer, ServerConfig, ServerStats, FAR_RESTING_PER_PACKET};

/// The world settings both machines build the scene with: the engine's defaults, but every velocity pass run.
/// The solver's early stop is a world-wide test, so with it the client's cube would take its bits from every
/// contact in the world — the server player's too, which the client only has from packets — and a prediction
/// nothing touches would drift by float noise (a 5 mm correction or two a minute on open_field; none without).
/// `keep_early_stop` keeps the engine's default (`--predict-early-stop`) to show that.
pub fn world_config(keep_early_stop: bool) -> WorldConfig {
    WorldConfig {
        velocity_early_stop: keep_early_stop,
        ..WorldConfig::default()
    }
}

/// Largest server input buffer accepted (ms).
const MAX_BUFFER_MS: f64 = 1_000.0;
/// Seconds both players keep their hands off the keys at the end before the worlds are compared: the field
/// comes to rest, and the server's resting states reach the client.
pub const SETTLE_S: f64 = 10.0;
/// Longest the server plays on alone at the end to reach the client's last step (s), for the world's divergence.
pub const CATCH_UP_S: f64 = 5.0;

/// One prediction run's settings.
#[derive(Debug, Clone)]
pub struct PredictConfig {
    /// Length, seed and link.
    pub run: RunSettings,
    /// The server's slack between a client input's arrival and its step (ms, rounded to steps).
    pub buffer_ms: f64,
    /// The server carries the cubes near the client's cube only, none of the resting ones further away (as before
    /// issue 34; the control of `world_divergence_m_max`).
    pub near_cubes_only: bool,
    /// Frames each player's input is held back on its way to its machine (player 1, player 2): 0 in every real
    /// run; the tests' control of the input-to-screen and "sees" figures ([`crate::sides`]).
    pub input_lag_frames: [usize; 2],
}

impl Default for PredictConfig {
    fn default() -> Self {
        PredictConfig {
            run: RunSettings::default(),
            buffer_ms: 33.0,
            near_cubes_only: false,
            input_lag_frames: [0; 2],
        }
    }
}

impl PredictConfig {
    /// The settings `tumble compare` was given.
    pub fn from_args(args: &CompareArgs) -> Self {
        PredictConfig {
            run: args.run_settings(),
            buffer_ms: args.predict_buffer_ms,
            near_cubes_only: false,
            input_lag_frames: [0; 2],
        }
    }

    pub fn validate(&self) -> Result<()> {
        validate_run(&self.run)?;
        check_flag("--predict-buffer-ms", self.buffer_ms, MAX_BUFFER_MS)
    }

    fn buffer_steps(&self) -> u64 {
        (self.buffer_ms / 1000.0 * STEP_HZ as f64).round() as u64
    }
}

/// What a prediction run measured (see the module doc for each figure).
#[derive(Debug, Clone)]
pub struct PredictReport {
    pub cubes: usize,
    pub frames: u64,
    pub kbps_mean_up: f64,
    pub kbps_mean_down: f64,
    pub offset_steps: Option<u64>,
    /// The client's whole world against the server's at the same step, at the end (m): the largest and the mean
    /// distance between a body's positions on the two machines (see [`PredictRun::world_divergence`]); `None`
    /// when the server never reached the client's last step.
    pub world_divergence_m_max: Option<f32>,
    pub world_divergence_m_mean: Option<f32>,
    pub client: ClientStats,
    pub server: ServerStats,
    /// Both sides' input to screen and how late each sees the other ([`crate::sides`]).
    pub sides: Sides,
}

impl PredictReport {
    pub fn input_to_screen_ms(&self) -> f64 {
        self.client.input_delay_s_sum / self.client.steps.max(1) as f64 * 1000.0
    }

    pub fn remote_delay_ms(&self) -> Option<f64> {
        self.offset_steps.map(|o| o as f64 * 1000.0 / STEP_HZ as f64)
    }

    fn cpu_ms(cpu_s: f64, steps: u64) -> f64 {
        cpu_s / steps.max(1) as f64 * 1000.0
    }

    pub fn to_json(&self, config: &PredictConfig, scene: &str) -> Value {
        let (c, s) = (&self.client, &self.server);
        let mut figures = with_run(
            &config.run,
            json!({
                "model": "predict",
                "scene": scene,
                "cubes": self.cubes,
                "kbps_mean": self.kbps_mean_up.max(self.kbps_mean_down),
                "kbps_mean_up": self.kbps_mean_up,
                "kbps_mean_down": self.kbps_mean_down,
                "input_to_screen_ms": self.input_to_screen_ms(),
                "input_to_screen_on": "client (the predicting player)",
                "remote_delay_ms": self.remote_delay_ms(),
                "hitch_frames": null,
                "hitch_fraction": null,
                "corrections": c.corrections,
                "correction_max_m": c.correction_max_m,
                "correction_angle_max_rad": c.correction_angle_max_rad,
                "correction_jump_max_m": c.correction_jump_max_m,
                "correction_drawn_max_m": c.correction_drawn_max_m,
                "correction_offset_max_m": c.correction_offset_max_m,
                "unsmoothed_rewinds": c.unsmoothed_rewinds,
                "others_rewind_moved_max_m": c.others_rewind_moved_max_m,
                "others_rewind_drawn_max_m": c.others_rewind_drawn_max_m,
                "others_rewind_snapped": c.others_rewind_snapped,
                "prediction_error_max_m": c.prediction_error_max_m,
                "states_compared": c.states_compared,
                "states_exact": c.states_exact,
                "first_inexact_step": c.first_inexact_step,
                "inexact_after_replay": c.inexact_after_replay,
            }),
        );
        let more = json!({
            "desyncs": null,
            "bit_identical_at_end": c.last_state_exact,
            "cpu_ms_per_step": Self::cpu_ms(c.step_cpu_s + s.step_cpu_s, c.steps + s.steps),
            "cpu_ms_per_step_client": Self::cpu_ms(c.step_cpu_s, c.steps),
            "cpu_ms_per_step_server": Self::cpu_ms(s.step_cpu_s, s.steps),
            "rewinds": c.rewinds,
            "replayed_steps": c.replayed_steps,
            "joined_at_step": c.joined_at_step,
            "offset_steps": self.offset_steps,
            "world_divergence_m_max": self.world_divergence_m_max,
            "world_divergence_m_mean": self.world_divergence_m_mean,
            "resting_cubes_set": c.resting_cubes_set,
            "server_buffer_steps": config.buffer_steps(),
            "late_inputs": s.late_inputs,
            "inputs_applied": s.inputs_applied,
            "cubes_carried_mean": s.cubes_carried as f64 / s.packets_written.max(1) as f64,
            "states_stale": c.states_stale,
            "states_refused": c.states_refused,
            "packets_refused_per_player": [s.packets_refused, c.packets_refused],
        });
        // Two objects: one `json!` this long passes the macro's recursion limit.
        if let (Value::Object(a), Value::Object(b)) = (&mut figures, more) {
            a.extend(b);
        }
        with_sides(&self.sides, figures)
    }
}

/// The server, the client and the link between them, one frame at a time.
pub struct PredictRun {
    link: Link,
    handshake_ticks: u64,
    pub(crate) server: PredictServer,
    pub(crate) client: PredictClient,
    bots: [CubeBot; 2],
    frame: u64,
    frames: u64,
    buf: Vec<u8>,
    /// The client's input from a person (the desktop view) instead of its bot.
    human: Option<CubeInput>,
    /// Both players' hands off the keys: the world comes to rest (before the divergence is measured).
    settling: bool,
    /// Each player's input on its way to its machine, and when each step's input was decided (by server step,
    /// and by client step).
    lags: [InputLag; 2],
    host_decided: DecidedAt,
    guest_decided: DecidedAt,
    sides: Sides,
}

impl PredictRun {
    /// Joins the two endpoints (the handshake runs here) and builds both machines on copies of one scene's world.
    pub fn new(config: &PredictConfig, world_server: World, world_client: World) -> Result<Self> {
        config.validate()?;
        if world_server.checksum() != world_client.checksum() {
            bail!("the two worlds differ");
        }
        let link_config = LoopbackConfig {
            run: config.run.clone(),
            ..LoopbackConfig::default()
        };
        let (link, handshake_ticks) = connect(&link_config)?;
        let server_config = ServerConfig {
            buffer_steps: config.buffer_steps(),
            far_resting_per_packet: if config.near_cubes_only {
                0
            } else {
                FAR_RESTING_PER_PACKET
            },
        };
        Ok(Self {
            link,
            handshake_ticks,
            server: PredictServer::new(world_server, server_config)?,
            client: PredictClient::new(world_client)?,
            bots: [
                CubeBot::new(config.run.seed),
                CubeBot::new(config.run.seed.wrapping_add(1)),
            ],
            frame: 0,
            frames: (config.run.seconds * STEP_HZ as f64).round() as u64,
            buf: vec![0u8; MAX_INPUT_PACKET_BYTES.max(MAX_STATE_PACKET_BYTES)],
            human: None,
            settling: false,
            lags: config.input_lag_frames.map(InputLag::new),
            host_decided: DecidedAt::default(),
            guest_decided: DecidedAt::default(),
            sides: Sides::default(),
        })
    }

    /// The client's player plays `input` from the next frame on (`None`: its bot again).
    pub fn set_human(&mut self, input: Option<CubeInput>) {
        self.human = input;
    }

    /// Bytes sent so far, IP/UDP headers included: (server, client).
    pub fn wire_bytes(&self) -> (u64, u64) {
        self.link.wire_bytes()
    }

    pub fn client(&self) -> &PredictClient {
        &self.client
    }

    /// The client's draw smoothing of the other bodies off (the control of `others_rewind_drawn_max_m`).
    #[doc(hidden)]
    pub fn draw_without_smoothing(&mut self) {
        self.client.draw_without_smoothing();
    }

    pub fn server(&self) -> &PredictServer {
        &self.server
    }

    /// True once the measured frames have run.
    pub fn measured(&self) -> bool {
        self.frame >= self.frames
    }

    /// One frame on both machines.
    pub fn frame(&mut self) -> Result<()> {
        self.step_frame(true)
    }

    /// One frame: the server steps and (with `client_too`) sends its state while the client samples, steps and
    /// reads; without, only the server steps and reads (the client's packets still go out, carrying its unacked
    /// inputs). The players' hands stay off the keys while the run settles.
    fn step_frame(&mut self, client_too: bool) -> Result<()> {
        let k = self.frame;
        let t = link_time(self.handshake_ticks, k, 0, TICK_S);
        let measured = k < self.frames && client_too && !self.settling;
        // The server's step k (one a frame) applies player 1's input and the client's for step k − offset.
        let (server_input, decided) = self.lags[0].pass(self.bots[0].next_input(), t);
        self.host_decided.set(k, decided);
        self.server
            .sample(if self.settling { CubeInput::NONE } else { server_input });
        self.server.advance()?;
        if measured {
            if let Some(at) = decided {
                self.sides.host_input_to_screen.add(t - at);
            }
            if let Some(at) = self.server.applied_input().and_then(|s| self.guest_decided.get(s)) {
                self.sides.host_sees_guest.add(t - at);
            }
        }
        if client_too {
            let n = self.server.write_packet(&mut self.buf)?;
            if let Err(e) = self.link.host.send(self.link.now(t), PeerId(0), &self.buf[..n]) {
                tracing::warn!("prediction state packet not sent: {e}");
            }
            let (input, decided) = match self.human {
                Some(input) => (input, Some(t)),
                None => self.lags[1].pass(self.bots[1].next_input(), t),
            };
            let step = self
                .client
                .sample(t, if self.settling { CubeInput::NONE } else { input })?;
            self.guest_decided.set(step, decided);
            self.client.advance(t)?;
            if measured {
                if let Some(at) = decided {
                    self.sides.guest_input_to_screen.add(t - at);
                }
                // The server player's cube is drawn from the newest state, for client step c: the server made it
                // in its step c − 1 + offset, with its player's input of that step.
                let seen = self.client.newest_state().zip(self.server.offset());
                if let Some(at) = seen.and_then(|(c, o)| self.host_decided.get((c + o).checked_sub(1)?)) {
                    self.sides.guest_sees_host.add(t - at);
                }
            }
        }
        let n = self.client.write_packet(&mut self.buf)?;
        if let Err(e) = self.link.guest.send(self.link.now(t), PeerId(0), &self.buf[..n]) {
            tracing::warn!("prediction input packet not sent: {e}");
        }
        for sub in 0..SUBTICKS_PER_STEP {
            self.link.tick(link_time(self.handshake_ticks, k, sub, TICK_S))?;
            self.receive(client_too)?;
        }
        self.frame += 1;
        Ok(())
    }

    fn receive(&mut self, client_too: bool) -> Result<()> {
        let server = &mut self.server;
        read_packets(&mut self.link.host, "the server", "input packet", |b| {
            server.read_packet(b)
        })?;
        if !client_too {
            return Ok(());
        }
        let client = &mut self.client;
        read_packets(&mut self.link.guest, "the client", "state packet", |b| {
            client.read_packet(b)
        })
    }

    /// Runs the measured frames and reports, with the world's divergence at the end.
    pub fn run(mut self) -> Result<PredictReport> {
        while !self.measured() {
            self.frame()?;
        }
        let mut report = self.report();
        if let Some((max, mean)) = self.world_divergence()? {
            report.world_divergence_m_max = Some(max);
            report.world_divergence_m_mean = Some(mean);
        }
        Ok(report)
    }

    /// How far the client's world is from the server's at the same step: every field cube's position on the client
    /// now (the player cubes apart: the client's own is its prediction, measured by the corrections; the server
    /// player's is shown at the server's last state, a one-way latency behind), against the server's once it has
    /// simulated the same step (the client stops sampling; the server plays on, with its bot, the link carrying the
    /// client's last inputs, for at most [`CATCH_UP_S`]). Returns (largest, mean) over the bodies; `None` if the
    /// server never got there. Nothing of this is sent: the harness reads both worlds.
    pub fn world_divergence(&mut self) -> Result<Option<(f32, f32)>> {
        self.settling = true;
        for _ in 0..(SETTLE_S * STEP_HZ as f64) as u64 {
            self.frame()?;
        }
        self.world_divergence_now()
    }

    /// [`PredictRun::world_divergence`] without the settle: the client's world as it is now against the server's
    /// at the same step (the server's player still off the keys if the run settled).
    pub fn world_divergence_now(&mut self) -> Result<Option<(f32, f32)>> {
        let target = self.client.steps();
        let world = self.client.world();
        let client: Vec<(glam::Vec3, bool)> = (0..world.body_count() as u32)
            .map(|i| world.state(BodyId(i)).map(|s| (s.position, s.at_rest)))
            .collect::<Result<_, _>>()?;
        let limit = self.frame + (CATCH_UP_S * STEP_HZ as f64) as u64;
        while self.server.applied().is_none_or(|a| a + 1 < target) {
            if self.frame >= limit {
                return Ok(None);
            }
            self.step_frame(false)?;
        }
        let server = self.server.world();
        let players = self.server.game().players();
        let (mut max, mut sum, mut n) = (0.0f32, 0.0f64, 0usize);
        for (i, &(c, client_at_rest)) in client.iter().enumerate() {
            let id = BodyId(i as u32);
            if players.contains(&id) {
                continue;
            }
            let there = server.state(id)?;
            let d = there.position.distance(c);
            if d > 0.01 {
                tracing::debug!(cube = i, distance_m = d, client = ?c, client_at_rest, server = ?there.position,
                    server_at_rest = there.at_rest, "a field cube diverged");
            }
            max = max.max(d);
            sum += f64::from(d);
            n += 1;
        }
        Ok(Some((max, (sum / n.max(1) as f64) as f32)))
    }

    pub fn report(&self) -> PredictReport {
        let seconds = self.frame.max(1) as f64 / STEP_HZ as f64;
        let kbps = |bytes: u64| bytes as f64 * 8.0 / 1000.0 / seconds;
        PredictReport {
            cubes: self.server.world().body_count() - 2,
            frames: self.frame,
            kbps_mean_up: kbps(self.link.host_wire_bytes()),
            kbps_mean_down: kbps(self.link.guest_wire_bytes()),
            offset_steps: self.server.offset(),
            world_divergence_m_max: None,
            world_divergence_m_mean: None,
            client: self.client.stats.clone(),
            server: self.server.stats.clone(),
            sides: self.sides,
        }
    }
}

/// Runs `config` on two copies of a world.
pub fn run_predict(config: &PredictConfig, world_server: World, world_client: World) -> Result<PredictReport> {
    PredictRun::new(config, world_server, world_client)?.run()
}

/// `tumble compare --model predict`: the JSON object.
pub fn run_cli(args: &CompareArgs) -> Result<Value> {
    let config = PredictConfig::from_args(args);
    config.validate()?;
    let (scene, world) = load_field(&args.scene, world_config(args.predict_early_stop))?;
    tracing::info!(%scene, seconds = config.run.seconds, latency_ms = config.run.link.latency_ms,
        loss_pct = config.run.link.loss_pct, "predict: a server and a predicting client playing the cube game");
    let report = run_predict(&config, world.clone(), world)?;
    tracing::info!(
        corrections = report.client.corrections,
        rewinds = report.client.rewinds,
        "predict run done"
    );
    Ok(report.to_json(&config, &scene))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sides::assert_lag_controls;
    use tumble_net::LinkConfig;

    fn scene_world(file: &str) -> World {
        crate::compare::asset_field(file, world_config(false))
    }

    fn link(latency_ms: f64, loss_pct: f64, seconds: f64) -> PredictConfig {
        PredictConfig {
            run: RunSettings::link(seconds, latency_ms, 0.0, loss_pct),
            ..PredictConfig::default()
        }
    }

    fn run(file: &str, config: &PredictConfig) -> PredictReport {
        run_predict(config, scene_world(file), scene_world(file)).unwrap()
    }

    /// The control of the four delays ([`crate::sides`]): player 1's input held back 9 frames (100 ms) moves
    /// the server player's input to screen and the client's view of it by that, nothing of player 2's; player
    /// 2's held back 18 frames moves the client's own input to screen and the server's view of it by 200 ms.
    #[test]
    fn each_sides_delays_move_by_the_lag_of_the_input_they_carry() {
        let sides = |lag| {
            let config = PredictConfig {
                input_lag_frames: lag,
                ..link(50.0, 0.0, 5.0)
            };
            let mut run = PredictRun::new(&config, scene_world("cubes90.toml"), scene_world("cubes90.toml")).unwrap();
            while !run.measured() {
                run.frame().unwrap();
            }
            run.report().sides
        };
        let base = assert_lag_controls(sides);
        let [host, guest, host_sees, guest_sees] = base.ms();
        assert!(
            host.abs() < 1e-9 && guest.abs() < 1e-9,
            "both step their own input at once: {base:?}"
        );
        // The server runs a client step a one-way trip and its buffer after the client did; the client draws
        // the server's player from a state a one-way trip old.
        assert!(host_sees > 75.0 && host_sees < 100.0, "{base:?}");
        assert!(guest_sees > 45.0 && guest_sees < 70.0, "{base:?}");
    }

    #[test]
    fn with_nothing_in_its_way_the_prediction_is_exact_and_never_corrected() {
        let r = run("open_field.toml", &link(100.0, 5.0, 5.0));
        let c = &r.client;
        assert_eq!(c.corrections, 0, "{r:?}");
        assert_eq!(
            c.rewinds, 0,
            "not even the join: the first state was the prediction to the bit"
        );
        assert!(c.states_compared > 300, "{} states", c.states_compared);
        assert_eq!(
            c.states_exact, c.states_compared,
            "every state was the prediction to the bit"
        );
        assert_eq!(
            r.input_to_screen_ms(),
            0.0,
            "the client's cube answers in the step it is sampled"
        );
        // 100 ms one way is 9 steps; the first packet arrives in the 10th frame, plus 3 steps of buffer.
        assert_eq!(r.offset_steps, Some(13));
        assert_eq!(
            r.server.late_inputs, 0,
            "5 % loss: every input rides in several packets"
        );
    }

    fn assert_smoothed(r: &PredictReport) {
        let c = &r.client;
        assert_eq!(c.unsmoothed_rewinds, 0);
        assert!(
            c.correction_drawn_max_m <= 0.05,
            "no drawn jump past 5 cm in a frame: {}",
            c.correction_drawn_max_m
        );
        assert!(
            c.correction_jump_max_m > 2.0 * c.correction_drawn_max_m,
            "unsmoothed, a correction would have moved the cube {} m at once; drawn at most {} m a frame",
            c.correction_jump_max_m,
            c.correction_drawn_max_m
        );
        assert!(c.rewinds - c.corrections <= 1, "every rewind a correction, or the join");
    }

    #[test]
    fn with_cubes_in_its_way_corrections_are_counted_and_drawn_smoothly() {
        // No input buffer at the server over a jittery, lossy link: the offset is set from the first arrival, so
        // many of the client's inputs come after their step and the server reuses the one before; where that
        // one differs (the bot changed keys), the server's cube goes elsewhere among the cubes than predicted.
        let config = PredictConfig {
            run: RunSettings::link(20.0, 100.0, 20.0, 25.0),
            buffer_ms: 0.0,
            ..PredictConfig::default()
        };
        let r = run("cubes900.toml", &config);
        let c = &r.client;
        assert!(r.server.late_inputs > 100, "{}", r.server.late_inputs);
        assert!(c.corrections >= 10, "{r:?}");
        assert!(c.correction_max_m > CORRECTION_M, "{}", c.correction_max_m);
        assert!(
            r.server.cubes_carried > 0,
            "the field cubes near the client's cube are carried"
        );
        assert_smoothed(&r);
        // The other bodies a rewind moves are drawn without a jump (but for the few moved past the smoothing's
        // reach); with the draw smoothing off every one of them jumps.
        assert!(c.others_rewind_moved_max_m > 0.01, "{r:?}");
        assert!(c.others_rewind_drawn_max_m < 0.001, "{r:?}");
        let mut unsmoothed =
            PredictRun::new(&config, scene_world("cubes900.toml"), scene_world("cubes900.toml")).unwrap();
        unsmoothed.draw_without_smoothing();
        let u = unsmoothed.run().unwrap();
        assert!(
            u.client.others_rewind_snapped > c.others_rewind_snapped + 10,
            "{} jumps unsmoothed against {}",
            u.client.others_rewind_snapped,
            c.others_rewind_snapped
        );
    }

    /// The world's divergence compares the two machines at one step, after both players' hands come off the keys:
    /// on cubes900 at 250 ms round trip and 5 % loss the client's field ends where the server's is (the far resting
    /// cubes carried in turn put it back); with the near cubes carried only (the control) it ends metres off; a
    /// cube moved 3 m behind the protocol's back on the client reads at least that.
    #[test]
    fn the_client_world_converges_on_the_servers() {
        let play = |near_cubes_only: bool, nudge_m: f32| {
            let config = PredictConfig {
                run: RunSettings {
                    seed: 3,
                    ..RunSettings::link(60.0, 125.0, 15.0, 5.0)
                },
                near_cubes_only,
                ..PredictConfig::default()
            };
            let mut run = PredictRun::new(&config, scene_world("cubes900.toml"), scene_world("cubes900.toml")).unwrap();
            while !run.measured() {
                run.frame().unwrap();
            }
            let divergence = if nudge_m > 0.0 {
                // A far cube of the client's world moved at the last moment: nothing corrects it before the end.
                let mut far = run.client.world().state(BodyId(0)).unwrap();
                far.position.x += nudge_m;
                run.client.set_body_state(BodyId(0), &far).unwrap();
                run.world_divergence_now()
                    .unwrap()
                    .expect("the server reaches the client's step")
            } else {
                run.world_divergence()
                    .unwrap()
                    .expect("the server reaches the client's step")
            };
            (divergence, run.client.stats.resting_cubes_set)
        };
        let ((max, mean), set) = play(false, 0.0);
        assert!(max <= 0.01 && mean <= max, "{max} {mean}");
        // `resting_cubes_set` counts what put the field back; with the near cubes only, next to nothing is set (the
        // few near cubes still when their resting state came: 0 on the bits this seed was picked on, 3 since the
        // shock pass holds columns exactly, against 294 with the far cubes carried).
        let ((near_only, _), near_set) = play(true, 0.0);
        assert!(near_only > 0.1, "{near_only}");
        assert!(
            set > 20 * near_set.max(1),
            "{set} cubes set, {near_set} with the near cubes only"
        );
        let ((nudged, _), _) = play(false, 3.0);
        assert!(nudged >= 2.9, "{nudged}");
    }

    #[test]
    fn when_the_players_meet_metre_corrections_are_drawn_at_most_5_cm_a_frame() {
        // cubes90: the players start 24 m apart and roll into each other within seconds.
        let r = run("cubes90.toml", &link(100.0, 0.0, 20.0));
        let c = &r.client;
        assert!(c.corrections >= 5, "{r:?}");
        assert!(c.correction_jump_max_m > 0.5, "{}", c.correction_jump_max_m);
        assert_smoothed(&r);
    }

    const CORRECTION_M: f32 = tumble_models::predict::client::CORRECTION_POSITION_M;

    #[test]
    fn a_nudged_prediction_is_corrected_once_and_the_replay_lands_on_the_server_state() {
        let mut run = PredictRun::new(
            &link(100.0, 0.0, 10.0),
            scene_world("open_field.toml"),
            scene_world("open_field.toml"),
        )
        .unwrap();
        for _ in 0..300 {
            run.frame().unwrap();
        }
        assert_eq!(run.client().stats.corrections, 0);
        run.client.nudge_own(glam::Vec3::new(0.03, 0.0, 0.0)).unwrap();
        let r = run.run().unwrap();
        let c = &r.client;
        assert_eq!(c.corrections, 1, "one correction, then the prediction holds: {c:?}");
        assert!((c.correction_max_m - 0.03).abs() < 0.001, "{}", c.correction_max_m);
        let rewound_to = c.last_rewind_step.unwrap();
        assert!(
            (300..330).contains(&rewound_to),
            "corrected within a round trip: {rewound_to}"
        );
        // Every state after the rewind's step — the replayed ones, then the newly predicted ones — is the
        // server's: replayed from the server's state with the same inputs, the cube lands where the server's did.
        // Not always to the bit at first: `World::set_state` renormalises the rotation it is given (a last-bit
        // change), which moves a spinning cube's spin by ~1e-10 rad/s until the cube's contacts settle it; once
        // they do, the bits agree again (the last state, and every one after the first few).
        assert!(c.error_after_replay_max < 1e-6, "{c:?}");
        assert!(c.last_state_exact);
        assert!(c.states_exact + 60 > c.states_compared, "{c:?}");
        assert!(
            c.correction_drawn_max_m < 0.01,
            "3 cm eased in: {}",
            c.correction_drawn_max_m
        );
    }

    #[test]
    fn bad_settings_are_errors() {
        for bad in [
            PredictConfig {
                run: RunSettings {
                    seconds: 0.0,
                    ..PredictConfig::default().run
                },
                ..PredictConfig::default()
            },
            PredictConfig {
                run: RunSettings {
                    link: LinkConfig {
                        loss_pct: -1.0,
                        ..PredictConfig::default().run.link
                    },
                    ..PredictConfig::default().run
                },
                ..PredictConfig::default()
            },
            PredictConfig {
                buffer_ms: f64::INFINITY,
                ..PredictConfig::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
