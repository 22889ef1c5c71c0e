//! Player 1's machine, the server: it simulates the whole world (both player cubes) at 90 Hz with player 1's input
//! and the newest input received from player 2, and after the steps a snapshot is due on it sends the world's
//! state in slices, compressed against the newest snapshot the client acked. It keeps the last [`RING`] snapshots
//! it sent, quantized, as possible baselines.

use std::time::Instant;

use tumble_engine::physics::{BodyId, BodyState, PhysicsError, World};
use tumble_net::packet::MAX_PAYLOAD_BYTES;
use tumble_net::{ReadStream, WriteStream};

use super::packet::{
    serialize_compressed, serialize_raw, ClientPacket, SliceHeader, SnapshotError, MAX_SLICES, RAW_BODY_BITS,
    SLICE_HEADER_MAX_BITS,
};
use crate::inputs::packet::{unwrap_step, InputPacket, MAX_PLAYERS};
use tumble_game::cube_game::{CubeGame, CubeInput};
use tumble_game::sync::codec::quantize::{quantize_state, QuantizedState, STATE_BITS_AT_REST, STATE_BITS_AWAKE};
use tumble_game::STEP_HZ;

/// Snapshots each side keeps (baselines on the server, the playout buffer on the client): over 1 s at 60 Hz.
pub const RING: usize = 64;
/// Snapshot rates accepted (Hz).
pub const MIN_SNAPSHOT_HZ: u32 = 10;
pub const MAX_SNAPSHOT_HZ: u32 = 60;
/// Players of a snapshot game: the server's and the client's.
pub const PLAYERS: usize = 2;
/// The client's player index (player 2): its inputs ride in that slot of lockstep's input packet.
pub const CLIENT: usize = 1;

/// One snapshot as the server sent it.
#[derive(Clone, Debug, Default)]
pub struct SentSnapshot {
    pub sequence: Option<u32>,
    pub step: u32,
    pub quantized: Vec<QuantizedState>,
    pub raw: Vec<BodyState>,
}

/// What the server counted.
#[derive(Clone, Debug, Default)]
pub struct ServerStats {
    pub steps: u64,
    pub step_cpu_s: f64,
    pub snapshots: u64,
    pub slices: u64,
    pub delta_snapshots: u64,
    pub packets_refused: u64,
}

pub struct SnapshotServer {
    world: World,
    game: CubeGame,
    compressed: bool,
    snapshot_hz: u32,
    ring: Vec<SentSnapshot>,
    next_sequence: u32,
    acked: Option<u32>,
    /// Player 2's newest input step received, and that input.
    remote_step: Option<u64>,
    remote_input: CubeInput,
    slices: Vec<(u32, u32)>,
    packet: ClientPacket,
    pub stats: ServerStats,
}

