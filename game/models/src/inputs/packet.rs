//! The lockstep wire: each packet carries, for each player whose inputs the writer sends on this connection, every
//! input the other side has not acked, compressed — the oldest in full (6 bits), each next one as one bit when it
//! equals the one before, else that bit and its 6 bits — plus, for each player whose inputs the writer receives on
//! it, the newest step of them received with every one before it (the ack), and now and then a world checksum.
//! Two players send each other their own inputs; with more, the host relays: a guest sends its own to the host,
//! the host sends each guest everyone else's. Steps travel as their low 16 bits, unwrapped by the reader against
//! the step it expects ([`unwrap_step`]): no two sides are ever 32,768 steps (6 minutes) apart.
//!
//! One serialize function reads and writes ([`InputPacket::serialize`], net's `Stream`); every read is range
//! checked, and a packet that could be written two ways (a "changed" input equal to the one before, a player's
//! inputs said present and none given) is refused.

use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

use tumble_game::cube_game::input::{CubeInput, INPUT_BITS};

/// First byte of a lockstep packet.
pub const LOCKSTEP_TAG: u32 = 0x4C;
/// Most players a lockstep game has (the player index travels in the packet's fixed per-player slots).
pub const MAX_PLAYERS: usize = 4;
/// Most inputs of one player one packet carries (the oldest unacked first): 3.8 s at 90 Hz, 9 bits of count,
/// so a host's packet with three players' inputs stays within a datagram. A longer backlog waits for acks; at 2 s
/// round trip about 200 are in flight.
pub const MAX_INPUTS_PER_PACKET: usize = 341;
/// Largest packet [`InputPacket::serialize`] writes (bytes): tag, an ack per player, a presence bit per player,
/// three players' inputs all changed (a packet never carries the reader's own), the checksum.
pub const MAX_INPUT_PACKET_BYTES: usize = (8
    + MAX_PLAYERS * 17
    + MAX_PLAYERS
    + (MAX_PLAYERS - 1) * (9 + 16 + MAX_INPUTS_PER_PACKET * (1 + INPUT_BITS as usize))
    + 49)
    .div_ceil(8);

/// A world checksum sample: the game's checksum after step `exchange × N` folded to 32 bits (see
/// [`crate::lockstep::checksum`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChecksumSample {
    /// Low 16 bits of the exchange number.
    pub exchange: u16,
    pub value: u32,
}

/// One packet, as plain data, indexed by player. Steps are their low 16 bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputPacket {
    /// Per player: the newest of that player's steps the writer has received with every one before it.
    pub acks: [Option<u16>; MAX_PLAYERS],
    /// Per player: the step of its first input here (0 when it has none).
    pub first_step: [u16; MAX_PLAYERS],
    /// Per player: its inputs, oldest first (empty: none of that player's).
    pub inputs: [Vec<CubeInput>; MAX_PLAYERS],
    pub checksum: Option<ChecksumSample>,
}

impl InputPacket {
    /// An empty packet with room for the most inputs one can carry, so reading never allocates.
    pub fn with_capacity() -> Self {
        Self {
            inputs: std::array::from_fn(|_| Vec::with_capacity(MAX_INPUTS_PER_PACKET)),
            ..Self::default()
        }
    }

    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
        let mut tag = LOCKSTEP_TAG;
        s.serialize_bits(&mut tag, 8)?;
        if tag != LOCKSTEP_TAG {
            return Err(SerializeError::UnknownPacketType(tag));
        }
        for ack in &mut self.acks {
            serialize_option_u16(s, ack)?;
        }
        for p in 0..MAX_PLAYERS {
            serialize_inputs(s, &mut self.first_step[p], &mut self.inputs[p])?;
        }
        let mut has_checksum = self.checksum.is_some();
        s.serialize_bool(&mut has_checksum)?;
        if has_checksum {
            let mut c = self.checksum.unwrap_or_default();
            s.serialize_u16(&mut c.exchange)?;
            s.serialize_u32(&mut c.value)?;
            self.checksum = Some(c);
        } else {
            self.checksum = None;
        }
        Ok(())
    }

    /// Writes the packet into `buf`; returns its length in bytes.
    pub fn write(&mut self, buf: &mut [u8]) -> Result<usize, SerializeError> {
        if self.inputs.iter().any(|i| i.len() > MAX_INPUTS_PER_PACKET) {
            return Err(SerializeError::ValueOutOfRange);
        }
        let mut w = WriteStream::new(buf);
        self.serialize(&mut w)?;
        w.finish()
    }

    /// Reads a whole packet into `self` (its input vectors reused); anything malformed or left over is an error.
    pub fn read(&mut self, bytes: &[u8]) -> Result<(), SerializeError> {
        let mut r = ReadStream::new(bytes);
        self.serialize(&mut r)?;
        r.finish()
    }
}

