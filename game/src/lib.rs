//! The game: the composition of the engine and the network (being written).
//!
//! - [`sync`]: state synchronisation; so far the quantizer both peers apply before every physics step.
pub mod sync;
