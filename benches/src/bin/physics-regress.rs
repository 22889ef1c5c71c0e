//! Runs one scene through Tumble, Rapier (defaults or Tumble's iteration budget) or Jolt (with the `jolt` feature)
//! and reports timing and stability.
//!
//! `physics-regress --scene FILE [--steps N] [--engine tumble|rapier|rapier-budget|jolt] [--quantize] [--no-sleep] --json` prints one
//! JSON object on stdout (the fields of [`RunResult`]); without `--json` it prints the same numbers as text.
//! Errors (a bad scene file, `--quantize` with Rapier) go to stderr with a non-zero exit.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tumble_benches::runner::{EngineKind, RunOptions, RunResult, DEFAULT_STEPS};

#[derive(Parser, Debug)]
#[command(about = "Run one physics scene on Tumble or Rapier and report timing and stability")]
struct Args {
    /// Scene file (TOML), e.g. assets/scenes/tower30.toml.
    #[arg(long)]
    scene: PathBuf,
    /// Fixed steps to simulate.
    #[arg(long, default_value_t = DEFAULT_STEPS)]
    steps: u32,
    /// Which engine runs the scene.
    #[arg(long, value_enum, default_value_t = EngineKind::Tumble)]
    engine: EngineKind,
    /// Round-trip every body's state through the sync quantizer before every step (Tumble only).
    #[arg(long)]
    quantize: bool,
    /// Turn rest detection / sleeping off.
    #[arg(long)]
    no_sleep: bool,
    /// Print one JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

fn human(r: &RunResult) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "never".into());
    format!(
        "scene {} on {} ({} bodies, {} steps, sleep {}, quantize {})\n\
         ms/step (median)          {:.4}\n\
         ms total (steps only)     {:.1}\n\
         settle step               {}\n\
         max displacement          {:.4} m\n\
         max drift after settling  {}\n\
         max penetration           {:.4} m\n\
         max overlap               {:.4} m\n\
         checksum                  {}",
        r.scene,
        r.engine,
        r.bodies,
        r.steps,
        if r.sleep { "on" } else { "off" },
        if r.quantize { "on" } else { "off" },
        r.ms_per_step,
        r.ms_total,
        opt(r.settle_step.map(|s| s.to_string())),
        r.max_displacement_m,
        opt(r.max_drift_after_settle_m.map(|d| format!("{d:.4} m"))),
        r.max_penetration_m,
        r.max_overlap_m,
        r.checksum
    )
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = RunOptions {
        engine: args.engine,
        steps: args.steps,
        quantize: args.quantize,
        sleep: !args.no_sleep,
    };
    if opts.quantize && opts.engine != EngineKind::Tumble {
        eprintln!("error: --quantize is Tumble-only (it round-trips Tumble's body state through the sync quantizer)");
        return ExitCode::from(2);
    }
    match tumble_benches::run_scene_file(&args.scene, &opts) {
        Ok(result) => {
            let jolt = result.engine == EngineKind::Jolt;
            if args.json {
                // A Jolt run says which Jolt ran and how it was built.
                let value = serde_json::to_value(&result).map(|mut v| {
                    if jolt {
                        v["jolt_build"] = tumble_benches::jolt_build_json();
                    }
                    v
                });
                match value.and_then(|v| serde_json::to_string(&v)) {
                    Ok(text) => println!("{text}"),
                    Err(e) => {
                        eprintln!("error: serializing the result: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                println!("{}", human(&result));
                if jolt {
                    println!("{}", tumble_benches::jolt_build_line());
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", tumble_benches::error_text(&e));
            ExitCode::FAILURE
        }
    }
}
