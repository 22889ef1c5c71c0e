//! One scene, one engine, N steps: the loop both binaries share, and the numbers it reports.
//!
//! Every engine is driven through [`Simulation`], so Tumble and Rapier are measured by the same code: each step is
//! timed alone with [`Instant`], and everything else (state reads for rest and drift, contact inspection, the
//! quantize round trip) happens outside the timed region.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use glam::{Mat3, Vec3};
use serde::{Deserialize, Serialize};
use tumble_engine::physics::box_plane::OrientedBox;
use tumble_engine::physics::overlap::deepest_overlap;
use tumble_engine::physics::{BodyDesc, BodyState, WorldConfig};
use tumble_engine::scene::{load_scene, Scene};

use crate::rapier_sim::RapierSim;
use crate::tumble_sim::TumbleSim;

/// Steps a run takes when not told otherwise (11 s of simulated time at 90 Hz).
pub const DEFAULT_STEPS: u32 = 1000;

/// Which engine runs the scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Tumble,
    /// Rapier with its default integration parameters.
    Rapier,
    /// Rapier held to Tumble's iteration budget ([`crate::rapier_sim::RapierSim::with_tumble_budget`]).
    #[serde(rename = "rapier-budget")]
    #[value(name = "rapier-budget")]
    RapierBudget,
    /// Jolt Physics with its defaults: only in a build with the `jolt` feature (`crate::jolt_sim`).
    Jolt,
}

impl EngineKind {
    /// Every engine, Tumble first.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::Tumble,
        EngineKind::Rapier,
        EngineKind::RapierBudget,
        EngineKind::Jolt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Tumble => "tumble",
            EngineKind::Rapier => "rapier",
            EngineKind::RapierBudget => "rapier-budget",
            EngineKind::Jolt => "jolt",
        }
    }

    /// Whether this build can run the engine (Jolt needs the `jolt` cargo feature).
    pub fn available(self) -> bool {
        self != EngineKind::Jolt || cfg!(feature = "jolt")
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How to run a scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    pub engine: EngineKind,
    pub steps: u32,
    /// Quantize and dequantize every body's state before every step (Tumble only).
    pub quantize: bool,
    /// Rest detection / sleeping on.
    pub sleep: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            engine: EngineKind::Tumble,
            steps: DEFAULT_STEPS,
            quantize: false,
            sleep: true,
        }
    }
}

/// What one run measured: the JSON object `physics-regress --json` prints (field names are a contract).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The scene's name (from the file, else the file stem).
    pub scene: String,
    pub engine: EngineKind,
    pub steps: u32,
    pub bodies: usize,
    pub quantize: bool,
    pub sleep: bool,
    /// Median wall time of one `step()` call, in milliseconds.
    pub ms_per_step: f64,
    /// Sum of all `step()` times (ms): physics only, no bookkeeping.
    pub ms_total: f64,
    /// The first step (1-based count of steps taken) after which every dynamic body was at rest, or `None`.
    pub settle_step: Option<u32>,
    /// Largest |end − start| position of any body (m).
    pub max_displacement_m: f64,
    /// Largest |end − position at settle_step| of any body (m), or `None` when the scene never settled.
    pub max_drift_after_settle_m: Option<f64>,
    /// Deepest overlap between any two bodies or a body and the ground, seen at any step (m, ≥ 0), as the engine's
    /// own contacts report it at the start of a step.
    pub max_penetration_m: f64,
    /// Deepest overlap between any two bodies or a body and the ground after any step (m, ≥ 0), measured from the
    /// poses alone by the same code for every engine ([`deepest_overlap`]): what the contacts missed shows here.
    #[serde(default)]
    pub max_overlap_m: f64,
    /// 64-bit FNV-1a of the exact final state of every body in id order ([`state_checksum`]), as 16 hex digits.
    pub checksum: String,
}

