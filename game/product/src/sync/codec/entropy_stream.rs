//! `Stream`s that entropy-code with [`crate::sync::codec::range_coder`]: the same serialize functions that drive the bit
//! packer write and read through them, so the two paths cannot disagree on fields, ranges or order.
//!
//! Each field names its [`context`] before it is serialized; each context has its own adaptive models, fresh
//! (even odds) at the start of every packet, so a packet decodes on its own whatever was lost before it. Within a
//! packet the models learn fast what the bit packer spends full bits on: the encoding flag that is nearly always
//! "not changed", baseline ages that are all about one round trip, residuals of a unit or two.
//!
//! How an integer is coded depends on its range: up to 64 values, bit by bit down a binary tree of adaptive
//! probabilities; up to 2^14 (residuals, ages), as an adaptive zero flag, sign and bit length, then the bits below
//! the leading one at even odds; wider fields (absolute positions, velocities) at even odds, as the packer would.

use tumble_net::serialize::bits_required;
use tumble_net::{SerializeError, Stream};

use crate::sync::codec::range_coder::{BitModel, RangeCoderError, RangeDecoder, RangeEncoder};

/// The fields of a state packet, each with its own models.
pub mod context {
    /// "Another update follows" flag before each update.
    pub const MORE: u32 = 0;
    pub const CUBE_ID: u32 = 1;
    pub const BASELINE_AGE: u32 = 2;
    /// The encoding's flag chain: one context per link (`ENCODING_FLAG + i`, i < 3).
    pub const ENCODING_FLAG: u32 = 3;
    pub const AT_REST: u32 = 6;
    pub const POSITION: u32 = 7;
    pub const ROTATION_INDEX: u32 = 8;
    pub const ROTATION: u32 = 9;
    pub const LINEAR_VELOCITY: u32 = 10;
    pub const ANGULAR_VELOCITY: u32 = 11;
    /// Residuals: `RESIDUAL + 3 * field + part`, field 0..4 (position, rotation, linear, angular velocity), part
    /// 0 the "exact" flag, 1 the "small" flag, 2 the values.
    pub const RESIDUAL: u32 = 12;
    /// The authority stamp: the "same as the reference" flag, the authority index, the two sequences.
    pub const STAMP_SAME: u32 = 24;
    pub const STAMP_AUTHORITY: u32 = 25;
    pub const STAMP_SEQUENCE: u32 = 26;
    /// Avatars (`avatar_state`): a pose field's "exact" flag, its residual class, residuals of head and hand
    /// positions and rotations, the tracked / "same" / "held" flags, values sent in full.
    pub const AVATAR_EXACT: u32 = 27;
    pub const AVATAR_CLASS: u32 = 28;
    pub const AVATAR_HEAD_POSITION: u32 = 29;
    pub const AVATAR_HAND_POSITION: u32 = 30;
    pub const AVATAR_HEAD_ROTATION: u32 = 31;
    pub const AVATAR_HAND_ROTATION: u32 = 32;
    pub const AVATAR_FLAG: u32 = 33;
    pub const AVATAR_VALUE: u32 = 34;
    /// Contexts in all.
    pub const COUNT: usize = 35;
}

/// Widest integer range coded down a tree (6 bits).
const TREE_BITS_MAX: u32 = 6;
/// Widest range coded by zero flag, sign and bit length; wider ones go at even odds.
const LENGTH_CODED_BITS_MAX: u32 = 14;

/// One context's adaptive models.
#[derive(Clone, Copy, Debug)]
struct Model {
    flag: BitModel,
    /// Binary tree over up to [`TREE_BITS_MAX`] bits, node 1 the root.
    tree: [BitModel; 1 << TREE_BITS_MAX],
    zero: BitModel,
    sign: BitModel,
    /// Binary tree over the bit length (0..16) of a length-coded magnitude.
    length: [BitModel; 16],
    /// For short magnitudes (bit length 2..=[`MODELLED_LENGTH_MAX`]), a tree per length over the bits below the
    /// leading one: small values that cluster (ages about one round trip) then cost well under their bits.
    low: [[BitModel; 1 << (MODELLED_LENGTH_MAX - 1)]; MODELLED_LENGTH_MAX as usize - 1],
}

/// Longest magnitude whose lower bits are modelled; longer ones send those bits at even odds.
const MODELLED_LENGTH_MAX: u32 = 5;

impl Default for Model {
    fn default() -> Self {
        Self {
            flag: BitModel::FRESH,
            tree: [BitModel::FRESH; 1 << TREE_BITS_MAX],
            zero: BitModel::FRESH,
            sign: BitModel::FRESH,
            length: [BitModel::FRESH; 16],
            low: [[BitModel::FRESH; 1 << (MODELLED_LENGTH_MAX - 1)]; MODELLED_LENGTH_MAX as usize - 1],
        }
    }
}

