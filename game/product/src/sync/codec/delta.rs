//! Delta encoding of one cube's state against a baseline the receiver is known to hold (a state of that cube from
//! `age` steps ago). Encodings, cheapest first:
//!
//! - **not changed**: the state is the baseline (most resting cubes);
//! - **predicted**: the state is the ballistic prediction from the baseline ([`crate::sync::codec::predict`]), which both ends
//!   compute bit for bit (most cubes in free flight);
//! - **prediction error**: each field differs from the prediction by a few units;
//! - **delta**: each field differs from the baseline by a bounded amount;
//! - **absolute**: the full state, also whenever there is no usable baseline.
//!
//! The authority stamp rides in the state: "not changed" and "predicted" carry the baseline's, the residual
//! encodings code it against the baseline's (one flag when unchanged), absolute against the default stamp.
//!
//! The sender picks the first that applies ([`choose_encoding`]), comparing the *current* state with the baseline
//! and the prediction (the reference sample had this comparison reversed, so its predicted path was never taken).
//! One function ([`serialize_update`]) writes and reads; reads check every value and the rotation's canonicity,
//! and a baseline the receiver does not have is an error, so the caller drops the update and the sender falls back
//! to absolute.

use thiserror::Error;
use tumble_net::serialize::bits_required;
use tumble_net::{SerializeError, Stream};

use crate::sync::codec::cube_state::{serialize_absolute, signed_range, CubeStateError};
use crate::sync::codec::entropy_stream::context;
use crate::sync::codec::predict::predict;
use crate::sync::codec::quantize::{
    dequantize_rotation, quantize_rotation, QuantizedRotation, QuantizedState, ANGULAR_VELOCITY_BITS,
    LINEAR_VELOCITY_BITS, POSITION_BITS, ROTATION_COMPONENT_MAX,
};
use crate::sync::codec::stamp::{serialize_stamp, AuthorityStamp};

/// Oldest usable baseline, in steps (2.8 s at 90 Hz): an age fits in 8 bits; 0 means "absolute, no baseline".
pub const MAX_BASELINE_AGE_STEPS: u32 = 255;

/// How one update is encoded, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Encoding {
    NotChanged,
    Predicted,
    PredictionError,
    Delta,
    Absolute,
}

impl Encoding {
    /// All encodings in order, for counting tables.
    pub const ALL: [Encoding; 5] = [
        Encoding::NotChanged,
        Encoding::Predicted,
        Encoding::PredictionError,
        Encoding::Delta,
        Encoding::Absolute,
    ];
}

/// Largest difference (in quantizer units, per integer) each residual encoding can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ResidualRange {
    position: i32,
    rotation: i32,
    linear_velocity: i32,
    angular_velocity: i32,
}

/// Prediction errors are a unit or two (f32 rounding in the engine, small bucket) or a contact the predictor does
/// not know about (large bucket): the same bounds as deltas, so a fast cube that touched something is still sent
/// against its prediction rather than in full.
const PREDICTION_ERROR_RANGE: ResidualRange = DELTA_RANGE;

/// Deltas from the baseline: ±0.5 m position (12 bits), ±0.022 in a rotation component (10 bits), ±1 m/s and
/// ±1 rad/s velocity change (11 bits). Larger changes go absolute.
const DELTA_RANGE: ResidualRange = ResidualRange {
    position: 2047,
    rotation: 511,
    linear_velocity: 1023,
    angular_velocity: 1023,
};

/// Why an update could not be written or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DeltaError {
    #[error(transparent)]
    CubeState(#[from] CubeStateError),
    #[error("baseline {age} steps old is not in the buffer")]
    UnknownBaseline { age: u32 },
    #[error("value outside its range after applying the residual")]
    OutOfRange,
    #[error("the state does not fit the {0:?} encoding it was written with")]
    EncodingMismatch(Encoding),
}

impl From<SerializeError> for DeltaError {
    fn from(e: SerializeError) -> Self {
        DeltaError::CubeState(e.into())
    }
}

/// One cube's update as written or read: the state, its encoding and the baseline age (0 for absolute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeltaUpdate {
    pub state: QuantizedState,
    pub encoding: Encoding,
    pub baseline_age: u32,
}

