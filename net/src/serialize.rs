//! The `Stream` trait: one serialize function per type that both writes and reads.
//!
//! A type implements `fn serialize<S: Stream>(&mut self, s: &mut S)`. With a `WriteStream` the calls read the
//! fields and emit bits; with a `ReadStream` the same calls fill the fields in. The field order, bit widths and
//! ranges therefore cannot disagree between sender and receiver. Reads validate every value against its range.

use crate::bitpack::{BitReader, BitWriter};
use thiserror::Error;

/// Why a packet could not be written or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SerializeError {
    #[error("buffer full")]
    Overflow,
    #[error("read past the end of the packet")]
    ReadPastEnd,
    #[error("value outside its declared range")]
    ValueOutOfRange,
    #[error("non-zero padding bits")]
    NonZeroPadding,
    #[error("variable-length integer longer than 64 bits")]
    VarintTooLong,
    #[error("non-finite float")]
    NotFinite,
    #[error("unknown packet type {0}")]
    UnknownPacketType(u32),
    #[error("wrong protocol id")]
    WrongProtocol,
    #[error("trailing bytes after the packet")]
    TrailingBytes,
}

/// Number of bits needed to hold every value in 0..=max.
pub const fn bits_required(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// A bit stream that either writes or reads. The provided methods are written once and serve both directions.
pub trait Stream {
    const IS_READING: bool;
    const IS_WRITING: bool = !Self::IS_READING;

    /// Writes the low `bits` (0..=32) of `*value`, or reads them into `*value`.
    fn serialize_bits(&mut self, value: &mut u32, bits: u32) -> Result<(), SerializeError>;
    /// Zero padding to the next byte boundary.
    fn serialize_align(&mut self) -> Result<(), SerializeError>;
    /// A fixed-length, byte-aligned array.
    fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), SerializeError>;
    /// Bits written or read so far.
    fn bits_processed(&self) -> usize;
    /// Bits left to read (reading) or room left (writing).
    fn bits_left(&self) -> usize;
    /// Names the field the next calls serialize. An entropy-coding stream keeps a probability model per context;
    /// the bit packer has none and ignores it.
    fn set_context(&mut self, _context: u32) {}

    fn serialize_bool(&mut self, value: &mut bool) -> Result<(), SerializeError> {
        let mut bit = u32::from(*value);
        self.serialize_bits(&mut bit, 1)?;
        *value = bit != 0;
        Ok(())
    }

    fn serialize_u8(&mut self, value: &mut u8) -> Result<(), SerializeError> {
        let mut v = u32::from(*value);
        self.serialize_bits(&mut v, 8)?;
        *value = v as u8;
        Ok(())
    }

    fn serialize_u16(&mut self, value: &mut u16) -> Result<(), SerializeError> {
        let mut v = u32::from(*value);
        self.serialize_bits(&mut v, 16)?;
        *value = v as u16;
        Ok(())
    }

    fn serialize_u32(&mut self, value: &mut u32) -> Result<(), SerializeError> {
        self.serialize_bits(value, 32)
    }

    fn serialize_u64(&mut self, value: &mut u64) -> Result<(), SerializeError> {
        let mut lo = *value as u32;
        let mut hi = (*value >> 32) as u32;
        self.serialize_bits(&mut lo, 32)?;
        self.serialize_bits(&mut hi, 32)?;
        *value = u64::from(lo) | (u64::from(hi) << 32);
        Ok(())
    }

    /// An integer in `min..=max`, in exactly as many bits as the range needs. Writing a value outside the range
    /// is a caller error; reading one (possible when the range is not a power of two) means garbage.
    fn serialize_int(&mut self, value: &mut i32, min: i32, max: i32) -> Result<(), SerializeError> {
        debug_assert!(min <= max);
        let range = (i64::from(max) - i64::from(min)) as u64;
        let bits = bits_required(range);
        let mut offset = 0u32;
        if Self::IS_WRITING {
            if *value < min || *value > max {
                return Err(SerializeError::ValueOutOfRange);
            }
            offset = (i64::from(*value) - i64::from(min)) as u32;
        }
        self.serialize_bits(&mut offset, bits)?;
        if Self::IS_READING {
            if u64::from(offset) > range {
                return Err(SerializeError::ValueOutOfRange);
            }
            *value = (i64::from(min) + i64::from(offset)) as i32;
        }
        Ok(())
    }

    /// An unsigned integer in `0..=max`.
    fn serialize_uint(&mut self, value: &mut u32, max: u32) -> Result<(), SerializeError> {
        let bits = bits_required(u64::from(max));
        if Self::IS_WRITING && *value > max {
            return Err(SerializeError::ValueOutOfRange);
        }
        self.serialize_bits(value, bits)?;
        if Self::IS_READING && *value > max {
            return Err(SerializeError::ValueOutOfRange);
        }
        Ok(())
    }

    /// A float in `min..=max` quantized to steps no larger than `resolution`; the reader gets the quantized value,
    /// within `resolution / 2` of what was written.
    fn serialize_float_range(
        &mut self,
        value: &mut f32,
        min: f32,
        max: f32,
        resolution: f32,
    ) -> Result<(), SerializeError> {
        debug_assert!(min < max && resolution > 0.0);
        let steps = float_steps(min, max, resolution);
        let mut q = 0u32;
        if Self::IS_WRITING {
            if !value.is_finite() {
                return Err(SerializeError::NotFinite);
            }
            if *value < min || *value > max {
                return Err(SerializeError::ValueOutOfRange);
            }
            let t = (f64::from(*value) - f64::from(min)) / (f64::from(max) - f64::from(min));
            q = ((t * f64::from(steps)).round() as u32).min(steps);
        }
        self.serialize_uint(&mut q, steps)?;
        if Self::IS_READING {
            let t = f64::from(q) / f64::from(steps);
            *value = (f64::from(min) + t * (f64::from(max) - f64::from(min))) as f32;
        }
        Ok(())
    }

    /// LEB128-style: 7 bits per group, a continuation bit before each group. At most 10 groups; an overlong
    /// encoding of a value past 64 bits is rejected.
    fn serialize_varint(&mut self, value: &mut u64) -> Result<(), SerializeError> {
        const MAX_GROUPS: u32 = 10;
        let mut result = 0u64;
        let mut remaining = *value;
        for group in 0..MAX_GROUPS {
            let mut more = u32::from(Self::IS_WRITING && (remaining >> 7) != 0);
            let mut bits7 = (remaining & 0x7f) as u32;
            self.serialize_bits(&mut more, 1)?;
            self.serialize_bits(&mut bits7, 7)?;
            let shift = group * 7;
            if shift == 63 && bits7 > 1 {
                return Err(SerializeError::VarintTooLong);
            }
            result |= u64::from(bits7) << shift;
            remaining >>= 7;
            if more == 0 {
                *value = result;
                return Ok(());
            }
        }
        Err(SerializeError::VarintTooLong)
    }

    /// A byte vector of at most `max_len` bytes: the length is bounded before anything is allocated, and the reader
    /// also checks that the packet holds that many bytes.
    fn serialize_byte_vec(&mut self, bytes: &mut Vec<u8>, max_len: usize) -> Result<(), SerializeError> {
        let mut len = bytes.len() as u32;
        self.serialize_uint(&mut len, max_len as u32)?;
        if Self::IS_READING {
            self.serialize_align()?;
            if len as usize * 8 > self.bits_left() {
                return Err(SerializeError::ReadPastEnd);
            }
            bytes.clear();
            bytes.resize(len as usize, 0);
        }
        self.serialize_bytes(bytes)
    }
}

