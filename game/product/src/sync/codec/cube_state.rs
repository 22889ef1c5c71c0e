//! One cube's state on the wire: its id, the at-rest bit, position, smallest-three rotation and, only when awake,
//! both velocities. One function ([`serialize_cube_state`]) both writes and reads, through `tumble_net`'s `Stream`,
//! so sender and receiver cannot disagree about field order or widths.
//!
//! Reads check everything a peer could get wrong: the id must name an existing cube, every integer must lie in its
//! quantizer range, and the rotation must be one the quantizer itself could have produced (canonical), so the
//! receiver's state keeps the idempotency that quantizing both sides relies on.

use thiserror::Error;
use tumble_net::serialize::bits_required;
use tumble_net::{SerializeError, Stream};

use crate::sync::codec::entropy_stream::context;
use crate::sync::codec::quantize::{
    dequantize_rotation, quantize_rotation, QuantizedRotation, QuantizedState, ANGULAR_VELOCITY_BITS,
    LINEAR_VELOCITY_BITS, POSITION_BITS, ROTATION_COMPONENT_MAX, ROTATION_INDEX_BITS, STATE_BITS_AT_REST,
    STATE_BITS_AWAKE,
};

/// Most cubes a scene may sync: ids take at most 16 bits.
pub const MAX_CUBES: u32 = 1 << 16;

/// Why a cube state could not be written or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CubeStateError {
    #[error(transparent)]
    Stream(#[from] SerializeError),
    #[error("cube id {id} names no cube (the scene has {cube_count})")]
    UnknownCube { id: u32, cube_count: u32 },
    #[error("cube count {0} outside 1..={MAX_CUBES}")]
    BadCubeCount(u32),
    #[error("rotation {0:?} is not a canonical smallest-three encoding")]
    NonCanonicalRotation(QuantizedRotation),
}

/// Bits of a cube id when the scene has `cube_count` cubes (ids `0..cube_count`).
pub fn cube_id_bits(cube_count: u32) -> u32 {
    bits_required(u64::from(cube_count.saturating_sub(1)))
}

/// Bits [`serialize_cube_state`] spends on one cube.
pub fn cube_state_bits(cube_count: u32, at_rest: bool) -> u32 {
    cube_id_bits(cube_count) + if at_rest { STATE_BITS_AT_REST } else { STATE_BITS_AWAKE }
}

