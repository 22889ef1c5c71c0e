//! Whether VR frames really draw motion between physics steps: [`RepeatCheck`] counts, frame after frame, cubes
//! that move in the simulation yet are drawn exactly where the previous frame drew them (what a player sees as
//! judder when the display runs faster than physics). It reads the cubes as the renderer is given them — through
//! `vr::draw::fill_cube_instances`, the VR frame's own path, blend included — so a frame that stops blending
//! between the last two steps is caught whatever the reason. `tumble vr` keeps one over its real frames and reports
//! it; [`record_run`] drives the same clock, pose buffer and draw path with display times at any refresh rate on a
//! scripted clock (no runtime: the check does not depend on how fast the machine is), recording every frame.

use std::io::Write;

use glam::Vec3;
use tumble_engine::physics::World;
use tumble_engine::render::CubeInstance;

use super::clock::{frame_alpha, StepClock};
use super::draw::{drawn_bodies, fill_cube_instances, FramePoses};
use crate::avatar::Avatar;
use crate::interaction::Interaction;
use crate::interpolate::PoseBuffer;
use crate::session::peer::Peer;

/// The scene `tumble vr-pacing` runs by default: a tower hit by a thrown cube, so cubes fly, tumble and fall.
pub const DEFAULT_SCENE: &str = "assets/scenes/smash.toml";

/// Counts moving cubes drawn twice in one place. Sized once for the world; nothing allocated per frame.
#[derive(Clone, Debug, Default)]
pub struct RepeatCheck {
    /// This frame's cubes as the renderer is given them (scratch, reused).
    drawn: Vec<CubeInstance>,
    /// Where the last frame drew each cube; empty before the first frame.
    last_drawn: Vec<Vec3>,
    /// This frame's moving cubes: body index and drawn position (for the record).
    moving: Vec<(u32, Vec3)>,
    /// The simulation time the last frame was drawn after (ns).
    last_sim_ns: Option<i64>,
    /// Frames whose display time fell in the same step interval as the frame before's: no step between them, so
    /// a renderer drawing the last step's poses would have drawn both alike. At 120 Hz against 90 Hz physics,
    /// about one frame in four.
    pub frames_in_the_same_step: u64,
    /// Frames in which at least one cube moved visibly between the last two steps ([`MOVING_M_PER_STEP`]).
    pub frames_with_motion: u64,
    /// (frame, cube) pairs where the cube moved between the last two steps and was drawn where the frame before
    /// drew it.
    pub repeated_poses: u64,
}

impl RepeatCheck {
    pub fn with_capacity(bodies: usize) -> RepeatCheck {
        RepeatCheck {
            drawn: Vec::with_capacity(bodies),
            last_drawn: Vec::with_capacity(bodies),
            moving: Vec::with_capacity(bodies),
            ..RepeatCheck::default()
        }
    }

    /// One frame, drawn from `world`, `interaction` and `peer` as `shown` says (the arguments the VR renderer's
    /// `draw` takes), after the simulation reached `sim_ns` (`None`: not started).
    pub fn observe(
        &mut self,
        world: &World,
        interaction: &Interaction,
        peer: Option<&Peer>,
        shown: &FramePoses<'_>,
        sim_ns: Option<i64>,
    ) {
        let same_step = sim_ns.is_some() && self.last_sim_ns == sim_ns;
        self.frames_in_the_same_step += u64::from(same_step);
        self.last_sim_ns = sim_ns;
        fill_cube_instances(&mut self.drawn, world, interaction, peer, shown);
        let fresh = self.last_drawn.len() != self.drawn.len();
        if fresh {
            self.last_drawn.clear();
        }
        self.moving.clear();
        let buffered = shown.poses.len() == world.body_count();
        for (k, id) in drawn_bodies(world).enumerate() {
            let Some(cube) = self.drawn.get(k) else { break };
            let drawn = cube.position;
            if fresh {
                self.last_drawn.push(drawn);
                continue;
            }
            let i = id.0 as usize;
            if buffered && is_moving(shown.poses, i) {
                self.moving.push((id.0, drawn));
                self.repeated_poses += u64::from(drawn == self.last_drawn[k]);
            }
            self.last_drawn[k] = drawn;
        }
        self.frames_with_motion += u64::from(!self.moving.is_empty());
    }

    /// The last observed frame's moving cubes: body index and where they were drawn.
    pub fn moving(&self) -> &[(u32, Vec3)] {
        &self.moving
    }
}

/// Motion between two steps below which a cube counts as still (m): 0.1 mm a step is 9 mm/s, less than a player
/// sees. (A held or settling cube may wander by a float's last bits from step to step; that is not motion, and
/// a blend of two poses a bit apart rounds to one of them.)
pub const MOVING_M_PER_STEP: f32 = 1e-4;

