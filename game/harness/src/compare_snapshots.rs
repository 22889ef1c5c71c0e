//! `tumble compare --model snapshots`: snapshot interpolation ([`tumble_models::snapshots`]) on the cube game, the same
//! two seeded bots, link and clock as lockstep's run in [`super::compare`]. Player 1's machine is the server
//! (it simulates everything), player 2's the client (it draws the server's snapshots).
//!
//! A frame: the server samples player 1's bot, steps once, and sends a snapshot's slices when one is due; the
//! client samples player 2's bot, draws, and sends its ack and inputs; the link runs until the next frame.
//!
//! Figures ("up" is server → client):
//! - `kbps_mean_up` / `kbps_mean_down`: each direction's datagrams with IP/UDP headers over the run; `kbps_mean`
//!   the larger (the snapshots).
//! - `input_to_screen_ms`: player 1's input to player 1's screen (`host_input_to_screen_ms`): 0, the server steps
//!   in the frame it samples.
//!   `client_input_to_screen_ms`: player 2's (`guest_input_to_screen_ms`), mean over drawn frames of now − when
//!   player 2 decided the newest input the server had applied by the older snapshot drawn from (a round trip plus
//!   the playout delay; frames drawn before any input was applied are not counted — they once counted as 0).
//! - `remote_delay_ms`: mean over the client's drawn frames of now − the time the server simulated the state
//!   drawn (the render time): how far behind player 2 sees player 1.
//! - `host_input_to_screen_ms`, `guest_input_to_screen_ms`, `host_sees_guest_ms`, `guest_sees_host_ms`: the four
//!   delays from both sides ([`crate::sides`]): the client's own input comes back in a snapshot (a round trip and
//!   the playout delay); the server sees player 2 when its newest input arrives (a one-way trip).
//! - `hitch_frames`: client frames, from its first drawn frame, with nothing new to draw: no snapshot after the
//!   render time and the extrapolation limit passed (or none before it), so the view held still;
//!   `hitch_fraction` of those frames. `extrapolated_frames`: frames drawn past the newest snapshot.
//! - `corrections`: frames where drawing went back to interpolating after extrapolating or holding and the view
//!   jumped more than 1 mm; `correction_max_m` the largest such jump. A jump is how far a cube is drawn from
//!   where the previous frame's pose and drawn velocity put it (largest over all cubes). `jump_max_m`: the
//!   largest jump over all frames (Hermite's own curvature through collisions included).
//! - `playout_delay_ms_at_end`: the client's playout delay at the end; `playout_delay_ms_mean`: the delay each
//!   drawn frame used, mean (the adaptive delay grows with measured jitter and loss, and is followed slowly).
//! - `desyncs`: complete snapshots the client rebuilt that differ from what the server sent (delta decoding
//!   against the wrong baseline would show here); `bit_identical_at_end`: the client's newest complete snapshot
//!   equals, bit for bit, the server's state as sent (quantized when compressed, raw floats when not).
//! - `cpu_ms_per_step`: the server's game step (forces, physics, colours), mean; `client_cpu_ms_per_frame`: the
//!   client's slice decoding and drawing per frame.

use crate::with_run;
use anyhow::{bail, Result};
use serde_json::{json, Value};
use tumble_engine::physics::World;
use tumble_game::run_settings::RunSettings;
use tumble_net::packet::MAX_PAYLOAD_BYTES;
use tumble_net::{EndpointEvent, PeerId};

use super::compare::{check_flag, validate_run};
use super::loopback::{connect, link_time, read_packets, Link, LoopbackConfig, SUBTICKS_PER_STEP, TICK_S};
use crate::sides::{with_sides, DecidedAt, InputLag, Sides};
use tumble_game::cube_game::{CubeBot, CubeInput};
use tumble_game::STEP_HZ;
use tumble_models::lockstep::playout::MAX_DELAY_S;
use tumble_models::snapshots::server::{MAX_SNAPSHOT_HZ, MIN_SNAPSHOT_HZ, PLAYERS};
use tumble_models::snapshots::{PlayoutDelay, SnapshotClient, SnapshotServer};

