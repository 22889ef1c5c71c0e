//! What the models share: the input packet on the wire and the input window behind it (fixed rings).
//!
//! - [`packet`]: every unacked input, one bit when unchanged, the ack, now and then a checksum.
//! - [`window`]: this side's inputs until acked, the other side's until simulated.

pub mod packet;
pub mod window;
