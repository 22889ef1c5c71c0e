//! The wire format. Every packet starts with the same 4-byte prefix (protocol id, version, type), frozen across
//! versions so that a peer of another version can still be refused with a reason; `Request` and `Denied` keep
//! their leading fields (salt; reason) across versions for the same purpose.
//!
//! Handshake packets from a would-be guest are padded to `HANDSHAKE_REQUEST_BYTES`, and everything the host sends
//! before a connection exists is smaller, so the host can't be used to amplify traffic towards a spoofed address.
//!
//! Connected packets (keep-alive, payload, disconnect) are sealed with ChaCha20-Poly1305 (see `crypto`). They
//! start with one byte, `CONNECTED_MARK | type`, instead of the 4-byte prefix: they exist only inside a connection
//! whose handshake settled the version, and their first byte can never be the prefix's (`PROTOCOL_ID`'s low byte).
//! That byte and the 16-bit sequence go in clear and are bound to the packet as associated data; the ack fields and
//! the payload are encrypted; a 16-byte tag ends the packet. Layout, in bytes:
//!
//! ```text
//! mark+type 1 | sequence 2 | sealed: ack 2, ack bits 4, echo 2, echo delay 2, payload… | tag 16
//! ```
//!
//! So a connected packet costs 29 bytes of header, 9 more than the unsealed version 1 (20: prefix 4, session key
//! 4, the same 12 of sequence, acks and echo): the tag (16) less the key (4) and the 3 prefix bytes it no longer
//! needs. The sequence is the low 16 bits of the nonce.

use crate::crypto::{
    PacketKey, COOKIE_BYTES, HANDSHAKE_FIRST_BYTES, HANDSHAKE_SECOND_BYTES, JOIN_MAC_BYTES, PUBLIC_KEY_BYTES, TAG_BYTES,
};
use crate::serialize::{ReadStream, SerializeError, Stream, WriteStream};

/// Largest datagram we send or accept: below every realistic path MTU, so no IP fragmentation.
pub const MAX_PACKET_BYTES: usize = 1200;
/// Identifies Tumble traffic; anything else on the port is dropped at the first two bytes.
pub const PROTOCOL_ID: u16 = 0x7b1e;
/// Bumped whenever the wire format changes; the prefix and the leading fields of `Request`/`Denied` never change.
/// Version 2: encrypted and authenticated connected packets, an X25519 handshake. Version 3: a refusal for being
/// full or for a wrong secret carries a tag the guest checks (`crypto::refusal_tag`). Version 4: the keys come
/// from a Noise NKpsk0 handshake (`crypto::NOISE_PARAMS`) carried in the Response and the Accepted.
pub const PROTOCOL_VERSION: u8 = 4;
/// Guest handshake packets are padded to this size (bytes) so every host reply is smaller.
pub const HANDSHAKE_REQUEST_BYTES: usize = 256;
/// What a connected packet sends in clear and authenticates as associated data: its mark-and-type byte and the
/// sequence.
pub const CONNECTED_CLEAR_BYTES: usize = 1 + 2;
/// The high bits of a connected packet's first byte; the low three are its type. Never `PROTOCOL_ID`'s low byte.
pub const CONNECTED_MARK: u8 = 0xc0;
/// The sealed ack and echo fields at the start of every connected packet's plaintext.
pub const ACK_FIELDS_BYTES: usize = 2 + 4 + 2 + 2;
/// Everything a connected packet carries besides its payload, in bytes.
pub const CONNECTED_HEADER_BYTES: usize = CONNECTED_CLEAR_BYTES + ACK_FIELDS_BYTES + TAG_BYTES;
/// `echo_delay_100us` value meaning "no echo in this packet".
pub const NO_ECHO: u16 = u16::MAX;
/// Largest payload a connected packet can carry.
pub const MAX_PAYLOAD_BYTES: usize = MAX_PACKET_BYTES - CONNECTED_HEADER_BYTES;
/// How many peers an accept can name (host included); the endpoint's configured maximum must not exceed it.
pub const MAX_PEERS_LIMIT: u8 = 64;
/// The host's Noise message in an accept: its ephemeral key, then the guest's peer index and the peer count sealed.
pub const ACCEPT_SEALED_BYTES: usize = HANDSHAKE_SECOND_BYTES;