/// An engine as the runner sees it. Bodies are addressed by index 0..body_count in the scene's order.
pub trait Simulation {
    fn body_count(&self) -> usize;
    /// The full state of body `index`, in Tumble's plain-data form.
    fn state(&self, index: usize) -> Result<BodyState>;
    /// What the world is given before a step (a player's pushes), outside the timed region; most engines take
    /// nothing.
    fn before_step(&mut self) -> Result<()> {
        Ok(())
    }
    /// Advances one fixed step. The only thing the runner times.
    fn step(&mut self);
    /// Deepest overlap (m, ≥ 0) of the step just taken (measured outside the timed region).
    fn last_max_penetration(&self) -> f32;
    /// Whether every dynamic body is at rest (asleep) now.
    fn all_at_rest(&self) -> bool;
    /// Half extents of body `index` (m).
    fn half_extents(&self, index: usize) -> Result<Vec3>;
    /// Height of the ground plane, if the world has one.
    fn ground_height(&self) -> Option<f32>;
    /// Called before every step when the run quantizes; engines that can't must refuse in their constructor.
    fn quantize_all(&mut self) -> Result<()> {
        bail!("this engine has no quantize round trip")
    }
}

/// Median of `samples` (mean of the two middle values for an even count); 0 for an empty slice. NaNs sort last.
pub fn median(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        0.5 * (v[mid - 1] + v[mid])
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv_bytes(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// FNV-1a over the exact bits of every body's state in id order: position (x, y, z), rotation (x, y, z, w),
/// linear and angular velocity, then one byte for the rest flag; each float as its little-endian bit pattern.
/// The same function hashes both engines' states, so equal states give equal checksums whatever ran them.
pub fn state_checksum(states: &[BodyState]) -> u64 {
    let mut hash = FNV_OFFSET;
    for s in states {
        let floats = s
            .position
            .to_array()
            .into_iter()
            .chain(s.rotation.to_array())
            .chain(s.linear_velocity.to_array())
            .chain(s.angular_velocity.to_array());
        for f in floats {
            hash = fnv_bytes(hash, &f.to_bits().to_le_bytes());
        }
        hash = fnv_bytes(hash, &[u8::from(s.at_rest)]);
    }
    hash
}

fn positions<S: Simulation>(sim: &S) -> Result<Vec<Vec3>> {
    (0..sim.body_count())
        .map(|i| sim.state(i).map(|s| s.position))
        .collect()
}

/// Deepest overlap of the bodies as they stand now (see [`RunResult::max_overlap_m`]).
fn overlap_now<S: Simulation>(sim: &S) -> Result<f32> {
    let boxes = (0..sim.body_count())
        .map(|i| {
            let s = sim.state(i)?;
            Ok(OrientedBox {
                center: s.position,
                axes: Mat3::from_quat(s.rotation),
                half: sim.half_extents(i)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(deepest_overlap(&boxes, sim.ground_height()))
}

fn largest_distance(a: &[Vec3], b: &[Vec3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(p, q)| f64::from(p.distance(*q)))
        .fold(0.0, f64::max)
}

/// Runs `sim` for `opts.steps` steps and measures it. `scene` names the result.
pub fn run<S: Simulation>(sim: &mut S, scene: &str, opts: &RunOptions) -> Result<RunResult> {
    Ok(run_timed(sim, scene, opts)?.result)
}

/// A run's result and the wall time of each of its steps (ms, step 1 first), for figures over part of a run.
#[derive(Clone, Debug)]
pub struct TimedRun {
    pub result: RunResult,
    pub step_ms: Vec<f64>,
    /// Bodies whose centre ended more than [`MOVED_M`] from where it started: how much of the scene took part.
    pub bodies_moved: usize,
}

/// The displacement (m) past which [`TimedRun::bodies_moved`] counts a body as moved.
pub const MOVED_M: f32 = 0.5;

/// [`run`], keeping every step's time.
pub fn run_timed<S: Simulation>(sim: &mut S, scene: &str, opts: &RunOptions) -> Result<TimedRun> {
    let start = positions(sim)?;
    let mut step_ms = Vec::with_capacity(opts.steps as usize);
    let mut settle: Option<(u32, Vec<Vec3>)> = None;
    let mut max_penetration = 0.0f32;
    let mut max_overlap = 0.0f32;
    // Quantizing is idempotent, so "quantize after every step" (and once before the first) is the pipeline state
    // sync runs — quantize before every step — with every pose measured as the quantized state both sides agree on.
    if opts.quantize {
        sim.quantize_all().context("quantize before the first step")?;
    }
    for step in 1..=opts.steps {
        sim.before_step().with_context(|| format!("before step {step}"))?;
        let t0 = Instant::now();
        sim.step();
        step_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        if opts.quantize {
            sim.quantize_all()
                .with_context(|| format!("quantize after step {step}"))?;
        }
        max_penetration = max_penetration.max(sim.last_max_penetration());
        max_overlap = max_overlap.max(overlap_now(sim)?);
        if settle.is_none() && sim.all_at_rest() {
            settle = Some((step, positions(sim)?));
        }
    }
    let states: Vec<BodyState> = (0..sim.body_count()).map(|i| sim.state(i)).collect::<Result<_>>()?;
    let end: Vec<Vec3> = states.iter().map(|s| s.position).collect();
    let result = RunResult {
        scene: scene.to_string(),
        engine: opts.engine,
        steps: opts.steps,
        bodies: sim.body_count(),
        quantize: opts.quantize,
        sleep: opts.sleep,
        ms_per_step: median(&step_ms),
        ms_total: step_ms.iter().sum(),
        settle_step: settle.as_ref().map(|(s, _)| *s),
        max_displacement_m: largest_distance(&start, &end),
        max_drift_after_settle_m: settle.as_ref().map(|(_, at)| largest_distance(at, &end)),
        max_penetration_m: f64::from(max_penetration.max(0.0)),
        max_overlap_m: f64::from(max_overlap),
        checksum: format!("{:016x}", state_checksum(&states)),
    };
    let bodies_moved = start
        .iter()
        .zip(&end)
        .filter(|(a, b)| a.distance(**b) > MOVED_M)
        .count();
    Ok(TimedRun {
        result,
        step_ms,
        bodies_moved,
    })
}

/// The world configuration a scene runs with: Tumble's defaults with sleep per `opts`, then the scene's gravity
/// and dt.
pub fn scene_config(scene: &Scene, opts: &RunOptions) -> WorldConfig {
    scene.world_config(WorldConfig {
        sleep: opts.sleep,
        ..WorldConfig::default()
    })
}

/// Runs a loaded scene on the engine `opts` names. Tumble's world is built by [`Scene::build_world`], so a body
/// the engine refuses is reported with its file and line.
pub fn run_scene(scene: &Scene, opts: &RunOptions) -> Result<RunResult> {
    Ok(run_scene_timed(scene, opts)?.result)
}

/// [`run_scene`], keeping every step's time.
pub fn run_scene_timed(scene: &Scene, opts: &RunOptions) -> Result<TimedRun> {
    match opts.engine {
        EngineKind::Tumble => {
            let base = WorldConfig {
                sleep: opts.sleep,
                ..WorldConfig::default()
            };
            let world = scene
                .build_world(base)
                .with_context(|| format!("building scene {}", scene.name))?;
            run_timed(&mut TumbleSim::from_world(world), &scene.name, opts)
        }
        _ => run_bodies_timed(&scene.name, scene_config(scene, opts), &scene.bodies, opts),
    }
}

/// Loads the scene at `path` and runs it. A scene that fails to load is an error naming the file.
pub fn run_scene_file(path: &Path, opts: &RunOptions) -> Result<RunResult> {
    let scene = load_scene(path).with_context(|| format!("loading scene {}", path.display()))?;
    run_scene(&scene, opts)
}

/// Runs bodies described directly (what a scene becomes; tests use it without a file).
pub fn run_bodies(name: &str, config: WorldConfig, bodies: &[BodyDesc], opts: &RunOptions) -> Result<RunResult> {
    Ok(run_bodies_timed(name, config, bodies, opts)?.result)
}

/// [`run_bodies`], keeping every step's time.
pub fn run_bodies_timed(name: &str, config: WorldConfig, bodies: &[BodyDesc], opts: &RunOptions) -> Result<TimedRun> {
    let config = WorldConfig {
        sleep: opts.sleep,
        ..config
    };
    match opts.engine {
        EngineKind::Tumble => run_timed(&mut TumbleSim::new(config, bodies)?, name, opts),
        _ if opts.quantize => {
            bail!("--quantize is Tumble-only: it round-trips Tumble's BodyState through the sync quantizer")
        }
        EngineKind::Rapier => run_timed(&mut RapierSim::new(&config, bodies)?, name, opts),
        EngineKind::RapierBudget => run_timed(&mut RapierSim::with_tumble_budget(&config, bodies)?, name, opts),
        EngineKind::Jolt => run_jolt(name, &config, bodies, opts),
    }
}

#[cfg(feature = "jolt")]
fn run_jolt(name: &str, config: &WorldConfig, bodies: &[BodyDesc], opts: &RunOptions) -> Result<TimedRun> {
    run_timed(&mut crate::jolt_sim::JoltSim::new(config, bodies)?, name, opts)
}

#[cfg(not(feature = "jolt"))]
fn run_jolt(_: &str, _: &WorldConfig, _: &[BodyDesc], _: &RunOptions) -> Result<TimedRun> {
    bail!(
        "this build has no Jolt: build with `--features jolt` (needs CMake and a C++ compiler; `make bench` turns \
         it on)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[7.5]), 7.5);
        // An outlier does not move the median.
        assert_eq!(median(&[1.0, 1.0, 1.0, 1000.0, 1.0]), 1.0);
    }

    fn state(x: f32, at_rest: bool) -> BodyState {
        BodyState {
            position: Vec3::new(x, 0.5, 0.0),
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            at_rest,
        }
    }

    #[test]
    fn checksum_sees_every_bit_and_the_order() {
        let a = [state(0.0, true), state(1.0, true)];
        let h = state_checksum(&a);
        assert_eq!(h, state_checksum(&a));
        assert_ne!(h, state_checksum(&[state(0.0, true), state(1.0, false)]));
        assert_ne!(h, state_checksum(&[state(1.0, true), state(0.0, true)]));
        assert_ne!(h, state_checksum(&[state(f32::from_bits(1), true), state(1.0, true)]));
        // -0.0 and 0.0 differ in bits, so they differ here: the checksum is of the exact state.
        assert_ne!(h, state_checksum(&[state(-0.0, true), state(1.0, true)]));
        assert_eq!(state_checksum(&[]), FNV_OFFSET);
    }

    #[cfg(not(feature = "jolt"))]
    #[test]
    fn jolt_without_its_feature_is_an_error_that_says_how_to_get_it() {
        assert!(!EngineKind::Jolt.available());
        let opts = RunOptions {
            engine: EngineKind::Jolt,
            ..RunOptions::default()
        };
        let err = run_bodies("one_cube", WorldConfig::default(), &[BodyDesc::default()], &opts).unwrap_err();
        assert!(format!("{err}").contains("--features jolt"), "{err}");
    }

    #[test]
    fn engine_names_are_what_the_command_line_takes() {
        use clap::ValueEnum;
        for e in EngineKind::value_variants() {
            assert_eq!(EngineKind::from_str(e.name(), false).unwrap(), *e);
            assert_eq!(serde_json::to_value(e).unwrap(), e.name());
        }
    }

    #[test]
    fn a_bad_scene_file_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("tumble-benches-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "this is = = not toml [[").unwrap();
        let err = run_scene_file(&bad, &RunOptions::default()).unwrap_err();
        assert!(format!("{err:#}").contains("bad.toml"), "{err:#}");
        let missing = dir.join("missing.toml");
        let err = run_scene_file(&missing, &RunOptions::default()).unwrap_err();
        assert!(format!("{err:#}").contains("missing.toml"), "{err:#}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn result_json_has_the_contract_fields() {
        let r = RunResult {
            scene: "tower30".into(),
            engine: EngineKind::Rapier,
            steps: 1000,
            bodies: 30,
            quantize: false,
            sleep: true,
            ms_per_step: 0.25,
            ms_total: 250.0,
            settle_step: None,
            max_displacement_m: 0.01,
            max_drift_after_settle_m: None,
            max_penetration_m: 0.002,
            max_overlap_m: 0.003,
            checksum: format!("{:016x}", 0xabcu64),
        };
        let v = serde_json::to_value(&r).unwrap();
        let obj = v.as_object().unwrap();
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "bodies",
                "checksum",
                "engine",
                "max_displacement_m",
                "max_drift_after_settle_m",
                "max_overlap_m",
                "max_penetration_m",
                "ms_per_step",
                "ms_total",
                "quantize",
                "scene",
                "settle_step",
                "sleep",
                "steps"
            ]
        );
        assert_eq!(obj["engine"], "rapier");
        assert_eq!(obj["settle_step"], serde_json::Value::Null);
        assert_eq!(obj["max_drift_after_settle_m"], serde_json::Value::Null);
        assert_eq!(obj["checksum"], "0000000000000abc");
        assert!(obj["quantize"].is_boolean() && obj["sleep"].is_boolean());
        assert!(obj["ms_per_step"].is_f64() && obj["steps"].is_u64() && obj["bodies"].is_u64());
        // And it reads back.
        let back: RunResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
