//! `tumble vr`: the game on an OpenXR headset. The frame loop runs on the runtime's clock (`xrWaitFrame`); the
//! simulation runs beside it at the fixed 90 Hz step, as many steps per display frame as the predicted display
//! time has advanced (none on some frames at 120 Hz, two on some at 72 Hz), so physics never depends on the
//! headset's refresh rate. Hands are located at the frame's predicted display time right before the steps.
//!
//! With `--frames N` it stops after N stereo frames submitted while focused with both hands tracked, and prints a
//! JSON report (the numbers `make test-vr` checks against Monado's simulated headset).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use tumble_engine::physics::{World, WorldConfig};
use tumble_engine::scene::load_scene;
use tumble_engine::xr::{HandInput, SessionState, XrError, XrSession, XrSessionConfig, HAND_COUNT};

/// The fixed physics step (ns): 90 Hz.
pub const STEP_NS: i64 = 1_000_000_000 / 90;
/// Most steps one display frame may run (100 ms of simulation): after a longer stall the simulation drops time
/// rather than spiral. Monado's null compositor paces frames at 20 Hz (4.5 steps a frame), so this must be above 5.
pub const MAX_STEPS_PER_FRAME: u32 = 9;
/// How long to sleep between event polls while the session is not running (the runtime has no frame for us).
const IDLE_POLL: Duration = Duration::from_millis(10);
/// Background colour both eyes are cleared to until the renderer draws the scene (linear RGBA).
const CLEAR_RGBA: [f32; 4] = [0.12, 0.16, 0.22, 1.0];
/// The scene when none is given.
pub const DEFAULT_SCENE: &str = "assets/scenes/table64.toml";

/// What `tumble vr` was asked to do.
#[derive(Clone, Debug)]
pub struct VrOptions {
    pub scene: PathBuf,
    /// Stop after this many stereo frames submitted while focused with both hands tracked.
    pub frames: Option<u64>,
    /// Give up (request exit, report) after this long.
    pub max_seconds: Option<f64>,
}

/// Why `tumble vr` stopped early.
#[derive(Debug, thiserror::Error)]
pub enum VrError {
    #[error(transparent)]
    Xr(#[from] XrError),
    #[error(transparent)]
    Scene(#[from] tumble_engine::scene::SceneError),
}

impl VrError {
    /// VR is not available on this machine (exit code 2), rather than a failure.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, VrError::Xr(e) if e.is_unavailable())
    }
}

/// Counters of one run, for the JSON report.
#[derive(Clone, Debug, Default)]
pub struct VrReport {
    pub runtime: String,
    pub system: String,
    pub device: String,
    pub eye_width: u32,
    pub eye_height: u32,
    pub depth_layer: bool,
    pub play_space: &'static str,
    pub bound_profiles: usize,
    /// Frames that carried a projection layer (stereo: `views` each).
    pub frames_submitted: u64,
    /// Frames ended without a layer (the runtime said not to render, or views could not be located).
    pub frames_empty: u64,
    /// Views per submitted frame (2 for stereo), the most seen.
    pub views: u32,
    pub frames_focused: u64,
    /// Submitted while focused with both hands tracked: what `--frames` counts.
    pub frames_focused_hands_tracked: u64,
    pub hand_tracked_frames: [u64; HAND_COUNT],
    pub max_session_state: SessionState,
    pub final_session_state: SessionState,
    pub physics_steps: u64,
    pub grabs: u64,
    pub cpu_frame_ms_total: f64,
    /// The runtime's predicted display period, last seen (ms).
    pub display_period_ms: f64,
    pub timed_out: bool,
}

impl VrReport {
    pub fn mean_cpu_frame_ms(&self) -> f64 {
        let frames = self.frames_submitted + self.frames_empty;
        if frames == 0 {
            0.0
        } else {
            self.cpu_frame_ms_total / frames as f64
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "frames_submitted": self.frames_submitted,
            "views": self.views,
            "max_session_state": self.max_session_state.name(),
            "left_hand_tracked": self.hand_tracked_frames[0] > 0,
            "right_hand_tracked": self.hand_tracked_frames[1] > 0,
            "grabs": self.grabs,
            "mean_cpu_frame_ms": self.mean_cpu_frame_ms(),
            "frames_empty": self.frames_empty,
            "frames_focused": self.frames_focused,
            "frames_focused_hands_tracked": self.frames_focused_hands_tracked,
            "left_hand_tracked_frames": self.hand_tracked_frames[0],
            "right_hand_tracked_frames": self.hand_tracked_frames[1],
            "final_session_state": self.final_session_state.name(),
            "physics_steps": self.physics_steps,
            "display_period_ms": self.display_period_ms,
            "runtime": self.runtime,
            "system": self.system,
            "vulkan_device": self.device,
            "eye_width": self.eye_width,
            "eye_height": self.eye_height,
            "depth_layer": self.depth_layer,
            "play_space": self.play_space,
            "bound_profiles": self.bound_profiles,
            "timed_out": self.timed_out,
        })
    }
}

