//! A simulated network link: latency, ± jitter, loss, duplicates, reordering and a bandwidth cap with a queue.
//!
//! Seeded and deterministic: the same seed and the same sends at the same times give the same deliveries.
//! It only holds datagrams and decides when they come out, so it can sit between two endpoints in one process
//! (see `memory`) or between an endpoint and a real socket (see `socket::UdpTransport::flush`).
//! Datagrams are copied into buffers the link keeps and reuses, so once it has held its busiest moment it never
//! allocates again.

use crate::rng::Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;

/// Link behaviour. Delays are per direction, per datagram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// One-way delay (ms).
    pub latency_ms: f64,
    /// Each datagram's delay is `latency ± jitter`, uniform (ms); this alone reorders packets sent close together.
    pub jitter_ms: f64,
    /// Chance a datagram is dropped (percent).
    pub loss_pct: f64,
    /// Chance a datagram is delivered twice, each copy with its own delay (percent).
    pub duplicate_pct: f64,
    /// Chance a datagram is held back an extra random delay up to `reorder_extra_ms` (percent).
    pub reorder_pct: f64,
    pub reorder_extra_ms: f64,
    /// Link capacity (kilobits per second); 0 means unlimited.
    pub bandwidth_kbps: f64,
    /// Bytes that may wait for the link when it is busy; more are dropped (tail drop).
    pub queue_bytes: usize,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            latency_ms: 0.0,
            jitter_ms: 0.0,
            loss_pct: 0.0,
            duplicate_pct: 0.0,
            reorder_pct: 0.0,
            reorder_extra_ms: 50.0,
            bandwidth_kbps: 0.0,
            queue_bytes: 64 * 1024,
        }
    }
}

/// A delivered datagram; the bytes are the link's until the next `pop_ready`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub bytes: &'a [u8],
}

/// Ordered by delivery time, then by submission order (unique), so equal times come out first-in first-out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    deliver_ns: u64,
    order: u64,
    from: SocketAddr,
    to: SocketAddr,
    /// Index of the datagram's bytes in `LinkSim::buffers`.
    buffer: usize,
}

/// What the link did, for tests and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub submitted: u64,
    pub lost: u64,
    pub queue_dropped: u64,
    pub duplicated: u64,
    pub delivered: u64,
}

/// Datagram buffers a link starts with: more than one sender keeps in flight in a game (a guest sends on three
/// links, 30 packets a second each, over 50 ± 10 ms, with duplicates), so that a burst minutes in does not allocate.
const PREFILLED_BUFFERS: usize = 64;

/// The simulated link.
#[derive(Debug)]
pub struct LinkSim {
    config: LinkConfig,
    rng: Rng,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    buffers: Vec<Vec<u8>>,
    free_buffers: Vec<usize>,
    /// The buffer of the datagram `pop_ready` last gave out, freed at the next call.
    delivered_buffer: Option<usize>,
    next_order: u64,
    /// When the bandwidth-limited link finishes sending what it already holds (seconds).
    link_free_s: f64,
    stats: LinkStats,
}

fn to_ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

