//! An attacker that holds a connected guest's keys sends the host whatever the input says: per datagram a type,
//! a counter step (forward, back or far), ack and echo fields and a payload, sealed as the guest would, and
//! sometimes a bit flipped after sealing. No panic; no counter delivered twice; the host's estimates stay finite
//! and it sends only to its guest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use std::net::SocketAddr;
use tumble_net::endpoint::{EndpointEvent, PeerId};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::{write_sealed, ConnectedHeader, PacketType, MAX_PAYLOAD_BYTES};
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};

fuzz_target!(|data: &[u8]| {
    let host_addr = SocketAddr::from(([10, 0, 0, 1], 1));
    let guest_addr = SocketAddr::from(([10, 0, 0, 2], 1));
    // Seeded secrets: the input alone decides what happens.
    let seeded = |seed| EndpointConfig {
        key_seed: Some(seed),
        ..Default::default()
    };
    let mut host = Endpoint::host(seeded(1), 0.0).unwrap();
    let config = EndpointConfig {
        join_secret: Some(host.join_secret()),
        ..seeded(2)
    };
    let mut guest = Endpoint::join(config, host_addr, 0.0).unwrap();
    let mut net = MemoryNetwork::new(LinkConfig::default(), 1);
    let mut now = 0.0;
    while !guest.is_connected() {
        now += 0.01;
        host.update(now);
        guest.update(now);
        net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    }
    while host.pop_event().is_some() {}
    let keys = guest.peer_keys(PeerId(0)).unwrap();
    let mut counter = 100u64;
    let mut delivered = HashSet::new();
    let mut packet = Vec::new();
    // 16 bytes of fields per datagram, then up to 255 bytes of payload (its length is a field).
    let mut rest = data;
    while rest.len() >= 16 {
        let (f, tail) = rest.split_at(16);
        let len = usize::from(f[15]).min(tail.len()).min(MAX_PAYLOAD_BYTES);
        let (payload, tail) = tail.split_at(len);
        rest = tail;
        let step = i64::from(i16::from_le_bytes([f[0], f[1]])) * if f[2] & 1 == 1 { 64 } else { 1 };
        counter = counter.saturating_add_signed(step);
        let packet_type = match f[2] >> 6 {
            0 => PacketType::KeepAlive,
            1 if f[3] == 0 => PacketType::Disconnect,
            _ => PacketType::Payload,
        };
        let mut header = ConnectedHeader {
            sequence: counter as u16,
            ack: u16::from_le_bytes([f[4], f[5]]),
            ack_bits: u32::from_le_bytes([f[6], f[7], f[8], f[9]]),
            echo_sequence: u16::from_le_bytes([f[10], f[11]]),
            echo_delay_100us: u16::from_le_bytes([f[12], f[13]]),
        };
        let body: &[u8] = match packet_type {
            PacketType::Payload => payload,
            PacketType::Disconnect => &[0],
            _ => &[],
        };
        write_sealed(&keys.send, packet_type, counter, &mut header, body, &mut packet).unwrap();
        if f[14] & 0x80 != 0 {
            let i = usize::from(f[14] & 0x7f) % packet.len();
            packet[i] ^= 1 << (f[3] & 7);
        }
        now += 0.001;
        host.receive(now, guest_addr, &packet);
        while let Some(e) = host.pop_event() {
            if let EndpointEvent::Received { peer, sequence } = e {
                assert_eq!(sequence, counter as u16);
                assert!(delivered.insert(counter), "counter {counter} delivered twice");
                host.accept(peer, sequence);
            }
        }
        host.update(now);
        while let Some((to, _)) = host.pop_outgoing() {
            assert_eq!(to, guest_addr);
        }
        if let Some(s) = host.stats(PeerId(0)) {
            assert!(s.rtt_ms.is_finite() && s.rtt_ms >= 0.0, "{s:?}");
        }
    }
});
