//! `engine-speed`: how much faster Tumble is than the other engines, sleeping off, measured fairly, in every phase
//! of a scene.
//!
//! For each scene, every engine runs the scene from the start for `--steps` steps, one engine after the other, and
//! this is repeated `--rounds` times, each round starting at the next engine in turn (so a slow spell of a shared
//! machine, or the cost of coming second, falls on all engines alike). Each run's figure for a stretch of steps is
//! the median of those steps' times; an engine's figure is the median over its rounds. Every ratio comes from this
//! one alternated run. Figures: the whole run (`ms_per_step`, as before), the first `--forming-steps` steps
//! (contacts forming) and the steps after `--steady-from` (steady state). Engines: Tumble, Rapier with its
//! defaults, Rapier held to Tumble's iteration budget (`rapier-budget`), and Jolt when built with the `jolt`
//! feature (which Jolt, and how it was built, is in every report). The ratios are the other engine's ms/step over
//! Tumble's (above 1: Tumble is faster); the goal line is ≥ 2 against the faster of Rapier (defaults) and Jolt, the
//! best peer, in every phase. `katamari900` is the 2015 cube game's katamari ball rolling through cubes900, run on
//! Tumble only (the game's pushes are Tumble code): its peers' figures are null. Every round of an engine must end
//! in the same state (checksum): a rerun gives the same bits, or this exits non-zero. Timing itself is never fatal.
//!
//! Writes `OUT/engine-speed.md`; prints the figures as JSON on stdout (an array, one object per scene); logs go to
//! stderr.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{ensure, Context, Result};
use clap::Parser;
use serde_json::{json, Value};
use tumble_benches::runner::{run_scene_timed, run_timed, EngineKind, RunOptions, TimedRun, MOVED_M};
use tumble_benches::tumble_sim::KatamariSim;
use tumble_benches::{median, scenes_dir};
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::{load_scene, Scene};

/// The scenes measured when none is named.
const DEFAULT_SCENES: [&str; 5] = ["pyramid20", "field900", "large_pyramid", "topple900", KATAMARI];
/// The cube game's katamari ball in cubes900 (not a scene file: cubes900 plus the game's player and its pushes).
const KATAMARI: &str = "katamari900";
/// The field the katamari ball rolls through.
const KATAMARI_FIELD: &str = "cubes900";
/// Tumble must be at least this many times faster than the faster of the others.
const GOAL_RATIO: f64 = 2.0;
/// The engines the goal is held against.
const PEERS: [EngineKind; 2] = [EngineKind::Rapier, EngineKind::Jolt];

#[derive(Parser, Debug)]
#[command(about = "Tumble against Rapier (and Jolt) with sleeping off, per phase: medians of alternated runs")]
struct Args {
    /// Scenes (file stems under assets/scenes, or katamari900; repeatable). Default: pyramid20, field900,
    /// large_pyramid, topple900, katamari900.
    #[arg(long = "scene", value_name = "NAME")]
    scenes: Vec<String>,
    /// Steps per run.
    #[arg(long, default_value_t = 300)]
    steps: u32,
    /// Runs per engine and scene, alternated.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// The first phase, contacts forming: steps 1 to this.
    #[arg(long, default_value_t = 60)]
    forming_steps: u32,
    /// The steady phase: the steps after this one, to the end of the run (240 of 300: steps 241 to 300).
    #[arg(long, default_value_t = 240)]
    steady_from: u32,
    /// Output folder for engine-speed.md.
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

/// A stretch of a run's steps (0-based indices into its step times) with its name.
#[derive(Clone, Debug)]
struct Phase {
    name: &'static str,
    steps: Range<usize>,
}

impl Phase {
    /// The phase's median step of one run, or `None` when the run has none of its steps.
    fn median_of(&self, step_ms: &[f64]) -> Option<f64> {
        let end = self.steps.end.min(step_ms.len());
        (self.steps.start < end).then(|| median(&step_ms[self.steps.start..end]))
    }

