//! The `tumble` binary. With no subcommand it will open the desktop debug view; `simulate` runs a scene headless
//! and reports how it ended; `vr` will start the VR client. Machine-readable output is JSON on stdout; human text
//! and logs (tracing, filtered by `RUST_LOG`) go to stderr.
//!
//! Exit codes: 0 success, 1 an error (bad scene file, engine refusal), 2 a mode that is unavailable here (no
//! display, not built yet) or bad arguments (clap's own code for usage errors).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::json;
use tumble_engine::physics::{BodyId, WorldConfig};
use tumble_engine::render::RenderError;
use tumble_engine::scene::load_scene;
use tumble_game::run_settings::{LinkArgs, RunSettings};
use tumble_game::screenshot;
use tumble_game::sync::codec::quantize::quantize_world;
use tumble_game::sync::codec::state_packet::PacketCoding;
use tumble_harness::loopback::{LinkKind, LoopbackConfig, LoopbackSession, DEFAULT_KBPS_BUDGET};

/// Counts heap allocations, so `tumble vr` can report those in its steady frame loop (there should be none).
#[global_allocator]
static ALLOCATOR: tumble_game::alloc_count::Counting = tumble_game::alloc_count::Counting;

/// Steps `simulate` runs unless told otherwise: 10 s at the fixed 90 Hz step.
const DEFAULT_STEPS: u64 = 900;

/// Exit code for a mode that cannot run here (no display, or not built yet), as distinct from an error.
const EXIT_UNAVAILABLE: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "tumble",
    version,
    about = "Tumble: a networked physics sandbox for VR",
    long_about = "Tumble: a networked physics sandbox for VR.\n\n\
        With no subcommand, opens the desktop debug view (needs a display; --scene FILE, default table64).\n\
        Headless: `tumble simulate --scene FILE` runs a scene and reports how it ended;\n\
        `tumble compare --model lockstep --scene assets/scenes/cubes900.toml` measures a network model;\n\
        `tumble screenshot --scene FILE --out PATH.png` renders it offscreen to a PNG.\n\
        Play: `tumble host [--bots N]`, `tumble join ADDR:PORT`, `tumble local --players 4`, `tumble vr --host`;\n\
        the 2015 cube game over a network model, both machines side by side: `tumble compare --model predict\n\
        --scene assets/scenes/cubes900.toml --view`.\n\
        Logs go to stderr; set RUST_LOG (e.g. RUST_LOG=debug) to see more."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Desktop view: the scene to open (TOML; the format is in assets/scenes/README.md) [default: table64]
    #[arg(long, value_name = "FILE")]
    scene: Option<PathBuf>,
    /// Desktop view: close after N frames (smoke tests)
    #[arg(long, value_name = "N", hide = true)]
    frames: Option<u64>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scene headless for a number of fixed steps and report how it ended
    Simulate(SimulateArgs),
    /// Authority and non-authority worlds in one process, joined through the link simulator; JSON report
    Loopback(LoopbackArgs),
    /// The cube game played by two seeded bots over one network model (lockstep so far) through the link
    /// simulator; one JSON object of figures
    Compare(tumble_harness::compare::CompareArgs),
    /// Step a scene headless, render it offscreen (no display needed) and write a PNG
    Screenshot(ScreenshotArgs),
    /// The renderer measured: GPU time per pass, CPU record+submit, shader invocations, at a chosen size; JSON
    RenderBench(tumble_game::render_bench::RenderBenchArgs),
    /// A host and N-1 guests with distributed authority, bots in every seat; JSON report
    Session(tumble_harness::session_cli::SessionArgs),
    /// One player's process of `tumble session --processes` (started by it)
    #[command(hide = true)]
    SessionPeer(tumble_harness::processes::PeerProcessArgs),
    /// Play on an OpenXR headset (SteamVR, Monado, ...); JSON report on stdout with --json
    Vr(tumble_game::vr::VrArgs),
    /// VR frames at a given refresh rate against 90 Hz physics, drawn as `tumble vr` draws them; JSON report
    VrPacing(tumble_game::vr::pacing::PacingArgs),
    /// Host a game over UDP, logging its join code (--headless: a dedicated host; --bots N fills guest seats)
    Host(tumble_game::desktop::play_cli::HostArgs),
    /// Join a game by its join code (or an open one at ADDR:PORT) in the desktop view
    Join(tumble_game::desktop::play_cli::JoinArgs),
    /// N players in one window, joined through the link simulator; keys 1-N take over a player's hands
    Local(tumble_game::desktop::play_cli::LocalArgs),
}

