//! The game: the composition of the engine and the network (being written).
//!
//! - [`avatar`]: a player's head and hands as plain data, per fixed step, from any input source.
//! - [`desktop`]: the desktop debug view (window, free camera, mouse and gamepad hands, overlay).
//! - [`interaction`]: grab, hold, release and throw — shared by the desktop view, VR and bots.
//! - [`screenshot`]: headless rendering of a scene to a PNG (`tumble screenshot`, the image test).
//! - [`sync`]: state synchronisation: quantization, encoding, priority, delta, entropy coding, loopback harness.
pub mod avatar;
pub mod desktop;
pub mod interaction;
pub mod screenshot;
pub mod sync;