type Models = [Model; context::COUNT];

fn fresh_models() -> Models {
    [Model::default(); context::COUNT]
}

fn context_index(context: u32) -> usize {
    (context as usize).min(context::COUNT - 1)
}

/// The one description of how values map to coded bits, shared by the writer and the reader: `code_bit` codes
/// one modelled bit (writing `bit`, or returning what was read), `code_direct` some bits at even odds.
trait Coder {
    fn models(&mut self) -> &mut Models;
    fn context(&self) -> usize;
    fn code_bit(&mut self, model: &mut BitModel, bit: bool) -> Result<bool, SerializeError>;

    /// A copy of the current context's models (put back with [`Coder::put_model`]).
    fn model(&mut self) -> Model {
        let c = self.context();
        self.models()[c]
    }

    fn put_model(&mut self, model: Model) {
        let c = self.context();
        self.models()[c] = model;
    }

    fn code_direct(&mut self, value: u32, bits: u32) -> Result<u32, SerializeError>;

    /// `bits` bits of `value` down the tree `tree` (most significant first).
    fn code_tree(&mut self, tree: &mut [BitModel], value: u32, bits: u32) -> Result<u32, SerializeError> {
        let mut node = 1usize;
        for i in (0..bits).rev() {
            let bit = self.code_bit(&mut tree[node], (value >> i) & 1 != 0)?;
            node = (node << 1) | usize::from(bit);
        }
        Ok(node as u32 - (1 << bits))
    }

    /// A magnitude ≥ 1 of at most `max_bits` bits: its bit length through the length tree, then the bits below the
    /// leading one. A length over `max_bits` reads as garbage.
    fn code_magnitude(&mut self, model: &mut Model, magnitude: u32, max_bits: u32) -> Result<u32, SerializeError> {
        let length = self.code_tree(&mut model.length, bits_required(u64::from(magnitude)), 4)?;
        if length == 0 || length > max_bits {
            return Err(SerializeError::ValueOutOfRange);
        }
        let below_bits = magnitude & ((1 << (length - 1)) - 1);
        let below = if (2..=MODELLED_LENGTH_MAX).contains(&length) {
            self.code_tree(&mut model.low[length as usize - 2], below_bits, length - 1)?
        } else {
            self.code_direct(below_bits, length - 1)?
        };
        Ok((1 << (length - 1)) | below)
    }

    /// An integer in `min..=max` (the caller checks the range when reading).
    fn code_int(&mut self, model: &mut Model, value: i32, min: i32, max: i32) -> Result<i64, SerializeError> {
        let span = (i64::from(max) - i64::from(min)) as u64;
        let bits = bits_required(span);
        let offset = (i64::from(value) - i64::from(min)) as u32;
        if bits <= TREE_BITS_MAX {
            return Ok(i64::from(min) + i64::from(self.code_tree(&mut model.tree, offset, bits)?));
        }
        if bits > LENGTH_CODED_BITS_MAX {
            return Ok(i64::from(min) + i64::from(self.code_direct(offset, bits)?));
        }
        if min < 0 && max > 0 {
            // Signed, centred on zero: residuals.
            if !self.code_bit(&mut model.zero, value != 0)? {
                return Ok(0);
            }
            let negative = self.code_bit(&mut model.sign, value < 0)?;
            let magnitude = self.code_magnitude(model, value.unsigned_abs(), bits)?;
            Ok(if negative {
                -i64::from(magnitude)
            } else {
                i64::from(magnitude)
            })
        } else {
            // From the bottom of the range, shifted by one so it is ≥ 1.
            Ok(i64::from(min) + i64::from(self.code_magnitude(model, offset + 1, bits + 1)?) - 1)
        }
    }
}

/// Entropy-coding writer into a caller's buffer. `Copy`-like state is saved with [`EntropyWriteStream::save`] and
/// put back with [`EntropyWriteStream::restore`], so an update that does not fit can be taken back out.
pub struct EntropyWriteStream<'a> {
    buf: &'a mut [u8],
    state: WriterState,
}

/// What [`EntropyWriteStream::save`] keeps.
#[derive(Clone, Copy)]
pub struct WriterState {
    encoder: RangeEncoder,
    models: Models,
    context: usize,
}