fn differences_fit(a: &[i32; 3], b: &[i32; 3], max: i32) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| (i64::from(*x) - i64::from(*y)).abs() <= i64::from(max))
}

/// True when `state` can be carried as a residual against `reference` within `range`.
fn residual_fits(state: &QuantizedState, reference: &QuantizedState, range: &ResidualRange) -> bool {
    let rot = |r: &QuantizedRotation| r.smallest_three.map(i32::from);
    // A change of dropped component makes the three stored integers mean different things: no residual then.
    state.rotation.largest == reference.rotation.largest
        && differences_fit(&state.position, &reference.position, range.position)
        && differences_fit(&rot(&state.rotation), &rot(&reference.rotation), range.rotation)
        && differences_fit(
            &state.linear_velocity,
            &reference.linear_velocity,
            range.linear_velocity,
        )
        && differences_fit(
            &state.angular_velocity,
            &reference.angular_velocity,
            range.angular_velocity,
        )
}

/// The cheapest encoding of `current` against `baseline`, a state from `age` steps ago (`None`, an age of 0 or one
/// past [`MAX_BASELINE_AGE_STEPS`] give absolute). Note the direction: the *current* state is tested against the
/// baseline and against the prediction made from the baseline.
pub fn choose_encoding(current: &QuantizedState, baseline: Option<(&QuantizedState, u32)>) -> Encoding {
    choose(current, baseline, true)
}

/// [`choose_encoding`], or with the prediction encodings left out (to measure what prediction saves).
fn choose(current: &QuantizedState, baseline: Option<(&QuantizedState, u32)>, allow_prediction: bool) -> Encoding {
    let Some((base, age)) = baseline.filter(|(_, age)| (1..=MAX_BASELINE_AGE_STEPS).contains(age)) else {
        return Encoding::Absolute;
    };
    if current == base {
        return Encoding::NotChanged;
    }
    if !allow_prediction {
        return if residual_fits(current, base, &DELTA_RANGE) {
            Encoding::Delta
        } else {
            Encoding::Absolute
        };
    }
    let predicted = predict(base, age);
    if *current == predicted {
        Encoding::Predicted
    } else {
        // Whichever residual is cheaper: the prediction wins in flight, the baseline for a cube resting on
        // something (the prediction has it falling). Ties go to the prediction.
        match (
            residual_bits(current, &predicted, &PREDICTION_ERROR_RANGE),
            residual_bits(current, base, &DELTA_RANGE),
        ) {
            (Some(p), Some(d)) if d < p => Encoding::Delta,
            (Some(_), _) => Encoding::PredictionError,
            (None, Some(_)) => Encoding::Delta,
            (None, None) => Encoding::Absolute,
        }
    }
}

/// Bits of three residuals as [`serialize_vec_residual`] writes them.
fn vec_residual_bits(value: &[i32; 3], reference: &[i32; 3], max: i32) -> usize {
    if value == reference {
        return 1;
    }
    let (flag, limit) = if max > SMALL_RESIDUAL_MAX {
        let small = differences_fit(value, reference, SMALL_RESIDUAL_MAX);
        (1, if small { SMALL_RESIDUAL_MAX } else { max })
    } else {
        (0, max)
    };
    1 + flag + 3 * bits_required(2 * limit as u64) as usize
}

/// Bits of a residual state as [`serialize_residual`] writes it, or `None` when it does not fit `range`.
fn residual_bits(state: &QuantizedState, reference: &QuantizedState, range: &ResidualRange) -> Option<usize> {
    if !residual_fits(state, reference, range) {
        return None;
    }
    let rot = |r: &QuantizedRotation| r.smallest_three.map(i32::from);
    let mut bits = 1
        + vec_residual_bits(&state.position, &reference.position, range.position)
        + vec_residual_bits(&rot(&state.rotation), &rot(&reference.rotation), range.rotation);
    if !state.at_rest {
        bits += vec_residual_bits(
            &state.linear_velocity,
            &reference.linear_velocity,
            range.linear_velocity,
        ) + vec_residual_bits(
            &state.angular_velocity,
            &reference.angular_velocity,
            range.angular_velocity,
        );
    }
    Some(bits)
}

/// Builds the update the sender writes for `current`, choosing the encoding.
pub fn make_update(current: &QuantizedState, baseline: Option<(&QuantizedState, u32)>) -> DeltaUpdate {
    make_update_with(current, baseline, true)
}

