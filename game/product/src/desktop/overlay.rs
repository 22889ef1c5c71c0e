//! The on-screen overlay, built with egui (the renderer draws what it produces): frame rate, frame and physics
//! times with a frame-time graph, cube and resting counts, the scene and its state, a help panel with the controls,
//! and a "Network" section: in a networked game, per connection RTT, loss and kbps graphs and the peer's counters
//! (`network_panel`).

use egui::{Align2, Color32, Context, Pos2, Shape, Stroke, Ui, Vec2};

use super::network_panel::{self, NetworkInfo};
use super::sim::SimStats;

/// Frames the frame-time graph shows.
pub const GRAPH_FRAMES: usize = 180;

/// Which panels are shown (F1 stats, F2 help) and the stereo preview flag (F3), which the overlay reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverlayToggles {
    pub stats: bool,
    pub help: bool,
    pub stereo: bool,
    /// Tint resting cubes (F4, the renderer's resting debug mode).
    pub resting: bool,
    /// Mark contact points (F5, the renderer's contacts debug mode).
    pub contacts: bool,
}

impl Default for OverlayToggles {
    fn default() -> Self {
        Self {
            stats: true,
            help: false,
            stereo: false,
            resting: false,
            contacts: false,
        }
    }
}

/// Frame timings: a smoothed rate and a ring of recent frame times for the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameTimes {
    ring_ms: [f32; GRAPH_FRAMES],
    next: usize,
    /// Exponential moving average of the frame time (ms).
    pub mean_ms: f32,
}

impl Default for FrameTimes {
    fn default() -> Self {
        Self {
            ring_ms: [0.0; GRAPH_FRAMES],
            next: 0,
            mean_ms: 0.0,
        }
    }
}

impl FrameTimes {
    pub fn push(&mut self, frame_ms: f32) {
        if !frame_ms.is_finite() || frame_ms < 0.0 {
            return;
        }
        self.ring_ms[self.next] = frame_ms;
        self.next = (self.next + 1) % GRAPH_FRAMES;
        self.mean_ms = if self.mean_ms == 0.0 {
            frame_ms
        } else {
            self.mean_ms + (frame_ms - self.mean_ms) * 0.05
        };
    }

    pub fn fps(&self) -> f32 {
        if self.mean_ms > 0.0 {
            1000.0 / self.mean_ms
        } else {
            0.0
        }
    }

    /// Oldest first.
    pub fn iter(&self) -> impl Iterator<Item = f32> + '_ {
        self.ring_ms[self.next..]
            .iter()
            .chain(&self.ring_ms[..self.next])
            .copied()
    }
}

/// Everything the overlay shows.
#[derive(Clone, Copy, Debug)]
pub struct OverlayData<'a> {
    pub scene: &'a str,
    pub paused: bool,
    pub sim: &'a SimStats,
    pub frames: &'a FrameTimes,
    /// "mouse" or "gamepad".
    pub hands: &'a str,
    pub held: usize,
    pub gamepad_connected: bool,
    /// GPU time of the last finished frame (ms), when the renderer measures it.
    pub gpu_ms: Option<f32>,
    /// Set when the last scene switch failed: the loader's message.
    pub error: Option<&'a str>,
    /// A networked game: the Network section's data.
    pub network: Option<NetworkInfo<'a>>,
    /// What the player must be told whatever panels are shown (the host is gone), in the middle of the window.
    pub notice: Option<&'a str>,
}

/// Builds this frame's overlay.
pub fn draw(ctx: &Context, data: &OverlayData, toggles: &OverlayToggles) {
    if let Some(notice) = data.notice {
        egui::Window::new("The game has ended")
            .anchor(Align2::CENTER_TOP, [0.0, 48.0])
            .resizable(false)
            .collapsible(false)
            .show(ctx, |ui| {
                ui.colored_label(Color32::from_rgb(255, 200, 80), notice);
            });
    }
    if toggles.stats {
        egui::Window::new("Tumble")
            .anchor(Align2::LEFT_TOP, [8.0, 8.0])
            .resizable(false)
            .collapsible(true)
            .show(ctx, |ui| stats(ui, data, toggles));
    }
    if toggles.help {
        egui::Window::new("Controls")
            .anchor(Align2::RIGHT_TOP, [-8.0, 8.0])
            .resizable(false)
            .show(ctx, help);
    }
}

fn stats(ui: &mut Ui, d: &OverlayData, toggles: &OverlayToggles) {
    let state = if d.paused { "paused" } else { "running" };
    ui.label(format!("scene {} — {state}, step {}", d.scene, d.sim.steps));
    ui.label(format!(
        "{:.0} fps, frame {:.2} ms, physics {:.3} ms/step",
        d.frames.fps(),
        d.frames.mean_ms,
        d.sim.step_ms
    ));
    if let Some(gpu) = d.gpu_ms {
        ui.label(format!("GPU {gpu:.2} ms"));
    }
    graph(ui, d.frames);
    ui.label(format!(
        "cubes {}, resting {}, awake {}",
        d.sim.cubes, d.sim.resting, d.sim.awake
    ));
    ui.label(format!(
        "hands: {}{}, holding {}; grabs {}, throws {}",
        d.hands,
        if d.gamepad_connected {
            " (gamepad connected)"
        } else {
            ""
        },
        d.held,
        d.sim.grabs,
        d.sim.throws
    ));
    if toggles.stereo {
        ui.label("stereo preview on (F3)");
    }
    if let Some(e) = d.error {
        ui.colored_label(Color32::LIGHT_RED, e);
    }
    egui::CollapsingHeader::new("Network")
        .default_open(d.network.is_some())
        .show(ui, |ui| match &d.network {
            Some(info) => network_panel::draw(ui, info),
            None => {
                ui.label("no session: local simulation only");
            }
        });
}

