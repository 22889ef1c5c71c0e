//! In-process transport: endpoints in one process exchange datagrams through link simulators, no socket.
//! Each sending address gets its own `LinkSim` (so a bandwidth cap is per direction), kept in a vector sorted by
//! address so that delivery order never depends on hash order.

use crate::endpoint::Endpoint;
use crate::link_sim::{LinkConfig, LinkSim};
use std::net::SocketAddr;

/// Routes datagrams between endpoints by address.
#[derive(Debug)]
pub struct MemoryNetwork {
    config: LinkConfig,
    seed: u64,
    links: Vec<(SocketAddr, LinkSim)>,
    /// Datagrams addressed to no registered endpoint.
    pub undeliverable: u64,
}

impl MemoryNetwork {
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        MemoryNetwork {
            config,
            seed,
            links: Vec::new(),
            undeliverable: 0,
        }
    }

    fn link(&mut self, from: SocketAddr) -> &mut LinkSim {
        let i = match self.links.binary_search_by(|(a, _)| a.cmp(&from)) {
            Ok(i) => i,
            Err(i) => {
                // Each direction gets its own stream of random choices, derived from the seed and its position.
                let seed = self.seed ^ (self.links.len() as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                self.links.insert(i, (from, LinkSim::new(self.config, seed)));
                i
            }
        };
        &mut self.links[i].1
    }

    /// Puts a datagram on the wire from `from` (for tests that inject raw bytes).
    pub fn inject(&mut self, now_s: f64, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        self.link(from).send(now_s, from, to, bytes);
    }

    /// Moves every queued datagram of every node onto its link, then delivers what is due at `now_s`.
    pub fn pump(&mut self, now_s: f64, nodes: &mut [(SocketAddr, &mut Endpoint)]) {
        for (addr, endpoint) in nodes.iter_mut() {
            while let Some((to, bytes)) = endpoint.pop_outgoing() {
                self.link(*addr).send(now_s, *addr, to, bytes);
            }
        }
        for li in 0..self.links.len() {
            while let Some(d) = self.links[li].1.pop_ready(now_s) {
                match nodes.iter_mut().find(|(a, _)| *a == d.to) {
                    Some((_, endpoint)) => endpoint.receive(now_s, d.from, d.bytes),
                    None => self.undeliverable += 1,
                }
            }
        }
    }

    /// Earliest pending delivery over all links.
    pub fn next_delivery_s(&self) -> Option<f64> {
        self.links
            .iter()
            .filter_map(|(_, l)| l.next_delivery_s())
            .min_by(f64::total_cmp)
    }
}