/// [`make_update`], optionally without the prediction encodings (for the bandwidth table's stages).
pub fn make_update_with(
    current: &QuantizedState,
    baseline: Option<(&QuantizedState, u32)>,
    allow_prediction: bool,
) -> DeltaUpdate {
    let encoding = choose(current, baseline, allow_prediction);
    DeltaUpdate {
        state: *current,
        encoding,
        baseline_age: match (encoding, baseline) {
            (Encoding::Absolute, _) | (_, None) => 0,
            (_, Some((_, age))) => age,
        },
    }
}

/// Which field a residual is, for the entropy coder's contexts.
#[derive(Clone, Copy)]
enum ResidualField {
    Position,
    Rotation,
    LinearVelocity,
    AngularVelocity,
}

/// Residuals up to this (5 bits each) go in the small bucket: a cube creeping in contact moves a few units a step.
const SMALL_RESIDUAL_MAX: i32 = 15;

/// Three integers as differences from `reference`, each in ±`max`, behind a one-bit "all equal" flag (fields are
/// often exact while another one is not) and, when `max` is wider than [`SMALL_RESIDUAL_MAX`], a one-bit "small"
/// bucket flag. On read the sum must stay in the signed `bits`-bit range.
fn serialize_vec_residual<S: Stream>(
    s: &mut S,
    field: ResidualField,
    value: &mut [i32; 3],
    reference: &[i32; 3],
    max: i32,
    bits: u32,
) -> Result<(), DeltaError> {
    let contexts = context::RESIDUAL + 3 * field as u32;
    let mut exact = value == reference;
    s.set_context(contexts);
    s.serialize_bool(&mut exact)?;
    if exact {
        *value = *reference;
        return Ok(());
    }
    let limit = if max > SMALL_RESIDUAL_MAX {
        let fits = |(v, r): (&i32, &i32)| (i64::from(*v) - i64::from(*r)).abs() <= i64::from(SMALL_RESIDUAL_MAX);
        let mut small = value.iter().zip(reference).all(fits);
        s.set_context(contexts + 1);
        s.serialize_bool(&mut small)?;
        if small {
            SMALL_RESIDUAL_MAX
        } else {
            max
        }
    } else {
        max
    };
    let (min_value, max_value) = signed_range(bits);
    s.set_context(contexts + 2);
    for (v, r) in value.iter_mut().zip(reference) {
        let mut d = v.wrapping_sub(*r);
        s.serialize_int(&mut d, -limit, limit)?;
        let sum = i64::from(*r) + i64::from(d);
        if !(i64::from(min_value)..=i64::from(max_value)).contains(&sum) {
            return Err(DeltaError::OutOfRange);
        }
        *v = sum as i32;
    }
    Ok(())
}

/// A residual state against `reference`: the at-rest bit, then each field as a residual (velocities only awake).
fn serialize_residual<S: Stream>(
    s: &mut S,
    state: &mut QuantizedState,
    reference: &QuantizedState,
    range: &ResidualRange,
) -> Result<(), DeltaError> {
    s.set_context(context::AT_REST);
    s.serialize_bool(&mut state.at_rest)?;
    serialize_vec_residual(
        s,
        ResidualField::Position,
        &mut state.position,
        &reference.position,
        range.position,
        POSITION_BITS,
    )?;
    let mut rot = state.rotation.smallest_three.map(i32::from);
    let component_bits = 16; // ±ROTATION_COMPONENT_MAX is checked below; 16 bits only guards the sum.
    let reference_rot = reference.rotation.smallest_three.map(i32::from);
    serialize_vec_residual(
        s,
        ResidualField::Rotation,
        &mut rot,
        &reference_rot,
        range.rotation,
        component_bits,
    )?;
    let max = i32::from(ROTATION_COMPONENT_MAX);
    if rot.iter().any(|c| c.abs() > max) {
        return Err(DeltaError::OutOfRange);
    }
    state.rotation = QuantizedRotation {
        largest: reference.rotation.largest,
        smallest_three: rot.map(|c| c as i16),
    };
    if S::IS_READING && quantize_rotation(dequantize_rotation(&state.rotation)) != state.rotation {
        return Err(CubeStateError::NonCanonicalRotation(state.rotation).into());
    }
    if state.at_rest {
        state.linear_velocity = [0; 3];
        state.angular_velocity = [0; 3];
    } else {
        let (lin, ang) = (reference.linear_velocity, reference.angular_velocity);
        serialize_vec_residual(
            s,
            ResidualField::LinearVelocity,
            &mut state.linear_velocity,
            &lin,
            range.linear_velocity,
            LINEAR_VELOCITY_BITS,
        )?;
        serialize_vec_residual(
            s,
            ResidualField::AngularVelocity,
            &mut state.angular_velocity,
            &ang,
            range.angular_velocity,
            ANGULAR_VELOCITY_BITS,
        )?;
    }
    Ok(())
}

