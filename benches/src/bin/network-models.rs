//! The network models side by side for `make bench` (issue 14): the cube game on one scene played by the same
//! seeded bots over each model of `tumble compare` — lockstep, snapshots, predict, authority — on the same link
//! (100 ms round trip ±10 ms by default) at several loss rates. Writes `network-models.md` (a row per model and
//! loss: kbps, each side's input to screen, how late each side sees the other, hitches, corrections, desyncs,
//! identity, CPU) and `network-models.png` (kbps and the four delays against loss, a line per model) into the
//! output folder, and prints one JSON object on stdout. Player 1 is the host (the server), player 2 the guest.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::{json, Value};
use tumble_benches::line_chart::{self, Panel, Series};
use tumble_harness::compare::{run_cli, CompareArgs};

const MODELS: [&str; 5] = ["lockstep", "snapshots", "predict", "state-sync", "authority"];

#[derive(Parser, Debug)]
#[command(about = "The network models of tumble compare against loss (JSON on stdout)")]
struct Args {
    #[arg(long, default_value = "assets/scenes/cubes900.toml")]
    scene: PathBuf,
    /// Simulated seconds per run
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// One-way latency (ms): 50 is a 100 ms round trip
    #[arg(long, default_value_t = 50.0)]
    latency_ms: f64,
    #[arg(long, default_value_t = 10.0)]
    jitter_ms: f64,
    /// Loss rates to run (percent, each direction)
    #[arg(long, value_delimiter = ',', default_value = "0,5,10,25")]
    loss_pct: Vec<f64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for network-models.md and network-models.png
    #[arg(long, default_value = "target/bench-report")]
    out: PathBuf,
}

/// `tumble compare`'s flags, parsed as the command line would be (new flags keep their defaults).
#[derive(Parser, Debug)]
struct CompareLine {
    #[command(flatten)]
    args: CompareArgs,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("network-models: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One model at one loss rate: its JSON object.
fn run_one(args: &Args, model: &str, loss: f64) -> Result<Value> {
    let line = [
        "compare".to_string(),
        format!("--model={model}"),
        format!("--scene={}", args.scene.display()),
        format!("--seconds={}", args.seconds),
        format!("--latency-ms={}", args.latency_ms),
        format!("--jitter-ms={}", args.jitter_ms),
        format!("--loss-pct={loss}"),
        format!("--seed={}", args.seed),
    ];
    let compare = CompareLine::try_parse_from(&line).with_context(|| format!("flags {line:?}"))?;
    run_cli(&compare.args).with_context(|| format!("{model} at {loss} % loss"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// A table cell: the figure with `decimals` decimals, or "—" where the model reports null (the quantity does not
/// apply to it).
fn cell(v: &Value, key: &str, decimals: usize) -> String {
    match &v[key] {
        Value::Null => "—".to_string(),
        Value::Number(n) if n.is_f64() => format!("{:.*}", decimals, n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

fn run(args: &Args) -> Result<()> {
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut runs = Vec::new();
    for model in MODELS {
        for &loss in &args.loss_pct {
            progress(model, loss);
            runs.push(run_one(args, model, loss)?);
        }
    }
    let mut md = format!(
        "# Network models side by side\n\nThe cube game on `{}`, the same seeded bots, {} s per run, {} ms round trip \
         ±{} ms, seed {}: `tumble compare --model M` (how each figure is measured: `game/harness/src/compare.rs`).\n\n\
         Delays (ms, mean): each player's own input to its screen, and how late each sees the other (from the other \
         deciding an input to a frame here that carries it); player 1 hosts (or serves).\n\n\
         | model | loss % | kbps (larger direction) | host input to screen | guest input to screen | host sees guest | \
         guest sees host | hitch frames | corrections | largest correction m | desyncs | bit-identical | CPU ms/step |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n",
        args.scene.display(),
        args.seconds,
        2.0 * args.latency_ms,
        args.jitter_ms,
        args.seed
    );
    for r in &runs {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r["model"].as_str().unwrap_or("?"),
            num(r, "loss_pct"),
            cell(r, "kbps_mean", 1),
            cell(r, "host_input_to_screen_ms", 0),
            cell(r, "guest_input_to_screen_ms", 0),
            cell(r, "host_sees_guest_ms", 0),
            cell(r, "guest_sees_host_ms", 0),
            cell(r, "hitch_frames", 0),
            cell(r, "corrections", 0),
            cell(r, "correction_max_m", 3),
            cell(r, "desyncs", 0),
            cell(r, "bit_identical_at_end", 0),
            cell(r, "cpu_ms_per_step", 3),
        );
    }
    let panel = |title: &str, y_desc: &str, key: &str| Panel {
        title: title.into(),
        y_desc: y_desc.into(),
        series: MODELS
            .iter()
            .map(|&m| Series {
                name: m.into(),
                points: runs
                    .iter()
                    .filter(|r| r["model"] == m)
                    .map(|r| (num(r, "loss_pct"), num(r, key)))
                    .filter(|p| p.1.is_finite())
                    .collect(),
                points_only: false,
            })
            .collect(),
    };
    let panels = [
        panel("Bandwidth", "kbps, the larger direction", "kbps_mean"),
        panel(
            "Host: input to screen",
            "ms, player 1's own input",
            "host_input_to_screen_ms",
        ),
        panel(
            "Guest: input to screen",
            "ms, player 2's own input",
            "guest_input_to_screen_ms",
        ),
        panel(
            "Host sees guest",
            "ms, player 2 on player 1's screen",
            "host_sees_guest_ms",
        ),
        panel(
            "Guest sees host",
            "ms, player 1 on player 2's screen",
            "guest_sees_host_ms",
        ),
    ];
    let png = args.out.join("network-models.png");
    line_chart::write_png(&png, &panels, "loss, each direction (%)")?;
    let _ = writeln!(md, "\n![kbps and delay against loss, per model](network-models.png)");
    let md_path = args.out.join("network-models.md");
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    println!(
        "{}",
        json!({
            "scene": args.scene.display().to_string(),
            "seconds": args.seconds,
            "latency_ms": args.latency_ms,
            "jitter_ms": args.jitter_ms,
            "seed": args.seed,
            "runs": runs,
        })
    );
    eprintln!("network-models: wrote {} and {}", md_path.display(), png.display());
    Ok(())
}

/// One line on stderr per run: these take seconds to minutes each.
fn progress(model: &str, loss: f64) {
    eprintln!("network-models: {model} at {loss} % loss");
}