/// Writes one frame as a JSON line: its number, display time, the simulation time it was drawn after, the blend,
/// the display period (0 where the frames are not paced by a runtime), and each moving cube's id and drawn
/// position (`moving`: [`RepeatCheck::moving`] after the frame was observed). Formats straight into `out`: nothing
/// allocated.
pub fn write_frame_line(
    out: &mut dyn Write,
    frame: u64,
    display_ns: i64,
    period_ns: i64,
    sim_ns: Option<i64>,
    alpha: f32,
    moving: &[(u32, Vec3)],
) -> std::io::Result<()> {
    write!(
        out,
        "{{\"frame\":{frame},\"display_ns\":{display_ns},\"period_ns\":{period_ns},\"sim_ns\":{},\"alpha\":{alpha}",
        sim_ns.unwrap_or(0)
    )?;
    write!(out, ",\"moving\":[")?;
    for (n, (i, p)) in moving.iter().enumerate() {
        let sep = if n == 0 { "" } else { "," };
        write!(out, "{sep}[{i},{},{},{}]", p.x, p.y, p.z)?;
    }
    writeln!(out, "]}}")
}

/// Whether body `i` moved visibly between the last two steps.
fn is_moving(poses: &PoseBuffer, i: usize) -> bool {
    poses.interpolated(i, 0.0).0.distance(poses.interpolated(i, 1.0).0) > MOVING_M_PER_STEP
}

/// What [`record_run`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacingReport {
    pub display_hz: f64,
    pub frames: u64,
    pub physics_steps: u64,
    pub frames_with_motion: u64,
    pub repeated_poses: u64,
    /// Frames whose display time fell in the same step interval as the frame before's (where a renderer that
    /// drew the last step's poses would have repeated them).
    pub frames_in_the_same_step: u64,
}

/// How [`record_run`] blends: as `tumble vr` does, or (the negative control) not at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blend {
    /// Each frame drawn as far between the last two steps as its display time is past the last one.
    BetweenSteps,
    /// Every frame drawn at the last step's poses (what the check must catch).
    LastStepOnly,
}

/// Runs `world` for `seconds` of display frames at `display_hz` against 90 Hz physics, each frame's display time
/// off its slot by up to ±`jitter_ns` (seeded), through the fixed-step clock, the pose buffer and the draw path
/// `tumble vr` uses; checks each frame with a [`RepeatCheck`]; writes one JSON line per frame to `record` (display
/// time, sim time, blend, and each moving cube's drawn position) when given.
pub fn record_run(
    world: &mut World,
    display_hz: f64,
    seconds: f64,
    jitter_ns: i64,
    seed: u64,
    blend: Blend,
    mut record: Option<&mut dyn Write>,
) -> std::io::Result<PacingReport> {
    let period_ns = (1e9 / display_hz) as i64;
    let frames = (seconds * display_hz) as u64;
    let mut clock = StepClock::default();
    let mut poses = PoseBuffer::default();
    poses.reset(world);
    let interaction = Interaction::default();
    let mut check = RepeatCheck::with_capacity(world.body_count());
    let mut report = PacingReport {
        display_hz,
        frames,
        ..PacingReport::default()
    };
    let mut rng = seed.max(1);
    for f in 0..frames {
        // xorshift: a display clock that wobbles as a real compositor's predictions do.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let wobble = if jitter_ns > 0 {
            (rng % (2 * jitter_ns as u64 + 1)) as i64 - jitter_ns
        } else {
            0
        };
        let display_ns = 1_000_000_000 + f as i64 * period_ns + wobble;
        for _ in 0..clock.steps_due(display_ns) {
            world.step();
            poses.record(world);
            report.physics_steps += 1;
        }
        let alpha = match blend {
            Blend::BetweenSteps => frame_alpha(clock.sim_time_ns(), display_ns),
            Blend::LastStepOnly => 1.0,
        };
        let shown = FramePoses {
            poses: &poses,
            alpha,
            avatar: Avatar::default(),
        };
        check.observe(world, &interaction, None, &shown, clock.sim_time_ns());
        if let Some(out) = record.as_mut() {
            write_frame_line(
                *out,
                f,
                display_ns,
                period_ns,
                clock.sim_time_ns(),
                alpha,
                check.moving(),
            )?;
        }
    }
    report.frames_with_motion = check.frames_with_motion;
    report.repeated_poses = check.repeated_poses;
    report.frames_in_the_same_step = check.frames_in_the_same_step;
    Ok(report)
}

