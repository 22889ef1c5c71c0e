//! The server's packet to the predicting client: the newest of the client's inputs the server has (every one
//! before it too: the ack), and the server's state after the step that used the client's input for step `c − 1`,
//! tagged `c` — the client's player cube, the server player's cube and that player's input, and as many of the
//! field cubes nearest the client's cube as fit [`MAX_STATE_PACKET_BYTES`]. States travel as their exact f32 bits
//! (the client rewinds to them, and a quantized state would be a correction of its own); a cube at rest sends its
//! pose only. Steps travel as their low 16 bits, unwrapped against the client's present step.
//!
//! The client's packet to the server is lockstep's [`crate::inputs::packet::InputPacket`]: every unacked input,
//! one bit when unchanged.
//!
//! One serialize function reads and writes ([`StatePacket::serialize`]); every read is range checked: a truncated
//! or garbage packet is an error, never a panic. Whether a cube id names a body is the reader's world's to say.

use glam::{Quat, Vec3};
use tumble_engine::physics::BodyState;
use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

use tumble_game::cube_game::input::{CubeInput, INPUT_BITS};

/// First byte of a prediction state packet.
pub const STATE_TAG: u32 = 0x53;
/// Most field cubes one packet carries.
pub const MAX_CARRIED_CUBES: usize = 63;
/// Largest packet the server writes (bytes): under a net packet's payload, with room to spare.
pub const MAX_STATE_PACKET_BYTES: usize = 1100;
const COUNT_BITS: usize = 6;
/// Bits of one body state: the rest flag, pose (7 floats), velocities (6 floats) unless at rest.
const fn body_state_bits(at_rest: bool) -> usize {
    1 + 7 * 32 + if at_rest { 0 } else { 6 * 32 }
}
/// Bits of one carried cube: its id (16 bits) and its state.
pub const fn carried_cube_bits(at_rest: bool) -> usize {
    16 + body_state_bits(at_rest)
}

/// A field cube's state in a packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CarriedCube {
    pub id: u16,
    pub state: BodyState,
}

/// One packet, as plain data.
#[derive(Clone, Debug, PartialEq)]
pub struct StatePacket {
    /// The newest client input step the server has, with every one before it.
    pub input_ack: Option<u16>,
    /// A state follows (none before the server has used the client's first input).
    pub has_state: bool,
    /// Low 16 bits of the client step `c` the state is at the start of.
    pub step: u16,
    /// The server player's input in the step that made it.
    pub other_input: CubeInput,
    /// The client's player cube.
    pub own: BodyState,
    /// The server player's cube.
    pub other: BodyState,
    /// Field cubes, nearest the client's cube first.
    pub cubes: Vec<CarriedCube>,
}

impl Default for StatePacket {
    fn default() -> Self {
        let zero = BodyState {
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            at_rest: false,
        };
        Self {
            input_ack: None,
            has_state: false,
            step: 0,
            other_input: CubeInput::NONE,
            own: zero,
            other: zero,
            cubes: Vec::new(),
        }
    }
}

impl StatePacket {
    /// An empty packet with room for the most cubes one can carry, so reading never allocates.
    pub fn with_capacity() -> Self {
        Self {
            cubes: Vec::with_capacity(MAX_CARRIED_CUBES),
            ..Self::default()
        }
    }