#[derive(Args, Debug)]
struct ScreenshotArgs {
    /// Scene file (TOML; the format is in assets/scenes/README.md) [with --session, default: table64]
    #[arg(long, value_name = "FILE", required_unless_present = "session")]
    scene: Option<PathBuf>,
    /// Where to write the PNG
    #[arg(long, value_name = "PATH.png")]
    out: PathBuf,
    /// Fixed steps to run before the picture (90 per simulated second)
    #[arg(long, value_name = "N", default_value_t = 0)]
    steps: u64,
    /// Image width in pixels (with --stereo, each eye gets half)
    #[arg(long, value_name = "W", default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=8192))]
    width: u32,
    /// Image height in pixels
    #[arg(long, value_name = "H", default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=4096))]
    height: u32,
    /// Both eyes side by side, 64 mm apart
    #[arg(long)]
    stereo: bool,
    /// A networked game instead: `tumble local`'s players, every seat played by a bot, for --seconds; drawn as
    /// --view-player's world sees it, cubes tinted by authority, every player's hands in its colour
    #[arg(long, conflicts_with = "steps")]
    session: bool,
    /// With --session: players (1 to 4)
    #[arg(long, value_name = "N", default_value_t = 4, requires = "session", value_parser = clap::value_parser!(u8).range(1..=4))]
    players: u8,
    /// With --session: the bot in each seat, host first [default: builder,thrower,contender,catcher]
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "session")]
    bots: Vec<String>,
    /// With --session: simulated seconds before the picture
    #[arg(long, value_name = "S", default_value_t = 10.0, requires = "session")]
    seconds: f64,
    /// With --session: whose world is drawn (1 = the host)
    #[arg(long, value_name = "K", default_value_t = 1, requires = "session")]
    view_player: usize,
    /// With --session: one-way delay each direction (ms)
    #[arg(long, value_name = "L", default_value_t = 50.0, requires = "session")]
    latency_ms: f64,
    /// With --session: loss each direction (percent)
    #[arg(long, value_name = "P", default_value_t = 0.0, requires = "session")]
    loss_pct: f64,
    #[arg(long, value_name = "N", default_value_t = 1, requires = "session")]
    seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SocketKind {
    Udp,
    Memory,
}

