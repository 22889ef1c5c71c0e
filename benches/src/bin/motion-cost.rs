//! Whether a step's cost follows motion (issue 15): one awake cube tumbling on a world of 5,050 resting cubes
//! (large_pyramid, settled) against the same cube alone on the ground. Both worlds are stepped the same number of
//! times, alternated in rounds so the machine's noise falls on both alike; the medians of the rounds' ms per step
//! and their ratio go to stdout as one JSON object (and `motion-cost.md` in the output folder).
//!
//! The waking case: one cube thrown into the settled pile wakes it (its island is the whole pile), and the pile
//! falls asleep again as one island (measured: every step looks at the thrown cube alone, at all 5,051 bodies, or,
//! the last, at the 5,050 of the pile, so the points form two clusters and the fitted line joins them;
//! `awake_counts` says how many distinct counts there were). Each step's cost is set against the bodies that step looked at
//! (`World::awake_set_len` after it), from the throw until the pile is still or `--wake-steps` have passed, in
//! `--rounds` rounds from the same start (a rerun must wake the same bodies at every step, or this fails);
//! per step the median over rounds. The least-squares line of ms per step against awake bodies, its fit, and the
//! cost per awake body when few and when most are awake go to the JSON (`waking`), the Markdown and
//! `motion-cost.png` (ms per step against awake bodies, and both against the step).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use clap::Parser;
use glam::Vec3;
use serde_json::{json, Value};
use tumble_benches::line_chart::{self, Panel, Series};
use tumble_engine::physics::{BodyDesc, BodyState, World, WorldConfig};
use tumble_engine::scene::{load_scene, Scene};

#[derive(Parser, Debug)]
#[command(about = "One awake cube among 5,050 resting ones against the cube alone: ms per step (JSON on stdout)")]
struct Args {
    /// Folder for motion-cost.md
    #[arg(long, default_value_os_t = tumble_benches::workspace_root().join("target").join("bench-report"))]
    out: PathBuf,
    /// Alternated rounds of each world
    #[arg(long, default_value_t = 9)]
    rounds: usize,
    /// Steps per round
    #[arg(long, default_value_t = 90)]
    steps: usize,
    /// The waking case: steps after the throw at most (it stops earlier once the whole pile is still again)
    #[arg(long, default_value_t = 600)]
    wake_steps: usize,
}

/// The moving cube: dropped from 3 m, spinning, 40 m from the pyramid's end, so it tumbles and bounces for the
/// whole measured second without touching anything but the ground.
fn mover() -> BodyDesc {
    BodyDesc {
        position: Vec3::new(0.0, 3.0, 40.0),
        linear_velocity: Vec3::new(0.0, 0.0, 1.0),
        angular_velocity: Vec3::new(3.0, 5.0, 1.0),
        ..BodyDesc::default()
    }
}

/// The waking cube: thrown along −z at 8 m/s from 2 m in front of large_pyramid's face at 10.5 m up, so it hits the
/// face near the middle of its 10th row about 22 steps later and wakes the pile.
fn thrower() -> BodyDesc {
    BodyDesc {
        position: Vec3::new(0.0, 10.5, 3.0),
        linear_velocity: Vec3::new(0.0, 0.0, -8.0),
        ..BodyDesc::default()
    }
}

fn main() -> Result<()> {
    tumble_benches::init_logging();
    let args = Args::parse();
    ensure!(
        args.rounds >= 1 && args.steps >= 1 && args.wake_steps >= 1,
        "--rounds, --steps and --wake-steps must be at least 1"
    );
    let path = tumble_benches::workspace_root().join("assets/scenes/large_pyramid.toml");
    let scene = load_scene(&path).context("large_pyramid.toml")?;
    let mut pile = scene.build_world(WorldConfig::default())?;
    let mut settle = 0;
    while !pile.all_at_rest() {
        pile.step();
        settle += 1;
        if settle > 3000 {
            bail!("large_pyramid did not come to rest in 3000 steps");
        }
    }
    let waking = waking_case(&pile, &scene, &args)?;
    pile.add_body(&mover())?;
    let mut alone = World::new(WorldConfig::default())?;
    alone.add_body(&mover())?;
    let (mut pile_ms, mut alone_ms) = (Vec::new(), Vec::new());
    for _ in 0..args.rounds {
        // Each round starts both from the same moment, so the cube does the same thing in both.
        let (mut p, mut a) = (pile.clone(), alone.clone());
        pile_ms.push(time_steps(&mut p, args.steps));
        alone_ms.push(time_steps(&mut a, args.steps));
        let awake = (0..p.body_count() as u32)
            .filter(|&i| {
                !p.state(tumble_engine::physics::BodyId(i))
                    .map(|s| s.at_rest)
                    .unwrap_or(true)
            })
            .count();
        if awake != 1 {
            bail!("{awake} bodies awake on the pile after the round: the cube touched it, or the pile woke");
        }
    }
    let (p, a) = (median(&mut pile_ms), median(&mut alone_ms));
    let ratio = p / a;
    let mut md = format!(
        "# Cost follows motion\n\nOne cube tumbling on its own, {} steps a round, {} rounds alternated, medians:\n\n\
         | world | ms per step |\n|---|---|\n| the cube beside 5,050 resting cubes (large_pyramid, settled in {settle} \
         steps) | {p:.4} |\n| the cube alone | {a:.4} |\n| ratio | {ratio:.2} (goal: within 2) |\n",
        args.steps, args.rounds
    );
    md.push_str(&waking.markdown);
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("motion-cost.md"), md)?;
    let png = args.out.join("motion-cost.png");
    line_chart::write_png(
        &png,
        &waking.panels,
        "awake bodies (left), step after the throw (right)",
    )?;
    tracing::info!(md = %args.out.join("motion-cost.md").display(), png = %png.display(), "wrote");
    println!(
        "{}",
        json!({
            "resting_bodies": pile.body_count() - 1,
            "settle_steps": settle,
            "ms_per_step_among_resting": p,
            "ms_per_step_alone": a,
            "ratio": ratio,
            "within_2x": ratio <= 2.0,
            "waking": waking.json,
        })
    );
    Ok(())
}

