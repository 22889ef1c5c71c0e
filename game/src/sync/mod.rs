//! State synchronisation: how body state travels between peers and what both sides do with it.
//!
//! - [`quantize`]: body state exactly as the wire carries it, applied on both sides before every physics step.
//! - [`cube_state`]: one cube's quantized state through the bit packer (one function reads and writes).
//!
//! Still to come: `predict` (fixed-point ballistic predictor), `priority` (which cubes go in the next packet) and
//! `delta` (encoding against acked baselines).

pub mod cube_state;
pub mod quantize;
