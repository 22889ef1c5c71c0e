//! The game: the composition of the engine and the network (being written).
//!
//! - [`alloc_count`]: the counting allocator the binary installs, to report allocations in frame loops.
//! - [`authority`]: authority and ownership per cube: the rules, the host's judgement, each peer's table.
//! - [`avatar`]: a player's head and hands as plain data, per fixed step, from any input source.
//! - [`bots`]: seeded scripted players (builder, thrower, contender, catcher) that play through `interaction`.
//! - [`cube_game`]: the 2015 cube game (a player cube rolls, hovers, pulls; colours spread by contact) and its bot.
//! - [`draw`]: what the desktop view and VR draw alike (cube highlight flags, hand boxes).
//! - [`desktop`]: the desktop debug view (window, free camera, mouse and gamepad hands, overlay).
//! - [`interaction`]: grab, hold, release and throw — shared by the desktop view, VR and bots.
//! - [`lockstep`]: deterministic lockstep over `tumble-net`: inputs only, a playout delay buffer, checksums.
//! - [`screenshot`]: headless rendering of a scene to a PNG (`tumble screenshot`, the image test).
//! - [`smoothing`]: what is drawn eases into what is simulated (per-cube visual offsets) and the pop meter.
//! - [`session`]: a host and up to three guests: messages, one peer's step (play, send, judge or accept, simulate).
//! - [`sync`]: state synchronisation, by layer: the wire codec (`sync::codec`) and one connection's two ends
//!   (`sync::link`).
//! - [`harness`]: runs of worlds joined through the link simulator (`tumble loopback`, the bandwidth table).
//! - [`vr`]: `tumble vr`, the game on an OpenXR headset (frame loop on the runtime's clock, 90 Hz physics beside it).
pub mod alloc_count;
pub mod authority;
pub mod avatar;
pub mod bots;
pub mod cube_game;
pub mod desktop;
pub mod draw;
pub mod harness;
pub mod interaction;
pub mod lockstep;
pub mod predict;
pub mod quit;
pub mod render_bench;
pub mod screenshot;
pub mod session;
pub mod smoothing;
pub mod snapshots;
pub mod sync;
pub mod vr;
