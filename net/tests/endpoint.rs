//! Handshake paths, keep-alives, timeouts, disconnects and a short in-memory soak, all on a simulated clock.

use std::net::SocketAddr;
use tumble_net::endpoint::{ConnectError, EndpointEvent, PeerId};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::{read_packet, write_packet, Packet, PROTOCOL_VERSION};
use tumble_net::{DisconnectReason, Endpoint, EndpointConfig, LinkConfig};

const TICK_S: f64 = 1.0 / 90.0;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], port))
}

fn config(seed: u64) -> EndpointConfig {
    EndpointConfig {
        seed,
        ..EndpointConfig::default()
    }
}

fn events(e: &mut Endpoint) -> Vec<EndpointEvent> {
    std::iter::from_fn(|| e.pop_event()).collect()
}

/// Runs host and guests on a perfect link for `seconds`, collecting the events of each.
struct Net {
    now: f64,
    net: MemoryNetwork,
    host: Endpoint,
    guests: Vec<Endpoint>,
}

const HOST: u16 = 1000;

impl Net {
    fn new(link: LinkConfig, guest_configs: Vec<EndpointConfig>) -> Self {
        let host = Endpoint::host(config(1), 0.0);
        let guests = guest_configs
            .into_iter()
            .map(|c| Endpoint::join(c, addr(HOST), 0.0))
            .collect();
        Net {
            now: 0.0,
            net: MemoryNetwork::new(link, 5),
            host,
            guests,
        }
    }

    fn step(&mut self) {
        self.now += TICK_S;
        self.host.update(self.now);
        for g in &mut self.guests {
            g.update(self.now);
        }
        let mut nodes: Vec<(SocketAddr, &mut Endpoint)> = vec![(addr(HOST), &mut self.host)];
        for (i, g) in self.guests.iter_mut().enumerate() {
            nodes.push((addr(2000 + i as u16), g));
        }
        self.net.pump(self.now, &mut nodes);
    }

    fn run(&mut self, seconds: f64) {
        let end = self.now + seconds;
        while self.now < end {
            self.step();
        }
    }
}

#[test]
fn handshake_ok_then_payloads_flow_both_ways() {
    let mut n = Net::new(LinkConfig::default(), vec![config(2)]);
    n.run(0.5);
    assert!(n.guests[0].is_connected());
    // Keep-alives flow and get acked from the start.
    assert_eq!(events(&mut n.host)[0], EndpointEvent::Connected { peer: PeerId(0) });
    assert_eq!(
        events(&mut n.guests[0])[0],
        EndpointEvent::Connected { peer: PeerId(0) }
    );
    let seq = n.guests[0].send(n.now, PeerId(0), b"hello").unwrap();
    n.host.send(n.now, PeerId(0), b"welcome").unwrap();
    n.run(0.1);
    let host_events = events(&mut n.host);
    assert!(host_events.contains(&EndpointEvent::Received {
        peer: PeerId(0),
        sequence: seq,
        data: b"hello".to_vec()
    }));
    let guest_events = events(&mut n.guests[0]);
    assert!(guest_events
        .iter()
        .any(|e| matches!(e, EndpointEvent::Received { data, .. } if data == b"welcome")));
    assert!(guest_events.contains(&EndpointEvent::Acked {
        peer: PeerId(0),
        sequence: seq
    }));
}

#[test]
fn a_full_host_refuses_with_a_reason() {
    let configs = (0..4).map(|i| config(10 + i)).collect();
    let mut n = Net::new(LinkConfig::default(), configs);
    n.run(0.5);
    let connected: Vec<bool> = n.guests.iter().map(Endpoint::is_connected).collect();
    assert_eq!(connected.iter().filter(|&&c| c).count(), 3, "{connected:?}");
    let refused = n.guests.iter_mut().position(|g| !g.is_connected()).unwrap();
    assert!(events(&mut n.guests[refused]).contains(&EndpointEvent::ConnectFailed {
        reason: ConnectError::Full
    }));
}

#[test]
fn another_version_is_refused_with_a_reason() {
    let old = EndpointConfig {
        protocol_version: PROTOCOL_VERSION + 1,
        ..config(3)
    };
    let mut n = Net::new(LinkConfig::default(), vec![old]);
    n.run(0.5);
    assert!(!n.guests[0].is_connected());
    let reason = ConnectError::VersionMismatch {
        host_version: PROTOCOL_VERSION,
        ours: PROTOCOL_VERSION + 1,
    };
    assert_eq!(events(&mut n.guests[0]), vec![EndpointEvent::ConnectFailed { reason }]);
    assert_eq!(n.host.peers().count(), 0);
}