#[derive(Args, Debug)]
struct LoopbackArgs {
    /// Scene file (TOML; the format is in assets/scenes/README.md)
    #[arg(long, value_name = "FILE")]
    scene: PathBuf,
    /// Simulated seconds to run (90 steps each)
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    seconds: f64,
    /// The link: `--link` and the flags that change its parts
    #[command(flatten)]
    pub link: LinkArgs,
    /// Bandwidth budget authority → non-authority (kbps, IP/UDP headers included); one too small for the largest
    /// single update is refused, naming the smallest that works (table64: 64 entropy-coded, 62 bit-packed)
    #[arg(long, value_name = "K", default_value_t = DEFAULT_KBPS_BUDGET)]
    kbps_budget: u32,
    /// A scripted thrower launches a random cube every T seconds, stopping 10 s before the end
    #[arg(long, value_name = "T")]
    throw_every_s: Option<f64>,
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// The link: in memory on a simulated clock (deterministic), or UDP on 127.0.0.1 on the real clock
    #[arg(long, value_enum, default_value_t = SocketKind::Memory)]
    socket: SocketKind,
    /// At the end, render both worlds side by side (authority left, non-authority right) into this PNG
    #[arg(long, value_name = "PATH.png")]
    screenshot: Option<PathBuf>,
    /// How state packets are coded: the adaptive range coder, or the plain bit packer (for comparison)
    #[arg(long, value_enum, default_value_t = CodingKind::Entropy)]
    coding: CodingKind,
    /// Print the JSON object on stdout (always printed; accepted for the documented command line)
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CodingKind {
    Entropy,
    BitPacked,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Scene file (TOML; the format is in assets/scenes/README.md)
    #[arg(long, value_name = "FILE")]
    scene: PathBuf,
    /// Fixed steps to run (90 per simulated second)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STEPS)]
    steps: u64,
    /// Turn off rest detection and island sleeping
    #[arg(long)]
    no_sleep: bool,
    /// Quantize every body's state before every step, as networked peers do
    #[arg(long)]
    quantize: bool,
    /// Print one JSON object on stdout instead of a summary on stderr
    #[arg(long)]
    json: bool,
    /// Threads a step runs on (1 to 64; default: the machine's cores less one). The result is the same bits on
    /// any number; a step with under 2,000 contacts runs on one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    // The modes that play with others: Ctrl-C quits them through their own way out, goodbye included. (The
    // harnesses and tools keep the default: Ctrl-C stops them at once.)
    let plays = matches!(
        cli.command,
        None | Some(Command::Vr(_) | Command::Host(_) | Command::Join(_) | Command::Local(_))
    );
    if plays {
        tumble_game::quit::install();
    }
    match cli.command {
        None => desktop_view(cli.scene, cli.frames),
        Some(Command::Vr(args)) => match tumble_game::vr::run_cli(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tumble: {e}");
                ExitCode::from(if e.is_unavailable() { EXIT_UNAVAILABLE } else { 1 })
            }
        },
        Some(Command::VrPacing(args)) => match tumble_game::vr::pacing::run_cli(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tumble: error: {e}");
                ExitCode::FAILURE
            }
        },
        Some(Command::Loopback(args)) => match loopback(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                ExitCode::FAILURE
            }
        },
        Some(Command::Compare(args)) if args.view => view_exit(tumble_harness::compare_view::run(&args)),
        Some(Command::Compare(args)) => match tumble_harness::compare::run_cli(&args) {
            Ok(serde_json::Value::Array(reports)) => {
                // `--model all`: one JSON object per model, a line each.
                for report in reports {
                    println!("{report}");
                }
                ExitCode::SUCCESS
            }
            Ok(report) => {
                println!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                ExitCode::from(1)
            }
        },
        Some(Command::Session(args)) => match tumble_harness::session_cli::run(&args) {
            Ok(report) => {
                println!("{}", report.to_json());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                ExitCode::FAILURE
            }
        },
        Some(Command::SessionPeer(args)) => match tumble_harness::processes::run_peer_process(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                ExitCode::FAILURE
            }
        },
        Some(Command::Screenshot(args)) => match screenshot(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                let unavailable = e.downcast_ref::<RenderError>().is_some_and(RenderError::is_unavailable);
                ExitCode::from(if unavailable { EXIT_UNAVAILABLE } else { 1 })
            }
        },
        Some(Command::RenderBench(args)) => match tumble_game::render_bench::run(&args) {
            Ok(report) => {
                println!("{}", serde_json::to_string(&report).expect("the report serializes"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                let unavailable = e.downcast_ref::<RenderError>().is_some_and(RenderError::is_unavailable);
                ExitCode::from(if unavailable { EXIT_UNAVAILABLE } else { 1 })
            }
        },
        Some(Command::Host(args)) => play(tumble_game::desktop::play_cli::run_host(&args)),
        Some(Command::Join(args)) => play(tumble_game::desktop::play_cli::run_join(&args)),
        Some(Command::Local(args)) => play(tumble_game::desktop::play_cli::run_local(&args)),
        Some(Command::Simulate(args)) => match simulate(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tumble: error: {}", one_line(&e));
                ExitCode::FAILURE
            }
        },
    }
}

/// The whole cause chain on one line, no backtrace: errors here are the user's file, not our bug. Causes that
/// the message before already quotes (scene errors include their io error) are not repeated.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for text in e.chain().map(|cause| cause.to_string()) {
        if !line.contains(&text) {
            line += if line.is_empty() { "" } else { ": " };
            line += &text;
        }
    }
    line
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::stderr().is_terminal();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

/// The desktop debug view; with no display, say so, and say where the headless modes are.
fn desktop_view(scene: Option<PathBuf>, frames: Option<u64>) -> ExitCode {
    let options = tumble_game::desktop::DesktopOptions { scene, frames };
    view_exit(tumble_game::desktop::run(&options))
}

