//! The game: the composition of the engine and the network (being written).
//!
//! - [`sync`]: state synchronisation; so far the quantizer both peers apply before every physics step.
//! - [`screenshot`]: headless rendering of a scene to a PNG (`tumble screenshot`, the image test).
pub mod screenshot;
pub mod sync;