/// `tumble vr`'s command line.
#[derive(clap::Args, Debug, Clone)]
pub struct VrArgs {
    /// Scene file (TOML; the format is in assets/scenes/README.md)
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SCENE)]
    pub scene: PathBuf,
    /// Stop after N stereo frames submitted while focused with both hands tracked (default: until the runtime
    /// ends the session)
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Give up after S seconds (request exit and report what was reached)
    #[arg(long, value_name = "S")]
    pub max_seconds: Option<f64>,
    /// Print one JSON object on stdout instead of a summary on stderr
    #[arg(long)]
    pub json: bool,
}

/// `tumble vr`: runs, then reports (JSON on stdout, or a line on stderr).
pub fn run_cli(args: &VrArgs) -> Result<(), VrError> {
    let report = run(&VrOptions {
        scene: args.scene.clone(),
        frames: args.frames,
        max_seconds: args.max_seconds,
    })?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        eprintln!(
            "vr: {} stereo frames ({} focused with both hands tracked), reached {}, {} grabs, {:.2} ms CPU per frame",
            report.frames_submitted,
            report.frames_focused_hands_tracked,
            report.max_session_state.name(),
            report.grabs,
            report.mean_cpu_frame_ms()
        );
    }
    Ok(())
}

/// Runs the VR client until the runtime ends the session, or `options.frames` are done.
pub fn run(options: &VrOptions) -> Result<VrReport, VrError> {
    let scene = load_scene(&options.scene)?;
    let mut world = scene.build_world(WorldConfig::default())?;
    let mut xr = XrSession::new(&XrSessionConfig {
        app_name: "Tumble".into(),
    })?;
    let mut report = VrReport {
        runtime: xr.runtime_name().to_owned(),
        system: xr.system_name().to_owned(),
        device: xr.device_name().to_owned(),
        eye_width: xr.eye_extent().0,
        eye_height: xr.eye_extent().1,
        depth_layer: xr.has_depth_layer(),
        play_space: xr.play_space_name(),
        bound_profiles: xr.bound_profiles(),
        ..VrReport::default()
    };
    tracing::info!(scene = %scene.name, bodies = world.body_count(), "VR session ready; waiting for the runtime");

    let started = Instant::now();
    let mut hands = [HandInput::default(); HAND_COUNT];
    let mut clock = StepClock::default();
    loop {
        if !xr.poll_events()? {
            break;
        }
        let out_of_time = options
            .max_seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s);
        let enough = options.frames.is_some_and(|n| report.frames_focused_hands_tracked >= n);
        if out_of_time || enough {
            report.timed_out |= out_of_time && !enough;
            xr.request_exit()?;
            if !xr.is_running() {
                break;
            }
        }
        if !xr.is_running() {
            std::thread::sleep(IDLE_POLL);
            continue;
        }
        frame(&mut xr, &mut world, &mut hands, &mut clock, &mut report)?;
    }
    report.max_session_state = xr.lifecycle().max_state;
    report.final_session_state = xr.lifecycle().state;
    Ok(report)
}