/// Packet types, numbered on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    Request = 0,
    Challenge = 1,
    Response = 2,
    Accepted = 3,
    Denied = 4,
    KeepAlive = 5,
    Payload = 6,
    Disconnect = 7,
}

impl PacketType {
    fn from_u8(v: u8) -> Result<Self, SerializeError> {
        Ok(match v {
            0 => PacketType::Request,
            1 => PacketType::Challenge,
            2 => PacketType::Response,
            3 => PacketType::Accepted,
            4 => PacketType::Denied,
            5 => PacketType::KeepAlive,
            6 => PacketType::Payload,
            7 => PacketType::Disconnect,
            other => return Err(SerializeError::UnknownPacketType(u32::from(other))),
        })
    }

    /// Keep-alive, payload and disconnect: sealed under the connection's keys.
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            PacketType::KeepAlive | PacketType::Payload | PacketType::Disconnect
        )
    }
}

/// Why a host refused a guest; sent in `Denied`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyReason {
    /// Every slot is taken.
    Full,
    /// The guest speaks another protocol version; `host_version` is the host's.
    VersionMismatch { host_version: u8 },
    /// The guest's sealed proof did not open: it does not have this game's join secret (a wrong or old code).
    WrongSecret,
    /// The guest's IP address (an IPv6 address's /64) already has as many players as the host takes from one
    /// address (an open game takes one).
    AddressFull,
}

/// Why a connection ended; sent in `Disconnect` (a timeout is detected locally, never sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisconnectReason {
    /// The other side closed it.
    Closed,
    /// Nothing arrived for the timeout.
    TimedOut,
    /// The host shut down.
    HostShutdown,
}

impl DisconnectReason {
    pub fn code(self) -> u8 {
        match self {
            DisconnectReason::Closed => 0,
            DisconnectReason::TimedOut => 1,
            DisconnectReason::HostShutdown => 2,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(DisconnectReason::Closed),
            1 => Some(DisconnectReason::TimedOut),
            2 => Some(DisconnectReason::HostShutdown),
            _ => None,
        }
    }
}

/// The sealed fields at the start of every connected packet: acks ride on every packet in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnectedHeader {
    /// In clear: the low 16 bits of the packet's counter (its nonce).
    pub sequence: u16,
    /// Newest sequence received (and accepted by the game) from the peer.
    pub ack: u16,
    /// Bit i set: `ack - 1 - i` was received and accepted too.
    pub ack_bits: u32,
    /// A packet the sender of this one received, echoed for an RTT sample: each received packet is echoed once,
    /// in arrival order, whatever its delay, so the samples are not biased towards fast packets.
    pub echo_sequence: u16,
    /// How long (units of 100 µs) `echo_sequence` was held before this packet went out, subtracted from the RTT
    /// sample so the send interval does not inflate it; `NO_ECHO` when nothing is echoed.
    pub echo_delay_100us: u16,
}

impl ConnectedHeader {
    /// The sealed ack and echo fields, read or written (the sequence is not among them).
    pub fn serialize_ack_fields<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
        s.serialize_u16(&mut self.ack)?;
        s.serialize_u32(&mut self.ack_bits)?;
        s.serialize_u16(&mut self.echo_sequence)?;
        s.serialize_u16(&mut self.echo_delay_100us)
    }
}

