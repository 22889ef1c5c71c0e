//! Tumble's network transport.
//!
//! This crate will own everything between the game and a UDP socket: a bit packer with one serialize path for
//! reading and writing, 16-bit sequence numbers with wrap-around-safe comparison, a packet header with acks,
//! connections with a challenge handshake, timeouts and RTT/loss/bandwidth estimates, a `mio`-driven endpoint,
//! and a deterministic link simulator (latency, jitter, loss, duplicates, reordering, bandwidth cap).
//! It never depends on the engine or the game. Nothing is built yet: see issue 3.
