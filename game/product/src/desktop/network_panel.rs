//! The overlay's Network section (the graphs' data: `session::net_graphs`): per connection of the peer on screen, RTT, loss and kbps up and down as small
//! graphs over the last ~10 s, and the peer's counters (cubes per authority, corrections, holds lost, refusals).
//! Samples go into rings sized once, so recording and drawing allocate nothing of ours per frame.

#[cfg(test)]
use crate::session::net_graphs::SAMPLE_EVERY_STEPS;
use crate::session::net_graphs::{LinkGraphs, NetGraphs, Ring, HISTORY_SAMPLES};
use crate::session::peer::Peer;
use egui::{Color32, Pos2, Stroke, Ui, Vec2};
use tumble_engine::render::authority_rgb;

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
    fn the_section_shows_a_live_connection_and_the_counters() {
        use crate::session::net_play::{LocalOptions, NetPlay, PLAY_KBPS_BUDGET};
        let mut play = NetPlay::local(&LocalOptions {
            scene: std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/table64.toml"),
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
        assert_eq!(
            link.rtt_ms.len(),
            3 * crate::STEP_HZ as usize / SAMPLE_EVERY_STEPS as usize - 1
        );
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
}
