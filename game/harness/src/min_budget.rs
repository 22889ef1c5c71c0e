//! The smallest bandwidth budget a state-sync connection can run on. One state packet goes out per step, so every
//! packet must have room for the largest single update the sender may have to write: an awake cube with no usable
//! baseline (absolute: position, rotation, both velocities) and an authority stamp that is not the default, or a
//! delta at the edge of its ranges with the oldest baseline. Below that budget such a cube is never sent, its copy
//! never catches up, and a run would still end "successfully" having moved nothing of it.
//!
//! The sizes are measured with the real packet writers (the smallest buffer each accepts the update into), so they
//! follow any change to the codec; `loopback` refuses a smaller budget at start and `session` can do the same.

use tumble_game::sync::codec::cube_state::{signed_range, MAX_CUBES};
use tumble_game::sync::codec::delta::{Encoding, MAX_BASELINE_AGE_STEPS};
use tumble_game::sync::codec::quantize::{
    quantize_rotation, QuantizedState, ANGULAR_VELOCITY_BITS, LINEAR_VELOCITY_BITS, POSITION_BITS,
};
use tumble_game::sync::codec::stamp::{AuthorityStamp, MAX_AUTHORITY};
use tumble_game::sync::codec::state_packet::{write_entropy_state_packet, write_state_packet, PacketCoding};
use tumble_game::sync::link::baseline::AckedBaselines;
use tumble_game::sync::link::priority::packet_budget_bytes;

/// A stamp that must travel in full (not the default, largest values).
const FULL_STAMP: AuthorityStamp = AuthorityStamp {
    authority: MAX_AUTHORITY,
    authority_seq: u16::MAX,
    ownership_seq: u16::MAX,
};

/// Largest delta the codec carries per integer (`delta.rs`'s `DELTA_RANGE`, minus a margin so the update is
/// still a delta after rounding): position units, linear and angular velocity units.
const DELTA_EDGE_POSITION: i32 = 2000;
const DELTA_EDGE_VELOCITY: i32 = 1000;
/// Rotation change of the delta candidate (rad): about half the delta range of a smallest-three component.
const DELTA_EDGE_ROTATION_RAD: f32 = 0.04;

/// The awake absolute state with every wide field at its range edge.
fn absolute_candidate() -> QuantizedState {
    let edge = |bits| {
        let (min, max) = signed_range(bits);
        [min, max, min]
    };
    QuantizedState {
        position: edge(POSITION_BITS),
        rotation: quantize_rotation(glam::Quat::from_xyzw(0.1, -0.9, 0.3, 0.2).normalize()),
        linear_velocity: edge(LINEAR_VELOCITY_BITS),
        angular_velocity: edge(ANGULAR_VELOCITY_BITS),
        at_rest: false,
        stamp: FULL_STAMP,
    }
}

/// A baseline and a state that differs from it by nearly the most a delta carries in every field, stamp included.
fn delta_candidate() -> (QuantizedState, QuantizedState) {
    let base_rotation = glam::Quat::from_xyzw(0.1, -0.9, 0.3, 0.2).normalize();
    let base = QuantizedState {
        position: [0; 3],
        rotation: quantize_rotation(base_rotation),
        linear_velocity: [0; 3],
        angular_velocity: [0; 3],
        at_rest: false,
        stamp: AuthorityStamp::DEFAULT,
    };
    let turn = glam::Quat::from_axis_angle(glam::Vec3::ONE.normalize(), DELTA_EDGE_ROTATION_RAD);
    let current = QuantizedState {
        position: [DELTA_EDGE_POSITION, -DELTA_EDGE_POSITION, DELTA_EDGE_POSITION],
        rotation: quantize_rotation(base_rotation * turn),
        linear_velocity: [DELTA_EDGE_VELOCITY, -DELTA_EDGE_VELOCITY, DELTA_EDGE_VELOCITY],
        angular_velocity: [-DELTA_EDGE_VELOCITY, DELTA_EDGE_VELOCITY, -DELTA_EDGE_VELOCITY],
        at_rest: false,
        stamp: FULL_STAMP,
    };
    (base, current)
}

