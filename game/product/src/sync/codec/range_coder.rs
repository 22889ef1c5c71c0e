//! A binary adaptive range coder (the carry-less-cache design LZMA made common): each bit is coded with a
//! probability that adapts to the bits seen before it under the same model, so a flag that is nearly always 0
//! costs a fraction of a bit. Bits with no model ("direct" bits) cost exactly one.
//!
//! Built for packets of a few dozen bytes: the leading zero byte every such stream starts with is not written, and
//! the end is flushed with the fewest bytes that pin the final interval, trailing zero bytes dropped (the decoder
//! reads zeros past the end). Integer arithmetic only, so both ends agree bit for bit.

/// Probabilities are 11-bit fixed point: `p / 2048` is the chance of a 0.
pub const PROBABILITY_BITS: u32 = 11;
/// Adaptation: a model's first bit moves its probability half way, later ones a quarter of the way (faster than
/// is usual: a packet of a few dozen bytes is all a model ever sees, so it must learn from its first few bits;
/// measured on the table64 loopback run, maxima of 3, 4 and 5 cost 5, 12 and 21 % more bits per update).
const ADAPT_SHIFT_MAX: u16 = 2;
/// The range is renormalised (a byte shifted out) whenever it falls below this.
const TOP: u32 = 1 << 24;

/// One adaptive bit: its probability of a 0 (low 12 bits) and how many bits it has seen (high 4, saturating).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitModel(u16);

impl BitModel {
    /// A fresh model: even odds, nothing seen.
    pub const FRESH: BitModel = BitModel(1 << (PROBABILITY_BITS - 1));

    fn probability(self) -> u32 {
        u32::from(self.0 & 0x0FFF)
    }

    fn adapt(&mut self, bit: bool) {
        let seen = self.0 >> 12;
        let shift = (seen + 1).min(ADAPT_SHIFT_MAX);
        let mut p = self.0 & 0x0FFF;
        if bit {
            p -= p >> shift;
        } else {
            p += ((1u16 << PROBABILITY_BITS) - p) >> shift;
        }
        // Never certain: both bits keep a nonzero share of the range.
        let p = p.clamp(31, (1 << PROBABILITY_BITS) - 31);
        self.0 = ((seen + 1).min(15) << 12) | p;
    }
}

/// Why a coded stream could not be written or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeCoderError {
    /// The output buffer is full.
    Overflow,
}

/// Writes coded bits into a caller's buffer. `Copy`, so a caller can save it and roll back an unfinished write.
#[derive(Clone, Copy, Debug)]
pub struct RangeEncoder {
    /// Low end of the interval; bit 32 is a carry not yet propagated into the bytes held back.
    low: u64,
    range: u32,
    /// The byte held back (a carry may still change it), and how many 0xFF bytes follow it unwritten.
    cache: u8,
    pending_ff: u32,
    /// No byte has been shifted out yet: the first one is always 0 and is not written.
    first: bool,
    /// Bytes written to the buffer.
    written: usize,
}

impl Default for RangeEncoder {
    fn default() -> Self {
        Self {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending_ff: 0,
            first: true,
            written: 0,
        }
    }
}

impl RangeEncoder {
    fn put(&mut self, buf: &mut [u8], byte: u8) -> Result<(), RangeCoderError> {
        *buf.get_mut(self.written).ok_or(RangeCoderError::Overflow)? = byte;
        self.written += 1;
        Ok(())
    }

    fn shift_low(&mut self, buf: &mut [u8]) -> Result<(), RangeCoderError> {
        if self.low < 0xFF00_0000 || self.low >= 1 << 32 {
            let carry = (self.low >> 32) as u8;
            if !self.first {
                self.put(buf, self.cache.wrapping_add(carry))?;
            }
            self.first = false;
            for _ in 0..self.pending_ff {
                self.put(buf, 0xFFu8.wrapping_add(carry))?;
            }
            self.pending_ff = 0;
            self.cache = (self.low >> 24) as u8;
        } else {
            self.pending_ff += 1;
        }
        self.low = (self.low & 0x00FF_FFFF) << 8;
        Ok(())
    }

    fn normalize(&mut self, buf: &mut [u8]) -> Result<(), RangeCoderError> {
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low(buf)?;
        }
        Ok(())
    }

    /// Codes `bit` with `model`, then adapts it.
    pub fn encode_bit(&mut self, buf: &mut [u8], model: &mut BitModel, bit: bool) -> Result<(), RangeCoderError> {
        let bound = (self.range >> PROBABILITY_BITS) * model.probability();
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
        } else {
            self.range = bound;
        }
        model.adapt(bit);
        self.normalize(buf)
    }

    /// Codes the low `bits` of `value`, most significant first, each at even odds.
    pub fn encode_direct(&mut self, buf: &mut [u8], value: u32, bits: u32) -> Result<(), RangeCoderError> {
        for i in (0..bits).rev() {
            self.range >>= 1;
            if (value >> i) & 1 != 0 {
                self.low += u64::from(self.range);
            }
            self.normalize(buf)?;
        }
        Ok(())
    }

    /// Bytes the stream would take if finished now, at most (the flush may need fewer).
    pub fn bytes_bound(&self) -> usize {
        self.written + usize::from(!self.first) + self.pending_ff as usize + 4
    }

    /// Ends the stream: picks the value in the final interval with the most trailing zero bits, writes what pins it
    /// and drops trailing zero bytes. Returns the stream's length in bytes.
    pub fn finish(mut self, buf: &mut [u8]) -> Result<usize, RangeCoderError> {
        let high = self.low + u64::from(self.range) - 1;
        for k in (0..=32).rev() {
            let mask = (1u64 << k) - 1;
            let v = (self.low + mask) & !mask;
            if v <= high {
                self.low = v;
                break;
            }
        }
        for _ in 0..5 {
            self.shift_low(buf)?;
        }
        while self.written > 0 && buf[self.written - 1] == 0 {
            self.written -= 1;
        }
        Ok(self.written)
    }
}

