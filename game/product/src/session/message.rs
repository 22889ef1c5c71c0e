//! The messages of a session, inside `tumble-net`'s connected packets. The first byte says which:
//!
//! - [`MESSAGE_STATE`]: a bit-packed header — the sender's step, on the host's packets a welcome until the guest has
//!   it (its player index, the scene's cube count and checksum) and who is in the game (four bits), the avatars of the players the sender speaks for
//!   (each with the cubes in its hands: held cubes travel only there), the players' game inputs (one bit when
//!   there are none) — then, from the next byte, a state packet body
//!   (`sync::codec::state_packet`) of cube updates.
//! - the reject notice (`sync::codec::reject_notice`), whose own first byte is its tag.
//!
//! Avatars are coded against the avatars of one earlier message the receiver is known to hold (its transport ack
//! came back; `sync::link::avatar_baseline`), named by its age in sender steps, or absolute when there is none. An
//! avatar whose sample is the baseline's, made the expected number of steps later, is one bit; the baseline's own
//! sample again (a relay held while the receiver hears that player directly) two; otherwise its sample
//! step and `sync::codec::avatar_state::serialize_avatar` against the baseline's avatar of that player.
//!
//! Who an avatar belongs to is its slot (player 1–4). A guest's message should carry its own only; the format lets
//! it name any slot, and the host refuses an avatar in another player's slot (impersonation) by the connection it
//! came on, so a guest cannot speak for another.
//!
//! One function ([`serialize_header`]) writes and reads the header; a read checks every value, and a message that
//! does not parse is refused whole.

use std::net::{IpAddr, SocketAddr};

use thiserror::Error;
use tumble_net::crypto::DIRECT_KEY_BYTES;
use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

use crate::session::hello::{
    read_hello, read_refusal, Hello, HelloError, Refusal, LEGACY_MESSAGE_STATE, MESSAGE_HELLO, MESSAGE_REFUSED,
    PROTOCOL_VERSION,
};
use crate::sync::codec::avatar_state::{
    predict_avatar, serialize_avatar, serialize_trail, AvatarStateError, WireAvatar,
};
use crate::sync::codec::cube_state::{CubeStateError, MAX_CUBES};
use crate::sync::codec::reject_notice::REJECT_NOTICE_TAG;
use crate::sync::codec::stamp::MAX_AUTHORITY;
use crate::sync::link::avatar_baseline::{AvatarSample, AvatarSet, MAX_AVATAR_BASELINE_AGE_STEPS, NO_AVATARS};

/// First byte of a state message: its generation of the format, the protocol version that made it (1 was the first
/// generation's, with no hello; see `session::hello`). A peer of another version reads another's as an unknown type.
pub const MESSAGE_STATE: u8 = PROTOCOL_VERSION as u8;
/// Baseline ages up to this are written in [`SHORT_AGE_BITS`] bits (a round trip of up to 180 ms), longer ones in 8.
const SHORT_AGE_STEPS: u32 = 16;
const SHORT_AGE_BITS: u32 = 4;
/// A sample step within ±this of the expected one is a small residual (relayed avatars arrive at the host with the
/// jitter of their own link); farther, it is sent whole.
const STEP_RESIDUAL_MAX: i32 = 15;

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
    #[error(transparent)]
    Avatar(#[from] AvatarStateError),
    #[error("player index {0} outside 1..={MAX_AUTHORITY}")]
    BadPlayer(u32),
    #[error(transparent)]
    Hello(#[from] HelloError),
    /// The avatars are coded against a message this receiver does not hold (never between honest peers: the
    /// sender names only acked ones). The receiver tells the sender, which then codes absolute.
    #[error("avatar baseline of sender step {0} not held")]
    MissingAvatarBaseline(u32),
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

/// The host's introduction of another guest to a guest, so that the two send each other their avatars directly
/// (one hop instead of two through the host): the other's player index, its address as the host sees it, and the
/// keys the host made for the pair, as this guest uses them. Sent until acked; travels only inside the host's
/// sealed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Introduction {
    pub player: u8,
    pub addr: SocketAddr,
    pub send_key: [u8; DIRECT_KEY_BYTES],
    pub receive_key: [u8; DIRECT_KEY_BYTES],
}

/// A state message's header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateHeader {
    /// Low 32 bits of the sender's step.
    pub sender_step: u32,
    pub welcome: Option<Welcome>,
    /// Host to guest: another guest to link with directly, until acked (one bit when there is none).
    pub introduction: Option<Introduction>,
    /// Age (sender steps, 1..=[`MAX_AVATAR_BASELINE_AGE_STEPS`]) of the message whose avatars these are coded
    /// against; `None`: absolute.
    pub avatar_baseline_age: Option<u32>,
    /// Age of an older message the receiver holds too (only with a baseline): each avatar is then coded against its
    /// baseline sample carried on at the pace it moved since this one's (`avatar_state::predict_avatar`).
    pub avatar_prior_age: Option<u32>,
    /// The avatars carried, by player (index = player − 1).
    pub avatars: AvatarSet,
    /// The host's word on who is in the game: bit `p − 1` for each player `p` connected (the host's own player
    /// included when it plays). A guest forgets the avatar of a player who is not (a goodbye, a timeout); guests
    /// send `None`.
    pub present: Option<u8>,
    /// Guest to host: the other players whose avatars this guest hears over a live direct link (bit `p − 1` for
    /// player `p`); the host then relays those avatars to it only when their held cubes change (the claims still
    /// come through the host), not every message. The host sends `None`.
    pub hears_directly: Option<u8>,
    /// The game's own input of each player the sender speaks for, by player (index = player − 1): a byte whose
    /// meaning is the game's (the cube game's keys: roll, hover, blow, pull). A guest sends its own; the host its
    /// own and the newest it accepted from each other guest, so that every peer can apply every player's input to
    /// that player's cube and what it pushes. `None` where a player has none (a VR player's hands are its avatar).
    pub game_inputs: [Option<u8>; 4],
    /// The smallest lag (the receiver's step less this link's sender steps) the sender has seen on this link: the
    /// other side reads the offset of the two step counters from it (`peer::clock`). Sent now and then.
    pub lag_floor: Option<i32>,
}

