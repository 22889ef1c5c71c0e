//! The non-authority side of one connection: reads state packets, keeps every received state as a possible
//! baseline, and snaps each cube to the newest state received for it. A malformed packet changes nothing and is
//! counted.

use tumble_engine::physics::{BodyId, World};

use crate::sync::codec::delta::Encoding;
use crate::sync::codec::quantize::{dequantize_state, QuantizedState};
use crate::sync::codec::state_packet::{read_entropy_state_packet, read_state_packet, PacketCoding};
use crate::sync::link::baseline::ReceivedStates;
use crate::sync::link::sender::SyncError;

/// Receiver state for one connection. Cube ids are body ids.
#[derive(Debug)]
pub struct Receiver {
    cube_count: u32,
    received: ReceivedStates,
    /// The newest step read so far (on this receiver's own scale: see `FIRST_STEP_ORIGIN`); `None` before the first.
    newest_step: Option<u64>,
    /// Per cube, the step of the state last applied (older ones arriving late are kept as baselines only).
    applied_step: Vec<Option<u64>>,
    updates: Vec<(u32, QuantizedState, Encoding)>,
    /// The step of the last packet read.
    last_step: u64,
    /// Packets refused as malformed.
    pub rejected_packets: u64,
    /// How packets are coded; the sender must use the same.
    pub coding: PacketCoding,
}

impl Receiver {
    /// Makes `world` the non-authority side for every cube: its own rest detection is turned off, so a cube there
    /// rests only when a received state says it does, at the authority's resting pose (left to itself the copy
    /// would settle a little elsewhere, then be snapped to the authority's pose while at rest: visible jitter); and
    /// every cube is remote, so a resting one is not woken by this side's copy of a moving one (a thrown cube that
    /// arrives here a little off its authority's path would knock a stack the authority has at rest: jitter of
    /// centimetres, until the authority's state put it back). What moves a resting cube here is its authority's
    /// word.
    pub fn follow_authority_rest(world: &mut World) -> Result<(), SyncError> {
        for i in 0..world.body_count() as u32 {
            world.set_rest_detection(BodyId(i), false)?;
            world.set_remote(BodyId(i), true)?;
        }
        Ok(())
    }

    pub fn new(cube_count: usize) -> Self {
        Self {
            cube_count: cube_count as u32,
            received: ReceivedStates::new(cube_count),
            newest_step: None,
            applied_step: vec![None; cube_count],
            updates: Vec::with_capacity(cube_count),
            last_step: 0,
            rejected_packets: 0,
            coding: PacketCoding::default(),
        }
    }

    /// Reads one packet and applies it to `world`. Returns the number of cubes snapped.
    pub fn receive(&mut self, bytes: &[u8], world: &mut World) -> Result<usize, SyncError> {
        self.read(bytes)?;
        let mut applied = 0;
        for i in 0..self.updates.len() {
            if let Some((id, state)) = self.take_fresh(i) {
                apply_state(world, id, &state)?;
                applied += 1;
            }
        }
        Ok(applied)
    }

    /// Reads one packet whole (or refuses it and counts it), keeping every state it carries as a baseline. The
    /// updates are then at `0..update_count()` for [`Receiver::take_fresh`]; nothing is applied.
    pub fn read(&mut self, bytes: &[u8]) -> Result<u64, SyncError> {
        let read = match self.coding {
            PacketCoding::BitPacked => read_state_packet,
            PacketCoding::Entropy => read_entropy_state_packet,
        };
        let step = match read(
            bytes,
            self.cube_count,
            self.newest_step,
            &self.received,
            &mut self.updates,
        ) {
            Ok(step) => step,
            Err(e) => {
                self.rejected_packets += 1;
                return Err(e.into());
            }
        };
        self.newest_step = Some(self.newest_step.map_or(step, |n| n.max(step)));
        for &(id, state, _) in &self.updates {
            self.received.insert(id, step, state);
        }
        self.last_step = step;
        Ok(step)
    }

    /// Updates the last [`Receiver::read`] produced.
    pub fn update_count(&self) -> usize {
        self.updates.len()
    }

