//! The overlay's "Network model" window for `tumble compare --view`: which machine each side shows, the model
//! and the link settings (a new model restarts at once; link changes apply with the restart button or R), the
//! running game's figures, and the controls.

use egui::{Align2, Color32, Context, Ui};

use crate::compare::{CompareArgs, Model, ALL_MODELS};
use crate::compare_view::{human_player, CompareView};

/// What the two sides show under `model`.
pub fn sides(model: Model) -> (&'static str, &'static str) {
    match model {
        Model::Lockstep | Model::All => (
            "player 1's machine (you): simulates every input",
            "player 2's machine: the same simulation, from inputs only",
        ),
        Model::Snapshots => (
            "the server (you): simulates the world",
            "the client: draws between snapshots, a playout delay behind",
        ),
        Model::Predict => (
            "the client (you): predicts your cube, rewinds on corrections",
            "the server: simulates the world from your inputs",
        ),
        Model::Authority => (
            "player 1, the host (you): simulates, sends what it has authority over",
            "player 2: state sync, cubes tinted by authority",
        ),
        Model::StateSync => (
            "player 1 (you): simulates every cube and sends their states",
            "player 2: simulates too, applies the states, sends its inputs",
        ),
    }
}

fn model_name(model: Model) -> &'static str {
    match model {
        Model::Lockstep | Model::All => "lockstep",
        Model::Snapshots => "snapshots",
        Model::Predict => "predict",
        Model::Authority => "authority",
        Model::StateSync => "state-sync",
    }
}

/// Builds the window on the running `game`, the settings being edited in `edit`, and marks the two halves;
/// returns true when the game should restart with `edit`.
pub fn draw(ctx: &Context, game: &CompareView, edit: &mut CompareArgs) -> bool {
    mark_halves(ctx, game.settings.model, game.right_player);
    let mut restart = false;
    egui::Window::new("Network model")
        .anchor(Align2::LEFT_BOTTOM, [8.0, -8.0])
        .resizable(false)
        .collapsible(true)
        .show(ctx, |ui| restart = contents(ui, game, edit));
    restart
}

/// A line between the two machines' pictures and each one's name at the top of its half.
fn mark_halves(ctx: &Context, model: Model, right_player: usize) {
    let rect = ctx.content_rect();
    let painter = ctx.layer_painter(egui::LayerId::background());
    let middle = rect.center().x;
    painter.line_segment(
        [egui::pos2(middle, rect.top()), egui::pos2(middle, rect.bottom())],
        egui::Stroke::new(2.0, Color32::from_gray(30)),
    );
    let (left, right) = short_sides(model);
    const OTHERS: [&str; 3] = ["Player 2", "Player 3", "Player 4"];
    let right = if right_player > 2 {
        OTHERS[(right_player - 2).min(2)]
    } else {
        right
    };
    for (x, name) in [
        (rect.left() + rect.width() * 0.25, left),
        (rect.left() + rect.width() * 0.75, right),
    ] {
        painter.text(
            egui::pos2(x, rect.top() + 8.0),
            Align2::CENTER_TOP,
            name,
            egui::FontId::proportional(18.0),
            Color32::from_gray(20),
        );
    }
}

/// The two halves' titles.
fn short_sides(model: Model) -> (&'static str, &'static str) {
    match model {
        Model::Lockstep | Model::All | Model::Authority | Model::StateSync => ("Player 1 (you)", "Player 2"),
        Model::Snapshots => ("Server (you)", "Client"),
        Model::Predict => ("Client (you)", "Server"),
    }
}

