//! Runs every shipped scene on both engines (in process), compares Tumble with `benches/baseline.json`, and writes
//! `target/bench-report/report.md` and `target/bench-report/ms_per_step.png`.
//!
//! Tumble runs every scene twice: a rerun that ends in another state (checksum) than the first run is a regression.
//!
//! Exit status: non-zero when a run failed, a rerun of Tumble's differed, or Tumble's stability regressed against the
//! baseline; slower timings are only flagged (shared machines are noisy). `--json` prints the table as a JSON array on stdout.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use tumble_benches::baseline::{self, BaselineEntry, Finding, FindingKind};
use tumble_benches::chart::{self, SceneBars};
use tumble_benches::report::{self, ReportRow};
use tumble_benches::runner::{run_scene, EngineKind, RunOptions};
use tumble_engine::scene::load_scene;

/// Steps per run unless told otherwise (6.7 s of simulated time at 90 Hz: enough for every stack to settle).
const DEFAULT_REPORT_STEPS: u32 = 600;

/// Shipped scenes in the order the report lists them (small to large); any other scene file follows, by name.
const SCENE_ORDER: [&str; 6] = ["tower30", "pyramid20", "table64", "smash", "field900", "large_pyramid"];

#[derive(Parser, Debug)]
#[command(about = "Run every shipped scene on Tumble and Rapier; write a Markdown report and a ms/step chart")]
struct Args {
    /// Steps per run.
    #[arg(long, default_value_t = DEFAULT_REPORT_STEPS)]
    steps: u32,
    /// Steps for one scene, overriding --steps (repeatable): --steps-for large_pyramid=300.
    #[arg(long, value_name = "SCENE=N", value_parser = parse_steps_for)]
    steps_for: Vec<(String, u32)>,
    /// Only these scenes (file stems; repeatable). Default: every *.toml in the scenes folder.
    #[arg(long = "scene", value_name = "NAME")]
    scenes: Vec<String>,
    /// Only these engines (repeatable). Default: both.
    #[arg(long = "engine", value_enum)]
    engines: Vec<EngineKind>,
    /// Turn rest detection / sleeping off for every run.
    #[arg(long)]
    no_sleep: bool,
    /// Folder of scene files.
    #[arg(long, default_value_os_t = tumble_benches::scenes_dir())]
    scenes_dir: PathBuf,
    /// Output folder for report.md, report.json and ms_per_step.png.
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("target").join("bench-report"))]
    out: PathBuf,
    /// Baseline to compare Tumble's runs with.
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("benches").join("baseline.json"))]
    baseline: PathBuf,
    /// Write this run's Tumble results into the baseline (for the scenes run) instead of failing on regressions.
    #[arg(long)]
    write_baseline: bool,
    /// Print the table as a JSON array on stdout.
    #[arg(long)]
    json: bool,
}

fn parse_steps_for(s: &str) -> Result<(String, u32), String> {
    let (name, n) = s
        .split_once('=')
        .ok_or_else(|| format!("expected SCENE=N, got {s:?}"))?;
    let n = n
        .trim()
        .parse::<u32>()
        .map_err(|e| format!("bad step count in {s:?}: {e}"))?;
    Ok((name.trim().to_string(), n))
}

