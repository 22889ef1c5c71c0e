//! The fast fuzz slices, seeded so that a failure reproduces (the long runs: `fuzz/` with `cargo fuzz`).
//!
//! 1. A million datagrams of garbage and of structured, mutated handshake packets from strangers and from spoofed
//!    addresses, thrown at a host with a connected guest, at that guest, and at a guest halfway through its
//!    handshake. Checks: no panic; a packet that parses re-encodes to itself; nothing opens a slot, connects or
//!    fails a guest, or changes a connection; the host never answers with more bytes than it received.
//! 2. A million packets from an attacker that holds a connected guest's keys: every sequence, ack, echo and payload
//!    it likes, replays and tampered copies. Checks: no panic; no payload delivered twice; the host's estimates
//!    stay finite; the host sends only to its guests; the other guest's connection works throughout.

use std::collections::HashSet;
use std::net::SocketAddr;
use tumble_net::crypto::{
    host_handshake, host_key_hash, GuestHandshake, HandshakeContext, JoinMacKey, JoinSecret, KeyPair, PacketKey,
    Randomness,
};
use tumble_net::endpoint::{EndpointEvent, PeerId};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::{
    read_packet, read_prefix, write_packet, write_sealed, ConnectedHeader, DenyReason, Packet, PacketType,
    ACCEPT_SEALED_BYTES, MAX_PACKET_BYTES, MAX_PAYLOAD_BYTES, PROTOCOL_ID, PROTOCOL_VERSION,
};
use tumble_net::rng::Rng;
use tumble_net::serialize::{ReadStream, SerializeError, Stream};
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};

const PACKETS: usize = 1_000_000;
const SECRET: JoinSecret = JoinSecret([0x42; 10]);

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], port))
}

/// The run's seed: `TUMBLE_FUZZ_SEED` (decimal or 0x-hex), else a fixed one. Every endpoint draws its keys, salts
/// and ephemerals from it (`EndpointConfig::key_seed`) and every fuzzer its inputs, so a failure reproduces from
/// the seed the test prints.
fn run_seed() -> u64 {
    let seed = std::env::var("TUMBLE_FUZZ_SEED")
        .ok()
        .and_then(|v| match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse().ok(),
        });
    let seed = seed.unwrap_or(0x7b1e_5eed);
    eprintln!("fuzz seed {seed:#x} (rerun with TUMBLE_FUZZ_SEED={seed:#x})");
    seed
}

