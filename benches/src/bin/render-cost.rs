//! The renderer at headset scale (issue 33): `tumble render-bench` at 2 × 1032×1104 with 4× MSAA on a pile of 4,000
//! cubes — still (the shadow map kept) and turning every frame (drawn every frame), with no output, with the
//! copy into XR swapchain images and resolved straight into them (what `tumble vr` does) — and the desktop's 1280×720 mono, one sample. GPU time per pass (p50 over the
//! frames), CPU record+submit and fragments per pixel; a JSON array on stdout and `render.md` in the output folder.
//! Absolute times are this machine's (lavapipe draws on the CPU): compare runs on one machine.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use tumble_game::render_bench::{run, OutputArg, RenderBenchArgs};

#[derive(Parser, Debug)]
#[command(about = "tumble render-bench at headset size, still and moving: GPU ms per pass (JSON on stdout)")]
struct Args {
    /// Folder for render.md
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("target").join("bench-report"))]
    out: PathBuf,
    /// Frames measured per configuration
    #[arg(long, default_value_t = 10)]
    frames: u32,
    /// Per-eye size
    #[arg(long, default_value_t = 1032)]
    width: u32,
    #[arg(long, default_value_t = 1104)]
    height: u32,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let headset = |moving: bool, output: OutputArg| RenderBenchArgs {
        width: args.width,
        height: args.height,
        views: 2,
        msaa: "4".into(),
        cubes: 4000,
        scene: None,
        frames: args.frames,
        warmup: 2,
        output,
        moving,
        json: true,
    };
    let desktop = RenderBenchArgs {
        width: 1280,
        height: 720,
        views: 1,
        msaa: "1".into(),
        ..headset(true, OutputArg::None)
    };
    let runs = [
        ("stereo 4x MSAA, still", headset(false, OutputArg::None)),
        ("stereo 4x MSAA, moving", headset(true, OutputArg::None)),
        ("stereo 4x MSAA, moving, XR copy", headset(true, OutputArg::XrCopy)),
        (
            "stereo 4x MSAA, moving, XR resolve",
            headset(true, OutputArg::XrResolve),
        ),
        ("desktop 1280x720 mono, moving", desktop),
    ];
    let mut reports = Vec::new();
    let mut md = String::from(
        "| run | shadow ms | main ms | output ms | total ms | CPU record+submit µs (p50 / p99) | fragments per pixel |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (name, bench) in &runs {
        let report = run(bench).with_context(|| format!("render-bench: {name}"))?;
        let value = serde_json::to_value(&report)?;
        let ms = |pass: &str| {
            value["gpu_ms"][pass]["p50"]
                .as_f64()
                .map_or("—".to_string(), |v| format!("{v:.1}"))
        };
        let per_pixel = value["pipeline_statistics"]["main_fragments_per_pixel"]
            .as_f64()
            .map_or("—".to_string(), |v| format!("{v:.1}"));
        writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {:.0} / {:.0} | {per_pixel} |",
            ms("shadow"),
            ms("main"),
            ms("output"),
            ms("total"),
            report.cpu_record_submit_us_p50,
            report.cpu_record_submit_us_p99,
        )?;
        reports.push(serde_json::json!({ "run": name, "report": value }));
    }
    if let Some(first) = reports.first() {
        let r = &first["report"];
        writeln!(
            md,
            "\n{} ({}), {} cubes, {} frames each.",
            r["device"], r["driver"], r["cubes"], r["frames"]
        )?;
    }
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("render.md"), &md)?;
    eprint!("{md}");
    println!("{}", serde_json::to_string(&reports)?);
    Ok(())
}
