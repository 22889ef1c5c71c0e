//! The tipping sweep for `make bench` (the cases and their physics are in `tumble_tests::tipping`): cubes on an
//! edge at 40°..50°, cubes overhanging a support by 40 %..60 %, staircase columns of 3 and 5 — each run free and
//! under state quantization. Writes `tipping.md` into the output folder, prints the table as one JSON object on
//! stdout (`make bench` keeps it as `tipping.json`), and exits non-zero when a case past balance stood or one
//! before it fell.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::{json, Value};
use tumble_tests::tipping::{self, TippingOutcome, TippingRow};

#[derive(Parser, Debug)]
#[command(about = "Tipping sweep: every case past balance falls, every case before it stands (JSON on stdout)")]
struct Args {
    /// Folder for tipping.md
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("target").join("bench-report"))]
    out: PathBuf,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("tipping-sweep: some cases did not do what physics says (see tipping.md)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("tipping-sweep: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn outcome_json(o: &TippingOutcome) -> Value {
    json!({
        "verdict": o.verdict.name(),
        "moved_m": o.distance_m,
        "turned_deg": o.turn_deg,
        "rested_at_step": o.rested_at,
    })
}

fn row_json(r: &TippingRow) -> Value {
    json!({
        "family": r.case.family.name(),
        "parameter": r.case.parameter,
        "parameter_name": r.case.family.parameter_name(),
        "expected": r.case.expect.name(),
        "free": outcome_json(&r.free),
        "quantized": outcome_json(&r.quantized),
        "pass": r.passed(),
    })
}

/// Runs the sweep and writes the files; true when every case passed.
fn run(args: &Args) -> Result<bool> {
    let rows = tipping::run_tipping_sweep();
    let passed = rows.iter().filter(|r| r.passed()).count();
    let report = json!({
        "steps_per_case": tipping::TIPPING_STEPS,
        "fell_if_moved_m_over": tipping::FELL_DISTANCE_M,
        "fell_if_turned_deg_over": tipping::FELL_TURN_DEG,
        "stood_if_moved_m_at_most": tipping::STOOD_DISTANCE_M,
        "stood_if_turned_deg_at_most": tipping::STOOD_TURN_DEG,
        "cases": rows.len(),
        "passed": passed,
        "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
    });
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let md = format!(
        "# Tipping sweep\n\n{passed} of {} cases passed. Fell: moved > {} m or turned > {}°; stood: moved ≤ {} m and \
         turned ≤ {}°, after {} steps.\n\n{}",
        rows.len(),
        tipping::FELL_DISTANCE_M,
        tipping::FELL_TURN_DEG,
        tipping::STOOD_DISTANCE_M,
        tipping::STOOD_TURN_DEG,
        tipping::TIPPING_STEPS,
        tipping::tipping_markdown(&rows)
    );
    let md_path = args.out.join("tipping.md");
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    eprintln!("tipping-sweep: {passed}/{} passed; {}", rows.len(), md_path.display());
    Ok(passed == rows.len())
}
