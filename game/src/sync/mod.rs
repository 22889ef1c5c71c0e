//! State synchronisation: how body state travels between peers and what both sides do with it.
//!
//! `game::sync` will own [`quantize`] (body state exactly as the wire carries it, applied on both sides before
//! every physics step), `priority` (which cubes go in the next packet) and `delta` (encoding against acked
//! baselines). Only [`quantize`] exists so far.

pub mod quantize;