/// The encoding after a baseline, as a chain of flags: 1 = not changed, 01 = predicted, 001 = prediction error,
/// 000 = delta. Cheapest first, so the common cases cost one or two bits.
fn serialize_encoding<S: Stream>(s: &mut S, encoding: &mut Encoding) -> Result<(), DeltaError> {
    const CHAIN: [Encoding; 3] = [Encoding::NotChanged, Encoding::Predicted, Encoding::PredictionError];
    for (i, e) in CHAIN.into_iter().enumerate() {
        let mut this = *encoding == e;
        s.set_context(context::ENCODING_FLAG + i as u32);
        s.serialize_bool(&mut this)?;
        if this {
            *encoding = e;
            return Ok(());
        }
    }
    *encoding = Encoding::Delta;
    Ok(())
}

/// One cube's update (after its id): baseline age (0 = absolute), then the encoding and what it needs.
/// `baseline_of(age)` returns this cube's state from `age` steps ago, as the receiver's buffer (or the sender's
/// acked copy) holds it. Writing an update whose state does not fit its encoding is
/// [`DeltaError::EncodingMismatch`]; on a read error `update` may hold partial values and must not be applied.
pub fn serialize_update<S: Stream>(
    s: &mut S,
    update: &mut DeltaUpdate,
    baseline_of: impl Fn(u32) -> Option<QuantizedState>,
) -> Result<(), DeltaError> {
    if S::IS_WRITING && (update.encoding == Encoding::Absolute) != (update.baseline_age == 0) {
        return Err(DeltaError::EncodingMismatch(update.encoding));
    }
    s.set_context(context::BASELINE_AGE);
    s.serialize_uint(&mut update.baseline_age, MAX_BASELINE_AGE_STEPS)?;
    let age = update.baseline_age;
    if age == 0 {
        update.encoding = Encoding::Absolute;
        serialize_absolute(s, &mut update.state)?;
        serialize_stamp(s, &mut update.state.stamp, &AuthorityStamp::DEFAULT)?;
        return Ok(());
    }
    let base = baseline_of(age).ok_or(DeltaError::UnknownBaseline { age })?;
    serialize_encoding(s, &mut update.encoding)?;
    let encoding = update.encoding;
    let mismatch = Err(DeltaError::EncodingMismatch(encoding));
    match encoding {
        Encoding::NotChanged => {
            if S::IS_WRITING && update.state != base {
                return mismatch;
            }
            update.state = base;
        }
        Encoding::Predicted => {
            let predicted = predict(&base, age);
            if S::IS_WRITING && update.state != predicted {
                return mismatch;
            }
            update.state = predicted;
        }
        Encoding::PredictionError => {
            let predicted = predict(&base, age);
            if S::IS_WRITING && !residual_fits(&update.state, &predicted, &PREDICTION_ERROR_RANGE) {
                return mismatch;
            }
            serialize_residual(s, &mut update.state, &predicted, &PREDICTION_ERROR_RANGE)?;
            serialize_stamp(s, &mut update.state.stamp, &base.stamp)?;
        }
        Encoding::Delta => {
            if S::IS_WRITING && !residual_fits(&update.state, &base, &DELTA_RANGE) {
                return mismatch;
            }
            serialize_residual(s, &mut update.state, &base, &DELTA_RANGE)?;
            serialize_stamp(s, &mut update.state.stamp, &base.stamp)?;
        }
        // Absolute goes with age 0 (checked above) and the flag chain never reads it: an error, not a panic.
        Encoding::Absolute => return mismatch,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::quantize::{dequantize_state, quantize_state};
    use glam::{Quat, Vec3};
    use tumble_engine::physics::{BodyDesc, BodyState, World, WorldConfig};
    use tumble_net::{ReadStream, WriteStream};

    fn flying() -> QuantizedState {
        quantize_state(&BodyState {
            position: Vec3::new(1.0, 3.0, -2.0),
            rotation: Quat::from_axis_angle(Vec3::new(0.3, 1.0, 0.2).normalize(), 0.8),
            linear_velocity: Vec3::new(2.0, 5.0, -1.0),
            angular_velocity: Vec3::new(4.0, -2.0, 7.0),
            at_rest: false,
        })
    }

    /// Writes `update` against `base` (as the state `age` steps ago), reads it back; returns what was read and the
    /// bits it took.
    fn round_trip(update: &DeltaUpdate, base: &QuantizedState) -> (Result<DeltaUpdate, DeltaError>, usize) {
        let mut buf = [0u8; 64];
        let mut w = WriteStream::new(&mut buf);
        let age = update.baseline_age;
        let lookup = |a: u32| (a == age).then_some(*base);
        serialize_update(&mut w, &mut { *update }, lookup).unwrap();
        let bits = w.bits_processed();
        let n = w.finish().unwrap();
        let mut r = ReadStream::new(&buf[..n]);
        let mut out = DeltaUpdate {
            state: flying(),
            encoding: Encoding::Delta,
            baseline_age: 99,
        };
        let read = serialize_update(&mut r, &mut out, lookup).map(|()| out);
        (read, bits)
    }

    #[test]
    fn each_encoding_round_trips_with_its_bit_cost() {
        let base = flying();
        let age = 6;
        let predicted = predict(&base, age);
        let mut nudged = predicted;
        nudged.position[0] += 3;
        let mut moved = base;
        moved.position[1] += 1000;
        moved.linear_velocity[2] -= 500;
        // Moved a few units from the baseline while prediction (falling for 6 steps) is far off: in contact.
        let mut crept = base;
        crept.position[0] += 4;
        let mut far = base;
        far.position[2] += 5000;
        let resting = QuantizedState {
            at_rest: true,
            linear_velocity: [0; 3],
            angular_velocity: [0; 3],
            ..base
        };
        // Bits: 8 for the age, then the flag chain and the payload; residual and absolute updates end with the
        // authority stamp's "same as the reference" flag (+ 1).
        let cases = [
            (base, Some((&base, age)), Encoding::NotChanged, 8 + 1),
            (resting, Some((&resting, 200)), Encoding::NotChanged, 8 + 1),
            (predicted, Some((&base, age)), Encoding::Predicted, 8 + 2),
            // at rest + position (flag + small + 3 × 5) + rotation, linear, angular velocity flags.
            (
                nudged,
                Some((&base, age)),
                Encoding::PredictionError,
                8 + 3 + 1 + 17 + 3 + 1,
            ),
            // at rest + position (flag + large + 3 × 12) + rotation flag + linear (flag + large + 3 × 11) + angular.
            (
                moved,
                Some((&base, age)),
                Encoding::Delta,
                8 + 3 + 1 + 38 + 1 + 35 + 1 + 1,
            ),
            // at rest + position (flag + small + 3 × 5) + three flags.
            (crept, Some((&base, age)), Encoding::Delta, 8 + 3 + 1 + 17 + 3 + 1),
            (far, Some((&base, age)), Encoding::Absolute, 8 + 210 + 1),
            (base, None, Encoding::Absolute, 8 + 210 + 1),
            (
                resting,
                Some((&base, MAX_BASELINE_AGE_STEPS + 1)),
                Encoding::Absolute,
                8 + 111 + 1,
            ),
        ];
        for (k, (state, baseline, encoding, bits)) in cases.into_iter().enumerate() {
            let update = make_update(&state, baseline);
            assert_eq!(update.encoding, encoding, "case {k}");
            let reference = baseline.map_or(base, |(b, _)| *b);
            let (read, written) = round_trip(&update, &reference);
            assert_eq!(read, Ok(update), "case {k}");
            assert_eq!(written, bits, "case {k}");
        }
    }

    #[test]
    fn the_sender_takes_the_predicted_path_for_a_ballistic_cube() {
        // A cube thrown through an empty world, quantized before every step as both sides do. Against a baseline
        // 1 to 30 steps old, nearly every update should be "predicted"; the reference's reversed comparison made
        // this zero.
        let config = WorldConfig {
            ground_height: None,
            ..WorldConfig::default()
        };
        let mut world = World::new(config).unwrap();
        let id = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 10.0, 0.0),
                rotation: Quat::from_rotation_z(0.4),
                linear_velocity: Vec3::new(3.0, 6.0, -2.0),
                angular_velocity: Vec3::new(2.0, 9.0, -5.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let mut history = Vec::new();
        for _ in 0..120 {
            let q = quantize_state(&world.state(id).unwrap());
            world.set_state(id, &dequantize_state(&q)).unwrap();
            history.push(q);
            world.step();
        }
        let mut counts = [0usize; 5];
        for age in 1..=30u32 {
            for t in age as usize..history.len() {
                let update = make_update(&history[t], Some((&history[t - age as usize], age)));
                counts[update.encoding as usize] += 1;
                let (read, _) = round_trip(&update, &history[t - age as usize]);
                assert_eq!(read.map(|u| u.state), Ok(history[t]));
            }
        }
        let total: usize = counts.iter().sum();
        eprintln!(
            "encodings over {total} ballistic updates (not changed, predicted, error, delta, absolute): {counts:?}"
        );
        assert_eq!(counts[Encoding::NotChanged as usize], 0);
        assert!(counts[Encoding::Predicted as usize] * 100 >= total * 95, "{counts:?}");
    }

    #[test]
    fn bad_input_is_an_error() {
        let base = flying();
        let mut buf = [0u8; 64];
        // A baseline the receiver does not have.
        let update = make_update(&predict(&base, 3), Some((&base, 3)));
        let mut w = WriteStream::new(&mut buf);
        serialize_update(&mut w, &mut { update }, |_| Some(base)).unwrap();
        let n = w.finish().unwrap();
        let mut out = update;
        let mut r = ReadStream::new(&buf[..n]);
        assert_eq!(
            serialize_update(&mut r, &mut out, |_| None),
            Err(DeltaError::UnknownBaseline { age: 3 })
        );

        // The writer refuses a state that does not fit the encoding it claims.
        let mut w = WriteStream::new(&mut buf);
        let mut lie = DeltaUpdate {
            state: predict(&base, 3),
            encoding: Encoding::NotChanged,
            baseline_age: 3,
        };
        let err = serialize_update(&mut w, &mut lie, |_| Some(base));
        assert_eq!(err, Err(DeltaError::EncodingMismatch(Encoding::NotChanged)));

        // A delta that pushes a position past its range.
        let edge = QuantizedState {
            position: [(1 << 20) - 1, 0, 0],
            ..base
        };
        let mut moved = edge;
        moved.position[0] -= 2000;
        let update = make_update(&moved, Some((&edge, 1)));
        assert_eq!(update.encoding, Encoding::Delta);
        let mut w = WriteStream::new(&mut buf);
        serialize_update(&mut w, &mut { update }, |_| Some(edge)).unwrap();
        let n = w.finish().unwrap();
        // Read against a baseline at the lower edge, the same -2000 lands outside the 21-bit range.
        let low = QuantizedState {
            position: [-(1 << 20), 0, 0],
            ..base
        };
        let mut r = ReadStream::new(&buf[..n]);
        assert_eq!(
            serialize_update(&mut r, &mut { update }, |_| Some(low)),
            Err(DeltaError::OutOfRange)
        );

        // Truncations and random bytes: errors, never panics.
        let update = make_update(&moved, Some((&edge, 1)));
        let mut w = WriteStream::new(&mut buf);
        serialize_update(&mut w, &mut { update }, |_| Some(edge)).unwrap();
        let n = w.finish().unwrap();
        for len in 0..n {
            let mut r = ReadStream::new(&buf[..len]);
            assert!(
                serialize_update(&mut r, &mut { update }, |_| Some(edge)).is_err(),
                "{len} bytes"
            );
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut bytes = [0u8; 32];
            for b in &mut bytes {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            let mut r = ReadStream::new(&bytes);
            let _ = serialize_update(&mut r, &mut { update }, |age| (age % 2 == 0).then_some(base));
        }
    }
}
