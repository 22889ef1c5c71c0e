//! Deterministic lockstep over `tumble-net`: each side sends only its inputs, and both simulate the same world from
//! both players' inputs, step by step, in the same order — bandwidth depends on the inputs, never on the world.
//! Two players peer to peer (one endpoint hosts, the other joins; the protocol is symmetric): player 1 rolls cube
//! A, player 2 cube B, each from its own keys.
//!
//! - [`crate::inputs`] (shared with the other models): the input packet and window.
//! - [`playout`]: the playout delay buffer: when each step is due, hitches, catching up, the adaptive delay.
//! - [`checksum`]: checksums exchanged every second: a desync is detected and counted.
//! - [`peer`]: one player's machine: sample, read, advance, write.
//!
//! Step n needs both players' inputs for n, so a player sees its own input when the other's for the same step
//! has arrived and played out: the input-to-screen delay is the one-way latency plus the playout delay, the same
//! on both machines.

pub mod checksum;
pub mod peer;
pub mod playout;

pub use peer::{LockstepError, LockstepPeer};
