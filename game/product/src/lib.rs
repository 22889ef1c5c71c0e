//! Tumble, the product: the composition of the engine and the network that players run. It depends on neither
//! the 2015 network models (`tumble_models`) nor the test bench (`tumble_harness`); they depend on it.
//!
//! - [`alloc_count`]: the counting allocator the binary installs, to report allocations in frame loops.
//! - [`authority`]: authority and ownership per cube: the rules, the host's judgement, each peer's table.
//! - [`avatar`]: a player's head and hands as plain data, per fixed step, from any input source.
//! - [`bots`]: seeded scripted players (builder, thrower, contender, catcher) that play through `interaction`.
//! - [`cube_game`]: the 2015 cube game (a player cube rolls, hovers, pulls; colours spread by contact) and its bot.
//! - [`fixed_step`], [`interpolate`]: the 90 Hz clock under a frame loop, and the blending of poses between steps.
//! - [`draw`]: what the desktop view and VR draw alike (cube highlight flags, hand boxes).
//! - [`desktop`]: the desktop debug view (window, free camera, mouse and gamepad hands, overlay).
//! - [`interaction`]: grab, hold, release and throw — shared by the desktop view, VR and bots.
//! - [`run_settings`]: a run's length, seed and link (`RunSettings`), the one set of link flags and `--link` presets.
//! - [`screenshot`]: headless rendering of a scene to a PNG (`tumble screenshot`, the image test).
//! - [`smoothing`]: what is drawn eases into what is simulated (per-cube visual offsets) and the pop meter.
//! - [`session`]: a host and up to three guests: messages, one peer's step (play, send, judge or accept, simulate).
//! - [`sync`]: state synchronisation, by layer: the wire codec (`sync::codec`) and one connection's two ends
//!   (`sync::link`).
//! - [`vr`]: `tumble vr`, the game on an OpenXR headset (frame loop on the runtime's clock, 90 Hz physics beside it).
/// The game's one fixed simulation rate (Hz): physics, sync, avatars and every step clock run at it. Packets may
/// go out less often (`session::peer::PeerConfig::send_every_steps`); the steps never change.
pub const STEP_HZ: u32 = 90;
/// One step (s).
pub const STEP_S: f64 = 1.0 / STEP_HZ as f64;

pub mod alloc_count;
pub mod authority;
pub mod avatar;
pub mod bots;
pub mod cube_game;
pub mod desktop;
pub mod draw;
pub mod fixed_step;
pub mod interaction;
pub mod interpolate;
pub mod quit;
pub mod render_bench;
pub mod run_settings;
pub mod screenshot;
pub mod session;
pub mod smoothing;
pub mod sync;
pub mod vr;