impl<'a> EntropyWriteStream<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            state: WriterState {
                encoder: RangeEncoder::default(),
                models: fresh_models(),
                context: 0,
            },
        }
    }

    pub fn save(&self) -> WriterState {
        self.state
    }

    pub fn restore(&mut self, saved: &WriterState) {
        self.state = *saved;
    }

    /// Bytes the stream would need if finished now, at most.
    pub fn bytes_bound(&self) -> usize {
        self.state.encoder.bytes_bound()
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Ends the stream; returns its length in bytes.
    pub fn finish(self) -> Result<usize, SerializeError> {
        self.state.encoder.finish(self.buf).map_err(overflow)
    }
}

fn overflow(_: RangeCoderError) -> SerializeError {
    SerializeError::Overflow
}

impl Coder for EntropyWriteStream<'_> {
    fn models(&mut self) -> &mut Models {
        &mut self.state.models
    }

    fn context(&self) -> usize {
        self.state.context
    }

    fn code_bit(&mut self, model: &mut BitModel, bit: bool) -> Result<bool, SerializeError> {
        self.state.encoder.encode_bit(self.buf, model, bit).map_err(overflow)?;
        Ok(bit)
    }

    fn code_direct(&mut self, value: u32, bits: u32) -> Result<u32, SerializeError> {
        self.state
            .encoder
            .encode_direct(self.buf, value, bits)
            .map_err(overflow)?;
        Ok(value)
    }
}

/// Entropy-coding reader.
pub struct EntropyReadStream<'a> {
    decoder: RangeDecoder<'a>,
    models: Models,
    context: usize,
}

impl<'a> EntropyReadStream<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            decoder: RangeDecoder::new(bytes),
            models: fresh_models(),
            context: 0,
        }
    }

    /// True when the stream ended exactly where a writer would have ended it (no trailing bytes).
    pub fn ended_cleanly(&self) -> bool {
        self.decoder.ended_cleanly()
    }
}

impl Coder for EntropyReadStream<'_> {
    fn models(&mut self) -> &mut Models {
        &mut self.models
    }

    fn context(&self) -> usize {
        self.context
    }

    fn code_bit(&mut self, model: &mut BitModel, _bit: bool) -> Result<bool, SerializeError> {
        Ok(self.decoder.decode_bit(model))
    }

    fn code_direct(&mut self, _value: u32, bits: u32) -> Result<u32, SerializeError> {
        Ok(self.decoder.decode_direct(bits))
    }
}

/// The `Stream` methods, once for both: each takes the current context's model out, codes, and puts it back.
macro_rules! entropy_stream {
    ($ty:ident, $reading:expr) => {
        impl Stream for $ty<'_> {
            const IS_READING: bool = $reading;

            fn set_context(&mut self, context: u32) {
                self.set_context_index(context_index(context));
            }

            fn serialize_bits(&mut self, value: &mut u32, bits: u32) -> Result<(), SerializeError> {
                let mut model = self.model();
                let result = if bits <= TREE_BITS_MAX {
                    self.code_tree(&mut model.tree, *value, bits)
                } else {
                    self.code_direct(*value, bits)
                };
                self.put_model(model);
                *value = result?;
                Ok(())
            }

            fn serialize_bool(&mut self, value: &mut bool) -> Result<(), SerializeError> {
                let mut model = self.model();
                let result = self.code_bit(&mut model.flag, *value);
                self.put_model(model);
                *value = result?;
                Ok(())
            }

            fn serialize_int(&mut self, value: &mut i32, min: i32, max: i32) -> Result<(), SerializeError> {
                if Self::IS_WRITING && (*value < min || *value > max) {
                    return Err(SerializeError::ValueOutOfRange);
                }
                let mut model = self.model();
                let result = self.code_int(&mut model, *value, min, max);
                self.put_model(model);
                let v = result?;
                if v < i64::from(min) || v > i64::from(max) {
                    return Err(SerializeError::ValueOutOfRange);
                }
                *value = v as i32;
                Ok(())
            }

            fn serialize_uint(&mut self, value: &mut u32, max: u32) -> Result<(), SerializeError> {
                if max > i32::MAX as u32 {
                    return self.serialize_bits(value, 32);
                }
                let mut v = (*value).min(i32::MAX as u32) as i32;
                if Self::IS_WRITING && *value > max {
                    return Err(SerializeError::ValueOutOfRange);
                }
                self.serialize_int(&mut v, 0, max as i32)?;
                *value = v as u32;
                Ok(())
            }

            fn serialize_align(&mut self) -> Result<(), SerializeError> {
                Ok(())
            }

            fn serialize_bytes(&mut self, bytes: &mut [u8]) -> Result<(), SerializeError> {
                for b in bytes.iter_mut() {
                    *b = self.code_direct(u32::from(*b), 8)? as u8;
                }
                Ok(())
            }

            fn bits_processed(&self) -> usize {
                self.bytes_processed() * 8
            }

            fn bits_left(&self) -> usize {
                self.bytes_left() * 8
            }
        }
    };
}