/// One snapshot run's settings.
#[derive(Debug, Clone)]
pub struct SnapshotConfig {
    /// Length, seed and link.
    pub run: RunSettings,
    pub snapshot_hz: u32,
    pub compressed: bool,
    pub delay: PlayoutDelay,
    /// Frames each player's input is held back on its way to its machine (player 1, player 2): 0 in every real
    /// run; the tests' control of the input-to-screen and "sees" figures ([`crate::sides`]).
    pub input_lag_frames: [usize; 2],
}

impl Default for SnapshotConfig {
    fn default() -> Self {
        SnapshotConfig {
            run: RunSettings::default(),
            snapshot_hz: 30,
            compressed: true,
            delay: PlayoutDelay {
                floor_s: 0.1,
                adaptive: true,
                follow_loss: true,
            },
            input_lag_frames: [0; 2],
        }
    }
}

impl SnapshotConfig {
    /// The settings `tumble compare` was given (`--playout-ms` and `--fixed-playout` set the client's delay).
    pub fn from_args(args: &super::compare::CompareArgs) -> Self {
        SnapshotConfig {
            run: args.run_settings(),
            snapshot_hz: args.snapshot_hz,
            compressed: !args.no_compression,
            delay: tumble_models::snapshots::PlayoutDelay {
                floor_s: args.playout_ms / 1000.0,
                adaptive: !args.fixed_playout,
                follow_loss: true,
            },
            input_lag_frames: [0; 2],
        }
    }

    pub fn validate(&self) -> Result<()> {
        validate_run(&self.run)?;
        if !(MIN_SNAPSHOT_HZ..=MAX_SNAPSHOT_HZ).contains(&self.snapshot_hz) {
            bail!(
                "--snapshot-hz must be in {MIN_SNAPSHOT_HZ}..={MAX_SNAPSHOT_HZ} (got {})",
                self.snapshot_hz
            );
        }
        check_flag("--playout-ms", self.delay.floor_s * 1000.0, MAX_DELAY_S * 1000.0)
    }
}

/// What a snapshot run measured (see the module doc).
#[derive(Debug, Clone)]
pub struct SnapshotReport {
    pub cubes: usize,
    pub frames: u64,
    pub kbps_mean_up: f64,
    pub kbps_mean_down: f64,
    pub remote_delay_ms: f64,
    pub drawn_frames: u64,
    pub hitch_frames: u64,
    pub extrapolated_frames: u64,
    pub corrections: u64,
    pub correction_max_m: f64,
    pub jump_max_m: f64,
    pub desyncs: u64,
    pub snapshots_sent: u64,
    pub snapshots_complete: u64,
    pub delta_snapshots: u64,
    pub slices_per_snapshot: f64,
    pub slices_refused: u64,
    pub bit_identical_at_end: bool,
    pub cpu_ms_per_step: f64,
    pub client_cpu_ms_per_frame: f64,
    pub playout_delay_ms: f64,
    /// Mean over the drawn frames of the delay each was drawn with (ms).
    pub playout_delay_ms_mean: f64,
    pub coloured_max: usize,
    /// Both sides' input to screen and how late each sees the other ([`crate::sides`]).
    pub sides: Sides,
}

impl SnapshotReport {
    pub fn hitch_fraction(&self) -> f64 {
        self.hitch_frames as f64 / self.drawn_frames.max(1) as f64
    }

    pub fn to_json(&self, c: &SnapshotConfig, scene: &str) -> Value {
        let report = with_run(
            &c.run,
            json!({
                "model": "snapshots",
                "scene": scene,
                "cubes": self.cubes,
                "snapshot_hz": c.snapshot_hz,
                "compressed": c.compressed,
                "kbps_mean": self.kbps_mean_up.max(self.kbps_mean_down),
                "kbps_mean_up": self.kbps_mean_up,
                "kbps_mean_down": self.kbps_mean_down,
                "input_to_screen_ms": self.sides.host_input_to_screen.ms(),
                // Before issue 34's four delays, the one that is the client's: the same figure.
                "client_input_to_screen_ms": self.sides.guest_input_to_screen.ms(),
                "remote_delay_ms": self.remote_delay_ms,
                "hitch_frames": self.hitch_frames,
                "hitch_fraction": self.hitch_fraction(),
                "frames_drawn": self.drawn_frames,
                "extrapolated_frames": self.extrapolated_frames,
                "corrections": self.corrections,
                "correction_max_m": self.correction_max_m,
                "jump_max_m": self.jump_max_m,
                "desyncs": self.desyncs,
                "bit_identical_at_end": self.bit_identical_at_end,
                "snapshots_sent": self.snapshots_sent,
                "snapshots_complete": self.snapshots_complete,
                "delta_snapshots": self.delta_snapshots,
                "slices_per_snapshot": self.slices_per_snapshot,
                "slices_refused": self.slices_refused,
                "cpu_ms_per_step": self.cpu_ms_per_step,
                "client_cpu_ms_per_frame": self.client_cpu_ms_per_frame,
                "playout_floor_ms": c.delay.floor_s * 1000.0,
                "playout_adaptive": c.delay.adaptive,
                "playout_delay_ms_at_end": self.playout_delay_ms,
                "playout_delay_ms_mean": self.playout_delay_ms_mean,
                "coloured_cubes_max": self.coloured_max,
            }),
        );
        with_sides(&self.sides, report)
    }
}

