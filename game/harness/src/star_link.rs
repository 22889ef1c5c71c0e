//! A host and up to three guests on the in-memory link simulator, each guest's handshake run on the simulated
//! clock: the wiring of a host/guests game in one process (`tumble compare` with more than two players). With one
//! guest it is the loopback harness's memory link ([`super::loopback`]) to the tick: the same addresses, the same
//! seeded link streams, the same order of work.

use std::net::SocketAddr;

use anyhow::{bail, Result};
use tumble_net::link_sim::LinkConfig;
use tumble_net::memory::MemoryNetwork;
use tumble_net::{Endpoint, EndpointConfig, EndpointEvent, PeerId};

use super::loopback::IP_UDP_HEADER_BYTES;
use super::loopback::{HANDSHAKE_LIMIT_S, TICK_S};

/// Most endpoints: the host and three guests.
pub const MAX_ENDPOINTS: usize = 4;

/// Player `p`'s address (0 hosts): 10.0.0.(p + 1), port 1.
fn address(p: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, p as u8 + 1], 1))
}

pub(crate) struct StarLink {
    net: MemoryNetwork,
    /// Index 0 the host, then the guests.
    pub(crate) endpoints: Vec<Endpoint>,
    /// The host's id for each guest (index 0 for player 2).
    pub(crate) guest_ids: Vec<PeerId>,
}

impl StarLink {
    /// The host and `guests` guests (1 to 3), every handshake done. Returns the link and the ticks it took.
    pub(crate) fn connect(link: LinkConfig, seed: u64, guests: usize) -> Result<(Self, u64)> {
        if !(1..MAX_ENDPOINTS).contains(&guests) {
            bail!("a host has 1 to {} guests here (asked for {guests})", MAX_ENDPOINTS - 1);
        }
        let host = Endpoint::host(EndpointConfig::default(), 0.0)?;
        let guest_config = EndpointConfig {
            join_secret: Some(host.join_secret()),
            ..Default::default()
        };
        let mut endpoints = vec![host];
        for _ in 0..guests {
            endpoints.push(Endpoint::join(guest_config.clone(), address(0), 0.0)?);
        }
        let mut star = Self {
            net: MemoryNetwork::new(link, seed),
            endpoints,
            guest_ids: Vec::new(),
        };
        let mut tick = 0u64;
        loop {
            tick += 1;
            star.tick(tick as f64 * TICK_S);
            while star.endpoints[0].pop_event().is_some() {}
            for guest in &mut star.endpoints[1..] {
                while let Some(e) = guest.pop_event() {
                    if let EndpointEvent::ConnectFailed { reason } = e {
                        bail!("a guest could not connect: {reason}");
                    }
                }
            }
            let host = &star.endpoints[0];
            let ids: Vec<PeerId> = (1..=guests)
                .filter_map(|g| host.peers().find(|&id| host.peer_addr(id) == Some(address(g))))
                .collect();
            if ids.len() == guests && star.endpoints[1..].iter().all(Endpoint::is_connected) {
                star.guest_ids = ids;
                return Ok((star, tick));
            }
            if tick as f64 * TICK_S > HANDSHAKE_LIMIT_S {
                bail!("not every guest connected after {HANDSHAKE_LIMIT_S} s of simulated time");
            }
        }
    }

    /// Deliveries first, then timers, then the new datagrams onto the links, all at `now_s` (as the loopback
    /// harness's memory link does).
    pub(crate) fn tick(&mut self, now_s: f64) {
        self.pump(now_s);
        for e in &mut self.endpoints {
            e.update(now_s);
        }
        self.pump(now_s);
    }

    /// One pump over every endpoint, the slice of them built on the stack (no allocation per tick).
    fn pump(&mut self, now_s: f64) {
        let net = &mut self.net;
        match &mut self.endpoints[..] {
            [a, b] => net.pump(now_s, &mut [(address(0), a), (address(1), b)]),
            [a, b, c] => net.pump(now_s, &mut [(address(0), a), (address(1), b), (address(2), c)]),
            [a, b, c, d] => net.pump(
                now_s,
                &mut [(address(0), a), (address(1), b), (address(2), c), (address(3), d)],
            ),
            _ => unreachable!("1 to 3 guests, checked in connect"),
        }
    }

    /// The endpoint of player `p` and the id it sends to on its connection `conn` (a guest has one, the host).
    pub(crate) fn route(&mut self, p: usize, conn: usize) -> (&mut Endpoint, PeerId) {
        let id = if p == 0 { self.guest_ids[conn] } else { PeerId(0) };
        (&mut self.endpoints[p], id)
    }

    /// The connection of player `p` that a packet from peer `from` arrived on.
    pub(crate) fn connection_of(&self, p: usize, from: PeerId) -> Option<usize> {
        if p == 0 {
            self.guest_ids.iter().position(|&id| id == from)
        } else {
            Some(0)
        }
    }

    /// Wire bytes (datagrams plus IP/UDP headers) player `p` has sent on its connection `conn`.
    pub(crate) fn wire_bytes(&self, p: usize, conn: usize) -> u64 {
        let id = if p == 0 { self.guest_ids[conn] } else { PeerId(0) };
        self.endpoints[p]
            .stats(id)
            .map_or(0, |s| s.bytes_sent + s.packets_sent * IP_UDP_HEADER_BYTES as u64)
    }
}
