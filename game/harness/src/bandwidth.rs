//! What each stage of the state encoding saves, measured on one recorded loopback run: the harness records, per
//! packet, every cube's state and the updates the sender chose with the baselines they were coded against; the
//! stages then price the same run as if only the techniques up to them existed:
//!
//! 1. **absolute only**: every cube in every packet, full state with velocities, no ids (cubes in id order);
//! 2. **+ at-rest bit**: resting cubes without velocities;
//! 3. **+ priority**: only the cubes the priority accumulator chose, with their ids, still absolute;
//! 4. **+ delta**: those updates against their acked baselines (not changed, delta or absolute);
//! 5. **+ prediction**: also predicted and prediction error: the bit packer's actual format;
//! 6. **+ entropy coding**: the range-coded packets the run actually sent.
//!
//! Every stage pays the same per-datagram overhead (IP/UDP and transport headers); stages 1 and 2 need several
//! datagrams a step once a step's state passes the largest payload.

use serde_json::{json, Value};
use tumble_net::packet::{CONNECTED_HEADER_BYTES, MAX_PAYLOAD_BYTES};
use tumble_net::{Stream, WriteStream};

use crate::loopback::IP_UDP_HEADER_BYTES;
use tumble_game::sync::codec::cube_state::cube_id_bits;
use tumble_game::sync::codec::delta::{make_update_with, serialize_update};
use tumble_game::sync::codec::quantize::{QuantizedState, AT_REST_BITS, STATE_BITS_AT_REST, STATE_BITS_AWAKE};
use tumble_game::sync::codec::state_packet::{MAX_UPDATES_PER_PACKET, STEP_BITS};

/// One update as the sender chose it: the cube, its state, and the acked baseline (state, age) it had.
#[derive(Clone, Copy, Debug)]
pub struct RecordedUpdate {
    pub id: u32,
    pub state: QuantizedState,
    pub baseline: Option<(QuantizedState, u32)>,
}

/// One step's packet.
#[derive(Clone, Debug, Default)]
pub struct RecordedPacket {
    /// Bits of every cube's full state, velocities always (stage 1), and with the at-rest bit (stage 2).
    pub all_cubes_absolute_bits: u64,
    pub all_cubes_rest_bit_bits: u64,
    pub updates: Vec<RecordedUpdate>,
    /// The packet body as actually sent.
    pub sent_body_bytes: usize,
}

/// A run's packets, in order.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    pub cube_count: u32,
    pub seconds: f64,
    pub packets: Vec<RecordedPacket>,
}

/// Bits of one cube's state in the stages that send every cube.
pub fn all_cubes_bits(state: &QuantizedState) -> (u64, u64) {
    let with_rest_bit = if state.at_rest {
        STATE_BITS_AT_REST
    } else {
        STATE_BITS_AWAKE
    };
    (u64::from(STATE_BITS_AWAKE - AT_REST_BITS), u64::from(with_rest_bit))
}

/// One stage's price.
#[derive(Clone, Debug, PartialEq)]
pub struct StageCost {
    pub stage: &'static str,
    pub kbps: f64,
    pub datagrams: u64,
    /// Body bits per cube update (headers excluded).
    pub bits_per_update: f64,
}

pub const STAGES: [&str; 6] = [
    "absolute only",
    "+ at-rest bit",
    "+ priority",
    "+ delta",
    "+ prediction",
    "+ entropy coding",
];

/// Bits of one update (without its id) as the bit packer writes it, with or without the prediction encodings.
fn update_bits(update: &RecordedUpdate, allow_prediction: bool) -> u64 {
    let mut delta = make_update_with(
        &update.state,
        update.baseline.as_ref().map(|(b, a)| (b, *a)),
        allow_prediction,
    );
    let mut scratch = [0u8; 64];
    let mut w = WriteStream::new(&mut scratch);
    let base = update.baseline.map(|(b, _)| b);
    // The update was made for this baseline, so it always writes.
    match serialize_update(&mut w, &mut delta, |_| base) {
        Ok(()) => w.bits_processed() as u64,
        Err(_) => u64::MAX / 4,
    }
}