/// The server, the client and the link, one frame at a time.
pub struct SnapshotRun {
    link: Link,
    handshake_ticks: u64,
    pub server: SnapshotServer,
    pub client: SnapshotClient,
    bots: [CubeBot; PLAYERS],
    frame: u64,
    frames: u64,
    buf: Vec<u8>,
    remote_delay_s_sum: f64,
    played_delay_s_sum: f64,
    drawn_frames: u64,
    desyncs: u64,
    coloured_max: usize,
    /// The server's player's input from a person (the desktop view) instead of its bot.
    human: Option<CubeInput>,
    /// Each player's input on its way to its machine, and when each step's input was decided (by server step,
    /// and by client step).
    lags: [InputLag; PLAYERS],
    host_decided: DecidedAt,
    guest_decided: DecidedAt,
    sides: Sides,
    /// Frames left whose snapshots are not sent ([`SnapshotRun::withhold_snapshots`]).
    withheld_frames: u64,
}

impl SnapshotRun {
    pub fn new(config: &SnapshotConfig, world: World) -> Result<Self> {
        config.validate()?;
        let link_config = LoopbackConfig {
            run: config.run.clone(),
            ..LoopbackConfig::default()
        };
        let (link, handshake_ticks) = connect(&link_config)?;
        let frames = (config.run.seconds * STEP_HZ as f64).round() as u64;
        let server = SnapshotServer::new(world, config.compressed, config.snapshot_hz)?;
        let client = SnapshotClient::new(server.world().body_count(), config.snapshot_hz, config.delay);
        Ok(Self {
            link,
            handshake_ticks,
            server,
            client,
            bots: [
                CubeBot::new(config.run.seed),
                CubeBot::new(config.run.seed.wrapping_add(1)),
            ],
            frame: 0,
            frames,
            buf: vec![0u8; MAX_PAYLOAD_BYTES],
            remote_delay_s_sum: 0.0,
            played_delay_s_sum: 0.0,
            drawn_frames: 0,
            desyncs: 0,
            coloured_max: 0,
            human: None,
            lags: config.input_lag_frames.map(InputLag::new),
            host_decided: DecidedAt::default(),
            guest_decided: DecidedAt::default(),
            sides: Sides::default(),
            withheld_frames: 0,
        })
    }

    /// The server's player plays `input` from the next frame on (`None`: its bot again).
    pub fn set_human(&mut self, input: Option<CubeInput>) {
        self.human = input;
    }

    /// Tests: the snapshots of the next `frames` frames are not sent (an outage; the control of `hitch_frames`).
    #[doc(hidden)]
    pub fn withhold_snapshots(&mut self, frames: u64) {
        self.withheld_frames = frames + 1;
    }

    /// True once the client has drawn a frame from snapshots (before that it has no picture of the world).
    pub fn client_has_drawn(&self) -> bool {
        self.drawn_frames > 0
    }

    /// Bytes sent so far, IP/UDP headers included: (server, client).
    pub fn wire_bytes(&self) -> (u64, u64) {
        self.link.wire_bytes()
    }

    fn time(&self, frame: f64) -> f64 {
        link_time(self.handshake_ticks, 0, 0, TICK_S) + frame / STEP_HZ as f64
    }

