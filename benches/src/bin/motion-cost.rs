//! Whether a step's cost follows motion (issue 15): one awake cube tumbling on a world of 5,050 resting cubes
//! (large_pyramid, settled) against the same cube alone on the ground. Both worlds are stepped the same number of
//! times, alternated in rounds so the machine's noise falls on both alike; the medians of the rounds' ms per step
//! and their ratio go to stdout as one JSON object (and `motion-cost.md` in the output folder).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use glam::Vec3;
use serde_json::json;
use tumble_engine::physics::{BodyDesc, World, WorldConfig};
use tumble_engine::scene::load_scene;

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

fn main() -> Result<()> {
    let args = Args::parse();
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
    let md = format!(
        "# Cost follows motion\n\nOne cube tumbling on its own, {} steps a round, {} rounds alternated, medians:\n\n\
         | world | ms per step |\n|---|---|\n| the cube beside 5,050 resting cubes (large_pyramid, settled in {settle} \
         steps) | {p:.4} |\n| the cube alone | {a:.4} |\n| ratio | {ratio:.2} (goal: within 2) |\n",
        args.steps, args.rounds
    );
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("motion-cost.md"), md)?;
    println!(
        "{}",
        json!({
            "resting_bodies": pile.body_count() - 1,
            "settle_steps": settle,
            "ms_per_step_among_resting": p,
            "ms_per_step_alone": a,
            "ratio": ratio,
            "within_2x": ratio <= 2.0,
        })
    );
    Ok(())
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