/// Quantization steps for a float range: enough that no step exceeds `resolution`.
fn float_steps(min: f32, max: f32, resolution: f32) -> u32 {
    let steps = ((f64::from(max) - f64::from(min)) / f64::from(resolution)).ceil();
    steps.clamp(1.0, f64::from(u32::MAX)) as u32
}

/// Writes into a caller-provided buffer.
#[derive(Debug)]
pub struct WriteStream<'a> {
    writer: BitWriter<'a>,
}

impl<'a> WriteStream<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        WriteStream {
            writer: BitWriter::new(buf),
        }
    }

    /// Pads to a byte and returns the byte length.
    pub fn finish(&mut self) -> Result<usize, SerializeError> {
        self.writer.finish()
    }
}

impl Stream for WriteStream<'_> {
    const IS_READING: bool = false;

    fn serialize_bits(&mut self, value: &mut u32, bits: u32) -> Result<(), SerializeError> {
        if bits == 0 {
            return Ok(());
        }
        self.writer.write_bits(*value, bits)
    }

    fn serialize_align(&mut self) -> Result<(), SerializeError> {
        self.writer.align()
    }

    fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), SerializeError> {
        self.writer.write_bytes(bytes)
    }

    fn bits_processed(&self) -> usize {
        self.writer.bits_written()
    }

    fn bits_left(&self) -> usize {
        self.writer.bits_available()
    }
}