    /// One frame on both machines, then the link until the next.
    pub fn frame(&mut self) -> Result<()> {
        let k = self.frame;
        let t = link_time(self.handshake_ticks, k, 0, TICK_S);
        let now = self.link.now(t);
        let measured = k < self.frames;
        // Server: its step k applies player 1's input (drawn this frame) and player 2's newest.
        let (input, decided) = match self.human {
            Some(input) => (input, Some(t)),
            None => self.lags[0].pass(self.bots[0].next_input(), t),
        };
        self.host_decided.set(k, decided);
        let due = self.server.step(input)?;
        self.withheld_frames = self.withheld_frames.saturating_sub(1);
        let due = due && self.withheld_frames == 0;
        if measured {
            if let Some(at) = decided {
                self.sides.host_input_to_screen.add(t - at);
            }
            if let Some(at) = self.server.remote_step().and_then(|s| self.guest_decided.get(s)) {
                self.sides.host_sees_guest.add(t - at);
            }
        }
        self.coloured_max = self.coloured_max.max(self.server.game().coloured_count());
        if due {
            let host = &mut self.link.host;
            self.server.send_snapshot(&mut self.buf, |bytes| {
                if let Err(e) = host.send(now, PeerId(0), bytes) {
                    tracing::warn!("snapshot slice not sent: {e}");
                }
            })?;
        }
        // Client: its step k is player 2's input of this frame.
        let (input, decided) = self.lags[1].pass(self.bots[1].next_input(), t);
        self.guest_decided.set(k, decided);
        self.client.sample(input)?;
        if let Some(render) = self.client.draw(t) {
            // State after server step n was simulated in frame n − 1.
            self.remote_delay_s_sum += t - self.time(render - 1.0);
            self.played_delay_s_sum += self.client.played_delay_s().unwrap_or(0.0);
            self.drawn_frames += 1;
            if measured {
                if let Some(at) = self.host_decided.at(render - 1.0) {
                    self.sides.guest_sees_host.add(t - at);
                }
                if let Some(at) = self
                    .client_applied_input()
                    .and_then(|s| self.guest_decided.get(u64::from(s)))
                {
                    self.sides.guest_input_to_screen.add(t - at);
                }
            }
        }
        let n = self.client.write_packet(&mut self.buf)?;
        if let Err(e) = self.link.guest.send(now, PeerId(0), &self.buf[..n]) {
            tracing::warn!("client packet not sent: {e}");
        }
        for sub in 0..SUBTICKS_PER_STEP {
            let now = self.link.tick(link_time(self.handshake_ticks, k, sub, TICK_S))?;
            self.receive(now)?;
        }
        self.frame += 1;
        Ok(())
    }

    /// The newest input step of player 2 the server had when it took the older snapshot drawn from.
    fn client_applied_input(&self) -> Option<u32> {
        self.client.drawn_input_ack()
    }