/// A decoded packet. Byte strings are borrowed from the datagram (no copy, no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    Request {
        client_salt: u64,
        /// The guest's X25519 public key for this join.
        public_key: [u8; PUBLIC_KEY_BYTES],
        /// The join MAC (`crypto::JoinMacKey`): shows the host, for one hash, that the guest has the code.
        mac: [u8; JOIN_MAC_BYTES],
    },
    Challenge {
        client_salt: u64,
        cookie: [u8; COOKIE_BYTES],
        /// The host's X25519 public key.
        public_key: [u8; PUBLIC_KEY_BYTES],
    },
    Response {
        client_salt: u64,
        public_key: [u8; PUBLIC_KEY_BYTES],
        cookie: [u8; COOKIE_BYTES],
        /// The guest's Noise message (its ephemeral key, and an empty payload sealed under keys that take the join
        /// secret and the host's static key): only a guest with the secret writes one the host can read.
        proof: [u8; HANDSHAKE_FIRST_BYTES],
        /// The join MAC over all of the above.
        mac: [u8; JOIN_MAC_BYTES],
    },
    Accepted {
        client_salt: u64,
        /// The host's Noise message: its ephemeral key, and the peer index and peer count sealed under keys only
        /// the host with the pinned static key could derive.
        sealed: [u8; ACCEPT_SEALED_BYTES],
    },
    Denied {
        client_salt: u64,
        reason: DenyReason,
        /// For `Full` and `WrongSecret` (sent after the guest's Response, when the host has its key): a MAC under
        /// the X25519 secret of the host's key and the guest's, so a guest believes only a refusal from the host it
        /// is joining. `VersionMismatch` (to a peer of another version) has none on the wire: all zeros.
        tag: [u8; TAG_BYTES],
    },
    /// Keep-alive, payload or disconnect; `sealed` is the ciphertext and the tag, opened by the endpoint.
    Connected {
        packet_type: PacketType,
        sequence: u16,
        sealed: &'a [u8],
    },
}

/// The first bytes of every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    pub version: u8,
    pub packet_type: PacketType,
}

/// Fixed-size fields of all packet types, serialized by one function in both directions.
#[derive(Debug, Clone, Copy)]
struct Fields {
    packet_type: u8,
    version: u8,
    client_salt: u64,
    public_key: [u8; PUBLIC_KEY_BYTES],
    cookie: [u8; COOKIE_BYTES],
    proof: [u8; HANDSHAKE_FIRST_BYTES],
    mac: [u8; JOIN_MAC_BYTES],
    tag: [u8; TAG_BYTES],
    accept: [u8; ACCEPT_SEALED_BYTES],
    reason: u8,
    reason_arg: u8,
}

impl Default for Fields {
    /// All zeros (arrays of over 32 bytes have no derived `Default`).
    fn default() -> Self {
        Fields {
            packet_type: 0,
            version: 0,
            client_salt: 0,
            public_key: [0; PUBLIC_KEY_BYTES],
            cookie: [0; COOKIE_BYTES],
            proof: [0; HANDSHAKE_FIRST_BYTES],
            mac: [0; JOIN_MAC_BYTES],
            tag: [0; TAG_BYTES],
            accept: [0; ACCEPT_SEALED_BYTES],
            reason: 0,
            reason_arg: 0,
        }
    }
}

impl Fields {
    fn serialize<S: Stream>(&mut self, s: &mut S) -> Result<(), SerializeError> {
        let mut protocol = PROTOCOL_ID;
        s.serialize_u16(&mut protocol)?;
        if protocol != PROTOCOL_ID {
            return Err(SerializeError::WrongProtocol);
        }
        s.serialize_u8(&mut self.version)?;
        s.serialize_u8(&mut self.packet_type)?;
        match PacketType::from_u8(self.packet_type)? {
            PacketType::Request => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_bytes(&mut self.public_key)?;
                s.serialize_bytes(&mut self.mac)
            }
            PacketType::Challenge => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_bytes(&mut self.cookie)?;
                s.serialize_bytes(&mut self.public_key)
            }
            PacketType::Response => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_bytes(&mut self.public_key)?;
                s.serialize_bytes(&mut self.cookie)?;
                s.serialize_bytes(&mut self.proof)?;
                s.serialize_bytes(&mut self.mac)
            }
            PacketType::Accepted => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_bytes(&mut self.accept)
            }
            PacketType::Denied => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_u8(&mut self.reason)?;
                s.serialize_u8(&mut self.reason_arg)?;
                // A version mismatch goes to a peer of another version: its layout stays the one every version
                // reads. The others carry their tag.
                if self.reason == VERSION_MISMATCH_CODE {
                    Ok(())
                } else {
                    s.serialize_bytes(&mut self.tag)
                }
            }
            PacketType::KeepAlive | PacketType::Payload | PacketType::Disconnect => {
                Err(SerializeError::ValueOutOfRange)
            }
        }
    }
}

/// A refusal's reason on the wire, and the argument that goes with it.
const VERSION_MISMATCH_CODE: u8 = 1;

