//! Tumble's network transport: everything between the game and a UDP socket.
//!
//! - `bitpack` / `serialize`: a bit packer and the `Stream` trait, one serialize function for reading and writing.
//! - `sequence`: 16-bit sequence numbers with wrap-around-safe comparison, and ring buffers keyed by them.
//! - `packet`: the wire format (prefix with protocol id and version, handshake packets, connected header with acks).
//! - `ack`: which of our packets the peer received (acked / lost events), RTT, loss and bandwidth estimates.
//! - `connection`: one peer's state; `endpoint`: the host or the guest, sans I/O (time and bytes passed in).
//! - `crypto`: the Noise NKpsk0 handshake (through `snow`), packet sealing, cookies, the join MAC; `join_code`: what
//!   a host gives its players; `rate_limit`: handshake token buckets per IP address.
//! - `link_sim`: a seeded, deterministic lossy link; `socket`: the mio UDP socket; `memory`: in-process routing.
//! - `port_mapping`: asks the home router to forward a UDP port (PCP, NAT-PMP, UPnP-IGD), so a host behind it is
//!   reachable from outside.
//!
//! It never depends on the engine or the game.

pub mod ack;
pub mod bitpack;
pub mod connection;
pub mod crypto;
pub mod endpoint;
pub mod join_code;
pub mod link_sim;
pub mod memory;
pub mod packet;
pub mod port_mapping;
pub mod rate_limit;
pub mod rng;
pub mod sequence;
pub mod serialize;
pub mod socket;

pub use ack::{AckEvent, AckTracker};
pub use connection::ConnectionStats;
pub use endpoint::{Endpoint, EndpointConfig, EndpointEvent, PeerId};
pub use link_sim::{LinkConfig, LinkSim};
pub use packet::{DenyReason, DisconnectReason, MAX_PACKET_BYTES};
pub use serialize::{ReadStream, SerializeError, Stream, WriteStream};
pub use socket::{SocketError, UdpTransport};