    /// Bits [`StatePacket::serialize`] writes for this packet (before rounding up to bytes).
    pub fn bits(&self) -> usize {
        let mut bits = 8 + 1 + 16 * usize::from(self.input_ack.is_some()) + 1;
        if self.has_state {
            bits += 16 + INPUT_BITS as usize + body_state_bits(self.own.at_rest) + body_state_bits(self.other.at_rest);
            bits += COUNT_BITS;
            bits += self
                .cubes
                .iter()
                .map(|c| carried_cube_bits(c.state.at_rest))
                .sum::<usize>();
        }
        bits
    }

    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
        let mut tag = STATE_TAG;
        s.serialize_bits(&mut tag, 8)?;
        if tag != STATE_TAG {
            return Err(SerializeError::UnknownPacketType(tag));
        }
        let mut has_ack = self.input_ack.is_some();
        s.serialize_bool(&mut has_ack)?;
        let mut ack = self.input_ack.unwrap_or(0);
        if has_ack {
            s.serialize_u16(&mut ack)?;
        }
        self.input_ack = has_ack.then_some(ack);
        s.serialize_bool(&mut self.has_state)?;
        if S::IS_READING {
            self.cubes.clear();
        }
        if !self.has_state {
            return Ok(());
        }
        s.serialize_u16(&mut self.step)?;
        let mut input = u32::from(self.other_input.bits());
        s.serialize_bits(&mut input, INPUT_BITS)?;
        self.other_input = CubeInput::from_bits(input as u8);
        serialize_body_state(s, &mut self.own)?;
        serialize_body_state(s, &mut self.other)?;
        let mut count = self.cubes.len() as u32;
        s.serialize_bits(&mut count, COUNT_BITS as u32)?;
        if count as usize > MAX_CARRIED_CUBES {
            return Err(SerializeError::ValueOutOfRange);
        }
        for k in 0..count as usize {
            let mut cube = if S::IS_WRITING {
                self.cubes[k]
            } else {
                CarriedCube { id: 0, state: self.own }
            };
            s.serialize_u16(&mut cube.id)?;
            serialize_body_state(s, &mut cube.state)?;
            if S::IS_READING {
                self.cubes.push(cube);
            }
        }
        Ok(())
    }

    /// Writes the packet into `buf`; returns its length in bytes.
    pub fn write(&mut self, buf: &mut [u8]) -> Result<usize, SerializeError> {
        if self.cubes.len() > MAX_CARRIED_CUBES {
            return Err(SerializeError::ValueOutOfRange);
        }
        let mut w = WriteStream::new(buf);
        self.serialize(&mut w)?;
        w.finish()
    }

    /// Reads a whole packet into `self` (its cube vector reused); anything malformed or left over is an error.
    pub fn read(&mut self, bytes: &[u8]) -> Result<(), SerializeError> {
        let mut r = ReadStream::new(bytes);
        self.serialize(&mut r)?;
        r.finish()
    }
}

/// A float as its exact bits; a non-finite one is refused either way.
fn serialize_f32<S: Stream>(s: &mut S, value: &mut f32) -> Result<(), SerializeError> {
    let mut bits = value.to_bits();
    s.serialize_u32(&mut bits)?;
    let v = f32::from_bits(bits);
    if !v.is_finite() {
        return Err(SerializeError::NotFinite);
    }
    *value = v;
    Ok(())
}

fn serialize_vec3<S: Stream>(s: &mut S, v: &mut Vec3) -> Result<(), SerializeError> {
    for x in [&mut v.x, &mut v.y, &mut v.z] {
        serialize_f32(s, x)?;
    }
    Ok(())
}

