//! A guest's first words to a host, and the host's refusal: the game's protocol version and the scene each loaded
//! (its name and a hash of the world it builds), checked before the host welcomes the guest — so a guest of another
//! build, or with another scene, is told at once, naming both, before any window or headset session opens.
//!
//! Their layout never changes from one protocol version to the next (a tag byte, then the version in 16 bits):
//! whatever version a peer runs, it can read another's hello and refusal. Everything else a session sends is
//! refused by a peer of another version (its state messages' tag says which generation of the format it is, and
//! the first generation, [`LEGACY_MESSAGE_STATE`], had no hello at all).
//!
//! One function per message ([`serialize_hello`], [`serialize_refusal`]) writes and reads it; every read is bounded.

use std::fmt;

use thiserror::Error;
use tumble_net::{ReadStream, SerializeError, Stream, WriteStream};

/// The game protocol this build speaks: its messages, their fields and their meaning. A guest and a host of
/// different versions do not play together. (1: the first, with no hello; 2: hello, refusal, presence bits; 3:
/// avatars coded against their motion carried on from a prior set; 4: the players' game inputs in the state header;
/// 5: each avatar's trail, the steps between a sender's samples; 6: the host's introductions, direct links between
/// guests for their avatars; 7: a guest's word on which players it hears directly, whose avatars the host then
/// relays to it only when their held cubes change; 8: each side's lag floor, from which the other reads the offset
/// of their step counters and the age of the states it receives.)
pub const PROTOCOL_VERSION: u16 = 8;
/// First byte of a hello (guest → host).
pub const MESSAGE_HELLO: u8 = 0xF0;
/// First byte of a refusal (host → guest).
pub const MESSAGE_REFUSED: u8 = 0xF1;
/// First byte of the state messages of protocol 1, which had no version and no hello: a peer that sends one is of
/// an older build.
pub const LEGACY_MESSAGE_STATE: u8 = 1;
/// Longest scene name carried (bytes of UTF-8; longer names are cut at a character boundary).
pub const SCENE_NAME_MAX_BYTES: usize = 64;

/// Why a hello or refusal could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum HelloError {
    #[error(transparent)]
    Stream(#[from] SerializeError),
    #[error("a scene name of {0} bytes (at most {SCENE_NAME_MAX_BYTES})")]
    NameTooLong(u32),
    #[error("unknown refusal reason {0}")]
    BadReason(u32),
}

/// Which scene a peer loaded: the name its file gives and a hash of the world it builds (`World::checksum` before
/// any step), so two files that build the same cubes match and a changed cube does not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SceneId {
    name: [u8; SCENE_NAME_MAX_BYTES],
    name_len: u8,
    pub hash: u64,
}

impl SceneId {
    pub fn new(name: &str, hash: u64) -> SceneId {
        let mut end = name.len().min(SCENE_NAME_MAX_BYTES);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; SCENE_NAME_MAX_BYTES];
        bytes[..end].copy_from_slice(&name.as_bytes()[..end]);
        SceneId {
            name: bytes,
            name_len: end as u8,
            hash,
        }
    }

    /// The name as sent (a peer's bytes that are not UTF-8 show as replacement characters).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.name[..usize::from(self.name_len)]).into_owned()
    }
}

impl Default for SceneId {
    fn default() -> Self {
        SceneId::new("", 0)
    }
}

impl fmt::Debug for SceneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for SceneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' (hash {:016x})", self.name(), self.hash)
    }
}

/// What a guest says first, every step until it is welcomed or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    pub scene: SceneId,
}

/// Why a host refused a guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// The guest speaks another protocol version.
    Version = 1,
    /// The guest loaded another scene.
    Scene = 2,
}

/// The host's answer to a hello it will not welcome: its own version and scene, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub version: u16,
    pub scene: SceneId,
    pub reason: RefusalReason,
}

fn serialize_tag<S: Stream>(s: &mut S, tag: u8) -> Result<(), HelloError> {
    let mut t = u32::from(tag);
    s.serialize_bits(&mut t, 8)?;
    if t != u32::from(tag) {
        return Err(SerializeError::UnknownPacketType(t).into());
    }
    Ok(())
}

fn serialize_version<S: Stream>(s: &mut S, version: &mut u16) -> Result<(), HelloError> {
    let mut v = u32::from(*version);
    s.serialize_bits(&mut v, 16)?;
    *version = v as u16;
    Ok(())
}

fn serialize_scene<S: Stream>(s: &mut S, scene: &mut SceneId) -> Result<(), HelloError> {
    let mut len = u32::from(scene.name_len);
    s.serialize_bits(&mut len, 8)?;
    if len as usize > SCENE_NAME_MAX_BYTES {
        return Err(HelloError::NameTooLong(len));
    }
    scene.name_len = len as u8;
    s.serialize_bytes(&mut scene.name[..len as usize])?;
    let (mut low, mut high) = (scene.hash as u32, (scene.hash >> 32) as u32);
    s.serialize_bits(&mut low, 32)?;
    s.serialize_bits(&mut high, 32)?;
    scene.hash = u64::from(low) | (u64::from(high) << 32);
    Ok(())
}