/// `host`, `join`, `local`: a headless run's JSON on stdout; the window's outcome as the desktop view's.
fn play(outcome: Result<Option<serde_json::Value>, tumble_game::desktop::DesktopError>) -> ExitCode {
    match outcome {
        Ok(Some(summary)) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(tumble_game::desktop::DesktopError::HostGone(report)) => {
            // A headless guest whose host went away: the JSON line says why.
            println!("{report}");
            eprintln!("tumble: {}", report["host_gone"].as_str().unwrap_or("the host is gone"));
            ExitCode::from(EXIT_HOST_GONE)
        }
        Err(e) => view_exit(Err(e)),
    }
}

/// Exit code of a headless guest whose host went away.
const EXIT_HOST_GONE: u8 = 3;

/// Exit code and message for the end of a window (no display: 2 with the headless modes named).
fn view_exit(outcome: Result<(), tumble_game::desktop::DesktopError>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(tumble_game::desktop::DesktopError::NoDisplay(why)) => {
            eprintln!("tumble: no display found ({why}), so the desktop view cannot open.");
            eprintln!(
                "Headless: `tumble simulate --scene assets/scenes/tower30.toml` runs a scene and reports how it ended"
            );
            eprintln!(
                "`tumble screenshot --scene FILE --out PATH.png` renders a scene to a PNG; `tumble host --headless`"
            );
            eprintln!(
                "is a dedicated host and `tumble local --headless --seconds S` plays a game. See `tumble --help`."
            );
            ExitCode::from(EXIT_UNAVAILABLE)
        }
        Err(tumble_game::desktop::DesktopError::Render(e)) if e.is_unavailable() => {
            eprintln!("tumble: {e}");
            ExitCode::from(EXIT_UNAVAILABLE)
        }
        Err(e) => {
            eprintln!("tumble: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<()> {
    // Scene errors already name the file, the line and the key.
    let scene = load_scene(&args.scene)?;
    let mut world = scene.build_world(WorldConfig {
        sleep: !args.no_sleep,
        ..WorldConfig::default()
    })?;
    let threads = args
        .threads
        .map_or_else(tumble_engine::physics::default_threads, usize::from);
    world.set_threads(threads);
    let ids: Vec<BodyId> = (0..world.body_count() as u32).map(BodyId).collect();
    tracing::info!(scene = %scene.name, bodies = ids.len(), steps = args.steps, quantize = args.quantize, "simulating");

    // Fallen bodies are out of the simulation; setting their state would put them back in.
    let mut fallen = vec![false; ids.len()];
    let mut max_penetration_m = 0.0f32;
    // The step after which every body stayed at rest to the end; `None` while something still moves.
    let mut settled_at_step: Option<u64> = None;
    for step in 0..args.steps {
        if args.quantize {
            quantize_world(&mut world).with_context(|| format!("quantizing before step {step}"))?;
        }
        let report = world.step();
        max_penetration_m = max_penetration_m.max(report.max_penetration);
        for id in &report.fell_below_floor {
            fallen[id.index()] = true;
        }
        if !world.all_at_rest() {
            settled_at_step = None;
        } else if settled_at_step.is_none() {
            settled_at_step = Some(step + 1);
        }
    }

    let mut resting = 0;
    for (&id, &gone) in ids.iter().zip(&fallen) {
        resting += usize::from(!gone && world.state(id)?.at_rest);
    }
    let fell_below_floor = fallen.iter().filter(|&&f| f).count();
    let checksum = format!("{:016x}", world.checksum());
    let all_at_rest = world.all_at_rest();
    if args.json {
        let out = json!({
            "scene": scene.name,
            "steps": args.steps,
            "bodies": ids.len(),
            "resting": resting,
            "all_at_rest": all_at_rest,
            "settled_at_step": settled_at_step,
            "threads": threads,
            "checksum": checksum,
            "fell_below_floor": fell_below_floor,
            "max_penetration_m": max_penetration_m,
        });
        println!("{out}");
    } else {
        eprintln!(
            "{}: {} steps{}{}, {} bodies: {resting} at rest{}, {fell_below_floor} fell below the floor, \
             max penetration {max_penetration_m:.4} m, checksum {checksum}",
            scene.name,
            args.steps,
            if args.quantize { ", quantized" } else { "" },
            if args.no_sleep { ", no sleep" } else { "" },
            ids.len(),
            if all_at_rest { " (all)" } else { "" },
        );
    }
    Ok(())
}

fn screenshot(args: &ScreenshotArgs) -> anyhow::Result<()> {
    let cubes = if args.session {
        session_cubes(args)?
    } else {
        let path = args.scene.as_ref().context("--scene FILE is needed")?;
        let scene = load_scene(path)?;
        let mut world = scene.build_world(WorldConfig::default())?;
        for _ in 0..args.steps {
            world.step();
        }
        screenshot::world_cubes(&world, &[])?
    };
    let options = screenshot::ShotOptions {
        width: args.width,
        height: args.height,
        stereo: args.stereo,
    };
    let shot = screenshot::render_cubes(&cubes, &options)?;
    screenshot::write_png(&args.out, shot.width, shot.height, &shot.rgba)?;
    tracing::info!(out = %args.out.display(), width = shot.width, height = shot.height, "screenshot written");
    Ok(())
}

/// `screenshot --session`: the bots play a local game for `--seconds`, then one player's world is drawn.
fn session_cubes(args: &ScreenshotArgs) -> anyhow::Result<Vec<tumble_engine::render::CubeInstance>> {
    if !(args.seconds.is_finite() && args.seconds >= 0.0) {
        anyhow::bail!("--seconds must be 0 or more (got {})", args.seconds);
    }
    let bots = if args.bots.is_empty() {
        ["builder", "thrower", "contender", "catcher"]
            .map(String::from)
            .to_vec()
    } else {
        args.bots.clone()
    };
    let players = usize::from(args.players);
    let options = tumble_game::session::net_play::LocalOptions {
        scene: args
            .scene
            .clone()
            .unwrap_or_else(tumble_harness::session_cli::default_scene),
        players,
        bots: bots.into_iter().take(players).collect(),
        link: tumble_net::LinkConfig {
            latency_ms: args.latency_ms,
            loss_pct: args.loss_pct,
            ..tumble_net::LinkConfig::default()
        },
        seed: args.seed,
        kbps_budget: tumble_game::session::net_play::PLAY_KBPS_BUDGET,
    };
    let mut play = tumble_game::session::net_play::NetPlay::local(&options)?;
    let cubes = screenshot::session_cubes(&mut play, args.seconds, args.view_player)?;
    let [none, p1, p2, p3, p4] = play.seats[args.view_player - 1].peer.table.counts();
    tracing::info!(players, seconds = args.seconds, view_player = args.view_player, cubes_by_authority = ?[none, p1, p2, p3, p4], "session played");
    Ok(cubes)
}

fn loopback(args: &LoopbackArgs) -> anyhow::Result<()> {
    let scene = load_scene(&args.scene)?;
    let authority = scene.build_world(WorldConfig::default())?;
    let remote = scene.build_world(WorldConfig::default())?;
    let config = LoopbackConfig {
        run: RunSettings::new(args.seconds, args.seed, args.link.config()),
        kbps_budget: args.kbps_budget,
        throw_every_s: args.throw_every_s,
        link: match args.socket {
            SocketKind::Memory => LinkKind::Memory,
            SocketKind::Udp => LinkKind::Udp,
        },
        coding: match args.coding {
            CodingKind::Entropy => PacketCoding::Entropy,
            CodingKind::BitPacked => PacketCoding::BitPacked,
        },
        damage_every_n_packets: None,
    };
    let mut session = LoopbackSession::new(&config, authority, remote)?;
    while !session.is_finished() {
        session.step(None)?;
    }
    println!("{}", session.report()?.to_json());
    if let Some(out) = &args.screenshot {
        // Both copies in the host's colour (player 1 has authority over every cube here).
        let authority = vec![1u8; session.authority().body_count()];
        let left = screenshot::world_cubes(session.authority(), &authority)?;
        let right = screenshot::world_cubes(session.remote(), &authority)?;
        let cubes = screenshot::side_by_side(&left, &right, LOOPBACK_GAP_M);
        let options = screenshot::ShotOptions {
            width: 960,
            height: 540,
            stereo: false,
        };
        let shot = screenshot::render_cubes(&cubes, &options)?;
        screenshot::write_png(out, shot.width, shot.height, &shot.rgba)?;
        tracing::info!(out = %out.display(), "both worlds written side by side");
    }
    Ok(())
}

/// Space between the two worlds in a loopback picture (m).
const LOOPBACK_GAP_M: f32 = 4.0;
