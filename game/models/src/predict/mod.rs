//! Client/server with client-side prediction (issue 14), on the cube game: player 1's machine is the server and
//! simulates the world with authority; player 2's machine is the client, which applies its own input to its own
//! cube in the step it samples it, and is corrected by the server's states. The 2004 "networked physics" and the
//! client-side prediction article's model, on Tumble's deterministic solver.
//!
//! - [`history`]: the client's rings of inputs and predicted states, by step (1,024 steps, fixed).
//! - [`packet`]: the server's state packet (the client's inputs ride in the shared input packet, `crate::inputs`).
//! - [`server`]: the authority: the client's inputs applied at their step plus a fixed offset, late ones reused.
//! - [`client`]: prediction, the comparison, rewind and replay.
//! - [`smoothing`]: how the client's cube is drawn across a correction: no jump, eased at a bounded rate.
//!
//! Its run over the in-memory link (`tumble compare --model predict`) is the test bench's
//! (`tumble_harness::compare_predict`).
//!
//! Client steps and server steps: the client runs one step a frame from its first frame and never waits; the
//! server runs one a frame too, and applies the client's input for client step `k` at server step `k + offset`
//! (the one-way latency plus a little buffer, set once). The server's state after that step is the state at the
//! start of client step `k + 1`, and is tagged so: the client compares it with the state it predicted there.

pub mod client;
pub mod history;
pub mod packet;
pub mod server;
pub mod smoothing;

use tumble_engine::physics::PhysicsError;
use tumble_net::SerializeError;

pub use client::PredictClient;
pub use server::PredictServer;

#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    #[error("physics: {0}")]
    Physics(#[from] PhysicsError),
    #[error("malformed prediction packet: {0}")]
    Malformed(#[from] SerializeError),
    #[error("prediction packet names step {step}, but this side is only at step {now}")]
    FromTheFuture { step: u64, now: u64 },
    #[error("prediction packet's step is before step 0")]
    StepBeforeStart,
    #[error("prediction packet carries body {0}, which is no field cube here")]
    NotAFieldCube(u16),
    #[error("the server acked none of the client's last {} inputs", history::HISTORY_STEPS)]
    HistoryFull,
}