impl SnapshotServer {
    pub fn new(mut world: World, compressed: bool, snapshot_hz: u32) -> Result<Self, PhysicsError> {
        let game = CubeGame::new(&mut world, PLAYERS)?;
        let n = world.body_count();
        let entry = SentSnapshot {
            sequence: None,
            step: 0,
            quantized: vec![QuantizedState::default(); n],
            raw: vec![super::packet::placeholder_state(); n],
        };
        Ok(Self {
            world,
            game,
            compressed,
            snapshot_hz: snapshot_hz.clamp(MIN_SNAPSHOT_HZ, MAX_SNAPSHOT_HZ),
            ring: vec![entry; RING],
            next_sequence: 0,
            acked: None,
            remote_step: None,
            remote_input: CubeInput::NONE,
            slices: Vec::with_capacity(MAX_SLICES as usize),
            packet: ClientPacket {
                snapshot_ack: None,
                inputs: InputPacket::with_capacity(),
            },
            stats: ServerStats::default(),
        })
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    pub fn game(&self) -> &CubeGame {
        &self.game
    }

    pub fn steps(&self) -> u64 {
        self.stats.steps
    }

    /// The snapshot sent as `sequence`, if still kept.
    pub fn sent(&self, sequence: u32) -> Option<&SentSnapshot> {
        let e = &self.ring[sequence as usize % RING];
        (e.sequence == Some(sequence)).then_some(e)
    }

    /// Player 2's newest input step received: the one the next step applies (`None`: none yet).
    pub fn remote_step(&self) -> Option<u64> {
        self.remote_step
    }

    /// One step with player 1's `input` and player 2's newest; true when a snapshot is due after it (the rate's
    /// share of 90 Hz steps, spread evenly: 30 Hz every 3rd step, 60 Hz two of every three).
    pub fn step(&mut self, input: CubeInput) -> Result<bool, PhysicsError> {
        let start = Instant::now();
        self.game.step(&mut self.world, &[input, self.remote_input])?;
        self.stats.step_cpu_s += start.elapsed().as_secs_f64();
        self.stats.steps += 1;
        let (k, hz) = (self.stats.steps, u64::from(self.snapshot_hz));
        Ok(k * hz / STEP_HZ as u64 > (k - 1) * hz / STEP_HZ as u64)
    }

    /// Takes a snapshot of the world now and writes its slices, handing each to `send`.
    pub fn send_snapshot(&mut self, buf: &mut [u8], mut send: impl FnMut(&[u8])) -> Result<(), SnapshotError> {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let step = self.stats.steps as u32;
        let i = sequence as usize % RING;
        {
            let e = &mut self.ring[i];
            e.sequence = Some(sequence);
            e.step = step;
            for b in 0..self.world.body_count() {
                let s = self
                    .world
                    .state(BodyId(b as u32))
                    .map_err(|_| SnapshotError::TooManySlices)?;
                e.raw[b] = s;
                e.quantized[b] = quantize_state(&s);
            }
        }
        let baseline = if self.compressed {
            self.acked.filter(|&a| self.sent(a).is_some() && a != sequence)
        } else {
            None
        };
        self.plan_slices(i, baseline)?;
        self.stats.snapshots += 1;
        self.stats.delta_snapshots += u64::from(baseline.is_some());
        let n = self.world.body_count() as u32;
        for (index, &(first, bodies)) in self.slices.iter().enumerate() {
            let mut header = SliceHeader {
                compressed: self.compressed,
                sequence,
                step,
                input_ack: self.remote_step.map(|s| s as u32),
                body_count: n,
                slice_index: index as u32,
                slice_count: self.slices.len() as u32,
                first_body: first,
                bodies,
                baseline,
            };
            let range = header.range();
            let mut w = WriteStream::new(buf);
            header.serialize(&mut w, n)?;
            // The entry is taken out of the ring while it is written, so the baseline can be read beside it.
            let mut quantized = std::mem::take(&mut self.ring[i].quantized);
            let mut raw = std::mem::take(&mut self.ring[i].raw);
            let written = if self.compressed {
                let base = baseline.map(|b| &self.ring[b as usize % RING].quantized[range.clone()]);
                serialize_compressed(&mut w, &mut quantized[range.clone()], base)
            } else {
                serialize_raw(&mut w, &mut raw[range])
            };
            self.ring[i].quantized = quantized;
            self.ring[i].raw = raw;
            written?;
            let len = w.finish()?;
            self.stats.slices += 1;
            send(&buf[..len]);
        }
        Ok(())
    }

    /// Splits the bodies into slices that each fit one datagram.
    fn plan_slices(&mut self, i: usize, baseline: Option<u32>) -> Result<(), SnapshotError> {
        let budget = (MAX_PAYLOAD_BYTES - 1) * 8 - SLICE_HEADER_MAX_BITS;
        self.slices.clear();
        let e = &self.ring[i];
        let base = baseline.map(|b| &self.ring[b as usize % RING].quantized);
        let (mut first, mut bits) = (0u32, 0usize);
        for (b, q) in e.quantized.iter().enumerate() {
            let cost = if self.compressed {
                let changed = base.is_none_or(|base| base[b] != *q);
                let full = if q.at_rest {
                    STATE_BITS_AT_REST
                } else {
                    STATE_BITS_AWAKE
                } as usize;
                usize::from(base.is_some()) + if changed { full } else { 0 }
            } else {
                RAW_BODY_BITS
            };
            if bits + cost > budget {
                self.slices.push((first, b as u32 - first));
                (first, bits) = (b as u32, 0);
            }
            bits += cost;
        }
        self.slices.push((first, e.quantized.len() as u32 - first));
        if self.slices.len() > MAX_SLICES as usize {
            return Err(SnapshotError::TooManySlices);
        }
        Ok(())
    }

    /// A packet from player 2: its snapshot ack (the baseline from now on) and its inputs.
    pub fn read_packet(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        let mut r = ReadStream::new(bytes);
        let result = self.packet.serialize(&mut r).and_then(|_| r.finish());
        if let Err(e) = result {
            self.stats.packets_refused += 1;
            return Err(e.into());
        }
        let p = &self.packet.inputs;
        if p.acks.iter().any(Option::is_some) || (0..MAX_PLAYERS).any(|q| q != CLIENT && !p.inputs[q].is_empty()) {
            // Only player 2's own inputs travel here, and nothing is acked: refused whole.
            self.stats.packets_refused += 1;
            return Err(SnapshotError::Stream(tumble_net::SerializeError::ValueOutOfRange));
        }
        if let Some(a) = self.packet.snapshot_ack {
            if a < self.next_sequence && self.acked.is_none_or(|old| a > old) {
                self.acked = Some(a);
            }
        }
        let p = &self.packet.inputs;
        if let Some(&last) = p.inputs[CLIENT].last() {
            let reference = self.remote_step.unwrap_or(u64::from(p.first_step[CLIENT]));
            if let Some(first) = unwrap_step(p.first_step[CLIENT], reference) {
                let newest = first + p.inputs[CLIENT].len() as u64 - 1;
                if self.remote_step.is_none_or(|s| newest > s) {
                    self.remote_step = Some(newest);
                    self.remote_input = last;
                }
            }
        }
        Ok(())
    }
}
