//! The game: the composition of the engine and the network (being written).
//!
//! - [`sync`]: state synchronisation; so far the quantizer both peers apply before every physics step.
//! - [`vr`]: `tumble vr`, the game on an OpenXR headset (frame loop on the runtime's clock, 90 Hz physics beside it).
pub mod sync;
pub mod vr;
