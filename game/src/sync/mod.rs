//! State synchronisation: how body state travels between peers and what both sides do with it.
//!
//! - [`quantize`]: body state exactly as the wire carries it, applied on both sides before every physics step.
//! - [`cube_state`]: one cube's quantized state through the bit packer (one function reads and writes).
//! - [`predict`]: the ballistic predictor in integer arithmetic (position, velocity and rotation), bit-identical on
//!   both ends.
//! - [`priority`]: the per-connection priority accumulator and packet filling to a bit budget.
//!
//! - [`delta`]: one cube's update against a baseline (not changed, predicted, prediction error, delta, absolute).
//! - [`baseline`]: the sender's acked baselines per cube and the receiver's ring of received states.
//! - [`state_packet`]: a packet body of many cube updates, in priority order to a byte budget; read whole or rejected.
//! - [`sender`] / [`receiver`]: one connection's two ends (capture, prioritise, encode, track acks / read, keep
//!   baselines, snap cubes).
//! - [`loopback`]: quantizing a whole world, and (in its tests) two worlds joined by an in-process link.
//! - [`thrower`]: the seeded scripted thrower (a random cube at a random target every so often).
//! - [`harness`]: the `tumble loopback` run: two worlds joined by `tumble-net` endpoints through the link
//!   simulator (in memory on a simulated clock, or UDP on 127.0.0.1), and what the run measured.

pub mod bandwidth;
pub mod baseline;
pub mod cube_state;
pub mod delta;
pub mod entropy_stream;
pub mod harness;
pub mod loopback;
pub mod predict;
pub mod priority;
pub mod quantize;
pub mod range_coder;
pub mod receiver;
pub mod reject_notice;
pub mod sender;
pub mod state_packet;
pub mod thrower;