/// One player's inputs: a presence bit, then the count, the first step and the inputs, each after the first as
/// one bit when unchanged.
fn serialize_inputs<S: Stream>(
    s: &mut S,
    first_step: &mut u16,
    inputs: &mut Vec<CubeInput>,
) -> Result<(), SerializeError> {
    let mut present = !inputs.is_empty();
    s.serialize_bool(&mut present)?;
    if S::IS_READING {
        inputs.clear();
        *first_step = 0;
    }
    if !present {
        return Ok(());
    }
    let mut count = inputs.len() as u32;
    s.serialize_uint(&mut count, MAX_INPUTS_PER_PACKET as u32)?;
    if count == 0 {
        return Err(SerializeError::ValueOutOfRange);
    }
    s.serialize_u16(first_step)?;
    let mut previous = None;
    for k in 0..count as usize {
        let mut bits = if S::IS_WRITING { u32::from(inputs[k].bits()) } else { 0 };
        let mut changed = previous.is_none_or(|p| p != bits);
        if previous.is_some() {
            s.serialize_bool(&mut changed)?;
        }
        if changed {
            s.serialize_bits(&mut bits, INPUT_BITS)?;
            if S::IS_READING && previous == Some(bits) {
                return Err(SerializeError::ValueOutOfRange);
            }
        } else if let Some(p) = previous {
            bits = p;
        }
        if S::IS_READING {
            inputs.push(CubeInput::from_bits(bits as u8));
        }
        previous = Some(bits);
    }
    Ok(())
}

fn serialize_option_u16<S: Stream>(s: &mut S, value: &mut Option<u16>) -> Result<(), SerializeError> {
    let mut present = value.is_some();
    s.serialize_bool(&mut present)?;
    let mut v = value.unwrap_or(0);
    if present {
        s.serialize_u16(&mut v)?;
    }
    *value = present.then_some(v);
    Ok(())
}