/// Cases for a fuzzer: `TUMBLE_FUZZ_CASES` when set (`make bench` runs a million of each), else `default`.
fn cases(default: usize) -> usize {
    std::env::var("TUMBLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An endpoint's settings with its secrets drawn from `seed` (each endpoint of a test its own).
fn config(seed: u64) -> EndpointConfig {
    EndpointConfig {
        join_secret: Some(SECRET),
        key_seed: Some(seed),
        ..Default::default()
    }
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

fn bytes<const N: usize>(rng: &mut Rng) -> [u8; N] {
    std::array::from_fn(|_| rng.next_u32() as u8)
}

/// A well-formed packet with random fields.
fn random_packet<'a>(rng: &mut Rng, sealed: &'a [u8]) -> Packet<'a> {
    let salt = rng.next_u64();
    match rng.below(7) {
        0 => Packet::Request {
            client_salt: salt,
            public_key: bytes(rng),
            mac: bytes(rng),
        },
        1 => Packet::Challenge {
            client_salt: salt,
            cookie: bytes(rng),
            public_key: bytes(rng),
        },
        2 => Packet::Response {
            client_salt: salt,
            public_key: bytes(rng),
            cookie: bytes(rng),
            proof: bytes(rng),
            mac: bytes(rng),
        },
        3 => Packet::Accepted {
            client_salt: salt,
            sealed: bytes::<ACCEPT_SEALED_BYTES>(rng),
        },
        4 => Packet::Denied {
            client_salt: salt,
            reason: [DenyReason::Full, DenyReason::WrongSecret, DenyReason::AddressFull][rng.below(3)],
            tag: bytes::<16>(rng),
        },
        5 => Packet::Connected {
            packet_type: PacketType::KeepAlive,
            sequence: rng.next_u32() as u16,
            sealed: &sealed[..26],
        },
        _ => Packet::Connected {
            packet_type: PacketType::Payload,
            sequence: rng.next_u32() as u16,
            sealed: &sealed[..26 + rng.below(sealed.len() - 26)],
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

/// What must not change: who is connected, and what each connection has received.
fn fingerprint(e: &Endpoint) -> Vec<(u8, SocketAddr, u64, bool)> {
    e.peers()
        .map(|p| {
            let s = e.stats(p).unwrap();
            (p.0, e.peer_addr(p).unwrap(), s.packets_received, e.is_connected())
        })
        .collect()
}

/// Runs the network until `done` or 3 simulated seconds; returns the time reached.
fn run_until(
    net: &mut MemoryNetwork,
    mut now: f64,
    nodes: &mut [(SocketAddr, &mut Endpoint)],
    done: impl Fn(&[(SocketAddr, &mut Endpoint)]) -> bool,
) -> f64 {
    let end = now + 3.0;
    while !done(nodes) {
        assert!(now < end, "the network did not get there");
        now += 0.01;
        for (_, e) in nodes.iter_mut() {
            e.update(now);
            while let Some(ev) = e.pop_event() {
                if let EndpointEvent::Received { peer, sequence } = ev {
                    e.accept(peer, sequence);
                }
            }
        }
        net.pump(now, nodes);
    }
    now
}

#[test]
fn a_million_garbage_and_handshake_packets_change_nothing() {
    let start = std::time::Instant::now();
    let seed = run_seed();
    let packets = cases(PACKETS);
    let (host_addr, guest_addr, pending_addr) = (addr(1, 1), addr(2, 1), addr(3, 1));
    let mut host = Endpoint::host(config(seed), 0.0).unwrap();
    let mut guest = Endpoint::join(config(seed ^ 1), host_addr, 0.0).unwrap();
    let mut net = MemoryNetwork::new(LinkConfig::default(), 1);
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    // A guest that will stay halfway: its request is answered, its response never delivered.
    let mut pending = Endpoint::join(config(seed ^ 2), host_addr, 0.0).unwrap();
    let (_, request) = pending.pop_outgoing().unwrap();
    corpus.push(request.to_vec());
    let request = request.to_vec();
    host.receive(0.0, pending_addr, &request);
    let (_, challenge) = host.pop_outgoing().unwrap();
    let challenge = challenge.to_vec();
    corpus.push(challenge.clone());
    pending.receive(0.0, host_addr, &challenge);
    let response = pending.pop_outgoing().unwrap().1.to_vec();
    corpus.push(response.clone());
    let Ok((_, Packet::Request { .. })) = read_packet(&request) else {
        panic!("the pending guest's request does not parse");
    };
    let mut now = run_until(
        &mut net,
        0.0,
        &mut [(host_addr, &mut host), (guest_addr, &mut guest)],
        |n| n[1].1.is_connected(),
    );
    // Real connected packets are seeds too, but only ever replayed from a stranger's address (from the real
    // address unchanged they would be genuine traffic, not garbage).
    guest.send(now, PeerId(0), &[9; 100]).unwrap();
    host.send(now, PeerId(0), &[9; 100]).unwrap();
    let mut connected_seeds = Vec::new();
    while let Some((_, d)) = guest.pop_outgoing() {
        connected_seeds.push(d.to_vec());
    }
    let from_guest = connected_seeds.len();
    while let Some((_, d)) = host.pop_outgoing() {
        connected_seeds.push(d.to_vec());
    }
    // Delivered first: a guest's packet the host never had, arriving from elsewhere, would rightly move the
    // connection there (a NAT rebinding); once delivered, a copy from elsewhere is stale and must change nothing.
    for (i, d) in connected_seeds.iter().enumerate() {
        if i < from_guest {
            host.receive(now, guest_addr, d);
        } else {
            guest.receive(now, host_addr, d);
        }
    }
    let mut buf = [0u8; MAX_PACKET_BYTES];
    let mut rng = Rng::new(seed ^ 0xf022);
    let sealed = vec![0xaa; MAX_PAYLOAD_BYTES];
    while host.pop_event().is_some() || guest.pop_event().is_some() {}
    let host_before = fingerprint(&host);
    let guest_before = fingerprint(&guest);
    let (mut parsed, mut canonical) = (0u64, 0u64);
    let mut packet = Vec::with_capacity(2048);
    for n in 0..packets {
        now += 1e-5;
        packet.clear();
        let kind = rng.below(10);
        let from_connected = kind == 9;
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
                let p = random_packet(&mut rng, &sealed);
                let len = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
                packet.extend_from_slice(&buf[..len]);
                if rng.chance_pct(50.0) {
                    mutate(&mut rng, &mut packet);
                }
            }
            6..=8 => {
                packet.extend_from_slice(&corpus[rng.below(corpus.len())]);
                mutate(&mut rng, &mut packet);
            }
            _ => {
                packet.extend_from_slice(&connected_seeds[rng.below(connected_seeds.len())]);
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
            canonical += u64::from(buf[..len] == packet[..]);
        }
        // A stranger writes to everyone; a quarter of the time it claims a real address (never with a connected
        // seed: that would be a network duplicate, not garbage).
        let stranger = addr(100 + (n % 50) as u8, 7000 + (n % 3) as u16);
        let spoofing = n % 4 == 0 && !from_connected;
        let (host_from, guest_from) = if spoofing {
            (guest_addr, host_addr)
        } else {
            (stranger, stranger)
        };
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
        // Everything — refusals naming the pending guest's own salt from the host's address included (a refusal
        // ends a join only with the tag of the host that challenged it, issue 31) — leaves the pending guest where
        // it was.
        pending.receive(now, guest_from, &packet);
        while pending.pop_outgoing().is_some() {}
        if n % 64 == 0 {
            assert_eq!(fingerprint(&host), host_before, "host changed by garbage at packet {n}");
            assert_eq!(
                fingerprint(&guest),
                guest_before,
                "guest changed by garbage at packet {n}"
            );
            let event = pending.pop_event();
            assert!(
                !pending.is_connected() && event.is_none(),
                "pending guest moved at {n}: {event:?}, connected {}",
                pending.is_connected()
            );
            assert!(
                host.pop_event().is_none() && guest.pop_event().is_none(),
                "an event from garbage at {n}"
            );
        }
    }
    assert_eq!(fingerprint(&host), host_before);
    assert_eq!(fingerprint(&guest), guest_before);
    // The session still works, and the halfway guest can still finish its handshake.
    let seq = guest.send(now, PeerId(0), b"still here").unwrap();
    net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    let got = std::iter::from_fn(|| host.pop_event()).any(|e| matches!(e, EndpointEvent::Received { .. }));
    assert!(got && host.payload() == b"still here", "sequence {seq} not delivered");
    // The pending guest's address shares its rate-limit bucket with one of the 150 flooding strangers for about one
    // seed in 27 (a keyed hash puts addresses in 4,096 buckets); a shared bucket still lets it through once a token
    // comes back (16 a second). The challenge stays valid (10 to 20 s after it was made).
    now += 0.1;
    host.receive(now, pending_addr, &response);
    assert_eq!(
        host.peers().count(),
        2,
        "the halfway guest's own response still opens a slot"
    );
    eprintln!(
        "fuzz slice: {packets} packets in {:.2} s; {parsed} parsed, {canonical} canonical; host drops {:?}",
        start.elapsed().as_secs_f64(),
        host.drops()
    );
}

/// An attacker that holds one direction's key of a connection and writes whatever it likes under it: every
/// sequence (mostly ahead of or near the newest it got delivered, sometimes anywhere, sometimes a replay of one of
/// its last 256 packets), random ack and echo fields, payloads of every length, and a tenth tampered after sealing.
struct Attacker {
    rng: Rng,
    payload: Vec<u8>,
    /// The packet last written.
    packet: Vec<u8>,
    /// Sent packets with their counters, for replays.
    history: Vec<(u64, Vec<u8>)>,
    /// The newest counter the receiver took.
    newest: u64,
    /// Whether it may send disconnects.
    disconnects: bool,
}

impl Attacker {
    fn new(seed: u64, disconnects: bool) -> Self {
        Attacker {
            rng: Rng::new(seed),
            payload: (0..MAX_PAYLOAD_BYTES).map(|i| (i * 7) as u8).collect(),
            packet: Vec::with_capacity(MAX_PACKET_BYTES + 16),
            history: Vec::new(),
            newest: 0,
            disconnects,
        }
    }

    /// Writes the next packet into `self.packet`; returns its counter and whether it is a replay.
    fn next(&mut self, key: &PacketKey) -> (u64, bool) {
        let rng = &mut self.rng;
        let newest = self.newest;
        let mut counter = match rng.below(10) {
            0..=5 => newest + 1 + rng.below(4) as u64,
            6 | 7 => newest.saturating_sub(rng.below(700) as u64),
            8 => rng.next_u64() >> rng.below(64),
            _ => newest + rng.below(70_000) as u64,
        };
        let replay = !self.history.is_empty() && rng.chance_pct(5.0);
        if replay {
            let (c, bytes) = &self.history[rng.below(self.history.len())];
            counter = *c;
            self.packet.clear();
            self.packet.extend_from_slice(bytes);
            return (counter, true);
        }
        let packet_type = match rng.below(1000) {
            0 if self.disconnects => PacketType::Disconnect,
            0..=200 => PacketType::KeepAlive,
            _ => PacketType::Payload,
        };
        let mut header = ConnectedHeader {
            sequence: counter as u16,
            ack: rng.next_u32() as u16,
            ack_bits: rng.next_u32(),
            echo_sequence: rng.next_u32() as u16,
            echo_delay_100us: if rng.chance_pct(20.0) {
                u16::MAX
            } else {
                rng.next_u32() as u16
            },
        };
        let body = match packet_type {
            PacketType::Payload => &self.payload[..rng.below(MAX_PAYLOAD_BYTES + 1)],
            PacketType::Disconnect => &self.payload[..1],
            _ => &[][..],
        };
        write_sealed(key, packet_type, counter, &mut header, body, &mut self.packet).unwrap();
        if rng.chance_pct(10.0) {
            // Tampered after sealing.
            let i = rng.below(self.packet.len());
            self.packet[i] ^= 1 << rng.below(8);
        }
        if self.history.len() < 256 {
            self.history.push((counter, self.packet.clone()));
        } else {
            let i = rng.below(256);
            self.history[i].0 = counter;
            self.history[i].1.clone_from(&self.packet);
        }
        (counter, false)
    }

    /// The receiver took `counter`.
    fn taken(&mut self, counter: u64) {
        self.newest = self.newest.max(counter);
    }

    /// A new connection: no newest, nothing to replay.
    fn reset(&mut self) {
        (self.newest, self.history) = (0, Vec::new());
    }
}

#[test]
fn a_million_packets_from_an_attacker_with_a_guests_keys_break_nothing() {
    let start = std::time::Instant::now();
    let seed = run_seed();
    let packets = cases(PACKETS);
    let (host_addr, a_addr, b_addr) = (addr(1, 1), addr(2, 1), addr(3, 1));
    let mut host = Endpoint::host(config(seed), 0.0).unwrap();
    let mut net = MemoryNetwork::new(LinkConfig::default(), 2);
    let mut a = Endpoint::join(config(seed ^ 1), host_addr, 0.0).unwrap();
    let mut b = Endpoint::join(config(seed ^ 2), host_addr, 0.0).unwrap();
    let mut now = run_until(
        &mut net,
        0.0,
        &mut [(host_addr, &mut host), (a_addr, &mut a), (b_addr, &mut b)],
        |n| n[1].1.is_connected() && n[2].1.is_connected(),
    );
    let a_peer = PeerId(host.peers().find(|&p| host.peer_addr(p) == Some(a_addr)).unwrap().0);
    let b_peer = PeerId(host.peers().find(|&p| host.peer_addr(p) == Some(b_addr)).unwrap().0);
    let mut keys = a.peer_keys(PeerId(0)).unwrap();
    let mut attacker = Attacker::new(seed ^ 0xa77ac, true);
    let mut delivered: HashSet<u64> = HashSet::new();
    let (mut opened, mut reconnects, mut b_sent, mut b_acked) = (0u64, 0u32, 0u64, 0u64);
    for n in 0..packets {
        now += 1e-5;
        let (counter, replay) = attacker.next(&keys.send);
        let packet = &attacker.packet;
        let received = |host: &Endpoint| host.stats(a_peer).map_or(0, |s| s.packets_received);
        let before = received(&host);
        host.receive(now, a_addr, packet);
        if received(&host) > before {
            attacker.taken(counter);
        }
        while let Some(e) = host.pop_event() {
            if let EndpointEvent::Received { peer, sequence } = e {
                assert_eq!(peer, a_peer);
                assert_eq!(sequence, counter as u16, "delivered a packet that was not just sent");
                // A replay is delivered only if its first copy never was (it was refused then as too far ahead).
                assert!(
                    delivered.insert(counter),
                    "counter {counter} delivered twice (replay: {replay})"
                );
                host.accept(peer, sequence);
                opened += 1;
            }
        }
        while let Some((to, _)) = host.pop_outgoing() {
            assert!(to == a_addr || to == b_addr, "the host sent to {to}");
        }
        if let Some(s) = host.stats(a_peer) {
            assert!(
                s.rtt_ms.is_finite() && s.rtt_ms >= 0.0 && (0.0..=100.0).contains(&s.loss_pct),
                "{s:?}"
            );
        }
        if host.peer_addr(a_peer).is_none() {
            // The attacker's disconnect opened (it is the guest, after all): it joins again with fresh keys.
            a = Endpoint::join(config(seed ^ (3 + u64::from(reconnects))), host_addr, now).unwrap();
            now = run_until(
                &mut net,
                now,
                &mut [(host_addr, &mut host), (a_addr, &mut a), (b_addr, &mut b)],
                |n| n[1].1.is_connected(),
            );
            assert_eq!(host.peer_addr(a_peer), Some(a_addr));
            keys = a.peer_keys(PeerId(0)).unwrap();
            attacker.reset();
            delivered.clear();
            reconnects += 1;
        }
        // The other guest talks to the host throughout.
        if n % 500 == 0 {
            b.send(now, PeerId(0), b"b is fine").unwrap();
            b_sent += 1;
            host.update(now);
            b.update(now);
            net.pump(now, &mut [(host_addr, &mut host), (b_addr, &mut b)]);
            net.pump(now, &mut [(host_addr, &mut host), (b_addr, &mut b)]);
            while let Some(e) = host.pop_event() {
                if let EndpointEvent::Received { peer, sequence } = e {
                    assert_eq!((peer, host.payload()), (b_peer, &b"b is fine"[..]));
                    host.accept(peer, sequence);
                }
            }
            while let Some(e) = b.pop_event() {
                b_acked += u64::from(matches!(e, EndpointEvent::Acked { .. }));
                assert!(!matches!(e, EndpointEvent::Disconnected { .. }), "b was disconnected");
            }
        }
    }
    assert!(b.is_connected() && host.peer_addr(b_peer) == Some(b_addr));
    // Every packet b sent was acked but for the last few (their acks were still to come).
    let bs = b.stats(PeerId(0)).unwrap();
    assert!(
        bs.packets_acked + 40 >= bs.packets_sent && bs.packets_lost == 0,
        "{bs:?}"
    );
    assert!(b_acked > 0 && b_sent > 1000);
    assert!(
        opened > (packets / 4) as u64,
        "only {opened} sealed packets opened ({reconnects} reconnects): the fuzzer is not reaching the game; {:?}",
        host.drops()
    );
    eprintln!(
        "attacker slice: {packets} packets in {:.2} s; {opened} delivered, {reconnects} reconnects; host drops {:?}",
        start.elapsed().as_secs_f64(),
        host.drops()
    );
}

/// Settings that let every handshake packet through the rate limits, so the fuzzers reach the code behind them.
fn unlimited(seed: u64) -> EndpointConfig {
    EndpointConfig {
        handshake_rate_per_address_per_s: 1e12,
        handshake_burst_per_address: 1e12,
        challenge_rate_per_s: 1e12,
        response_rate_per_s: 1e12,
        ..config(seed)
    }
}

/// Responses with a valid cookie (the post-cookie path: the Noise message, the guest key, the salt) that are not
/// the guest's own: random or mutated Noise messages, low-order keys, a Noise message made with a wrong secret,
/// the guest's message under another key. The host opens no slot, answers only the sender and never with more
/// bytes, and the real Response still connects at the end. Each case costs the host X25519 operations (~100 µs),
/// so `cargo test` runs 20,000 and `make bench` a million.
#[test]
fn responses_with_a_valid_cookie_open_nothing() {
    let start = std::time::Instant::now();
    let seed = run_seed();
    let n_cases = cases(20_000);
    let (host_addr, guest_addr) = (addr(1, 1), addr(2, 1));
    let mut host = Endpoint::host(unlimited(seed), 0.0).unwrap();
    let mut guest = Endpoint::join(config(seed ^ 1), host_addr, 0.0).unwrap();
    let request = guest.pop_outgoing().unwrap().1.to_vec();
    host.receive(0.0, guest_addr, &request);
    let challenge = host.pop_outgoing().unwrap().1.to_vec();
    guest.receive(0.0, host_addr, &challenge);
    let response = guest.pop_outgoing().unwrap().1.to_vec();
    let Ok((
        _,
        Packet::Response {
            client_salt,
            public_key,
            cookie,
            proof,
            ..
        },
    )) = read_packet(&response)
    else {
        panic!("a response")
    };
    let Ok((
        _,
        Packet::Challenge {
            public_key: host_public,
            ..
        },
    )) = read_packet(&challenge)
    else {
        panic!("a challenge")
    };
    // The guest's key with a Noise message made under a wrong secret (the one expensive-to-make input).
    let wrong_secret = {
        let context = HandshakeContext {
            version: PROTOCOL_VERSION,
            client_salt,
            guest_public: &public_key,
            cookie: &cookie,
        };
        let mut randomness = Randomness::Seeded { seed, drawn: 0 };
        GuestHandshake::start(&mut randomness, &host_public, &JoinSecret([1; 10]), context)
            .unwrap()
            .1
    };
    let join_mac = JoinMacKey::new(&SECRET);
    let low_order: [[u8; 32]; 3] = [[0; 32], std::array::from_fn(|i| u8::from(i == 0)), [0xff; 32]];
    let mut rng = Rng::new(seed ^ 0x9e5);
    let mut buf = [0u8; MAX_PACKET_BYTES];
    let mut replies = 0u64;
    for n in 0..n_cases {
        let now = 1.0 + n as f64 * 1e-6;
        let mut proof_n = proof;
        let mut key_n = public_key;
        match rng.below(6) {
            0 => proof_n = bytes(&mut rng),
            1 => {
                for _ in 0..1 + rng.below(3) {
                    let i = rng.below(proof_n.len());
                    proof_n[i] ^= 1 << rng.below(8);
                }
            }
            2 => proof_n[..32].copy_from_slice(&low_order[rng.below(3)]),
            3 => proof_n = wrong_secret,
            4 => {
                // Another guest key: the cookie no longer matches (it binds the key).
                key_n = bytes(&mut rng);
            }
            _ => {
                proof_n[32..].copy_from_slice(&bytes::<16>(&mut rng));
            }
        }
        if proof_n == proof && key_n == public_key {
            continue;
        }
        // Half with a valid join MAC over the changed fields (someone with the code: the host's limits for players
        // with the code, and its Noise check), half without.
        let mac = if rng.chance_pct(50.0) {
            join_mac.mac(PROTOCOL_VERSION, 2, client_salt, &key_n, Some((&cookie, &proof_n)))
        } else {
            bytes(&mut rng)
        };
        let p = Packet::Response {
            client_salt,
            public_key: key_n,
            cookie,
            proof: proof_n,
            mac,
        };
        let len = write_packet(&p, PROTOCOL_VERSION, &mut buf).unwrap();
        host.receive(now, guest_addr, &buf[..len]);
        while let Some((to, reply)) = host.pop_outgoing() {
            assert_eq!(to, guest_addr);
            assert!(reply.len() <= len, "amplification at case {n}");
            replies += 1;
        }
        assert_eq!(host.peers().count(), 0, "case {n} opened a slot");
        assert!(host.pop_event().is_none(), "case {n} made an event");
    }
    let drops = host.drops();
    assert!(
        drops.wrong_secret > (n_cases / 2) as u64,
        "the fuzzer did not reach the Noise message: {drops:?}"
    );
    // The guest's own Response still connects (no case used up its cookie).
    host.receive(2.0, guest_addr, &response);
    let accepted = host.pop_outgoing().unwrap().1.to_vec();
    guest.receive(2.0, host_addr, &accepted);
    assert!(guest.is_connected() && host.peers().count() == 1);
    eprintln!(
        "post-cookie responses: {n_cases} in {:.2} s, {replies} refusals; host drops {drops:?}",
        start.elapsed().as_secs_f64()
    );
}

/// Accepted packets to a guest halfway through its handshake with the host its code pins: random, mutated and
/// truncated Noise answers, answers to another salt, and genuine answers (sealed by the pinned host's key) with
/// hostile fields — peer index and count out of range. Nothing connects the guest or ends its join but a genuine
/// answer with valid fields. `cargo test` runs 20,000; `make bench` a million.
#[test]
fn hostile_accepts_connect_nothing() {
    let start = std::time::Instant::now();
    let seed = run_seed();
    let n_cases = cases(20_000);
    let host_addr = addr(1, 1);
    let mut randomness = Randomness::Seeded { seed, drawn: 0 };
    let host = KeyPair::from_randomness(&mut randomness).unwrap();
    let mut rng = Rng::new(seed ^ 0xacc);
    let guest_config = |k: u64| EndpointConfig {
        host_key_hash: Some(host_key_hash(&host.public)),
        ..config(seed ^ (10 + k))
    };
    // A guest, answered by the fake host: returns it with its Response's fields.
    let halfway = |k: u64| {
        let mut guest = Endpoint::join(guest_config(k), host_addr, 0.0).unwrap();
        let request = guest.pop_outgoing().unwrap().1.to_vec();
        let Ok((_, Packet::Request { client_salt, .. })) = read_packet(&request) else {
            panic!("a request")
        };
        let challenge = Packet::Challenge {
            client_salt,
            cookie: [k as u8; 16],
            public_key: host.public,
        };
        let mut buf = [0u8; MAX_PACKET_BYTES];
        let len = write_packet(&challenge, PROTOCOL_VERSION, &mut buf).unwrap();
        guest.receive(0.0, host_addr, &buf[..len]);
        let response = guest.pop_outgoing().unwrap().1.to_vec();
        let Ok((
            _,
            Packet::Response {
                client_salt,
                public_key,
                cookie,
                proof,
                ..
            },
        )) = read_packet(&response)
        else {
            panic!("a response")
        };
        (guest, client_salt, public_key, cookie, proof)
    };
    let (mut guest, mut salt, mut key, mut cookie, mut proof) = halfway(0);
    let mut guests = 1u64;
    let mut buf = [0u8; MAX_PACKET_BYTES];
    let mut genuine_hostile = 0u64;
    for n in 0..n_cases {
        let now = 0.001 + n as f64 * 1e-7;
        let context = HandshakeContext {
            version: PROTOCOL_VERSION,
            client_salt: salt,
            guest_public: &key,
            cookie: &cookie,
        };
        let kind = rng.below(32);
        let (sealed, to_salt) = match kind {
            0 => {
                // Genuine, from the pinned host, with fields out of range.
                let fields = match rng.below(4) {
                    0 => [0, rng.next_u32() as u8],
                    1 => {
                        let count = rng.below(65) as u8;
                        [count.saturating_add(rng.below(3) as u8), count]
                    }
                    2 => [1 + rng.below(254) as u8, 65 + rng.below(190) as u8],
                    _ => [rng.next_u32() as u8, 0],
                };
                let (sealed, _) = host_handshake(&mut randomness, &host, &SECRET, context, &proof, fields).unwrap();
                genuine_hostile += 1;
                (sealed, salt)
            }
            1..=10 => (bytes(&mut rng), salt),
            11..=28 => {
                let (genuine, _) = host_handshake(&mut randomness, &host, &SECRET, context, &proof, [1, 4]).unwrap();
                let mut sealed = genuine;
                while sealed == genuine {
                    // (Two flips of one bit would give the genuine answer back.)
                    for _ in 0..1 + rng.below(3) {
                        let i = rng.below(sealed.len());
                        sealed[i] ^= 1 << rng.below(8);
                    }
                }
                (sealed, salt)
            }
            _ => {
                let (sealed, _) = host_handshake(&mut randomness, &host, &SECRET, context, &proof, [1, 4]).unwrap();
                (sealed, salt ^ (1 + rng.next_u64() % 1000))
            }
        };
        let len = write_packet(
            &Packet::Accepted {
                client_salt: to_salt,
                sealed,
            },
            PROTOCOL_VERSION,
            &mut buf,
        )
        .unwrap();
        let cut = if rng.chance_pct(3.0) { rng.below(len) } else { len };
        guest.receive(now, host_addr, &buf[..cut]);
        assert!(!guest.is_connected(), "case {n} (kind {kind}) connected the guest");
        assert!(guest.pop_event().is_none(), "case {n} (kind {kind}) made an event");
        assert!(guest.pop_outgoing().is_none());
        if kind == 0 {
            // A genuine answer finishes the guest's handshake, valid fields or not: the next case needs a new one.
            (guest, salt, key, cookie, proof) = halfway(guests);
            guests += 1;
        }
    }
    // The genuine answer with valid fields connects.
    let context = HandshakeContext {
        version: PROTOCOL_VERSION,
        client_salt: salt,
        guest_public: &key,
        cookie: &cookie,
    };
    let (sealed, _) = host_handshake(&mut randomness, &host, &SECRET, context, &proof, [2, 4]).unwrap();
    let len = write_packet(
        &Packet::Accepted {
            client_salt: salt,
            sealed,
        },
        PROTOCOL_VERSION,
        &mut buf,
    )
    .unwrap();
    guest.receive(1.0, host_addr, &buf[..len]);
    assert!(guest.is_connected(), "{:?}", guest.drops());
    assert!(genuine_hostile > 0);
    eprintln!(
        "hostile accepts: {n_cases} in {:.2} s ({genuine_hostile} genuine with bad fields, {guests} guests); last guest's drops {:?}",
        start.elapsed().as_secs_f64(),
        guest.drops()
    );
}

/// The host's side of the attacker slice: a million connected packets to a guest from an attacker holding the
/// host's keys for that guest (every sequence, ack, echo and payload, replays and tampered copies). No panic; no
/// counter delivered twice; the guest's estimates stay finite and it sends only to its host.
#[test]
fn a_million_packets_to_a_guest_from_an_attacker_with_the_hosts_keys_break_nothing() {
    let start = std::time::Instant::now();
    let seed = run_seed();
    let packets = cases(PACKETS);
    let (host_addr, guest_addr) = (addr(1, 1), addr(2, 1));
    let mut host = Endpoint::host(config(seed), 0.0).unwrap();
    let mut guest = Endpoint::join(config(seed ^ 1), host_addr, 0.0).unwrap();
    let mut net = MemoryNetwork::new(LinkConfig::default(), 2);
    let mut now = run_until(
        &mut net,
        0.0,
        &mut [(host_addr, &mut host), (guest_addr, &mut guest)],
        |n| n[1].1.is_connected(),
    );
    let keys = host.peer_keys(PeerId(0)).unwrap();
    // Never a disconnect: the guest would (rightly) close, and the slice is about what it survives.
    let mut attacker = Attacker::new(seed ^ 0x6e57, false);
    let mut delivered: HashSet<u64> = HashSet::new();
    let mut opened = 0u64;
    for n in 0..packets {
        now += 1e-5;
        let (counter, replay) = attacker.next(&keys.send);
        let before = guest.stats(PeerId(0)).unwrap().packets_received;
        guest.receive(now, host_addr, &attacker.packet);
        if guest.stats(PeerId(0)).unwrap().packets_received > before {
            attacker.taken(counter);
        }
        while let Some(e) = guest.pop_event() {
            if let EndpointEvent::Received { peer, sequence } = e {
                assert_eq!(sequence, counter as u16, "delivered a packet that was not just sent");
                assert!(
                    delivered.insert(counter),
                    "counter {counter} delivered twice (replay: {replay})"
                );
                guest.accept(peer, sequence);
                opened += 1;
            }
            assert!(
                !matches!(e, EndpointEvent::Disconnected { .. }),
                "the guest was disconnected at {n}"
            );
        }
        if n % 64 == 0 {
            guest.update(now);
        }
        while let Some((to, _)) = guest.pop_outgoing() {
            assert_eq!(to, host_addr, "the guest sent to {to}");
        }
        let s = guest.stats(PeerId(0)).unwrap();
        assert!(
            s.rtt_ms.is_finite() && s.rtt_ms >= 0.0 && (0.0..=100.0).contains(&s.loss_pct),
            "{s:?}"
        );
    }
    assert!(guest.is_connected());
    assert!(
        opened > (packets / 4) as u64,
        "only {opened} opened: {:?}",
        guest.drops()
    );
    eprintln!(
        "attacker to a guest: {packets} packets in {:.2} s; {opened} delivered; guest drops {:?}",
        start.elapsed().as_secs_f64(),
        guest.drops()
    );
}
