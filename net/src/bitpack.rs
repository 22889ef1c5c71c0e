//! Bit-level writer and reader over a byte slice, least significant bit first.
//!
//! Both sides hold at most 64 bits of scratch and touch the buffer a byte at a time, so there is no alignment or
//! endianness trap; every write checks the remaining room and every read checks the remaining bits.

use crate::serialize::SerializeError;

/// Writes bits into a caller-provided buffer (no allocation).
#[derive(Debug)]
pub struct BitWriter<'a> {
    buf: &'a mut [u8],
    scratch: u64,
    scratch_bits: u32,
    byte_pos: usize,
}

impl<'a> BitWriter<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        BitWriter {
            buf,
            scratch: 0,
            scratch_bits: 0,
            byte_pos: 0,
        }
    }

    pub fn bits_written(&self) -> usize {
        self.byte_pos * 8 + self.scratch_bits as usize
    }

    pub fn bits_available(&self) -> usize {
        self.buf.len() * 8 - self.bits_written()
    }

    /// Writes the low `bits` (1..=32) of `value`.
    pub fn write_bits(&mut self, value: u32, bits: u32) -> Result<(), SerializeError> {
        debug_assert!((1..=32).contains(&bits));
        if bits as usize > self.bits_available() {
            return Err(SerializeError::Overflow);
        }
        let mask = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
        self.scratch |= u64::from(value & mask) << self.scratch_bits;
        self.scratch_bits += bits;
        while self.scratch_bits >= 8 {
            self.buf[self.byte_pos] = self.scratch as u8;
            self.byte_pos += 1;
            self.scratch >>= 8;
            self.scratch_bits -= 8;
        }
        Ok(())
    }

    /// Zero bits up to the next byte boundary.
    pub fn align(&mut self) -> Result<(), SerializeError> {
        let pad = (8 - self.scratch_bits % 8) % 8;
        if pad > 0 {
            self.write_bits(0, pad)?;
        }
        Ok(())
    }

    /// Byte-aligned copy.
    pub fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), SerializeError> {
        self.align()?;
        let end = self.byte_pos + bytes.len();
        if end > self.buf.len() {
            return Err(SerializeError::Overflow);
        }
        self.buf[self.byte_pos..end].copy_from_slice(bytes);
        self.byte_pos = end;
        Ok(())
    }

    /// Pads the last partial byte and returns the number of bytes used.
    pub fn finish(&mut self) -> Result<usize, SerializeError> {
        self.align()?;
        Ok(self.byte_pos)
    }
}

/// Reads bits from a byte slice; reading past the end is an error, never a panic.
#[derive(Debug)]
pub struct BitReader<'a> {
    buf: &'a [u8],
    scratch: u64,
    scratch_bits: u32,
    byte_pos: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        BitReader {
            buf,
            scratch: 0,
            scratch_bits: 0,
            byte_pos: 0,
        }
    }

    pub fn bits_read(&self) -> usize {
        self.byte_pos * 8 - self.scratch_bits as usize
    }

    pub fn bits_remaining(&self) -> usize {
        self.buf.len() * 8 - self.bits_read()
    }

    pub fn read_bits(&mut self, bits: u32) -> Result<u32, SerializeError> {
        debug_assert!((1..=32).contains(&bits));
        if bits as usize > self.bits_remaining() {
            return Err(SerializeError::ReadPastEnd);
        }
        while self.scratch_bits < bits {
            self.scratch |= u64::from(self.buf[self.byte_pos]) << self.scratch_bits;
            self.byte_pos += 1;
            self.scratch_bits += 8;
        }
        let mask = if bits == 32 {
            u32::MAX as u64
        } else {
            (1u64 << bits) - 1
        };
        let value = (self.scratch & mask) as u32;
        self.scratch >>= bits;
        self.scratch_bits -= bits;
        Ok(value)
    }

    /// Skips to the next byte boundary; the skipped bits must be zero, which catches some garbage early.
    pub fn align(&mut self) -> Result<(), SerializeError> {
        let pad = self.scratch_bits % 8;
        if pad > 0 && self.read_bits(pad)? != 0 {
            return Err(SerializeError::NonZeroPadding);
        }
        Ok(())
    }

    pub fn read_bytes(&mut self, out: &mut [u8]) -> Result<(), SerializeError> {
        self.align()?;
        // After align the scratch is empty: reads only load whole bytes, so what remains is under 8 bits.
        debug_assert_eq!(self.scratch_bits, 0);
        let end = self.byte_pos + out.len();
        if end > self.buf.len() {
            return Err(SerializeError::ReadPastEnd);
        }
        out.copy_from_slice(&self.buf[self.byte_pos..end]);
        self.byte_pos = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_at_every_width() {
        let mut buf = [0u8; 256];
        let mut w = BitWriter::new(&mut buf);
        for bits in 1..=32u32 {
            let max = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
            w.write_bits(max, bits).unwrap();
            w.write_bits(0, bits).unwrap();
        }
        let n = w.finish().unwrap();
        assert_eq!(n, (2 * (1..=32).sum::<usize>()).div_ceil(8));
        let mut r = BitReader::new(&buf[..n]);
        for bits in 1..=32u32 {
            let max = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
            assert_eq!(r.read_bits(bits).unwrap(), max);
            assert_eq!(r.read_bits(bits).unwrap(), 0);
        }
    }

    #[test]
    fn overflow_and_read_past_end_are_errors() {
        let mut buf = [0u8; 2];
        let mut w = BitWriter::new(&mut buf);
        w.write_bits(1, 15).unwrap();
        assert_eq!(w.write_bits(1, 2), Err(SerializeError::Overflow));
        w.write_bits(1, 1).unwrap();
        assert_eq!(w.write_bytes(&[1]), Err(SerializeError::Overflow));
        let mut r = BitReader::new(&buf);
        r.read_bits(10).unwrap();
        assert_eq!(r.read_bits(7), Err(SerializeError::ReadPastEnd));
        let mut r = BitReader::new(&[]);
        assert_eq!(r.read_bits(1), Err(SerializeError::ReadPastEnd));
        let mut out = [0u8; 3];
        assert_eq!(
            BitReader::new(&buf).read_bytes(&mut out),
            Err(SerializeError::ReadPastEnd)
        );
    }

    #[test]
    fn nonzero_padding_is_rejected() {
        let buf = [0b1111_0001u8, 7];
        let mut r = BitReader::new(&buf);
        assert_eq!(r.read_bits(1).unwrap(), 1);
        assert_eq!(r.align(), Err(SerializeError::NonZeroPadding));
    }
}
