//! `tumble vr`: the game on an OpenXR headset. The frame loop runs on the runtime's clock (`xrWaitFrame`); the
//! simulation runs beside it at the fixed 90 Hz step, as many steps per display frame as the predicted display
//! time has advanced (none on some frames at 120 Hz, two on some at 72 Hz), so physics never depends on the
//! headset's refresh rate. Hands are located at the frame's predicted display time right before the steps.
//!
//! With `--host` or `--join ADDR:PORT` the headset plays in a networked game: the world is a session peer's
//! (`crate::session::net_play`, shared with the desktop view), cubes tinted by authority.
//!
//! With `--frames N` it stops after N stereo frames submitted while focused with both hands tracked, and prints a
//! JSON report (the numbers `make test-vr` checks against Monado's simulated headset).

pub mod clock;
pub mod draw;
pub mod hands;
pub mod mirror_window;
pub mod notice;
pub mod pacing;
pub mod report;
pub mod scripted;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use tumble_engine::physics::{PhysicsError, World, WorldConfig};
use tumble_engine::scene::load_scene;
use tumble_engine::xr::{
    FrameSubmitted, FrameTiming, HandInput as XrHand, SessionState, XrError, XrSession, XrSessionConfig,
};

use crate::avatar::{Avatar, Pose, HAND_COUNT};
use crate::interaction::{Interaction, InteractionEvent};
use crate::interpolate::PoseBuffer;
use crate::session::net_play::{HostOptions, JoinOptions, NetPlay, NetPlayError, DEFAULT_PORT, PLAY_KBPS_BUDGET};
use crate::session::net_runner::NetRunner;
use clock::{frame_alpha, StepClock};
use draw::{FramePoses, VrRenderer};
use hands::{avatar_input_at, HandsAt, PlaySpace};
pub use report::VrReport;

/// The fixed physics step (ns): 90 Hz.
pub const STEP_NS: i64 = 1_000_000_000 / crate::STEP_HZ as i64;
/// Most steps one display frame may run (100 ms of simulation): after a longer stall the simulation drops time
/// rather than spiral. Monado's null compositor paces frames at 20 Hz (4.5 steps a frame), so this must be above 5.
pub const MAX_STEPS_PER_FRAME: u32 = 9;
/// How long to sleep between event polls while the session is not running (the runtime has no frame for us).
const IDLE_POLL: Duration = Duration::from_millis(10);
/// Background colour both eyes are cleared to until the renderer draws the scene (linear RGBA).
const CLEAR_RGBA: [f32; 4] = [0.12, 0.16, 0.22, 1.0];
/// The haptic pulse on a grab: short and firm enough to feel through a controller.
const GRAB_PULSE_NS: i64 = 30_000_000;
const GRAB_PULSE_AMPLITUDE: f32 = 0.6;
/// The fixed step (s), as the avatar's velocity estimate takes it.
const STEP_S: f32 = crate::STEP_S as f32;
/// Focused frames before allocations are counted: the first frames bind the interaction profile and start the
/// script (one-off work that may allocate).
const WARM_UP_FRAMES: u64 = 30;
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
    /// Drive the grips by script (see [`scripted`]) where the controllers cannot squeeze.
    pub scripted_grab: bool,
    /// Clear both eyes to a plain colour (with a depth layer) instead of drawing the scene.
    pub clear_only: bool,
    /// Draw each eye in a pass of its own rather than one multiview pass.
    pub pass_per_eye: bool,
    /// Left-thumbstick movement speed at full tilt (m/s; 0: off).
    pub move_speed: f32,
    /// Right-thumbstick snap turn per flick (rad; 0: off).
    pub snap_turn_rad: f32,
    /// Alone, or a networked game's host or guest.
    pub net: VrNet,
    /// Write one JSON line per drawn frame here (see [`pacing::write_frame_line`]).
    pub record: Option<PathBuf>,
    /// Show the left eye in a desktop window where there is a display.
    pub mirror: bool,
}

/// Whether `tumble vr` plays alone or in a session (`--host`, `--join ADDR:PORT`).
#[derive(Clone, Debug, PartialEq)]
pub enum VrNet {
    Alone,
    /// Host on `port` with `bots` guest seats filled by bots (as `tumble host`), asking the router for a port
    /// mapping unless `port_mapping` is false.
    Host {
        port: u16,
        bots: usize,
        port_mapping: bool,
    },
    Join(tumble_net::join_code::JoinTarget),
}

