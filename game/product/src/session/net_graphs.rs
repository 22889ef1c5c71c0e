//! A peer's network graphs as data: per connection, RTT, loss and kbps up and down over the last ~10 s, sampled
//! every 0.2 s into rings sized once (recording allocates nothing). The desktop overlay draws them
//! (`desktop::network_panel`).

use tumble_net::PeerId;

use crate::session::peer::{Peer, MAX_PLAYERS};

/// Steps between two samples: 0.2 s at 90 Hz.
pub const SAMPLE_EVERY_STEPS: u64 = 18;
/// Samples a graph keeps: 50 × 0.2 s = the last 10 s.
pub const HISTORY_SAMPLES: usize = 50;
/// Seconds one sample covers (for the kbps rates).
const SAMPLE_S: f64 = SAMPLE_EVERY_STEPS as f64 * crate::STEP_S;
/// Connections one peer has at most: the host's three guests.
pub const MAX_LINKS: usize = MAX_PLAYERS - 1;

/// The last [`HISTORY_SAMPLES`] values of one quantity, oldest overwritten first.
#[derive(Clone, Debug, PartialEq)]
pub struct Ring {
    values: [f32; HISTORY_SAMPLES],
    next: usize,
    len: usize,
}

impl Default for Ring {
    fn default() -> Self {
        Self {
            values: [0.0; HISTORY_SAMPLES],
            next: 0,
            len: 0,
        }
    }
}

impl Ring {
    /// Adds a value; a non-finite one is kept as 0 so one bad estimate cannot blank the graph's scale.
    pub fn push(&mut self, value: f32) {
        self.values[self.next] = if value.is_finite() { value } else { 0.0 };
        self.next = (self.next + 1) % HISTORY_SAMPLES;
        self.len = (self.len + 1).min(HISTORY_SAMPLES);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Oldest first.
    pub fn iter(&self) -> impl Iterator<Item = f32> + '_ {
        let start = (self.next + HISTORY_SAMPLES - self.len) % HISTORY_SAMPLES;
        (0..self.len).map(move |k| self.values[(start + k) % HISTORY_SAMPLES])
    }

    pub fn last(&self) -> Option<f32> {
        (self.len > 0).then(|| self.values[(self.next + HISTORY_SAMPLES - 1) % HISTORY_SAMPLES])
    }

    pub fn max(&self) -> f32 {
        self.iter().fold(0.0, f32::max)
    }
}

/// One connection's history, as its peer sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkGraphs {
    /// The player at the other end (0: slot unused).
    pub player: u8,
    pub rtt_ms: Ring,
    pub loss_pct: Ring,
    pub up_kbps: Ring,
    pub down_kbps: Ring,
    /// Wire bytes sent and received at the last sample (IP/UDP headers included).
    bytes_at_last: (u64, u64),
}

/// The Network section's data for one peer: its connections' graphs, refreshed every [`SAMPLE_EVERY_STEPS`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetGraphs {
    pub links: [LinkGraphs; MAX_LINKS],
}

impl NetGraphs {
    /// Call after every step; takes a sample every [`SAMPLE_EVERY_STEPS`] steps.
    pub fn after_step(&mut self, peer: &Peer) {
        if !peer.step_count().is_multiple_of(SAMPLE_EVERY_STEPS) {
            return;
        }
        let mut seen = [false; MAX_LINKS];
        for (player, sent, received) in peer.wire_bytes() {
            let Some(slot) = link_slot(peer.is_host(), player, peer.player()) else {
                continue;
            };
            seen[slot] = true;
            let stats = peer
                .endpoint()
                .stats(peer_id(peer.is_host(), player))
                .unwrap_or_default();
            self.links[slot].record(player, stats.rtt_ms, stats.loss_pct, (sent, received));
        }
        // A connection that closed: its graphs go (a new guest in that slot starts afresh).
        for (link, seen) in self.links.iter_mut().zip(seen) {
            if !seen && link.player != 0 {
                *link = LinkGraphs::default();
            }
        }
    }
}

