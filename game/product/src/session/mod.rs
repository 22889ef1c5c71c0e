//! Sessions: a host and up to three guests in a star. Each guest talks only to the host through `tumble-net`
//! (handshake with a challenge, timeouts); the host judges every claim (`crate::authority`) and relays every
//! player's cubes and avatars (with the cubes in their hands) to the others, with the priority accumulator and delta baselines per connection.
//!
//! - [`hello`]: a guest's first words (the protocol version and its scene), and the host's refusal, in a layout
//!   every version can read.
//! - [`message`]: what travels inside a connected packet: the state message (header with welcome and avatars,
//!   held cubes inside them, then a state packet body) and the reject notice.
//! - [`remote_avatars`]: the other players' avatars played out of jitter buffers, and remote held cubes drawn in
//!   the played-out hands.
//! - [`hostile`]: the forgeries a hostile guest sends instead of its state (tests of the host's judgement).
//! - [`peer`]: one player's machine: its world, authority table, hands and connections, stepped by a driver.
//! - [`net_play`]: a networked game's peers (host and bots over UDP, a guest, or `tumble local`'s players over the
//!   link simulator), no window — tested headless; [`net_runner`]: it steps on a thread of its own at 90 Hz, so
//!   no frame loop holds the game; [`net_graphs`]: each connection's graphs as data.

/// Default per-connection budget (kbps, each direction, IP/UDP headers included): a quarter of the reference's 256.
/// Four players' busiest connection asks for less at the default pace (`peer::DEFAULT_PACKETS_PER_S`); the budget
/// caps the bursts.
pub const DEFAULT_SESSION_KBPS_BUDGET: u32 = 64;

pub mod hello;
pub mod hostile;
pub mod message;
pub mod net_graphs;
pub mod net_play;
pub mod net_runner;
pub mod peer;
pub mod remote_avatars;
