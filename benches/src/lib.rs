//! The physics regression suite, shared by the `physics-regress` and `bench-report` binaries.
//!
//! - [`runner`]: one scene through one engine for N steps, timed per step, with the stability numbers every run
//!   reports ([`RunResult`]); engine-agnostic through the small [`runner::Simulation`] trait.
//! - [`tumble_sim`]: Tumble's [`World`](tumble_engine::physics::World) behind that trait, with the optional
//!   quantize round trip before every step (what state sync does to every cube).
//! - [`rapier_sim`]: the same scene in Rapier, matched as closely as Rapier allows, as the reference (with its
//!   defaults, or held to Tumble's iteration budget: `--engine rapier-budget`).
//! - `jolt_sim` (cargo feature `jolt`): the same scene in Jolt Physics 5.6.0 through `oxijolt-sys` (`--engine jolt`).
//! - [`baseline`]: `benches/baseline.json`, and what counts as a regression against it.
//! - [`report`]: the Markdown table for `bench-report`; [`chart`]: its ms/step bar chart (PNG); [`line_chart`]:
//!   line charts side by side (`network-models`: kbps and delay against loss, a line per model; `motion-cost`:
//!   ms per step against awake bodies, as points).
//!
//! Timing covers `step()` only: quantization, state reads and contact inspection happen outside the timed region.

pub mod baseline;
pub mod chart;
#[cfg(feature = "jolt")]
pub mod jolt_sim;
pub mod line_chart;
pub mod rapier_sim;
pub mod report;
pub mod runner;
pub mod tumble_sim;

pub use runner::{median, run_scene_file, state_checksum, EngineKind, RunOptions, RunResult};

use std::path::PathBuf;

/// Logs through `tracing` to stderr (filter from `RUST_LOG`, else `info`), so stdout carries only JSON.
pub fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// What the machine was doing: the CPU model (from `/proc/cpuinfo`), its logical CPUs and the 1-minute load average
/// now (from `/proc/loadavg`); `None` for what this system does not say.
pub fn machine_now() -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()));
    let cpus = std::thread::available_parallelism().ok().map(|n| n.get());
    serde_json::json!({ "cpu": cpu, "logical_cpus": cpus, "load_average_1min": load })
}

/// Which Jolt this binary runs and how it was built (`jolt_sim::jolt_build`), for a report's JSON; null in a
/// build without the `jolt` feature.
pub fn jolt_build_json() -> serde_json::Value {
    #[cfg(feature = "jolt")]
    {
        serde_json::to_value(jolt_sim::jolt_build()).unwrap_or(serde_json::Value::Null)
    }
    #[cfg(not(feature = "jolt"))]
    {
        serde_json::Value::Null
    }
}

/// The same as one sentence for a report's text ("Jolt: not built" without the feature).
pub fn jolt_build_line() -> String {
    #[cfg(feature = "jolt")]
    {
        let b = jolt_sim::jolt_build();
        format!(
            "Jolt {}: {}; built {}.",
            b.version
                .unwrap_or("(version unknown: the build manifest was not read)"),
            b.source,
            b.build
        )
    }
    #[cfg(not(feature = "jolt"))]
    {
        "Jolt: not built (`--features jolt`).".to_string()
    }
}

/// An error and its causes on one line, skipping a cause whose text its parent already quotes (many typed errors,
/// the scene loader's among them, include their source in their own message).
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

/// The workspace root (the folder holding the workspace `Cargo.toml`), found from this crate's manifest folder.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Where the shipped scenes live: `assets/scenes/` under the workspace root.
pub fn scenes_dir() -> PathBuf {
    workspace_root().join("assets").join("scenes")
}