/// Why `tumble vr` stopped early.
#[derive(Debug, thiserror::Error)]
pub enum VrError {
    #[error(transparent)]
    Xr(#[from] XrError),
    #[error(transparent)]
    Scene(#[from] tumble_engine::scene::SceneError),
    #[error("physics refused an interaction: {0}")]
    Physics(#[from] PhysicsError),
    #[error("renderer: {0}")]
    Render(#[from] tumble_engine::render::RenderError),
    #[error(transparent)]
    Net(#[from] NetPlayError),
    #[error("the frame record {path}: {source}")]
    Record { path: PathBuf, source: std::io::Error },
}

impl VrError {
    /// VR is not available on this machine (exit code 2), rather than a failure.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, VrError::Xr(e) if e.is_unavailable())
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
    /// Grab test mode: a scripted grip closes and opens the hands on a cycle (right grabs, left takes over, both
    /// let go), on the runtime's tracked hand poses, with the play space placed so both hands hover over a cube.
    /// For runtimes whose controllers cannot squeeze (Monado's simulated simple controllers)
    #[arg(long)]
    pub scripted_grab: bool,
    /// Clear both eyes to a plain colour instead of drawing the scene (isolates runtime problems from rendering)
    #[arg(long)]
    pub clear_only: bool,
    /// Draw each eye in a pass of its own instead of one multiview pass (for comparing the two, or a driver whose
    /// multiview fails)
    #[arg(long)]
    pub pass_per_eye: bool,
    /// Smooth movement on the left thumbstick, along where the left hand points (m/s at full tilt; 0: off)
    #[arg(long, value_name = "M", default_value_t = hands::DEFAULT_MOVE_SPEED_M_S)]
    pub move_speed: f32,
    /// Snap turn on a right-stick flick sideways, about the head (degrees, 0 to 180; 0: off)
    #[arg(long, value_name = "DEG", default_value_t = hands::DEFAULT_SNAP_TURN_DEG)]
    pub snap_turn_deg: f32,
    /// Print one JSON object on stdout instead of a summary on stderr
    #[arg(long)]
    pub json: bool,
    /// Write one JSON line per drawn frame here: the predicted display time and period, the simulation time it
    /// was drawn after, the blend between the last two steps, and each moving cube's drawn position
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// No mirror window (by default the left eye is also shown in a desktop window when there is a display)
    #[arg(long)]
    pub no_mirror: bool,
    /// Host a game (as `tumble host`): others join with the join code it logs and shows (`tumble join CODE` or
    /// `tumble vr --join CODE`)
    #[arg(long, conflicts_with = "join")]
    pub host: bool,
    /// Join a game by its join code, or at ADDR:PORT if it is open
    #[arg(long, value_name = "CODE|ADDR:PORT", value_parser = crate::desktop::play_cli::parse_join_target)]
    pub join: Option<tumble_net::join_code::JoinTarget>,
    /// With --host: the UDP port to listen on
    #[arg(long, value_name = "P", default_value_t = DEFAULT_PORT, requires = "host")]
    pub port: u16,
    /// With --host: guest seats filled by bots in this process (0 to 3)
    #[arg(long, value_name = "N", default_value_t = 0, requires = "host", value_parser = clap::value_parser!(u8).range(0..=3))]
    pub bots: u8,
    /// With --host: do not ask the router for a port mapping (as `tumble host --no-port-mapping`)
    #[arg(long, requires = "host")]
    pub no_port_mapping: bool,
}

impl VrArgs {
    /// Alone, host or guest, from the flags.
    pub fn net(&self) -> VrNet {
        match (self.host, self.join) {
            (true, _) => VrNet::Host {
                port: self.port,
                bots: usize::from(self.bots),
                port_mapping: !self.no_port_mapping,
            },
            (false, Some(addr)) => VrNet::Join(addr),
            (false, None) => VrNet::Alone,
        }
    }
}

/// The networked game a VR session plays in, if any (the same [`NetPlay`] the desktop view runs; the headset's
/// hands drive its seat 0).
pub fn start_net(scene: &std::path::Path, net: &VrNet) -> Result<Option<NetPlay>, NetPlayError> {
    Ok(match net {
        VrNet::Alone => None,
        VrNet::Host {
            port,
            bots,
            port_mapping,
        } => Some(NetPlay::host(&HostOptions {
            scene: scene.to_path_buf(),
            port: *port,
            bots: *bots,
            playing: true,
            kbps_budget: PLAY_KBPS_BUDGET,
            open: false,
            public_addr: None,
            port_mapping: *port_mapping,
            port_mapping_lifetime: crate::session::net_play::PORT_MAPPING_LIFETIME,
        })?),
        VrNet::Join(host) => Some(NetPlay::join(&JoinOptions {
            scene: scene.to_path_buf(),
            host: *host,
            kbps_budget: PLAY_KBPS_BUDGET,
            pretend_version: None,
        })?),
    })
}

/// `tumble vr`: runs, then reports (JSON on stdout, or a line on stderr).
pub fn run_cli(args: &VrArgs) -> Result<(), VrError> {
    let report = run(&VrOptions {
        scene: args.scene.clone(),
        frames: args.frames,
        max_seconds: args.max_seconds,
        scripted_grab: args.scripted_grab,
        clear_only: args.clear_only,
        pass_per_eye: args.pass_per_eye,
        snap_turn_rad: if args.snap_turn_deg.is_finite() {
            args.snap_turn_deg.clamp(0.0, 180.0).to_radians()
        } else {
            0.0
        },
        move_speed: if args.move_speed.is_finite() {
            args.move_speed.max(0.0)
        } else {
            0.0
        },
        net: args.net(),
        record: args.record.clone(),
        mirror: !args.no_mirror,
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
    world.set_threads(tumble_engine::physics::default_threads());
    // Before the runtime: a path that cannot be written is the user's mistake, told at once.
    let record = match &options.record {
        Some(path) => Some(FrameRecord::create(path)?),
        None => None,
    };
    // A guest joins first: a wrong scene, another build or a full host is told before any headset session or
    // window opens. (A host starts after the runtime: no headset is then a quick "unavailable", with no port bound.)
    let mut net = match options.net {
        VrNet::Join(_) => start_net(&options.scene, &options.net)?,
        _ => None,
    };
    let mut mirror_window = connect_mirror_window(options.mirror);
    let window_extensions = mirror_window
        .as_ref()
        .and_then(|w| {
            w.vulkan_extensions()
                .map_err(|e| tracing::warn!("no mirror window: {e}"))
                .ok()
        })
        .unwrap_or_default();
    let mut xr = new_session(&window_extensions)?;
    // The window appears only now that there is a session to mirror.
    if let Some(Err(e)) = mirror_window.as_mut().map(mirror_window::MirrorWindow::show) {
        tracing::warn!("no mirror window: {e}");
        mirror_window = None;
    }
    // Both eyes in one multiview pass, unless a pass per eye is asked for. (No driver is known to need it: the
    // crash Mesa 25.0's lavapipe had in the two-view pass is avoided in the renderer, docs/mesa-multiview-crash.md.)
    let pass_per_eye = options.pass_per_eye;
    let renderer = new_renderer(&xr, options, world.body_count(), mirror_window.as_ref())?;
    if net.is_none() {
        net = start_net(&options.scene, &options.net)?;
    }
    // Declared after `xr`, so dropped before it: the renderer uses the session's device.
    let mut game = VrGame::new(world, options.scripted_grab, renderer);
    game.space = start_space(scene.spawn, &game.world);
    game.move_speed = options.move_speed;
    game.snap_turn_rad = options.snap_turn_rad;
    // A networked game steps on its own clock, on a thread: the headset's frames (or their absence, while the
    // headset is off) change nothing for the other players.
    game.net = net.map(NetRunner::start).transpose()?;
    game.record = record;
    game.mirror_window = mirror_window;
    game.report = VrReport {
        renderer: match (options.clear_only, pass_per_eye) {
            (true, _) => "clear",
            (false, false) => "engine::render (one multiview pass)",
            (false, true) => "engine::render (one pass per eye)",
        },
        render_path: match (options.clear_only, pass_per_eye) {
            (true, _) => "clear",
            (false, false) => "multiview",
            (false, true) => "per-eye",
        },
        render_path_reason: (options.pass_per_eye && !options.clear_only).then(|| "asked (--pass-per-eye)".to_owned()),
        grab_driver: if options.scripted_grab {
            scripted::GRAB_DRIVER_SCRIPTED
        } else {
            scripted::GRAB_DRIVER_CONTROLLERS
        },
        ..VrReport::default()
    };
    game.report.mirror_window = game.renderer.as_ref().is_some_and(VrRenderer::has_mirror);
    describe_session(&mut game.report, &xr);
    tracing::info!(scene = %scene.name, bodies = game.world.body_count(), "VR session ready; waiting for the runtime");

    let started = Instant::now();
    loop {
        let played = play(&mut xr, &mut game, options, started);
        let lost = match played {
            Ok(()) => xr.lifecycle().lost,
            Err(VrError::Xr(e)) if e.is_lost() => {
                tracing::warn!("{e}");
                true
            }
            Err(e) => return Err(e),
        };
        finish_report(&mut game.report, &xr);
        if !lost {
            break;
        }
        // The runtime lost the session (a headset unplugged, the runtime restarting): drop everything made from it,
        // the renderer first, and make it again; the world plays on where it was.
        game.report.sessions_lost += 1;
        tracing::warn!("the OpenXR session was lost; making a new one");
        game.count_mirror_frames();
        game.renderer = None;
        drop(xr);
        let Some(again) = recreate_session(options, started, &window_extensions)? else {
            break;
        };
        xr = again;
        game.renderer = new_renderer(&xr, options, game.world.body_count(), game.mirror_window.as_ref())?;
        game.forget_hand_motion();
        describe_session(&mut game.report, &xr);
        game.report.sessions_recreated += 1;
    }
    game.count_mirror_frames();
    game.report.frames_with_moving_cubes = game.repeats.frames_with_motion;
    game.report.repeated_cube_poses = game.repeats.repeated_poses;
    game.report.frames_in_the_same_step = game.repeats.frames_in_the_same_step;
    if let Some(record) = game.record.as_mut() {
        record.finish()?;
        game.report.frames_recorded = record.frames;
    }
    game.report.allocations_total = crate::alloc_count::allocations();
    game.report.validation_messages = tumble_engine::vk_validation::validation_messages();
    Ok(game.report)
}

/// How long `tumble vr` keeps trying to make a new session after the runtime lost one (s), and how long it waits
/// between tries: a runtime restarting takes seconds.
const RECREATE_FOR_S: f64 = 60.0;
const RECREATE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

fn new_session(window_extensions: &[&'static std::ffi::CStr]) -> Result<XrSession, XrError> {
    XrSession::new(&XrSessionConfig {
        app_name: "Tumble".into(),
        window_extensions: window_extensions.to_vec(),
    })
}

/// The mirror window's display connection, where a mirror is wanted and there is a display to put it on (none is
/// no error: a headset needs no desktop).
fn connect_mirror_window(wanted: bool) -> Option<mirror_window::MirrorWindow> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let (wayland, x11) = (set("WAYLAND_DISPLAY"), set("DISPLAY"));
    if !(wanted && (wayland || x11)) {
        return None;
    }
    // winit's X11 backend panics without libxkbcommon-x11; say so instead.
    if !wayland && xkbcommon_dl::x11::xkbcommon_x11_option().is_none() {
        tracing::warn!("no mirror window: libxkbcommon-x11 is missing (apt-get install libxkbcommon-x11-0)");
        return None;
    }
    match mirror_window::MirrorWindow::connect() {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!("no mirror window: {e}");
            None
        }
    }
}

/// The scene renderer on the session's device, unless `--clear-only`; with a mirror into `window` when given.
fn new_renderer(
    xr: &XrSession,
    options: &VrOptions,
    bodies: usize,
    window: Option<&mirror_window::MirrorWindow>,
) -> Result<Option<VrRenderer>, VrError> {
    if options.clear_only {
        return Ok(None);
    }
    Ok(Some(VrRenderer::new(xr, bodies, options.pass_per_eye, window)?))
}

/// A new session after a lost one, tried every [`RECREATE_EVERY`] while the runtime or headset is not back, for
/// [`RECREATE_FOR_S`] or until `--max-seconds`; `None` when it never came back.
fn recreate_session(
    options: &VrOptions,
    started: Instant,
    window_extensions: &[&'static std::ffi::CStr],
) -> Result<Option<XrSession>, VrError> {
    let tried_since = Instant::now();
    loop {
        match new_session(window_extensions) {
            Ok(xr) => return Ok(Some(xr)),
            Err(e) if e.is_unavailable() || e.is_lost() => tracing::info!("no session yet: {e}"),
            Err(e) => return Err(e.into()),
        }
        let out_of_time = options
            .max_seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s);
        if out_of_time || tried_since.elapsed().as_secs_f64() >= RECREATE_FOR_S {
            tracing::warn!("the runtime did not come back; leaving");
            return Ok(None);
        }
        std::thread::sleep(RECREATE_EVERY);
    }
}

/// The report's facts about the session: runtime, system, device, eyes, depth, space, bindings, validation.
fn describe_session(report: &mut VrReport, xr: &XrSession) {
    report.runtime = xr.runtime_name().to_owned();
    report.system = xr.system_name().to_owned();
    report.device = xr.device_name().to_owned();
    (report.eye_width, report.eye_height) = xr.eye_extent();
    report.depth_layer = xr.has_depth_layer();
    report.play_space = xr.play_space_name();
    report.bound_profiles = xr.bound_profiles();
    report.validation_layers = xr.vulkan().validation_on();
}

/// Frames until the runtime ends (or loses) the session, or `options.frames` or `--max-seconds` are done.
fn play(xr: &mut XrSession, game: &mut VrGame, options: &VrOptions, started: Instant) -> Result<(), VrError> {
    loop {
        if !xr.poll_events()? {
            return Ok(());
        }
        let out_of_time = options
            .max_seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s);
        let enough = options
            .frames
            .is_some_and(|n| game.report.frames_focused_hands_tracked >= n);
        // Ctrl-C in the terminal ends the session the way the runtime would: the game (and its goodbye) after it.
        if out_of_time || enough || crate::quit::requested() {
            game.report.timed_out |= out_of_time && !enough;
            xr.request_exit()?;
            if !xr.is_running() {
                return Ok(());
            }
        }
        if !xr.is_running() {
            std::thread::sleep(IDLE_POLL);
            continue;
        }
        game.frame(xr)?;
    }
}

/// How long after now a frame waited for with `timing` is shown: one display period (the runtime predicts the
/// display of the frame it just let begin about a period ahead). A networked game's poses are interpolated by the
/// real clock at that moment.
fn display_lead(timing: &FrameTiming) -> Duration {
    Duration::from_nanos(timing.predicted_display_period_ns.clamp(0, 100_000_000) as u64)
}

/// What a session adds to the report at its end (summed over sessions where the runtime counts).
fn finish_report(report: &mut VrReport, xr: &XrSession) {
    let life = xr.lifecycle();
    if life.max_state > report.max_session_state {
        report.max_session_state = life.max_state;
    }
    report.final_session_state = life.state;
    report.image_wait_timeouts += xr.image_wait_timeouts();
    report.refresh_rate_hz = xr.refresh_rate_hz();
    report.frames_orientation_only += xr.frames_orientation_only();
    report.recentres += xr.recentres();
}

/// Clear ground between the player and the nearest cube at the start (m).
const SPAWN_CLEARANCE_M: f32 = 1.2;

/// Where the play space starts: at the scene's `[spawn]` point facing where it says, or else at [`spawn_origin`]
/// facing −z (towards the cubes).
fn start_space(spawn: Option<tumble_engine::scene::Spawn>, world: &World) -> PlaySpace {
    match spawn {
        Some(s) => PlaySpace {
            origin: s.position,
            yaw: Quat::from_rotation_y(s.yaw_rad()),
        },
        None => PlaySpace::at(spawn_origin(world)),
    }
}

/// Where the play space starts without a `[spawn]`: centred on the scene's bodies, `SPAWN_CLEARANCE_M` beyond their +Z side (a STAGE or
/// LOCAL space looks down −Z, so the player faces them), at the ground (y = 0, or the lowest body's bottom if that
/// is higher). The origin when the scene has none.
fn spawn_origin(world: &World) -> Vec3 {
    let mut bounds: Option<(Vec3, Vec3)> = None;
    for id in world.body_ids() {
        let (Ok(state), Ok(half)) = (world.state(id), world.half_extents(id)) else {
            continue;
        };
        if world.is_removed(id).unwrap_or(true) {
            continue;
        }
        // A rotated box stays inside the sphere around its half extents.
        let r = Vec3::splat(half.length());
        let (lo, hi) = (state.position - r, state.position + r);
        bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
    }
    bounds.map_or(Vec3::ZERO, |(lo, hi)| {
        Vec3::new((lo.x + hi.x) * 0.5, lo.y.max(0.0), hi.z + SPAWN_CLEARANCE_M)
    })
}

/// `--record`: one JSON line per drawn frame, buffered (a write error is kept and told at the end, not per frame).
struct FrameRecord {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    frames: u64,
    error: Option<std::io::Error>,
}

impl FrameRecord {
    fn create(path: &std::path::Path) -> Result<FrameRecord, VrError> {
        let file = std::fs::File::create(path).map_err(|source| VrError::Record {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(FrameRecord {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            frames: 0,
            error: None,
        })
    }

    fn frame(&mut self, display_ns: i64, period_ns: i64, sim_ns: Option<i64>, alpha: f32, moving: &[(u32, Vec3)]) {
        if self.error.is_some() {
            return;
        }
        match pacing::write_frame_line(&mut self.out, self.frames, display_ns, period_ns, sim_ns, alpha, moving) {
            Ok(()) => self.frames += 1,
            Err(e) => self.error = Some(e),
        }
    }

    fn finish(&mut self) -> Result<(), VrError> {
        use std::io::Write;
        let result = match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        };
        result.map_err(|source| VrError::Record {
            path: self.path.clone(),
            source,
        })
    }
}

/// The simulation side of a VR session: the world, the player's avatar and interaction, and the clocks.
struct VrGame {
    world: World,
    avatar: Avatar,
    interaction: Interaction,
    clock: StepClock,
    /// Every body's pose after the last two steps, for frames drawn between them (a session has its own).
    poses: PoseBuffer,
    /// Moving cubes drawn where the frame before drew them (judder), over the run.
    repeats: pacing::RepeatCheck,
    /// Hands at the last two frames' display times (for per-step interpolation).
    prev_hands: Option<HandsAt>,
    /// The last frame's predicted display time (ns), for missed frames.
    previous_display_ns: Option<i64>,
    /// Left-thumbstick movement at full tilt (m/s; 0: off).
    move_speed: f32,
    /// Right-stick snap turn per flick (rad; 0: off).
    snap_turn_rad: f32,
    hands: HandsAt,
    /// Where the runtime's play space sits in the world (where the player stands, which way the room faces).
    space: PlaySpace,
    /// The head in the play space (the eyes' midpoint at the last frame): the pivot of a snap turn.
    head_local: Vec3,
    /// A right-stick flick already turned the player; the stick must come back first.
    snap_latched: bool,
    scripted_grab: bool,
    /// The scene renderer; `None` clears the eyes to a colour instead.
    renderer: Option<VrRenderer>,
    /// Steps since the scripted grip started (once both hands were first tracked while focused).
    script_step: Option<u32>,
    report: VrReport,
    /// A networked game, stepping on its own thread: its shown peer's world, hands and interaction replace the ones
    /// above.
    net: Option<NetRunner>,
    /// Its grabs and releases taken each frame (for the haptic pulses and the report), sized once.
    net_events: Vec<InteractionEvent>,
    /// Its step count at the last frame (its steps this frame are the report's physics steps).
    net_steps_seen: u64,
    /// `--record`: every drawn frame as a JSON line.
    record: Option<FrameRecord>,
    /// The desktop window mirroring the left eye. Last: the renderer's mirror draws into it and goes first.
    mirror_window: Option<mirror_window::MirrorWindow>,
}

impl VrGame {
    fn new(world: World, scripted_grab: bool, renderer: Option<VrRenderer>) -> VrGame {
        let mut poses = PoseBuffer::default();
        poses.reset(&world);
        let origin = spawn_origin(&world);
        VrGame {
            poses,
            repeats: pacing::RepeatCheck::with_capacity(world.body_count()),
            world,
            avatar: Avatar::default(),
            interaction: Interaction::default(),
            clock: StepClock::default(),
            prev_hands: None,
            previous_display_ns: None,
            move_speed: hands::DEFAULT_MOVE_SPEED_M_S,
            snap_turn_rad: hands::DEFAULT_SNAP_TURN_DEG.to_radians(),
            hands: HandsAt {
                time_ns: 0,
                hands: [XrHand::default(); HAND_COUNT],
                head: None,
            },
            space: PlaySpace::at(origin),
            head_local: Vec3::new(0.0, 1.7, 0.0),
            snap_latched: false,
            scripted_grab,
            renderer,
            script_step: None,
            report: VrReport::default(),
            net: None,
            record: None,
            mirror_window: None,
            net_events: Vec::with_capacity(64),
            net_steps_seen: 0,
        }
    }

    /// One display frame: wait, hands at the predicted display time, the fixed steps up to it, render, submit.
    fn frame(&mut self, xr: &mut XrSession) -> Result<(), VrError> {
        // This thread's allocations: the frame loop's own (the mirror window's event thread allocates inside
        // winit when the window system speaks; that is not a frame's work).
        let allocations_before = crate::alloc_count::thread_allocations();
        let builds_before = self.mirror_swapchain_builds();
        let steady = self.report.frames_focused >= WARM_UP_FRAMES;
        self.pump_mirror_window();
        let timing = xr.wait_frame()?;
        let work_started = Instant::now();
        self.prev_hands = Some(self.hands);
        if xr.take_recentred() {
            self.forget_hand_motion();
        }
        self.hands.time_ns = timing.predicted_display_time_ns;
        xr.locate_hands(&timing, &mut self.hands.hands)?;
        self.hands.head = xr.locate_head(&timing)?.map(|(p, q)| Pose::new(p, q));
        let focused = xr.lifecycle().input_active();
        self.walk();
        if self.scripted_grab && focused && self.script_step.is_none() {
            self.start_script();
        }
        self.simulate(xr, &timing, focused)?;
        let submitted = self.render(xr, &timing)?;
        self.report.frames_with_depth += u64::from(submitted.depth);
        self.count_frame(xr, &timing, submitted.views, work_started);
        // A frame in which the mirror made a new swapchain (its first, or after a resize) did one-off work.
        let mirror_settled = self.mirror_swapchain_builds() == builds_before;
        if steady && mirror_settled && xr.lifecycle().input_active() {
            self.report.steady_frames += 1;
            self.report.steady_frame_allocations += crate::alloc_count::thread_allocations() - allocations_before;
        }
        Ok(())
    }

    /// Swapchains the current renderer's mirror has made (0 without one).
    fn mirror_swapchain_builds(&self) -> u64 {
        self.renderer.as_ref().map_or(0, VrRenderer::mirror_swapchain_builds)
    }

    /// Views located now (as late as possible), the scene drawn into the acquired images (or cleared), submitted.
    /// The frame draws the hands where the runtime predicts them at the display time, and the cubes between the
    /// last two steps as far along as the display time is past the last one.
    fn render(&mut self, xr: &mut XrSession, timing: &FrameTiming) -> Result<FrameSubmitted, VrError> {
        let mut depth_written = false;
        let display_ns = timing.predicted_display_time_ns;
        let alpha = frame_alpha(self.clock.sim_time_ns(), display_ns);
        let grips = self.grips(xr.lifecycle().input_active());
        let hands_now = avatar_input_at(self.prev_hands.as_ref(), &self.hands, display_ns, grips, self.space);
        if let Some(runner) = self.net.as_ref() {
            return self.render_net(xr, timing, &hands_now, runner.alpha_ahead(display_lead(timing)));
        }
        if let Some(target) = xr.acquire_frame(timing)? {
            self.head_local = (target.eyes[0].position + target.eyes[1].position) * 0.5;
            let (poses, mut avatar) = (&self.poses, self.avatar);
            avatar.update(&hands_now, STEP_S);
            let shown = FramePoses { poses, alpha, avatar };
            let sim_ns = self.clock.sim_time_ns();
            self.repeats
                .observe(&self.world, &self.interaction, None, &shown, sim_ns);
            if let Some(record) = self.record.as_mut() {
                let period_ns = timing.predicted_display_period_ns;
                record.frame(display_ns, period_ns, sim_ns, alpha, self.repeats.moving());
            }
            depth_written = match self.renderer.as_mut() {
                Some(r) => r.draw(&target, self.space, &self.world, &self.interaction, None, &shown)?,
                None => {
                    xr.clear_target(&target, CLEAR_RGBA)?;
                    true
                }
            };
        }
        Ok(xr.submit_frame(timing, depth_written)?)
    }

    /// [`VrGame::render`] in a networked game: the game's lock is held while its world is read into the frame's
    /// boxes, not while the frame is recorded and submitted; cubes drawn `alpha` of the way from the previous step's
    /// poses to the last one's, by the real clock at the display time.
    fn render_net(
        &mut self,
        xr: &mut XrSession,
        timing: &FrameTiming,
        hands_now: &crate::avatar::AvatarInput,
        alpha: f32,
    ) -> Result<FrameSubmitted, VrError> {
        let display_ns = timing.predicted_display_time_ns;
        let mut depth_written = false;
        let Some(target) = xr.acquire_frame(timing)? else {
            return Ok(xr.submit_frame(timing, false)?);
        };
        self.head_local = (target.eyes[0].position + target.eyes[1].position) * 0.5;
        {
            let runner = self.net.as_ref().expect("a networked game");
            let play = runner.lock();
            let p = play.shown();
            let mut avatar = p.avatar;
            avatar.update(hands_now, STEP_S);
            let shown = FramePoses {
                poses: &play.poses,
                alpha,
                avatar,
            };
            // The game's step count stands for the simulation time the frame was drawn after.
            let sim = Some(play.step_count() as i64 * STEP_NS);
            self.repeats.observe(&p.world, &p.interaction, Some(p), &shown, sim);
            if let Some(record) = self.record.as_mut() {
                let period_ns = timing.predicted_display_period_ns;
                record.frame(display_ns, period_ns, sim, alpha, self.repeats.moving());
            }
            if let Some(r) = self.renderer.as_mut() {
                r.prepare(&p.world, &p.interaction, Some(p), &shown);
                // The host gone: told in front of the eyes, whatever the player looks at.
                if let (Some((how, _)), Some(head)) = (play.host_gone(), self.hands.head) {
                    r.push_notice(notice::host_gone_text(how), &self.space.pose(head));
                }
            }
        }
        depth_written |= match self.renderer.as_mut() {
            Some(r) => r.draw_prepared(&target, self.space)?,
            None => {
                xr.clear_target(&target, CLEAR_RGBA)?;
                true
            }
        };
        Ok(xr.submit_frame(timing, depth_written)?)
    }

    /// The mirror window's events, without waiting: a resize reaches the mirror; a close drops it (the headset
    /// plays on).
    fn pump_mirror_window(&mut self) {
        let Some(window) = self.mirror_window.as_mut() else {
            return;
        };
        let events = window.pump();
        if events.closed {
            self.count_mirror_frames();
            if let Some(r) = self.renderer.as_mut() {
                r.mirror_window_changed(None);
            }
            self.mirror_window = None;
            tracing::info!("mirror window closed");
        } else if let (Some(size), Some(r)) = (events.resized, self.renderer.as_mut()) {
            r.mirror_window_changed(Some(size));
        }
    }

    /// Adds the frames the current renderer's mirror showed to the report, and starts its count again (before the
    /// mirror or the renderer goes).
    fn count_mirror_frames(&mut self) {
        if let Some(r) = self.renderer.as_mut() {
            self.report.mirror_frames_presented += r.take_mirror_frames();
            self.report.mirror_swapchain_builds += r.mirror_swapchain_builds();
        }
    }

    /// Moves the play space by the left thumbstick over the time since the last frame (see `hands::stick_motion`).
    fn walk(&mut self) {
        let Some(prev) = self.prev_hands else { return };
        let dt = (self.hands.time_ns - prev.time_ns) as f32 / 1e9;
        let left = &self.hands.hands[0];
        let aim = if left.aim_tracked {
            left.aim_rotation
        } else {
            left.grip_rotation
        };
        let step = hands::stick_motion(left.thumbstick, self.space.yaw * aim, dt.min(0.1), self.move_speed);
        if step != Vec3::ZERO {
            self.space.origin += step;
            self.report.metres_walked += f64::from(step.length());
        }
        let right_x = self.hands.hands[1].thumbstick.x;
        if let Some(angle) = hands::snap_turn(right_x, &mut self.snap_latched, self.snap_turn_rad) {
            self.space = self.space.turned(angle, self.head_local);
            self.report.snap_turns += 1;
            // The hands jump in the world with the room: no interpolation or velocity across the turn.
            self.forget_hand_motion();
        }
    }

    /// After a jump of the tracked poses in the world (a recentring, a snap turn): no interpolation across it, and
    /// no hand speed measured over it (a held cube would be thrown).
    fn forget_hand_motion(&mut self) {
        self.prev_hands = None;
        if let Some(runner) = self.net.as_ref() {
            for hand in &mut runner.lock().shown_mut().avatar.hands {
                hand.forget_motion();
            }
        }
        for hand in &mut self.avatar.hands {
            hand.forget_motion();
        }
    }

    /// Places the play space over the target cube, once both hands are tracked, and starts the grip script.
    fn start_script(&mut self) {
        let [left, right] = &self.hands.hands;
        if !(left.tracked && right.tracked) {
            return;
        }
        let midpoint = (left.grip_position + right.grip_position) * 0.5;
        let placed = match self.net.as_ref() {
            Some(runner) => {
                let play = runner.lock();
                let world = &play.shown().world;
                scripted::target_cube(world).and_then(|cube| scripted::play_space_origin_for(world, cube, midpoint))
            }
            None => scripted::target_cube(&self.world)
                .and_then(|cube| scripted::play_space_origin_for(&self.world, cube, midpoint)),
        };
        if let Some(origin) = placed {
            self.space = PlaySpace::at(origin);
            // The hands jump with the play space: no velocity from the move.
            self.prev_hands = None;
            self.avatar = Avatar::default();
            self.script_step = Some(0);
            tracing::info!(origin = ?origin, "scripted grab: play space placed over a cube");
        }
    }

    /// The fixed steps due by this frame's display time, each with the hands interpolated to its time.
    fn simulate(&mut self, xr: &mut XrSession, timing: &FrameTiming, focused: bool) -> Result<(), VrError> {
        if self.net.is_some() {
            return self.simulate_net(xr, timing, focused);
        }
        let first_step_ns = self.clock.sim_time_ns().unwrap_or(timing.predicted_display_time_ns) + STEP_NS;
        let steps = self.clock.steps_due(timing.predicted_display_time_ns);
        for k in 0..steps {
            let step_ns = first_step_ns + i64::from(k) * STEP_NS;
            let grips = self.grips(focused);
            let input = avatar_input_at(self.prev_hands.as_ref(), &self.hands, step_ns, grips, self.space);
            self.avatar.update(&input, STEP_S);
            self.interaction.update(&mut self.world, &self.avatar)?;
            self.world.step();
            self.poses.record(&self.world);
            self.report.physics_steps += 1;
            // By index: the events live in the interaction, which `on_event` does not touch.
            let events = self.interaction.events().len();
            for i in 0..events {
                let event = self.interaction.events()[i];
                self.on_event(xr, event)?;
            }
            if let Some(s) = self.script_step.as_mut() {
                *s += 1;
            }
        }
        Ok(())
    }

    /// [`VrGame::simulate`] in a networked game, which steps on its own thread: this frame's hands (at its display
    /// time) go to it, and the grabs and releases of its steps since the last frame come back.
    fn simulate_net(&mut self, xr: &mut XrSession, timing: &FrameTiming, focused: bool) -> Result<(), VrError> {
        let grips = self.grips(focused);
        let display_ns = timing.predicted_display_time_ns;
        let input = avatar_input_at(self.prev_hands.as_ref(), &self.hands, display_ns, grips, self.space);
        let runner = self.net.as_ref().expect("a networked game");
        if runner.has_stopped() {
            let mut runner = self.net.take().expect("a networked game");
            runner.stop()?;
            return Err(VrError::Net(NetPlayError::Bad("the game stopped".into())));
        }
        runner.publish_input(&input);
        let steps = {
            let mut play = runner.lock();
            play.take_events(&mut self.net_events);
            play.step_count()
        };
        let new_steps = steps.saturating_sub(self.net_steps_seen);
        self.net_steps_seen = steps;
        self.report.physics_steps += new_steps;
        if let Some(s) = self.script_step.as_mut() {
            *s += new_steps as u32;
        }
        for i in 0..self.net_events.len() {
            let event = self.net_events[i];
            self.on_event(xr, event)?;
        }
        Ok(())
    }

    /// The grip of each hand this step: the controllers' squeeze (zero while not focused), or the larger of it and
    /// the script's in scripted mode.
    fn grips(&self, focused: bool) -> [f32; HAND_COUNT] {
        let squeeze = [self.hands.hands[0].squeeze, self.hands.hands[1].squeeze];
        match self.script_step.filter(|_| focused) {
            Some(step) => {
                let script = scripted::scripted_grips(step);
                [squeeze[0].max(script[0]), squeeze[1].max(script[1])]
            }
            None => squeeze,
        }
    }

    fn on_event(&mut self, xr: &mut XrSession, event: InteractionEvent) -> Result<(), VrError> {
        match event {
            InteractionEvent::Grabbed {
                hand, from_other_hand, ..
            } => {
                self.report.grabs += 1;
                self.report.passes += u64::from(from_other_hand);
                if xr.lifecycle().input_active() {
                    xr.pulse(hand.index(), GRAB_PULSE_NS, GRAB_PULSE_AMPLITUDE)?;
                    self.report.haptic_pulses += 1;
                }
            }
            InteractionEvent::Released { .. } => self.report.releases += 1,
        }
        Ok(())
    }

    fn count_frame(&mut self, xr: &XrSession, timing: &FrameTiming, views: u32, work_started: Instant) {
        let passes = self.renderer.as_ref().and_then(VrRenderer::pass_times);
        let has_output_pass = self.renderer.as_ref().is_some_and(VrRenderer::has_output_pass);
        if let Some(r) = self.renderer.as_ref() {
            self.report.swapchain_output = Some(r.swapchain_output().name());
        }
        let report = &mut self.report;
        let cpu_ms = work_started.elapsed().as_secs_f64() * 1e3;
        report.cpu_frame_ms_total += cpu_ms;
        report.cpu_frame_ms.push(cpu_ms as f32);
        if let Some(t) = passes {
            report.gpu_frame_ms.push(t.total_ms);
            report.gpu_shadow_ms.push(t.shadow_ms);
            report.gpu_main_ms.push(t.main_ms);
            // Resolving into the swapchain without a mirror, nothing follows the main pass: no output part.
            if has_output_pass {
                report.gpu_output_ms.push(t.output_ms);
            }
        }
        let period = timing.predicted_display_period_ns;
        if let Some(previous) = self.previous_display_ns.replace(timing.predicted_display_time_ns) {
            if period > 0 && (timing.predicted_display_time_ns - previous) * 2 > period * 3 {
                report.frames_missed += 1;
            }
        }
        report.display_period_ms = period as f64 / 1e6;
        if views == 0 {
            report.frames_empty += 1;
            return;
        }
        report.frames_submitted += 1;
        report.views = report.views.max(views);
        if xr.lifecycle().state == SessionState::Focused {
            report.frames_focused += 1;
            let hands = &self.hands.hands;
            for (count, hand) in report.hand_tracked_frames.iter_mut().zip(hands) {
                *count += u64::from(hand.tracked);
            }
            if hands.iter().all(|h| h.tracked) {
                report.frames_focused_hands_tracked += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The player starts in front of the cubes, facing them, not inside the table.
    #[test]
    fn the_player_starts_in_front_of_the_cubes() {
        let scene = tumble_engine::scene::load_scene(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/scenes/table64.toml"
        )))
        .unwrap();
        let world = scene.build_world(WorldConfig::default()).unwrap();
        let origin = spawn_origin(&world);
        let mut xs = (f32::MAX, f32::MIN);
        for id in world.body_ids() {
            let p = world.state(id).unwrap().position;
            assert!(
                p.z + 0.9 < origin.z,
                "cube {id:?} at {p} is not in front of the player at {origin}"
            );
            xs = (xs.0.min(p.x), xs.1.max(p.x));
        }
        assert!((xs.0..=xs.1).contains(&origin.x), "{origin} not centred on {xs:?}");
        assert!(origin.y.abs() < 0.01, "feet on the ground: {origin}");
        assert_eq!(start_space(None, &world).origin, origin);
        // A scene's [spawn] wins: standing at (4, 0, 0) facing the origin turns forward (−z) towards −x.
        let spawn = tumble_engine::scene::Spawn {
            position: Vec3::new(4.0, 0.0, 0.0),
            facing: Vec3::ZERO,
        };
        let space = start_space(Some(spawn), &world);
        assert_eq!(space.origin, spawn.position);
        assert!((space.yaw * Vec3::NEG_Z).distance(Vec3::NEG_X) < 1e-5);
        assert_eq!(spawn_origin(&World::new(WorldConfig::default()).unwrap()), Vec3::ZERO);
    }
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        vr: VrArgs,
    }

    fn parse(args: &[&str]) -> Result<VrNet, clap::Error> {
        Cli::try_parse_from(std::iter::once("vr").chain(args.iter().copied())).map(|c| c.vr.net())
    }

    #[test]
    fn the_network_flags_parse_and_bad_ones_are_refused() {
        assert_eq!(parse(&[]).unwrap(), VrNet::Alone);
        assert_eq!(
            parse(&["--host"]).unwrap(),
            VrNet::Host {
                port: DEFAULT_PORT,
                bots: 0,
                port_mapping: true
            }
        );
        assert_eq!(
            parse(&["--host", "--no-port-mapping"]).unwrap(),
            VrNet::Host {
                port: DEFAULT_PORT,
                bots: 0,
                port_mapping: false
            }
        );
        assert_eq!(
            parse(&["--host", "--port", "5000", "--bots", "3"]).unwrap(),
            VrNet::Host {
                port: 5000,
                bots: 3,
                port_mapping: true
            }
        );
        assert_eq!(
            parse(&["--join", "192.168.1.20:40000"]).unwrap(),
            VrNet::Join(tumble_net::join_code::parse_target("192.168.1.20:40000").unwrap())
        );
        assert_eq!(
            parse(&["--join", "[::1]:40000"]).unwrap(),
            VrNet::Join(tumble_net::join_code::parse_target("[::1]:40000").unwrap())
        );
        for bad in [
            &["--join", "not-an-address"][..],
            &["--join", "10.0.0.1"],
            &["--join", "10.0.0.1:70000"],
            &["--host", "--join", "10.0.0.1:4000"],
            &["--port", "5000"],
            &["--host", "--bots", "4"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn alone_starts_no_network_and_a_missing_scene_is_named() {
        let scene = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/table64.toml");
        assert!(start_net(&scene, &VrNet::Alone).unwrap().is_none());
        let e = start_net(
            std::path::Path::new("/no/such.toml"),
            &VrNet::Host {
                port: 0,
                bots: 0,
                port_mapping: false,
            },
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("/no/such.toml"), "{e}");
    }
}