    /// Its first and last step, 1-based, or null when the run is too short to have any.
    fn json_steps(&self, steps: u32) -> Value {
        let end = self.steps.end.min(steps as usize);
        if self.steps.start < end {
            json!([self.steps.start + 1, end])
        } else {
            Value::Null
        }
    }
}

/// What a scene is for this bench.
enum Bench {
    File(Scene),
    Katamari(Scene),
}

impl Bench {
    fn load(name: &str) -> Result<Self> {
        let file = if name == KATAMARI { KATAMARI_FIELD } else { name };
        let path = scenes_dir().join(format!("{file}.toml"));
        // The loader's error names the file.
        let scene = load_scene(&path)?;
        Ok(if name == KATAMARI {
            Bench::Katamari(scene)
        } else {
            Bench::File(scene)
        })
    }

    /// Whether `engine` runs this scene (the katamari ball is Tumble's only).
    fn runs_on(&self, engine: EngineKind) -> bool {
        matches!(self, Bench::File(_)) || engine == EngineKind::Tumble
    }

    fn run(&self, opts: &RunOptions) -> Result<TimedRun> {
        match self {
            Bench::File(scene) => run_scene_timed(scene, opts),
            Bench::Katamari(field) => {
                let base = WorldConfig {
                    sleep: opts.sleep,
                    ..WorldConfig::default()
                };
                let world = field.build_world(base).context("building cubes900")?;
                run_timed(&mut KatamariSim::new(world)?, KATAMARI, opts)
            }
        }
    }
}

/// One engine's runs of one scene.
struct EngineRuns {
    engine: EngineKind,
    /// Per round: the whole run's median step, then each phase's.
    ms: Vec<f64>,
    phase_ms: Vec<Vec<Option<f64>>>,
    checksums: Vec<String>,
    /// Bodies moved more than `MOVED_M` by the end of each round's run.
    moved: Vec<usize>,
}

impl EngineRuns {
    fn ms(&self) -> f64 {
        median(&self.ms)
    }

    /// The median over rounds of phase `p`'s figure, or `None` when the runs did not reach the phase.
    fn phase(&self, p: usize) -> Option<f64> {
        let v: Vec<f64> = self.phase_ms.iter().filter_map(|r| r[p]).collect();
        (!v.is_empty()).then(|| median(&v))
    }

    fn same_bits(&self) -> bool {
        self.checksums.iter().all(|c| *c == self.checksums[0])
    }
}

fn ratio(other: Option<f64>, tumble: Option<f64>) -> Option<f64> {
    match (other, tumble) {
        (Some(o), Some(t)) if t > 0.0 => Some(o / t),
        _ => None,
    }
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| {
        if v >= 10.0 {
            format!("{v:.2}")
        } else {
            format!("{v:.4}")
        }
    })
}

fn fmt_ratio(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.2}"))
}

