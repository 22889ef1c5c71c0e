//! `engine-speed`: how much faster Tumble is than the other engines, sleeping off, measured fairly.
//!
//! For each scene, every engine runs the scene from the start for `--steps` steps, one engine after the other, and
//! this is repeated `--rounds` times (so a slow spell of a shared machine falls on all engines alike); each run's
//! ms/step is the median of its steps, and an engine's figure is the median over its rounds. Engines: Tumble,
//! Rapier with its defaults, Rapier held to Tumble's iteration budget (`rapier-budget`), and Jolt when built with
//! the `jolt` feature. The ratios are the other engine's ms/step over Tumble's (above 1: Tumble is faster); the
//! goal line is ≥ 2 against the faster of Rapier (defaults) and Jolt. Every round of an engine must end in the same
//! state (checksum): a rerun gives the same bits, or this exits non-zero. Timing itself is never fatal.
//!
//! Writes `OUT/engine-speed.md`; prints the figures as JSON on stdout.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::json;
use tumble_benches::runner::{run_scene, EngineKind, RunOptions};
use tumble_benches::{median, scenes_dir};
use tumble_engine::scene::load_scene;

/// The scenes the speed goal names.
const DEFAULT_SCENES: [&str; 3] = ["pyramid20", "field900", "large_pyramid"];
/// Tumble must be at least this many times faster than the faster of the others.
const GOAL_RATIO: f64 = 2.0;

#[derive(Parser, Debug)]
#[command(about = "Tumble against Rapier (and Jolt) with sleeping off: medians of alternated runs")]
struct Args {
    /// Scenes (file stems under assets/scenes; repeatable). Default: pyramid20, field900, large_pyramid.
    #[arg(long = "scene", value_name = "NAME")]
    scenes: Vec<String>,
    /// Steps per run.
    #[arg(long, default_value_t = 300)]
    steps: u32,
    /// Runs per engine and scene, alternated.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Output folder for engine-speed.md.
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("target").join("bench-report"))]
    out: PathBuf,
}

fn main() -> ExitCode {
    match real_main() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {}", tumble_benches::error_text(&e));
            ExitCode::FAILURE
        }
    }
}

struct EngineFigures {
    engine: EngineKind,
    ms: Vec<f64>,
    checksums: Vec<String>,
}

fn real_main() -> Result<bool> {
    let args = Args::parse();
    let scenes: Vec<String> = if args.scenes.is_empty() {
        DEFAULT_SCENES.iter().map(|s| s.to_string()).collect()
    } else {
        args.scenes.clone()
    };
    let engines: Vec<EngineKind> = [
        EngineKind::Tumble,
        EngineKind::Rapier,
        EngineKind::RapierBudget,
        EngineKind::Jolt,
    ]
    .into_iter()
    .filter(|e| e.available())
    .collect();
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; timings mean little (use cargo run --release)");
    }
    let mut md = String::from("# Engine speed, sleeping off\n\n");
    let _ = writeln!(
        md,
        "{} steps per run, {} rounds alternated, medians (ms per step: the median step of a run, then the median \
         over rounds); one thread each; {}. Ratio: the engine's ms/step over Tumble's (above 1: Tumble is faster). \
         rapier-budget: Rapier held to Tumble's iteration budget (one solver iteration of 4 velocity and 2 \
         stabilization passes).{}\n",
        args.steps,
        args.rounds,
        if cfg!(debug_assertions) {
            "debug build"
        } else {
            "release build"
        },
        if EngineKind::Jolt.available() {
            ""
        } else {
            " Jolt: not built (`--features jolt`)."
        }
    );
    md.push_str("| scene | engine | ms/step | ratio to Tumble | same bits every round |\n|---|---|---:|---:|---|\n");
    let mut all_same = true;
    let mut out = Vec::new();
    for name in &scenes {
        let path = scenes_dir().join(format!("{name}.toml"));
        let scene = load_scene(&path).with_context(|| format!("loading {}", path.display()))?;
        let mut figures: Vec<EngineFigures> = engines
            .iter()
            .map(|&engine| EngineFigures {
                engine,
                ms: Vec::new(),
                checksums: Vec::new(),
            })
            .collect();
        for round in 0..args.rounds {
            for f in &mut figures {
                let opts = RunOptions {
                    engine: f.engine,
                    steps: args.steps,
                    quantize: false,
                    sleep: false,
                };
                let r = run_scene(&scene, &opts).with_context(|| format!("{name} on {}", f.engine))?;
                eprintln!(
                    "{name:<14} round {round} {:<14} {:>9.4} ms/step",
                    f.engine.name(),
                    r.ms_per_step
                );
                f.ms.push(r.ms_per_step);
                f.checksums.push(r.checksum);
            }
        }
        let tumble_ms = median(&figures[0].ms);
        let mut row = serde_json::Map::new();
        row.insert("scene".into(), json!(name));
        let mut faster_other = f64::INFINITY;
        for f in &figures {
            let ms = median(&f.ms);
            let same = f.checksums.iter().all(|c| *c == f.checksums[0]);
            all_same &= same;
            let ratio = ms / tumble_ms;
            if matches!(f.engine, EngineKind::Rapier | EngineKind::Jolt) {
                faster_other = faster_other.min(ms);
            }
            let _ = writeln!(
                md,
                "| {name} | {} | {ms:.4} | {} | {} |",
                f.engine.name(),
                if f.engine == EngineKind::Tumble {
                    "—".to_string()
                } else {
                    format!("{ratio:.2}")
                },
                if same { "yes" } else { "**no**" }
            );
            row.insert(
                f.engine.name().to_string(),
                json!({ "ms_per_step": ms, "ratio_to_tumble": ratio, "same_bits": same, "checksum": f.checksums[0] }),
            );
        }
        let goal = faster_other / tumble_ms;
        let _ = writeln!(
            md,
            "| {name} | **faster of Rapier and Jolt** | {faster_other:.4} | **{goal:.2}** ({}) | |",
            if goal >= GOAL_RATIO {
                "≥ 2: holds"
            } else {
                "< 2: fails"
            }
        );
        row.insert("goal_ratio".into(), json!(goal));
        row.insert("goal_holds".into(), json!(goal >= GOAL_RATIO));
        out.push(serde_json::Value::Object(row));
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let path = args.out.join("engine-speed.md");
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    println!("{}", serde_json::to_string_pretty(&out)?);
    if !all_same {
        eprintln!("error: an engine ended a rerun of a scene in a different state");
    }
    Ok(all_same)
}
