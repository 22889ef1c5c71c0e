//! The wire format. Every packet starts with the same 4-byte prefix (protocol id, version, type), frozen across
//! versions so that a peer of another version can still be refused with a reason.
//!
//! Handshake packets from a would-be guest are padded to `HANDSHAKE_REQUEST_BYTES`, and everything the host sends
//! before a connection exists is smaller, so the host can't be used to amplify traffic towards a spoofed address.
//! Connected packets carry a session key that only the two ends know (it travelled in the accept to the real
//! address), so an off-path sender can't inject into a connection even when it spoofs the peer's address.

use crate::serialize::{ReadStream, SerializeError, Stream, WriteStream};

/// Largest datagram we send or accept: below every realistic path MTU, so no IP fragmentation.
pub const MAX_PACKET_BYTES: usize = 1200;
/// Identifies Tumble traffic; anything else on the port is dropped at the first two bytes.
pub const PROTOCOL_ID: u16 = 0x7b1e;
/// Bumped whenever the wire format changes; the prefix and `Request`/`Denied` layouts never change.
pub const PROTOCOL_VERSION: u8 = 1;
/// Guest handshake packets are padded to this size (bytes) so every host reply is smaller.
pub const HANDSHAKE_REQUEST_BYTES: usize = 256;
/// Prefix plus connected header, in bytes; what is left of `MAX_PACKET_BYTES` is payload.
pub const CONNECTED_HEADER_BYTES: usize = PREFIX_BYTES + 4 + 2 + 2 + 4 + 2 + 2;
/// `echo_delay_100us` value meaning "no echo in this packet".
pub const NO_ECHO: u16 = u16::MAX;
pub const PREFIX_BYTES: usize = 4;
/// Largest payload a connected packet can carry.
pub const MAX_PAYLOAD_BYTES: usize = MAX_PACKET_BYTES - CONNECTED_HEADER_BYTES;
/// How many peers an accept can name (host included); the endpoint's configured maximum must not exceed it.
pub const MAX_PEERS_LIMIT: u8 = 64;

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
}

/// Why a host refused a guest; sent in `Denied`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyReason {
    /// Every slot is taken.
    Full,
    /// The guest speaks another protocol version; `host_version` is the host's.
    VersionMismatch { host_version: u8 },
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

/// Connected packets: acks ride on every packet in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnectedHeader {
    pub session_key: u32,
    pub sequence: u16,
    /// Newest sequence received from the peer.
    pub ack: u16,
    /// Bit i set: `ack - 1 - i` was received too.
    pub ack_bits: u32,
    /// A packet the sender of this one received, echoed for an RTT sample: each received packet is echoed once,
    /// in arrival order, whatever its delay, so the samples are not biased towards fast packets.
    pub echo_sequence: u16,
    /// How long (units of 100 µs) `echo_sequence` was held before this packet went out, subtracted from the RTT
    /// sample so the send interval does not inflate it; `NO_ECHO` when nothing is echoed.
    pub echo_delay_100us: u16,
}

/// A decoded packet. Payload bytes are borrowed from the datagram (no copy, no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    Request {
        client_salt: u64,
    },
    Challenge {
        client_salt: u64,
        challenge: u64,
    },
    Response {
        client_salt: u64,
        challenge: u64,
    },
    Accepted {
        client_salt: u64,
        session_key: u32,
        peer_index: u8,
        max_peers: u8,
    },
    Denied {
        client_salt: u64,
        reason: DenyReason,
    },
    KeepAlive {
        header: ConnectedHeader,
    },
    Payload {
        header: ConnectedHeader,
        payload: &'a [u8],
    },
    Disconnect {
        session_key: u32,
        reason: DisconnectReason,
    },
}

/// The first bytes of every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    pub version: u8,
    pub packet_type: PacketType,
}

/// Fixed-size fields of all packet types, serialized by one function in both directions.
#[derive(Debug, Clone, Copy, Default)]
struct Fields {
    packet_type: u8,
    version: u8,
    client_salt: u64,
    challenge: u64,
    session_key: u32,
    peer_index: u8,
    max_peers: u8,
    reason: u8,
    reason_arg: u8,
    header: ConnectedHeader,
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
            PacketType::Request => s.serialize_u64(&mut self.client_salt),
            PacketType::Challenge | PacketType::Response => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_u64(&mut self.challenge)
            }
            PacketType::Accepted => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_u32(&mut self.session_key)?;
                s.serialize_u8(&mut self.peer_index)?;
                s.serialize_u8(&mut self.max_peers)?;
                if self.max_peers == 0 || self.max_peers > MAX_PEERS_LIMIT || self.peer_index >= self.max_peers {
                    return Err(SerializeError::ValueOutOfRange);
                }
                Ok(())
            }
            PacketType::Denied => {
                s.serialize_u64(&mut self.client_salt)?;
                s.serialize_u8(&mut self.reason)?;
                s.serialize_u8(&mut self.reason_arg)
            }
            PacketType::KeepAlive | PacketType::Payload => {
                let h = &mut self.header;
                s.serialize_u32(&mut h.session_key)?;
                s.serialize_u16(&mut h.sequence)?;
                s.serialize_u16(&mut h.ack)?;
                s.serialize_u32(&mut h.ack_bits)?;
                s.serialize_u16(&mut h.echo_sequence)?;
                s.serialize_u16(&mut h.echo_delay_100us)
            }
            PacketType::Disconnect => {
                s.serialize_u32(&mut self.session_key)?;
                s.serialize_u8(&mut self.reason)
            }
        }
    }
}