pub(crate) fn deny_reason_code(reason: DenyReason) -> (u8, u8) {
    match reason {
        DenyReason::Full => (0, 0),
        DenyReason::VersionMismatch { host_version } => (VERSION_MISMATCH_CODE, host_version),
        DenyReason::WrongSecret => (2, 0),
        DenyReason::AddressFull => (3, 0),
    }
}

/// Encodes `packet` with `version` into `buf`; returns the datagram length. Fails if it would exceed
/// `MAX_PACKET_BYTES` or `buf`.
pub fn write_packet(packet: &Packet<'_>, version: u8, buf: &mut [u8]) -> Result<usize, SerializeError> {
    let limit = buf.len().min(MAX_PACKET_BYTES);
    let buf = &mut buf[..limit];
    let mut f = Fields {
        version,
        ..Fields::default()
    };
    let mut pad_to = 0;
    match *packet {
        Packet::Request {
            client_salt,
            public_key,
            mac,
        } => {
            f.packet_type = PacketType::Request as u8;
            (f.client_salt, f.public_key, f.mac) = (client_salt, public_key, mac);
            pad_to = HANDSHAKE_REQUEST_BYTES;
        }
        Packet::Challenge {
            client_salt,
            cookie,
            public_key,
        } => {
            f.packet_type = PacketType::Challenge as u8;
            (f.client_salt, f.cookie, f.public_key) = (client_salt, cookie, public_key);
        }
        Packet::Response {
            client_salt,
            public_key,
            cookie,
            proof,
            mac,
        } => {
            f.packet_type = PacketType::Response as u8;
            (f.client_salt, f.public_key, f.cookie, f.proof) = (client_salt, public_key, cookie, proof);
            f.mac = mac;
            pad_to = HANDSHAKE_REQUEST_BYTES;
        }
        Packet::Accepted { client_salt, sealed } => {
            f.packet_type = PacketType::Accepted as u8;
            (f.client_salt, f.accept) = (client_salt, sealed);
        }
        Packet::Denied {
            client_salt,
            reason,
            tag,
        } => {
            f.packet_type = PacketType::Denied as u8;
            (f.client_salt, f.tag) = (client_salt, tag);
            (f.reason, f.reason_arg) = deny_reason_code(reason);
        }
        Packet::Connected {
            packet_type,
            sequence,
            sealed,
        } => {
            if sealed.len() < TAG_BYTES {
                return Err(SerializeError::ValueOutOfRange);
            }
            if buf.len() < CONNECTED_CLEAR_BYTES + sealed.len() {
                return Err(SerializeError::Overflow);
            }
            write_connected_clear(packet_type, sequence, buf)?;
            buf[CONNECTED_CLEAR_BYTES..CONNECTED_CLEAR_BYTES + sealed.len()].copy_from_slice(sealed);
            return Ok(CONNECTED_CLEAR_BYTES + sealed.len());
        }
    }
    let mut w = WriteStream::new(buf);
    f.serialize(&mut w)?;
    let mut n = w.finish()?;
    if pad_to > n {
        if pad_to > buf.len() {
            return Err(SerializeError::Overflow);
        }
        buf[n..pad_to].fill(0);
        n = pad_to;
    }
    Ok(n)
}

/// Writes the clear part of a connected packet (mark, type and sequence) into `buf[..CONNECTED_CLEAR_BYTES]`; the
/// caller writes the plaintext after it, seals it in place and appends the tag.
pub fn write_connected_clear(packet_type: PacketType, sequence: u16, buf: &mut [u8]) -> Result<(), SerializeError> {
    if !packet_type.is_connected() {
        return Err(SerializeError::ValueOutOfRange);
    }
    if buf.len() < CONNECTED_CLEAR_BYTES {
        return Err(SerializeError::Overflow);
    }
    let [lo, hi] = sequence.to_le_bytes();
    buf[..CONNECTED_CLEAR_BYTES].copy_from_slice(&[CONNECTED_MARK | packet_type as u8, lo, hi]);
    Ok(())
}

