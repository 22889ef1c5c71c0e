//! Player 2's machine, the client: it simulates nothing. It assembles the server's snapshot slices into a ring of
//! [`RING`] snapshots (its playout buffer and its baselines), acks the newest complete one, sends its inputs, and
//! each frame draws the world a playout delay behind the newest snapshot times: per body, Hermite between the two
//! snapshots holding it either side of the render time (a snapshot missing a slice still draws the bodies of the
//! slices that came), extrapolation from the newest for at most
//! [`EXTRAPOLATE_LIMIT_S`] when the next is late or lost, and the last drawn pose held (a hitch) beyond that.
//!
//! Render time: every slice gives an offset, arrival time − its step's time; the smallest offset seen
//! is the fastest delivery, and the client draws the server's state at now − smallest offset − playout delay. The
//! delay is the floor given, or (adaptive) the gap a run of lost snapshots leaves — the longest run the measured loss
//! makes likely, at least three ([`lost_run_to_cover`]) — plus the largest lateness past the fastest delivery seen
//! (jitter). Both only grow, so once it has measured the link the client interpolates and never extrapolates.

use std::time::Instant;

use tumble_engine::physics::BodyState;
use tumble_net::ReadStream;

use super::interpolate::{extrapolate, hermite, Drawn};
use super::packet::{serialize_compressed, serialize_raw, ClientPacket, SliceHeader, SnapshotError};
use super::server::CLIENT;
use super::server::RING;
use crate::inputs::packet::{InputPacket, MAX_INPUTS_PER_PACKET, MAX_PLAYERS};
use crate::inputs::window::{InputWindow, WindowFull};
use tumble_game::cube_game::CubeInput;
use tumble_game::sync::codec::quantize::{dequantize_state, QuantizedState};
use tumble_game::STEP_HZ;

/// Longest the client extrapolates past its newest snapshot before it holds the view still (s).
pub const EXTRAPOLATE_LIMIT_S: f64 = 0.25;
/// A jump in what is drawn smaller than this is rounding, not a correction (m).
pub const CORRECTION_EPSILON_M: f32 = 0.001;
/// Lost snapshots in a row the adaptive delay covers at least (a run of k leaves a gap of k + 1 intervals): three,
/// whatever the link, until the loss is measured.
pub const MIN_LOST_RUN_COVERED: u32 = 3;
/// How rarely a longer run of losses than the delay covers may come (the expected number per hour of snapshots):
/// an extrapolation (and its correction) about once in a hundred hours. At 5 % loss and 30 Hz the run covered is 6
/// (three in a row, what a fixed cover took, came once in eight 120 s runs at 250 ms round trip: a 2.2 cm correction).
pub const LONGER_RUNS_PER_HOUR: f64 = 0.01;
/// How fast the delay drawn with follows a new delay (s per frame): a tenth of real time, so a longer delay slows
/// the picture for a moment instead of sending it back (a 20 ms step back was a 0.3 m jump of a flying cube).
pub const DELAY_SLEW_S_PER_FRAME: f64 = 0.001;
/// Snapshot sequences spanned before the measured loss counts: fewer say too little about the link.
pub const LOSS_WARM_UP_SNAPSHOTS: u32 = 150;
/// The most snapshots in a row the delay covers, whatever the loss (a link losing this much is not playable).
const MAX_LOST_RUN_COVERED: u32 = 30;
/// One frame (s).
const FRAME_S: f32 = 1.0 / STEP_HZ as f32;

/// The client's playout delay settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayoutDelay {
    /// The delay, or the least it adapts to (s).
    pub floor_s: f64,
    pub adaptive: bool,
    /// Adaptive: the run of lost snapshots covered follows the measured loss (off: [`MIN_LOST_RUN_COVERED`]
    /// always, as before — a control).
    pub follow_loss: bool,
}