fn real_main() -> Result<bool> {
    let args = Args::parse();
    ensure!(
        args.rounds >= 1 && args.steps >= 1,
        "--rounds and --steps must be at least 1"
    );
    let scenes: Vec<String> = if args.scenes.is_empty() {
        DEFAULT_SCENES.iter().map(|s| s.to_string()).collect()
    } else {
        args.scenes.clone()
    };
    let engines: Vec<EngineKind> = EngineKind::ALL.into_iter().filter(|e| e.available()).collect();
    let phases = [
        Phase {
            name: "forming",
            steps: 0..args.forming_steps as usize,
        },
        Phase {
            name: "steady",
            steps: args.steady_from as usize..args.steps as usize,
        },
    ];
    let build = if cfg!(debug_assertions) {
        "debug build"
    } else {
        "release build"
    };
    if cfg!(debug_assertions) {
        tracing::warn!("debug build; timings mean little (use cargo run --release)");
    }
    let machine_before = tumble_benches::machine_now();
    let mut md = String::from("# Engine speed, sleeping off, per phase\n\n");
    let _ = writeln!(
        md,
        "{} steps per run, {} rounds, engines alternated within each round (each round starting at the next \
         engine), medians (ms per step: the median step of a run's stretch, then the median over rounds); one \
         thread each; {build}. Phases: **forming** = steps {} (contacts forming), **steady** = steps {} (steady \
         state); \"all\" = every step. Ratio: the engine's ms/step over Tumble's (above 1: Tumble is faster); all \
         from this one run. rapier-budget: Rapier held to Tumble's iteration budget (one solver iteration of 4 \
         velocity and 2 stabilization passes). {}\n",
        args.steps,
        args.rounds,
        phases[0].json_steps(args.steps),
        phases[1].json_steps(args.steps),
        tumble_benches::jolt_build_line()
    );
    let _ = write!(
        md,
        "| scene | engine | all ms | forming ms | forming ratio | steady ms | steady ratio | bodies moved > {MOVED_M} m \
         | same bits every round |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut goals_md = String::from(
        "\n## Best peer (faster of Rapier and Jolt) over Tumble, per phase (goal ≥ 2)\n\n\
         | scene | phase | best peer | its ms | Tumble ms | ratio |\n|---|---|---|---:|---:|---:|\n",
    );
    let mut all_same = true;
    let mut out = Vec::new();
    let mut settings = json!({
        "steps": args.steps,
        "rounds": args.rounds,
        "forming_steps": phases[0].json_steps(args.steps),
        "steady_steps": phases[1].json_steps(args.steps),
        "build": build,
        "machine_before": machine_before,
    });
    for name in &scenes {
        let bench = Bench::load(name)?;
        let mut figures: Vec<EngineRuns> = engines
            .iter()
            .filter(|&&e| bench.runs_on(e))
            .map(|&engine| EngineRuns {
                engine,
                ms: Vec::new(),
                phase_ms: Vec::new(),
                checksums: Vec::new(),
                moved: Vec::new(),
            })
            .collect();
        let n = figures.len();
        let mut body_counts: Vec<(EngineKind, usize)> = Vec::new();
        for round in 0..args.rounds as usize {
            for k in 0..n {
                let f = &mut figures[(round + k) % n];
                let opts = RunOptions {
                    engine: f.engine,
                    steps: args.steps,
                    quantize: false,
                    sleep: false,
                };
                let r = bench.run(&opts).with_context(|| format!("{name} on {}", f.engine))?;
                let per_phase: Vec<Option<f64>> = phases.iter().map(|p| p.median_of(&r.step_ms)).collect();
                tracing::info!(
                    scene = %name,
                    round,
                    engine = f.engine.name(),
                    ms_per_step = r.result.ms_per_step,
                    forming = ?per_phase[0],
                    steady = ?per_phase[1],
                    "run"
                );
                f.ms.push(r.result.ms_per_step);
                f.phase_ms.push(per_phase);
                f.checksums.push(r.result.checksum);
                f.moved.push(r.bodies_moved);
                if !body_counts.iter().any(|(e, _)| *e == f.engine) {
                    body_counts.push((f.engine, r.result.bodies));
                }
            }
        }
        let tumble = &figures[0];
        debug_assert_eq!(tumble.engine, EngineKind::Tumble);
        let tumble_ms = tumble.ms();
        let tumble_phase: Vec<Option<f64>> = (0..phases.len()).map(|p| tumble.phase(p)).collect();
        let mut row = serde_json::Map::new();
        row.insert("scene".into(), json!(name));
        for &engine in &engines {
            let Some(f) = figures.iter().find(|f| f.engine == engine) else {
                // Not run on this engine (the katamari ball's peers): null, and a line that says so.
                row.insert(engine.name().to_string(), Value::Null);
                let _ = writeln!(
                    md,
                    "| {name} | {} | — | — | — | — | — | — | not run (Tumble only) |",
                    engine.name()
                );
                continue;
            };
            let ms = f.ms();
            let same = f.same_bits();
            let bodies = body_counts.iter().find(|(e, _)| *e == engine).map(|(_, n)| *n);
            all_same &= same;
            let is_tumble = engine == EngineKind::Tumble;
            let mut phase_json = serde_json::Map::new();
            let mut cells = Vec::new();
            for (p, phase) in phases.iter().enumerate() {
                let pm = f.phase(p);
                let pr = if is_tumble { None } else { ratio(pm, tumble_phase[p]) };
                phase_json.insert(phase.name.into(), json!({ "ms_per_step": pm, "ratio_to_tumble": pr }));
                cells.push(format!("{} | {}", fmt_ms(pm), fmt_ratio(pr)));
            }
            let _ = writeln!(
                md,
                "| {name} | {} | {} | {} | {} | {} |",
                engine.name(),
                fmt_ms(Some(ms)),
                cells.join(" | "),
                f.moved[0],
                if same { "yes" } else { "**no**" }
            );
            row.insert(
                engine.name().to_string(),
                json!({
                    "ms_per_step": ms,
                    // Computed for Tumble too, as this field always was (its phases' ratios to itself are null).
                    "ratio_to_tumble": ms / tumble_ms,
                    "same_bits": same,
                    "checksum": f.checksums[0],
                    "phases": phase_json,
                    "bodies": bodies,
                    "bodies_moved_over_half_m": f.moved[0],
                }),
            );
        }
        // The best peer over the whole run (the old goal fields) and per phase.
        let best = |value: &dyn Fn(&EngineRuns) -> Option<f64>| -> Option<(EngineKind, f64)> {
            figures
                .iter()
                .filter(|f| PEERS.contains(&f.engine))
                .filter_map(|f| value(f).map(|v| (f.engine, v)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        };
        let goal = best(&|f| Some(f.ms())).map(|(_, ms)| ms / tumble_ms);
        row.insert("goal_ratio".into(), json!(goal));
        row.insert("goal_holds".into(), json!(goal.map(|g| g >= GOAL_RATIO)));
        let mut phase_goals = serde_json::Map::new();
        for (p, phase) in phases.iter().enumerate() {
            let peer = best(&|f| f.phase(p));
            let r = ratio(peer.map(|(_, ms)| ms), tumble_phase[p]);
            phase_goals.insert(
                phase.name.into(),
                json!({
                    "steps": phase.json_steps(args.steps),
                    "tumble_ms_per_step": tumble_phase[p],
                    "best_peer": peer.map(|(e, _)| e.name()),
                    "best_peer_ms_per_step": peer.map(|(_, ms)| ms),
                    "best_peer_over_tumble": r,
                    "goal_holds": r.map(|r| r >= GOAL_RATIO),
                }),
            );
            let _ = writeln!(
                goals_md,
                "| {name} | {} | {} | {} | {} | {} |",
                phase.name,
                peer.map_or("— (none run)", |(e, _)| e.name()),
                fmt_ms(peer.map(|(_, ms)| ms)),
                fmt_ms(tumble_phase[p]),
                match r {
                    Some(r) if r >= GOAL_RATIO => format!("**{r:.2}** (holds)"),
                    Some(r) => format!("**{r:.2}** (fails)"),
                    None => "—".into(),
                }
            );
        }
        row.insert("phases".into(), Value::Object(phase_goals));
        // An engine this binary was built without (Jolt without the `jolt` feature): null, as for one not run.
        for engine in EngineKind::ALL {
            row.entry(engine.name().to_string()).or_insert(Value::Null);
        }
        // Which Jolt ran and how it was built (null without the feature); `jolt` holds its figures.
        row.insert("jolt_build".into(), tumble_benches::jolt_build_json());
        out.push(row);
    }
    settings["machine_after"] = tumble_benches::machine_now();
    for row in &mut out {
        row.insert("run".into(), settings.clone());
    }
    let load = |k: &str| settings[k]["load_average_1min"].as_f64();
    let cpus = settings["machine_before"]["logical_cpus"].as_u64();
    let busy = match (load("machine_before"), load("machine_after"), cpus) {
        (Some(a), Some(b), Some(n)) if a.max(b) >= n as f64 * 0.75 => {
            "busy: other work shared the machine, so single figures move more than the ratios"
        }
        (Some(_), Some(_), Some(_)) => "quiet",
        _ => "unknown",
    };
    let _ = writeln!(
        md,
        "{goals_md}\nMachine: {} ({} logical CPUs); 1-minute load average {} before the run and {} after ({busy}).",
        settings["machine_before"]["cpu"].as_str().unwrap_or("unknown CPU"),
        settings["machine_before"]["logical_cpus"],
        settings["machine_before"]["load_average_1min"],
        settings["machine_after"]["load_average_1min"],
    );
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let path = args.out.join("engine-speed.md");
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    tracing::info!(path = %path.display(), "wrote");
    let out: Vec<Value> = out.into_iter().map(Value::Object).collect();
    println!("{}", serde_json::to_string_pretty(&out)?);
    if !all_same {
        tracing::error!("an engine ended a rerun of a scene in a different state");
    }
    Ok(all_same)
}