/// What the waking case measured, in its three forms.
struct Waking {
    json: Value,
    markdown: String,
    panels: Vec<Panel>,
}

/// One thrown cube wakes the settled `pile`: per step, ms and the bodies the step looked at (see the module doc).
/// The reference it is held against, in the same rounds: the same settled pile with sleeping off (every body
/// awake, nothing hit), stepped as many steps.
fn waking_case(pile: &World, scene: &Scene, args: &Args) -> Result<Waking> {
    let mut start = pile.clone();
    start.add_body(&thrower())?;
    let mut all_awake = scene.build_world(WorldConfig {
        sleep: false,
        ..WorldConfig::default()
    })?;
    for id in pile.body_ids() {
        let s = pile.state(id)?;
        all_awake.set_state(id, &BodyState { at_rest: false, ..s })?;
    }
    let rounds = args.rounds;
    let mut still = false;
    let mut ms: Vec<Vec<f64>> = Vec::new();
    let mut reference_ms: Vec<f64> = Vec::new();
    let mut awake: Vec<usize> = Vec::new();
    for round in 0..rounds {
        let mut w = start.clone();
        let mut awake_here = Vec::new();
        for step in 0..args.wake_steps {
            // The bodies a step looks at: those awake when it starts, or woken in it (a hit wakes the island
            // before the solver runs); the step that puts the pile to rest still looked at all of it.
            let before = w.awake_set_len();
            let t0 = Instant::now();
            w.step();
            let t = t0.elapsed().as_secs_f64() * 1e3;
            if round == 0 {
                ms.push(Vec::with_capacity(rounds));
            }
            ms[step].push(t);
            awake_here.push(before.max(w.awake_set_len()));
            if round == 0 && w.all_at_rest() {
                still = true;
                break;
            }
            if round > 0 && awake_here.len() == awake.len() {
                break;
            }
        }
        if round == 0 {
            awake = awake_here;
        } else {
            ensure!(
                awake_here == awake,
                "round {round} of the waking case woke other bodies than round 0: the step is not repeatable"
            );
        }
        let mut r = all_awake.clone();
        let times: Vec<f64> = (0..awake.len())
            .map(|_| {
                let t0 = Instant::now();
                r.step();
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        reference_ms.push(median_of(&times));
    }
    let steps = awake.len();
    let reference = median_of(&reference_ms);
    let per_step: Vec<f64> = ms[..steps].iter().map(|v| median_of(v)).collect();
    let most = awake.iter().copied().max().unwrap_or(0);
    let awake_counts = {
        let mut v = awake.clone();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    let settled_at = still.then_some(steps);
    // Least squares of ms per step against awake bodies.
    let n = steps as f64;
    let (sx, sy) = (
        awake.iter().map(|&a| a as f64).sum::<f64>(),
        per_step.iter().sum::<f64>(),
    );
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = awake.iter().map(|&a| (a as f64 - mx).powi(2)).sum();
    let sxy: f64 = awake
        .iter()
        .zip(&per_step)
        .map(|(&a, &y)| (a as f64 - mx) * (y - my))
        .sum();
    let syy: f64 = per_step.iter().map(|&y| (y - my).powi(2)).sum();
    let slope = (sxx > 0.0).then(|| sxy / sxx);
    let intercept = slope.map(|b| my - b * mx);
    let r2 = slope.and_then(|_| (syy > 0.0).then(|| sxy * sxy / (sxx * syy)));
    // Cost per awake body among the steps with few (at most a tenth of the most) and many (at least nine tenths).
    let per_body = |keep: &dyn Fn(usize) -> bool| -> Option<f64> {
        let v: Vec<f64> = awake
            .iter()
            .zip(&per_step)
            .filter(|(&a, _)| a > 0 && keep(a))
            .map(|(&a, &t)| t * 1e3 / a as f64)
            .collect();
        (!v.is_empty()).then(|| median_of(&v))
    };
    let few = per_body(&|a| a * 10 <= most);
    let many = per_body(&|a| a * 10 >= most * 9);
    // The waking pile's steps with nearly all of it awake against the reference's mean step.
    let most_awake_ms: Vec<f64> = awake
        .iter()
        .zip(&per_step)
        .filter(|(&a, _)| a * 10 >= most * 9)
        .map(|(_, &t)| t)
        .collect();
    let most_awake_ms = (!most_awake_ms.is_empty()).then(|| median_of(&most_awake_ms));
    let over_reference = most_awake_ms.map(|m| m / reference);
    let fmt = |v: Option<f64>, digits: usize| v.map_or("—".to_string(), |v| format!("{v:.digits$}"));
    let markdown = format!(
        "\n## Waking: one thrown cube wakes the pile\n\nlarge_pyramid settled, then one cube thrown into its face at \
         8 m/s; {steps} steps (until {}), {rounds} rounds from the same start, per step the median; awake = the bodies \
         a step looked at (`World::awake_set_len`). Chart: `motion-cost.png`.\n\n| figure | value |\n|---|---|\n\
         | most bodies awake at once | {most} |\n| distinct counts of awake bodies over the steps (few: the pile \
         wakes and sleeps as one island) | {awake_counts} |\n| bodies the last step looked at | {} |\n\
         | µs per awake body, steps with at most a tenth of the most awake | {} |\n\
         | µs per awake body, steps with at least nine tenths of the most awake | {} |\n\
         | least squares: ms per step = a + b × awake | a = {} ms, b = {} µs per body (r² {}) |\n\
         | ms per step, steps with at least nine tenths awake (median) | {} |\n\
         | ms per step, the same settled pile with sleeping off, nothing hit ({} pile bodies, all awake; median \
         step of a round, median of rounds) | {reference:.4} |\n| ratio: waking pile over the pile kept awake | {} |\n",
        match settled_at {
            Some(s) => format!("the pile was still again, step {s}"),
            None => format!("the limit of {} steps; the pile was not still yet", args.wake_steps),
        },
        awake.last().copied().unwrap_or(0),
        fmt(few, 3),
        fmt(many, 3),
        fmt(intercept, 4),
        fmt(slope.map(|b| b * 1e3), 3),
        fmt(r2, 3),
        fmt(most_awake_ms, 4),
        pile.body_count(),
        fmt(over_reference, 2),
    );
    let points: Vec<(f64, f64)> = awake.iter().zip(&per_step).map(|(&a, &t)| (a as f64, t)).collect();
    let panels = vec![
        Panel {
            title: "ms per step against awake bodies".into(),
            y_desc: "ms per step".into(),
            series: vec![
                Series {
                    name: "thrown cube wakes large_pyramid (a step)".into(),
                    points,
                    points_only: true,
                },
                Series {
                    name: "the pile kept awake, nothing hit".into(),
                    points: vec![(pile.body_count() as f64, reference)],
                    points_only: true,
                },
            ],
        },
        Panel {
            title: "after the throw, by step".into(),
            y_desc: "ms per step, awake bodies / 1000".into(),
            series: vec![
                Series {
                    name: "ms per step".into(),
                    points: per_step.iter().enumerate().map(|(i, &t)| ((i + 1) as f64, t)).collect(),
                    points_only: false,
                },
                Series {
                    name: "awake bodies / 1000".into(),
                    points: awake
                        .iter()
                        .enumerate()
                        .map(|(i, &a)| ((i + 1) as f64, a as f64 / 1e3))
                        .collect(),
                    points_only: false,
                },
            ],
        },
    ];
    let json = json!({
        "pile_bodies": pile.body_count(),
        "thrown_cube": { "position": thrower().position.to_array(), "velocity_m_s": thrower().linear_velocity.to_array() },
        "rounds": rounds,
        "steps": steps,
        "still_again_at_step": settled_at,
        "most_awake": most,
        "awake_counts": awake_counts,
        "looked_at_by_last_step": awake.last().copied(),
        "us_per_awake_body_few_awake": few,
        "us_per_awake_body_most_awake": many,
        "fit_ms_intercept": intercept,
        "fit_us_per_awake_body": slope.map(|b| b * 1e3),
        "fit_r2": r2,
        "ms_per_step_most_awake": most_awake_ms,
        "ms_per_step_pile_kept_awake": reference,
        "most_awake_over_kept_awake": over_reference,
        "per_step": awake.iter().zip(&per_step).map(|(&a, &t)| json!({ "awake": a, "ms": t })).collect::<Vec<_>>(),
    });
    Ok(Waking { json, markdown, panels })
}

fn median_of(v: &[f64]) -> f64 {
    tumble_benches::median(v)
}

/// Mean ms per step over `steps` steps.
fn time_steps(world: &mut World, steps: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..steps {
        world.step();
    }
    start.elapsed().as_secs_f64() * 1e3 / steps as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
