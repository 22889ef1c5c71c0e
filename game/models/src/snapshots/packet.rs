//! The snapshot wire. The server's snapshot of the whole world rarely fits one datagram, so it travels as slices:
//! each slice a contiguous range of bodies, decodable on its own once its baseline is held, and the snapshot
//! counts as received when every slice has arrived. Compressed, each body is the sync codec's quantized state
//! (21-bit positions, smallest-three rotation, an at-rest bit, velocities only when awake), and with a baseline
//! (the newest snapshot the client acked) a body equal to its baseline state costs one bit. Uncompressed, each
//! body is its 13 raw floats and the rest flag. The client's packet is its newest complete snapshot (the ack) and
//! every input the server has not acked, in the lockstep input packet's compressed form.
//!
//! One serialize function reads and writes each part; every read is range checked, so a truncated or garbage
//! packet is an error, never a panic.

use tumble_engine::physics::BodyState;
use tumble_net::{SerializeError, Stream};

use crate::inputs::packet::InputPacket;
use tumble_game::sync::codec::cube_state::{serialize_absolute, CubeStateError, MAX_CUBES};
use tumble_game::sync::codec::quantize::QuantizedState;

/// First byte of a snapshot slice.
pub const SLICE_TAG: u32 = 0x53;
/// First byte of the client's packet.
pub const CLIENT_TAG: u32 = 0x43;
/// Most slices one snapshot may take (a received-slices mask is one u64).
pub const MAX_SLICES: u32 = 64;
/// Bits of a slice header at most (tag, flags, sequence, step, input ack, counts, ranges, baseline).
pub const SLICE_HEADER_MAX_BITS: usize = 8 + 1 + 32 + 32 + 33 + 17 + 6 + 6 + 17 + 17 + 33;
/// Bits of one body written uncompressed: 13 floats and the rest flag.
pub const RAW_BODY_BITS: usize = 13 * 32 + 1;

/// Why a slice or client packet could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Stream(#[from] SerializeError),
    #[error(transparent)]
    Cube(#[from] CubeStateError),
    #[error("the slice is for a world of {got} bodies, this one has {want}")]
    WrongBodyCount { got: u32, want: u32 },
    #[error("slice {index} of {count}, bodies {first}..{end}: out of range")]
    BadRange {
        index: u32,
        count: u32,
        first: u32,
        end: u32,
    },
    #[error("the slice's baseline, snapshot {0}, is not held")]
    MissingBaseline(u32),
    #[error("a body equal to its baseline was sent as changed")]
    NonCanonical,
    #[error("too many slices: a snapshot needs more than {MAX_SLICES}")]
    TooManySlices,
}

/// A state to fill fixed-size buffers with before anything arrives (a body at the origin, still): never drawn.
pub fn placeholder_state() -> BodyState {
    tumble_game::sync::codec::quantize::dequantize_state(&QuantizedState::default())
}

/// Everything a slice says before its bodies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceHeader {
    pub compressed: bool,
    /// Snapshot number, counting from 0.
    pub sequence: u32,
    /// The server step the snapshot was taken after.
    pub step: u32,
    /// The newest of player 2's input steps the server had received (its input ack).
    pub input_ack: Option<u32>,
    pub body_count: u32,
    pub slice_index: u32,
    pub slice_count: u32,
    pub first_body: u32,
    pub bodies: u32,
    /// Compressed only: the snapshot the bodies are delta-coded against.
    pub baseline: Option<u32>,
}

fn serialize_option_u32<S: Stream>(s: &mut S, v: &mut Option<u32>) -> Result<(), SerializeError> {
    let mut has = v.is_some();
    s.serialize_bool(&mut has)?;
    let mut x = v.unwrap_or(0);
    if has {
        s.serialize_u32(&mut x)?;
    }
    *v = has.then_some(x);
    Ok(())
}

impl SliceHeader {
    /// Reads or writes the header. `body_count`: the world's, which a read slice must match.
    pub fn serialize<S: Stream>(&mut self, s: &mut S, body_count: u32) -> Result<(), SnapshotError> {
        let mut tag = SLICE_TAG;
        s.serialize_bits(&mut tag, 8)?;
        if tag != SLICE_TAG {
            return Err(SerializeError::UnknownPacketType(tag).into());
        }
        s.serialize_bool(&mut self.compressed)?;
        s.serialize_u32(&mut self.sequence)?;
        s.serialize_u32(&mut self.step)?;
        serialize_option_u32(s, &mut self.input_ack)?;
        s.serialize_uint(&mut self.body_count, MAX_CUBES)?;
        if self.body_count != body_count {
            return Err(SnapshotError::WrongBodyCount {
                got: self.body_count,
                want: body_count,
            });
        }
        s.serialize_uint(&mut self.slice_index, MAX_SLICES - 1)?;
        s.serialize_uint(&mut self.slice_count, MAX_SLICES)?;
        s.serialize_uint(&mut self.first_body, MAX_CUBES)?;
        s.serialize_uint(&mut self.bodies, MAX_CUBES)?;
        let end = self.first_body.saturating_add(self.bodies);
        if self.slice_index >= self.slice_count || end > body_count || self.bodies == 0 {
            return Err(SnapshotError::BadRange {
                index: self.slice_index,
                count: self.slice_count,
                first: self.first_body,
                end,
            });
        }
        if self.compressed {
            serialize_option_u32(s, &mut self.baseline)?;
        } else {
            self.baseline = None;
        }
        Ok(())
    }