impl EntropyWriteStream<'_> {
    fn set_context_index(&mut self, context: usize) {
        self.state.context = context;
    }

    fn bytes_processed(&self) -> usize {
        self.bytes_bound()
    }

    fn bytes_left(&self) -> usize {
        self.buf.len().saturating_sub(self.bytes_bound())
    }
}

impl EntropyReadStream<'_> {
    fn set_context_index(&mut self, context: usize) {
        self.context = context;
    }

    fn bytes_processed(&self) -> usize {
        self.decoder.bytes_taken()
    }

    fn bytes_left(&self) -> usize {
        self.decoder.bytes_unread()
    }
}

entropy_stream!(EntropyWriteStream, false);
entropy_stream!(EntropyReadStream, true);

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_net::rng::Rng;

    /// The values and ranges a packet might hold, written then read through one serialize function.
    fn fields<S: Stream>(s: &mut S, values: &mut [(i32, i32, i32)], flags: &mut [bool]) -> Result<(), SerializeError> {
        for (i, (v, min, max)) in values.iter_mut().enumerate() {
            s.set_context(i as u32 % 5);
            s.serialize_int(v, *min, *max)?;
        }
        s.set_context(7);
        flags.iter_mut().try_for_each(|f| s.serialize_bool(f))
    }

    #[test]
    fn every_kind_of_range_round_trips() {
        let mut rng = Rng::new(11);
        let ranges = [
            (0, 63),
            (-15, 15),
            (-2047, 2047),
            (0, 255),
            (-(1 << 20), (1 << 20) - 1),
            (5, 5),
            (-3, 400),
        ];
        for _ in 0..200 {
            let mut values: Vec<(i32, i32, i32)> = (0..40)
                .map(|i| {
                    let (min, max) = ranges[i % ranges.len()];
                    let span = (i64::from(max) - i64::from(min) + 1) as u64;
                    // Mostly small values, sometimes the edges.
                    let v = match rng.below(4) {
                        0 => min,
                        1 => max,
                        _ => (i64::from(min) + (rng.next_u64() % span) as i64) as i32,
                    };
                    (v, min, max)
                })
                .collect();
            let mut flags: Vec<bool> = (0..20).map(|_| rng.below(10) == 0).collect();
            let mut buf = [0u8; 512];
            let mut w = EntropyWriteStream::new(&mut buf);
            fields(&mut w, &mut values, &mut flags).unwrap();
            let n = w.finish().unwrap();
            let mut r = EntropyReadStream::new(&buf[..n]);
            let mut got: Vec<(i32, i32, i32)> = values.iter().map(|&(_, min, max)| (min, min, max)).collect();
            let mut got_flags = vec![false; flags.len()];
            fields(&mut r, &mut got, &mut got_flags).unwrap();
            assert_eq!(got, values);
            assert_eq!(got_flags, flags);
            assert!(r.ended_cleanly());
        }
    }

    #[test]
    fn out_of_range_writes_are_refused_and_garbage_never_panics() {
        let mut buf = [0u8; 64];
        let mut w = EntropyWriteStream::new(&mut buf);
        assert_eq!(w.serialize_int(&mut 16, -15, 15), Err(SerializeError::ValueOutOfRange));
        let mut rng = Rng::new(5);
        for _ in 0..2000 {
            let len = rng.below(40);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
            let mut r = EntropyReadStream::new(&bytes);
            for (min, max) in [(-2047, 2047), (0, 100), (-15, 15), (-(1 << 20), 1 << 20)] {
                let mut v = 0;
                if r.serialize_int(&mut v, min, max).is_ok() {
                    assert!((min..=max).contains(&v));
                }
            }
        }
    }

    #[test]
    fn skewed_fields_cost_less_than_the_bit_packer() {
        // Thirty "not changed" updates: a 1-bit flag and an 8-bit age of about a round trip, each.
        let mut buf = [0u8; 128];
        let mut w = EntropyWriteStream::new(&mut buf);
        let mut rng = Rng::new(2);
        for _ in 0..30 {
            w.set_context(context::BASELINE_AGE);
            w.serialize_uint(&mut (9 + rng.below(3) as u32), 255).unwrap();
            w.set_context(context::ENCODING_FLAG);
            w.serialize_bool(&mut true).unwrap();
        }
        let n = w.finish().unwrap();
        assert!(n * 8 < 30 * 9 * 6 / 10, "{} bits for what packs in {}", n * 8, 30 * 9);
    }
}
