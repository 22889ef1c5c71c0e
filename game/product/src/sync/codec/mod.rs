//! The wire format of state sync, one file per idea, in the order a cube state is encoded:
//!
//! - [`quantize`]: body state exactly as the wire carries it, applied on both sides before every physics step
//!   (`quantize_world`).
//! - [`cube_state`]: one cube's quantized state through net's `Stream` (one function reads and writes).
//! - [`predict`]: the ballistic predictor in integer arithmetic (position, velocity and rotation), bit-identical on
//!   both ends.
//! - [`delta`]: one cube's update against a baseline (not changed, predicted, prediction error, delta, absolute).
//! - [`range_coder`] + [`entropy_stream`]: the adaptive binary range coder and net's `Stream` over it, so the same
//!   serialize functions drive the bit packer and the entropy coder.
//! - [`state_packet`]: a packet body of many cube updates, in priority order to a byte budget; read whole or rejected.
//! - [`avatar_state`]: a player's head, hands and held cubes, quantized, absolute or against a baseline sample.
//! - [`stamp`]: the authority stamp (authority index, authority and ownership sequences) every update carries.
//! - [`reject_notice`]: the receiver's "I refused a packet", sent back over the transport.

pub mod avatar_state;
pub mod cube_state;
pub mod delta;
pub mod entropy_stream;
pub mod predict;
pub mod quantize;
pub mod range_coder;
pub mod reject_notice;
pub mod stamp;
pub mod state_packet;
