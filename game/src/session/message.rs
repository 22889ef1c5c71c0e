//! The messages of a session, inside `tumble-net`'s connected packets. The first byte says which:
//!
//! - [`MESSAGE_STATE`]: a bit-packed header — the sender's step, on the host's packets a welcome until the guest has
//!   it (its player index, the scene's cube count and checksum), the cubes held in players' hands with their stamps
//!   and poses — then, from the next byte, a state packet body (`sync::codec::state_packet`) of cube updates.
//! - the reject notice (`sync::codec::reject_notice`), whose own first byte is its tag.
//!
//! One function ([`serialize_header`]) writes and reads the header; a read checks every value, and a message that
//! does not parse is refused whole.

use thiserror::Error;
use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

use crate::sync::codec::cube_state::{serialize_cube_id, serialize_rotation, CubeStateError, MAX_CUBES};
use crate::sync::codec::quantize::{QuantizedRotation, POSITION_BITS};
use crate::sync::codec::reject_notice::REJECT_NOTICE_TAG;
use crate::sync::codec::stamp::{serialize_stamp, AuthorityStamp, MAX_AUTHORITY};

/// First byte of a state message.
pub const MESSAGE_STATE: u8 = 1;
/// Most held cubes one message names: two hands for each of four players.
pub const MAX_HOLDS: usize = 8;

/// Why a message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum MessageError {
    #[error("empty message")]
    Empty,
    #[error("unknown message type {0}")]
    UnknownType(u8),
    #[error(transparent)]
    Stream(#[from] SerializeError),
    #[error(transparent)]
    Cube(#[from] CubeStateError),
    #[error("player index {0} outside 1..={MAX_AUTHORITY}")]
    BadPlayer(u32),
}

/// What a host tells a guest that just joined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Welcome {
    /// The guest's player index, 1..=4 (its authority index and colour).
    pub player: u8,
    pub cube_count: u32,
    /// Low 32 bits of the scene's initial `World::checksum`: a guest with another scene refuses to play.
    pub scene_checksum: u32,
}

/// A cube in a player's hand: who holds it, the claim, and where it is (the quantized pose of the cube).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hold {
    pub player: u8,
    pub cube: u32,
    pub stamp: AuthorityStamp,
    pub position: [i32; 3],
    pub rotation: QuantizedRotation,
}

/// A state message's header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateHeader {
    /// Low 32 bits of the sender's step.
    pub sender_step: u32,
    pub welcome: Option<Welcome>,
    pub holds: [Hold; MAX_HOLDS],
    pub hold_count: usize,
}

impl StateHeader {
    pub fn holds(&self) -> &[Hold] {
        &self.holds[..self.hold_count]
    }

    /// Adds a hold; false when the header is full.
    pub fn push_hold(&mut self, hold: Hold) -> bool {
        if self.hold_count == MAX_HOLDS {
            return false;
        }
        self.holds[self.hold_count] = hold;
        self.hold_count += 1;
        true
    }
}

fn serialize_player<S: Stream>(s: &mut S, player: &mut u8) -> Result<(), MessageError> {
    let mut p = u32::from(player.saturating_sub(1));
    s.serialize_uint(&mut p, u32::from(MAX_AUTHORITY) - 1)?;
    if p >= u32::from(MAX_AUTHORITY) {
        return Err(MessageError::BadPlayer(p + 1));
    }
    *player = p as u8 + 1;
    Ok(())
}

fn serialize_hold<S: Stream>(s: &mut S, h: &mut Hold, cube_count: u32) -> Result<(), MessageError> {
    serialize_player(s, &mut h.player)?;
    serialize_cube_id(s, &mut h.cube, cube_count)?;
    serialize_stamp(s, &mut h.stamp, &AuthorityStamp::DEFAULT)?;
    let (min, max) = (-(1 << (POSITION_BITS - 1)), (1 << (POSITION_BITS - 1)) - 1);
    for x in &mut h.position {
        s.serialize_int(x, min, max)?;
    }
    serialize_rotation(s, &mut h.rotation)?;
    Ok(())
}

/// The header of a state message (after the type byte). `cube_count` bounds cube ids; on a guest that has not been
/// welcomed yet it is the largest possible, and the welcome then says the real one.
pub fn serialize_header<S: Stream>(s: &mut S, h: &mut StateHeader, cube_count: u32) -> Result<(), MessageError> {
    s.serialize_bits(&mut h.sender_step, 32)?;
    let mut has_welcome = h.welcome.is_some();
    s.serialize_bool(&mut has_welcome)?;
    if has_welcome {
        let mut w = h.welcome.unwrap_or_default();
        serialize_player(s, &mut w.player)?;
        let mut count = w.cube_count.saturating_sub(1);
        s.serialize_uint(&mut count, MAX_CUBES - 1)?;
        w.cube_count = count + 1;
        s.serialize_bits(&mut w.scene_checksum, 32)?;
        h.welcome = Some(w);
    } else {
        h.welcome = None;
    }
    let mut count = h.hold_count as u32;
    s.serialize_uint(&mut count, MAX_HOLDS as u32)?;
    h.hold_count = count as usize;
    for hold in &mut h.holds[..count as usize] {
        serialize_hold(s, hold, cube_count)?;
    }
    s.serialize_align()?;
    Ok(())
}