    /// The bodies this slice carries, as a range of indices.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.first_body as usize..(self.first_body + self.bodies) as usize
    }
}

/// The compressed bodies of one slice: `states` (this slice's range of the snapshot) against `baseline` (the
/// same range of the baseline snapshot), if any — an unchanged body is one 0 bit, a changed one a 1 bit and its
/// whole quantized state.
pub fn serialize_compressed<S: Stream>(
    s: &mut S,
    states: &mut [QuantizedState],
    baseline: Option<&[QuantizedState]>,
) -> Result<(), SnapshotError> {
    for (i, state) in states.iter_mut().enumerate() {
        let base = baseline.map(|b| &b[i]);
        let mut changed = base.is_none_or(|b| b != state);
        if base.is_some() {
            s.serialize_bool(&mut changed)?;
        }
        if changed {
            serialize_absolute(s, state)?;
            if S::IS_READING && base == Some(state) {
                return Err(SnapshotError::NonCanonical);
            }
        } else if let Some(b) = base {
            *state = *b;
        }
    }
    Ok(())
}

fn serialize_f32<S: Stream>(s: &mut S, v: &mut f32) -> Result<(), SerializeError> {
    let mut bits = v.to_bits();
    s.serialize_u32(&mut bits)?;
    *v = f32::from_bits(bits);
    if v.is_finite() {
        Ok(())
    } else {
        Err(SerializeError::ValueOutOfRange)
    }
}

/// The uncompressed bodies of one slice: position, rotation, both velocities as raw floats, and the rest flag.
pub fn serialize_raw<S: Stream>(s: &mut S, states: &mut [BodyState]) -> Result<(), SnapshotError> {
    for b in states.iter_mut() {
        for v in [&mut b.position, &mut b.linear_velocity, &mut b.angular_velocity] {
            serialize_f32(s, &mut v.x)?;
            serialize_f32(s, &mut v.y)?;
            serialize_f32(s, &mut v.z)?;
        }
        let mut q = b.rotation.to_array();
        for c in &mut q {
            serialize_f32(s, c)?;
        }
        b.rotation = glam::Quat::from_array(q);
        s.serialize_bool(&mut b.at_rest)?;
    }
    Ok(())
}

/// Player 2's packet: the newest snapshot it holds complete (the server's baseline from then on) and its unacked
/// inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientPacket {
    pub snapshot_ack: Option<u32>,
    pub inputs: InputPacket,
}

