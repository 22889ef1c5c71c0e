//! A running four-player session sends and receives without allocating: once the first seconds have passed (the
//! buffer pools, queues and link simulator have grown to the traffic), a step's network paths — each peer's
//! `send` (state sync writer, avatars, sealing), the simulated network's `pump` and the endpoints' `update`
//! (keep-alives, acks), and each peer's `receive` (opening, acks, state sync reader, authority rules) — make no
//! heap allocation. The four peers are separate worlds that meet only through packets, the bots grabbing,
//! throwing and contending as in `tumble session`, over a lossy, jittery link.

use std::net::SocketAddr;
use tumble_game::session::peer::{Peer, PeerConfig};
use tumble_harness::session::Driver;
use tumble_harness::session_cli::{default_scene, make_driver, world_maker};
use tumble_net::memory::MemoryNetwork;
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};
use tumble_tests::alloc::{thread_allocations as allocations_so_far, PerThreadCounting};

#[global_allocator]
static GLOBAL: PerThreadCounting = PerThreadCounting;

const STEP_S: f64 = tumble_game::STEP_S;
const SUBTICKS: u32 = 12;
const WARM_UP_STEPS: u64 = 900;
const MEASURED_STEPS: u64 = 1800;

fn address(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, i as u8 + 1], 1000))
}

/// Delivers what is due at `t` and runs the endpoints' timers, with a node list on the stack.
fn pump(net: &mut MemoryNetwork, peers: &mut [Peer], t: f64) {
    let [a, b, c, d] = peers else { panic!("four peers") };
    let mut nodes = [
        (address(0), a.endpoint_mut()),
        (address(1), b.endpoint_mut()),
        (address(2), c.endpoint_mut()),
        (address(3), d.endpoint_mut()),
    ];
    net.pump(t, &mut nodes);
    for (_, e) in nodes.iter_mut() {
        e.update(t);
    }
    net.pump(t, &mut nodes);
}

#[test]
fn a_running_session_sends_and_receives_without_allocating() {
    let make_world = world_maker(&default_scene()).unwrap();
    let config = PeerConfig::with_budget(128);
    let host_endpoint = Endpoint::host(EndpointConfig::default(), 0.0).unwrap();
    let guest_config = EndpointConfig {
        join_secret: Some(host_endpoint.join_secret()),
        ..EndpointConfig::default()
    };
    let mut peers = vec![Peer::host(make_world().unwrap(), host_endpoint, config, true).unwrap()];
    for _ in 1..4 {
        let endpoint = Endpoint::join(guest_config.clone(), address(0), 0.0).unwrap();
        peers.push(Peer::guest(make_world().unwrap(), endpoint, config).unwrap());
    }
    let mut drivers: Vec<Box<dyn Driver>> = ["builder", "thrower", "contender", "catcher"]
        .iter()
        .enumerate()
        .map(|(i, name)| make_driver(name, i as u8 + 1, 11).unwrap())
        .collect();
    let link = LinkConfig {
        latency_ms: 50.0,
        jitter_ms: 10.0,
        loss_pct: 5.0,
        duplicate_pct: 1.0,
        ..LinkConfig::default()
    };
    let mut net = MemoryNetwork::new(link, 5);
    let (mut network_allocations, mut sent_before, mut grabs_before) = (0u64, 0u64, 0u64);
    for step in 0..WARM_UP_STEPS + MEASURED_STEPS {
        let now = step as f64 * STEP_S;
        for (peer, driver) in peers.iter_mut().zip(drivers.iter_mut()) {
            let input = driver.input(step, peer, true);
            peer.play(&input).unwrap();
        }
        let before = allocations_so_far();
        for peer in peers.iter_mut() {
            peer.quantize().unwrap();
            peer.send(now).unwrap();
        }
        for k in 1..=SUBTICKS {
            let t = now + f64::from(k) * STEP_S / f64::from(SUBTICKS);
            pump(&mut net, &mut peers, t);
            for peer in peers.iter_mut() {
                peer.receive(t).unwrap();
            }
        }
        if step >= WARM_UP_STEPS {
            network_allocations += allocations_so_far() - before;
        } else if step + 1 == WARM_UP_STEPS {
            sent_before = packets_sent(&peers);
            grabs_before = peers.iter().map(|p| p.stats.grabs).sum();
        }
        for peer in peers.iter_mut() {
            peer.simulate().unwrap();
        }
    }
    // The measured stretch had real traffic and play in it, or the zero below would mean nothing.
    let sent = packets_sent(&peers) - sent_before;
    let grabs: u64 = peers.iter().map(|p| p.stats.grabs).sum::<u64>() - grabs_before;
    assert!(peers.iter().all(|p| p.player() != 0), "every guest was welcomed");
    // Each guest to the host and the host to each guest, every step.
    assert!(sent >= 6 * MEASURED_STEPS, "{sent} packets in the measured steps");
    assert!(grabs > 0, "no grab in the measured steps");
    assert_eq!(
        network_allocations, 0,
        "{network_allocations} allocations in {MEASURED_STEPS} steps of sending and receiving"
    );
}

/// Packets every peer has sent on every connection.
fn packets_sent(peers: &[Peer]) -> u64 {
    peers
        .iter()
        .flat_map(|p| {
            p.endpoint()
                .peers()
                .map(|q| p.endpoint().stats(q).map_or(0, |s| s.packets_sent))
        })
        .sum()
}
