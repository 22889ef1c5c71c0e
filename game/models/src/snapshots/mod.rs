//! Snapshot interpolation (issue 14, the 2015 series' "snapshot interpolation" and "snapshot compression"): player
//! 1's machine is the server and simulates the whole world; player 2's machine simulates nothing, sends its
//! inputs, and draws the world from the server's snapshots a playout delay behind, interpolating between them.
//!
//! - [`packet`]: the wire — snapshot slices (quantized, at-rest bit, delta against the acked baseline, or raw
//!   floats uncompressed) and the client's ack-and-inputs packet; one serialize function each, reads checked.
//! - [`server`]: [`SnapshotServer`], the world, the snapshot rate, the baselines it keeps.
//! - [`client`]: [`SnapshotClient`], slice assembly, the playout buffer, drawing, and its figures.
//! - [`interpolate`]: Hermite between two states with their velocities, and brief extrapolation.

pub mod client;
pub mod interpolate;
pub mod packet;
pub mod server;

pub use client::{PlayoutDelay, SnapshotClient};
pub use server::SnapshotServer;