#[test]
fn a_wrong_challenge_never_connects() {
    let mut host = Endpoint::host(config(1), 0.0);
    let mut buf = [0u8; 1200];
    let n = write_packet(&Packet::Request { client_salt: 42 }, PROTOCOL_VERSION, &mut buf).unwrap();
    host.receive(0.0, addr(7), &buf[..n]);
    let (_, reply) = host.pop_outgoing().unwrap();
    assert!(reply.len() < n, "no amplification: {} vs {n}", reply.len());
    let Ok((_, Packet::Challenge { challenge, .. })) = read_packet(&reply) else {
        panic!("no challenge")
    };
    // Wrong challenge; right challenge from another (spoofing) address; right challenge with another salt.
    for (from, salt, ch) in [
        (addr(7), 42, challenge ^ 1),
        (addr(8), 42, challenge),
        (addr(7), 43, challenge),
    ] {
        let n = write_packet(
            &Packet::Response {
                client_salt: salt,
                challenge: ch,
            },
            PROTOCOL_VERSION,
            &mut buf,
        )
        .unwrap();
        host.receive(0.1, from, &buf[..n]);
    }
    assert_eq!(host.peers().count(), 0);
    assert_eq!(host.drops().bad_challenge, 3);
    assert!(host.pop_outgoing().is_none() && host.pop_event().is_none());
    // The right one connects.
    let n = write_packet(
        &Packet::Response {
            client_salt: 42,
            challenge,
        },
        PROTOCOL_VERSION,
        &mut buf,
    )
    .unwrap();
    host.receive(0.2, addr(7), &buf[..n]);
    assert_eq!(host.peers().count(), 1);
}

#[test]
fn a_guest_with_no_host_times_out() {
    let mut guest = Endpoint::join(config(4), addr(HOST), 0.0);
    let mut t = 0.0;
    while t < 4.9 {
        t += TICK_S;
        guest.update(t);
        while guest.pop_outgoing().is_some() {}
    }
    assert!(guest.pop_event().is_none());
    guest.update(5.01);
    assert_eq!(
        guest.pop_event(),
        Some(EndpointEvent::ConnectFailed {
            reason: ConnectError::TimedOut
        })
    );
}

#[test]
fn keepalives_hold_an_idle_connection_and_silence_times_it_out() {
    let mut n = Net::new(LinkConfig::default(), vec![config(2)]);
    n.run(20.0);
    assert!(n.guests[0].is_connected() && n.host.peers().count() == 1);
    events(&mut n.host);
    // The guest goes silent: the host drops it after the timeout.
    let mut t = n.now;
    while t < n.now + 5.2 {
        t += TICK_S;
        n.host.update(t);
        while n.host.pop_outgoing().is_some() {}
    }
    let evs = events(&mut n.host);
    assert!(evs.contains(&EndpointEvent::Disconnected {
        peer: PeerId(0),
        reason: DisconnectReason::TimedOut
    }));
    assert_eq!(n.host.peers().count(), 0);
}

#[test]
fn disconnect_is_redundant_and_frees_the_slot() {
    let lossy = LinkConfig {
        loss_pct: 50.0,
        ..Default::default()
    };
    let mut n = Net::new(lossy, vec![config(2)]);
    n.run(2.0);
    assert!(n.guests[0].is_connected());
    events(&mut n.host);
    n.guests[0].disconnect(PeerId(0));
    n.run(0.2);
    assert!(events(&mut n.host).contains(&EndpointEvent::Disconnected {
        peer: PeerId(0),
        reason: DisconnectReason::Closed
    }));
    assert_eq!(n.host.peers().count(), 0);
}

#[test]
fn oversize_payloads_are_refused_on_send() {
    let mut n = Net::new(LinkConfig::default(), vec![config(2)]);
    n.run(0.5);
    assert!(n.guests[0].send(n.now, PeerId(0), &[0u8; 1200]).is_err());
    assert!(n.guests[0]
        .send(n.now, PeerId(0), &[0u8; tumble_net::packet::MAX_PAYLOAD_BYTES])
        .is_ok());
    while let Some((_, d)) = n.guests[0].pop_outgoing() {
        assert!(d.len() <= tumble_net::MAX_PACKET_BYTES);
    }
}

