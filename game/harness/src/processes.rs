//! `tumble session --processes`: one OS process per player, each a [`Peer`] on its own UDP socket on 127.0.0.1
//! with the link simulator in front of its sends, on the real clock at 90 steps a second. The parent starts the
//! host (`tumble session-peer`, which prints the port it bound), then the guests; kills one if asked; and at the
//! end reads one JSON line from each: its final quantized states and stamps, what it counted, and its holder
//! changes stamped with the wall clock, from which conflicts are timed across processes.

use std::cmp::Ordering;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tumble_game::run_settings::LinkArgs;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use glam::Vec3;
use serde_json::{json, Value};
use tumble_engine::physics::BodyId;
use tumble_net::join_code::{self, JoinTarget};
use tumble_net::{Endpoint, EndpointConfig, LinkSim, UdpTransport};

use crate::cube_history::{state_json, CubeHistory, CubeSample, Phase};
use crate::drawn_trace::TraceWriter;
use crate::loopback::percentile;
use crate::session::{ConnectionKbps, SessionConfig, SessionReport, SETTLE_S};
use crate::session_cli::{make_driver, world_maker};
use tumble_game::authority::rules::{commit_outcome, compare_claims, RejectCounts, RejectReason};
use tumble_game::session::peer::{HostGone, Peer, PeerConfig, JOIN_GRACE_STEPS, PACKETS_PER_S};
use tumble_game::smoothing::PopMeter;
use tumble_game::sync::codec::quantize::{quantize_state, QuantizedState};
use tumble_game::sync::codec::stamp::AuthorityStamp;