/// Smallest packet body (bytes) that carries one update of `state` for cube `id` against `acked` at `step`, and
/// the encoding the writer chose; `None` if not even `max_body_bytes` does.
fn smallest_body_for(
    state: QuantizedState,
    id: u32,
    cube_count: u32,
    acked: &AckedBaselines,
    step: u64,
    coding: PacketCoding,
    max_body_bytes: usize,
) -> Option<(usize, Encoding)> {
    let states = vec![state; cube_count as usize];
    let mut buf = vec![0u8; max_body_bytes];
    let (mut sent, mut encodings) = (Vec::with_capacity(1), Vec::with_capacity(1));
    let write = match coding {
        PacketCoding::BitPacked => write_state_packet,
        PacketCoding::Entropy => write_entropy_state_packet,
    };
    (1..=max_body_bytes).find_map(|n| {
        write(&mut buf[..n], step, &states, &[id], acked, &mut sent, &mut encodings).ok()?;
        (sent.as_slice() == [id]).then(|| (n, encodings[0]))
    })
}

/// Bytes of state packet body that one update of any cube of a `cube_count`-cube scene may need, at most (the
/// largest of the candidates above, written as the last cube id, whose id costs the most); `None` when even
/// `max_body_bytes` is too small, or the cube count is out of range.
pub fn largest_update_body_bytes(cube_count: u32, coding: PacketCoding, max_body_bytes: usize) -> Option<usize> {
    if cube_count == 0 || cube_count > MAX_CUBES {
        return None;
    }
    let id = cube_count - 1;
    let absolute = smallest_body_for(
        absolute_candidate(),
        id,
        cube_count,
        &AckedBaselines::new(cube_count as usize),
        0,
        coding,
        max_body_bytes,
    )?;
    let (base, current) = delta_candidate();
    let mut acked = AckedBaselines::new(cube_count as usize);
    acked.record_sent(0, 0, &[(id, base)]);
    acked.on_acked(0);
    let delta = smallest_body_for(
        current,
        id,
        cube_count,
        &acked,
        u64::from(MAX_BASELINE_AGE_STEPS),
        coding,
        max_body_bytes,
    )?;
    Some(absolute.0.max(delta.0))
}

/// What a budget has to carry each packet: the body, and the bytes of headers per packet and the cap on a whole
/// packet (both including IP/UDP), as `priority::packet_budget_bytes` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketLimits {
    pub packets_per_s: u32,
    pub overhead_bytes: u32,
    pub max_packet_bytes: u32,
}

