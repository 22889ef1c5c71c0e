//! Demand: what a connection's sender would put on the wire with no bandwidth budget. A shadow [`Sender`] sees the
//! same world every step and hears the same acks as the real one (by the real packet sequence), but writes into
//! a buffer with room for every cube, so each packet carries everything that changed, cheapest encoding first.
//! Set beside the real rate, it shows whether the budget binds (rate ≈ budget < demand) or not (rate = demand):
//! a rate check that cannot fail because the budget caps it becomes one that can.

use tumble_engine::physics::World;
use tumble_net::packet::{CONNECTED_HEADER_BYTES, MAX_PAYLOAD_BYTES};

use tumble_game::sync::codec::state_packet::PacketCoding;
use tumble_game::sync::link::sender::{Sender, SyncError};

/// Bytes one update may take in a packet of many, at most: an absolute awake update is under 40 bytes however it
/// is coded (`min_budget`), and an adaptive coder's models can make a late update cost somewhat more than a first.
const UPDATE_BYTES_MAX: usize = 64;
/// Bytes of a state packet beyond its updates (step, count or closing flag, check byte), at most.
const PACKET_FIXED_BYTES_MAX: usize = 16;

/// The shadow sender of one connection.
#[derive(Debug)]
pub struct Demand {
    sender: Sender,
    buf: Vec<u8>,
    /// Per-datagram bytes beyond the body (IP/UDP header included).
    overhead_bytes: u64,
    wire_bytes: u64,
    cube_count: usize,
    /// Packets that did not carry every cube (the buffer proved too small): should stay 0.
    pub short_packets: u64,
}

impl Demand {
    /// A shadow for a scene of `cube_count` cubes coded with `coding`; each datagram costs `ip_udp_header_bytes`
    /// beyond the transport's own header and the body.
    pub fn new(cube_count: usize, coding: PacketCoding, ip_udp_header_bytes: usize) -> Self {
        let mut sender = Sender::new(cube_count);
        sender.coding = coding;
        Self {
            sender,
            buf: vec![0u8; cube_count * UPDATE_BYTES_MAX + PACKET_FIXED_BYTES_MAX],
            overhead_bytes: (CONNECTED_HEADER_BYTES + ip_udp_header_bytes) as u64,
            wire_bytes: 0,
            cube_count,
            short_packets: 0,
        }
    }

    /// Writes the unbudgeted packet for `step` as the real sender's packet `sequence`; counts its wire bytes (a
    /// body over one datagram's payload would go as several datagrams, each with its headers).
    pub fn send(&mut self, world: &World, step: u64, sequence: u16) -> Result<(), SyncError> {
        let body = self.sender.write_packet(world, step, sequence, &mut self.buf)?;
        if self.sender.last_packet().0.len() < self.cube_count {
            self.short_packets += 1;
        }
        let datagrams = body.div_ceil(MAX_PAYLOAD_BYTES).max(1) as u64;
        self.wire_bytes += body as u64 + datagrams * self.overhead_bytes;
        Ok(())
    }

    /// The real packet `sequence` was acked.
    pub fn on_acked(&mut self, sequence: u16) {
        self.sender.on_acked(sequence);
    }

    /// The receiver refused a packet: the real sender forgets its baselines, and so does the shadow.
    pub fn resync(&mut self) {
        self.sender.resync();
    }

    /// Wire bytes demanded so far.
    pub fn wire_bytes(&self) -> u64 {
        self.wire_bytes
    }
}
