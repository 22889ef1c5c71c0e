//! A connected host and guest receive arbitrary datagrams from a stranger: no panic, no change to the
//! connection, no reply larger than the datagram.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::SocketAddr;
use tumble_net::endpoint::PeerId;
use tumble_net::memory::MemoryNetwork;
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};

fuzz_target!(|data: &[u8]| {
    let host_addr = SocketAddr::from(([10, 0, 0, 1], 1));
    let guest_addr = SocketAddr::from(([10, 0, 0, 2], 1));
    let stranger = SocketAddr::from(([10, 0, 0, 3], 1));
    // Seeded secrets: the input alone decides what happens.
    let seeded = |seed| EndpointConfig {
        key_seed: Some(seed),
        ..Default::default()
    };
    let mut host = Endpoint::host(seeded(1), 0.0).unwrap();
    let mut guest = Endpoint::join(
        EndpointConfig {
            join_secret: Some(host.join_secret()),
            ..seeded(2)
        },
        host_addr,
        0.0,
    )
    .unwrap();
    let mut net = MemoryNetwork::new(LinkConfig::default(), 1);
    let mut now = 0.0;
    while !guest.is_connected() {
        now += 0.01;
        host.update(now);
        guest.update(now);
        net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    }
    let before = host.stats(PeerId(0)).unwrap().packets_received;
    // Split the input into datagrams at 0xff bytes so one run can send several.
    for datagram in data.split(|&b| b == 0xff) {
        host.receive(now, stranger, datagram);
        while let Some((to, reply)) = host.pop_outgoing() {
            assert_eq!(to, stranger);
            assert!(reply.len() <= datagram.len());
        }
        guest.receive(now, stranger, datagram);
        guest.receive(now, host_addr, datagram);
    }
    assert_eq!(host.peers().count(), 1);
    assert_eq!(host.stats(PeerId(0)).unwrap().packets_received, before);
});
