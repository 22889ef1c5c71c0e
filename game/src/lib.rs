//! The game: the composition of the engine and the network (being written).
//!
//! - [`alloc_count`]: the counting allocator the binary installs, to report allocations in frame loops.
//! - [`avatar`]: a player's head and hands as plain data, per fixed step, from any input source.
//! - [`draw`]: what the desktop view and VR draw alike (cube highlight flags, hand boxes).
//! - [`desktop`]: the desktop debug view (window, free camera, mouse and gamepad hands, overlay).
//! - [`interaction`]: grab, hold, release and throw — shared by the desktop view, VR and bots.
//! - [`screenshot`]: headless rendering of a scene to a PNG (`tumble screenshot`, the image test).
//! - [`sync`]: state synchronisation: quantization, encoding, priority, delta, entropy coding, loopback harness.
//! - [`vr`]: `tumble vr`, the game on an OpenXR headset (frame loop on the runtime's clock, 90 Hz physics beside it).
pub mod alloc_count;
pub mod avatar;
pub mod desktop;
pub mod draw;
pub mod interaction;
pub mod screenshot;
pub mod sync;
pub mod vr;