/// A few simulated seconds of the `net-soak` worst case in memory: no false acks, no duplicates, estimates close.
#[test]
fn short_soak_under_heavy_loss_and_latency() {
    let link = LinkConfig {
        latency_ms: 1000.0,
        jitter_ms: 100.0,
        loss_pct: 25.0,
        duplicate_pct: 25.0,
        ..Default::default()
    };
    let mut n = Net::new(link, vec![config(2)]);
    n.run(8.0);
    assert!(n.guests[0].is_connected(), "{:?}", events(&mut n.guests[0]));
    events(&mut n.host);
    events(&mut n.guests[0]);
    let mut sent = std::collections::BTreeSet::new();
    let mut received = std::collections::BTreeSet::new();
    let mut acked = 0;
    for _ in 0..(20.0 / TICK_S) as usize {
        sent.insert(n.guests[0].send(n.now, PeerId(0), &[1; 100]).unwrap());
        n.host.send(n.now, PeerId(0), &[2; 100]).unwrap();
        n.step();
        for e in events(&mut n.host) {
            if let EndpointEvent::Received { sequence, .. } = e {
                assert!(received.insert(sequence), "duplicate delivery of {sequence}");
            }
        }
        for e in events(&mut n.guests[0]) {
            match e {
                EndpointEvent::Acked { sequence, .. } => {
                    let payload_received = received.contains(&sequence);
                    assert!(
                        !sent.contains(&sequence) || payload_received,
                        "false ack of payload {sequence}"
                    );
                    assert!(n.host.has_received(PeerId(0), sequence), "false ack of {sequence}");
                    acked += 1;
                }
                EndpointEvent::Disconnected { .. } => panic!("disconnected"),
                _ => {}
            }
        }
    }
    let stats = n.guests[0].stats(PeerId(0)).unwrap();
    assert!(acked > 1000);
    assert!((stats.rtt_ms - 2000.0).abs() < 200.0, "{stats:?}");
    assert!((stats.loss_pct - 25.0).abs() < 8.0, "{stats:?}");
}

#[test]
fn handshake_requests_are_rate_limited() {
    let mut host = Endpoint::host(config(1), 0.0);
    let mut buf = [0u8; 1200];
    let mut replies_at = |host: &mut Endpoint, t: f64| {
        for i in 0..1000u64 {
            let n = write_packet(&Packet::Request { client_salt: i }, PROTOCOL_VERSION, &mut buf).unwrap();
            host.receive(t, addr(3000 + (i % 100) as u16), &buf[..n]);
        }
        std::iter::from_fn(|| host.pop_outgoing()).count()
    };
    let burst = EndpointConfig::default().handshake_burst as usize;
    assert_eq!(replies_at(&mut host, 0.0), burst);
    // Half a second refills half the rate.
    let rate = EndpointConfig::default().handshake_rate_per_s;
    assert_eq!(replies_at(&mut host, 0.5), (rate * 0.5) as usize);
    assert_eq!(host.drops().rate_limited, 2000 - burst as u64 - (rate * 0.5) as u64);
    assert_eq!(host.peers().count(), 0);
}

/// On a perfect link nothing is ever judged lost. (The unit test `the_nothing_received_ack_moves_nothing` in
/// `ack.rs` covers the case that once made every packet look lost until its ack arrived.)
#[test]
fn a_perfect_link_loses_nothing() {
    let mut n = Net::new(
        LinkConfig {
            latency_ms: 30.0,
            ..Default::default()
        },
        vec![config(2)],
    );
    let mut lost = 0;
    for _ in 0..(8.0 / TICK_S) as usize {
        if n.guests[0].is_connected() {
            n.guests[0].send(n.now, PeerId(0), &[1; 50]).unwrap();
            n.host.send(n.now, PeerId(0), &[2; 50]).unwrap();
        }
        n.step();
        for e in events(&mut n.host).into_iter().chain(events(&mut n.guests[0])) {
            lost += usize::from(matches!(e, EndpointEvent::Lost { .. }));
        }
    }
    assert_eq!(lost, 0);
    assert_eq!(n.guests[0].stats(PeerId(0)).unwrap().packets_lost, 0);
}