/// One display frame: wait, hands, fixed steps up to the display time, render, submit.
fn frame(
    xr: &mut XrSession,
    world: &mut World,
    hands: &mut [HandInput; HAND_COUNT],
    clock: &mut StepClock,
    report: &mut VrReport,
) -> Result<(), VrError> {
    let timing = xr.wait_frame()?;
    let work_started = Instant::now();
    xr.locate_hands(&timing, hands)?;
    for _ in 0..clock.steps_due(timing.predicted_display_time_ns) {
        world.step();
        report.physics_steps += 1;
    }
    let submitted = xr.end_frame(&timing, CLEAR_RGBA)?;
    report.cpu_frame_ms_total += work_started.elapsed().as_secs_f64() * 1e3;
    report.display_period_ms = timing.predicted_display_period_ns as f64 / 1e6;

    if submitted.views == 0 {
        report.frames_empty += 1;
        return Ok(());
    }
    report.frames_submitted += 1;
    report.views = report.views.max(submitted.views);
    if xr.lifecycle().state == SessionState::Focused {
        report.frames_focused += 1;
        for (count, hand) in report.hand_tracked_frames.iter_mut().zip(hands.iter()) {
            *count += u64::from(hand.tracked);
        }
        if hands.iter().all(|h| h.tracked) {
            report.frames_focused_hands_tracked += 1;
        }
    }
    Ok(())
}

/// The fixed-step clock: the simulation's time follows the predicted display time in whole 90 Hz steps.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepClock {
    /// Display time the simulation has reached (ns); None before the first frame.
    sim_time_ns: Option<i64>,
}

impl StepClock {
    /// Steps to run so the simulation reaches `display_time_ns` (at most [`MAX_STEPS_PER_FRAME`]; time beyond
    /// that is dropped). The first frame runs none: it only sets the clock.
    pub fn steps_due(&mut self, display_time_ns: i64) -> u32 {
        let Some(sim) = self.sim_time_ns else {
            self.sim_time_ns = Some(display_time_ns);
            return 0;
        };
        let behind = display_time_ns - sim;
        if behind <= 0 {
            return 0;
        }
        let due = behind / STEP_NS;
        if due > i64::from(MAX_STEPS_PER_FRAME) {
            // A stall (or a paused headset): run the cap and let the simulation skip the rest.
            self.sim_time_ns = Some(display_time_ns);
            return MAX_STEPS_PER_FRAME;
        }
        self.sim_time_ns = Some(sim + due * STEP_NS);
        due as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the clock over `frames` display frames of `period_ns` and counts steps.
    fn steps_over(period_ns: i64, frames: i64) -> u64 {
        let mut clock = StepClock::default();
        let mut steps = 0u64;
        for f in 0..=frames {
            steps += u64::from(clock.steps_due(1_000_000 + f * period_ns));
        }
        steps
    }

    #[test]
    fn ninety_steps_a_second_whatever_the_display_rate() {
        for hz in [60, 72, 90, 120, 144] {
            let period = 1_000_000_000 / hz;
            let steps = steps_over(period, hz * 10);
            assert!((899..=900).contains(&steps), "{hz} Hz display: {steps} steps in 10 s");
        }
    }

    #[test]
    fn a_stall_runs_the_cap_then_catches_up_in_step() {
        let mut clock = StepClock::default();
        assert_eq!(clock.steps_due(0), 0, "the first frame only sets the clock");
        assert_eq!(clock.steps_due(STEP_NS), 1);
        assert_eq!(
            clock.steps_due(STEP_NS + 2_000_000_000),
            MAX_STEPS_PER_FRAME,
            "a 2 s stall is capped"
        );
        let next = clock.steps_due(STEP_NS + 2_000_000_000 + STEP_NS);
        assert!(
            next <= 1,
            "after the cap the clock has dropped the stall, not queued it ({next})"
        );
    }

    #[test]
    fn time_going_backwards_runs_nothing() {
        let mut clock = StepClock::default();
        clock.steps_due(10 * STEP_NS);
        assert_eq!(clock.steps_due(5 * STEP_NS), 0);
        assert_eq!(clock.steps_due(11 * STEP_NS), 1);
    }
}