/// Signed range of a `bits`-bit two's-complement integer.
pub const fn signed_range(bits: u32) -> (i32, i32) {
    (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
}

fn serialize_vec<S: Stream>(s: &mut S, v: &mut [i32; 3], bits: u32) -> Result<(), SerializeError> {
    let (min, max) = signed_range(bits);
    v.iter_mut().try_for_each(|x| s.serialize_int(x, min, max))
}

/// The cube id, bounded by the scene's cube count. Written in exactly [`cube_id_bits`] bits; a read id that names
/// no cube (possible when the count is not a power of two) is [`CubeStateError::UnknownCube`].
pub fn serialize_cube_id<S: Stream>(s: &mut S, id: &mut u32, cube_count: u32) -> Result<(), CubeStateError> {
    if cube_count == 0 || cube_count > MAX_CUBES {
        return Err(CubeStateError::BadCubeCount(cube_count));
    }
    if S::IS_WRITING && *id >= cube_count {
        return Err(CubeStateError::UnknownCube { id: *id, cube_count });
    }
    s.set_context(context::CUBE_ID);
    s.serialize_bits(id, cube_id_bits(cube_count))?;
    if *id >= cube_count {
        return Err(CubeStateError::UnknownCube { id: *id, cube_count });
    }
    Ok(())
}

/// Smallest-three: the dropped component's index, then three components in ±[`ROTATION_COMPONENT_MAX`].
pub fn serialize_rotation<S: Stream>(s: &mut S, r: &mut QuantizedRotation) -> Result<(), CubeStateError> {
    let mut largest = u32::from(r.largest);
    s.set_context(context::ROTATION_INDEX);
    s.serialize_bits(&mut largest, ROTATION_INDEX_BITS)?;
    s.set_context(context::ROTATION);
    let max = i32::from(ROTATION_COMPONENT_MAX);
    let mut c = r.smallest_three.map(i32::from);
    c.iter_mut().try_for_each(|x| s.serialize_int(x, -max, max))?;
    if S::IS_READING {
        // In range by the reads above, so the casts are exact.
        *r = QuantizedRotation {
            largest: largest as u8,
            smallest_three: c.map(|x| x as i16),
        };
        // Components whose squares sum past one, or that re-encode differently, could not come from our quantizer.
        if quantize_rotation(dequantize_rotation(r)) != *r {
            return Err(CubeStateError::NonCanonicalRotation(*r));
        }
    }
    Ok(())
}

/// One cube: id, at-rest bit, position, rotation, and the velocities only when awake (a resting cube's are zero,
/// so sending them would waste 99 bits). On a read error `id` and `state` may hold partial values: callers apply
/// a state only after the whole packet has been read.
pub fn serialize_cube_state<S: Stream>(
    s: &mut S,
    id: &mut u32,
    state: &mut QuantizedState,
    cube_count: u32,
) -> Result<(), CubeStateError> {
    serialize_cube_id(s, id, cube_count)?;
    serialize_absolute(s, state)
}

/// A full state without the id: at-rest bit, position, rotation, and the velocities only when awake.
pub fn serialize_absolute<S: Stream>(s: &mut S, state: &mut QuantizedState) -> Result<(), CubeStateError> {
    s.set_context(context::AT_REST);
    s.serialize_bool(&mut state.at_rest)?;
    s.set_context(context::POSITION);
    serialize_vec(s, &mut state.position, POSITION_BITS)?;
    serialize_rotation(s, &mut state.rotation)?;
    if state.at_rest {
        if S::IS_READING {
            state.linear_velocity = [0; 3];
            state.angular_velocity = [0; 3];
        }
    } else {
        s.set_context(context::LINEAR_VELOCITY);
        serialize_vec(s, &mut state.linear_velocity, LINEAR_VELOCITY_BITS)?;
        s.set_context(context::ANGULAR_VELOCITY);
        serialize_vec(s, &mut state.angular_velocity, ANGULAR_VELOCITY_BITS)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::quantize::quantize_state;
    use glam::{Quat, Vec3};
    use tumble_engine::physics::BodyState;
    use tumble_net::{ReadStream, WriteStream};

    fn write(id: u32, state: &QuantizedState, cube_count: u32) -> (Vec<u8>, usize) {
        let mut buf = [0u8; 64];
        let mut w = WriteStream::new(&mut buf);
        serialize_cube_state(&mut w, &mut { id }, &mut { *state }, cube_count).unwrap();
        let bits = w.bits_processed();
        let n = w.finish().unwrap();
        (buf[..n].to_vec(), bits)
    }

    fn read(bytes: &[u8], cube_count: u32) -> Result<(u32, QuantizedState), CubeStateError> {
        let mut r = ReadStream::new(bytes);
        let (mut id, mut state) = (0, garbage_state());
        serialize_cube_state(&mut r, &mut id, &mut state, cube_count)?;
        r.finish()?;
        Ok((id, state))
    }

    /// A state full of non-zero values, so a read that forgets to fill a field shows up.
    fn garbage_state() -> QuantizedState {
        QuantizedState {
            position: [7; 3],
            rotation: QuantizedRotation {
                largest: 1,
                smallest_three: [3; 3],
            },
            linear_velocity: [9; 3],
            angular_velocity: [11; 3],
            at_rest: false,
            stamp: crate::sync::codec::stamp::AuthorityStamp::DEFAULT,
        }
    }

    fn edges(bits: u32) -> [i32; 3] {
        let (min, max) = signed_range(bits);
        [min, max, 0]
    }

    #[test]
    fn round_trips_at_range_edges() {
        let rotations = [
            QuantizedRotation::IDENTITY,
            quantize_rotation(Quat::from_xyzw(0.5, -0.5, 0.5, -0.5)),
            quantize_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
            quantize_rotation(Quat::from_xyzw(0.1, -0.9, 0.3, 0.2)),
        ];
        for cube_count in [1, 2, 3, 64, 100, MAX_CUBES] {
            for id in [0, cube_count / 2, cube_count - 1] {
                for (k, rotation) in rotations.into_iter().enumerate() {
                    for at_rest in [false, true] {
                        let mut state = QuantizedState {
                            position: edges(POSITION_BITS),
                            rotation,
                            linear_velocity: edges(LINEAR_VELOCITY_BITS),
                            angular_velocity: edges(ANGULAR_VELOCITY_BITS),
                            at_rest,
                            stamp: crate::sync::codec::stamp::AuthorityStamp::DEFAULT,
                        };
                        state.position.rotate_left(k % 3);
                        state.linear_velocity.rotate_left((k + 1) % 3);
                        if at_rest {
                            (state.linear_velocity, state.angular_velocity) = ([0; 3], [0; 3]);
                        }
                        let (bytes, bits) = write(id, &state, cube_count);
                        assert_eq!(bits as u32, cube_state_bits(cube_count, at_rest));
                        assert_eq!(read(&bytes, cube_count), Ok((id, state)));
                    }
                }
            }
        }
    }

    #[test]
    fn bit_counts_per_encoding() {
        // 64 cubes: a 6-bit id. At rest: 6 + 1 + 3·21 + 2 + 3·15 = 117; awake adds 3·16 + 3·17 = 99.
        assert_eq!(cube_id_bits(64), 6);
        assert_eq!(cube_state_bits(64, true), 117);
        assert_eq!(cube_state_bits(64, false), 216);
        assert_eq!(cube_id_bits(1), 0);
        assert_eq!(cube_id_bits(65), 7);
        let body = BodyState {
            position: Vec3::new(1.0, 2.5, -3.0),
            rotation: Quat::from_rotation_y(0.7),
            linear_velocity: Vec3::new(0.5, -4.0, 2.0),
            angular_velocity: Vec3::new(1.0, 0.0, -3.0),
            at_rest: false,
        };
        let awake = quantize_state(&body);
        let resting = quantize_state(&BodyState { at_rest: true, ..body });
        assert_eq!(write(5, &awake, 64).1, 216);
        assert_eq!(write(5, &resting, 64).1, 117);
    }

    #[test]
    fn unknown_cube_ids_are_rejected() {
        // 100 cubes: 7 bits, so ids 100..=127 can arrive and must be refused.
        let state = quantize_state(&BodyState {
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            at_rest: true,
        });
        let (bytes, _) = write(99, &state, 100);
        let mut forged = bytes.clone();
        forged[0] |= 0x7f; // the first 7 bits are the id (the packer fills bytes from the low bit).
        assert!(matches!(
            read(&forged, 100),
            Err(CubeStateError::UnknownCube {
                id: 127,
                cube_count: 100
            })
        ));
        // The writer refuses too, and a zero cube count is no scene at all.
        let mut buf = [0u8; 64];
        let mut w = WriteStream::new(&mut buf);
        let err = serialize_cube_state(&mut w, &mut 100, &mut { state }, 100);
        assert_eq!(
            err,
            Err(CubeStateError::UnknownCube {
                id: 100,
                cube_count: 100
            })
        );
        assert_eq!(read(&bytes, 0), Err(CubeStateError::BadCubeCount(0)));
    }

    #[test]
    fn out_of_range_and_truncated_reads_are_errors() {
        // Rotation components are 15 bits for ±16383: the pattern for 16384 (offset 32767) is out of range.
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        let mut largest = 3u32;
        w.serialize_bits(&mut largest, 2).unwrap();
        let mut raw = 32767u32;
        w.serialize_bits(&mut raw, 15).unwrap();
        let n = w.finish().unwrap();
        let mut r = ReadStream::new(&buf[..n]);
        let mut rot = QuantizedRotation::IDENTITY;
        assert_eq!(
            serialize_rotation(&mut r, &mut rot),
            Err(CubeStateError::Stream(SerializeError::ValueOutOfRange))
        );

        // Three components at the maximum sum past one: not a rotation our quantizer makes.
        let mut forged = QuantizedRotation {
            largest: 3,
            smallest_three: [ROTATION_COMPONENT_MAX; 3],
        };
        let mut buf = [0u8; 8];
        let mut w = WriteStream::new(&mut buf);
        serialize_rotation(&mut w, &mut forged).unwrap();
        let n = w.finish().unwrap();
        let mut r = ReadStream::new(&buf[..n]);
        let mut out = QuantizedRotation::IDENTITY;
        assert_eq!(
            serialize_rotation(&mut r, &mut out),
            Err(CubeStateError::NonCanonicalRotation(forged))
        );

        // Every truncation of an awake cube fails cleanly.
        let (bytes, _) = write(3, &garbage_state_canonical(), 64);
        for len in 0..bytes.len() {
            assert!(read(&bytes[..len], 64).is_err(), "{len} bytes");
        }
    }

    fn garbage_state_canonical() -> QuantizedState {
        QuantizedState {
            rotation: QuantizedRotation::IDENTITY,
            ..garbage_state()
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut accepted = 0;
        for _ in 0..20_000 {
            let mut bytes = [0u8; 27];
            for b in &mut bytes {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            if let Ok((id, state)) = read(&bytes, 50) {
                accepted += 1;
                assert!(id < 50);
                assert_eq!(quantize_rotation(dequantize_rotation(&state.rotation)), state.rotation);
            }
        }
        // Most random rotations are rejected; the count only shows the reader ran to the end sometimes.
        eprintln!("accepted {accepted} of 20000 random 27-byte packets");
    }
}