/// The scene files to run, in report order.
fn scene_files(dir: &Path, only: &[String]) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading scene folder {}", dir.display()))?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
    let stem = |p: &PathBuf| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if !only.is_empty() {
        for name in only {
            if !files.iter().any(|f| stem(f) == *name) {
                bail!("no scene {name:?} in {}", dir.display());
            }
        }
        files.retain(|f| only.contains(&stem(f)));
    }
    let rank = |p: &PathBuf| {
        SCENE_ORDER
            .iter()
            .position(|s| *s == stem(p))
            .unwrap_or(SCENE_ORDER.len())
    };
    files.sort_by_key(|p| (rank(p), stem(p)));
    if files.is_empty() {
        bail!("no scene files (*.toml) in {}", dir.display());
    }
    Ok(files)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked".to_string()
    }
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", tumble_benches::error_text(&e));
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<ExitCode> {
    let args = Args::parse();
    let engines = if args.engines.is_empty() {
        vec![EngineKind::Tumble, EngineKind::Rapier]
    } else {
        args.engines.clone()
    };
    let overrides: BTreeMap<String, u32> = args.steps_for.iter().cloned().collect();
    let files = scene_files(&args.scenes_dir, &args.scenes)?;
    let mut base = baseline::load(&args.baseline)?;
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; timings mean little (use cargo run --release)");
    }

    let mut rows: Vec<ReportRow> = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    for file in &files {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let steps = overrides.get(&stem).copied().unwrap_or(args.steps);
        let scene = match load_scene(file) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("loading {}: {e}", file.display());
                eprintln!("error: {msg}");
                for &engine in &engines {
                    rows.push(ReportRow {
                        scene: stem.clone(),
                        engine,
                        outcome: Err(msg.clone()),
                    });
                }
                continue;
            }
        };
        for &engine in &engines {
            let opts = RunOptions {
                engine,
                steps,
                quantize: false,
                sleep: !args.no_sleep,
            };
            let t0 = Instant::now();
            let outcome = match catch_unwind(AssertUnwindSafe(|| run_scene(&scene, &opts))) {
                Ok(Ok(r)) => Ok(r),
                Ok(Err(e)) => Err(tumble_benches::error_text(&e)),
                Err(p) => Err(format!("panicked: {}", panic_message(p.as_ref()))),
            };
            match &outcome {
                Ok(r) => eprintln!(
                    "{:<14} {:<6} {:>5} bodies {:>9.4} ms/step  settle {:>5}  disp {:.4} m  pen {:.4} m  overlap {:.4} m  ({:.1} s)",
                    r.scene,
                    engine,
                    r.bodies,
                    r.ms_per_step,
                    r.settle_step.map_or("never".into(), |s| s.to_string()),
                    r.max_displacement_m,
                    r.max_penetration_m,
                    r.max_overlap_m,
                    t0.elapsed().as_secs_f64()
                ),
                Err(e) => eprintln!("{:<14} {:<6} FAILED: {e}", scene.name, engine),
            }
            // Same bits on a rerun: Tumble runs every scene twice (the first run is the one reported).
            if let (EngineKind::Tumble, Ok(first)) = (engine, &outcome) {
                match run_scene(&scene, &opts) {
                    Ok(rerun) => findings.extend(baseline::compare_rerun(first, &rerun)),
                    Err(e) => findings.push(Finding {
                        scene: first.scene.clone(),
                        kind: FindingKind::Stability,
                        message: format!("the rerun failed: {}", tumble_benches::error_text(&e)),
                    }),
                }
            }
            let name = outcome
                .as_ref()
                .map(|r| r.scene.clone())
                .unwrap_or_else(|_| scene.name.clone());
            rows.push(ReportRow {
                scene: name,
                engine,
                outcome,
            });
        }
    }

    for row in rows.iter().filter(|r| r.engine == EngineKind::Tumble) {
        if let Ok(r) = &row.outcome {
            findings.extend(baseline::compare(r, base.get(&r.scene)));
        }
    }
    for f in findings.iter().filter(|f| f.kind != FindingKind::Note) {
        let tag = if f.kind == FindingKind::Stability {
            "REGRESSION"
        } else {
            "slower"
        };
        eprintln!("{tag}: {}: {}", f.scene, f.message);
    }

    let header = vec![
        format!(
            "Steps per run: {}{}; sleep {}; {} build; {} logical CPUs.",
            args.steps,
            if overrides.is_empty() {
                String::new()
            } else {
                format!(
                    " (overrides: {})",
                    overrides
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            if args.no_sleep { "off" } else { "on" },
            if cfg!(debug_assertions) { "debug" } else { "release" },
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
        "ms/step: median wall time of one `step()`; Tumble/Rapier: Tumble's ms/step over Rapier's (below 1: Tumble \
         is faster). Rapier 0.36 runs single-threaded with default integration parameters (dt matched)."
            .to_string(),
        "settle step: first step after which every dynamic body is at rest (asleep); drift: largest movement after \
         it; penetration: deepest overlap at the start of any step, as the engine's contacts report it; overlap: deepest \
         overlap after any step, measured from the poses by the same code for both engines. Lengths in metres."
            .to_string(),
    ];
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let md = report::markdown(&rows, &findings, &header);
    let md_path = args.out.join("report.md");
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    let json = report::json_rows(&rows, &findings);
    let json_text = serde_json::to_string_pretty(&json)?;
    std::fs::write(args.out.join("report.json"), &json_text)?;

    let mut bars: Vec<SceneBars> = Vec::new();
    for row in &rows {
        let i = match bars.iter().position(|b| b.scene == row.scene) {
            Some(i) => i,
            None => {
                bars.push(SceneBars {
                    scene: row.scene.clone(),
                    tumble_ms: None,
                    rapier_ms: None,
                });
                bars.len() - 1
            }
        };
        let ms = row.outcome.as_ref().ok().map(|r| r.ms_per_step);
        match row.engine {
            EngineKind::Tumble => bars[i].tumble_ms = ms,
            EngineKind::Rapier => bars[i].rapier_ms = ms,
            EngineKind::RapierBudget | EngineKind::Jolt => {}
        }
    }
    let png_path = args.out.join("ms_per_step.png");
    let title = format!(
        "Median ms per step, {} steps, sleep {}",
        args.steps,
        if args.no_sleep { "off" } else { "on" }
    );
    chart::write_png(&png_path, &bars, &title)?;
    eprintln!("wrote {} and {}", md_path.display(), png_path.display());
    if args.json {
        println!("{json_text}");
    }

    let failed = rows.iter().filter(|r| r.outcome.is_err()).count();
    if args.write_baseline {
        for row in rows.iter().filter(|r| r.engine == EngineKind::Tumble) {
            if let Ok(r) = &row.outcome {
                base.insert(r.scene.clone(), BaselineEntry::from(r));
            }
        }
        baseline::save(&args.baseline, &base)?;
        eprintln!("wrote baseline {}", args.baseline.display());
    }
    let regressions = findings.iter().filter(|f| f.kind == FindingKind::Stability).count();
    if failed > 0 {
        eprintln!("{failed} run(s) failed");
    }
    if regressions > 0 && !args.write_baseline {
        eprintln!(
            "{regressions} stability regression(s) against {}",
            args.baseline.display()
        );
    }
    Ok(if failed > 0 || (regressions > 0 && !args.write_baseline) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