/// Reads from a received packet.
#[derive(Debug)]
pub struct ReadStream<'a> {
    reader: BitReader<'a>,
}

impl<'a> ReadStream<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        ReadStream {
            reader: BitReader::new(buf),
        }
    }

    /// A packet must end within its last byte: anything after the padding is garbage.
    pub fn finish(&mut self) -> Result<(), SerializeError> {
        self.reader.align()?;
        if self.reader.bits_remaining() != 0 {
            return Err(SerializeError::TrailingBytes);
        }
        Ok(())
    }
}

impl Stream for ReadStream<'_> {
    const IS_READING: bool = true;

    fn serialize_bits(&mut self, value: &mut u32, bits: u32) -> Result<(), SerializeError> {
        if bits == 0 {
            *value = 0;
            return Ok(());
        }
        *value = self.reader.read_bits(bits)?;
        Ok(())
    }

    fn serialize_align(&mut self) -> Result<(), SerializeError> {
        self.reader.align()
    }

    fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), SerializeError> {
        self.reader.read_bytes(bytes)
    }

    fn bits_processed(&self) -> usize {
        self.reader.bits_read()
    }

    fn bits_left(&self) -> usize {
        self.reader.bits_remaining()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test type exercising every serializer through one function.
    #[derive(Debug, Clone, PartialEq, Default)]
    struct Sample {
        flag: bool,
        small: i32,
        signed: i32,
        full: i32,
        uint: u32,
        float: f32,
        var: u64,
        wide: u64,
        fixed: [u8; 3],
        blob: Vec<u8>,
    }

    impl Sample {
        fn serialize<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
            s.serialize_bool(&mut self.flag)?;
            s.serialize_int(&mut self.small, 0, 5)?;
            s.serialize_int(&mut self.signed, -100, 100)?;
            s.serialize_int(&mut self.full, i32::MIN, i32::MAX)?;
            s.serialize_uint(&mut self.uint, 1000)?;
            s.serialize_float_range(&mut self.float, -10.0, 10.0, 0.01)?;
            s.serialize_varint(&mut self.var)?;
            s.serialize_u64(&mut self.wide)?;
            s.serialize_bytes(&mut self.fixed)?;
            s.serialize_byte_vec(&mut self.blob, 64)
        }
    }

    fn round_trip(mut value: Sample) -> Sample {
        let mut buf = [0u8; 256];
        let mut w = WriteStream::new(&mut buf);
        value.serialize(&mut w).unwrap();
        let n = w.finish().unwrap();
        let mut out = Sample::default();
        let mut r = ReadStream::new(&buf[..n]);
        out.serialize(&mut r).unwrap();
        r.finish().unwrap();
        out
    }

    #[test]
    fn round_trip_at_the_edges_of_every_range() {
        let lows = Sample {
            flag: false,
            small: 0,
            signed: -100,
            full: i32::MIN,
            uint: 0,
            float: -10.0,
            var: 0,
            wide: 0,
            fixed: [0; 3],
            blob: vec![],
        };
        let highs = Sample {
            flag: true,
            small: 5,
            signed: 100,
            full: i32::MAX,
            uint: 1000,
            float: 10.0,
            var: u64::MAX,
            wide: u64::MAX,
            fixed: [255; 3],
            blob: vec![0xab; 64],
        };
        assert_eq!(round_trip(lows.clone()), lows);
        assert_eq!(round_trip(highs.clone()), highs);
        for var in [1u64, 127, 128, 16383, 16384, 1 << 35, (1 << 63) - 1, 1 << 63] {
            let s = Sample { var, ..lows.clone() };
            assert_eq!(round_trip(s).var, var);
        }
    }

    #[test]
    fn floats_round_trip_within_half_the_resolution() {
        for i in 0..=2000 {
            let f = -10.0 + i as f32 * 0.01001;
            let f = f.min(10.0);
            let got = round_trip(Sample {
                float: f,
                ..Default::default()
            })
            .float;
            assert!((got - f).abs() <= 0.005 + 1e-5, "{f} -> {got}");
        }
    }

    #[test]
    fn out_of_range_writes_are_errors() {
        let mut buf = [0u8; 64];
        let mut w = WriteStream::new(&mut buf);
        assert_eq!(w.serialize_int(&mut 6, 0, 5), Err(SerializeError::ValueOutOfRange));
        assert_eq!(w.serialize_int(&mut -1, 0, 5), Err(SerializeError::ValueOutOfRange));
        assert_eq!(w.serialize_uint(&mut 9, 8), Err(SerializeError::ValueOutOfRange));
        assert_eq!(
            w.serialize_float_range(&mut 10.5, -10.0, 10.0, 0.1),
            Err(SerializeError::ValueOutOfRange)
        );
        assert_eq!(
            w.serialize_float_range(&mut { f32::NAN }, -10.0, 10.0, 0.1),
            Err(SerializeError::NotFinite)
        );
        assert_eq!(
            w.serialize_byte_vec(&mut vec![0; 9], 8),
            Err(SerializeError::ValueOutOfRange)
        );
    }

    #[test]
    fn garbage_reads_are_errors_not_panics() {
        // 0..=5 takes 3 bits: 6 and 7 are invalid.
        let mut r = ReadStream::new(&[0b111]);
        assert_eq!(r.serialize_int(&mut 0, 0, 5), Err(SerializeError::ValueOutOfRange));
        // A byte vector claiming more bytes than the packet holds allocates nothing.
        let mut r = ReadStream::new(&[60, 1, 2]);
        let mut v = Vec::new();
        assert_eq!(r.serialize_byte_vec(&mut v, 64), Err(SerializeError::ReadPastEnd));
        assert!(v.capacity() == 0);
        // Eleven continuation groups.
        let mut r = ReadStream::new(&[0xff; 12]);
        assert_eq!(r.serialize_varint(&mut 0), Err(SerializeError::VarintTooLong));
        // Trailing bytes.
        let mut r = ReadStream::new(&[1, 0]);
        r.serialize_u8(&mut 0).unwrap();
        assert_eq!(r.finish(), Err(SerializeError::TrailingBytes));
    }

    #[test]
    fn bits_required_matches_ranges() {
        assert_eq!(bits_required(0), 0);
        assert_eq!(bits_required(1), 1);
        assert_eq!(bits_required(5), 3);
        assert_eq!(bits_required(255), 8);
        assert_eq!(bits_required(256), 9);
        assert_eq!(bits_required(u32::MAX as u64), 32);
    }
}