/// One received snapshot, complete or being assembled.
#[derive(Clone, Debug, Default)]
struct Received {
    sequence: Option<u32>,
    step: u32,
    baseline: Option<u32>,
    compressed: bool,
    slice_count: u32,
    slices_held: u64,
    complete: bool,
    input_ack: Option<u32>,
    /// Per body: its slice has arrived (a snapshot missing a slice still draws the bodies it has).
    held: Vec<bool>,
    quantized: Vec<QuantizedState>,
    states: Vec<BodyState>,
}

/// How a frame was drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrawMode {
    Nothing,
    Interpolated,
    Extrapolated,
    Held,
}

fn rank(m: DrawMode) -> u8 {
    match m {
        DrawMode::Nothing => 0,
        DrawMode::Interpolated => 1,
        DrawMode::Extrapolated => 2,
        DrawMode::Held => 3,
    }
}

fn worse(a: DrawMode, b: DrawMode) -> DrawMode {
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// What the client counted.
#[derive(Clone, Debug, Default)]
pub struct ClientStats {
    /// Frames from the first one drawn.
    pub frames: u64,
    pub hitch_frames: u64,
    pub extrapolated_frames: u64,
    pub corrections: u64,
    pub correction_max_m: f64,
    pub jump_max_m: f64,
    pub snapshots_complete: u64,
    pub slices_received: u64,
    pub slices_refused: u64,
    pub cpu_s: f64,
}

pub struct SnapshotClient {
    body_count: u32,
    snapshot_interval_s: f64,
    delay: PlayoutDelay,
    ring: Vec<Received>,
    newest_complete: Option<u32>,
    offset_min_s: f64,
    lateness_max_s: f64,
    /// The measured loss: slices that arrived, snapshot sequences that brought at least one and the slices those
    /// were cut into, and the first and newest sequence.
    slices_seen: u64,
    sequences_seen: u64,
    slice_counts_sum: u64,
    first_sequence: Option<u32>,
    newest_sequence: u32,
    /// Lost snapshots in a row the adaptive delay covers (only grows).
    lost_run_covered: u32,
    /// The delay the last frame was drawn with: it follows [`SnapshotClient::delay_s`] at
    /// [`DELAY_SLEW_S_PER_FRAME`].
    played_delay_s: Option<f64>,
    /// This player's inputs from the oldest the server may still lack (a fixed ring).
    inputs: InputWindow,
    input_acked: Option<u64>,
    drawn: Vec<Drawn>,
    previous: Vec<Drawn>,
    mode: DrawMode,
    drawn_input_ack: Option<u32>,
    packet: ClientPacket,
    pub stats: ClientStats,
}

/// The shortest run of losses k (at least [`MIN_LOST_RUN_COVERED`]) that a longer one is expected fewer than
/// [`LONGER_RUNS_PER_HOUR`] times an hour at `loss` (0..1, independent losses) and `snapshots_per_hour`.
pub fn lost_run_to_cover(loss: f64, snapshots_per_hour: f64) -> u32 {
    let mut k = MIN_LOST_RUN_COVERED;
    while k < MAX_LOST_RUN_COVERED && snapshots_per_hour * loss.powi(k as i32 + 1) >= LONGER_RUNS_PER_HOUR {
        k += 1;
    }
    k
}

impl SnapshotClient {
    pub fn new(body_count: usize, snapshot_hz: u32, delay: PlayoutDelay) -> Self {
        let entry = Received {
            quantized: vec![QuantizedState::default(); body_count],
            states: vec![super::packet::placeholder_state(); body_count],
            held: vec![false; body_count],
            ..Received::default()
        };
        Self {
            body_count: body_count as u32,
            snapshot_interval_s: 1.0 / f64::from(snapshot_hz.max(1)),
            delay,
            ring: vec![entry; RING],
            newest_complete: None,
            offset_min_s: f64::INFINITY,
            lateness_max_s: 0.0,
            slices_seen: 0,
            sequences_seen: 0,
            slice_counts_sum: 0,
            first_sequence: None,
            newest_sequence: 0,
            lost_run_covered: MIN_LOST_RUN_COVERED,
            played_delay_s: None,
            inputs: InputWindow::default(),
            input_acked: None,
            drawn: vec![Drawn::default(); body_count],
            previous: vec![Drawn::default(); body_count],
            mode: DrawMode::Nothing,
            drawn_input_ack: None,
            packet: ClientPacket {
                snapshot_ack: None,
                inputs: InputPacket::with_capacity(),
            },
            stats: ClientStats::default(),
        }
    }

    /// The playout delay now (s).
    pub fn delay_s(&self) -> f64 {
        if self.delay.adaptive {
            let gap = f64::from(self.lost_run_covered + 1) * self.snapshot_interval_s;
            self.delay.floor_s.max(gap + self.lateness_max_s)
        } else {
            self.delay.floor_s
        }
    }

    /// Tests: moves `body` by one position unit in the newest complete snapshot, behind the server's back (as
    /// decoding against the wrong baseline would): the snapshots coded against it from then on come out wrong —
    /// the control of the run's `desyncs`.
    #[doc(hidden)]
    pub fn damage_newest(&mut self, body: usize) {
        if let Some(s) = self.newest_complete {
            let e = &mut self.ring[s as usize % RING];
            if let Some(q) = e.quantized.get_mut(body) {
                q.position[0] += 1;
            }
            if let Some(b) = e.states.get_mut(body) {
                b.position.x += 1e-3;
            }
        }
    }

    /// The newest complete snapshot: its sequence, step and quantized (compressed) or raw states.
    pub fn newest(&self) -> Option<(u32, u32, &[QuantizedState], &[BodyState])> {
        let s = self.newest_complete?;
        let e = &self.ring[s as usize % RING];
        (e.sequence == Some(s) && e.complete).then_some((s, e.step, &e.quantized[..], &e.states[..]))
    }

    /// Player 2's newest input step the server had applied by the snapshot this frame was drawn from.
    pub fn drawn_input_ack(&self) -> Option<u32> {
        self.drawn_input_ack
    }

    pub fn drawn(&self) -> &[Drawn] {
        &self.drawn
    }

    /// Records this frame's input (step = the number of inputs sampled before it).
    pub fn sample(&mut self, input: CubeInput) -> Result<(), WindowFull> {
        let (sampled, first) = self.unacked_inputs();
        debug_assert!(first <= sampled);
        self.inputs.push(input, first)?;
        Ok(())
    }

    /// Inputs sampled so far, and the first one a packet carries: the oldest the server has not acked, or the
    /// newest packet's worth when more are unacked.
    fn unacked_inputs(&self) -> (u64, u64) {
        let sampled = self.inputs.contiguous();
        let first = self.input_acked.map_or(0, |a| a + 1).min(sampled);
        (sampled, first.max(sampled.saturating_sub(MAX_INPUTS_PER_PACKET as u64)))
    }

    /// One slice arrived at `now_s`; returns the sequence of the snapshot it completed, if it did.
    pub fn read_slice(&mut self, now_s: f64, bytes: &[u8]) -> Result<Option<u32>, SnapshotError> {
        let start = Instant::now();
        let result = self.read_slice_inner(now_s, bytes);
        self.stats.cpu_s += start.elapsed().as_secs_f64();
        match result {
            Ok(done) => {
                self.stats.slices_received += 1;
                Ok(done)
            }
            Err(e) => {
                self.stats.slices_refused += 1;
                Err(e)
            }
        }
    }

    fn read_slice_inner(&mut self, now_s: f64, bytes: &[u8]) -> Result<Option<u32>, SnapshotError> {
        let mut r = ReadStream::new(bytes);
        let mut h = SliceHeader::default();
        h.serialize(&mut r, self.body_count)?;
        let i = h.sequence as usize % RING;
        let held = self.ring[i].sequence;
        if held.is_some_and(|s| s > h.sequence) {
            return Ok(None); // older than what the ring holds there: too late to matter
        }
        let baseline = match h.baseline {
            Some(b) => {
                let e = &self.ring[b as usize % RING];
                // A baseline sharing the slice's ring entry (64 snapshots older) is one the server no longer keeps.
                if e.sequence != Some(b) || !e.complete || b as usize % RING == i {
                    return Err(SnapshotError::MissingBaseline(b));
                }
                Some(b as usize % RING)
            }
            None => None,
        };
        let e = &self.ring[i];
        let fresh = held != Some(h.sequence);
        if !fresh {
            let same = e.step == h.step
                && e.baseline == h.baseline
                && e.slice_count == h.slice_count
                && e.compressed == h.compressed;
            if !same {
                return Err(SnapshotError::BadRange {
                    index: h.slice_index,
                    count: h.slice_count,
                    first: h.first_body,
                    end: h.first_body + h.bodies,
                });
            }
            if e.complete || e.slices_held & (1 << h.slice_index) != 0 {
                return Ok(None); // a duplicate
            }
        }
        // Decode into the entry taken out of the ring, so the baseline entry can be read beside it.
        let mut quantized = std::mem::take(&mut self.ring[i].quantized);
        let mut states = std::mem::take(&mut self.ring[i].states);
        let range = h.range();
        let decoded = if h.compressed {
            let base = baseline.map(|b| &self.ring[b].quantized[range.clone()]);
            serialize_compressed(&mut r, &mut quantized[range.clone()], base)
        } else {
            serialize_raw(&mut r, &mut states[range.clone()])
        }
        .and_then(|_| r.finish().map_err(SnapshotError::from));
        if decoded.is_ok() {
            self.measure_loss(&h, fresh);
        }
        let e = &mut self.ring[i];
        e.quantized = quantized;
        e.states = states;
        if let Err(err) = decoded {
            if fresh {
                // The entry's older snapshot was partly overwritten: it can be neither drawn nor a baseline.
                e.sequence = None;
                e.complete = false;
                e.held.fill(false);
                if self.newest_complete.is_some_and(|n| n as usize % RING == i) {
                    self.newest_complete = None;
                }
            }
            return Err(err);
        }
        if fresh {
            e.sequence = Some(h.sequence);
            e.step = h.step;
            e.baseline = h.baseline;
            e.compressed = h.compressed;
            e.slice_count = h.slice_count;
            e.slices_held = 0;
            e.complete = false;
            e.input_ack = h.input_ack;
            e.held.fill(false);
        }
        e.slices_held |= 1 << h.slice_index;
        e.held[range.clone()].fill(true);
        if e.compressed {
            for (q, s) in e.quantized[range.clone()].iter().zip(&mut e.states[range]) {
                *s = dequantize_state(q);
            }
        }
        // Every slice gives an offset: the first of a snapshot is its earliest arrival.
        let offset = now_s - f64::from(h.step) / STEP_HZ as f64;
        if offset < self.offset_min_s {
            self.lateness_max_s += (self.offset_min_s - offset).min(1.0) * f64::from(self.offset_min_s.is_finite());
            self.offset_min_s = offset;
        }
        self.lateness_max_s = self.lateness_max_s.max(offset - self.offset_min_s);
        if e.slices_held.count_ones() < e.slice_count {
            return Ok(None);
        }
        e.complete = true;
        self.stats.snapshots_complete += 1;
        if self.newest_complete.is_none_or(|n| h.sequence > n) {
            self.newest_complete = Some(h.sequence);
        }
        if let Some(a) = h.input_ack {
            self.input_acked = Some(self.input_acked.map_or(u64::from(a), |o| o.max(u64::from(a))));
        }
        Ok(Some(h.sequence))
    }

    /// Counts a slice that arrived (`fresh`: the first of its snapshot) towards the measured loss — the share of
    /// slices that never came, a snapshot lost whole counted as the mean number of slices — and once enough
    /// sequences are spanned, covers the run of losses that loss makes likely (a body is missing from a snapshot
    /// when its slice is).
    fn measure_loss(&mut self, h: &SliceHeader, fresh: bool) {
        if !self.delay.follow_loss {
            return;
        }
        self.slices_seen += 1;
        if fresh {
            self.sequences_seen += 1;
            self.slice_counts_sum += u64::from(h.slice_count);
        }
        let first = *self.first_sequence.get_or_insert(h.sequence);
        self.newest_sequence = self.newest_sequence.max(h.sequence);
        let spanned = self.newest_sequence.saturating_sub(first) + 1;
        if spanned < LOSS_WARM_UP_SNAPSHOTS {
            return;
        }
        let slices_per_snapshot = self.slice_counts_sum as f64 / self.sequences_seen.max(1) as f64;
        let expected = f64::from(spanned) * slices_per_snapshot;
        let loss = 1.0 - (self.slices_seen as f64 / expected).min(1.0);
        let per_hour = 3600.0 / self.snapshot_interval_s;
        self.lost_run_covered = self.lost_run_covered.max(lost_run_to_cover(loss, per_hour));
    }

    /// The delay the last frame was drawn with (s); `None` before the first.
    pub fn played_delay_s(&self) -> Option<f64> {
        self.played_delay_s
    }

    /// Lost snapshots in a row the adaptive delay covers now.
    pub fn lost_run_covered(&self) -> u32 {
        self.lost_run_covered
    }

    /// Draws the frame at `now_s`; returns the render time as a fractional server step, once anything is drawn.
    pub fn draw(&mut self, now_s: f64) -> Option<f64> {
        let start = Instant::now();
        let r = self.draw_inner(now_s);
        self.stats.cpu_s += start.elapsed().as_secs_f64();
        r
    }

    fn draw_inner(&mut self, now_s: f64) -> Option<f64> {
        if !self.offset_min_s.is_finite() {
            return None;
        }
        let target = self.delay_s();
        let delay = self.played_delay_s.map_or(target, |d| {
            d + (target - d).clamp(-DELAY_SLEW_S_PER_FRAME, DELAY_SLEW_S_PER_FRAME)
        });
        self.played_delay_s = Some(delay);
        let render = (now_s - self.offset_min_s - delay) * STEP_HZ as f64;
        std::mem::swap(&mut self.drawn, &mut self.previous);
        self.drawn_input_ack = None;
        // Per body, the snapshots holding it either side of the render time; the frame counts as its worst body.
        let mut mode = DrawMode::Interpolated;
        for body in 0..self.drawn.len() {
            let (mut a, mut b): (Option<usize>, Option<usize>) = (None, None);
            for (i, e) in self.ring.iter().enumerate() {
                if e.sequence.is_none() || !e.held[body] {
                    continue;
                }
                if f64::from(e.step) <= render {
                    if a.is_none_or(|a| self.ring[a].step < e.step) {
                        a = Some(i);
                    }
                } else if b.is_none_or(|b| self.ring[b].step > e.step) {
                    b = Some(i);
                }
            }
            let body_mode = match (a, b) {
                (Some(a), Some(b)) => {
                    let (ea, eb) = (&self.ring[a], &self.ring[b]);
                    let span = f64::from(eb.step - ea.step);
                    let t = ((render - f64::from(ea.step)) / span) as f32;
                    let dt = (span / STEP_HZ as f64) as f32;
                    self.drawn[body] = hermite(&ea.states[body], &eb.states[body], t, dt);
                    DrawMode::Interpolated
                }
                (Some(a), None) => {
                    let e_s = (render - f64::from(self.ring[a].step)) / STEP_HZ as f64;
                    if e_s <= EXTRAPOLATE_LIMIT_S {
                        self.drawn[body] = extrapolate(&self.ring[a].states[body], e_s as f32);
                        DrawMode::Extrapolated
                    } else {
                        DrawMode::Held
                    }
                }
                // Render time before every snapshot holding it: nothing new to draw.
                (None, _) => DrawMode::Held,
            };
            if body_mode == DrawMode::Held {
                self.drawn[body] = Drawn {
                    velocity: glam::Vec3::ZERO,
                    ..self.previous[body]
                };
            }
            mode = worse(mode, body_mode);
            if body + 1 == self.drawn.len() {
                self.drawn_input_ack = a.and_then(|a| self.ring[a].input_ack);
            }
        }
        self.count(mode);
        Some(render)
    }

    /// Frame figures: hitches, extrapolations, and how far the drawing jumped from where its own motion led.
    fn count(&mut self, mode: DrawMode) {
        let before = self.mode;
        self.mode = mode;
        if before == DrawMode::Nothing {
            if mode != DrawMode::Interpolated {
                self.mode = DrawMode::Nothing; // the view starts with the first pair of snapshots
            }
            return;
        }
        self.stats.frames += 1;
        self.stats.hitch_frames += u64::from(mode == DrawMode::Held);
        self.stats.extrapolated_frames += u64::from(mode == DrawMode::Extrapolated);
        let mut jump = 0.0f32;
        for (d, p) in self.drawn.iter().zip(&self.previous) {
            jump = jump.max(d.position.distance(p.position + p.velocity * FRAME_S));
        }
        self.stats.jump_max_m = self.stats.jump_max_m.max(f64::from(jump));
        if before != DrawMode::Interpolated && mode == DrawMode::Interpolated && jump > CORRECTION_EPSILON_M {
            self.stats.corrections += 1;
            self.stats.correction_max_m = self.stats.correction_max_m.max(f64::from(jump));
        }
    }

    /// The packet to the server: the newest complete snapshot and every input it has not acked.
    pub fn write_packet(&mut self, buf: &mut [u8]) -> Result<usize, SnapshotError> {
        let (sampled, first) = self.unacked_inputs();
        let p = &mut self.packet;
        p.snapshot_ack = self.newest_complete;
        p.inputs.acks = [None; MAX_PLAYERS];
        p.inputs.checksum = None;
        // Player 2's slot of lockstep's input packet.
        p.inputs.first_step[CLIENT] = first as u16;
        let own = &mut p.inputs.inputs[CLIENT];
        own.clear();
        // Kept in the window since they are unacked (`sample` keeps from `first`).
        own.extend((first..sampled).map(|s| self.inputs.get(s).unwrap_or_default()));
        let mut w = tumble_net::WriteStream::new(buf);
        p.serialize(&mut w)?;
        Ok(w.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshots::server::SnapshotServer;
    use glam::Vec3;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::parse_scene;
    use tumble_game::STEP_S;

    fn world() -> tumble_engine::physics::World {
        let text =
            "name = \"field4\"\n[[grid]]\norigin = [-2.0, 0.5, -2.0]\ncount = [2, 1, 2]\nspacing = [4.0, 2.0, 4.0]\n";
        parse_scene(text, "field4.toml")
            .unwrap()
            .build_world(WorldConfig::default())
            .unwrap()
    }

    /// The server's slices for its next snapshot, as byte vectors.
    fn slices(server: &mut SnapshotServer) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1200];
        server.send_snapshot(&mut buf, |b| out.push(b.to_vec())).unwrap();
        out
    }

    #[test]
    fn the_run_covered_follows_the_loss() {
        let per_hour = 30.0 * 3600.0;
        assert_eq!(lost_run_to_cover(0.0, per_hour), MIN_LOST_RUN_COVERED);
        assert_eq!(lost_run_to_cover(0.01, per_hour), 3);
        assert_eq!(lost_run_to_cover(0.05, per_hour), 5);
        assert_eq!(lost_run_to_cover(0.25, per_hour), 11);
        assert_eq!(lost_run_to_cover(1.0, per_hour), MAX_LOST_RUN_COVERED);
    }

    #[test]
    fn the_client_draws_between_two_snapshots_and_refuses_garbage() {
        let mut server = SnapshotServer::new(world(), true, 30).unwrap();
        let n = server.world().body_count();
        let delay = PlayoutDelay {
            floor_s: 0.1,
            adaptive: false,
            follow_loss: false,
        };
        let mut client = SnapshotClient::new(n, 30, delay);
        assert!(client.draw(0.0).is_none(), "nothing to draw before a snapshot");
        // Player 1 rolls forward: snapshots after steps 3 and 6 (30 Hz), each arriving 20 ms after it was taken.
        let forward = tumble_game::cube_game::CubeInput::from_bits(tumble_game::cube_game::CubeInput::FORWARD);
        let mut taken = Vec::new();
        for step in 1..=6u32 {
            if server.step(forward).unwrap() {
                let arrival = f64::from(step) * STEP_S + 0.02;
                for s in slices(&mut server) {
                    client.read_slice(arrival, &s).unwrap();
                }
                taken.push(server.sent(taken.len() as u32).unwrap().clone());
            }
        }
        assert_eq!(taken.len(), 2);
        // Render time halfway between the two: now − 20 ms − 100 ms = step 4.5.
        let player = server.game().players()[0];
        let now = 4.5 * STEP_S + 0.12;
        let render = client.draw(now).unwrap();
        assert!((render - 4.5).abs() < 1e-6, "{render}");
        let (a, b) = (&taken[0].quantized[player.index()], &taken[1].quantized[player.index()]);
        let want =
            super::super::interpolate::hermite(&dequantize_state(a), &dequantize_state(b), 0.5, 3.0 * STEP_S as f32);
        assert!(client.drawn()[player.index()].position.distance(want.position) < 1e-6);
        assert!(
            want.position.distance(dequantize_state(a).position) > 1e-4,
            "it moved between the two"
        );
        assert_eq!(client.stats.hitch_frames, 0);
        // Garbage and a slice for another world are errors, counted, and change nothing drawn.
        let before = client.drawn()[player.index()];
        assert!(client.read_slice(now, &[0x53, 0xff, 0x00]).is_err());
        assert!(client.read_slice(now, &[]).is_err());
        let mut bigger = world();
        bigger
            .add_body(&tumble_engine::physics::BodyDesc {
                position: Vec3::new(9.0, 0.5, 9.0),
                ..Default::default()
            })
            .unwrap();
        let mut far = SnapshotServer::new(bigger, true, 30).unwrap();
        let _ = far.step(forward);
        for s in slices(&mut far) {
            assert!(client.read_slice(now, &s).is_err());
        }
        assert_eq!(client.stats.slices_refused, 3);
        // A hostile slice 64 snapshots on, delta-coded against snapshot 0 (which shares its ring entry), and one
        // whose bodies are cut short: errors, and snapshot 0 can no longer be drawn from or acked once overwritten.
        let mut header = SliceHeader {
            compressed: true,
            sequence: 64,
            step: 200,
            input_ack: None,
            body_count: n as u32,
            slice_index: 0,
            slice_count: 1,
            first_body: 0,
            bodies: n as u32,
            baseline: Some(0),
        };
        let mut buf = vec![0u8; 1200];
        let mut w = tumble_net::WriteStream::new(&mut buf);
        header.serialize(&mut w, n as u32).unwrap();
        let mut states = taken[0].quantized.clone();
        super::super::packet::serialize_compressed(&mut w, &mut states, Some(&taken[0].quantized)).unwrap();
        let len = w.finish().unwrap();
        assert!(matches!(
            client.read_slice(now, &buf[..len]),
            Err(SnapshotError::MissingBaseline(0))
        ));
        header.baseline = None;
        let mut w = tumble_net::WriteStream::new(&mut buf);
        header.serialize(&mut w, n as u32).unwrap();
        let len = w.finish().unwrap();
        assert!(client.read_slice(now, &buf[..len + 4]).is_err());
        assert_eq!(client.newest().map(|x| x.0), Some(1), "snapshot 1 is untouched");
        assert_eq!(client.drawn()[player.index()], before);
    }
}