/// Reads what [`RangeEncoder`] wrote; reads past the end see zeros (the encoder dropped them).
#[derive(Clone, Copy, Debug)]
pub struct RangeDecoder<'a> {
    bytes: &'a [u8],
    /// Bytes taken from the stream so far, zeros past its end included.
    taken: usize,
    code: u32,
    range: u32,
}

impl<'a> RangeDecoder<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        let mut d = Self {
            bytes,
            taken: 0,
            code: 0,
            range: u32::MAX,
        };
        for _ in 0..4 {
            d.code = (d.code << 8) | u32::from(d.next_byte());
        }
        d
    }

    fn next_byte(&mut self) -> u8 {
        let b = self.bytes.get(self.taken).copied().unwrap_or(0);
        self.taken += 1;
        b
    }

    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next_byte());
        }
    }

    pub fn decode_bit(&mut self, model: &mut BitModel) -> bool {
        let bound = (self.range >> PROBABILITY_BITS) * model.probability();
        let bit = self.code >= bound;
        if bit {
            self.code -= bound;
            self.range -= bound;
        } else {
            self.range = bound;
        }
        model.adapt(bit);
        self.normalize();
        bit
    }

    pub fn decode_direct(&mut self, bits: u32) -> u32 {
        let mut value = 0;
        for _ in 0..bits {
            self.range >>= 1;
            let bit = self.code >= self.range;
            if bit {
                self.code -= self.range;
            }
            value = (value << 1) | u32::from(bit);
            self.normalize();
        }
        value
    }

    /// Bytes taken so far (zeros read past the end included).
    pub fn bytes_taken(&self) -> usize {
        self.taken
    }

    /// Bytes of the stream not read yet.
    pub fn bytes_unread(&self) -> usize {
        self.bytes.len().saturating_sub(self.taken)
    }

    /// True when the stream was exactly what an encoder writes: every byte was needed and the last is not a zero
    /// the encoder would have dropped. Checked after the last symbol, it refuses trailing garbage.
    pub fn ended_cleanly(&self) -> bool {
        self.bytes.len() <= self.taken && self.bytes.last() != Some(&0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_net::rng::Rng;

    /// Codes `bits` (with a model that adapts, every third bit direct) and reads them back; returns the length.
    fn round_trip(bits: &[bool]) -> usize {
        let mut buf = vec![0u8; bits.len() / 4 + 16];
        let mut e = RangeEncoder::default();
        let mut p = BitModel::FRESH;
        for (i, &b) in bits.iter().enumerate() {
            if i % 3 == 2 {
                e.encode_direct(&mut buf, u32::from(b), 1).unwrap();
            } else {
                e.encode_bit(&mut buf, &mut p, b).unwrap();
            }
        }
        let bound = e.bytes_bound();
        let n = e.finish(&mut buf).unwrap();
        assert!(n <= bound, "{n} > {bound}");
        let mut d = RangeDecoder::new(&buf[..n]);
        let mut p = BitModel::FRESH;
        for (i, &b) in bits.iter().enumerate() {
            let got = if i % 3 == 2 {
                d.decode_direct(1) != 0
            } else {
                d.decode_bit(&mut p)
            };
            assert_eq!(got, b, "bit {i} of {}", bits.len());
        }
        assert!(d.ended_cleanly());
        n
    }

    #[test]
    fn random_streams_round_trip() {
        let mut rng = Rng::new(7);
        for len in [0usize, 1, 2, 7, 8, 31, 100, 1000, 5000] {
            for bias in [2u32, 10, 100] {
                let bits: Vec<bool> = (0..len).map(|_| rng.next_u32().is_multiple_of(bias)).collect();
                round_trip(&bits);
            }
        }
    }

    #[test]
    fn skewed_bits_cost_less_than_a_bit_each() {
        // 2,000 modelled bits, one in 50 set; every third is direct (a full bit): about 667 + a little.
        let mut rng = Rng::new(3);
        let bits: Vec<bool> = (0..2000).map(|_| rng.next_u32().is_multiple_of(50)).collect();
        let n = round_trip(&bits);
        assert!(n * 8 < 667 + 400, "{} bits", n * 8);
    }

    #[test]
    fn runs_of_carries_round_trip() {
        // Long runs of ones under a model expecting zeros push carries through many held-back 0xFF bytes.
        let mut bits = vec![false; 300];
        bits.extend(std::iter::repeat_n(true, 300));
        bits.extend(std::iter::repeat_n(false, 300));
        round_trip(&bits);
    }

    #[test]
    fn a_full_buffer_is_an_error() {
        let mut buf = [0u8; 2];
        let mut e = RangeEncoder::default();
        let result = (0..64).try_for_each(|i| e.encode_direct(&mut buf, i, 8));
        assert_eq!(result, Err(RangeCoderError::Overflow));
    }

    #[test]
    fn trailing_garbage_is_noticed() {
        let mut buf = [0u8; 16];
        let mut e = RangeEncoder::default();
        e.encode_direct(&mut buf, 0xABCD, 16).unwrap();
        let n = e.finish(&mut buf).unwrap();
        let mut long = buf[..n].to_vec();
        long.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
        let mut d = RangeDecoder::new(&long);
        assert_eq!(d.decode_direct(16), 0xABCD);
        assert!(!d.ended_cleanly());
    }
}
