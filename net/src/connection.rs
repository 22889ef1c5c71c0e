//! One peer's connection: its address, keys and packet counters, ack state and the estimates the game reads.
//!
//! RTT and jitter are exponentially smoothed over ack samples; loss is the share of resolved packets (acked or
//! lost) that were lost, smoothed the same way; bandwidths are measured over one-second windows.

use crate::ack::{AckSamples, AckTracker};
use crate::crypto::SessionKeys;
use crate::packet::ACCEPT_SEALED_BYTES;
use std::net::SocketAddr;

/// Weight of a new RTT sample in the smoothed RTT and jitter.
const RTT_SMOOTHING: f64 = 0.1;
/// Weight of one resolved packet in the smoothed loss.
const LOSS_SMOOTHING: f64 = 0.01;
/// Bandwidth is measured over windows of this length (seconds).
const BANDWIDTH_WINDOW_S: f64 = 1.0;

/// What the game (or `net-soak`) reads about a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConnectionStats {
    /// Smoothed round trip (ms), the peer's ack holding time removed.
    pub rtt_ms: f64,
    /// Smoothed deviation of RTT samples from the smoothed RTT (ms).
    pub jitter_ms: f64,
    /// Smoothed share of sent packets that were not acked (percent).
    pub loss_pct: f64,
    pub sent_kbps: f64,
    pub received_kbps: f64,
    pub acked_kbps: f64,
    pub packets_sent: u64,
    pub packets_received: u64,
    pub packets_acked: u64,
    pub packets_lost: u64,
    /// Datagram bytes (UDP payload) since the connection opened.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Times the peer moved to a new address (its NAT rebound) and the connection followed.
    pub address_changes: u64,
}

/// Bytes counted over a fixed window, reported as kilobits per second for the last complete window.
#[derive(Debug, Clone, Copy, Default)]
struct RateMeter {
    window_start_s: f64,
    bytes: u64,
    kbps: f64,
}

impl RateMeter {
    fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
    }

    fn update(&mut self, now_s: f64) {
        let elapsed = now_s - self.window_start_s;
        if elapsed >= BANDWIDTH_WINDOW_S {
            self.kbps = self.bytes as f64 * 8.0 / 1000.0 / elapsed;
            self.bytes = 0;
            self.window_start_s = now_s;
        }
    }
}

/// Connection state, owned by the endpoint's slot table.
#[derive(Debug, Clone)]
pub struct Connection {
    pub addr: SocketAddr,
    pub keys: SessionKeys,
    /// The counter (nonce) of the next packet we seal; its low 16 bits are the ack tracker's next sequence.
    pub send_counter: u64,
    /// The newest counter the peer sealed that we opened.
    pub newest_received: Option<u64>,
    pub client_salt: u64,
    pub peer_index: u8,
    /// Peers in the session, the host included (what the accept told the guest).
    pub peer_count: u8,
    pub acks: AckTracker,
    /// On a host: the accept this guest was sent (the Noise answer), sent again byte for byte if it was lost.
    pub accept: [u8; ACCEPT_SEALED_BYTES],
    pub last_send_s: f64,
    pub last_receive_s: f64,
    stats: ConnectionStats,
    rtt_initialized: bool,
    sent_rate: RateMeter,
    received_rate: RateMeter,
    acked_rate: RateMeter,
}

impl Connection {
    pub fn new(
        addr: SocketAddr,
        keys: SessionKeys,
        client_salt: u64,
        (peer_index, peer_count): (u8, u8),
        now_s: f64,
    ) -> Self {
        let meter = RateMeter {
            window_start_s: now_s,
            ..RateMeter::default()
        };
        Connection {
            addr,
            keys,
            send_counter: 0,
            newest_received: None,
            client_salt,
            peer_index,
            peer_count,
            acks: AckTracker::new(),
            accept: [0; ACCEPT_SEALED_BYTES],
            last_send_s: now_s,
            last_receive_s: now_s,
            stats: ConnectionStats::default(),
            rtt_initialized: false,
            sent_rate: meter,
            received_rate: meter,
            acked_rate: meter,
        }
    }

    /// The peer now sends from `addr` (its NAT rebound; see `Endpoint`): we answer there.
    pub fn moved_to(&mut self, addr: SocketAddr) {
        self.addr = addr;
        self.stats.address_changes += 1;
    }

    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats;
        s.packets_acked = self.acks.acked_total;
        s.packets_lost = self.acks.lost_total;
        s
    }

    pub fn on_sent(&mut self, now_s: f64, bytes: usize) {
        self.last_send_s = now_s;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += bytes as u64;
        self.sent_rate.add(bytes as u64);
    }

    pub fn on_received(&mut self, now_s: f64, bytes: usize) {
        self.last_receive_s = now_s;
        self.stats.packets_received += 1;
        self.stats.bytes_received += bytes as u64;
        self.received_rate.add(bytes as u64);
    }

    pub fn on_ack_samples(&mut self, samples: AckSamples) {
        self.acked_rate.add(samples.acked_bytes);
        for _ in 0..samples.acked_packets {
            self.stats.loss_pct += (0.0 - self.stats.loss_pct) * LOSS_SMOOTHING;
        }
        if let Some(rtt_s) = samples.rtt_s {
            let ms = rtt_s * 1000.0;
            if self.rtt_initialized {
                let deviation = (ms - self.stats.rtt_ms).abs();
                self.stats.jitter_ms += (deviation - self.stats.jitter_ms) * RTT_SMOOTHING;
                self.stats.rtt_ms += (ms - self.stats.rtt_ms) * RTT_SMOOTHING;
            } else {
                self.stats.rtt_ms = ms;
                self.rtt_initialized = true;
            }
        }
    }

    pub fn on_lost(&mut self) {
        self.stats.loss_pct += (100.0 - self.stats.loss_pct) * LOSS_SMOOTHING;
    }

    pub fn update_rates(&mut self, now_s: f64) {
        self.sent_rate.update(now_s);
        self.received_rate.update(now_s);
        self.acked_rate.update(now_s);
        self.stats.sent_kbps = self.sent_rate.kbps;
        self.stats.received_kbps = self.received_rate.kbps;
        self.stats.acked_kbps = self.acked_rate.kbps;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_converge() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let (keys, _) = crate::crypto::handshake_in_memory(&crate::crypto::JoinSecret::OPEN).unwrap();
        let mut c = Connection::new(addr, keys, 2, (0, 2), 0.0);
        for i in 0..200 {
            let rtt = if i % 2 == 0 { 0.09 } else { 0.11 };
            c.on_ack_samples(AckSamples {
                rtt_s: Some(rtt),
                acked_bytes: 100,
                acked_packets: 3,
                ..AckSamples::default()
            });
            c.on_lost();
            c.on_sent(i as f64 * 0.01, 125);
        }
        c.update_rates(2.0);
        let s = c.stats();
        assert!((s.rtt_ms - 100.0).abs() < 2.0, "{s:?}");
        assert!((s.jitter_ms - 10.0).abs() < 2.0, "{s:?}");
        assert!((s.loss_pct - 25.0).abs() < 3.0, "{s:?}");
        assert!((s.sent_kbps - 100.0).abs() < 1e-9, "{s:?}");
    }
}
