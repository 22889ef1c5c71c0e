//! The state packet body: which step it describes, then as many cube updates as the budget allows, in priority
//! order, each delta-encoded against the sender's acked baseline. The transport's header (sequence, acks) comes
//! before it and is not this module's business.
//!
//! A packet is read whole before anything is applied: any error (unknown cube, bad value, missing baseline, a cube
//! twice, truncation) rejects the entire packet, which the caller counts and drops.

use thiserror::Error;
use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

use crate::sync::codec::cube_state::{cube_id_bits, serialize_cube_id, CubeStateError, MAX_CUBES};
use crate::sync::codec::delta::{make_update, serialize_update, DeltaError, DeltaUpdate, Encoding};
use crate::sync::codec::entropy_stream::{context, EntropyReadStream, EntropyWriteStream};
use crate::sync::codec::quantize::QuantizedState;
use crate::sync::link::baseline::{AckedBaselines, ReceivedStates};
use crate::sync::link::priority::fill_packet;

/// Bits of the step number on the wire; the receiver restores the rest from the newest step it has seen.
pub const STEP_BITS: u32 = 16;
/// Most cube updates in one packet (the count field's bound).
pub const MAX_UPDATES_PER_PACKET: u32 = 255;

/// How a packet body is coded. Both ends of a connection use the same; the bit packer stays for comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacketCoding {
    /// Every field in its fixed number of bits ([`WriteStream`]).
    BitPacked,
    /// The same fields through the adaptive range coder ([`EntropyWriteStream`]).
    #[default]
    Entropy,
}

/// Updates in a row that did not fit after which an entropy-coded packet is closed: each try costs a copy of the
/// coder's models, and by then the packet is full but for a few bits.
const MAX_MISFITS: usize = 8;
/// Bits of the check an entropy-coded packet ends with: a hash of what it carries. A range-coded stream has no
/// spare bits, so a cut or altered one would otherwise decode to values that may all look valid.
const CHECK_BITS: u32 = 8;

