//! The fast fuzz slice: over a million random, structured and mutated packets thrown at every parser and at a
//! live host and guest (memory transport, simulated clock). Seeded, so a failure reproduces. Checks: no panic;
//! a packet that parses re-encodes to itself; garbage from strangers or spoofing the peer's address changes no
//! connection; the host never answers a stranger with more bytes than it received.

use std::net::SocketAddr;
use tumble_net::endpoint::PeerId;
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::{
    read_packet, read_prefix, write_packet, ConnectedHeader, DenyReason, DisconnectReason, Packet, MAX_PACKET_BYTES,
    PROTOCOL_ID, PROTOCOL_VERSION,
};
use tumble_net::rng::Rng;
use tumble_net::serialize::{ReadStream, SerializeError, Stream};
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};

const PACKETS: usize = 1_000_000;

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], port))
}

/// Every serializer, reading garbage.
fn read_everything(bytes: &[u8]) -> Result<(), SerializeError> {
    let mut r = ReadStream::new(bytes);
    let (mut b, mut i, mut u, mut f, mut v) = (false, 0i32, 0u32, 0f32, 0u64);
    let mut vec = Vec::new();
    r.serialize_bool(&mut b)?;
    r.serialize_int(&mut i, -1000, 1000)?;
    r.serialize_uint(&mut u, 5)?;
    r.serialize_float_range(&mut f, -50.0, 50.0, 0.001)?;
    assert!((-50.0..=50.0).contains(&f));
    r.serialize_varint(&mut v)?;
    r.serialize_int(&mut i, i32::MIN, i32::MAX)?;
    r.serialize_byte_vec(&mut vec, 1000)?;
    assert!(vec.len() <= bytes.len());
    r.serialize_u64(&mut v)?;
    r.finish()
}

/// A well-formed packet with random fields.
fn random_packet<'a>(rng: &mut Rng, payload: &'a [u8], key: u32) -> Packet<'a> {
    let header = ConnectedHeader {
        session_key: if rng.chance_pct(50.0) { key } else { rng.next_u32() },
        sequence: rng.next_u32() as u16,
        ack: rng.next_u32() as u16,
        ack_bits: rng.next_u32(),
        echo_sequence: rng.next_u32() as u16,
        echo_delay_100us: rng.next_u32() as u16,
    };
    let salt = rng.next_u64();
    match rng.below(8) {
        0 => Packet::Request { client_salt: salt },
        1 => Packet::Challenge {
            client_salt: salt,
            challenge: rng.next_u64(),
        },
        2 => Packet::Response {
            client_salt: salt,
            challenge: rng.next_u64(),
        },
        3 => Packet::Accepted {
            client_salt: salt,
            session_key: rng.next_u32(),
            peer_index: 1,
            max_peers: 4,
        },
        4 => Packet::Denied {
            client_salt: salt,
            reason: DenyReason::VersionMismatch { host_version: 9 },
        },
        5 => Packet::KeepAlive { header },
        6 => Packet::Payload {
            header,
            payload: &payload[..rng.below(payload.len())],
        },
        _ => Packet::Disconnect {
            session_key: header.session_key,
            reason: DisconnectReason::Closed,
        },
    }
}

/// Flips bits, overwrites, truncates, extends or splices `buf` in place.
fn mutate(rng: &mut Rng, buf: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 | 1 if !buf.is_empty() => {
                let i = rng.below(buf.len());
                buf[i] ^= 1 << rng.below(8);
            }
            2 if !buf.is_empty() => {
                let i = rng.below(buf.len());
                buf[i] = rng.next_u32() as u8;
            }
            3 => buf.truncate(rng.below(buf.len() + 1)),
            4 if buf.len() < MAX_PACKET_BYTES + 8 => {
                for _ in 0..1 + rng.below(16) {
                    buf.push(rng.next_u32() as u8);
                }
            }
            _ => {
                // Keep a valid prefix so the deeper parsers are reached.
                let id = PROTOCOL_ID.to_le_bytes();
                if buf.len() >= 4 {
                    buf[..4].copy_from_slice(&[id[0], id[1], PROTOCOL_VERSION, rng.below(9) as u8]);
                }
            }
        }
    }
}

/// What must not change: who is connected, with which key, and what each connection has accepted.
fn fingerprint(e: &Endpoint) -> Vec<(u8, SocketAddr, u64, u64, bool)> {
    e.peers()
        .map(|p| {
            let s = e.stats(p).unwrap();
            (
                p.0,
                e.peer_addr(p).unwrap(),
                s.packets_received,
                s.packets_acked,
                e.is_connected(),
            )
        })
        .collect()
}