/// Longest a process waits on its socket between looks (s).
const MAX_WAIT_S: f64 = 0.001;
/// Time the parent gives the processes to start before the common clock begins (ms).
const START_MARGIN_MS: f64 = 1500.0;

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Flags of the hidden `tumble session-peer` (one player's process; the parent passes them).
#[derive(Args, Debug, Clone)]
pub struct PeerProcessArgs {
    /// Host: bind 127.0.0.1:0 and print {"port": N, "join_code": C}; guest: join with this code
    #[arg(long, value_parser = tumble_game::desktop::play_cli::parse_join_target)]
    pub join: Option<JoinTarget>,
    #[arg(long)]
    pub seat: u8,
    #[arg(long)]
    pub driver: String,
    #[arg(long)]
    pub scene: PathBuf,
    /// Wall-clock times (ms since the Unix epoch): the session's start, when the bots stop, the end
    #[arg(long)]
    pub start_unix_ms: f64,
    #[arg(long)]
    pub settle_unix_ms: f64,
    #[arg(long)]
    pub end_unix_ms: f64,
    /// The link: `--link` and the flags that change its parts
    #[command(flatten)]
    pub link: LinkArgs,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub kbps_budget: u32,
    /// A packet every this many physics steps on each connection
    #[arg(long, default_value_t = 1)]
    pub send_every_steps: u32,
    #[arg(long)]
    pub headless: bool,
    /// This guest forges claims instead of sending its state
    #[arg(long)]
    pub hostile: bool,
    /// Wall-clock time (ms since the Unix epoch) at which this player quits cleanly: its goodbye sent, it prints its
    /// report and exits
    #[arg(long)]
    pub quit_unix_ms: Option<f64>,
    /// Write what this peer drew, step by step, to this file (see `harness::drawn_trace`)
    #[arg(long)]
    pub trace: Option<PathBuf>,
}

/// The exit code of a guest process whose host went away (it prints its report, with `host_gone`, first).
pub const EXIT_HOST_GONE: i32 = 3;
/// How long a process that said goodbye keeps its socket going (s): the link simulator in front of it holds
/// datagrams for the latency and jitter, and the goodbyes must leave before the process does.
const GOODBYE_FLUSH_S: f64 = 1.0;

/// One player's process: plays until the end time and prints its final JSON line.
pub fn run_peer_process(args: &PeerProcessArgs) -> Result<()> {
    let world = world_maker(&args.scene)?()?;
    let scene_name = tumble_engine::scene::load_scene(&args.scene)?.name;
    let link = args.link.config();
    let seed = args.seed.wrapping_add(u64::from(args.seat) * 7919);
    let mut socket = UdpTransport::bind("127.0.0.1:0".parse()?)?;
    let mut sim = LinkSim::new(link, seed ^ 0x5eed);
    let config = PeerConfig {
        send_every_steps: args.send_every_steps.clamp(1, tumble_game::STEP_HZ),
        ..PeerConfig::with_budget(args.kbps_budget)
    };
    let clock = Instant::now();
    let mut peer = match args.join {
        None => {
            let endpoint = Endpoint::host(EndpointConfig::default(), 0.0)?;
            let code = join_code::encode(socket.local_addr(), &endpoint.join_secret(), &endpoint.key_hash());
            println!("{}", json!({ "port": socket.local_addr().port(), "join_code": code }));
            let mut host = Peer::host(world, endpoint, config, !args.headless)?;
            host.set_scene_name(&scene_name);
            host
        }
        Some(host) => {
            let endpoint_config = EndpointConfig {
                join_secret: Some(host.secret),
                host_key_hash: host.host_key,
                ..EndpointConfig::default()
            };
            let mut guest = Peer::guest(world, Endpoint::join(endpoint_config, host.addr, 0.0)?, config)?;
            guest.set_scene_name(&scene_name);
            guest
        }
    };
    if args.hostile {
        peer.make_hostile();
    }
    peer.measure_demand();
    let mut driver = make_driver(&args.driver, args.seat, args.seed.wrapping_add(u64::from(args.seat)))?;
    let mut watch = Watch::new(peer.world.body_count());
    let start_ms = args.start_unix_ms.max(unix_ms());
    let step_ms = 1000.0 / PACKETS_PER_S as f64;
    // Steps on the session's common clock: a guest that joins late starts counting later on the same grid.
    let grid_offset = ((start_ms - args.start_unix_ms) / step_ms).round().max(0.0) as u64;
    let mut trace = match &args.trace {
        Some(path) => Some(TraceWriter::create(path, peer.world.body_count())?),
        None => None,
    };
    let mut step = 0u64;
    let mut quit_at_ms = None;
    loop {
        let due_ms = start_ms + step as f64 * step_ms;
        if due_ms >= args.end_unix_ms {
            break;
        }
        if args.quit_unix_ms.is_some_and(|t| due_ms >= t) {
            quit_at_ms = Some(unix_ms());
            peer.leave(clock.elapsed().as_secs_f64());
            let flush_until = clock.elapsed().as_secs_f64() + GOODBYE_FLUSH_S;
            while clock.elapsed().as_secs_f64() < flush_until {
                let now_s = clock.elapsed().as_secs_f64();
                socket.flush(now_s, peer.endpoint_mut(), Some(&mut sim));
                socket.wait(Duration::from_secs_f64(MAX_WAIT_S))?;
            }
            break;
        }
        if peer.host_gone().is_some() {
            if let Some(t) = trace.take() {
                t.finish()?;
            }
        }
        if let Some((how, _)) = peer.host_gone() {
            // A headless guest with no host: its report says why, and it exits non-zero.
            let mut report = watch.final_json(&peer, step)?;
            report["host_gone"] = json!({ "why": how.name(), "timed_out": how == HostGone::TimedOut });
            report["host_gone_at_unix_ms"] = json!(watch.host_gone_ms);
            println!("{report}");
            std::process::exit(EXIT_HOST_GONE);
        }
        // Until the step is due, move datagrams.
        loop {
            let now_ms = unix_ms();
            let now_s = clock.elapsed().as_secs_f64();
            socket.receive_into(now_s, peer.endpoint_mut())?;
            peer.endpoint_mut().update(now_s);
            socket.flush(now_s, peer.endpoint_mut(), Some(&mut sim));
            peer.receive(now_s)?;
            if peer.host_gone().is_some() && watch.host_gone_ms.is_none() {
                watch.host_gone_ms = Some(unix_ms());
            }
            if now_ms >= due_ms || peer.host_gone().is_some() {
                break;
            }
            socket.wait(Duration::from_secs_f64(((due_ms - now_ms) / 1000.0).min(MAX_WAIT_S)))?;
        }
        let late_ms = unix_ms() - due_ms;
        if late_ms > LATE_STEP_LOG_MS {
            // The process was not scheduled in time (a loaded machine): the steps run back to back to catch up,
            // and what it sends bunches up. Worth knowing when a figure of the run looks wrong.
            tracing::debug!(player = peer.player(), step, late_ms, "a step ran late");
        }
        let active = due_ms < args.settle_unix_ms;
        let input = driver.input(step, &peer, active);
        peer.play(&input)?;
        peer.quantize()?;
        let now_s = clock.elapsed().as_secs_f64();
        // The moment the step's remote avatars are played out at (`simulate` samples the buffers on the clock `send`
        // is given last), on the session's common clock: the avatar delay is measured from it.
        let played_at_s = (unix_ms() - args.start_unix_ms) / 1000.0;
        peer.send(now_s)?;
        socket.flush(now_s, peer.endpoint_mut(), Some(&mut sim));
        watch.before_physics(&peer, unix_ms())?;
        peer.simulate()?;
        watch.after_step(&peer, unix_ms())?;
        if let Some(t) = trace.as_mut() {
            t.record(&peer, step + grid_offset, played_at_s)?;
        }
        step += 1;
    }
    if let Some(t) = trace.take() {
        t.finish()?;
    }
    let mut report = watch.final_json(&peer, step)?;
    report["quit_at_unix_ms"] = json!(quit_at_ms);
    println!("{report}");
    Ok(())
}

/// A step that starts this much after it was due (ms) is logged (debug).
const LATE_STEP_LOG_MS: f64 = 50.0;
/// Differing final states the report carries as evidence, at most.
const MAX_EVIDENCE: usize = 8;

/// What one process watches as it goes.
struct Watch {
    holders: Vec<u8>,
    /// (wall ms, cube, holder)
    holder_events: Vec<(f64, u32, u8)>,
    /// Per player 1..=4: the last wall time any cube was under its authority or in its hand here.
    last_seen_player_ms: [f64; 5],
    previous: Vec<Option<QuantizedState>>,
    last_change_ms: f64,
    meter: PopMeter,
    /// Per-second rates of every connection and direction (kbps), and the byte counts at the last second.
    second_rates: Vec<f64>,
    bytes_at_second: Vec<(u64, u64)>,
    /// Per cube: the quantized pose this peer, its authority, has it at rest in (last step; `None` when it is not
    /// the authority or has it awake).
    resting_here: Vec<Option<PoseKey>>,
    /// (wall ms, cube, at rest, stamp as [authority, authority seq, ownership seq], pose): when that changed. The
    /// merge knows from them when, and in which pose, the authority had each cube at rest.
    rest_events: Vec<RestEvent>,
    /// Per cube: its simulated position last step, whether it was at rest here, and the resting state from another
    /// authority it was held to (see [`Peer::applied_rest`]).
    last_position: Vec<Option<(Vec3, bool, Option<PoseKey>)>>,
    /// (wall ms, cube, m, stamp, pose): a cube not under this peer's authority, at rest here the step before and
    /// held to the same applied resting pose before and after the step, moved (not counted in a guest's first
    /// [`JOIN_GRACE_STEPS`] after its welcome: arrival).
    rest_moves: Vec<(f64, u32, f32, [u16; 3], PoseKey)>,
    /// Every cube's last changes here, sampled before and after each physics step.
    history: CubeHistory,
    /// The largest rest moves, with what led up to them and followed.
    worst_moves: Vec<WorstMove>,
    /// The largest pop at a change of authority over [`POP_EVIDENCE_M`], the same way (`index` unused), and what the
    /// peer knew of the cube then.
    worst_pop: Option<(WorstMove, Value)>,
    /// Guest: the wall time it learnt its host was gone.
    host_gone_ms: Option<f64>,
}

/// Rest moves kept with their history, per peer.
const WORST_MOVES_KEPT: usize = 4;
/// Steps after a rest move at which its history is taken: whether an authority change followed is part of it.
const HISTORY_AFTER_MOVE_STEPS: u64 = 3;

/// One of a peer's largest rest moves and the cubes that touched the cube then; `evidence` (their histories) is
/// filled [`HISTORY_AFTER_MOVE_STEPS`] later.
struct WorstMove {
    moved_m: f32,
    /// Index into `Watch::rest_moves` (`None` for a pop).
    index: Option<usize>,
    cube: usize,
    /// (cube, under this peer's authority) at the move.
    touching: Vec<(u32, bool)>,
    due_step: u64,
    evidence: Option<Value>,
}

/// Pops at a change of authority larger than this go to the failure evidence (m): `handover_pop_m_max`'s bound.
const POP_EVIDENCE_M: f32 = 0.01;

/// (wall ms, cube, at rest, stamp, pose): see `Watch::rest_events`.
type RestEvent = (f64, u32, bool, [u16; 3], Option<PoseKey>);

/// (from ms, to ms, peer, stamp, pose): a stretch over which a peer, the cube's authority, had it at rest.
type RestRun<'a> = (f64, f64, usize, AuthorityStamp, &'a Value);

/// A quantized pose as the merge compares them: position units, then the rotation's dropped index and other three.
type PoseKey = [i32; 7];

fn pose_key(q: &QuantizedState) -> PoseKey {
    let [x, y, z] = q.position;
    let [a, b, c] = q.rotation.smallest_three.map(i32::from);
    [x, y, z, i32::from(q.rotation.largest), a, b, c]
}