impl LinkGraphs {
    fn record(&mut self, player: u8, rtt_ms: f64, loss_pct: f64, bytes: (u64, u64)) {
        if self.player != player {
            *self = LinkGraphs {
                player,
                bytes_at_last: bytes,
                ..LinkGraphs::default()
            };
            return;
        }
        let kbps = |now: u64, before: u64| now.saturating_sub(before) as f64 * 8.0 / 1000.0 / SAMPLE_S;
        self.rtt_ms.push(rtt_ms as f32);
        self.loss_pct.push(loss_pct as f32);
        self.up_kbps.push(kbps(bytes.0, self.bytes_at_last.0) as f32);
        self.down_kbps.push(kbps(bytes.1, self.bytes_at_last.1) as f32);
        self.bytes_at_last = bytes;
    }
}

/// Where a connection's graphs live: on a host, guest player 2..=4 → 0..=2; on a guest, the host → 0 and its
/// direct links to the other guests after it.
fn link_slot(is_host: bool, player: u8, me: u8) -> Option<usize> {
    if is_host {
        usize::from(player).checked_sub(2).filter(|&s| s < MAX_LINKS)
    } else {
        // The host first, then the direct links to the other guests in player order (skipping this one).
        let p = usize::from(player).checked_sub(1)?;
        let s = if player > me { p - 1 } else { p };
        (s < MAX_LINKS).then_some(s)
    }
}

/// The endpoint slot of the connection to `player` (a host's guest `p` sits in slot `p − 2`; on a guest the host
/// is slot 0 and a direct link to player `p` slot `p − 1`).
fn peer_id(is_host: bool, player: u8) -> PeerId {
    PeerId(if is_host {
        player.saturating_sub(2)
    } else {
        player.saturating_sub(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_keeps_the_last_samples_oldest_first() {
        let mut ring = Ring::default();
        assert!(ring.is_empty());
        assert_eq!(ring.last(), None);
        for k in 0..3 {
            ring.push(k as f32);
        }
        assert_eq!(ring.iter().collect::<Vec<_>>(), vec![0.0, 1.0, 2.0]);
        for k in 3..HISTORY_SAMPLES + 5 {
            ring.push(k as f32);
        }
        let v: Vec<f32> = ring.iter().collect();
        assert_eq!(v.len(), HISTORY_SAMPLES);
        assert_eq!(v[0], 5.0, "the five oldest were overwritten");
        assert_eq!(ring.last(), Some((HISTORY_SAMPLES + 4) as f32));
        assert_eq!(ring.max(), (HISTORY_SAMPLES + 4) as f32);
        ring.push(f32::NAN);
        assert_eq!(ring.last(), Some(0.0));
    }

    #[test]
    fn link_rates_come_from_byte_deltas_and_a_new_player_starts_afresh() {
        let mut link = LinkGraphs::default();
        link.record(2, 0.0, 0.0, (1000, 0));
        assert!(link.up_kbps.is_empty(), "the first sample only sets the baseline");
        // 2500 bytes in 0.2 s = 100 kbps.
        link.record(2, 100.0, 5.0, (3500, 250));
        assert!((link.up_kbps.last().unwrap() - 100.0).abs() < 1e-3);
        assert!((link.down_kbps.last().unwrap() - 10.0).abs() < 1e-3);
        assert_eq!(link.rtt_ms.last(), Some(100.0));
        link.record(3, 50.0, 0.0, (10, 10));
        assert_eq!((link.player, link.rtt_ms.len()), (3, 0));
    }

    #[test]
    fn slots_and_endpoint_ids_follow_the_player_numbering() {
        assert_eq!(link_slot(true, 2, 1), Some(0));
        assert_eq!(link_slot(true, 4, 1), Some(2));
        assert_eq!(link_slot(true, 5, 1), None);
        assert_eq!(link_slot(true, 1, 1), None);
        assert_eq!(link_slot(false, 1, 3), Some(0));
        // Guest 3's direct links: player 2 in slot 1, player 4 in slot 2.
        assert_eq!(link_slot(false, 2, 3), Some(1));
        assert_eq!(link_slot(false, 4, 3), Some(2));
        assert_eq!(peer_id(false, 4), PeerId(3));
        assert_eq!(peer_id(true, 3), PeerId(1));
        assert_eq!(peer_id(false, 1), PeerId(0));
    }
}
