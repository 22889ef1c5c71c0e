//! The non-authority side of one connection: reads state packets, keeps every received state as a possible
//! baseline, and snaps each cube to the newest state received for it. A malformed packet changes nothing and is
//! counted.

use tumble_engine::physics::{BodyId, World};

use super::baseline::ReceivedStates;
use super::delta::Encoding;
use super::quantize::{dequantize_state, QuantizedState};
use super::sender::SyncError;
use super::state_packet::read_state_packet;

/// Receiver state for one connection. Cube ids are body ids.
#[derive(Debug)]
pub struct Receiver {
    cube_count: u32,
    received: ReceivedStates,
    newest_step: u64,
    /// Per cube, the step of the state last applied (older ones arriving late are kept as baselines only).
    applied_step: Vec<Option<u64>>,
    updates: Vec<(u32, QuantizedState, Encoding)>,
    /// Packets refused as malformed.
    pub rejected_packets: u64,
}

impl Receiver {
    pub fn new(cube_count: usize) -> Self {
        Self {
            cube_count: cube_count as u32,
            received: ReceivedStates::new(cube_count),
            newest_step: 0,
            applied_step: vec![None; cube_count],
            updates: Vec::with_capacity(cube_count),
            rejected_packets: 0,
        }
    }

    /// Reads one packet and applies it to `world`. Returns the number of cubes snapped.
    pub fn receive(&mut self, bytes: &[u8], world: &mut World) -> Result<usize, SyncError> {
        let step = match read_state_packet(
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
        self.newest_step = self.newest_step.max(step);
        let mut applied = 0;
        for &(id, state, _) in &self.updates {
            self.received.insert(id, step, state);
            let slot = &mut self.applied_step[id as usize];
            if slot.is_none_or(|s| s < step) {
                *slot = Some(step);
                world.set_state(BodyId(id), &dequantize_state(&state))?;
                applied += 1;
            }
        }
        Ok(applied)
    }
}
