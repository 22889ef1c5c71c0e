//! `parallel-speed`: how much faster a step is on several threads than on one, same build, sleeping off, in
//! every phase of a scene.
//!
//! For each scene, the scene runs from the start for `--steps` steps on each thread count in turn, and this is
//! repeated `--rounds` times, each round starting at the next thread count (so a slow spell of a shared machine
//! falls on all alike). A run's figure for a phase is the median of its steps' times; a thread count's figure is
//! the median over its rounds; the speed-up is one thread's figure over its own. Every run of a scene must end
//! in the same state (checksum) whatever its threads, or this exits non-zero: the threads change who computes
//! what, never the result. The goal lines (`--threads 2` ≥ 1.7× on large_pyramid's steady phase on a 2-core
//! machine, `--threads 4` ≥ 3× where 4 cores are free) are reported with the machine's cores; timing itself is
//! never fatal.
//!
//! Writes `OUT/parallel-speed.md`; prints the figures as JSON on stdout (an object with one entry per scene);
//! logs go to stderr.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::Parser;
use serde_json::{json, Value};
use tumble_benches::{median, scenes_dir};
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;

/// The scenes measured when none is named: the big piles, and pyramid20, small enough to stay on one thread.
const DEFAULT_SCENES: [&str; 4] = ["large_pyramid", "topple900", "field900", "pyramid20"];
/// The goal lines: (threads, least speed-up) on large_pyramid's steady phase.
const GOALS: [(usize, f64); 2] = [(2, 1.7), (4, 3.0)];
const GOAL_SCENE: &str = "large_pyramid";

#[derive(Parser, Debug)]
#[command(about = "Tumble on several threads against one, sleeping off, per phase: medians of alternated runs")]
struct Args {
    /// Scenes (file stems under assets/scenes; repeatable). Default: large_pyramid, topple900, field900,
    /// pyramid20.
    #[arg(long = "scene", value_name = "NAME")]
    scenes: Vec<String>,
    /// Thread counts, comma-separated; 1 is always measured (the speed-ups are against it). Default: 2, and the
    /// machine's cores where that is more.
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Steps per run.
    #[arg(long, default_value_t = 300)]
    steps: u32,
    /// Runs per thread count and scene, alternated.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// The first phase, contacts forming: steps 1 to this.
    #[arg(long, default_value_t = 60)]
    forming_steps: u32,
    /// The steady phase: the steps after this one, to the end of the run.
    #[arg(long, default_value_t = 240)]
    steady_from: u32,
    /// Output folder for parallel-speed.md.
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("target").join("bench-report"))]
    out: PathBuf,
}

fn main() -> ExitCode {
    tumble_benches::init_logging();
    match real_main() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            tracing::error!("{}", tumble_benches::error_text(&e));
            ExitCode::FAILURE
        }
    }
}

