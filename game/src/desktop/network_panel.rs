//! The overlay's Network section: per connection of the peer on screen, RTT, loss and kbps up and down as small
//! graphs over the last ~10 s, and the peer's counters (cubes per authority, corrections, holds lost, refusals).
//! Samples go into rings sized once, so recording and drawing allocate nothing of ours per frame.

use egui::{Color32, Pos2, Stroke, Ui, Vec2};
use tumble_net::PeerId;

use crate::session::peer::{Peer, MAX_PLAYERS};
use tumble_engine::render::authority_rgb;

/// Steps between two samples: 0.2 s at 90 Hz.
pub const SAMPLE_EVERY_STEPS: u64 = 18;
/// Samples a graph keeps: 50 × 0.2 s = the last 10 s.
pub const HISTORY_SAMPLES: usize = 50;
/// Seconds one sample covers (for the kbps rates).
const SAMPLE_S: f64 = SAMPLE_EVERY_STEPS as f64 / 90.0;
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
            let Some(slot) = link_slot(peer.is_host(), player) else {
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

/// Where a connection's graphs live: on a host, guest player 2..=4 → 0..=2; on a guest, its one link to the host.
fn link_slot(is_host: bool, player: u8) -> Option<usize> {
    if is_host {
        usize::from(player).checked_sub(2).filter(|&s| s < MAX_LINKS)
    } else {
        Some(0)
    }
}

/// The endpoint slot of the connection to `player` (a host's guest `p` sits in slot `p − 2`; a guest has one).
fn peer_id(is_host: bool, player: u8) -> PeerId {
    PeerId(if is_host { player.saturating_sub(2) } else { 0 })
}

/// What the section shows beside the graphs.
#[derive(Clone, Copy)]
pub struct NetworkInfo<'a> {
    /// "host on port 40000", "guest of 10.0.0.2:40000", "local, 4 players".
    pub role: &'a str,
    pub peer: &'a Peer,
    pub graphs: &'a NetGraphs,
    /// Local play: which player the mouse drives and whose world is shown.
    pub controlled: Option<(u8, usize)>,
}

impl std::fmt::Debug for NetworkInfo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkInfo")
            .field("role", &self.role)
            .field("player", &self.peer.player())
            .field("controlled", &self.controlled)
            .finish_non_exhaustive()
    }
}

/// The Network section's body.
pub fn draw(ui: &mut Ui, info: &NetworkInfo) {
    let peer = info.peer;
    ui.label(format!("{} — player {}", info.role, peer.player()));
    if let Some((player, players)) = info.controlled {
        ui.label(format!(
            "hands: player {player} of {players} (keys 1–{players}); view follows"
        ));
    }
    let counts = peer.table.counts();
    ui.horizontal(|ui| {
        ui.label("cubes per authority:");
        for (a, n) in counts.iter().enumerate() {
            ui.colored_label(colour32(a as u8), format!("{n}"));
        }
    });
    let s = &peer.stats;
    ui.label(format!(
        "corrections {}, holds lost {}, authority changes {}",
        s.corrections, s.holds_lost, s.authority_changes
    ));
    ui.label(format!(
        "refused {} (host), malformed {}, grabs {}, throws {}",
        s.rejected.total(),
        s.malformed,
        s.grabs,
        s.throws
    ));
    let mut any = false;
    for link in info.graphs.links.iter().filter(|l| l.player != 0) {
        any = true;
        link_rows(ui, link);
    }
    if !any {
        ui.label("no connection yet");
    }
}

fn link_rows(ui: &mut Ui, link: &LinkGraphs) {
    let last = |r: &Ring| r.last().unwrap_or(0.0);
    ui.colored_label(
        colour32(link.player),
        format!(
            "player {}: RTT {:.0} ms, loss {:.1} %, up {:.0} kbps, down {:.0} kbps",
            link.player,
            last(&link.rtt_ms),
            last(&link.loss_pct),
            last(&link.up_kbps),
            last(&link.down_kbps)
        ),
    );
    ui.horizontal(|ui| {
        graph(ui, "RTT", &link.rtt_ms, 100.0, Color32::LIGHT_BLUE);
        graph(ui, "loss", &link.loss_pct, 10.0, Color32::LIGHT_RED);
        graph(ui, "up", &link.up_kbps, 128.0, Color32::LIGHT_GREEN);
        graph(ui, "down", &link.down_kbps, 128.0, Color32::YELLOW);
    });
}