fn deny_reason_code(reason: DenyReason) -> (u8, u8) {
    match reason {
        DenyReason::Full => (0, 0),
        DenyReason::VersionMismatch { host_version } => (1, host_version),
    }
}

fn disconnect_reason_code(reason: DisconnectReason) -> u8 {
    match reason {
        DisconnectReason::Closed => 0,
        DisconnectReason::TimedOut => 1,
        DisconnectReason::HostShutdown => 2,
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
    let mut payload: &[u8] = &[];
    let mut pad_to = 0;
    match *packet {
        Packet::Request { client_salt } => {
            f.packet_type = PacketType::Request as u8;
            f.client_salt = client_salt;
            pad_to = HANDSHAKE_REQUEST_BYTES;
        }
        Packet::Challenge { client_salt, challenge } => {
            f.packet_type = PacketType::Challenge as u8;
            (f.client_salt, f.challenge) = (client_salt, challenge);
        }
        Packet::Response { client_salt, challenge } => {
            f.packet_type = PacketType::Response as u8;
            (f.client_salt, f.challenge) = (client_salt, challenge);
            pad_to = HANDSHAKE_REQUEST_BYTES;
        }
        Packet::Accepted {
            client_salt,
            session_key,
            peer_index,
            max_peers,
        } => {
            f.packet_type = PacketType::Accepted as u8;
            (f.client_salt, f.session_key, f.peer_index, f.max_peers) =
                (client_salt, session_key, peer_index, max_peers);
        }
        Packet::Denied { client_salt, reason } => {
            f.packet_type = PacketType::Denied as u8;
            f.client_salt = client_salt;
            (f.reason, f.reason_arg) = deny_reason_code(reason);
        }
        Packet::KeepAlive { header } => {
            f.packet_type = PacketType::KeepAlive as u8;
            f.header = header;
        }
        Packet::Payload { header, payload: p } => {
            f.packet_type = PacketType::Payload as u8;
            f.header = header;
            payload = p;
        }
        Packet::Disconnect { session_key, reason } => {
            f.packet_type = PacketType::Disconnect as u8;
            f.session_key = session_key;
            f.reason = disconnect_reason_code(reason);
        }
    }
    let mut w = WriteStream::new(buf);
    f.serialize(&mut w)?;
    let mut n = w.finish()?;
    if n + payload.len() > buf.len() {
        return Err(SerializeError::Overflow);
    }
    buf[n..n + payload.len()].copy_from_slice(payload);
    n += payload.len();
    if pad_to > n {
        if pad_to > buf.len() {
            return Err(SerializeError::Overflow);
        }
        buf[n..pad_to].fill(0);
        n = pad_to;
    }
    Ok(n)
}

/// Reads just the prefix: enough to refuse a peer of another version.
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

/// Decodes a datagram. The version is returned, not checked: the endpoint decides what a mismatch means.
/// Size rules: nothing over `MAX_PACKET_BYTES`; guest handshake packets exactly `HANDSHAKE_REQUEST_BYTES` with
/// zero padding; other packets without trailing bytes.
pub fn read_packet(data: &[u8]) -> Result<(u8, Packet<'_>), SerializeError> {
    if data.len() > MAX_PACKET_BYTES {
        return Err(SerializeError::TrailingBytes);
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
                }
            } else {
                Packet::Response {
                    client_salt: f.client_salt,
                    challenge: f.challenge,
                }
            }
        }
        PacketType::Payload => Packet::Payload {
            header: f.header,
            payload: rest,
        },
        _ => {
            r.finish()?;
            match ty {
                PacketType::Challenge => Packet::Challenge {
                    client_salt: f.client_salt,
                    challenge: f.challenge,
                },
                PacketType::Accepted => Packet::Accepted {
                    client_salt: f.client_salt,
                    session_key: f.session_key,
                    peer_index: f.peer_index,
                    max_peers: f.max_peers,
                },
                PacketType::Denied => {
                    let reason = match f.reason {
                        0 => DenyReason::Full,
                        1 => DenyReason::VersionMismatch {
                            host_version: f.reason_arg,
                        },
                        _ => return Err(SerializeError::ValueOutOfRange),
                    };
                    Packet::Denied {
                        client_salt: f.client_salt,
                        reason,
                    }
                }
                PacketType::KeepAlive => Packet::KeepAlive { header: f.header },
                PacketType::Disconnect => {
                    let reason = match f.reason {
                        0 => DisconnectReason::Closed,
                        1 => DisconnectReason::TimedOut,
                        2 => DisconnectReason::HostShutdown,
                        _ => return Err(SerializeError::ValueOutOfRange),
                    };
                    Packet::Disconnect {
                        session_key: f.session_key,
                        reason,
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

    fn header() -> ConnectedHeader {
        ConnectedHeader {
            session_key: 0xdead_beef,
            sequence: 65535,
            ack: 0,
            ack_bits: 0x8000_0001,
            echo_sequence: 65535,
            echo_delay_100us: 65535,
        }
    }

    fn all_packets(payload: &[u8]) -> Vec<Packet<'_>> {
        vec![
            Packet::Request { client_salt: u64::MAX },
            Packet::Challenge {
                client_salt: 1,
                challenge: u64::MAX,
            },
            Packet::Response {
                client_salt: 0,
                challenge: 7,
            },
            Packet::Accepted {
                client_salt: 3,
                session_key: u32::MAX,
                peer_index: 3,
                max_peers: 4,
            },
            Packet::Denied {
                client_salt: 4,
                reason: DenyReason::Full,
            },
            Packet::Denied {
                client_salt: 5,
                reason: DenyReason::VersionMismatch { host_version: 255 },
            },
            Packet::KeepAlive { header: header() },
            Packet::Payload {
                header: header(),
                payload,
            },
            Packet::Payload {
                header: ConnectedHeader::default(),
                payload: &[],
            },
            Packet::Disconnect {
                session_key: 9,
                reason: DisconnectReason::Closed,
            },
            Packet::Disconnect {
                session_key: 9,
                reason: DisconnectReason::TimedOut,
            },
            Packet::Disconnect {
                session_key: 9,
                reason: DisconnectReason::HostShutdown,
            },
        ]
    }

    #[test]
    fn every_packet_round_trips() {
        let payload = [0x5a; MAX_PAYLOAD_BYTES];
        for p in all_packets(&payload) {
            let mut buf = [0u8; 1500];
            let n = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
            assert!(n <= MAX_PACKET_BYTES);
            assert_eq!(read_packet(&buf[..n]).unwrap(), (PROTOCOL_VERSION, p));
            assert_eq!(read_prefix(&buf[..n]).unwrap().version, PROTOCOL_VERSION);
        }
    }

    #[test]
    fn host_replies_are_smaller_than_requests() {
        let mut buf = [0u8; MAX_PACKET_BYTES];
        for p in all_packets(&[]) {
            let n = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
            match p {
                Packet::Request { .. } | Packet::Response { .. } => assert_eq!(n, HANDSHAKE_REQUEST_BYTES),
                Packet::Challenge { .. } | Packet::Denied { .. } | Packet::Accepted { .. } => {
                    assert!(n < HANDSHAKE_REQUEST_BYTES)
                }
                _ => {}
            }
        }
        let n = write_packet(&Packet::KeepAlive { header: header() }, 1, &mut buf).unwrap();
        assert_eq!(n, CONNECTED_HEADER_BYTES);
    }

    #[test]
    fn oversize_payload_is_refused_on_send() {
        let payload = [0u8; MAX_PAYLOAD_BYTES + 1];
        let mut buf = [0u8; 2000];
        let p = Packet::Payload {
            header: header(),
            payload: &payload,
        };
        assert_eq!(
            write_packet(&p, PROTOCOL_VERSION, &mut buf),
            Err(SerializeError::Overflow)
        );
        assert!(read_packet(&[0u8; MAX_PACKET_BYTES + 1]).is_err());
    }

    #[test]
    fn truncated_padded_and_foreign_packets_are_errors() {
        let mut buf = [0u8; MAX_PACKET_BYTES];
        for p in all_packets(&[1, 2, 3]) {
            let n = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
            for cut in 0..n.min(40) {
                if let Ok((_, q)) = read_packet(&buf[..cut]) {
                    // Only a payload packet may be cut inside its payload and still parse.
                    assert!(
                        matches!(q, Packet::Payload { .. }),
                        "{p:?} cut at {cut} parsed as {q:?}"
                    );
                }
            }
            let mut longer = buf[..n].to_vec();
            longer.push(1);
            if !matches!(p, Packet::Payload { .. }) {
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
}
