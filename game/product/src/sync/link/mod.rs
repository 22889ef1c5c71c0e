//! One connection's send and receive sides of state sync:
//!
//! - [`priority`]: the per-connection priority accumulator and packet filling to a bit budget.
//! - [`baseline`]: the sender's acked baselines per cube (acks → baselines) and the receiver's ring of received
//!   states.
//! - [`avatar_baseline`]: avatar sets per message: the sender's acked baseline, the receiver's ring by step.
//! - [`playout`]: the jitter buffer a remote player's avatar is played out of (measured delay, interpolation).
//! - [`sender`] / [`receiver`]: capture, prioritise, encode, track acks / read, keep baselines, snap cubes.

pub mod avatar_baseline;
pub mod baseline;
pub mod playout;
pub mod priority;
pub mod receiver;
pub mod sender;