/// Frame times as a line, 0 to 33 ms high (a line at 11.1 ms marks the 90 Hz budget).
fn graph(ui: &mut Ui, frames: &FrameTimes) {
    const MAX_MS: f32 = 33.3;
    const BUDGET_MS: f32 = 1000.0 / crate::STEP_HZ as f32;
    let (rect, _) = ui.allocate_exact_size(Vec2::new(GRAPH_FRAMES as f32 * 1.5, 40.0), egui::Sense::hover());
    let y = |ms: f32| rect.bottom() - (ms / MAX_MS).clamp(0.0, 1.0) * rect.height();
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 2.0, Color32::from_black_alpha(120));
    let budget = y(BUDGET_MS);
    painter.line_segment(
        [Pos2::new(rect.left(), budget), Pos2::new(rect.right(), budget)],
        Stroke::new(1.0, Color32::DARK_GREEN),
    );
    let points = frames
        .iter()
        .enumerate()
        .map(|(i, ms)| Pos2::new(rect.left() + i as f32 * 1.5, y(ms)))
        .collect();
    painter.add(Shape::line(points, Stroke::new(1.0, Color32::LIGHT_GREEN)));
}

fn help(ui: &mut Ui) {
    for line in HELP {
        ui.label(*line);
    }
}

/// The controls, as the README lists them.
pub const HELP: &[&str] = &[
    "W A S D / arrows: move    E / Q: up / down    Shift: faster",
    "right mouse drag: look",
    "left mouse: grab with the right hand (release throws)",
    "middle mouse or G: grab with the left hand",
    "wheel: move the held cube along the ray",
    "gamepad: sticks move the hands, triggers grab, d-pad up/down,",
    "  Start pause, Back reset, A single step",
    "R: reset    P / Space: pause    N: single step",
    "Tab / PageDown, PageUp: next / previous scene",
    "F1: stats    F2: this help    F3: stereo preview    F4: tint resting cubes    F5: contact points",
    "1 – 4: take over that player's hands and world (tumble local)",
    "Esc: quit",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(output: &egui::FullOutput) -> String {
        let mut all = String::new();
        for clipped in &output.shapes {
            collect(&clipped.shape, &mut all);
        }
        all
    }

    fn collect(shape: &Shape, out: &mut String) {
        match shape {
            Shape::Text(t) => {
                out.push_str(t.galley.text());
                out.push('\n');
            }
            Shape::Vec(v) => v.iter().for_each(|s| collect(s, out)),
            _ => {}
        }
    }

    #[test]
    fn the_overlay_shows_the_numbers_and_hides_on_request() {
        let ctx = Context::default();
        let sim = SimStats {
            steps: 123,
            cubes: 64,
            resting: 60,
            awake: 4,
            ..SimStats::default()
        };
        let mut frames = FrameTimes::default();
        for _ in 0..10 {
            frames.push(10.0);
        }
        let data = OverlayData {
            scene: "table64",
            paused: true,
            sim: &sim,
            frames: &frames,
            hands: "mouse",
            held: 0,
            gamepad_connected: false,
            gpu_ms: Some(1.5),
            error: None,
            network: None,
            notice: None,
        };
        let toggles = OverlayToggles {
            help: true,
            ..OverlayToggles::default()
        };
        let mut text = String::new();
        // egui lays windows out over the first frames; the third shows everything.
        for _ in 0..3 {
            let mut out = ctx.run_ui(egui::RawInput::default(), |ui| draw(ui.ctx(), &data, &toggles));
            text = texts(&out);
            out.textures_delta.clear();
        }
        assert!(text.contains("cubes 64, resting 60"), "{text}");
        assert!(text.contains("100 fps"), "{text}");
        assert!(text.contains("paused"), "{text}");
        assert!(text.contains("GPU 1.50 ms"), "{text}");
        assert!(text.contains("F1: stats"), "{text}");
        let hidden = OverlayToggles {
            stats: false,
            help: false,
            ..OverlayToggles::default()
        };
        let mut out = ctx.run_ui(egui::RawInput::default(), |ui| draw(ui.ctx(), &data, &hidden));
        assert!(texts(&out).is_empty());
        out.textures_delta.clear();
        // The host gone: told whatever panels are hidden.
        let told = OverlayData {
            notice: Some("The host left the game: the world stays"),
            ..data
        };
        let mut text = String::new();
        for _ in 0..3 {
            let mut out = ctx.run_ui(egui::RawInput::default(), |ui| draw(ui.ctx(), &told, &hidden));
            text = texts(&out);
            out.textures_delta.clear();
        }
        assert!(text.contains("The host left the game"), "{text}");
    }

    #[test]
    fn frame_times_average_and_iterate_oldest_first() {
        let mut frames = FrameTimes::default();
        frames.push(f32::NAN);
        assert_eq!(frames.fps(), 0.0);
        for k in 0..GRAPH_FRAMES + 2 {
            frames.push(k as f32);
        }
        let v: Vec<f32> = frames.iter().collect();
        assert_eq!(v.len(), GRAPH_FRAMES);
        assert_eq!(v[0], 2.0);
        assert_eq!(*v.last().unwrap(), (GRAPH_FRAMES + 1) as f32);
    }
}