/// One run: its steps' times (ms) and the checksum it ended with.
fn run(scene: &tumble_engine::scene::Scene, threads: usize, steps: u32) -> Result<(Vec<f64>, u64)> {
    let mut world = scene
        .build_world(WorldConfig {
            sleep: false,
            ..WorldConfig::default()
        })
        .with_context(|| format!("building {}", scene.name))?;
    world.set_threads(threads);
    let mut times = Vec::with_capacity(steps as usize);
    for _ in 0..steps {
        let start = Instant::now();
        world.step();
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok((times, world.checksum()))
}

/// The median of steps `from+1..=to` (1-based) of a run, or `None` when it has none of them.
fn phase(times: &[f64], from: u32, to: u32) -> Option<f64> {
    let (from, to) = (from as usize, (to as usize).min(times.len()));
    (from < to).then(|| median(&times[from..to]))
}

fn real_main() -> Result<bool> {
    let args = Args::parse();
    ensure!(
        args.rounds >= 1 && args.steps >= 1,
        "--rounds and --steps must be at least 1"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = vec![1usize];
    let asked = if args.threads.is_empty() {
        vec![2, cores]
    } else {
        args.threads.clone()
    };
    for t in asked {
        ensure!((1..=64).contains(&t), "--threads takes 1 to 64, not {t}");
        if !threads.contains(&t) {
            threads.push(t);
        }
    }
    let scenes: Vec<String> = if args.scenes.is_empty() {
        DEFAULT_SCENES.iter().map(|s| s.to_string()).collect()
    } else {
        args.scenes.clone()
    };
    let phases = [
        ("whole", 0, args.steps),
        ("forming", 0, args.forming_steps),
        ("steady", args.steady_from, args.steps),
    ];
    let mut same_bits = true;
    let mut out = serde_json::Map::new();
    let mut md = String::new();
    writeln!(
        md,
        "# Parallel step: speed-up against one thread\n\n{cores} cores ({}), sleeping off, {} steps, {} rounds \
         alternated; phases: forming = steps 1–{}, steady = steps {}–{}. ms per step are medians of each run's \
         steps, then over rounds; the speed-up is one thread's ms over N threads' ms.\n",
        cpu_model(),
        args.steps,
        args.rounds,
        args.forming_steps,
        args.steady_from + 1,
        args.steps
    )?;
    writeln!(
        md,
        "| scene | threads | whole ms | forming ms | steady ms | speed-up whole | forming | steady | same bits |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|---|")?;
    for name in &scenes {
        let path = scenes_dir().join(format!("{name}.toml"));
        let scene = load_scene(&path)?;
        // Per thread count: per round, each phase's median; and every checksum.
        let mut figures = vec![vec![Vec::new(); phases.len()]; threads.len()];
        let mut sums = Vec::new();
        for round in 0..args.rounds as usize {
            for k in 0..threads.len() {
                let t = (k + round) % threads.len();
                let (times, sum) = run(&scene, threads[t], args.steps)?;
                for (p, &(_, from, to)) in phases.iter().enumerate() {
                    if let Some(ms) = phase(&times, from, to) {
                        figures[t][p].push(ms);
                    }
                }
                sums.push(sum);
            }
            tracing::info!(scene = %name, round = round + 1, "round done");
        }
        let scene_same = sums.iter().all(|&s| s == sums[0]);
        same_bits &= scene_same;
        let ms = |t: usize, p: usize| (!figures[t][p].is_empty()).then(|| median(&figures[t][p]));
        let mut per_threads = Vec::new();
        for (t, &n) in threads.iter().enumerate() {
            let mut entry = serde_json::Map::new();
            entry.insert("threads".into(), json!(n));
            let mut row = format!("| {name} | {n} |");
            let mut ups = String::new();
            for (p, &(phase_name, _, _)) in phases.iter().enumerate() {
                let (mine, one) = (ms(t, p), ms(0, p));
                let up = match (one, mine) {
                    (Some(one), Some(mine)) if mine > 0.0 => Some(one / mine),
                    _ => None,
                };
                entry.insert(format!("{phase_name}_ms_per_step"), json!(mine));
                entry.insert(format!("{phase_name}_speedup"), json!(up));
                write!(row, " {} |", mine.map_or("—".into(), |v| format!("{v:.3}")))?;
                write!(ups, " {} |", up.map_or("—".into(), |v| format!("{v:.2}")))?;
                if name == GOAL_SCENE && phase_name == "steady" {
                    if let Some(&(_, line)) = GOALS.iter().find(|(g, _)| *g == n) {
                        entry.insert("goal_speedup".into(), json!(line));
                        // A goal for more threads than cores cannot be met here: not applicable.
                        let holds = (n <= cores).then(|| up.is_some_and(|u| u >= line));
                        entry.insert("goal_holds".into(), json!(holds));
                    }
                }
            }
            writeln!(md, "{row}{ups} {} |", if scene_same { "yes" } else { "**no**" })?;
            per_threads.push(Value::Object(entry));
        }
        out.insert(
            name.clone(),
            json!({
                "checksum": format!("{:016x}", sums[0]),
                "same_bits": scene_same,
                "by_threads": per_threads,
            }),
        );
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let path = args.out.join("parallel-speed.md");
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    tracing::info!(path = %path.display(), "wrote");
    println!(
        "{}",
        json!({ "cores": cores, "cpu": cpu_model(), "steps": args.steps, "rounds": args.rounds, "scenes": out })
    );
    if !same_bits {
        tracing::error!("a scene ended in different states on different thread counts");
    }
    Ok(same_bits)
}

/// The CPU's model name as Linux reports it, or "unknown".
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}