/// `tumble vr-pacing`: the VR drawing path's frame timing at a display rate no runtime here offers.
#[derive(clap::Args, Debug)]
pub struct PacingArgs {
    /// Scene file (TOML) whose cubes move [default: smash, a tower hit by a thrown cube]
    #[arg(long, value_name = "FILE")]
    pub scene: Option<std::path::PathBuf>,
    /// Display refresh rate (Hz); physics stays at 90 Hz
    #[arg(long, value_name = "HZ", default_value_t = 120.0)]
    pub display_hz: f64,
    /// Seconds of frames
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub seconds: f64,
    /// How far each predicted display time wobbles off its slot (ms, ±)
    #[arg(long, value_name = "MS", default_value_t = 1.0)]
    pub jitter_ms: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write one JSON line per frame here (display and sim time, blend, each moving cube's drawn position)
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// Negative control: draw every frame at the last step's poses (no blend between steps), which the check must
    /// catch as repeated poses
    #[arg(long, hide = true)]
    pub no_blend: bool,
}

/// Runs `tumble vr-pacing` and prints its JSON report on stdout.
pub fn run_cli(args: &PacingArgs) -> Result<(), String> {
    let rate_ok = (1.0..=1000.0).contains(&args.display_hz);
    let length_ok = args.seconds > 0.0 && args.seconds <= 3600.0;
    if !(rate_ok && length_ok) {
        return Err("--display-hz must be 1 to 1000 and --seconds 0 to 3600".into());
    }
    let path = args
        .scene
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from(DEFAULT_SCENE));
    let scene = tumble_engine::scene::load_scene(&path).map_err(|e| e.to_string())?;
    let mut world = scene
        .build_world(tumble_engine::physics::WorldConfig::default())
        .map_err(|e| e.to_string())?;
    let mut file = match &args.record {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => None,
    };
    let jitter_ns = (args.jitter_ms.clamp(0.0, 1000.0) * 1e6) as i64;
    let record: Option<&mut dyn Write> = file.as_mut().map(|f| f as &mut dyn Write);
    let blend = if args.no_blend {
        Blend::LastStepOnly
    } else {
        Blend::BetweenSteps
    };
    let report = record_run(
        &mut world,
        args.display_hz,
        args.seconds,
        jitter_ns,
        args.seed,
        blend,
        record,
    )
    .map_err(|e| format!("writing the record: {e}"))?;
    if let Some(f) = file.as_mut() {
        f.flush().map_err(|e| format!("writing the record: {e}"))?;
    }
    let json = serde_json::json!({
        "scene": path.display().to_string(),
        "display_hz": report.display_hz,
        "physics_hz": crate::STEP_HZ,
        "blend": if args.no_blend { "last_step_only" } else { "between_steps" },
        "frames": report.frames,
        "physics_steps": report.physics_steps,
        "frames_in_the_same_step": report.frames_in_the_same_step,
        "frames_with_moving_cubes": report.frames_with_motion,
        "repeated_cube_poses": report.repeated_poses,
    });
    println!("{json}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::load_scene;

    fn smash() -> World {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/scenes/smash.toml");
        let scene = load_scene(std::path::Path::new(path)).expect("smash.toml");
        scene.build_world(WorldConfig::default()).expect("bodies")
    }

    /// Issue 13: a run at 120 Hz (and 72, 90 and 144) against 90 Hz physics, display times wobbling by ±1 ms,
    /// while cubes fly and tumble: many frames share a step interval, yet no moving cube is ever drawn twice in
    /// one place. The same frames drawn from the last step only would repeat poses: the check can fail.
    #[test]
    fn a_moving_cube_is_never_drawn_twice_in_one_place_at_any_refresh_rate() {
        for hz in [72.0, 90.0, 120.0, 144.0] {
            let mut world = smash();
            let report = record_run(&mut world, hz, 3.0, 1_000_000, 7, Blend::BetweenSteps, None).unwrap();
            assert!(report.frames_with_motion > report.frames / 2, "{hz} Hz: {report:?}");
            assert_eq!(report.repeated_poses, 0, "{hz} Hz: {report:?}");
            if hz > 90.0 {
                assert!(report.frames_in_the_same_step > 0, "{hz} Hz: {report:?}");
            }
        }
        // Without the blend (every frame drawing the last step's poses), 120 Hz repeats them: about one frame in
        // four shares its step with the frame before.
        let mut world = smash();
        let report = record_run(&mut world, 120.0, 3.0, 0, 7, Blend::LastStepOnly, None).unwrap();
        assert!(report.repeated_poses > report.frames / 10, "{report:?}");
    }

    #[test]
    fn the_record_holds_a_line_per_frame() {
        let mut world = smash();
        let mut out = Vec::new();
        let report = record_run(&mut world, 120.0, 0.5, 0, 1, Blend::BetweenSteps, Some(&mut out)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count() as u64, report.frames);
        let mut moving = 0;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["alpha"].as_f64().unwrap() >= 0.0);
            assert_eq!(v["period_ns"].as_i64(), Some(8_333_333), "{line}");
            moving += v["moving"].as_array().unwrap().len();
        }
        assert!(moving > 0, "the record names moving cubes");
    }
}