/// Prices `recording` at every stage, in [`STAGES`] order.
pub fn stage_costs(recording: &Recording) -> Vec<StageCost> {
    let id_bits = u64::from(cube_id_bits(recording.cube_count));
    let header_bits = u64::from(STEP_BITS)
        + u64::from(tumble_net::serialize::bits_required(u64::from(
            recording.cube_count.min(MAX_UPDATES_PER_PACKET),
        )));
    let mut totals = [(0u64, 0u64); 6]; // (wire bytes, datagrams) per stage
    let mut body_bits = [0u64; 6];
    let mut updates = 0u64;
    let mut cubes = 0u64;
    for p in &recording.packets {
        let n = p.updates.len() as u64;
        updates += n;
        cubes += u64::from(recording.cube_count);
        let priority = p.updates.iter().map(|u| {
            let (_, rest_bit) = all_cubes_bits(&u.state);
            id_bits + rest_bit
        });
        let bits = [
            u64::from(STEP_BITS) + p.all_cubes_absolute_bits,
            u64::from(STEP_BITS) + p.all_cubes_rest_bit_bits,
            header_bits + priority.sum::<u64>(),
            header_bits + p.updates.iter().map(|u| id_bits + update_bits(u, false)).sum::<u64>(),
            header_bits + p.updates.iter().map(|u| id_bits + update_bits(u, true)).sum::<u64>(),
            p.sent_body_bytes as u64 * 8,
        ];
        for (stage, &b) in bits.iter().enumerate() {
            let bytes = b.div_ceil(8);
            let datagrams = bytes.div_ceil(MAX_PAYLOAD_BYTES as u64).max(1);
            totals[stage].0 += bytes + datagrams * (IP_UDP_HEADER_BYTES + CONNECTED_HEADER_BYTES) as u64;
            totals[stage].1 += datagrams;
            body_bits[stage] += b;
        }
    }
    let seconds = recording.seconds.max(f64::MIN_POSITIVE);
    STAGES
        .iter()
        .enumerate()
        .map(|(stage, &name)| {
            // The first two stages send every cube; the others the chosen updates.
            let per = if stage < 2 { cubes } else { updates };
            StageCost {
                stage: name,
                kbps: totals[stage].0 as f64 * 8.0 / 1000.0 / seconds,
                datagrams: totals[stage].1,
                bits_per_update: body_bits[stage] as f64 / per.max(1) as f64,
            }
        })
        .collect()
}

/// The table as JSON: one object per stage.
pub fn stage_costs_json(costs: &[StageCost]) -> Value {
    Value::Array(
        costs
            .iter()
            .map(|c| {
                json!({
                    "stage": c.stage,
                    "kbps": c.kbps,
                    "datagrams": c.datagrams,
                    "bits_per_update": c.bits_per_update,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loopback::{run_loopback_recorded, LoopbackConfig};
    use std::path::Path;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::load_scene;
    use tumble_game::run_settings::RunSettings;

    #[test]
    fn each_stage_costs_less_than_the_one_before() {
        let scene =
            load_scene(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/table64.toml")).unwrap();
        let config = LoopbackConfig {
            run: RunSettings::link(12.0, 50.0, 0.0, 5.0),
            throw_every_s: Some(0.5),
            ..LoopbackConfig::default()
        };
        let mut recording = Recording::default();
        let report = run_loopback_recorded(
            &config,
            scene.build_world(WorldConfig::default()).unwrap(),
            scene.build_world(WorldConfig::default()).unwrap(),
            Some(&mut recording),
        )
        .unwrap();
        assert_eq!(recording.packets.len() as u64, report.packets_sent);
        let costs = stage_costs(&recording);
        assert_eq!(costs.len(), STAGES.len());
        for pair in costs.windows(2) {
            assert!(pair[1].kbps < pair[0].kbps, "{pair:?}");
        }
        // The last stage is what the run put on the wire.
        assert!(
            (costs[5].kbps - report.kbps_mean).abs() < 0.5,
            "{costs:?} vs {}",
            report.kbps_mean
        );
    }
}