/// A body state: at rest, its pose only (its velocities are zero).
fn serialize_body_state<S: Stream>(s: &mut S, state: &mut BodyState) -> Result<(), SerializeError> {
    s.serialize_bool(&mut state.at_rest)?;
    serialize_vec3(s, &mut state.position)?;
    let mut q = state.rotation.to_array();
    for x in &mut q {
        serialize_f32(s, x)?;
    }
    state.rotation = Quat::from_array(q);
    if state.at_rest {
        if S::IS_READING {
            state.linear_velocity = Vec3::ZERO;
            state.angular_velocity = Vec3::ZERO;
        }
    } else {
        serialize_vec3(s, &mut state.linear_velocity)?;
        serialize_vec3(s, &mut state.angular_velocity)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(k: f32, at_rest: bool) -> BodyState {
        BodyState {
            position: Vec3::new(k, 0.5 + k * 1e-7, -k),
            rotation: Quat::from_rotation_y(k * 0.1),
            linear_velocity: if at_rest { Vec3::ZERO } else { Vec3::new(1.0, -k, 0.25) },
            angular_velocity: if at_rest { Vec3::ZERO } else { Vec3::new(0.0, k, 3.0) },
            at_rest,
        }
    }

    fn packet(cubes: usize) -> StatePacket {
        StatePacket {
            input_ack: Some(65_535),
            has_state: true,
            step: 12_345,
            other_input: CubeInput::from_bits(0b10_0101),
            own: state(1.5, false),
            other: state(-2.25, true),
            cubes: (0..cubes)
                .map(|k| CarriedCube {
                    id: 900 - k as u16,
                    state: state(k as f32, k % 3 == 0),
                })
                .collect(),
        }
    }

    fn round_trip(p: &StatePacket) -> (usize, StatePacket) {
        let mut buf = [0u8; 4096];
        let n = p.clone().write(&mut buf).unwrap();
        assert_eq!(n, p.bits().div_ceil(8), "bits() is what is written");
        let mut back = StatePacket::with_capacity();
        back.read(&buf[..n]).unwrap();
        (n, back)
    }

    #[test]
    fn packets_round_trip_bit_for_bit() {
        for p in [StatePacket::default(), packet(0), packet(5), packet(MAX_CARRIED_CUBES)] {
            let (_, back) = round_trip(&p);
            assert_eq!(back, p);
            assert_eq!(back.own.position.y.to_bits(), p.own.position.y.to_bits());
        }
        let (n, _) = round_trip(&packet(0));
        assert_eq!(
            n,
            (8usize + 1 + 16 + 1 + 16 + 6 + (1 + 13 * 32) + (1 + 7 * 32) + 6).div_ceil(8)
        );
        let mut buf = [0u8; 8192];
        let mut too_many = packet(MAX_CARRIED_CUBES + 1);
        assert!(too_many.write(&mut buf).is_err());
        let mut small = [0u8; 40];
        assert_eq!(packet(3).write(&mut small), Err(SerializeError::Overflow));
    }

    #[test]
    fn truncated_or_garbage_packets_are_errors_not_panics() {
        let mut buf = [0u8; 4096];
        let n = packet(4).write(&mut buf).unwrap();
        let mut p = StatePacket::with_capacity();
        for cut in 0..n {
            assert!(p.read(&buf[..cut]).is_err(), "cut at {cut} of {n}");
        }
        let mut long = buf[..n].to_vec();
        long.push(0);
        assert_eq!(p.read(&long), Err(SerializeError::TrailingBytes));
        let mut wrong = buf[..n].to_vec();
        wrong[0] = 0x4C;
        assert_eq!(p.read(&wrong), Err(SerializeError::UnknownPacketType(0x4C)));
        // A NaN where the own cube's x is: tag, no ack, a state, step, input, awake, then the float.
        let mut w = WriteStream::new(&mut buf);
        for (v, bits) in [(STATE_TAG, 8), (0, 1), (1, 1), (7, 16), (0, 6), (0, 1)] {
            w.serialize_bits(&mut { v }, bits).unwrap();
        }
        w.serialize_u32(&mut f32::NAN.to_bits()).unwrap();
        let m = w.finish().unwrap();
        assert_eq!(p.read(&buf[..m]), Err(SerializeError::NotFinite));
        let mut nan = packet(1);
        nan.cubes[0].state.position.x = f32::INFINITY;
        assert_eq!(
            nan.write(&mut buf),
            Err(SerializeError::NotFinite),
            "nor is one written"
        );
        // Garbage of every length never panics; whatever reads is within the limits.
        let mut rng = tumble_net::rng::Rng::new(2);
        let mut garbage = [0u8; 1200];
        for _ in 0..20_000 {
            let len = rng.below(garbage.len());
            garbage[..len].iter_mut().for_each(|b| *b = rng.next_u32() as u8);
            if rng.chance_pct(50.0) && len > 0 {
                garbage[0] = STATE_TAG as u8;
            }
            if p.read(&garbage[..len]).is_ok() {
                assert!(p.cubes.len() <= MAX_CARRIED_CUBES);
                assert!(p.own.position.is_finite() && p.other.rotation.is_finite());
            }
        }
    }
}