    /// Update `i` of the last read packet, if it is newer than anything applied to its cube; marks it applied.
    /// (An older state arriving late is a baseline only.)
    pub fn take_fresh(&mut self, i: usize) -> Option<(BodyId, QuantizedState)> {
        let (id, state, _) = *self.updates.get(i)?;
        let slot = &mut self.applied_step[id as usize];
        if slot.is_none_or(|s| s < self.last_step) {
            *slot = Some(self.last_step);
            Some((BodyId(id), state))
        } else {
            None
        }
    }
}

/// Snaps cube `id` of `world` to a received state, at rest when the state says so. A resting state is where its
/// authority rests the cube, to the quantum, and the copy rests there from now on. (A resting copy moved to a new
/// resting pose used to be applied awake until a second resting state confirmed it: with nothing of this side's own
/// touching it, the solver turned the waiting copy by a few microradians a step, enough to cross a rotation quantum
/// and back, a tenth of a millimetre drawn at its corners while its authority had it still.)
pub fn apply_state(world: &mut World, id: BodyId, state: &QuantizedState) -> Result<(), SyncError> {
    let body = dequantize_state(state);
    world.set_state(id, &body)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::quantize::{quantize_state, quantize_world};
    use crate::sync::link::sender::Sender;
    use glam::Vec3;
    use tumble_engine::physics::{BodyDesc, BodyState, WorldConfig};

    fn resting_cube_world(y: f32) -> World {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let id = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, y, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let s = world.state(id).unwrap();
        world.set_state(id, &BodyState { at_rest: true, ..s }).unwrap();
        world
    }

    #[test]
    fn a_resting_cube_moved_by_its_authority_rests_where_its_authority_rests_it() {
        let id = BodyId(0);
        let mut authority = resting_cube_world(0.5);
        let mut remote = resting_cube_world(0.5);
        Receiver::follow_authority_rest(&mut remote).unwrap();
        let (mut sender, mut receiver) = (Sender::new(1), Receiver::new(1));
        let mut buf = [0u8; 64];
        // The authority's resting cube moves a millimetre between two packets, resting before and after.
        let moved = BodyState {
            position: Vec3::new(0.0, 0.501, 0.0),
            ..authority.state(id).unwrap()
        };
        authority.set_state(id, &moved).unwrap();
        let n = sender.write_packet(&authority, 1, 1, &mut buf).unwrap();
        receiver.receive(&buf[..n], &mut remote).unwrap();
        let got = quantize_state(&remote.state(id).unwrap());
        assert_eq!(got.position, quantize_state(&moved).position);
        assert!(got.at_rest, "at rest where its authority rests it");
        // And it stays there, to the quantum, whatever this side's solver would do with it.
        for _ in 0..90 {
            remote.step();
            quantize_world(&mut remote).unwrap();
        }
        assert_eq!(quantize_state(&remote.state(id).unwrap()), got);
    }

    #[test]
    fn a_receiver_that_starts_late_applies_from_its_first_packet() {
        // A guest joining six minutes in: the sender's step is past half the 16-bit wrap. Every packet must be
        // applied, deltas included (the receiver used to unwrap the first step against 0 and apply nothing).
        let id = BodyId(0);
        let mut authority = resting_cube_world(0.5);
        let mut remote = resting_cube_world(0.5);
        Receiver::follow_authority_rest(&mut remote).unwrap();
        let (mut sender, mut receiver) = (Sender::new(1), Receiver::new(1));
        let mut buf = [0u8; 64];
        for k in 0..20u64 {
            let step = 40_000 + k;
            let moved = BodyState {
                position: Vec3::new(0.001 * k as f32, 0.5, 0.0),
                ..authority.state(id).unwrap()
            };
            authority.set_state(id, &moved).unwrap();
            let n = sender.write_packet(&authority, step, step as u16, &mut buf).unwrap();
            assert_eq!(
                receiver.receive(&buf[..n], &mut remote).unwrap(),
                1,
                "packet for step {step}"
            );
            sender.on_acked(step as u16);
            let got = quantize_state(&remote.state(id).unwrap());
            assert_eq!(got.position, quantize_state(&moved).position);
        }
    }
}
