//! The state-sync bandwidth table for `make bench`: the loopback run the sync issue sets (table64, a throw every
//! 2 s, 50 ms each way with ±5 ms jitter, 60 s) at 5 % and at 25 % loss, each recorded and priced stage by stage
//! (`tumble_game::sync::bandwidth`). Prints one JSON object on stdout and writes `bandwidth.md` into the output folder.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use tumble_game::run_settings::RunSettings;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::json;
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;
use tumble_harness::bandwidth::{stage_costs, stage_costs_json, Recording, StageCost};
use tumble_harness::loopback::{run_loopback_recorded, LoopbackConfig, LoopbackReport};

#[derive(Parser, Debug)]
#[command(about = "State-sync bandwidth per encoding stage on a recorded loopback run (JSON on stdout)")]
struct Args {
    /// Scene file
    #[arg(long, default_value = "assets/scenes/table64.toml")]
    scene: PathBuf,
    /// Simulated seconds per run
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Loss rates to run (percent, each direction)
    #[arg(long, value_delimiter = ',', default_value = "5,25")]
    loss_pct: Vec<f64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for bandwidth.md
    #[arg(long, default_value = "target/bench-report")]
    out: PathBuf,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sync-bandwidth: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let scene = load_scene(&args.scene)?;
    let mut runs = Vec::new();
    let mut md = String::from("# State sync: bandwidth per encoding stage\n\n");
    for &loss in &args.loss_pct {
        let config = LoopbackConfig {
            run: RunSettings {
                seed: args.seed,
                ..RunSettings::link(args.seconds, 50.0, 5.0, loss)
            },
            throw_every_s: Some(2.0),
            ..LoopbackConfig::default()
        };
        let mut recording = Recording::default();
        let report = run_loopback_recorded(
            &config,
            scene.build_world(WorldConfig::default())?,
            scene.build_world(WorldConfig::default())?,
            Some(&mut recording),
        )?;
        let costs = stage_costs(&recording);
        write_table(&mut md, &args.scene, &config, &report, &costs);
        runs.push(json!({
            "loss_pct": loss,
            "stages": stage_costs_json(&costs),
            "loopback": report.to_json(),
        }));
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let md_path = args.out.join("bandwidth.md");
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    eprint!("{md}");
    eprintln!("written: {}", md_path.display());
    println!(
        "{}",
        json!({ "scene": args.scene, "seconds": args.seconds, "runs": runs })
    );
    Ok(())
}

fn write_table(md: &mut String, scene: &std::path::Path, c: &LoopbackConfig, r: &LoopbackReport, costs: &[StageCost]) {
    let _ = writeln!(
        md,
        "## {}, {} s, throw every {} s, {} ms ± {} ms each way, {} % loss\n",
        scene.display(),
        c.run.seconds,
        c.throw_every_s.unwrap_or(0.0),
        c.run.link.latency_ms,
        c.run.link.jitter_ms,
        c.run.link.loss_pct
    );
    let _ = writeln!(
        md,
        "The same recorded run priced with each stage switched on in turn (IP/UDP and transport headers counted).\n"
    );
    let _ = writeln!(md, "| stage | kbps | datagrams | body bits per update | vs. previous |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    let mut previous: Option<f64> = None;
    for s in costs {
        let change = previous.map_or(String::from("—"), |p| format!("{:.0} %", 100.0 * (s.kbps / p - 1.0)));
        let _ = writeln!(
            md,
            "| {} | {:.1} | {} | {:.1} | {} |",
            s.stage, s.kbps, s.datagrams, s.bits_per_update, change
        );
        previous = Some(s.kbps);
    }
    let updates: u64 = r.updates_by_encoding.iter().sum();
    let free: u64 = r.free_flight_updates_by_encoding.iter().sum();
    let predicted = r.free_flight_updates_by_encoding[1];
    let _ = writeln!(
        md,
        "\nRun: bit-identical at end {}, remote rest jitter {} m, converged {} s after the last throw, {} updates \
         ({:.1} per packet), {} packets lost; cubes in free flight sent as predicted: {}/{} ({:.1} %).\n",
        r.bit_identical_at_end,
        r.remote_rest_jitter_m,
        r.seconds_to_converge
            .map_or(String::from("never"), |s| format!("{s:.2}")),
        updates,
        updates as f64 / r.packets_sent.max(1) as f64,
        r.packets_lost,
        predicted,
        free,
        100.0 * predicted as f64 / free.max(1) as f64
    );
}