fn contents(ui: &mut Ui, game: &CompareView, edit: &mut CompareArgs) -> bool {
    let mut restart = false;
    let (left, right) = sides(game.settings.model);
    ui.label(format!("Left: {left}"));
    if game.right_player == 2 {
        ui.label(format!("Right: {right}"));
    } else {
        ui.label(format!("Right: player {}'s machine", game.right_player));
    }
    if game.settings.players > 2 {
        ui.label("Keys 2–4: show that player's machine on the right");
    }
    ui.separator();
    ui.horizontal(|ui| {
        for model in ALL_MODELS {
            if ui
                .selectable_label(game.settings.model == model, model_name(model))
                .clicked()
                && game.settings.model != model
            {
                edit.model = model;
                restart = true;
            }
        }
    });
    link_settings(ui, edit);
    if ui.button("Restart with these settings (R)").clicked() {
        restart = true;
    }
    if let Some(e) = &game.error {
        ui.colored_label(Color32::from_rgb(255, 120, 100), e);
    }
    ui.separator();
    figures(ui, game);
    ui.separator();
    ui.label(format!(
        "You play player {}: arrows or WASD roll · space hovers and blows · Z pulls · stick and triggers",
        human_player(game.settings.model)
    ));
    restart
}

fn link_settings(ui: &mut Ui, edit: &mut CompareArgs) {
    let mut link = edit.link.config();
    ui.add(egui::Slider::new(&mut link.latency_ms, 0.0..=1000.0).text("one-way latency (ms)"));
    ui.add(egui::Slider::new(&mut link.jitter_ms, 0.0..=200.0).text("jitter ± (ms)"));
    ui.add(egui::Slider::new(&mut link.loss_pct, 0.0..=50.0).text("loss (%)"));
    ui.add(egui::Slider::new(&mut link.duplicate_pct, 0.0..=20.0).text("duplicates (%)"));
    edit.link = tumble_game::run_settings::LinkArgs::exactly(&link);
    match edit.model {
        Model::Lockstep | Model::All => {
            ui.add(egui::Slider::new(&mut edit.players, 2..=4).text("players"));
            ui.add(egui::Slider::new(&mut edit.playout_ms, 0.0..=1000.0).text("playout delay (ms)"));
        }
        Model::Snapshots => {
            ui.add(egui::Slider::new(&mut edit.snapshot_hz, 10..=60).text("snapshots per second"));
            ui.add(egui::Slider::new(&mut edit.playout_ms, 0.0..=1000.0).text("least playout delay (ms)"));
            let mut compressed = !edit.no_compression;
            ui.checkbox(&mut compressed, "compressed (quantized, at rest, delta)");
            edit.no_compression = !compressed;
        }
        Model::Predict => {
            ui.add(egui::Slider::new(&mut edit.predict_buffer_ms, 0.0..=200.0).text("server input buffer (ms)"));
        }
        Model::Authority | Model::StateSync => {
            ui.add(egui::Slider::new(&mut edit.players, 2..=4).text("players"));
            ui.add(egui::Slider::new(&mut edit.kbps_budget, 32..=1024).text("budget (kbps)"));
        }
    }
}

fn figures(ui: &mut Ui, game: &CompareView) {
    let f = game.figures();
    let (host, guest) = match game.settings.model {
        Model::Snapshots | Model::Predict => ("server", "client"),
        Model::Authority | Model::StateSync => ("the host (busiest connection)", "its guest"),
        Model::Lockstep | Model::All => ("player 1 (first connection)", "player 2"),
    };
    ui.label(format!("{:.0} s played", f.seconds));
    ui.label(format!(
        "{host} sends {:.1} kbps · {guest} sends {:.1} kbps (IP/UDP headers included)",
        f.kbps_host, f.kbps_guest
    ));
    if let Some(n) = f.hitch_frames {
        ui.label(format!("frames that waited for an input: {n}"));
    }
    if let Some(n) = f.desyncs {
        ui.label(format!("desyncs found by checksum: {n}"));
    }
    if let Some(n) = f.corrections {
        ui.label(format!("corrections: {n}"));
    }
    if let Some(ms) = f.playout_ms {
        ui.label(format!("client playout delay: {ms:.0} ms"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_names_both_sides_and_the_person_is_on_the_left() {
        for model in ALL_MODELS {
            let (left, right) = sides(model);
            assert!(left.contains("(you)"), "{left}");
            assert!(!right.contains("(you)") && !right.is_empty());
            assert!(!model_name(model).is_empty());
        }
    }
}