/// Folds one update into an FNV-1a hash (the check of an entropy-coded packet).
fn fold_check(hash: &mut u32, id: u32, state: &QuantizedState) {
    let rotation = state.rotation.smallest_three.map(|c| c as i32);
    let stamp = &state.stamp;
    let words = [
        id as i32,
        i32::from(state.rotation.largest),
        i32::from(state.at_rest),
        i32::from(stamp.authority),
        i32::from(stamp.authority_seq),
        i32::from(stamp.ownership_seq),
    ]
    .into_iter()
    .chain(state.position)
    .chain(rotation)
    .chain(state.linear_velocity)
    .chain(state.angular_velocity);
    for w in words {
        for b in w.to_le_bytes() {
            *hash = (*hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
}

const CHECK_SEED: u32 = 0x811c_9dc5;

/// An entropy-coded packet's decoder may read this many zero bytes past the end (the encoder drops trailing
/// zeros, and a range decoder looks four bytes ahead); a stream that wants more is garbage.
const MAX_ZERO_BYTES_PAST_END: usize = 16;

/// Why a state packet was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StatePacketError {
    #[error(transparent)]
    Delta(#[from] DeltaError),
    #[error("cube {0} appears twice in one packet")]
    DuplicateCube(u32),
    #[error("an entropy-coded packet's check byte does not match what it decoded to")]
    CheckMismatch,
}

impl From<SerializeError> for StatePacketError {
    fn from(e: SerializeError) -> Self {
        DeltaError::from(e).into()
    }
}

impl From<CubeStateError> for StatePacketError {
    fn from(e: CubeStateError) -> Self {
        DeltaError::from(e).into()
    }
}

/// The full step whose low [`STEP_BITS`] are `low`, nearest to `reference` (the newest step the receiver knows),
/// so steps survive the 16-bit wrap as long as packets are less than half a wrap (6 minutes at 90 Hz) apart.
pub fn unwrap_step(low: u16, reference: u64) -> u64 {
    const WRAP: i64 = 1 << STEP_BITS;
    let diff = (i64::from(low) - (reference % WRAP as u64) as i64).rem_euclid(WRAP);
    let diff = if diff >= WRAP / 2 { diff - WRAP } else { diff };
    reference.saturating_add_signed(diff)
}

/// Where a receiver that has seen no packet yet puts the first step it reads: the low bits as they are, lifted
/// far from zero. Only differences between steps matter to a receiver (baseline ages, which state is newer), so
/// a guest that joins when the host's step is past half a wrap must not unwrap its first step against 0: that
/// would put it half a wrap in the past, and every later packet would look older than... nothing, or be
/// misordered for minutes.
pub const FIRST_STEP_ORIGIN: u64 = 1 << 32;

/// The full step of a packet whose low bits are `low`, given the newest step this receiver has read (`None`
/// before the first).
pub fn restore_step(low: u16, newest_step: Option<u64>) -> u64 {
    match newest_step {
        Some(newest) => unwrap_step(low, newest),
        None => FIRST_STEP_ORIGIN + u64::from(low),
    }
}

fn count_bits(cube_count: u32) -> u32 {
    tumble_net::serialize::bits_required(u64::from(cube_count.min(MAX_UPDATES_PER_PACKET)))
}

fn serialize_header<S: Stream>(
    s: &mut S,
    step_low: &mut u32,
    count: &mut u32,
    cube_count: u32,
) -> Result<(), SerializeError> {
    s.serialize_bits(step_low, STEP_BITS)?;
    s.serialize_uint(count, cube_count.min(MAX_UPDATES_PER_PACKET))
}

/// Bits one update costs as written (id included), measured by writing it to a scratch buffer.
fn update_bits(id: u32, update: &DeltaUpdate, baseline: Option<QuantizedState>, cube_count: u32) -> Option<usize> {
    let mut scratch = [0u8; 64];
    let mut w = WriteStream::new(&mut scratch);
    serialize_cube_id(&mut w, &mut { id }, cube_count).ok()?;
    serialize_update(&mut w, &mut { *update }, |_| baseline).ok()?;
    Some(w.bits_processed())
}

/// Writes the state packet for `step` into `buf`: cubes from `order` (highest priority first) while they fit in
/// `buf`, each against its acked baseline in `acked`. `states[id]` is each cube's current quantized state. Fills
/// `sent` with the ids written and `encodings` with their encodings (both cleared first); returns the bytes used.
pub fn write_state_packet(
    buf: &mut [u8],
    step: u64,
    states: &[QuantizedState],
    order: &[u32],
    acked: &AckedBaselines,
    sent: &mut Vec<u32>,
    encodings: &mut Vec<Encoding>,
) -> Result<usize, StatePacketError> {
    if states.is_empty() || states.len() > MAX_CUBES as usize {
        return Err(CubeStateError::BadCubeCount(states.len().min(u32::MAX as usize) as u32).into());
    }
    let cube_count = states.len() as u32;
    let header_bits = STEP_BITS as usize + count_bits(cube_count) as usize;
    // Whole bytes only: the final padding must fit too.
    let budget_bits = (buf.len() * 8).saturating_sub(header_bits + 7);
    let update_of = |id: u32| make_update(&states[id as usize], acked.baseline(id, step));
    // Ids past the scene cost more than any budget, so they are never picked.
    const NEVER_FITS_BITS: usize = usize::MAX / 2;
    let bits_of = |id: u32| {
        if id >= cube_count {
            return NEVER_FITS_BITS;
        }
        let update = update_of(id);
        let baseline = acked.baseline(id, step).map(|(b, _)| *b);
        update_bits(id, &update, baseline, cube_count).unwrap_or(NEVER_FITS_BITS)
    };
    fill_packet(order, budget_bits, bits_of, sent);
    sent.truncate(MAX_UPDATES_PER_PACKET as usize);

    let mut w = WriteStream::new(buf);
    let (mut step_low, mut count) = (step as u32 & ((1 << STEP_BITS) - 1), sent.len() as u32);
    serialize_header(&mut w, &mut step_low, &mut count, cube_count)?;
    encodings.clear();
    for &id in sent.iter() {
        let mut update = update_of(id);
        let baseline = acked.baseline(id, step).map(|(b, _)| *b);
        serialize_cube_id(&mut w, &mut { id }, cube_count)?;
        serialize_update(&mut w, &mut update, |_| baseline)?;
        encodings.push(update.encoding);
    }
    Ok(w.finish()?)
}

/// Reads a state packet. `newest_step` is the newest step this receiver has seen (to restore the full step);
/// baselines come from `received`. On success returns the packet's step with `updates` holding (cube, state,
/// encoding) in packet order; on error `updates` is cleared and nothing should change.
pub fn read_state_packet(
    bytes: &[u8],
    cube_count: u32,
    newest_step: Option<u64>,
    received: &ReceivedStates,
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
) -> Result<u64, StatePacketError> {
    whole_or_nothing(updates, |u| read_into(bytes, cube_count, newest_step, received, u))
}

/// Runs a packet reader on a cleared `updates`, and clears it again if the packet is refused: a packet is taken
/// whole or not at all.
fn whole_or_nothing(
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
    read: impl FnOnce(&mut Vec<(u32, QuantizedState, Encoding)>) -> Result<u64, StatePacketError>,
) -> Result<u64, StatePacketError> {
    updates.clear();
    let result = read(updates);
    if result.is_err() {
        updates.clear();
    }
    result
}

fn read_into(
    bytes: &[u8],
    cube_count: u32,
    newest_step: Option<u64>,
    received: &ReceivedStates,
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
) -> Result<u64, StatePacketError> {
    if cube_count == 0 || cube_count > MAX_CUBES {
        return Err(CubeStateError::BadCubeCount(cube_count).into());
    }
    let mut r = ReadStream::new(bytes);
    let (mut step_low, mut count) = (0, 0);
    serialize_header(&mut r, &mut step_low, &mut count, cube_count)?;
    let step = restore_step(step_low as u16, newest_step);
    // Each update takes at least the id and two bits: a count beyond what the bytes can hold is garbage.
    if count as usize * (cube_id_bits(cube_count) as usize + 2) > r.bits_left() {
        return Err(SerializeError::ReadPastEnd.into());
    }
    for _ in 0..count {
        read_update(&mut r, cube_count, step, received, updates)?;
    }
    r.finish()?;
    Ok(step)
}

/// Reads one update (id, then the update against the receiver's baselines) onto `updates`.
fn read_update<S: Stream>(
    r: &mut S,
    cube_count: u32,
    step: u64,
    received: &ReceivedStates,
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
) -> Result<(), StatePacketError> {
    let mut id = 0;
    serialize_cube_id(r, &mut id, cube_count)?;
    read_update_after_id(r, id, step, received, updates)
}

/// Reads cube `id`'s update onto `updates`.
fn read_update_after_id<S: Stream>(
    r: &mut S,
    id: u32,
    step: u64,
    received: &ReceivedStates,
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
) -> Result<(), StatePacketError> {
    if updates.iter().any(|&(seen, _, _)| seen == id) {
        return Err(StatePacketError::DuplicateCube(id));
    }
    let mut update = DeltaUpdate {
        state: QuantizedState {
            position: [0; 3],
            rotation: crate::sync::codec::quantize::QuantizedRotation::IDENTITY,
            linear_velocity: [0; 3],
            angular_velocity: [0; 3],
            at_rest: true,
            stamp: crate::sync::codec::stamp::AuthorityStamp::DEFAULT,
        },
        encoding: Encoding::Absolute,
        baseline_age: 0,
    };
    let baseline_of = |age: u32| step.checked_sub(u64::from(age)).and_then(|s| received.get(id, s));
    serialize_update(r, &mut update, baseline_of)?;
    updates.push((id, update.state, update.encoding));
    Ok(())
}

/// [`write_state_packet`] through the range coder: the step, then per update a "more" flag, the gap from the
/// previous cube id (ids ascend, so gaps are small) and the update, then a closing flag and an 8-bit check.
///
/// Two passes: the first takes cubes in `order` while they fit, sizing each update as coded and the ids by how
/// many bits ascending gaps among that many cubes need (an update that does not fit is taken back out; smaller ones
/// after it may still go); the second writes the chosen cubes in id order, dropping the least urgent should the
/// estimate have been short.
pub fn write_entropy_state_packet(
    buf: &mut [u8],
    step: u64,
    states: &[QuantizedState],
    order: &[u32],
    acked: &AckedBaselines,
    sent: &mut Vec<u32>,
    encodings: &mut Vec<Encoding>,
) -> Result<usize, StatePacketError> {
    if states.is_empty() || states.len() > MAX_CUBES as usize {
        return Err(CubeStateError::BadCubeCount(states.len().min(u32::MAX as usize) as u32).into());
    }
    choose_entropy_updates(buf, step, states, order, acked, sent)?;
    loop {
        sent.sort_unstable();
        match write_entropy_updates(buf, step, states, acked, sent, encodings) {
            Err(StatePacketError::Delta(DeltaError::CubeState(CubeStateError::Stream(SerializeError::Overflow))))
                if !sent.is_empty() =>
            {
                // The least urgent is the one latest in `order`.
                let rank = |id: &u32| order.iter().position(|o| o == id);
                let least = (0..sent.len()).max_by_key(|&k| rank(&sent[k])).unwrap_or(0);
                sent.remove(least);
            }
            result => return result,
        }
    }
}

/// Coding cost of each cube id beyond the information in the gaps (the length model learning), in bits.
const ID_OVERHEAD_BITS: f64 = 0.5;

/// First pass of [`write_entropy_state_packet`]: fills `sent` in priority order (scribbling on `buf`).
fn choose_entropy_updates(
    buf: &mut [u8],
    step: u64,
    states: &[QuantizedState],
    order: &[u32],
    acked: &AckedBaselines,
    sent: &mut Vec<u32>,
) -> Result<(), StatePacketError> {
    let cube_count = states.len() as u32;
    sent.clear();
    let mut w = EntropyWriteStream::new(buf);
    w.serialize_bits(&mut (step as u32 & ((1 << STEP_BITS) - 1)), STEP_BITS)?;
    // log2 of the ways to choose the ids so far: what ascending gaps cost at best.
    let mut id_bits = 0.0f64;
    let mut misfits = 0;
    for &id in order {
        if sent.len() == MAX_UPDATES_PER_PACKET as usize || misfits == MAX_MISFITS {
            break;
        }
        if id >= cube_count {
            continue;
        }
        let k = sent.len() as f64;
        let more_id_bits = id_bits + ((f64::from(cube_count) - k) / (k + 1.0)).log2() + ID_OVERHEAD_BITS;
        let saved = w.save();
        let baseline = acked.baseline(id, step);
        let mut update = make_update(&states[id as usize], baseline);
        let base = baseline.map(|(b, _)| *b);
        let wrote = serialize_update(&mut w, &mut update, |_| base);
        // The ids, the closing flag and the check need room too.
        let closing_bytes = 1 + CHECK_BITS as usize / 8;
        if wrote.is_err() || w.bytes_bound() + (more_id_bits / 8.0).ceil() as usize + closing_bytes > w.capacity() {
            w.restore(&saved);
            misfits += 1;
            continue;
        }
        id_bits = more_id_bits;
        sent.push(id);
    }
    Ok(())
}

/// Second pass: writes `sent` (ascending) for real; `encodings` gets their encodings.
fn write_entropy_updates(
    buf: &mut [u8],
    step: u64,
    states: &[QuantizedState],
    acked: &AckedBaselines,
    sent: &[u32],
    encodings: &mut Vec<Encoding>,
) -> Result<usize, StatePacketError> {
    let cube_count = states.len() as u32;
    encodings.clear();
    let mut w = EntropyWriteStream::new(buf);
    let mut step_low = step as u32 & ((1 << STEP_BITS) - 1);
    w.serialize_bits(&mut step_low, STEP_BITS)?;
    let mut check = CHECK_SEED ^ step_low;
    let mut next_id = 0;
    for &id in sent {
        let baseline = acked.baseline(id, step);
        let mut update = make_update(&states[id as usize], baseline);
        let mut more = true;
        w.set_context(context::MORE);
        w.serialize_bool(&mut more)?;
        w.set_context(context::CUBE_ID);
        w.serialize_uint(&mut (id - next_id), cube_count - 1)?;
        next_id = id + 1;
        let base = baseline.map(|(b, _)| *b);
        serialize_update(&mut w, &mut update, |_| base)?;
        fold_check(&mut check, id, &update.state);
        encodings.push(update.encoding);
    }
    let mut more = false;
    w.set_context(context::MORE);
    w.serialize_bool(&mut more)?;
    w.serialize_bits(&mut (check & ((1 << CHECK_BITS) - 1)), CHECK_BITS)?;
    Ok(w.finish()?)
}

/// [`read_state_packet`] for a packet [`write_entropy_state_packet`] wrote. Also refuses a stream whose check does
/// not match, with bytes after its end, or that reads far past it.
pub fn read_entropy_state_packet(
    bytes: &[u8],
    cube_count: u32,
    newest_step: Option<u64>,
    received: &ReceivedStates,
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
) -> Result<u64, StatePacketError> {
    whole_or_nothing(updates, |u| {
        read_entropy_into(bytes, cube_count, newest_step, received, u)
    })
}

fn read_entropy_into(
    bytes: &[u8],
    cube_count: u32,
    newest_step: Option<u64>,
    received: &ReceivedStates,
    updates: &mut Vec<(u32, QuantizedState, Encoding)>,
) -> Result<u64, StatePacketError> {
    if cube_count == 0 || cube_count > MAX_CUBES {
        return Err(CubeStateError::BadCubeCount(cube_count).into());
    }
    let mut r = EntropyReadStream::new(bytes);
    let mut step_low = 0;
    r.serialize_bits(&mut step_low, STEP_BITS)?;
    let step = restore_step(step_low as u16, newest_step);
    let mut check = CHECK_SEED ^ step_low;
    let mut next_id = 0;
    loop {
        let mut more = false;
        r.set_context(context::MORE);
        r.serialize_bool(&mut more)?;
        if !more {
            break;
        }
        if updates.len() == MAX_UPDATES_PER_PACKET as usize
            || r.bits_processed() / 8 > bytes.len() + MAX_ZERO_BYTES_PAST_END
        {
            return Err(SerializeError::ReadPastEnd.into());
        }
        let mut gap = 0;
        r.set_context(context::CUBE_ID);
        r.serialize_uint(&mut gap, cube_count - 1)?;
        let id = next_id + gap;
        if id >= cube_count {
            return Err(CubeStateError::UnknownCube { id, cube_count }.into());
        }
        next_id = id + 1;
        read_update_after_id(&mut r, id, step, received, updates)?;
        if let Some((_, state, _)) = updates.last() {
            fold_check(&mut check, id, state);
        }
    }
    let mut sent_check = 0;
    r.serialize_bits(&mut sent_check, CHECK_BITS)?;
    if sent_check != check & ((1 << CHECK_BITS) - 1) {
        return Err(StatePacketError::CheckMismatch);
    }
    if !r.ended_cleanly() {
        return Err(SerializeError::TrailingBytes.into());
    }
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::predict::predict;
    use crate::sync::codec::quantize::quantize_state;
    use glam::{Quat, Vec3};
    use tumble_engine::physics::BodyState;

    fn cube(i: u32, at_rest: bool) -> QuantizedState {
        quantize_state(&BodyState {
            position: Vec3::new(i as f32, 2.0 + 0.1 * i as f32, -1.0),
            rotation: Quat::from_rotation_y(0.1 * i as f32),
            linear_velocity: Vec3::new(1.0, 4.0, 0.5),
            angular_velocity: Vec3::new(0.0, 3.0, 1.0),
            at_rest,
        })
    }

    #[test]
    fn steps_unwrap_across_the_16_bit_wrap() {
        assert_eq!(unwrap_step(5, 5), 5);
        assert_eq!(unwrap_step(0, 65_535), 65_536);
        assert_eq!(unwrap_step(65_535, 65_536), 65_535);
        assert_eq!(unwrap_step(100, 3 * 65_536 + 90), 3 * 65_536 + 100);
        assert_eq!(unwrap_step(65_000, 10), 0, "no step before the first");
    }

    #[test]
    fn packets_round_trip_with_baselines_and_respect_the_budget() {
        const CUBES: u32 = 64;
        let states: Vec<QuantizedState> = (0..CUBES).map(|i| cube(i, i % 2 == 0)).collect();
        let order: Vec<u32> = (0..CUBES).rev().collect();
        let mut acked = AckedBaselines::new(CUBES as usize);
        let mut received = ReceivedStates::new(CUBES as usize);
        let (mut sent, mut encodings, mut updates) = (Vec::new(), Vec::new(), Vec::new());
        let mut buf = [0u8; 200];

        // First packet: no baselines, everything absolute, as many as fit in 200 bytes.
        let n = write_state_packet(&mut buf, 1000, &states, &order, &acked, &mut sent, &mut encodings).unwrap();
        assert!(n <= 200 && sent.len() >= 8, "{n} bytes, {} cubes", sent.len());
        assert!(encodings.iter().all(|&e| e == Encoding::Absolute));
        let step = read_state_packet(&buf[..n], CUBES, Some(999), &received, &mut updates).unwrap();
        assert_eq!(step, 1000);
        for &(id, state, _) in &updates {
            assert_eq!(state, states[id as usize]);
            received.insert(id, step, state);
        }
        let first: Vec<(u32, QuantizedState)> = updates.iter().map(|&(id, s, _)| (id, s)).collect();
        acked.record_sent(0, 1000, &first);
        acked.on_acked(0);

        // Ten steps later the awake ones are where the predictor says, the resting ones unchanged.
        let later: Vec<QuantizedState> = states.iter().map(|s| predict(s, 10)).collect();
        let n2 = write_state_packet(&mut buf, 1010, &later, &order, &acked, &mut sent, &mut encodings).unwrap();
        let step = read_state_packet(&buf[..n2], CUBES, Some(1000), &received, &mut updates).unwrap();
        assert_eq!(step, 1010);
        // The cubes sent before now cost a few bits each, which leaves room for more absolute ones than before.
        assert!(updates.len() > first.len(), "{} then {}", first.len(), updates.len());
        assert!(first.iter().all(|&(f, _)| updates.iter().any(|&(id, _, _)| id == f)));
        for &(id, state, encoding) in &updates {
            assert_eq!(state, later[id as usize]);
            if first.iter().any(|&(f, _)| f == id) {
                let expect = if states[id as usize].at_rest {
                    Encoding::NotChanged
                } else {
                    Encoding::Predicted
                };
                assert_eq!(encoding, expect, "cube {id}");
            } else {
                assert_eq!(encoding, Encoding::Absolute, "cube {id}");
            }
        }
    }

    #[test]
    fn malformed_packets_are_rejected_whole() {
        const CUBES: u32 = 10;
        let states: Vec<QuantizedState> = (0..CUBES).map(|i| cube(i, false)).collect();
        let acked = AckedBaselines::new(CUBES as usize);
        let received = ReceivedStates::new(CUBES as usize);
        let (mut sent, mut encodings, mut updates) = (Vec::new(), Vec::new(), Vec::new());
        let mut buf = [0u8; 1200];
        let n = write_state_packet(&mut buf, 7, &states, &[3, 1, 4], &acked, &mut sent, &mut encodings).unwrap();
        assert!(read_state_packet(&buf[..n], CUBES, Some(7), &received, &mut updates).is_ok());
        assert_eq!(updates.len(), 3);
        // Truncated, or read as if the scene were smaller (cube 4 unknown): rejected, nothing returned.
        for len in 0..n {
            assert!(read_state_packet(&buf[..len], CUBES, Some(7), &received, &mut updates).is_err());
            assert!(updates.is_empty());
        }
        let err = read_state_packet(&buf[..n], 4, Some(7), &received, &mut updates);
        assert!(err.is_err() && updates.is_empty(), "{err:?}");
        // The same cube twice.
        let n = write_state_packet(&mut buf, 7, &states, &[2, 2], &acked, &mut sent, &mut encodings).unwrap();
        assert_eq!(
            read_state_packet(&buf[..n], CUBES, Some(7), &received, &mut updates),
            Err(StatePacketError::DuplicateCube(2))
        );
        // Random bytes never panic.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut bytes = [0u8; 48];
            for b in &mut bytes {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            let _ = read_state_packet(&bytes[..(x % 49) as usize], CUBES, Some(7), &received, &mut updates);
        }
    }

    #[test]
    fn entropy_packets_round_trip_and_carry_more_than_bit_packed_ones() {
        const CUBES: u32 = 40;
        let states: Vec<QuantizedState> = (0..CUBES).map(|i| cube(i, i % 2 == 0)).collect();
        let order: Vec<u32> = (0..CUBES).rev().collect();
        let mut acked = AckedBaselines::new(CUBES as usize);
        let mut received = ReceivedStates::new(CUBES as usize);
        let (mut sent, mut encodings, mut updates) = (Vec::new(), Vec::new(), Vec::new());
        let mut buf = [0u8; 1200];
        // Everything once, absolute, to give both sides baselines.
        let n = write_entropy_state_packet(&mut buf, 500, &states, &order, &acked, &mut sent, &mut encodings).unwrap();
        assert_eq!(sent.len(), CUBES as usize);
        assert!(sent.windows(2).all(|w| w[0] < w[1]), "ids ascend");
        let step = read_entropy_state_packet(&buf[..n], CUBES, Some(499), &received, &mut updates).unwrap();
        assert_eq!(step, 500);
        for &(id, state, _) in &updates {
            assert_eq!(state, states[id as usize]);
            received.insert(id, step, state);
        }
        let all: Vec<(u32, QuantizedState)> = updates.iter().map(|&(id, s, _)| (id, s)).collect();
        acked.record_sent(0, 500, &all);
        acked.on_acked(0);
        // Ten steps on, into 48 bytes: more cubes fit than the bit packer fits, and all arrive exactly.
        let later: Vec<QuantizedState> = states.iter().map(|s| predict(s, 10)).collect();
        let mut small = [0u8; 48];
        let packed = write_state_packet(&mut small, 510, &later, &order, &acked, &mut sent, &mut encodings).unwrap();
        let packed_count = sent.len();
        assert!(packed <= 48);
        let n = write_entropy_state_packet(&mut small, 510, &later, &order, &acked, &mut sent, &mut encodings).unwrap();
        assert!(n <= 48);
        assert!(
            sent.len() > packed_count,
            "entropy {} vs bit-packed {packed_count}",
            sent.len()
        );
        let step = read_entropy_state_packet(&small[..n], CUBES, Some(500), &received, &mut updates).unwrap();
        assert_eq!(step, 510);
        assert_eq!(updates.len(), sent.len());
        for (&(id, state, encoding), (&s, &e)) in updates.iter().zip(sent.iter().zip(&encodings)) {
            assert_eq!((id, state, encoding), (s, later[id as usize], e));
        }
    }

    #[test]
    fn malformed_entropy_packets_are_rejected_whole_or_read_as_valid_values() {
        const CUBES: u32 = 10;
        let states: Vec<QuantizedState> = (0..CUBES).map(|i| cube(i, false)).collect();
        let acked = AckedBaselines::new(CUBES as usize);
        let received = ReceivedStates::new(CUBES as usize);
        let (mut sent, mut encodings, mut updates) = (Vec::new(), Vec::new(), Vec::new());
        let mut buf = [0u8; 1200];
        let n =
            write_entropy_state_packet(&mut buf, 7, &states, &[3, 1, 4], &acked, &mut sent, &mut encodings).unwrap();
        assert!(read_entropy_state_packet(&buf[..n], CUBES, Some(7), &received, &mut updates).is_ok());
        assert_eq!(updates.len(), 3);
        // Trailing bytes, or a scene too small for cube 4: rejected, nothing returned.
        let mut long = buf[..n].to_vec();
        long.extend_from_slice(&[9, 9, 9, 9, 9, 9, 9, 9]);
        assert!(read_entropy_state_packet(&long, CUBES, Some(7), &received, &mut updates).is_err());
        assert!(updates.is_empty());
        assert!(read_entropy_state_packet(&buf[..n], 4, Some(7), &received, &mut updates).is_err());
        assert!(updates.is_empty());
        // Random bytes: never a panic; anything accepted (1 in 256 garbage streams passes the check byte) holds
        // only in-range values of known cubes.
        let check = |bytes: &[u8], updates: &mut Vec<(u32, QuantizedState, Encoding)>| {
            if read_entropy_state_packet(bytes, CUBES, Some(7), &received, updates).is_ok() {
                for &(id, state, _) in updates.iter() {
                    assert!(id < CUBES);
                    assert_eq!(
                        quantize_state(&crate::sync::codec::quantize::dequantize_state(&state)),
                        state
                    );
                }
            } else {
                assert!(updates.is_empty());
            }
        };
        // A cut packet fails its check (or a bound) and is refused.
        for len in 0..n {
            assert!(read_entropy_state_packet(&buf[..len], CUBES, Some(7), &received, &mut updates).is_err());
            assert!(updates.is_empty());
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut bytes = [0u8; 48];
            for b in &mut bytes {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            check(&bytes[..(x % 49) as usize], &mut updates);
        }
    }
}
