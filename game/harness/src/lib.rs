//! The test bench (`tumble-harness`): runs of whole worlds joined through `tumble-net` and its link simulator, and what they measure.
//! Each world learns about the others only through packets; a harness may compare the worlds' final states.
//!
//! - [`loopback`]: `tumble loopback`: an authority world and a non-authority world joined by two endpoints (in
//!   memory on a simulated clock, or UDP on 127.0.0.1), stepped one step at a time; the JSON report.
//! - [`session`]: `tumble session`: a host and up to three guests, each its own world, joined through the link
//!   simulator in memory; what each would draw is watched for pops, rest jitter and conflicts.
//! - [`session_cli`]: the `tumble session` flags and drivers; [`processes`]: `--processes`, one OS process per
//!   player over UDP on 127.0.0.1 (`tumble session-peer`), merged from their JSON lines. The drivers they seat
//!   (bots, scripts, the `--conflict-test` pair) are the product's (`tumble_game::bots`).
//! - [`thrower`]: the seeded scripted thrower of the loopback run.
//! - [`compare`]: `tumble compare`: the cube game played by bots over one network model (2 to 4 players); the JSON
//!   figures the models are compared by. One run per model: [`compare`] (lockstep), [`compare_snapshots`],
//!   [`compare_predict`], [`compare_authority`]. [`compare_view`] and [`compare_panel`]: `tumble compare --view`,
//!   a run in the product's window as a side-by-side view (`tumble_game::desktop::side_by_side`). `star_link`: a host and up to three guests on the
//!   in-memory link, wired for it.
//! - [`bandwidth`]: one recorded loopback run priced stage by stage (`make bench`'s table).
//! - [`min_budget`]: the smallest bandwidth budget a connection can run on (the largest single update must fit).
//! - [`demand`]: a shadow sender with no budget, hearing the real acks: what the link would carry unbudgeted.
//! - [`cube_history`]: each cube's last changes on one `--processes` peer, sampled before and after the physics
//!   step: the failure evidence of a run that cannot be repeated.
//! - [`rest_jitter`]: how far a remote copy moves a cube its authority has at rest (the definition is there).
//! - [`sides`]: the four delays every model reports from both sides (input to screen, how late each sees the
//!   other), and the input lag line that is their control.
//! - `in_process` (tests only): the two ends joined by a hand-made in-process link.
//!
//! It depends on the product (`tumble_game`) and the models (`tumble_models`); neither depends on it.

pub mod bandwidth;
pub mod compare;
pub mod compare_authority;
pub mod compare_panel;
pub mod compare_predict;
pub mod compare_snapshots;
pub mod compare_view;
pub mod cube_history;
pub mod demand;
pub mod drawn;
pub mod drawn_trace;
#[cfg(test)]
mod in_process;
pub mod loopback;
pub mod min_budget;
pub mod processes;
pub mod rest_jitter;
pub mod session;
pub mod session_cli;
pub mod sides;
mod star_link;
pub mod thrower;

/// `report` (a JSON object) with the run's settings at its head: `seconds`, `seed`, `latency_ms`, `jitter_ms`,
/// `loss_pct`, `dup_pct` — every report of the bench writes them this one way.
pub fn with_run(run: &tumble_game::run_settings::RunSettings, mut report: serde_json::Value) -> serde_json::Value {
    if let (Some(out), serde_json::Value::Object(settings)) = (report.as_object_mut(), run.json()) {
        out.extend(settings);
    }
    report
}