impl WorstMove {
    /// A move or pop of `size_m` of cube `c` this step, with the cubes touching it now; its evidence comes later.
    fn now(peer: &Peer, c: usize, size_m: f32, index: Option<usize>) -> Self {
        let touching = peer
            .world
            .touching_bodies(BodyId(c as u32))
            .map(|n| (n.0, peer.table.is_local_authority(n.0)))
            .collect();
        WorstMove {
            moved_m: size_m,
            index,
            cube: c,
            touching,
            due_step: peer.step_count() + HISTORY_AFTER_MOVE_STEPS,
            evidence: None,
        }
    }
}

/// A kept move's or pop's evidence: the cube's history and those of the cubes that touched it then.
fn evidence_of(history: &CubeHistory, w: &WorstMove) -> Value {
    let touching: Vec<Value> = w
        .touching
        .iter()
        .map(|&(n, local)| json!({ "cube": n, "local_at_move": local, "history": history.to_json(n as usize) }))
        .collect();
    json!({ "history": history.to_json(w.cube), "touching": touching })
}

impl Watch {
    fn new(cubes: usize) -> Self {
        Self {
            holders: vec![0; cubes],
            holder_events: Vec::new(),
            last_seen_player_ms: [0.0; 5],
            previous: vec![None; cubes],
            last_change_ms: 0.0,
            meter: PopMeter::new(cubes),
            second_rates: Vec::new(),
            bytes_at_second: Vec::new(),
            resting_here: vec![None; cubes],
            rest_events: Vec::new(),
            last_position: vec![None; cubes],
            rest_moves: Vec::new(),
            history: CubeHistory::new(cubes),
            worst_moves: Vec::new(),
            worst_pop: None,
            host_gone_ms: None,
        }
    }

    /// One cube as this peer has it now, for the history.
    fn sample(peer: &Peer, c: usize) -> Result<CubeSample> {
        let id = BodyId(c as u32);
        let stamp = peer.table.stamp(c as u32);
        Ok(CubeSample {
            state: quantize_state(&peer.world.state(id)?),
            stamp: stamp_array(&stamp),
            holder: peer.table.holder(c as u32),
            kinematic: peer.world.kind(id)? == tumble_engine::physics::BodyKind::Kinematic,
            pinned: peer.applied_rest()[c],
            drawn_mm: (peer.drawn_pose(id)?.position * 1000.0).round().as_ivec3().to_array(),
        })
    }

    /// Samples every cube's history as the physics step is about to start.
    fn before_physics(&mut self, peer: &Peer, now_ms: f64) -> Result<()> {
        for c in 0..self.holders.len() {
            if !peer.world.is_removed(BodyId(c as u32))? {
                let s = Self::sample(peer, c)?;
                self.history
                    .record(c, now_ms, peer.step_count(), Phase::BeforePhysics, s);
            }
        }
        Ok(())
    }

