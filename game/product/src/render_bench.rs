//! `tumble render-bench`: the renderer measured at a chosen size, views, sample count and output on a generated
//! pile of cubes or a scene, seen from where a standing player's eyes are (engine `render::run_bench`).

use std::path::PathBuf;

use anyhow::Context;
use glam::{Quat, Vec3};
use tumble_engine::physics::WorldConfig;
use tumble_engine::render::{
    authority_rgb, run_bench, BenchOptions, BenchOutput, BenchReport, CubeInstance, Gpu, View,
};
use tumble_engine::scene::load_scene;

/// Eye height of a standing player (m).
const EYE_HEIGHT_M: f32 = 1.7;
/// How far from the pile's near edge the player stands (m).
const STANDING_OFF_M: f32 = 2.0;
/// A headset's vertical field of view per eye (rad): about 100°.
const HEADSET_FOV_Y_RAD: f32 = 1.75;
/// Distance between the eyes (m).
const IPD_M: f32 = 0.064;
/// Cubes per column of the generated pile, and the spacing of its columns (m).
const PILE_HEIGHT: usize = 10;
const PILE_SPACING_M: f32 = 1.1;

#[derive(clap::Args, Debug)]
pub struct RenderBenchArgs {
    /// Width of each view (px)
    #[arg(long, value_name = "W", default_value_t = 1032, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub width: u32,
    /// Height of each view (px)
    #[arg(long, value_name = "H", default_value_t = 1104, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub height: u32,
    /// Views: 1 (desktop) or 2 (stereo, one multiview pass)
    #[arg(long, value_name = "1|2", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub views: u32,
    /// Samples per pixel: 1 or 4
    #[arg(long, value_name = "1|4", default_value = "4", value_parser = ["1", "4"])]
    pub msaa: String,
    /// A generated pile of N cubes (columns of 10)
    #[arg(long, value_name = "N", conflicts_with = "scene", default_value_t = 4000)]
    pub cubes: usize,
    /// A scene file's cubes instead of the generated pile
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// Frames measured
    #[arg(long, value_name = "F", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: u32,
    /// Frames drawn first and not measured
    #[arg(long, value_name = "W", default_value_t = 5)]
    pub warmup: u32,
    /// What follows the main pass: nothing, a readback to the CPU, the copy into XR swapchain images, or (xr-resolve)
    /// the main pass resolved straight into them
    #[arg(long, value_enum, default_value_t = OutputArg::None)]
    pub output: OutputArg,
    /// Turn every cube a little each frame (nothing can be kept from the frame before, such as the shadow map)
    #[arg(long)]
    pub moving: bool,
    /// Print the JSON object on stdout (always printed; accepted for the documented command line)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputArg {
    None,
    Readback,
    XrCopy,
    XrResolve,
}

/// Runs the bench on the best device and returns its report.
pub fn run(args: &RenderBenchArgs) -> anyhow::Result<BenchReport> {
    let cubes = match &args.scene {
        Some(path) => {
            let scene = load_scene(path)?;
            let world = scene.build_world(WorldConfig::default())?;
            crate::screenshot::world_cubes(&world, &[])?
        }
        None => pile(args.cubes),
    };
    let options = BenchOptions {
        width: args.width,
        height: args.height,
        views: args.views,
        msaa: args.msaa.parse().context("--msaa")?,
        frames: args.frames,
        warmup: args.warmup,
        output: match args.output {
            OutputArg::None => BenchOutput::None,
            OutputArg::Readback => BenchOutput::Readback,
            OutputArg::XrCopy => BenchOutput::XrCopy,
            OutputArg::XrResolve => BenchOutput::XrResolve,
        },
        moving: args.moving,
    };
    let views = standing_views(&cubes, args.width as f32 / args.height as f32, args.views);
    let gpu = Gpu::headless()?;
    Ok(run_bench(&gpu, &options, &views[..args.views as usize], &cubes)?)
}

/// `n` cubes in columns of [`PILE_HEIGHT`] on a square footprint centred on the origin, each a little turned and
/// coloured by a pretend authority.
pub fn pile(n: usize) -> Vec<CubeInstance> {
    let columns = n.div_ceil(PILE_HEIGHT);
    let side = (columns as f32).sqrt().ceil().max(1.0) as usize;
    let half = (side as f32 - 1.0) * PILE_SPACING_M * 0.5;
    (0..n)
        .map(|i| {
            let column = i / PILE_HEIGHT;
            let (cx, cz) = (column % side, column / side);
            CubeInstance {
                position: Vec3::new(
                    cx as f32 * PILE_SPACING_M - half,
                    0.5 + (i % PILE_HEIGHT) as f32,
                    cz as f32 * PILE_SPACING_M - half,
                ),
                rotation: Quat::from_rotation_y((i % 7) as f32 * 0.05),
                half_extents: Vec3::splat(0.5),
                colour: authority_rgb((i % 5) as u8),
                flags: 0,
            }
        })
        .collect()
}

/// The eyes of a player standing [`STANDING_OFF_M`] in front of the cubes' near side (+z), looking at their centre.
fn standing_views(cubes: &[CubeInstance], aspect: f32, views: u32) -> [View; 2] {
    let (mut lo, mut hi) = (Vec3::splat(-1.0), Vec3::splat(1.0));
    if let Some(first) = cubes.first() {
        (lo, hi) = (first.position, first.position);
        for c in cubes {
            lo = lo.min(c.position);
            hi = hi.max(c.position);
        }
    }
    let centre = (lo + hi) * 0.5;
    let eye = Vec3::new(centre.x, EYE_HEIGHT_M, hi.z + STANDING_OFF_M);
    let target = Vec3::new(centre.x, 1.0, centre.z);
    let separation = if views == 2 { IPD_M } else { 0.0 };
    View::stereo_pair(eye, target, HEADSET_FOV_Y_RAD, aspect, separation)
}
