//! State synchronisation: how one cube's state travels from the physics of the peer with authority over it to
//! every other peer. Two layers, in the order a state passes through them:
//!
//! - [`codec`]: the wire. Quantization (applied on both sides before every step), one cube's state, the ballistic
//!   predictor, delta encoding against a baseline, the range coder and its `Stream`, the state packet, the reject
//!   notice. Pure functions over plain data; nothing here knows about connections.
//! - [`link`]: one connection's two ends. The sender captures, prioritises and encodes against the baselines the
//!   receiver is known to hold (acks → baselines); the receiver reads, keeps received states as baselines and snaps
//!   cubes.
//!
//! The harnesses that run these over a link (`tumble loopback`, the bandwidth table) live in the test bench (`tumble_harness`).

pub mod codec;
pub mod link;