    /// Keeps the rest move just pushed if it is among this peer's largest, with the cubes touching it; their
    /// histories are taken a few steps later ([`Self::complete_worst_moves`]).
    fn keep_worst_move(&mut self, peer: &Peer, c: usize, moved_m: f32) {
        let smallest = self
            .worst_moves
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.moved_m.total_cmp(&b.1.moved_m))
            .map(|(k, w)| (k, w.moved_m));
        let slot = match smallest {
            _ if self.worst_moves.len() < WORST_MOVES_KEPT => None,
            Some((k, m)) if m < moved_m => Some(k),
            _ => return,
        };
        let entry = WorstMove::now(peer, c, moved_m, Some(self.rest_moves.len() - 1));
        match slot {
            None => self.worst_moves.push(entry),
            Some(k) => self.worst_moves[k] = entry,
        }
    }

    /// Takes the histories of the kept rest moves and pop that are due (all of them when `all`).
    fn complete_worst_moves(&mut self, step: u64, all: bool) {
        let pop = self.worst_pop.as_mut().map(|(w, _)| w);
        for w in self.worst_moves.iter_mut().chain(pop) {
            if w.evidence.is_none() && (all || w.due_step <= step) {
                w.evidence = Some(evidence_of(&self.history, w));
            }
        }
    }

    /// Keeps a pop at a change of authority if it is the largest over [`POP_EVIDENCE_M`] so far.
    fn keep_worst_pop(&mut self, peer: &Peer, c: usize, pop_m: f32, info: Value) {
        if pop_m <= POP_EVIDENCE_M || self.worst_pop.as_ref().is_some_and(|(w, _)| w.moved_m >= pop_m) {
            return;
        }
        let kept = WorstMove::now(peer, c, pop_m, None);
        self.worst_pop = Some((kept, info));
    }

    fn after_step(&mut self, peer: &Peer, now_ms: f64) -> Result<()> {
        if peer.step_count().is_multiple_of(PACKETS_PER_S as u64) {
            let now: Vec<(u64, u64)> = peer.wire_bytes().map(|(_, s, r)| (s, r)).collect();
            for (b, a) in self.bytes_at_second.iter().zip(&now) {
                self.second_rates.push(a.0.saturating_sub(b.0) as f64 * 8.0 / 1000.0);
                self.second_rates.push(a.1.saturating_sub(b.1) as f64 * 8.0 / 1000.0);
            }
            self.bytes_at_second = now;
        }
        for c in 0..self.holders.len() {
            let id = BodyId(c as u32);
            let h = peer.table.holder(c as u32);
            if h != self.holders[c] {
                self.holders[c] = h;
                self.holder_events.push((now_ms, c as u32, h));
            }
            let a = usize::from(peer.table.stamp(c as u32).authority.min(4));
            self.last_seen_player_ms[a] = now_ms;
            self.last_seen_player_ms[usize::from(h.min(4))] = now_ms;
            if peer.world.is_removed(id)? {
                continue;
            }
            let s = peer.world.state(id)?;
            let q = quantize_state(&s);
            let local = peer.table.is_local_authority(c as u32);
            let resting = (local && s.at_rest).then(|| pose_key(&q));
            let stamp = peer.table.stamp(c as u32);
            let stamp = stamp_array(&stamp);
            if resting != self.resting_here[c] {
                self.resting_here[c] = resting;
                self.rest_events
                    .push((now_ms, c as u32, resting.is_some(), stamp, resting));
            }
            let sample = Self::sample(peer, c)?;
            self.history
                .record(c, now_ms, peer.step_count(), Phase::AfterPhysics, sample);
            let pinned = peer.applied_rest()[c].as_ref().map(pose_key);
            if let Some((p, true, Some(before))) = self.last_position[c] {
                let moved = (s.position - p).length();
                // A guest that just joined takes every cube from absolute states, a few a packet: a cube set to its
                // resting state before the one under it arrives can move when that one is set. Arrival, as for the
                // pop meter, not jitter.
                let arrived = peer.steps_since_welcome() > JOIN_GRACE_STEPS;
                if !local && moved > 0.0 && pinned == Some(before) && arrived {
                    self.rest_moves.push((now_ms, c as u32, moved, stamp, before));
                    self.keep_worst_move(peer, c, moved);
                    if moved > 1e-3 {
                        tracing::debug!(
                            player = peer.player(),
                            step = peer.step_count(),
                            cube = c,
                            moved_m = moved,
                            stamp = ?peer.table.stamp(c as u32),
                            "a cube resting here moved"
                        );
                    }
                }
            }
            self.last_position[c] = Some((s.position, s.at_rest, pinned));
            if let Some(p) = self.previous[c] {
                if p != q {
                    self.last_change_ms = now_ms;
                }
            }
            if peer.authority_changed_step[c] == peer.step_count() && peer.steps_since_welcome() > JOIN_GRACE_STEPS {
                self.meter.mark_handover(c);
            }
            let in_handover = self.meter.handover_left(c) > 0;
            let pop = self
                .meter
                .observe(c, peer.drawn_pose(id)?.position, peer.explained_step(id)?);
            if let Some(pop) = pop.filter(|&p| in_handover && p > 0.01) {
                tracing::debug!(
                    player = peer.player(),
                    step = peer.step_count(),
                    cube = c,
                    pop_m = pop,
                    stamp = ?peer.table.stamp(c as u32),
                    holder = peer.table.holder(c as u32),
                    in_remote_hand = peer.remote_avatars().hand_drawn(c).is_some(),
                    speed = s.linear_velocity.length(),
                    "a pop at a change of authority"
                );
                let info = json!({
                    "pop_m": pop,
                    "ms": now_ms,
                    "step": peer.step_count(),
                    "cube": c,
                    "stamp": stamp,
                    "holder": peer.table.holder(c as u32),
                    "in_remote_hand": peer.remote_avatars().hand_drawn(c).is_some(),
                    "speed_m_s": s.linear_velocity.length(),
                });
                self.keep_worst_pop(peer, c, pop, info);
            }
            self.previous[c] = Some(q);
        }
        self.complete_worst_moves(peer.step_count(), false);
        Ok(())
    }

    fn final_json(&mut self, peer: &Peer, steps: u64) -> Result<Value> {
        self.complete_worst_moves(steps, true);
        let mut states = Vec::new();
        for c in 0..peer.world.body_count() as u32 {
            let id = BodyId(c);
            if peer.world.is_removed(id)? {
                states.push(Value::Null);
                continue;
            }
            states.push(state_json(&quantize_state(&peer.world.state(id)?)));
        }
        let stamps: Vec<Value> = peer
            .table
            .stamps()
            .iter()
            .map(|s| json!([s.authority, s.authority_seq, s.ownership_seq]))
            .collect();
        let connections: Vec<Value> = peer
            .wire_bytes()
            .zip(peer.sent_breakdown())
            .map(|((player, sent, received), b)| {
                json!({
                    "player": player,
                    "sent": sent,
                    "received": received,
                    "avatars_sent": b.avatars,
                    "cubes_sent": b.cubes,
                    "header_sent": b.header,
                    "rest_sent": b.rest,
                })
            })
            .collect();
        let demand: Vec<u64> = peer.demand_wire_bytes().map(|(_, d)| d).collect();
        let rest_claims: Vec<Value> = peer
            .rest_claims()
            .iter()
            .enumerate()
            .filter_map(|(c, claim)| claim.as_ref().map(|(s, q)| claim_json(c, s, q)))
            .collect();
        // Host: the last resting state taken from a guest per cube, written as a claim is.
        let taken_rest: Vec<Value> = peer
            .taken_rest()
            .iter()
            .enumerate()
            .filter_map(|(c, taken)| taken.as_ref().map(|q| claim_json(c, &q.stamp, q)))
            .collect();
        let rejected: Vec<u64> = peer.stats.rejected.0.to_vec();
        Ok(json!({
            "player": peer.player(),
            "host": peer.is_host(),
            "steps": steps,
            "states": states,
            "stamps": stamps,
            "connections": connections,
            "demand": demand,
            "grabs": peer.stats.grabs,
            "throws": peer.stats.throws,
            "corrections": peer.stats.corrections,
            "correction_max_m": peer.stats.correction_max_m,
            "authority_changes": peer.stats.authority_changes,
            "reclaims": peer.stats.reclaims,
            "rest_claims": rest_claims,
            "taken_rest": taken_rest,
            "rejected": rejected,
            "accepted_claims": peer.stats.accepted_claims,
            "holder_events": self.holder_events,
            "rest_events": self.rest_events,
            "rest_moves": self.rest_moves,
            "worst_moves": self.worst_moves.iter().map(|w| json!([w.index, w.evidence])).collect::<Vec<_>>(),
            "worst_pop": self.worst_pop.as_ref().map(|(w, info)| json!({ "info": info, "evidence": w.evidence })),
            "histories": (0..self.holders.len()).map(|c| self.history.to_json(c)).collect::<Vec<_>>(),
            "last_seen_player_ms": self.last_seen_player_ms,
            "last_change_ms": self.last_change_ms,
            "pop_max": self.meter.handover().max_m(),
            "pop_p99": self.meter.handover().quantile_m(0.99),
            "glide_max": self.meter.handover_unexplained().max_m(),
            "corrections_over_1cm": peer.stats.corrections_over_1cm,
            "corrections_over_10cm": peer.stats.corrections_over_10cm,
            "second_rates": self.second_rates,
            "seconds": steps as f64 / PACKETS_PER_S as f64,
        }))
    }
}

/// A child process and what it printed.
struct PeerChild {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    seat: usize,
}