/// The full step whose low 16 bits are `low` nearest to `reference`; `None` if that would be before step 0.
pub fn unwrap_step(low: u16, reference: u64) -> Option<u64> {
    let delta = low.wrapping_sub(reference as u16) as i16;
    reference.checked_add_signed(i64::from(delta))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet with `inputs` as player 2's (index 1), and acks of players 1 and 4.
    fn packet(inputs: &[u8]) -> InputPacket {
        let mut p = InputPacket {
            acks: [Some(65_530), None, None, Some(3)],
            checksum: Some(ChecksumSample {
                exchange: 7,
                value: 0xdead_beef,
            }),
            ..InputPacket::default()
        };
        // Not sent without inputs: it reads back as 0.
        p.first_step[1] = if inputs.is_empty() { 0 } else { 65_535 };
        p.inputs[1] = inputs.iter().map(|&b| CubeInput::from_bits(b)).collect();
        p
    }

    fn round_trip(p: &InputPacket) -> (usize, InputPacket) {
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        let n = p.clone().write(&mut buf).unwrap();
        let mut back = InputPacket::with_capacity();
        back.read(&buf[..n]).unwrap();
        (n, back)
    }

    #[test]
    fn packets_round_trip_and_unchanged_inputs_cost_one_bit() {
        let mut relayed = packet(&[1, 2, 2]);
        relayed.first_step[0] = 40;
        relayed.inputs[0] = vec![CubeInput::from_bits(9); 5];
        relayed.first_step[3] = 41;
        relayed.inputs[3] = vec![CubeInput::from_bits(63)];
        for p in [
            packet(&[]),
            packet(&[5]),
            packet(&[5, 5, 5, 6, 6, 0, 63]),
            relayed,
            InputPacket::default(),
        ] {
            assert_eq!(round_trip(&p).1, p);
        }
        // 100 equal inputs: 6 bits for the first, one bit for each of the 99 others.
        let same = packet(&[9; 100]);
        let bits_empty: usize = 8 + 2 * 17 + 2 + 4 + 1 + 48;
        let (n, _) = round_trip(&same);
        assert_eq!(n, (bits_empty + 9 + 16 + 6 + 99).div_ceil(8));
        let alternating: Vec<u8> = (0..100).map(|k| (k % 2) as u8).collect();
        let (n, back) = round_trip(&packet(&alternating));
        assert_eq!(n, (bits_empty + 9 + 16 + 6 + 99 * 7).div_ceil(8));
        assert_eq!(back, packet(&alternating));
        // The largest packet (three players' inputs, every one changed, every ack) fits the bound and a net packet.
        let worst: Vec<CubeInput> = (0..MAX_INPUTS_PER_PACKET)
            .map(|k| CubeInput::from_bits((k % 2) as u8))
            .collect();
        let mut largest = packet(&[]);
        largest.acks = [Some(1); MAX_PLAYERS];
        for p in 1..MAX_PLAYERS {
            largest.first_step[p] = 1;
            largest.inputs[p] = worst.clone();
        }
        let (n, _) = round_trip(&largest);
        assert!(n <= MAX_INPUT_PACKET_BYTES, "{n} bytes");
        const { assert!(MAX_INPUT_PACKET_BYTES < tumble_net::MAX_PACKET_BYTES - 100) };
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        let mut too_many = packet(&vec![0; MAX_INPUTS_PER_PACKET + 1]);
        assert!(too_many.write(&mut buf).is_err());
    }

    #[test]
    fn malformed_packets_are_refused_without_panic() {
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        let n = packet(&[1, 1, 2, 3]).write(&mut buf).unwrap();
        let mut p = InputPacket::with_capacity();
        for cut in 0..n {
            assert!(p.read(&buf[..cut]).is_err(), "cut at {cut} of {n}");
        }
        let mut long = buf[..n].to_vec();
        long.push(0);
        assert_eq!(p.read(&long), Err(SerializeError::TrailingBytes));
        let mut wrong = buf[..n].to_vec();
        wrong[0] = 0x12;
        assert_eq!(p.read(&wrong), Err(SerializeError::UnknownPacketType(0x12)));
        // Written bit by bit: tag, no acks, then player 1's inputs as `inputs`, no other player's, no checksum.
        let write = |buf: &mut [u8], inputs: &[(u32, u32)]| {
            let mut w = WriteStream::new(buf);
            let fields = [(LOCKSTEP_TAG, 8), (0, 1), (0, 1), (0, 1), (0, 1)]
                .iter()
                .chain(inputs)
                .chain(&[(0, 1), (0, 1), (0, 1), (0, 1)]);
            for &(v, bits) in fields {
                w.serialize_bits(&mut { v }, bits).unwrap();
            }
            w.finish().unwrap()
        };
        // A "changed" input equal to the one before it: present, count 2, step 0, input 3, changed, input 3.
        let n = write(&mut buf, &[(1, 1), (2, 9), (0, 16), (3, 6), (1, 1), (3, 6)]);
        assert_eq!(p.read(&buf[..n]), Err(SerializeError::ValueOutOfRange));
        // Inputs said present, and none of them.
        let n = write(&mut buf, &[(1, 1), (0, 9)]);
        assert_eq!(p.read(&buf[..n]), Err(SerializeError::ValueOutOfRange));
        // A count over the most a packet carries.
        let n = write(&mut buf, &[(1, 1), (MAX_INPUTS_PER_PACKET as u32 + 1, 9)]);
        assert!(p.read(&buf[..n]).is_err());
        // The honest form of the first one reads.
        let n = write(&mut buf, &[(1, 1), (2, 9), (0, 16), (3, 6), (0, 1)]);
        p.read(&buf[..n]).unwrap();
        assert_eq!(p.inputs[0], vec![CubeInput::from_bits(3); 2]);
        // Garbage of every length never panics; whatever reads is within the limits.
        let mut rng = tumble_net::rng::Rng::new(1);
        let mut garbage = [0u8; 256];
        for _ in 0..20_000 {
            let len = rng.below(garbage.len());
            garbage[..len].iter_mut().for_each(|b| *b = rng.next_u32() as u8);
            if rng.chance_pct(50.0) && len > 0 {
                garbage[0] = LOCKSTEP_TAG as u8;
            }
            if p.read(&garbage[..len]).is_ok() {
                assert!(p.inputs.iter().all(|i| i.len() <= MAX_INPUTS_PER_PACKET));
            }
        }
    }

    #[test]
    fn steps_unwrap_to_the_nearest_one() {
        assert_eq!(unwrap_step(5, 0), Some(5));
        assert_eq!(unwrap_step(65_535, 0), None, "before step 0");
        assert_eq!(unwrap_step(65_535, 65_536 + 10), Some(65_535));
        assert_eq!(unwrap_step(3, 65_530), Some(65_539));
        // 1,000,000 = 15 × 65,536 + 16,960: the nearest step ending in 100 is 15 × 65,536 + 100.
        assert_eq!(unwrap_step(100, 1_000_000), Some(983_140));
    }
}
