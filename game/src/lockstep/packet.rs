//! The lockstep wire: each packet carries every input the other side has not acked, compressed — the oldest in
//! full (6 bits), each next one as one bit when it equals the one before, else that bit and its 6 bits — plus the
//! newest step of the other side's inputs received (every one before it has been too: the ack), and now and then
//! a world checksum. Steps travel as their low 16 bits, unwrapped by the reader against the step it expects
//! ([`unwrap_step`]): the two sides are never 32,768 steps (6 minutes) apart.
//!
//! One serialize function reads and writes ([`InputPacket::serialize`], net's `Stream`); every read is range
//! checked, and a packet that could be written two ways (a "changed" input equal to the one before) is refused.

use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

use crate::cube_game::input::{CubeInput, INPUT_BITS};

/// First byte of a lockstep packet.
pub const LOCKSTEP_TAG: u32 = 0x4C;
/// Most inputs one packet carries (the oldest unacked first): 11 s at 90 Hz, 10 bits of count. A longer backlog
/// waits for acks; at 2 s round trip about 200 are in flight.
pub const MAX_INPUTS_PER_PACKET: usize = 1023;
/// Largest packet [`InputPacket::serialize`] writes (bytes): tag, ack, count, first step, every input changed,
/// the checksum.
pub const MAX_INPUT_PACKET_BYTES: usize =
    (8 + 17 + 10 + 16 + MAX_INPUTS_PER_PACKET * (1 + INPUT_BITS as usize) + 49).div_ceil(8);

/// A world checksum sample: the game's checksum after step `exchange × N` folded to 32 bits (see
/// [`super::checksum`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChecksumSample {
    /// Low 16 bits of the exchange number.
    pub exchange: u16,
    pub value: u32,
}

/// One packet, as plain data. Steps are their low 16 bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputPacket {
    /// The newest of the reader's steps the writer has received with every one before it.
    pub ack: Option<u16>,
    /// Step of `inputs[0]`.
    pub first_step: u16,
    pub inputs: Vec<CubeInput>,
    pub checksum: Option<ChecksumSample>,
}

impl InputPacket {
    /// An empty packet with room for the most inputs one can carry, so reading never allocates.
    pub fn with_capacity() -> Self {
        Self {
            inputs: Vec::with_capacity(MAX_INPUTS_PER_PACKET),
            ..Self::default()
        }
    }

    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
        let mut tag = LOCKSTEP_TAG;
        s.serialize_bits(&mut tag, 8)?;
        if tag != LOCKSTEP_TAG {
            return Err(SerializeError::UnknownPacketType(tag));
        }
        serialize_option_u16(s, &mut self.ack)?;
        let mut count = self.inputs.len() as u32;
        s.serialize_uint(&mut count, MAX_INPUTS_PER_PACKET as u32)?;
        if count > 0 {
            s.serialize_u16(&mut self.first_step)?;
        } else if S::IS_READING {
            self.first_step = 0;
        }
        if S::IS_READING {
            self.inputs.clear();
        }
        let mut previous = None;
        for k in 0..count as usize {
            let mut bits = if S::IS_WRITING {
                u32::from(self.inputs[k].bits())
            } else {
                0
            };
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
                self.inputs.push(CubeInput::from_bits(bits as u8));
            }
            previous = Some(bits);
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
        if self.inputs.len() > MAX_INPUTS_PER_PACKET {
            return Err(SerializeError::ValueOutOfRange);
        }
        let mut w = WriteStream::new(buf);
        self.serialize(&mut w)?;
        w.finish()
    }

    /// Reads a whole packet into `self` (its input vector reused); anything malformed or left over is an error.
    pub fn read(&mut self, bytes: &[u8]) -> Result<(), SerializeError> {
        let mut r = ReadStream::new(bytes);
        self.serialize(&mut r)?;
        r.finish()
    }
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

    fn packet(inputs: &[u8]) -> InputPacket {
        InputPacket {
            ack: Some(65_530),
            // Not sent without inputs: it reads back as 0.
            first_step: if inputs.is_empty() { 0 } else { 65_535 },
            inputs: inputs.iter().map(|&b| CubeInput::from_bits(b)).collect(),
            checksum: Some(ChecksumSample {
                exchange: 7,
                value: 0xdead_beef,
            }),
        }
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
        for p in [
            packet(&[]),
            packet(&[5]),
            packet(&[5, 5, 5, 6, 6, 0, 63]),
            InputPacket::default(),
        ] {
            assert_eq!(round_trip(&p).1, p);
        }
        // 100 equal inputs: 6 bits for the first, one bit for each of the 99 others.
        let same = packet(&[9; 100]);
        let bits_empty: usize = 8 + 17 + 10 + 1 + 48;
        let (n, _) = round_trip(&same);
        assert_eq!(n, (bits_empty + 16 + 6 + 99).div_ceil(8));
        let alternating: Vec<u8> = (0..100).map(|k| (k % 2) as u8).collect();
        let (n, back) = round_trip(&packet(&alternating));
        assert_eq!(n, (bits_empty + 16 + 6 + 99 * 7).div_ceil(8));
        assert_eq!(back, packet(&alternating));
        // The largest packet fits the bound and a net packet.
        let worst: Vec<u8> = (0..MAX_INPUTS_PER_PACKET).map(|k| (k % 2) as u8).collect();
        let (n, _) = round_trip(&packet(&worst));
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
        // A "changed" input equal to the one before it: tag, no ack, count 2, step 0, input 3, changed, input 3.
        let mut w = WriteStream::new(&mut buf);
        for (v, bits) in [
            (LOCKSTEP_TAG, 8),
            (0, 1),
            (2, 10),
            (0, 16),
            (3, 6),
            (1, 1),
            (3, 6),
            (0, 1),
        ] {
            w.serialize_bits(&mut { v }, bits).unwrap();
        }
        let n = w.finish().unwrap();
        assert_eq!(p.read(&buf[..n]), Err(SerializeError::ValueOutOfRange));
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
                assert!(p.inputs.len() <= MAX_INPUTS_PER_PACKET);
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