impl StateHeader {
    /// The sender step of the avatar baseline, if any.
    pub fn avatar_baseline_step(&self) -> Option<u32> {
        self.avatar_baseline_age.map(|age| self.sender_step.wrapping_sub(age))
    }

    /// The sender step of the prior avatar set, if any.
    pub fn avatar_prior_step(&self) -> Option<u32> {
        self.avatar_prior_age.map(|age| self.sender_step.wrapping_sub(age))
    }

    /// Player `player`'s avatar, if carried.
    pub fn avatar(&self, player: u8) -> Option<&AvatarSample> {
        self.avatars.get(usize::from(player).checked_sub(1)?)?.as_ref()
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

fn serialize_baseline_age<S: Stream>(s: &mut S, age: &mut Option<u32>) -> Result<(), MessageError> {
    let mut has = age.is_some();
    s.serialize_bool(&mut has)?;
    if !has {
        *age = None;
        return Ok(());
    }
    let mut a = age.unwrap_or(1).clamp(1, MAX_AVATAR_BASELINE_AGE_STEPS) - 1;
    let mut short = a < SHORT_AGE_STEPS;
    s.serialize_bool(&mut short)?;
    if short {
        s.serialize_bits(&mut a, SHORT_AGE_BITS)?;
    } else {
        s.serialize_uint(&mut a, MAX_AVATAR_BASELINE_AGE_STEPS - 1)?;
    }
    *age = Some(a + 1);
    Ok(())
}

/// A sample step: "as expected", a small residual, or whole.
fn serialize_sample_step<S: Stream>(s: &mut S, step: &mut u32, expected: Option<u32>) -> Result<(), MessageError> {
    if let Some(expected) = expected {
        let mut d = step.wrapping_sub(expected) as i32;
        let mut exact = d == 0;
        s.serialize_bool(&mut exact)?;
        if exact {
            *step = expected;
            return Ok(());
        }
        let mut small = (-STEP_RESIDUAL_MAX..=STEP_RESIDUAL_MAX).contains(&d);
        s.serialize_bool(&mut small)?;
        if small {
            s.serialize_int(&mut d, -STEP_RESIDUAL_MAX, STEP_RESIDUAL_MAX)?;
            *step = expected.wrapping_add(d as u32);
            return Ok(());
        }
    }
    s.serialize_bits(step, 32)?;
    Ok(())
}

/// Samples further apart than this (steps), or a prediction further ahead, code against the baseline as it is: a
/// hand's motion is not carried on for longer.
const MAX_PREDICTED_STEPS: u32 = 30;

/// What an avatar is coded against: its baseline sample, carried on to `expected` at the pace it moved since the
/// prior sample when there is one (both ends compute it from the same integers).
fn avatar_reference(baseline: &AvatarSample, prior: Option<&AvatarSample>, expected: u32) -> WireAvatar {
    let ahead = expected.wrapping_sub(baseline.step);
    match prior {
        Some(p) => {
            let gap = baseline.step.wrapping_sub(p.step);
            if (1..=MAX_PREDICTED_STEPS).contains(&gap) && ahead <= MAX_PREDICTED_STEPS {
                predict_avatar(&baseline.avatar, &p.avatar, gap, ahead)
            } else {
                baseline.avatar
            }
        }
        None => baseline.avatar,
    }
}

/// One player's avatar against its baseline sample (if the baseline message carried one): one bit when unchanged
/// and on schedule, else the sample step and the avatar, coded against the baseline carried on from the prior
/// sample (if the prior message carried one).
fn serialize_avatar_sample<S: Stream>(
    s: &mut S,
    sample: &mut AvatarSample,
    baseline: Option<&AvatarSample>,
    prior: Option<&AvatarSample>,
    age: u32,
    cube_count: u32,
) -> Result<(), MessageError> {
    let expected = baseline.map(|b| b.step.wrapping_add(age));
    if let (Some(b), Some(expected)) = (baseline, expected) {
        let mut unchanged = sample.avatar == b.avatar && sample.step == expected;
        s.serialize_bool(&mut unchanged)?;
        if unchanged {
            *sample = AvatarSample {
                step: expected,
                avatar: b.avatar,
                trail: sample.trail,
            };
            return Ok(());
        }
        // The baseline's own sample again: the host's relay of a hand the receiver hears directly, held until its
        // cubes change (`peer::send::hold_directly_heard`).
        let mut again = sample.avatar == b.avatar && sample.step == b.step;
        s.serialize_bool(&mut again)?;
        if again {
            *sample = AvatarSample {
                step: b.step,
                avatar: b.avatar,
                trail: sample.trail,
            };
            return Ok(());
        }
    }
    serialize_sample_step(s, &mut sample.step, expected)?;
    let reference = baseline
        .zip(expected)
        .map(|(b, expected)| avatar_reference(b, prior, expected));
    serialize_avatar(s, &mut sample.avatar, reference.as_ref(), cube_count)?;
    Ok(())
}

/// The header of a state message (after the type byte). `cube_count` bounds cube ids; on a guest that has not been
/// welcomed yet it is the largest possible, and the welcome then says the real one. `baseline(step)` is the avatar
/// set of the sender's message of that step (the writer's acked record, the reader's ring); a read whose baseline
/// is not there is refused with [`MessageError::MissingAvatarBaseline`].
pub fn serialize_header<S: Stream>(
    s: &mut S,
    h: &mut StateHeader,
    cube_count: u32,
    baseline: impl Fn(u32) -> Option<AvatarSet>,
) -> Result<(), MessageError> {
    serialize_header_fields(s, h, cube_count, baseline)?;
    s.serialize_align()?;
    Ok(())
}

/// [`serialize_header`] short of the final alignment.
fn serialize_header_fields<S: Stream>(
    s: &mut S,
    h: &mut StateHeader,
    cube_count: u32,
    baseline: impl Fn(u32) -> Option<AvatarSet>,
) -> Result<(), MessageError> {
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
    let mut has_introduction = h.introduction.is_some();
    s.serialize_bool(&mut has_introduction)?;
    if has_introduction {
        let mut introduction = h.introduction.unwrap_or(Introduction {
            player: 1,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            send_key: [0; DIRECT_KEY_BYTES],
            receive_key: [0; DIRECT_KEY_BYTES],
        });
        serialize_introduction(s, &mut introduction)?;
        h.introduction = Some(introduction);
    } else {
        h.introduction = None;
    }
    serialize_player_mask(s, &mut h.present)?;
    serialize_player_mask(s, &mut h.hears_directly)?;
    serialize_baseline_age(s, &mut h.avatar_baseline_age)?;
    if h.avatar_baseline_age.is_some() {
        serialize_baseline_age(s, &mut h.avatar_prior_age)?;
    } else {
        h.avatar_prior_age = None;
    }
    let base = match h.avatar_baseline_step() {
        Some(step) => Some(baseline(step).ok_or(MessageError::MissingAvatarBaseline(step))?),
        None => None,
    };
    let prior = match h.avatar_prior_step() {
        Some(step) => Some(baseline(step).ok_or(MessageError::MissingAvatarBaseline(step))?),
        None => None,
    };
    let age = h.avatar_baseline_age.unwrap_or(0);
    for (slot, avatar) in h.avatars.iter_mut().enumerate() {
        let mut present = avatar.is_some();
        s.serialize_bool(&mut present)?;
        if !present {
            *avatar = None;
            continue;
        }
        let mut sample = avatar.unwrap_or_default();
        let reference = base.as_ref().and_then(|b| b[slot].as_ref());
        let before = prior.as_ref().and_then(|p| p[slot].as_ref());
        serialize_avatar_sample(s, &mut sample, reference, before, age, cube_count)?;
        serialize_trail(s, &mut sample.trail, &sample.avatar)?;
        *avatar = Some(sample);
    }
    serialize_game_inputs(s, &mut h.game_inputs)?;
    let mut has_floor = h.lag_floor.is_some();
    s.serialize_bool(&mut has_floor)?;
    if has_floor {
        let mut bits = h.lag_floor.unwrap_or(0) as u32;
        s.serialize_bits(&mut bits, 32)?;
        h.lag_floor = Some(bits as i32);
    } else {
        h.lag_floor = None;
    }
    Ok(())
}

/// A set of players (bit `p − 1` for player `p`), or none: a flag, and the bits when there is one.
fn serialize_player_mask<S: Stream>(s: &mut S, mask: &mut Option<u8>) -> Result<(), MessageError> {
    let mut present = mask.is_some();
    s.serialize_bool(&mut present)?;
    if present {
        let mut bits = u32::from(mask.unwrap_or(0));
        s.serialize_bits(&mut bits, u32::from(MAX_AUTHORITY))?;
        *mask = Some(bits as u8);
    } else {
        *mask = None;
    }
    Ok(())
}

/// Bytes as whole 32-bit words (`bytes.len()` a multiple of 4), unaligned.
fn serialize_words<S: Stream>(s: &mut S, bytes: &mut [u8]) -> Result<(), MessageError> {
    for word in bytes.chunks_exact_mut(4) {
        let mut w = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        s.serialize_bits(&mut w, 32)?;
        word.copy_from_slice(&w.to_le_bytes());
    }
    Ok(())
}

/// An introduction: the player, the address (a flag for IPv6, its bytes, the port) and both keys.
fn serialize_introduction<S: Stream>(s: &mut S, i: &mut Introduction) -> Result<(), MessageError> {
    serialize_player(s, &mut i.player)?;
    let mut v6 = i.addr.is_ipv6();
    s.serialize_bool(&mut v6)?;
    let mut port = u32::from(i.addr.port());
    let ip = if v6 {
        let mut octets = match i.addr.ip() {
            IpAddr::V6(ip) => ip.octets(),
            IpAddr::V4(ip) => ip.to_ipv6_mapped().octets(),
        };
        serialize_words(s, &mut octets)?;
        IpAddr::from(octets)
    } else {
        let mut octets = match i.addr.ip() {
            IpAddr::V4(ip) => ip.octets(),
            IpAddr::V6(_) => [0; 4],
        };
        serialize_words(s, &mut octets)?;
        IpAddr::from(octets)
    };
    s.serialize_bits(&mut port, 16)?;
    i.addr = SocketAddr::new(ip, port as u16);
    serialize_words(s, &mut i.send_key)?;
    serialize_words(s, &mut i.receive_key)?;
    Ok(())
}

/// The players' game inputs: one bit when there are none (a VR session), else a presence bit and a byte each.
fn serialize_game_inputs<S: Stream>(s: &mut S, inputs: &mut [Option<u8>; 4]) -> Result<(), MessageError> {
    let mut any = inputs.iter().any(Option::is_some);
    s.serialize_bool(&mut any)?;
    if !any {
        *inputs = [None; 4];
        return Ok(());
    }
    for input in inputs.iter_mut() {
        let mut present = input.is_some();
        s.serialize_bool(&mut present)?;
        if present {
            let mut bits = u32::from(input.unwrap_or(0));
            s.serialize_bits(&mut bits, 8)?;
            *input = Some(bits as u8);
        } else {
            *input = None;
        }
    }
    Ok(())
}

/// Writes a state message's type byte and `header` at the start of `buf` (its avatars coded against `baseline`,
/// the set of the message `header.avatar_baseline_age` names); the state packet body goes right after, written in
/// place by the caller. Returns the header's length and the bits its avatars took.
pub fn write_header(
    buf: &mut [u8],
    header: &StateHeader,
    cube_count: u32,
    baseline: Option<&AvatarSet>,
    prior: Option<&AvatarSet>,
) -> Result<(usize, usize), MessageError> {
    let (first, rest) = buf.split_first_mut().ok_or(SerializeError::Overflow)?;
    *first = MESSAGE_STATE;
    let mut w = WriteStream::new(rest);
    let mut h = *header;
    let (base_step, prior_step) = (header.avatar_baseline_step(), header.avatar_prior_step());
    let lookup = |step| {
        if Some(step) == base_step {
            baseline.copied()
        } else if Some(step) == prior_step {
            prior.copied()
        } else {
            None
        }
    };
    // The avatars' bits: the whole header less the same header with none, before alignment (measured, so it
    // cannot drift from the format).
    serialize_header_fields(&mut w, &mut h, cube_count, lookup)?;
    let bits = w.bits_processed();
    w.serialize_align()?;
    let n = w.finish()?;
    let bare = StateHeader {
        avatar_baseline_age: None,
        avatar_prior_age: None,
        avatars: NO_AVATARS,
        ..*header
    };
    let mut scratch = [0u8; 256];
    let mut b = WriteStream::new(&mut scratch);
    serialize_header_fields(&mut b, &mut { bare }, cube_count, |_| None)?;
    Ok((1 + n, bits.saturating_sub(b.bits_processed())))
}

/// Writes a whole state message: type byte, `header`, then a copy of `body`. Returns the length.
pub fn write_state_message(
    buf: &mut [u8],
    header: &StateHeader,
    cube_count: u32,
    baseline: Option<&AvatarSet>,
    prior: Option<&AvatarSet>,
    body: &[u8],
) -> Result<usize, MessageError> {
    let (head, _) = write_header(buf, header, cube_count, baseline, prior)?;
    let end = head + body.len();
    buf.get_mut(head..end)
        .ok_or(SerializeError::Overflow)?
        .copy_from_slice(body);
    Ok(end)
}

/// Bytes [`write_header`] writes for `header` (avatars absolute: the most they take).
pub fn header_bytes(header: &StateHeader, cube_count: u32) -> Result<usize, MessageError> {
    let absolute = StateHeader {
        avatar_baseline_age: None,
        ..*header
    };
    Ok(write_header(&mut [0u8; 1024], &absolute, cube_count, None, None)?.0)
}

/// A message as read. (The state header is held inline: one message is read at a time, on the stack.)
#[derive(Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Message<'a> {
    State {
        header: StateHeader,
        body: &'a [u8],
    },
    RejectNotice(&'a [u8]),
    Hello(Hello),
    Refused(Refusal),
    /// A state message of protocol 1 (no version, no hello): the sender runs an older build.
    Legacy,
}

/// Reads a message's type and, for a state message, its header (avatars against `baseline(step)`, the receiver's
/// ring); the body is returned unread.
pub fn read_message(
    bytes: &[u8],
    cube_count: u32,
    baseline: impl Fn(u32) -> Option<AvatarSet>,
) -> Result<Message<'_>, MessageError> {
    let (&kind, rest) = bytes.split_first().ok_or(MessageError::Empty)?;
    match kind {
        MESSAGE_STATE => {
            let mut r = ReadStream::new(rest);
            let mut header = StateHeader::default();
            serialize_header(&mut r, &mut header, cube_count, baseline)?;
            let used = r.bits_processed() / 8;
            Ok(Message::State {
                header,
                body: &rest[used..],
            })
        }
        k if u32::from(k) == REJECT_NOTICE_TAG => Ok(Message::RejectNotice(bytes)),
        MESSAGE_HELLO => Ok(Message::Hello(read_hello(bytes)?)),
        MESSAGE_REFUSED => Ok(Message::Refused(read_refusal(bytes)?)),
        LEGACY_MESSAGE_STATE => Ok(Message::Legacy),
        k => Err(MessageError::UnknownType(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{Avatar, Pose};
    use crate::sync::codec::avatar_state::WireAvatar;
    use crate::sync::codec::stamp::AuthorityStamp;
    use glam::{Quat, Vec3};

    fn avatar(x: f32, held: Option<u32>) -> WireAvatar {
        let mut a = Avatar {
            head: Pose::new(Vec3::new(x, 1.7, 0.0), Quat::from_rotation_y(0.3)),
            ..Avatar::default()
        };
        a.hands[1].tracked = true;
        a.hands[1].pose = Pose::new(Vec3::new(x + 0.3, 1.2, -0.4), Quat::from_rotation_x(0.2));
        a.hands[1].grip = 1.0;
        let stamp = AuthorityStamp {
            authority: 2,
            authority_seq: 9,
            ownership_seq: 65535,
        };
        let offset = Pose::new(Vec3::new(0.0, -0.5, 0.0), Quat::IDENTITY);
        WireAvatar::from_avatar(&a, [None, held.map(|c| (c, offset, stamp))]).unwrap()
    }

    fn header() -> StateHeader {
        let mut avatars = NO_AVATARS;
        let one = avatar(1.0, Some(63));
        // Player 2's sample carries a trail: the two steps before it, a hand a few millimetres off the line.
        let mut trail = crate::sync::codec::avatar_state::AvatarTrail {
            len: 2,
            ..Default::default()
        };
        let now = crate::sync::codec::avatar_state::trail_positions(&one);
        trail.points = [
            now.map(|p| [p[0] - 10, p[1] + 4, p[2]]),
            now.map(|p| [p[0] - 21, p[1] + 5, p[2] - 1]),
        ];
        avatars[1] = Some(AvatarSample {
            step: 1234,
            avatar: one,
            trail,
        });
        avatars[3] = Some(AvatarSample {
            step: 99,
            avatar: avatar(-2.0, None),
            ..AvatarSample::default()
        });
        StateHeader {
            sender_step: 70_000,
            welcome: Some(Welcome {
                player: 3,
                cube_count: 64,
                scene_checksum: 0xdead_beef,
            }),
            introduction: None,
            avatar_baseline_age: None,
            avatar_prior_age: None,
            avatars,
            present: Some(0b1011),
            hears_directly: Some(0b0100),
            game_inputs: [Some(0x21), None, None, Some(0x07)],
            lag_floor: Some(-1_234),
        }
    }

    /// `header`'s avatars moved on by `steps`, one of them changed, coded against `header`'s.
    fn next_header(steps: u32) -> StateHeader {
        let mut h = header();
        h.sender_step += steps;
        h.welcome = None;
        h.avatar_baseline_age = Some(steps);
        for a in h.avatars.iter_mut().flatten() {
            a.step += steps;
        }
        if let Some(a) = h.avatars[3].as_mut() {
            a.avatar = avatar(-1.99, None);
        }
        h
    }

    fn no_baseline(_: u32) -> Option<AvatarSet> {
        None
    }

    /// Issue 30: the first generation's state messages (tag 1, no version) read as an older build's, hellos and
    /// refusals as theirs, and anything else as an unknown type.
    #[test]
    fn messages_of_another_generation_are_told_apart() {
        assert_eq!(read_message(&[1, 0, 0, 0], 64, no_baseline), Ok(Message::Legacy));
        let hello = crate::session::hello::Hello {
            version: crate::session::hello::PROTOCOL_VERSION,
            scene: crate::session::hello::SceneId::new("table64", 3),
        };
        let mut buf = [0u8; 128];
        let n = crate::session::hello::write_hello(&mut buf, &hello).unwrap();
        assert_eq!(read_message(&buf[..n], 64, no_baseline), Ok(Message::Hello(hello)));
        assert_eq!(
            read_message(&[0x77], 64, no_baseline),
            Err(MessageError::UnknownType(0x77))
        );
        assert!(read_message(&buf[..3], 64, no_baseline).is_err(), "a cut hello");
    }

    #[test]
    fn a_state_message_round_trips_with_its_body() {
        let h = header();
        let mut buf = [0u8; 400];
        let n = write_state_message(&mut buf, &h, 64, None, None, &[7, 8, 9]).unwrap();
        assert_eq!(n, header_bytes(&h, 64).unwrap() + 3);
        match read_message(&buf[..n], 64, no_baseline).unwrap() {
            Message::State { header, body } => {
                assert_eq!(header, h);
                assert_eq!(body, &[7, 8, 9]);
            }
            m => panic!("{m:?}"),
        }
        // Against a baseline the receiver holds; refused when it does not hold it.
        let next = next_header(11);
        let base = h.avatars;
        let n = write_state_message(&mut buf, &next, 64, Some(&base), None, &[]).unwrap();
        let lookup = |step| (step == 70_000).then_some(base);
        match read_message(&buf[..n], 64, lookup).unwrap() {
            Message::State { header, .. } => assert_eq!(header, next),
            m => panic!("{m:?}"),
        }
        assert_eq!(
            read_message(&buf[..n], 64, no_baseline),
            Err(MessageError::MissingAvatarBaseline(70_000))
        );
    }

    /// An introduction (IPv4 and IPv6) round-trips whole, and a message cut inside one is refused.
    #[test]
    fn an_introduction_round_trips_and_costs_a_bit_when_absent() {
        let without = header();
        let mut buf = [0u8; 600];
        let bare = write_state_message(&mut buf, &without, 64, None, None, &[]).unwrap();
        for addr in ["192.0.2.7:4000", "[2001:db8::7]:65535"] {
            let mut h = header();
            h.introduction = Some(Introduction {
                player: 4,
                addr: addr.parse().unwrap(),
                send_key: std::array::from_fn(|i| i as u8),
                receive_key: std::array::from_fn(|i| 200 - i as u8),
            });
            let n = write_state_message(&mut buf, &h, 64, None, None, &[]).unwrap();
            match read_message(&buf[..n], 64, no_baseline).unwrap() {
                Message::State { header, .. } => assert_eq!(header, h),
                m => panic!("{m:?}"),
            }
            // Address, port and two 32-byte keys: at least 70 bytes more than none.
            assert!(n >= bare + 70, "{n} {bare}");
            assert!(
                read_message(&buf[..n - 40], 64, no_baseline).is_err(),
                "a message cut inside it"
            );
        }
    }

    #[test]
    fn an_unchanged_avatar_on_schedule_costs_one_bit_beyond_its_presence() {
        let h = header();
        let mut same = next_header(9);
        same.avatars[3] = h.avatars[3].map(|a| AvatarSample { step: a.step + 9, ..a });
        // A still avatar has no trail (its steps between lie on the straight path).
        for a in same.avatars.iter_mut().flatten() {
            a.trail = Default::default();
        }
        let (_, bits) = write_header(&mut [0u8; 400], &same, 64, Some(&h.avatars), None).unwrap();
        // Beyond a header with no avatars: the baseline age (short flag and 4 bits), the flag saying there is no
        // prior set, and for each of the two avatars one "unchanged" bit and two "no trail" bits (no points, no
        // previous sample).
        assert_eq!(bits, 5 + 1 + 2 * 3);
        // A sample step off schedule by one adds a flag and a small residual.
        same.avatars[1].as_mut().unwrap().step += 1;
        let (_, late) = write_header(&mut [0u8; 400], &same, 64, Some(&h.avatars), None).unwrap();
        assert!(late > bits && late < bits + 40, "{late}");
        let (_, absolute) = write_header(&mut [0u8; 400], &h, 64, None, None).unwrap();
        assert!(absolute > 500, "{absolute}");
    }

    /// The host's relay of a hand the receiver hears directly: the baseline's own sample again (same step) is two
    /// bits and a trail's two, and reads back as that sample.
    #[test]
    fn the_baselines_own_sample_again_costs_two_bits_and_reads_back() {
        let mut h = header();
        for a in h.avatars.iter_mut().flatten() {
            a.trail = Default::default();
        }
        let mut again = next_header(9);
        again.avatars = h.avatars;
        let (_, bits) = write_header(&mut [0u8; 400], &again, 64, Some(&h.avatars), None).unwrap();
        // The baseline age (5), no prior (1), and per avatar "not on schedule", "again", "no trail" (1 + 1 + 2).
        assert_eq!(bits, 5 + 1 + 2 * 4);
        let mut buf = [0u8; 400];
        let n = write_state_message(&mut buf, &again, 64, Some(&h.avatars), None, &[]).unwrap();
        let base_step = again.sender_step - 9;
        let baseline = |step: u32| (step == base_step).then_some(h.avatars);
        match read_message(&buf[..n], 64, baseline).unwrap() {
            Message::State { header, .. } => assert_eq!(header.avatars, h.avatars),
            m => panic!("{m:?}"),
        }
        // One step of difference is not the same sample: coded as any other.
        again.avatars[1].as_mut().unwrap().step += 1;
        let (_, other) = write_header(&mut [0u8; 400], &again, 64, Some(&h.avatars), None).unwrap();
        assert!(other > bits, "{other}");
    }

    /// Issue 30, item 2: a hand moving steadily, coded against its baseline carried on at the pace it moved since a
    /// prior set, costs fewer bits than against the baseline as it is; and reads back the same.
    #[test]
    fn a_moving_avatar_costs_less_against_its_motion_carried_on() {
        let sample = |step: u32| {
            let mut a = Avatar::default();
            a.head.position = Vec3::new(0.0, 1.7, 0.0);
            a.hands[1].tracked = true;
            a.hands[1].pose = Pose::new(Vec3::new(0.2 + 0.0167 * step as f32, 1.2, -0.4), Quat::IDENTITY);
            AvatarSample {
                step,
                avatar: WireAvatar::from_avatar(&a, [None, None]).unwrap(),
                ..AvatarSample::default()
            }
        };
        let set = |step: u32| {
            let mut s = NO_AVATARS;
            s[1] = Some(sample(step));
            s
        };
        let (prior, base, now) = (set(100), set(104), set(108));
        let header = |prior_age: Option<u32>| StateHeader {
            sender_step: 108,
            welcome: None,
            introduction: None,
            avatar_baseline_age: Some(4),
            avatar_prior_age: prior_age,
            avatars: now,
            present: None,
            hears_directly: None,
            game_inputs: [None; 4],
            lag_floor: None,
        };
        let (_, plain) = write_header(&mut [0u8; 400], &header(None), 64, Some(&base), None).unwrap();
        let (_, carried) = write_header(&mut [0u8; 400], &header(Some(8)), 64, Some(&base), Some(&prior)).unwrap();
        eprintln!("a hand at 1.5 m/s, 4 steps on: {plain} bits against its baseline, {carried} against its motion");
        assert!(carried < plain, "{carried} {plain}");
        let mut buf = [0u8; 400];
        let n = write_state_message(&mut buf, &header(Some(8)), 64, Some(&base), Some(&prior), &[]).unwrap();
        let lookup = |step| match step {
            104 => Some(base),
            100 => Some(prior),
            _ => None,
        };
        match read_message(&buf[..n], 64, lookup).unwrap() {
            Message::State { header: h, .. } => assert_eq!(h, header(Some(8))),
            m => panic!("{m:?}"),
        }
    }

    #[test]
    fn damaged_messages_are_refused_never_a_panic() {
        let h = header();
        let base = h.avatars;
        let mut buf = [0u8; 400];
        let n = write_state_message(&mut buf, &h, 64, None, None, &[]).unwrap();
        // Every truncation of the header is refused.
        for len in 0..n {
            assert!(read_message(&buf[..len], 64, no_baseline).is_err(), "length {len}");
        }
        // A cube id the scene does not have.
        assert!(read_message(&buf[..n], 32, no_baseline).is_err());
        // Unknown type.
        assert_eq!(
            read_message(&[9, 0, 0], 64, no_baseline),
            Err(MessageError::UnknownType(9))
        );
        let mut coded = [0u8; 400];
        let m = write_state_message(&mut coded, &next_header(5), 64, Some(&base), None, &[]).unwrap();
        // A million cases: random bytes and valid messages (absolute, or against a baseline the reader holds for
        // any step) with bits flipped. Each is refused or parsed into a header that writes back to the same bytes
        // (so nothing out of range got in); never a panic.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let lookup = |_| Some(base);
        let (mut parsed, mut refused) = (0u32, 0u32);
        for case in 0..1_000_000u32 {
            let mut msg = [0u8; 160];
            let (source, len) = if case % 3 == 1 { (&coded, m) } else { (&buf, n) };
            let len = if case % 3 == 0 {
                for b in &mut msg {
                    *b = next() as u8;
                }
                msg[0] = MESSAGE_STATE;
                (next() % 160) as usize
            } else {
                msg[..len].copy_from_slice(&source[..len]);
                for _ in 0..1 + next() % 3 {
                    let bit = (next() % (len as u64 * 8)) as usize;
                    msg[bit / 8] ^= 1 << (bit % 8);
                }
                len
            };
            match read_message(&msg[..len], 64, lookup) {
                Ok(Message::State { header, body }) => {
                    parsed += 1;
                    let mut again = [0u8; 400];
                    let baseline = header.avatar_baseline_age.map(|_| base);
                    let prior = header.avatar_prior_age.map(|_| base);
                    let k =
                        write_state_message(&mut again, &header, 64, baseline.as_ref(), prior.as_ref(), body).unwrap();
                    assert_eq!(
                        read_message(&again[..k], 64, lookup),
                        Ok(Message::State { header, body })
                    );
                }
                Ok(Message::RejectNotice(_) | Message::Hello(_) | Message::Refused(_) | Message::Legacy) => parsed += 1,
                Err(_) => refused += 1,
            }
        }
        assert!(parsed > 1000 && refused > 1000, "{parsed} parsed, {refused} refused");
    }
}
