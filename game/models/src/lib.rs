//! The 2015 series' network models, on the cube game (`tumble_game::cube_game`), each one module:
//!
//! - [`lockstep`]: deterministic lockstep: inputs only, a playout delay buffer, checksums.
//! - [`snapshots`]: snapshot interpolation: the server simulates, the client draws interpolated snapshots.
//! - [`predict`]: client-side prediction: the client runs its own cube ahead and rewinds on the server's state.
//! - [`inputs`]: what they share: the input packet (every unacked input, one bit when unchanged) and the input window.
//!
//! The rule (the architecture test in `tests/tests/architecture.rs` checks it): a model may use [`inputs`] and the
//! product (`tumble_game`), never another model. Their runs over the link simulator, and `tumble compare`, are the
//! test bench's (`tumble_harness`).

pub mod inputs;
pub mod lockstep;
pub mod predict;
pub mod snapshots;