#[test]
fn a_million_packets_of_garbage_change_nothing() {
    let start = std::time::Instant::now();
    let (host_addr, guest_addr) = (addr(1, 1), addr(2, 1));
    let mut host = Endpoint::host(
        EndpointConfig {
            seed: 11,
            ..Default::default()
        },
        0.0,
    );
    let mut guest = Endpoint::join(
        EndpointConfig {
            seed: 12,
            ..Default::default()
        },
        host_addr,
        0.0,
    );
    let mut net = MemoryNetwork::new(LinkConfig::default(), 1);
    let mut now = 0.0;
    // Connect, exchange a little, and keep copies of real datagrams as seeds for mutation.
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    while now < 1.0 {
        now += 0.01;
        host.update(now);
        guest.update(now);
        if guest.is_connected() {
            guest.send(now, PeerId(0), &[1, 2, 3, 4]).unwrap();
            host.send(now, PeerId(0), &[5; 40]).unwrap();
        }
        net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    }
    assert!(guest.is_connected());
    let mut capture = Endpoint::join(
        EndpointConfig {
            seed: 13,
            ..Default::default()
        },
        host_addr,
        now,
    );
    while let Some((_, d)) = capture.pop_outgoing() {
        corpus.push(d);
    }
    guest.send(now, PeerId(0), &[9; 100]).unwrap();
    host.send(now, PeerId(0), &[9; 100]).unwrap();
    // Real connected packets from this session are seeds too, but only ever replayed from a stranger's address
    // (sent from the real address with the real key they would be genuine traffic, not garbage).
    while let Some((_, d)) = guest.pop_outgoing() {
        corpus.push(d);
    }
    while let Some((_, d)) = host.pop_outgoing() {
        corpus.push(d);
    }
    let mut buf = [0u8; MAX_PACKET_BYTES];
    let mut rng = Rng::new(0xf022);
    let payload = vec![0xaa; 1100];
    assert!(
        corpus.iter().all(|c| c.len() < 8 || c[4..8] != [0, 0, 0, 0]),
        "a session key of 0 would collide"
    );
    let host_before = fingerprint(&host);
    let guest_before = fingerprint(&guest);
    let (mut parsed, mut accepted_by_parser) = (0u64, 0u64);
    let mut packet = Vec::with_capacity(2048);
    for n in 0..PACKETS {
        now += 1e-5;
        packet.clear();
        let kind = rng.below(10);
        match kind {
            0..=2 => {
                let len = if rng.chance_pct(90.0) {
                    rng.below(64)
                } else {
                    rng.below(MAX_PACKET_BYTES + 100)
                };
                packet.extend((0..len).map(|_| rng.next_u32() as u8));
            }
            3..=5 => {
                // Keys are random here (0 is never a key this session uses: checked below).
                let p = random_packet(&mut rng, &payload, 0);
                let len = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
                packet.extend_from_slice(&buf[..len]);
                if rng.chance_pct(50.0) {
                    mutate(&mut rng, &mut packet);
                }
            }
            _ => {
                packet.extend_from_slice(&corpus[rng.below(corpus.len())]);
                mutate(&mut rng, &mut packet);
            }
        }
        // Every parser.
        let _ = read_prefix(&packet);
        let _ = read_everything(&packet);
        if let Ok((version, p)) = read_packet(&packet) {
            parsed += 1;
            let len = write_packet(&p, version, &mut buf).unwrap();
            assert_eq!(read_packet(&buf[..len]).unwrap(), (version, p), "re-encoding differs");
            if buf[..len] == packet[..] {
                accepted_by_parser += 1;
            }
        }
        // A stranger writes to the host and the guest; some packets claim to come from the peer's address but
        // were made without its session key.
        let stranger = addr(100 + (n % 50) as u8, 7000 + (n % 3) as u16);
        let from_corpus = kind > 5;
        let spoofing = n % 4 == 0 && !from_corpus;
        let host_from = if spoofing { guest_addr } else { stranger };
        let guest_from = if spoofing { host_addr } else { stranger };
        host.receive(now, host_from, &packet);
        while let Some((to, reply)) = host.pop_outgoing() {
            assert_eq!(to, host_from, "reply to an address that did not write");
            assert!(
                reply.len() <= packet.len(),
                "amplification: {} bytes for {}",
                reply.len(),
                packet.len()
            );
        }
        guest.receive(now, guest_from, &packet);
        assert!(guest.pop_outgoing().is_none());
        if n % 64 == 0 {
            assert_eq!(fingerprint(&host), host_before, "host changed by garbage at packet {n}");
            assert_eq!(
                fingerprint(&guest),
                guest_before,
                "guest changed by garbage at packet {n}"
            );
        }
    }
    assert_eq!(fingerprint(&host), host_before);
    assert_eq!(fingerprint(&guest), guest_before);
    // The session still works.
    while host.pop_event().is_some() || guest.pop_event().is_some() {}
    let seq = guest.send(now, PeerId(0), b"still here").unwrap();
    net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    assert!(host.has_received(PeerId(0), seq));
    eprintln!(
        "fuzz slice: {PACKETS} packets in {:.2} s; {parsed} parsed, {accepted_by_parser} canonical; host drops {:?}",
        start.elapsed().as_secs_f64(),
        host.drops()
    );
}
