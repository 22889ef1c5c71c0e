//! The receiver's complaint: "I refused a state packet". It travels back to the sender like any message (the
//! transport acked the refused packet all the same, so without it the sender would keep coding against states the
//! receiver never took). The sender answers by forgetting every acked baseline and sending absolute states until
//! fresh acks arrive; the receiver cannot say which cubes a packet it could not read was about, so all of them.
//!
//! Wire format, through the same `Stream` as everything else: a tag byte, then how many packets this receiver has
//! refused so far (16 bits, wrapping), so a duplicated or reordered notice can be told from a new one.

use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

/// First byte of a reject notice: state packets never travel this way, so any other first byte is something else.
pub const REJECT_NOTICE_TAG: u32 = 0xE1;
/// Bytes of a notice.
pub const REJECT_NOTICE_BYTES: usize = 3;

fn serialize_notice<S: Stream>(s: &mut S, refused: &mut u16) -> Result<(), SerializeError> {
    let mut tag = REJECT_NOTICE_TAG;
    s.serialize_bits(&mut tag, 8)?;
    if tag != REJECT_NOTICE_TAG {
        return Err(SerializeError::UnknownPacketType(tag));
    }
    s.serialize_u16(refused)
}

/// Writes the notice for the `refused`-th refused packet; returns its length.
pub fn write_reject_notice(buf: &mut [u8], refused: u16) -> Result<usize, SerializeError> {
    let mut w = WriteStream::new(buf);
    serialize_notice(&mut w, &mut { refused })?;
    w.finish()
}

/// Reads a notice: the receiver's count of refused packets.
pub fn read_reject_notice(bytes: &[u8]) -> Result<u16, SerializeError> {
    let mut r = ReadStream::new(bytes);
    let mut refused = 0;
    serialize_notice(&mut r, &mut refused)?;
    r.finish()?;
    Ok(refused)
}

/// The sender's side: which notices are new. Counts wrap at 16 bits; a notice is new when its count is ahead of
/// the last one seen (wrap-safe), so duplicates and stragglers change nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct RejectNotices {
    last: Option<u16>,
}

impl RejectNotices {
    /// True when `refused` reports a refusal not heard of before.
    pub fn is_new(&mut self, refused: u16) -> bool {
        let new = self
            .last
            .is_none_or(|last| refused != last && refused.wrapping_sub(last) < 0x8000);
        if new {
            self.last = Some(refused);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_and_anything_else_is_refused() {
        let mut buf = [0u8; 8];
        let n = write_reject_notice(&mut buf, 513).unwrap();
        assert_eq!(n, REJECT_NOTICE_BYTES);
        assert_eq!(read_reject_notice(&buf[..n]), Ok(513));
        assert!(read_reject_notice(&buf[..n - 1]).is_err());
        let mut long = buf[..n].to_vec();
        long.push(0);
        assert!(read_reject_notice(&long).is_err());
        buf[0] = 0x12;
        assert_eq!(
            read_reject_notice(&buf[..n]),
            Err(SerializeError::UnknownPacketType(0x12))
        );
    }

    #[test]
    fn duplicates_and_stragglers_are_not_new() {
        let mut seen = RejectNotices::default();
        assert!(seen.is_new(1));
        assert!(!seen.is_new(1), "duplicate");
        assert!(seen.is_new(3));
        assert!(!seen.is_new(2), "older, arriving late");
        // Across the 16-bit wrap.
        let mut wrapping = RejectNotices::default();
        assert!(wrapping.is_new(65_534));
        assert!(wrapping.is_new(1));
        assert!(!wrapping.is_new(65_535));
    }
}