impl ClientPacket {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
        let mut tag = CLIENT_TAG;
        s.serialize_bits(&mut tag, 8)?;
        if tag != CLIENT_TAG {
            return Err(SerializeError::UnknownPacketType(tag));
        }
        serialize_option_u32(s, &mut self.snapshot_ack)?;
        self.inputs.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};
    use tumble_game::cube_game::CubeInput;
    use tumble_game::sync::codec::quantize::quantize_state;
    use tumble_net::{ReadStream, WriteStream};

    fn body(i: usize, at_rest: bool) -> BodyState {
        BodyState {
            position: Vec3::new(i as f32 * 1.25, 0.5, -3.0),
            rotation: Quat::from_rotation_y(i as f32 * 0.3),
            linear_velocity: if at_rest { Vec3::ZERO } else { Vec3::new(1.0, -2.0, 0.5) },
            angular_velocity: if at_rest { Vec3::ZERO } else { Vec3::new(0.0, 3.0, 0.0) },
            at_rest,
        }
    }

    fn header(compressed: bool, baseline: Option<u32>, bodies: u32) -> SliceHeader {
        SliceHeader {
            compressed,
            sequence: 7,
            step: 21,
            input_ack: Some(19),
            body_count: bodies,
            slice_index: 0,
            slice_count: 1,
            first_body: 0,
            bodies,
            baseline,
        }
    }

    fn write_compressed(h: &SliceHeader, states: &[QuantizedState], base: Option<&[QuantizedState]>) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let mut w = WriteStream::new(&mut buf);
        let mut h2 = *h;
        h2.serialize(&mut w, h.body_count).unwrap();
        let mut s = states.to_vec();
        serialize_compressed(&mut w, &mut s, base).unwrap();
        let n = w.finish().unwrap();
        buf.truncate(n);
        buf
    }

    fn read_compressed(
        bytes: &[u8],
        n: u32,
        base: Option<&[QuantizedState]>,
    ) -> Result<(SliceHeader, Vec<QuantizedState>), SnapshotError> {
        let mut r = ReadStream::new(bytes);
        let mut h = SliceHeader::default();
        h.serialize(&mut r, n)?;
        let mut s = vec![QuantizedState::default(); h.bodies as usize];
        serialize_compressed(&mut r, &mut s, base)?;
        r.finish()?;
        Ok((h, s))
    }

    #[test]
    fn delta_against_an_acked_baseline_reconstructs_exactly_and_unchanged_bodies_cost_a_bit() {
        let base: Vec<_> = (0..40).map(|i| quantize_state(&body(i, i % 3 != 0))).collect();
        let mut now = base.clone();
        now[5] = quantize_state(&body(105, false));
        now[17] = quantize_state(&body(117, true));
        let h = header(true, Some(3), 40);
        let full = write_compressed(&header(true, None, 40), &now, None);
        let delta = write_compressed(&h, &now, Some(&base));
        let (rh, back) = read_compressed(&delta, 40, Some(&base)).unwrap();
        assert_eq!((rh, back.as_slice()), (h, now.as_slice()));
        assert_eq!(read_compressed(&full, 40, None).unwrap().1, now);
        // 38 unchanged bodies at one bit, 2 changed in full: far under the full snapshot.
        assert!(
            delta.len() * 8 < full.len(),
            "{} bytes against {}",
            delta.len(),
            full.len()
        );
        // Against a different baseline the same bytes give different states: the baseline matters.
        let other: Vec<_> = (0..40).map(|i| quantize_state(&body(i + 1, true))).collect();
        assert_ne!(read_compressed(&delta, 40, Some(&other)).ok().map(|x| x.1), Some(now));
    }

    #[test]
    fn raw_bodies_round_trip_bit_for_bit() {
        let mut states: Vec<_> = (0..5).map(|i| body(i, i == 2)).collect();
        let mut buf = vec![0u8; 1024];
        let mut w = WriteStream::new(&mut buf);
        let mut h = header(false, None, 5);
        h.serialize(&mut w, 5).unwrap();
        serialize_raw(&mut w, &mut states).unwrap();
        let n = w.finish().unwrap();
        assert!(n * 8 >= 5 * RAW_BODY_BITS && n * 8 <= SLICE_HEADER_MAX_BITS + 5 * RAW_BODY_BITS + 7);
        let mut r = ReadStream::new(&buf[..n]);
        let mut rh = SliceHeader::default();
        rh.serialize(&mut r, 5).unwrap();
        let mut back = vec![placeholder_state(); 5];
        serialize_raw(&mut r, &mut back).unwrap();
        r.finish().unwrap();
        assert_eq!(back, states);
    }

    #[test]
    fn truncated_garbage_and_inconsistent_slices_are_errors() {
        let states: Vec<_> = (0..10).map(|i| quantize_state(&body(i, false))).collect();
        let bytes = write_compressed(&header(true, None, 10), &states, None);
        for cut in 0..bytes.len() {
            assert!(read_compressed(&bytes[..cut], 10, None).is_err(), "cut at {cut}");
        }
        assert!(matches!(
            read_compressed(&bytes, 11, None),
            Err(SnapshotError::WrongBodyCount { .. })
        ));
        let mut rng = 0x1234_5678_u64;
        for _ in 0..2000 {
            let garbage: Vec<u8> = (0..64)
                .map(|_| {
                    rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    (rng >> 56) as u8
                })
                .collect();
            let _ = read_compressed(&garbage, 10, None);
        }
        let mut bad = header(true, None, 10);
        bad.slice_index = 3;
        bad.slice_count = 2;
        let mut buf = vec![0u8; 64];
        let mut w = WriteStream::new(&mut buf);
        let mut b2 = bad;
        b2.serialize(&mut w, 10).unwrap_err();
    }

    #[test]
    fn client_packet_round_trips() {
        let mut inputs = InputPacket::default();
        inputs.first_step[1] = 300;
        inputs.inputs[1] = vec![
            CubeInput::from_bits(4),
            CubeInput::from_bits(4),
            CubeInput::from_bits(20),
        ];
        let mut p = ClientPacket {
            snapshot_ack: Some(41),
            inputs,
        };
        let mut buf = vec![0u8; 256];
        let mut w = WriteStream::new(&mut buf);
        p.serialize(&mut w).unwrap();
        let n = w.finish().unwrap();
        let mut back = ClientPacket::default();
        let mut r = ReadStream::new(&buf[..n]);
        back.serialize(&mut r).unwrap();
        r.finish().unwrap();
        assert_eq!(back, p);
        for cut in 0..n - 1 {
            let mut r = ReadStream::new(&buf[..cut]);
            assert!(ClientPacket::default()
                .serialize(&mut r)
                .and_then(|_| r.finish())
                .is_err());
        }
    }
}