impl LinkSim {
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        LinkSim {
            config,
            rng: Rng::new(seed),
            in_flight: BinaryHeap::with_capacity(PREFILLED_BUFFERS),
            buffers: (0..PREFILLED_BUFFERS)
                .map(|_| Vec::with_capacity(crate::packet::MAX_PACKET_BYTES))
                .collect(),
            free_buffers: (0..PREFILLED_BUFFERS).rev().collect(),
            delivered_buffer: None,
            next_order: 0,
            link_free_s: 0.0,
            stats: LinkStats::default(),
        }
    }

    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Hands a datagram to the link at `now_s`.
    pub fn send(&mut self, now_s: f64, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        self.stats.submitted += 1;
        let Some(departure_s) = self.departure(now_s, bytes.len()) else {
            self.stats.queue_dropped += 1;
            return;
        };
        if self.rng.chance_pct(self.config.loss_pct) {
            self.stats.lost += 1;
            return;
        }
        let copies = if self.rng.chance_pct(self.config.duplicate_pct) {
            2
        } else {
            1
        };
        self.stats.duplicated += copies - 1;
        for _ in 0..copies {
            let deliver_ns = to_ns(departure_s + self.delay_s());
            let buffer = self.store(bytes);
            self.in_flight.push(Reverse(InFlight {
                deliver_ns,
                order: self.next_order,
                from,
                to,
                buffer,
            }));
            self.next_order += 1;
        }
    }

    /// Copies `bytes` into a free buffer (a new one only when all are in flight).
    fn store(&mut self, bytes: &[u8]) -> usize {
        let i = self.free_buffers.pop().unwrap_or_else(|| {
            // Room for any datagram the transport sends, so a reused buffer never grows.
            self.buffers
                .push(Vec::with_capacity(bytes.len().max(crate::packet::MAX_PACKET_BYTES)));
            // The free list and the flight queue never hold more than every buffer: room for all of them now, with
            // the new buffer, so returning a buffer or queueing a datagram later never allocates.
            let n = self.buffers.len();
            self.free_buffers.reserve(n - self.free_buffers.len());
            self.in_flight.reserve(n.saturating_sub(self.in_flight.len()));
            n - 1
        });
        self.buffers[i].clear();
        self.buffers[i].extend_from_slice(bytes);
        i
    }

    /// When the datagram leaves the sender's side of a capped link, or `None` when the queue is full.
    fn departure(&mut self, now_s: f64, bytes: usize) -> Option<f64> {
        if self.config.bandwidth_kbps <= 0.0 {
            return Some(now_s);
        }
        let bytes_per_s = self.config.bandwidth_kbps * 1000.0 / 8.0;
        let start_s = self.link_free_s.max(now_s);
        let queued_bytes = (start_s - now_s) * bytes_per_s;
        if queued_bytes + bytes as f64 > self.config.queue_bytes as f64 {
            return None;
        }
        self.link_free_s = start_s + bytes as f64 / bytes_per_s;
        Some(self.link_free_s)
    }

    fn delay_s(&mut self) -> f64 {
        let c = &self.config;
        let (latency, jitter, reorder_pct, extra) = (c.latency_ms, c.jitter_ms, c.reorder_pct, c.reorder_extra_ms);
        let mut ms = latency
            + if jitter > 0.0 {
                self.rng.range_f64(-jitter, jitter)
            } else {
                0.0
            };
        if self.rng.chance_pct(reorder_pct) {
            ms += self.rng.range_f64(0.0, extra);
        }
        ms.max(0.0) / 1000.0
    }

    /// When the next datagram comes out, if any.
    pub fn next_delivery_s(&self) -> Option<f64> {
        self.in_flight.peek().map(|Reverse(f)| f.deliver_ns as f64 / 1e9)
    }

    /// The next datagram due at or before `now_s`.
    pub fn pop_ready(&mut self, now_s: f64) -> Option<Datagram<'_>> {
        if let Some(i) = self.delivered_buffer.take() {
            self.free_buffers.push(i);
        }
        let due = self
            .in_flight
            .peek()
            .is_some_and(|Reverse(f)| f.deliver_ns <= to_ns(now_s));
        if !due {
            return None;
        }
        self.stats.delivered += 1;
        let Reverse(f) = self.in_flight.pop()?;
        self.delivered_buffer = Some(f.buffer);
        Some(Datagram {
            from: f.from,
            to: f.to,
            bytes: &self.buffers[f.buffer],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn run(config: LinkConfig, seed: u64, n: usize) -> Vec<(u64, Vec<u8>)> {
        let mut link = LinkSim::new(config, seed);
        let mut out = Vec::new();
        let mut t = 0.0;
        for i in 0..n {
            link.send(t, addr(1), addr(2), &(i as u32).to_le_bytes());
            while let Some(d) = link.pop_ready(t) {
                out.push((to_ns(t), d.bytes.to_vec()));
            }
            t += 1.0 / 90.0;
        }
        while let Some(next) = link.next_delivery_s() {
            let d = link.pop_ready(next).unwrap();
            out.push((to_ns(next), d.bytes.to_vec()));
        }
        out
    }

    #[test]
    fn deterministic_for_a_seed() {
        let c = LinkConfig {
            latency_ms: 50.0,
            jitter_ms: 20.0,
            loss_pct: 10.0,
            duplicate_pct: 5.0,
            reorder_pct: 5.0,
            ..Default::default()
        };
        assert_eq!(run(c, 3, 500), run(c, 3, 500));
        assert_ne!(run(c, 3, 500), run(c, 4, 500));
    }

    #[test]
    fn loss_and_duplicates_match_their_rates() {
        let c = LinkConfig {
            loss_pct: 25.0,
            duplicate_pct: 25.0,
            ..Default::default()
        };
        let mut link = LinkSim::new(c, 9);
        for _ in 0..20_000 {
            link.send(0.0, addr(1), addr(2), &[0]);
        }
        let s = link.stats();
        assert!((s.lost as f64 / 20_000.0 - 0.25).abs() < 0.02, "{s:?}");
        assert!(
            (s.duplicated as f64 / (20_000 - s.lost) as f64 - 0.25).abs() < 0.02,
            "{s:?}"
        );
    }

    #[test]
    fn latency_and_jitter_bound_the_delay_and_reorder() {
        let c = LinkConfig {
            latency_ms: 100.0,
            jitter_ms: 10.0,
            ..Default::default()
        };
        let mut link = LinkSim::new(c, 1);
        for i in 0..1000u32 {
            link.send(i as f64 * 0.001, addr(1), addr(2), &i.to_le_bytes());
        }
        let mut reordered = 0;
        let mut last = 0u32;
        while let Some(t) = link.next_delivery_s() {
            let d = link.pop_ready(t).unwrap();
            let i = u32::from_le_bytes(d.bytes[..4].try_into().unwrap());
            let delay = t - i as f64 * 0.001;
            assert!((0.09 - 1e-9..=0.11 + 1e-9).contains(&delay), "{delay}");
            reordered += usize::from(i < last);
            last = last.max(i);
        }
        assert!(reordered > 100);
    }

    #[test]
    fn bandwidth_cap_paces_and_drops_past_the_queue() {
        // 80 kbps = 10,000 bytes/s; 100-byte datagrams take 10 ms each; the queue holds 1000 bytes.
        let c = LinkConfig {
            bandwidth_kbps: 80.0,
            queue_bytes: 1000,
            ..Default::default()
        };
        let mut link = LinkSim::new(c, 1);
        for _ in 0..20 {
            link.send(0.0, addr(1), addr(2), &[0; 100]);
        }
        assert_eq!(link.stats().queue_dropped, 10);
        let mut times = Vec::new();
        while let Some(t) = link.next_delivery_s() {
            link.pop_ready(t).unwrap();
            times.push(t);
        }
        assert_eq!(times.len(), 10);
        assert!((times[9] - 0.1).abs() < 1e-6, "{times:?}");
    }
}
