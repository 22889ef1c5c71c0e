//! State synchronisation: how body state travels between peers and what both sides do with it.
//!
//! - [`quantize`]: body state exactly as the wire carries it, applied on both sides before every physics step.
//! - [`cube_state`]: one cube's quantized state through the bit packer (one function reads and writes).
//! - [`predict`]: the ballistic predictor in integer arithmetic (position, velocity and rotation), bit-identical on
//!   both ends.
//!
//! Still to come: `priority` (which cubes go in the next packet) and
//! `delta` (encoding against acked baselines).

pub mod cube_state;
pub mod predict;
pub mod quantize;