fn spawn(exe: &Path, args: &[String], seat: usize) -> Result<PeerChild> {
    let mut child = Command::new(exe)
        .arg("session-peer")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("no stdout from a peer process"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok(PeerChild { child, lines: rx, seat })
}

/// Runs the session as separate processes and merges what they report.
pub fn run_processes(config: &SessionConfig, scene: &Path, seats: &[String]) -> Result<SessionReport> {
    let exe = std::env::current_exe()?;
    let start_ms = unix_ms() + START_MARGIN_MS;
    let end_ms = start_ms + config.run.seconds * 1000.0;
    let settle_ms = end_ms - SETTLE_S * 1000.0;
    // Each process writes what it drew; the parent measures it against the truth once all have ended.
    let trace_dir = std::env::temp_dir().join(format!("tumble-session-{}", std::process::id()));
    std::fs::create_dir_all(&trace_dir).with_context(|| format!("{}", trace_dir.display()))?;
    let trace_of = |seat: usize| trace_dir.join(format!("seat-{seat}.trace"));
    let common = |seat: usize, join: Option<&str>| -> Vec<String> {
        let mut a = vec![
            format!("--seat={seat}"),
            format!("--driver={}", seats[seat - 1]),
            format!("--scene={}", scene.display()),
            format!("--start-unix-ms={start_ms}"),
            format!("--settle-unix-ms={settle_ms}"),
            format!("--end-unix-ms={end_ms}"),
            format!("--latency-ms={}", config.run.link.latency_ms),
            format!("--jitter-ms={}", config.run.link.jitter_ms),
            format!("--loss-pct={}", config.run.link.loss_pct),
            format!("--dup-pct={}", config.run.link.duplicate_pct),
            format!("--seed={}", config.run.seed),
            format!("--kbps-budget={}", config.kbps_budget),
            format!("--send-every-steps={}", config.send_every_steps),
            format!("--trace={}", trace_of(seat).display()),
        ];
        if let Some(j) = join {
            a.push(format!("--join={j}"));
        }
        if seat == 1 && config.headless_host {
            a.push("--headless".into());
        }
        if let Some((quitter, t)) = config.quit_player.filter(|(q, _)| usize::from(*q) == seat) {
            let _ = quitter;
            a.push(format!("--quit-unix-ms={}", start_ms + t * 1000.0));
        }
        if config.hostile_players.contains(&(seat as u8)) {
            a.push("--hostile".into());
        }
        a
    };
    let host = spawn(&exe, &common(1, None), 1)?;
    let port_line = host
        .lines
        .recv_timeout(Duration::from_secs(30))
        .context("the host process did not say its port")?;
    // The guests join as players do, with the code the host printed.
    let code = serde_json::from_str::<Value>(&port_line)?["join_code"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("the host process said {port_line}"))?;
    let mut children = vec![host];
    let late = config.join_at_s.map(|t| (config.players, start_ms + t * 1000.0));
    for seat in 2..=config.players {
        if late.is_some_and(|(s, _)| s == seat) {
            continue;
        }
        children.push(spawn(&exe, &common(seat, Some(&code)), seat)?);
    }
    let kill = config.kill_player.map(|(p, t)| (usize::from(p), start_ms + t * 1000.0));
    let mut killed_at_ms = None;
    let mut late_pending = late;
    while unix_ms() < end_ms {
        if let Some((seat, at)) = late_pending {
            if unix_ms() >= at {
                children.push(spawn(&exe, &common(seat, Some(&code)), seat)?);
                late_pending = None;
            }
        }
        if let (Some((seat, at)), None) = (kill, killed_at_ms) {
            if unix_ms() >= at {
                if let Some(c) = children.iter_mut().find(|c| c.seat == seat) {
                    c.child.kill()?;
                    killed_at_ms = Some(unix_ms());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let quit = config.quit_player.map(|(p, t)| (usize::from(p), start_ms + t * 1000.0));
    let host_left = [kill, quit].iter().flatten().any(|(seat, _)| *seat == 1);
    let mut finals = Vec::new();
    let mut quitter = None;
    for mut c in children {
        let status = c.child.wait()?;
        // Every line the process printed: the reader thread may still be forwarding them when the process has
        // exited (a loaded machine), so wait for it to reach the end of the pipe rather than take what is there.
        let last = c.lines.iter().last();
        if Some(c.seat) == kill.map(|k| k.0) {
            continue;
        }
        let host_gone = host_left && status.code() == Some(EXIT_HOST_GONE);
        if !status.success() && !host_gone {
            bail!("the process of player {} failed ({status})", c.seat);
        }
        let line = last.ok_or_else(|| anyhow!("player {} printed no report", c.seat))?;
        let report = serde_json::from_str::<Value>(&line)?;
        if Some(c.seat) == quit.map(|q| q.0) {
            quitter = Some(report);
        } else {
            finals.push(report);
        }
    }
    if host_left {
        std::fs::remove_dir_all(&trace_dir).ok();
        // When the host quit: the moment it said goodbye, by its own report.
        let quit_ms = quitter.as_ref().and_then(|q| q["quit_at_unix_ms"].as_f64());
        return host_gone_report(config, &finals, killed_at_ms.or(quit_ms), kill.is_some());
    }
    let traces: Vec<PathBuf> = (1..=config.players).map(trace_of).collect();
    let measured = crate::drawn_trace::measure(&traces, config.run.seconds, crate::session::news_steps(config));
    std::fs::remove_dir_all(&trace_dir).ok();
    let meter = measured?;
    let corrections = finals.iter().fold((0, 0), |(a, b), f| {
        (
            a + f["corrections_over_1cm"].as_u64().unwrap_or(0),
            b + f["corrections_over_10cm"].as_u64().unwrap_or(0),
        )
    });
    let mut r = match quitter.as_ref().and_then(|q| q["quit_at_unix_ms"].as_f64()) {
        Some(quit_ms) => {
            let mut r = merge(config, &finals, None, settle_ms)?;
            let player = quitter.as_ref().and_then(|q| q["player"].as_u64()).unwrap_or(0) as usize;
            let last = finals
                .iter()
                .map(|f| f["last_seen_player_ms"][player].as_f64().unwrap_or(0.0))
                .fold(0.0, f64::max);
            r.seconds_to_release_quit = Some(((last - quit_ms) / 1000.0).max(0.0));
            r
        }
        None => merge(config, &finals, killed_at_ms, settle_ms)?,
    };
    r.players = config.players;
    r.drawn = Some(meter.to_json(corrections, config.run.seconds));
    r.failure_evidence.extend(meter.evidence());
    r.handover_pop_m_max = f64::from(meter.jump.max_m());
    r.handover_pop_m_p99 = f64::from(meter.jump.quantile_m(0.99));
    Ok(r)
}

/// The report of a run whose host left (`--kill-player 1` or `--quit-player 1`): every guest exited with
/// [`EXIT_HOST_GONE`] and a report saying when it knew. What compares a world with the host's has no host to
/// compare with and is left out (`null` in the JSON).
fn host_gone_report(
    config: &SessionConfig,
    finals: &[Value],
    left_ms: Option<f64>,
    killed: bool,
) -> Result<SessionReport> {
    let left_ms = left_ms.ok_or_else(|| anyhow!("the host was to leave, and did not"))?;
    let noticed = finals
        .iter()
        .map(|f| {
            f["host_gone_at_unix_ms"]
                .as_f64()
                .map(|t| ((t - left_ms) / 1000.0).max(0.0))
        })
        .collect();
    tracing::info!(killed, "the host left; every guest reported");
    Ok(SessionReport {
        run: config.run.clone(),
        players: config.players,
        kbps_budget: config.kbps_budget,
        packets_per_s: config.peer_config().packets_per_s(),
        peers_at_end: 0,
        host_departed: true,
        seconds_to_notice_host_gone: Some(noticed),
        ..SessionReport::default()
    })
}

fn merge(config: &SessionConfig, finals: &[Value], killed_at_ms: Option<f64>, settle_ms: f64) -> Result<SessionReport> {
    let host = finals
        .iter()
        .find(|f| f["host"] == true)
        .ok_or_else(|| anyhow!("no report from the host"))?;
    let mut r = SessionReport {
        run: config.run.clone(),
        players: config.players,
        kbps_budget: config.kbps_budget,
        packets_per_s: config.peer_config().packets_per_s(),
        peers_at_end: finals.len(),
        ..SessionReport::default()
    };
    let num = |v: &Value| v.as_f64().unwrap_or(0.0);
    let mut rejected = RejectCounts::default();
    let mut last_change = 0.0f64;
    let mut rates = Vec::new();
    for f in finals {
        rates.extend(f["second_rates"].as_array().into_iter().flatten().map(num));
        r.grabs += f["grabs"].as_u64().unwrap_or(0);
        r.throws += f["throws"].as_u64().unwrap_or(0);
        r.corrections += f["corrections"].as_u64().unwrap_or(0);
        r.correction_max_m = r.correction_max_m.max(num(&f["correction_max_m"]));
        r.authority_changes += f["authority_changes"].as_u64().unwrap_or(0);
        r.lost_commits += lost_commits(f, host, &mut r.failure_evidence);
        for (k, reason) in RejectReason::ALL.iter().enumerate() {
            rejected.0[*reason as usize] += f["rejected"][k].as_u64().unwrap_or(0);
        }
        r.handover_pop_m_max = r.handover_pop_m_max.max(num(&f["pop_max"]));
        if !f["worst_pop"].is_null() && r.failure_evidence.len() < MAX_EVIDENCE {
            r.failure_evidence.push(json!({
                "what": "a pop at a change of authority over 1 cm",
                "player": f["player"],
                "pop": f["worst_pop"],
            }));
        }
        r.handover_glide_m_max = r.handover_glide_m_max.max(num(&f["glide_max"]));
        r.handover_pop_m_p99 = r.handover_pop_m_p99.max(num(&f["pop_p99"]));
        let seconds = num(&f["seconds"]).max(1e-9);
        for d in f["demand"].as_array().into_iter().flatten() {
            r.kbps_demand_mean_max = r.kbps_demand_mean_max.max(num(d) * 8.0 / 1000.0 / seconds);
        }
        for c in f["connections"].as_array().into_iter().flatten() {
            let kbps = |b: &Value| num(b) * 8.0 / 1000.0 / seconds;
            r.kbps_per_connection_mean_max = r
                .kbps_per_connection_mean_max
                .max(kbps(&c["sent"]))
                .max(kbps(&c["received"]));
            r.kbps_avatars_per_connection_mean_max =
                r.kbps_avatars_per_connection_mean_max.max(kbps(&c["avatars_sent"]));
            r.connections.push(ConnectionKbps {
                from: f["player"].as_u64().unwrap_or(0).max(1) as u8,
                to: c["player"].as_u64().unwrap_or(0) as u8,
                cubes: kbps(&c["cubes_sent"]),
                avatars: kbps(&c["avatars_sent"]),
                header: kbps(&c["header_sent"]),
                rest: kbps(&c["rest_sent"]),
            });
            if f["host"] == true {
                r.host_kbps_up_mean += kbps(&c["sent"]);
            }
        }
        last_change = last_change.max(num(&f["last_change_ms"]));
    }
    r.rejected_updates = rejected;
    // What the host judged: claims it took from each player (a hostile player's must be none).
    for (k, n) in host["accepted_claims"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .take(5)
    {
        r.accepted_claims_by_player[k] = n.as_u64().unwrap_or(0);
    }
    r.bit_identical_at_end = finals.iter().all(|f| f["states"] == host["states"]);
    for f in finals.iter().filter(|f| f["states"] != host["states"]) {
        let (a, b) = (f["states"].as_array(), host["states"].as_array());
        for (c, (x, y)) in a.into_iter().flatten().zip(b.into_iter().flatten()).enumerate() {
            if x != y {
                tracing::warn!(player = %f["player"], cube = c, here = %x, host = %y, "final states differ");
                if r.failure_evidence.len() < MAX_EVIDENCE {
                    r.failure_evidence.push(json!({
                        "what": "final state differs from the host's",
                        "player": f["player"],
                        "cube": c,
                        "state": x,
                        "host_state": y,
                        "stamp": f["stamps"][c],
                        "host_stamp": host["stamps"][c],
                        "history": f["histories"][c],
                        "host_history": host["histories"][c],
                    }));
                }
            }
        }
    }
    r.authority_identical_at_end = finals.iter().all(|f| f["stamps"] == host["stamps"]);
    r.max_divergence_m_at_end = finals
        .iter()
        .map(|f| divergence_m(&f["states"], &host["states"]))
        .fold(0.0, f64::max);
    r.seconds_to_converge = r
        .bit_identical_at_end
        .then(|| ((last_change - settle_ms) / 1000.0).max(0.0));
    (r.conflicts, r.conflict_resolve_ms_max) = conflicts(finals);
    let (jitter, worst) = rest_jitter_m(finals);
    r.remote_rest_jitter_m = Some(jitter);
    r.failure_evidence.extend(worst);
    // `--kill-player` names a seat; the killed peer's authority index is the one no surviving peer reports
    // (the host hands indices out as handshakes finish, so seat and index can differ).
    let killed_player = (1..=config.players as u64).find(|p| finals.iter().all(|f| f["player"].as_u64() != Some(*p)));
    if let (Some(k), Some(player)) = (killed_at_ms, killed_player.filter(|_| config.kill_player.is_some())) {
        let player = player as u8;
        let last = finals
            .iter()
            .map(|f| num(&f["last_seen_player_ms"][usize::from(player)]))
            .fold(0.0, f64::max);
        r.seconds_to_release_killed = Some(((last - k) / 1000.0).max(0.0));
    }
    r.cubes_per_authority_at_end = [0, 1, 2, 3, 4].map(|a| {
        host["stamps"]
            .as_array()
            .map_or(0, |s| s.iter().filter(|x| x[0].as_u64() == Some(a)).count() as u32)
    });
    r.kbps_per_connection_p95_max = percentile(&mut rates, 0.95);
    Ok(r)
}

/// A guest's resting claims that the host ended without (see `harness::session`'s `lost_commits`); each goes to
/// `evidence` (up to [`MAX_EVIDENCE`]) with the cube's history on the guest and on the host.
fn lost_commits(guest: &Value, host: &Value, evidence: &mut Vec<Value>) -> u64 {
    let stamp = |v: &Value| AuthorityStamp {
        authority: v[0].as_u64().unwrap_or(0) as u8,
        authority_seq: v[1].as_u64().unwrap_or(0) as u16,
        ownership_seq: v[2].as_u64().unwrap_or(0) as u16,
    };
    let mut lost = 0;
    for claim in guest["rest_claims"].as_array().into_iter().flatten() {
        let c = claim[0].as_u64().unwrap_or(u64::MAX) as usize;
        let host_state = &host["states"][c];
        if commit_outcome(&stamp(&claim[1]), &stamp(&host["stamps"][c])).is_some() && !host_state.is_null() {
            let same = host_state[0] == claim[2] && host_state[1] == claim[3] && host_state[2] == claim[4];
            // A cube returned to default is the host's own to move: the commit held if the host had it at rest in
            // the claimed pose under the return's stamp (a default cube the host's world moves later, as a
            // support falls away, keeps that stamp).
            let same = same || rested_on_host_as_claimed(host, c, &host["stamps"][c], claim);
            // Or the host took that resting state under that claim, and its world moved the cube on as its own (a
            // default neighbour creeping against it takes it by touch, under the stamp a return would have).
            let returned = host["stamps"][c] != claim[1];
            let same = same || (returned && host["taken_rest"].as_array().into_iter().flatten().any(|t| t == claim));
            if !same {
                tracing::warn!(
                    guest = %guest["player"],
                    cube = c,
                    claim = %claim,
                    host_stamp = %host["stamps"][c],
                    host_state = %host_state,
                    "a guest's resting claim that the host ended without"
                );
                if evidence.len() < MAX_EVIDENCE {
                    evidence.push(json!({
                        "what": "a guest's resting claim that the host ended without",
                        "player": guest["player"],
                        "cube": c,
                        "claim": claim,
                        "host_stamp": host["stamps"][c],
                        "host_state": host_state,
                        "history": guest["histories"][c],
                        "host_history": host["histories"][c],
                    }));
                }
            }
            lost += u64::from(!same);
        }
    }
    lost
}

/// A resting claim as the trace's JSON writes it: [cube, [authority, authority sequence, ownership sequence],
/// position, rotation's largest, rotation's smallest three].
fn claim_json(cube: usize, stamp: &AuthorityStamp, q: &QuantizedState) -> Value {
    json!([
        cube,
        [stamp.authority, stamp.authority_seq, stamp.ownership_seq],
        q.position,
        q.rotation.largest,
        q.rotation.smallest_three
    ])
}

/// Largest distance between two processes' cube positions (m).
fn divergence_m(a: &Value, b: &Value) -> f64 {
    let (Some(a), Some(b)) = (a.as_array(), b.as_array()) else {
        return f64::INFINITY;
    };
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            (0..3)
                .map(|k| (x[0][k].as_f64().unwrap_or(0.0) - y[0][k].as_f64().unwrap_or(0.0)) / 4096.0)
                .map(|d| d * d)
                .sum::<f64>()
                .sqrt()
        })
        .fold(0.0, f64::max)
}

/// Whether the host had cube `c` at rest, as its own, under `stamp` in the pose of `claim` ([cube, stamp,
/// position, largest, smallest three]) at some time (its rest events).
fn rested_on_host_as_claimed(host: &Value, c: usize, stamp: &Value, claim: &Value) -> bool {
    let pose: Vec<Value> = claim[2]
        .as_array()
        .into_iter()
        .flatten()
        .cloned()
        .chain(std::iter::once(claim[3].clone()))
        .chain(claim[4].as_array().into_iter().flatten().cloned())
        .collect();
    host["rest_events"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|e| e[1].as_u64() == Some(c as u64) && e[2] == true && &e[3] == stamp && e[4].as_array() == Some(&pose))
}

/// The largest step a cube made on a peer where it was at rest, held to a resting state it had applied, while
/// another peer, its authority, had it at rest in that same pose (`remote_rest_jitter_m`, from every peer's rest
/// events and moves). Arrival is not jitter: a copy moving onto the authority's new resting pose was held to an
/// older one, and a copy replaying a wake it heard of late was released by the awake state. A peer that rests a
/// cube under a claim the moving peer already knows to be superseded is not its authority.
fn rest_jitter_m(finals: &[Value]) -> (f64, Option<Value>) {
    let cubes = finals.first().and_then(|f| f["stamps"].as_array()).map_or(0, Vec::len);
    // Per cube: (from ms, to ms, peer, stamp, pose) intervals during which a peer, its authority, had it at rest.
    let mut resting: Vec<Vec<RestRun>> = vec![Vec::new(); cubes];
    for (p, f) in finals.iter().enumerate() {
        let mut since: Vec<Option<(f64, AuthorityStamp, &Value)>> = vec![None; cubes];
        for e in f["rest_events"].as_array().into_iter().flatten() {
            let (t, c) = (e[0].as_f64().unwrap_or(0.0), e[1].as_u64().unwrap_or(0) as usize);
            if c >= cubes {
                continue;
            }
            if let Some((s, stamp, pose)) = since[c].take() {
                resting[c].push((s, t, p, stamp, pose));
            }
            if e[2] == true {
                since[c] = Some((t, stamp_of(&e[3]), &e[4]));
            }
        }
        for (c, s) in since.into_iter().enumerate() {
            if let Some((s, stamp, pose)) = s {
                resting[c].push((s, f64::INFINITY, p, stamp, pose));
            }
        }
    }
    let mut worst = 0.0f64;
    let mut evidence = None;
    for (p, f) in finals.iter().enumerate() {
        for (k, m) in f["rest_moves"].as_array().into_iter().flatten().enumerate() {
            let (t, c, d) = (
                m[0].as_f64().unwrap_or(0.0),
                m[1].as_u64().unwrap_or(0) as usize,
                m[2].as_f64().unwrap_or(0.0),
            );
            let known = stamp_of(&m[3]);
            let settled = resting.get(c).is_some_and(|r| {
                r.iter().any(|&(from, to, q, stamp, pose)| {
                    q != p
                        && from <= t
                        && t <= to
                        && *pose == m[4]
                        && compare_claims(&known, &stamp) != Ordering::Greater
                })
            });
            if settled {
                if d > worst {
                    evidence = Some(json!({
                        "what": "a cube resting here moved while its authority had it at rest in that pose",
                        "player": finals[p]["player"],
                        "cube": c,
                        "at_ms": t,
                        "moved_m": d,
                        "stamp": m[3],
                        "pose": m[4],
                        "history": history_of_move(f, k),
                    }));
                }
                worst = worst.max(d);
                if d > 1e-3 {
                    let player = &finals[p]["player"];
                    tracing::debug!(%player, cube = c, moved_m = d, at_ms = t, "rest jitter: moved while its authority had it at rest");
                }
            }
        }
    }
    (worst, evidence)
}

/// The cube's history kept with rest move `k` of a peer's report (only its largest moves keep one).
fn history_of_move(f: &Value, k: usize) -> Value {
    f["worst_moves"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|w| w[0].as_u64() == Some(k as u64))
        .map_or(Value::Null, |w| w[1].clone())
}

/// A stamp as the reports carry it: [authority, authority seq, ownership seq].
fn stamp_array(s: &AuthorityStamp) -> [u16; 3] {
    [u16::from(s.authority), s.authority_seq, s.ownership_seq]
}

/// A stamp as the rest events carry it: [authority, authority seq, ownership seq].
fn stamp_of(v: &Value) -> AuthorityStamp {
    let n = |i: usize| v[i].as_u64().unwrap_or(0) as u16;
    AuthorityStamp {
        authority: n(0) as u8,
        authority_seq: n(1),
        ownership_seq: n(2),
    }
}

/// Conflicts from the processes' holder changes on the wall clock: a conflict is a time when two processes name
/// different players as a cube's holder; it lasts until they agree.
fn conflicts(finals: &[Value]) -> (u64, f64) {
    let mut events: Vec<(f64, usize, u32, u8)> = Vec::new();
    for (p, f) in finals.iter().enumerate() {
        for e in f["holder_events"].as_array().into_iter().flatten() {
            events.push((
                e[0].as_f64().unwrap_or(0.0),
                p,
                e[1].as_u64().unwrap_or(0) as u32,
                e[2].as_u64().unwrap_or(0) as u8,
            ));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let cubes = finals[0]["stamps"].as_array().map_or(0, Vec::len);
    let mut holders = vec![vec![0u8; cubes]; finals.len()];
    let mut since: Vec<Option<f64>> = vec![None; cubes];
    let (mut count, mut longest) = (0u64, 0.0f64);
    for (t, p, cube, h) in events {
        let c = cube as usize;
        if c >= cubes {
            continue;
        }
        holders[p][c] = h;
        let named: Vec<u8> = holders.iter().map(|hs| hs[c]).filter(|&h| h != 0).collect();
        let disagree = named.windows(2).any(|w| w[0] != w[1]);
        match (disagree, since[c]) {
            (true, None) => {
                since[c] = Some(t);
                count += 1;
            }
            (false, Some(s)) => {
                longest = longest.max(t - s);
                since[c] = None;
            }
            _ => {}
        }
    }
    (count, longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_commit_is_a_claimed_rest_the_host_never_had() {
        // Guest player 2 rested cube 0 in pose A under its claim [2, 7, 1]; the host ends with the cube elsewhere.
        let claim = json!([0, [2, 7, 1], [0, 2048, 0], 3, [0, 0, 0]]);
        let guest = json!({ "player": 2, "rest_claims": [claim], "histories": [[]] });
        let elsewhere = json!([[4096, 2048, 0], 3, [0, 0, 0], [0, 0, 0], [0, 0, 0], true]);
        let host = |stamp: Value, events: Value| json!({ "stamps": [stamp], "states": [elsewhere.clone()], "rest_events": events, "histories": [[]] });
        let returned = json!([0, 8, 1]);
        let rested_as_claimed = json!([[1000.0, 0, true, [0, 8, 1], [0, 2048, 0, 3, 0, 0, 0]]]);
        let mut evidence = Vec::new();
        // Returned to default and never at rest in the claimed pose on the host: lost, with its evidence.
        assert_eq!(
            lost_commits(&guest, &host(returned.clone(), json!([])), &mut evidence),
            1
        );
        assert_eq!(evidence.len(), 1);
        assert_eq!(evidence[0]["cube"], 0);
        // Returned, at rest in the claimed pose on the host, moved on later as the host's own: committed.
        assert_eq!(
            lost_commits(
                &guest,
                &host(returned.clone(), rested_as_claimed.clone()),
                &mut evidence
            ),
            0
        );
        // At rest there under another stamp, or in another pose: no proof of the commit.
        let other_pose = json!([[1000.0, 0, true, [0, 8, 1], [1, 2048, 0, 3, 0, 0, 0]]]);
        assert_eq!(
            lost_commits(&guest, &host(returned.clone(), other_pose), &mut evidence),
            1
        );
        // Taken by the host in the claimed pose under the claim, then moved on as its own: committed; taken
        // under an older claim of the same guest: not.
        let taken = |t: Value| {
            let mut h = host(returned.clone(), json!([]));
            h["taken_rest"] = json!([t]);
            h
        };
        assert_eq!(lost_commits(&guest, &taken(claim.clone()), &mut evidence), 0);
        let older = json!([0, [2, 6, 1], [0, 2048, 0], 3, [0, 0, 0]]);
        assert_eq!(lost_commits(&guest, &taken(older), &mut evidence), 1);
        // Still under the guest's claim on the host, yet elsewhere: lost, whatever the host's rest events say.
        assert_eq!(
            lost_commits(&guest, &host(json!([2, 7, 1]), rested_as_claimed), &mut evidence),
            1
        );
        // A later claim took the cube: nothing to judge.
        assert_eq!(
            lost_commits(&guest, &host(json!([3, 9, 1]), json!([])), &mut evidence),
            0
        );
    }

    #[test]
    fn rest_jitter_counts_a_move_only_of_a_copy_held_to_the_authoritys_resting_pose() {
        let stamps = json!([[0, 0, 0], [0, 0, 0]]);
        let (a, b) = (json!([0, 2048, 0, 3, 0, 0, 0]), json!([1, 2048, 0, 3, 0, 0, 0]));
        // Peer 0 (the host) has cube 1 at rest under its default claim (seq 4) in pose A from 1000 ms, then (a wake
        // too short to log, or one in place) in pose B from 3000 ms to 5000 ms.
        let host = json!({ "stamps": stamps, "rest_events": [
            [1000.0, 1, true, [0, 4, 0], a], [3000.0, 1, true, [0, 4, 0], b], [5000.0, 1, false, [0, 4, 0], null]
        ], "rest_moves": [] });
        let guest = |moves: Value| json!({ "stamps": stamps, "rest_events": [], "rest_moves": moves });
        // Moved 2 cm while held to A and the host had it at rest in A: counted (the mover knows that claim, or an
        // older one); so is 1 cm while held to B in B's run.
        let (counted, evidence) = rest_jitter_m(&[
            host.clone(),
            guest(json!([
                [2000.0, 1, 0.02, [0, 4, 0], a],
                [3100.0, 1, 0.01, [2, 3, 0], b]
            ])),
        ]);
        assert!((counted - 0.02).abs() < 1e-9, "{counted}");
        // The worst counted move comes back as evidence: which cube, when, how far, under which claim.
        let evidence = evidence.expect("evidence of the counted move");
        assert_eq!(
            (evidence["cube"].as_u64(), evidence["at_ms"].as_f64()),
            (Some(1), Some(2000.0))
        );
        let (in_b, _) = rest_jitter_m(&[host.clone(), guest(json!([[3100.0, 1, 0.01, [2, 3, 0], b]]))]);
        assert!((in_b - 0.01).abs() < 1e-9, "{in_b}");
        // Held to A while the host rests in B (the copy has not heard of B yet), after the host woke it, another
        // cube, or under a claim newer than the host's (player 3 took it): not counted.
        let not = guest(json!([
            [3100.0, 1, 0.5, [0, 4, 0], a],
            [5100.0, 1, 0.5, [0, 4, 0], b],
            [2000.0, 0, 0.5, [0, 4, 0], a],
            [2000.0, 1, 0.5, [3, 5, 0], a]
        ]));
        assert_eq!(rest_jitter_m(&[host.clone(), not]), (0.0, None));
        // The authority's own moves are not jitter.
        let own = json!({ "stamps": stamps, "rest_events": [[1000.0, 1, true, [0, 4, 0], a]], "rest_moves": [[3000.0, 1, 0.5, [0, 4, 0], a]] });
        assert_eq!(rest_jitter_m(&[own]), (0.0, None));
        // A rest that has not ended by the end of the run still counts.
        let open = json!({ "stamps": stamps, "rest_events": [[1000.0, 1, true, [0, 4, 0], a]], "rest_moves": [] });
        assert_eq!(
            rest_jitter_m(&[open, guest(json!([[9000.0, 1, 0.01, [0, 4, 0], a]]))]).0,
            0.01
        );
    }
}