/// Writes a state message's type byte and `header` at the start of `buf`; the state packet body goes right after,
/// written in place by the caller. Returns the header's length.
pub fn write_header(buf: &mut [u8], header: &StateHeader, cube_count: u32) -> Result<usize, MessageError> {
    let (first, rest) = buf.split_first_mut().ok_or(SerializeError::Overflow)?;
    *first = MESSAGE_STATE;
    let mut w = WriteStream::new(rest);
    serialize_header(&mut w, &mut { *header }, cube_count)?;
    Ok(1 + w.finish()?)
}

/// Writes a whole state message: type byte, `header`, then a copy of `body`. Returns the length.
pub fn write_state_message(
    buf: &mut [u8],
    header: &StateHeader,
    cube_count: u32,
    body: &[u8],
) -> Result<usize, MessageError> {
    let head = write_header(buf, header, cube_count)?;
    let end = head + body.len();
    buf.get_mut(head..end)
        .ok_or(SerializeError::Overflow)?
        .copy_from_slice(body);
    Ok(end)
}

/// Bytes [`write_header`] writes for `header`.
pub fn header_bytes(header: &StateHeader, cube_count: u32) -> Result<usize, MessageError> {
    write_header(&mut [0u8; 256], header, cube_count)
}

/// A message as read. (The state header is held inline: one message is read at a time, on the stack.)
#[derive(Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Message<'a> {
    State { header: StateHeader, body: &'a [u8] },
    RejectNotice(&'a [u8]),
}

/// Reads a message's type and, for a state message, its header; the body is returned unread.
pub fn read_message(bytes: &[u8], cube_count: u32) -> Result<Message<'_>, MessageError> {
    let (&kind, rest) = bytes.split_first().ok_or(MessageError::Empty)?;
    match kind {
        MESSAGE_STATE => {
            let mut r = ReadStream::new(rest);
            let mut header = StateHeader::default();
            serialize_header(&mut r, &mut header, cube_count)?;
            let used = r.bits_processed() / 8;
            Ok(Message::State {
                header,
                body: &rest[used..],
            })
        }
        k if u32::from(k) == REJECT_NOTICE_TAG => Ok(Message::RejectNotice(bytes)),
        k => Err(MessageError::UnknownType(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> StateHeader {
        let mut h = StateHeader {
            sender_step: 70_000,
            welcome: Some(Welcome {
                player: 3,
                cube_count: 64,
                scene_checksum: 0xdead_beef,
            }),
            ..StateHeader::default()
        };
        h.push_hold(Hold {
            player: 2,
            cube: 63,
            stamp: AuthorityStamp {
                authority: 2,
                authority_seq: 9,
                ownership_seq: 65535,
            },
            position: [-5, 4096, 1 << 19],
            rotation: QuantizedRotation::IDENTITY,
        });
        h
    }

    #[test]
    fn a_state_message_round_trips_with_its_body() {
        let h = header();
        let mut buf = [0u8; 200];
        let n = write_state_message(&mut buf, &h, 64, &[7, 8, 9]).unwrap();
        assert_eq!(n, header_bytes(&h, 64).unwrap() + 3);
        match read_message(&buf[..n], 64).unwrap() {
            Message::State { header, body } => {
                assert_eq!(header, h);
                assert_eq!(body, &[7, 8, 9]);
            }
            m => panic!("{m:?}"),
        }
    }

    #[test]
    fn damaged_messages_are_refused_never_a_panic() {
        let h = header();
        let mut buf = [0u8; 200];
        let n = write_state_message(&mut buf, &h, 64, &[]).unwrap();
        // Every truncation of the header is refused.
        for len in 0..n {
            assert!(read_message(&buf[..len], 64).is_err(), "length {len}");
        }
        // A cube id the scene does not have.
        assert!(read_message(&buf[..n], 32).is_err());
        // Unknown type.
        assert_eq!(read_message(&[9, 0, 0], 64), Err(MessageError::UnknownType(9)));
        // A million cases: random bytes and valid messages with bits flipped. Each is refused or parsed into a
        // header that writes back to the same bytes (so nothing out of range got in); never a panic.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut parsed, mut refused) = (0u32, 0u32);
        for case in 0..1_000_000u32 {
            let mut m = [0u8; 48];
            let len = if case % 2 == 0 {
                for b in &mut m {
                    *b = next() as u8;
                }
                m[0] = MESSAGE_STATE;
                (next() % 48) as usize
            } else {
                m[..n].copy_from_slice(&buf[..n]);
                for _ in 0..1 + next() % 3 {
                    let bit = (next() % (n as u64 * 8)) as usize;
                    m[bit / 8] ^= 1 << (bit % 8);
                }
                n
            };
            match read_message(&m[..len], 64) {
                Ok(Message::State { header, body }) => {
                    parsed += 1;
                    let mut again = [0u8; 200];
                    let k = write_state_message(&mut again, &header, 64, body).unwrap();
                    assert_eq!(read_message(&again[..k], 64), Ok(Message::State { header, body }));
                }
                Ok(Message::RejectNotice(_)) => parsed += 1,
                Err(_) => refused += 1,
            }
        }
        assert!(parsed > 1000 && refused > 1000, "{parsed} parsed, {refused} refused");
    }
}