/// Graph width per sample (points).
const GRAPH_STEP_PT: f32 = 1.5;
const GRAPH_HEIGHT_PT: f32 = 26.0;

/// One small line graph, scaled to the larger of `min_scale` and the ring's maximum, drawn segment by segment (no
/// point list to allocate).
fn graph(ui: &mut Ui, name: &str, ring: &Ring, min_scale: f32, colour: Color32) {
    let size = Vec2::new(HISTORY_SAMPLES as f32 * GRAPH_STEP_PT, GRAPH_HEIGHT_PT);
    let (rect, response) = ui.allocate_exact_size(size, egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 2.0, Color32::from_black_alpha(120));
    let scale = ring.max().max(min_scale);
    let y = |v: f32| rect.bottom() - (v / scale).clamp(0.0, 1.0) * rect.height();
    let x0 = rect.right() - ring.len() as f32 * GRAPH_STEP_PT;
    let mut previous: Option<Pos2> = None;
    for (i, v) in ring.iter().enumerate() {
        let p = Pos2::new(x0 + i as f32 * GRAPH_STEP_PT, y(v));
        if let Some(q) = previous {
            painter.line_segment([q, p], Stroke::new(1.0, colour));
        }
        previous = Some(p);
    }
    response.on_hover_text(format!("{name}, last 10 s (top = {scale:.0})"));
}

/// A player's colour (0 = no authority) for text.
pub fn colour32(authority: u8) -> Color32 {
    let [r, g, b] = authority_rgb(authority).map(|c| (c.clamp(0.0, 1.0).powf(1.0 / 2.2) * 255.0) as u8);
    Color32::from_rgb(r, g, b)
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
    fn the_section_shows_a_live_connection_and_the_counters() {
        use crate::desktop::net_play::{LocalOptions, NetPlay, PLAY_KBPS_BUDGET};
        let mut play = NetPlay::local(&LocalOptions {
            scene: std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets/scenes/table64.toml"),
            players: 2,
            bots: Vec::new(),
            link: tumble_net::LinkConfig {
                latency_ms: 40.0,
                ..Default::default()
            },
            seed: 1,
            kbps_budget: PLAY_KBPS_BUDGET,
        })
        .unwrap();
        for _ in 0..3 * 90 {
            play.step_once(None).unwrap();
        }
        let seat = &play.seats[0];
        let link = &seat.graphs.links[0];
        assert_eq!(link.player, 2, "the host's first guest");
        assert_eq!(link.rtt_ms.len(), 3 * 90 / SAMPLE_EVERY_STEPS as usize - 1);
        let rtt = link.rtt_ms.last().unwrap();
        assert!((70.0..110.0).contains(&rtt), "80 ms round trip, measured {rtt}");
        assert!(link.up_kbps.last().unwrap() > 10.0 && link.down_kbps.last().unwrap() > 1.0);
        let info = NetworkInfo {
            role: &play.role,
            peer: &seat.peer,
            graphs: &seat.graphs,
            controlled: Some((1, 2)),
        };
        let ctx = egui::Context::default();
        let mut text = String::new();
        for _ in 0..2 {
            let mut out = ctx.run_ui(egui::RawInput::default(), |ui| {
                egui::CentralPanel::default().show(ui, |ui| draw(ui, &info));
            });
            text = out
                .shapes
                .iter()
                .filter_map(|c| match &c.shape {
                    egui::Shape::Text(t) => Some(t.galley.text().to_string()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            out.textures_delta.clear();
        }
        assert!(text.contains("local, 2 players — player 1"), "{text}");
        assert!(text.contains("player 2: RTT"), "{text}");
        assert!(text.contains("cubes per authority"), "{text}");
        assert!(text.contains("corrections 0"), "{text}");
    }

    #[test]
    fn slots_and_endpoint_ids_follow_the_player_numbering() {
        assert_eq!(link_slot(true, 2), Some(0));
        assert_eq!(link_slot(true, 4), Some(2));
        assert_eq!(link_slot(true, 5), None);
        assert_eq!(link_slot(true, 1), None);
        assert_eq!(link_slot(false, 1), Some(0));
        assert_eq!(peer_id(true, 3), PeerId(1));
        assert_eq!(peer_id(false, 1), PeerId(0));
    }
}