/// A hello, written or read.
pub fn serialize_hello<S: Stream>(s: &mut S, hello: &mut Hello) -> Result<(), HelloError> {
    serialize_tag(s, MESSAGE_HELLO)?;
    serialize_version(s, &mut hello.version)?;
    serialize_scene(s, &mut hello.scene)
}

/// A refusal, written or read.
pub fn serialize_refusal<S: Stream>(s: &mut S, refusal: &mut Refusal) -> Result<(), HelloError> {
    serialize_tag(s, MESSAGE_REFUSED)?;
    serialize_version(s, &mut refusal.version)?;
    serialize_scene(s, &mut refusal.scene)?;
    let mut reason = refusal.reason as u32;
    s.serialize_bits(&mut reason, 8)?;
    refusal.reason = match reason {
        1 => RefusalReason::Version,
        2 => RefusalReason::Scene,
        other => return Err(HelloError::BadReason(other)),
    };
    Ok(())
}

pub fn write_hello(buf: &mut [u8], hello: &Hello) -> Result<usize, HelloError> {
    let mut w = WriteStream::new(buf);
    serialize_hello(&mut w, &mut { *hello })?;
    Ok(w.finish()?)
}

pub fn read_hello(bytes: &[u8]) -> Result<Hello, HelloError> {
    let mut r = ReadStream::new(bytes);
    let mut hello = Hello {
        version: 0,
        scene: SceneId::default(),
    };
    serialize_hello(&mut r, &mut hello)?;
    Ok(hello)
}

pub fn write_refusal(buf: &mut [u8], refusal: &Refusal) -> Result<usize, HelloError> {
    let mut w = WriteStream::new(buf);
    serialize_refusal(&mut w, &mut { *refusal })?;
    Ok(w.finish()?)
}

pub fn read_refusal(bytes: &[u8]) -> Result<Refusal, HelloError> {
    let mut r = ReadStream::new(bytes);
    let mut refusal = Refusal {
        version: 0,
        scene: SceneId::default(),
        reason: RefusalReason::Version,
    };
    serialize_refusal(&mut r, &mut refusal)?;
    Ok(refusal)
}

/// The host's judgement of a hello: `None` to welcome the guest, or why not.
pub fn judge_hello(hello: &Hello, ours: &SceneId) -> Option<RefusalReason> {
    if hello.version != PROTOCOL_VERSION {
        Some(RefusalReason::Version)
    } else if hello.scene.hash != ours.hash {
        Some(RefusalReason::Scene)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_and_a_refusal_read_back_as_written() {
        let hello = Hello {
            version: PROTOCOL_VERSION,
            scene: SceneId::new("table64", 0x0123_4567_89ab_cdef),
        };
        let mut buf = [0u8; 128];
        let n = write_hello(&mut buf, &hello).unwrap();
        assert_eq!(read_hello(&buf[..n]).unwrap(), hello);
        let refusal = Refusal {
            version: 7,
            scene: SceneId::new("pyramid20", 42),
            reason: RefusalReason::Scene,
        };
        let n = write_refusal(&mut buf, &refusal).unwrap();
        let back = read_refusal(&buf[..n]).unwrap();
        assert_eq!(back, refusal);
        assert_eq!(back.scene.name(), "pyramid20");
        // A long name is cut at a character boundary, never mid-character.
        let long = "é".repeat(40);
        let id = SceneId::new(&long, 1);
        assert_eq!(id.name(), "é".repeat(32));
    }

    #[test]
    fn short_garbage_and_hostile_hellos_are_errors() {
        let hello = Hello {
            version: PROTOCOL_VERSION,
            scene: SceneId::new("table64", 9),
        };
        let mut buf = [0u8; 128];
        let n = write_hello(&mut buf, &hello).unwrap();
        for cut in 0..n {
            assert!(read_hello(&buf[..cut]).is_err(), "{cut} bytes");
        }
        let mut long = buf;
        long[3] = 200; // a name length past the limit
        assert_eq!(read_hello(&long[..n]), Err(HelloError::NameTooLong(200)));
        assert!(read_hello(&[MESSAGE_REFUSED, 0, 2]).is_err());
        let refusal = Refusal {
            version: 2,
            scene: SceneId::new("x", 1),
            reason: RefusalReason::Version,
        };
        let n = write_refusal(&mut buf, &refusal).unwrap();
        buf[n - 1] = 99;
        assert_eq!(read_refusal(&buf[..n]), Err(HelloError::BadReason(99)));
    }

    #[test]
    fn the_host_welcomes_only_its_own_version_and_scene() {
        let ours = SceneId::new("table64", 5);
        let hello = |version, hash| Hello {
            version,
            scene: SceneId::new("whatever", hash),
        };
        assert_eq!(
            judge_hello(&hello(PROTOCOL_VERSION, 5), &ours),
            None,
            "the name is not what matches"
        );
        assert_eq!(
            judge_hello(&hello(PROTOCOL_VERSION, 6), &ours),
            Some(RefusalReason::Scene)
        );
        assert_eq!(
            judge_hello(&hello(PROTOCOL_VERSION + 1, 5), &ours),
            Some(RefusalReason::Version)
        );
    }
}