/// Writes a whole sealed connected packet into `out` (cleared first; no allocation once it has room for a full
/// packet): the clear part, then `header`'s ack fields and `body` sealed under `key` with nonce `counter` (whose
/// low 16 bits must be `header.sequence`), then the tag.
pub fn write_sealed(
    key: &PacketKey,
    packet_type: PacketType,
    counter: u64,
    header: &mut ConnectedHeader,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), SerializeError> {
    debug_assert_eq!(
        counter as u16, header.sequence,
        "the counter's low bits are the sequence"
    );
    if body.len() > MAX_PAYLOAD_BYTES {
        return Err(SerializeError::Overflow);
    }
    let sealed_end = CONNECTED_CLEAR_BYTES + ACK_FIELDS_BYTES + body.len();
    out.clear();
    out.resize(sealed_end + TAG_BYTES, 0);
    write_connected_clear(packet_type, header.sequence, out)?;
    let mut w = WriteStream::new(&mut out[CONNECTED_CLEAR_BYTES..CONNECTED_CLEAR_BYTES + ACK_FIELDS_BYTES]);
    header.serialize_ack_fields(&mut w)?;
    w.finish()?;
    out[CONNECTED_CLEAR_BYTES + ACK_FIELDS_BYTES..sealed_end].copy_from_slice(body);
    let (clear, rest) = out.split_at_mut(CONNECTED_CLEAR_BYTES);
    let (sealed, tag) = rest.split_at_mut(sealed_end - CONNECTED_CLEAR_BYTES);
    tag.copy_from_slice(&key.seal(counter, clear, sealed));
    Ok(())
}

/// A connected packet's type from its first byte, if it is one.
fn connected_type(first: u8) -> Option<PacketType> {
    if first & !0x07 != CONNECTED_MARK {
        return None;
    }
    PacketType::from_u8(first & 0x07).ok().filter(|t| t.is_connected())
}

/// Reads just the prefix: enough to refuse a peer of another version. (Connected packets have none: see
/// `read_packet`.)
pub fn read_prefix(data: &[u8]) -> Result<Prefix, SerializeError> {
    let mut r = ReadStream::new(data);
    let mut protocol = 0u16;
    r.serialize_u16(&mut protocol)?;
    if protocol != PROTOCOL_ID {
        return Err(SerializeError::WrongProtocol);
    }
    let mut version = 0u8;
    let mut ty = 0u8;
    r.serialize_u8(&mut version)?;
    r.serialize_u8(&mut ty)?;
    Ok(Prefix {
        version,
        packet_type: PacketType::from_u8(ty)?,
    })
}