    fn receive(&mut self, now: f64) -> Result<()> {
        let server = &mut self.server;
        read_packets(&mut self.link.host, "the server", "client packet", |b| {
            server.read_packet(b)
        })?;
        while let Some(event) = self.link.guest.pop_event() {
            match event {
                EndpointEvent::Received { peer, sequence } => {
                    match self.client.read_slice(now, self.link.guest.payload()) {
                        Ok(done) => {
                            self.link.guest.accept(peer, sequence);
                            if let Some(seq) = done {
                                self.desyncs += u64::from(!self.matches_server(seq));
                            }
                        }
                        Err(e) => tracing::debug!("snapshot slice refused: {e}"),
                    }
                }
                EndpointEvent::Disconnected { reason, .. } => bail!("the client lost the server: {reason:?}"),
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether the client's newest complete snapshot is `seq` and equals what the server sent as `seq`.
    fn matches_server(&self, seq: u32) -> bool {
        let (Some((s, step, quantized, raw)), Some(sent)) = (self.client.newest(), self.server.sent(seq)) else {
            return true; // superseded or no longer kept: nothing to compare
        };
        if s != seq {
            return true;
        }
        // Compressed: the quantized states (the client's floats are its dequantized copies); raw: every float's bits.
        step == sent.step && (quantized == &sent.quantized[..] || raw == &sent.raw[..])
    }

    pub fn run(mut self) -> Result<SnapshotReport> {
        while self.frame < self.frames {
            self.frame()?;
        }
        Ok(self.report())
    }

    fn report(&self) -> SnapshotReport {
        let seconds = self.frame as f64 / STEP_HZ as f64;
        let kbps = |bytes: u64| bytes as f64 * 8.0 / 1000.0 / seconds;
        let s = &self.server.stats;
        let c = &self.client.stats;
        let drawn = self.drawn_frames.max(1) as f64;
        let bit_identical = self
            .client
            .newest()
            .is_some_and(|(seq, ..)| self.server.sent(seq).is_some() && self.matches_server(seq));
        SnapshotReport {
            cubes: self.server.world().body_count() - PLAYERS,
            frames: self.frames,
            kbps_mean_up: kbps(self.link.host_wire_bytes()),
            kbps_mean_down: kbps(self.link.guest_wire_bytes()),
            remote_delay_ms: self.remote_delay_s_sum / drawn * 1000.0,
            drawn_frames: c.frames,
            hitch_frames: c.hitch_frames,
            extrapolated_frames: c.extrapolated_frames,
            corrections: c.corrections,
            correction_max_m: c.correction_max_m,
            jump_max_m: c.jump_max_m,
            desyncs: self.desyncs,
            snapshots_sent: s.snapshots,
            snapshots_complete: c.snapshots_complete,
            delta_snapshots: s.delta_snapshots,
            slices_per_snapshot: s.slices as f64 / s.snapshots.max(1) as f64,
            slices_refused: c.slices_refused,
            bit_identical_at_end: bit_identical,
            cpu_ms_per_step: s.step_cpu_s / s.steps.max(1) as f64 * 1000.0,
            client_cpu_ms_per_frame: c.cpu_s / self.frame.max(1) as f64 * 1000.0,
            playout_delay_ms: self.client.delay_s() * 1000.0,
            playout_delay_ms_mean: self.played_delay_s_sum / drawn * 1000.0,
            coloured_max: self.coloured_max,
            sides: self.sides,
        }
    }
}

/// Runs `config` on a world.
pub fn run_snapshots(config: &SnapshotConfig, world: World) -> Result<SnapshotReport> {
    SnapshotRun::new(config, world)?.run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sides::assert_lag_controls;
    use tumble_engine::physics::WorldConfig;
    use tumble_net::LinkConfig;

    fn world(file: &str) -> World {
        crate::compare::asset_field(file, WorldConfig::default())
    }

    fn config(compressed: bool) -> SnapshotConfig {
        SnapshotConfig {
            run: RunSettings {
                seed: 7,
                ..RunSettings::link(6.0, 50.0, 10.0, 5.0)
            },
            compressed,
            ..SnapshotConfig::default()
        }
    }

    /// The control of the four delays ([`crate::sides`]): player 1's input held back 9 frames (100 ms) moves
    /// player 1's input to screen and player 2's view of player 1 by that and nothing of player 2's own; player
    /// 2's held back 18 frames moves the other two by 200 ms.
    #[test]
    fn each_sides_delays_move_by_the_lag_of_the_input_they_carry() {
        let run = |lag| {
            let config = SnapshotConfig {
                input_lag_frames: lag,
                ..config(true)
            };
            run_snapshots(&config, world("cubes90.toml")).unwrap().sides
        };
        let base = assert_lag_controls(run);
        let [host, guest, host_sees, guest_sees] = base.ms();
        assert!(
            host.abs() < 1e-9,
            "the server steps its player's input the frame it comes: {host}"
        );
        // A round trip and the playout delay; a one-way trip (the input waits for the server's next step too);
        // a one-way trip and the playout delay.
        assert!(
            guest > 200.0 && host_sees > 50.0 && host_sees < 75.0 && guest_sees > 150.0,
            "{base:?}"
        );
    }

    #[test]
    fn the_remote_view_neither_stops_nor_jumps_and_compression_cuts_bandwidth() {
        let r = run_snapshots(&config(true), world("cubes900.toml")).unwrap();
        assert_eq!(r.cubes, 900);
        assert!(r.drawn_frames > 450, "{r:?}");
        assert_eq!(r.hitch_frames, 0, "{r:?}");
        assert!(r.correction_max_m <= 0.01, "{r:?}");
        assert_eq!(r.desyncs, 0);
        assert!(r.bit_identical_at_end);
        assert!(
            r.delta_snapshots > r.snapshots_sent / 2,
            "most snapshots are deltas: {r:?}"
        );
        assert!(r.coloured_max > 0, "the bots played");
        // Render time: a one-way latency and the playout delay behind the server, within a frame or two.
        assert!(
            (r.remote_delay_ms - 50.0 - r.playout_delay_ms_mean).abs() < 25.0,
            "{r:?}"
        );
        let raw = run_snapshots(&config(false), world("cubes900.toml")).unwrap();
        assert!(
            r.kbps_mean_up * 10.0 < raw.kbps_mean_up,
            "{} kbps compressed, {} raw",
            r.kbps_mean_up,
            raw.kbps_mean_up
        );
        assert_eq!(raw.desyncs, 0);
    }

    /// 250 ms round trip ±15 ms, 5 % loss: the delay covers the runs of losses that loss makes likely, so the client
    /// never draws past what has arrived (seed 3 is the run where covering three lost snapshots was not enough).
    #[test]
    fn at_5_pct_loss_the_client_never_extrapolates_or_corrects() {
        let config = |follow_loss| SnapshotConfig {
            run: RunSettings {
                seed: 3,
                ..RunSettings::link(120.0, 125.0, 15.0, 5.0)
            },
            delay: PlayoutDelay {
                floor_s: 0.1,
                adaptive: true,
                follow_loss,
            },
            ..SnapshotConfig::default()
        };
        let r = run_snapshots(&config(true), world("cubes900.toml")).unwrap();
        assert_eq!(
            (r.extrapolated_frames, r.corrections, r.hitch_frames),
            (0, 0, 0),
            "{r:?}"
        );
        // The control: three lost in a row covered, whatever the loss.
        let fixed = run_snapshots(&config(false), world("cubes900.toml")).unwrap();
        assert!(fixed.extrapolated_frames > 0 && fixed.corrections > 0, "{fixed:?}");
        assert!(fixed.correction_max_m > 0.01, "{fixed:?}");
        assert!(r.playout_delay_ms > fixed.playout_delay_ms, "{r:?}\n{fixed:?}");
    }

    /// The controls of `desyncs` and `bit_identical_at_end`: a resting cube moved by one unit in the client's
    /// newest snapshot, the baseline of the deltas to come, makes them come out other than the server sent; and of
    /// `hitch_frames`: half a second without snapshots (the server's sends withheld) leaves the client nothing new
    /// to draw once its extrapolation limit passes.
    #[test]
    fn a_damaged_baseline_desyncs_and_too_short_a_playout_delay_hitches() {
        let mut run = SnapshotRun::new(&config(true), world("cubes900.toml")).unwrap();
        while run.client.newest().is_none() {
            run.frame().unwrap();
        }
        run.client.damage_newest(0);
        let r = run.run().unwrap();
        assert!(r.desyncs >= 1 && !r.bit_identical_at_end, "{r:?}");
        let mut run = SnapshotRun::new(&config(true), world("cubes900.toml")).unwrap();
        for _ in 0..180 {
            run.frame().unwrap();
        }
        run.withhold_snapshots(45);
        let r = run.run().unwrap();
        assert!(r.hitch_frames > 0, "{r:?}");
    }

    #[test]
    fn bad_rates_and_delays_are_errors() {
        for bad in [
            SnapshotConfig {
                snapshot_hz: 9,
                ..SnapshotConfig::default()
            },
            SnapshotConfig {
                snapshot_hz: 61,
                ..SnapshotConfig::default()
            },
            SnapshotConfig {
                delay: PlayoutDelay {
                    floor_s: f64::NAN,
                    adaptive: true,
                    follow_loss: true,
                },
                ..SnapshotConfig::default()
            },
            // The link settings every model checks alike.
            SnapshotConfig {
                run: RunSettings {
                    link: LinkConfig {
                        loss_pct: 101.0,
                        ..SnapshotConfig::default().run.link
                    },
                    ..SnapshotConfig::default().run
                },
                ..SnapshotConfig::default()
            },
            SnapshotConfig {
                run: RunSettings {
                    seconds: 0.0,
                    ..SnapshotConfig::default().run
                },
                ..SnapshotConfig::default()
            },
        ] {
            assert!(bad.validate().is_err());
        }
    }
}