/// The smallest budget (kbps, headers included) whose packets carry `body_bytes` of state, or `None` when no
/// budget does (the body is larger than a packet may be).
pub fn min_kbps_budget(body_bytes: usize, limits: &PacketLimits) -> Option<u32> {
    let budget = |kbps| {
        packet_budget_bytes(
            kbps,
            limits.packets_per_s,
            limits.overhead_bytes,
            limits.max_packet_bytes,
        ) as usize
    };
    // The budget grows with the rate until a packet reaches its cap: past that no rate helps.
    let cap_kbps = (u64::from(limits.max_packet_bytes) * 8 * u64::from(limits.packets_per_s.max(1))).div_ceil(1000);
    (1..=cap_kbps as u32 + 1).find(|&k| budget(k) >= body_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};
    use tumble_engine::physics::BodyState;
    use tumble_game::sync::codec::delta::make_update;
    use tumble_game::sync::codec::quantize::quantize_state;

    const MAX_BODY: usize = 1180;

    #[test]
    fn the_largest_update_is_measured_for_both_codings_and_grows_with_the_id_width() {
        // Bit-packed, 64 cubes: header 16 + 7 bits, padding 7; age 8, at-rest 1, position 63, rotation 47,
        // velocities 99, stamp 36, id 6: 290 bits, 37 bytes.
        assert_eq!(
            largest_update_body_bytes(64, PacketCoding::BitPacked, MAX_BODY),
            Some(37)
        );
        // Entropy-coded, the wide fields go at even odds and the packet adds a closing flag and a check byte, and
        // the writer keeps a byte of room for its estimate of the id: 40 bytes.
        assert_eq!(largest_update_body_bytes(64, PacketCoding::Entropy, MAX_BODY), Some(40));
        // 16-bit ids instead of 6, and an 8-bit count: 301 bits, one byte more.
        assert_eq!(
            largest_update_body_bytes(MAX_CUBES, PacketCoding::BitPacked, MAX_BODY),
            Some(38)
        );
        assert_eq!(largest_update_body_bytes(0, PacketCoding::BitPacked, MAX_BODY), None);
        assert_eq!(largest_update_body_bytes(64, PacketCoding::BitPacked, 10), None);
        // The candidates are what they claim to be: a full state, and a delta the writer does not turn absolute.
        let (base, current) = delta_candidate();
        let mut acked = AckedBaselines::new(64);
        acked.record_sent(0, 0, &[(63, base)]);
        acked.on_acked(0);
        let age = u64::from(MAX_BASELINE_AGE_STEPS);
        for coding in [PacketCoding::BitPacked, PacketCoding::Entropy] {
            let empty = AckedBaselines::new(64);
            let absolute = smallest_body_for(absolute_candidate(), 63, 64, &empty, 0, coding, MAX_BODY);
            assert_eq!(absolute.map(|a| a.1), Some(Encoding::Absolute));
            let delta = smallest_body_for(current, 63, 64, &acked, age, coding, MAX_BODY);
            assert_eq!(delta.map(|d| d.1), Some(Encoding::Delta));
        }
    }

    #[test]
    fn no_update_of_random_states_and_baselines_needs_more_than_the_largest() {
        // Random awake and resting states, with and without a recent baseline, random stamps: each alone in a
        // packet of the computed size must go.
        const CUBES: u32 = 64;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for coding in [PacketCoding::BitPacked, PacketCoding::Entropy] {
            let largest = largest_update_body_bytes(CUBES, coding, MAX_BODY).unwrap();
            for _ in 0..400 {
                let mut unit = || (next() % 20_001) as f32 / 10_000.0 - 1.0;
                let body = |unit: &mut dyn FnMut() -> f32, scale: f32| BodyState {
                    position: Vec3::new(unit(), unit(), unit()) * scale * 200.0,
                    rotation: Quat::from_xyzw(unit(), unit(), unit(), unit() + 1.5).normalize(),
                    linear_velocity: Vec3::new(unit(), unit(), unit()) * scale * 30.0,
                    angular_velocity: Vec3::new(unit(), unit(), unit()) * scale * 60.0,
                    at_rest: false,
                };
                let mut base = quantize_state(&body(&mut unit, 1.0));
                let mut current = base;
                let nudge = body(&mut unit, 0.001);
                current.position[0] += (nudge.position.x * 4096.0) as i32;
                current.linear_velocity[1] += (nudge.linear_velocity.y * 1024.0) as i32;
                current.at_rest = next() % 4 == 0;
                if current.at_rest {
                    (current.linear_velocity, current.angular_velocity) = ([0; 3], [0; 3]);
                }
                current.stamp.authority = (next() % 5) as u8;
                current.stamp.authority_seq = next() as u16;
                base.stamp = current.stamp;
                let id = (next() % u64::from(CUBES)) as u32;
                let age = 1 + next() % u64::from(MAX_BASELINE_AGE_STEPS);
                let mut acked = AckedBaselines::new(CUBES as usize);
                if next() % 2 == 0 {
                    acked.record_sent(0, 0, &[(id, base)]);
                    acked.on_acked(0);
                }
                let (n, encoding) = smallest_body_for(current, id, CUBES, &acked, age, coding, MAX_BODY).unwrap();
                assert!(n <= largest, "{coding:?}: {encoding:?} needs {n} > {largest}");
                assert_eq!(encoding, make_update(&current, acked.baseline(id, age)).encoding);
            }
        }
    }

    #[test]
    fn the_smallest_budget_is_exact() {
        // 90 packets a second, 48 bytes of headers: 37 bytes of body need 85 bytes a packet, 61.2 kbps; 62 kbps
        // gives 86 bytes (38 of body), 61 only 84 (36).
        let limits = PacketLimits {
            packets_per_s: 90,
            overhead_bytes: 48,
            max_packet_bytes: 1228,
        };
        assert_eq!(min_kbps_budget(37, &limits), Some(62));
        assert!(packet_budget_bytes(62, 90, 48, 1228) >= 37);
        assert!(packet_budget_bytes(61, 90, 48, 1228) < 37);
        assert_eq!(min_kbps_budget(1180, &limits), Some(885));
        assert_eq!(min_kbps_budget(1181, &limits), None);
    }
}