/// Decodes a datagram. The version is returned, not checked: the endpoint decides what a mismatch means (a
/// connected packet carries none and reads as `PROTOCOL_VERSION`: only a connection of this version has keys to
/// open it). Size rules: nothing over `MAX_PACKET_BYTES`; guest handshake packets exactly
/// `HANDSHAKE_REQUEST_BYTES` with zero padding; connected packets at least their ack fields and a tag after the
/// clear part (a disconnect exactly that and its reason); others without trailing bytes.
pub fn read_packet(data: &[u8]) -> Result<(u8, Packet<'_>), SerializeError> {
    if data.len() > MAX_PACKET_BYTES {
        return Err(SerializeError::TrailingBytes);
    }
    if let Some(ty) = data.first().and_then(|&b| connected_type(b)) {
        if data.len() < CONNECTED_CLEAR_BYTES {
            return Err(SerializeError::ReadPastEnd);
        }
        let rest = &data[CONNECTED_CLEAR_BYTES..];
        // The disconnect's plaintext carries its reason (1 byte) after the ack fields.
        let least = match ty {
            PacketType::Disconnect => ACK_FIELDS_BYTES + 1,
            _ => ACK_FIELDS_BYTES,
        } + TAG_BYTES;
        if rest.len() < least || (ty != PacketType::Payload && rest.len() != least) {
            return Err(SerializeError::ReadPastEnd);
        }
        let packet = Packet::Connected {
            packet_type: ty,
            sequence: u16::from_le_bytes([data[1], data[2]]),
            sealed: rest,
        };
        return Ok((PROTOCOL_VERSION, packet));
    }
    let mut f = Fields::default();
    let mut r = ReadStream::new(data);
    f.serialize(&mut r)?;
    let end = r.bits_processed().div_ceil(8);
    let rest = &data[end..];
    let ty = PacketType::from_u8(f.packet_type)?;
    let packet = match ty {
        PacketType::Request | PacketType::Response => {
            // Padding checked for length and zeros: a short request could otherwise draw a larger reply.
            if data.len() != HANDSHAKE_REQUEST_BYTES {
                return Err(SerializeError::ReadPastEnd);
            }
            if rest.iter().any(|&b| b != 0) {
                return Err(SerializeError::NonZeroPadding);
            }
            if ty == PacketType::Request {
                Packet::Request {
                    client_salt: f.client_salt,
                    public_key: f.public_key,
                    mac: f.mac,
                }
            } else {
                Packet::Response {
                    client_salt: f.client_salt,
                    public_key: f.public_key,
                    cookie: f.cookie,
                    proof: f.proof,
                    mac: f.mac,
                }
            }
        }
        _ => {
            r.finish()?;
            match ty {
                PacketType::Challenge => Packet::Challenge {
                    client_salt: f.client_salt,
                    cookie: f.cookie,
                    public_key: f.public_key,
                },
                PacketType::Accepted => Packet::Accepted {
                    client_salt: f.client_salt,
                    sealed: f.accept,
                },
                PacketType::Denied => {
                    let reason = match f.reason {
                        0 => DenyReason::Full,
                        VERSION_MISMATCH_CODE => DenyReason::VersionMismatch {
                            host_version: f.reason_arg,
                        },
                        2 => DenyReason::WrongSecret,
                        3 => DenyReason::AddressFull,
                        _ => return Err(SerializeError::ValueOutOfRange),
                    };
                    Packet::Denied {
                        client_salt: f.client_salt,
                        reason,
                        tag: f.tag,
                    }
                }
                _ => unreachable!("handled above"),
            }
        }
    };
    Ok((f.version, packet))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_packets(sealed: &[u8]) -> Vec<Packet<'_>> {
        let connected = |packet_type, sealed| Packet::Connected {
            packet_type,
            sequence: 65535,
            sealed,
        };
        vec![
            Packet::Request {
                client_salt: u64::MAX,
                public_key: [7; 32],
                mac: [8; JOIN_MAC_BYTES],
            },
            Packet::Challenge {
                client_salt: 1,
                cookie: [0xff; 16],
                public_key: [1; 32],
            },
            Packet::Response {
                client_salt: 0,
                public_key: [2; 32],
                cookie: [3; 16],
                proof: [4; HANDSHAKE_FIRST_BYTES],
                mac: [6; JOIN_MAC_BYTES],
            },
            Packet::Accepted {
                client_salt: 3,
                sealed: [5; ACCEPT_SEALED_BYTES],
            },
            Packet::Denied {
                client_salt: 4,
                reason: DenyReason::Full,
                tag: [8; TAG_BYTES],
            },
            Packet::Denied {
                client_salt: 5,
                reason: DenyReason::VersionMismatch { host_version: 255 },
                tag: [0; TAG_BYTES],
            },
            Packet::Denied {
                client_salt: 6,
                reason: DenyReason::WrongSecret,
                tag: [9; TAG_BYTES],
            },
            connected(PacketType::KeepAlive, &sealed[..ACK_FIELDS_BYTES + TAG_BYTES]),
            connected(PacketType::Payload, sealed),
            connected(PacketType::Payload, &sealed[..ACK_FIELDS_BYTES + TAG_BYTES]),
            connected(PacketType::Disconnect, &sealed[..ACK_FIELDS_BYTES + 1 + TAG_BYTES]),
        ]
    }

    #[test]
    fn every_packet_round_trips() {
        let sealed = [0x5a; MAX_PACKET_BYTES - CONNECTED_CLEAR_BYTES];
        for p in all_packets(&sealed) {
            let mut buf = [0u8; 1500];
            let n = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
            assert!(n <= MAX_PACKET_BYTES);
            assert_eq!(read_packet(&buf[..n]).unwrap(), (PROTOCOL_VERSION, p));
            if !matches!(p, Packet::Connected { .. }) {
                assert_eq!(read_prefix(&buf[..n]).unwrap().version, PROTOCOL_VERSION);
            }
        }
    }

    #[test]
    fn host_replies_are_smaller_than_requests_and_headers_are_as_documented() {
        let sealed = [0u8; ACK_FIELDS_BYTES + 1 + TAG_BYTES];
        let mut buf = [0u8; MAX_PACKET_BYTES];
        for p in all_packets(&sealed) {
            let n = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
            match p {
                Packet::Request { .. } | Packet::Response { .. } => assert_eq!(n, HANDSHAKE_REQUEST_BYTES),
                Packet::Challenge { .. } | Packet::Denied { .. } | Packet::Accepted { .. } => {
                    assert!(n < HANDSHAKE_REQUEST_BYTES)
                }
                Packet::Connected { .. } => {}
            }
        }
        let keep_alive = Packet::Connected {
            packet_type: PacketType::KeepAlive,
            sequence: 1,
            sealed: &sealed[..ACK_FIELDS_BYTES + TAG_BYTES],
        };
        assert_eq!(write_packet(&keep_alive, 2, &mut buf).unwrap(), CONNECTED_HEADER_BYTES);
        assert_eq!(CONNECTED_HEADER_BYTES, 29);
        let mut clear = [0u8; CONNECTED_CLEAR_BYTES];
        write_connected_clear(PacketType::KeepAlive, 1, &mut clear).unwrap();
        assert_eq!(clear, buf[..CONNECTED_CLEAR_BYTES]);
        // A connected packet's first byte is never a prefix's.
        assert_ne!(CONNECTED_MARK | PacketType::Payload as u8, PROTOCOL_ID.to_le_bytes()[0]);
    }

    #[test]
    fn oversize_payload_is_refused_on_send() {
        let sealed = [0u8; MAX_PACKET_BYTES - CONNECTED_CLEAR_BYTES + 1];
        let mut buf = [0u8; 2000];
        let p = Packet::Connected {
            packet_type: PacketType::Payload,
            sequence: 0,
            sealed: &sealed,
        };
        assert_eq!(
            write_packet(&p, PROTOCOL_VERSION, &mut buf),
            Err(SerializeError::Overflow)
        );
        assert!(read_packet(&[0u8; MAX_PACKET_BYTES + 1]).is_err());
    }

    #[test]
    fn truncated_padded_and_foreign_packets_are_errors() {
        let sealed = [9u8; ACK_FIELDS_BYTES + 1 + TAG_BYTES];
        let mut buf = [0u8; MAX_PACKET_BYTES];
        for p in all_packets(&sealed) {
            let n = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
            for cut in 0..n {
                if let Ok((_, q)) = read_packet(&buf[..cut]) {
                    // Only a payload packet may be cut inside its sealed part and still parse (its tag then fails).
                    assert!(
                        matches!(
                            q,
                            Packet::Connected {
                                packet_type: PacketType::Payload,
                                ..
                            }
                        ),
                        "{p:?} cut at {cut} parsed as {q:?}"
                    );
                }
            }
            let mut longer = buf[..n].to_vec();
            longer.push(1);
            if !matches!(
                p,
                Packet::Connected {
                    packet_type: PacketType::Payload,
                    ..
                }
            ) {
                assert!(read_packet(&longer).is_err(), "{p:?} with a trailing byte");
            }
        }
        assert_eq!(read_packet(&[0x00, 0x00, 1, 0]), Err(SerializeError::WrongProtocol));
        let id = PROTOCOL_ID.to_le_bytes();
        assert_eq!(
            read_packet(&[id[0], id[1], 1, 8]),
            Err(SerializeError::UnknownPacketType(8))
        );
    }

    #[test]
    fn a_version_1_request_still_parses_so_it_can_be_refused_with_a_reason() {
        // Version 1's request was the prefix and the salt, zero-padded to the same size.
        let mut v1 = [0u8; HANDSHAKE_REQUEST_BYTES];
        v1[..2].copy_from_slice(&PROTOCOL_ID.to_le_bytes());
        (v1[2], v1[3]) = (1, 0);
        v1[4..12].copy_from_slice(&42u64.to_le_bytes());
        let (version, p) = read_packet(&v1).unwrap();
        assert_eq!(version, 1);
        assert!(matches!(p, Packet::Request { client_salt: 42, .. }));
    }
}
