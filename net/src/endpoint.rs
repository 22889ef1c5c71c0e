//! The endpoint: a host with up to `max_players - 1` guests, or a guest of one host. It does no I/O: the caller
//! passes in the time and each received datagram, and takes out the datagrams to send, so the same code runs over
//! a UDP socket, through the link simulator, or in a test with a hand-made clock.
//!
//! Handshake (all guest packets padded to `HANDSHAKE_REQUEST_BYTES`; every host reply is smaller, so the host
//! never amplifies):
//! 1. guest → `Request { salt, guest key }`; the host answers `Challenge { salt, cookie, host key }`, the cookie a
//!    keyed BLAKE2s of the guest's address, salt and key and a time bucket. The host keeps no state for it and
//!    spends one keyed hash, so a flood of requests costs it nothing it has to remember.
//! 2. guest → `Response { salt, guest key, cookie, proof }`: only a sender that received the challenge at that
//!    address can echo the cookie, so a forged address gets no further. The proof is the first message of a Noise
//!    NKpsk0 handshake (`crypto::NOISE_PARAMS`): the guest's fresh ephemeral key and an empty payload sealed under
//!    keys that take the host's static key (checked against the code's hash) and the join secret. Only now does
//!    the host spend X25519 operations; if the proof opens it opens a slot and answers `Accepted` with the second
//!    message: its own fresh ephemeral key, and the guest's place sealed, so the guest knows it is the pinned host
//!    and has the secret too. The connection's keys come from both ephemerals, so no two connections share keys,
//!    whatever is replayed. A wrong secret gets `Denied(WrongSecret)`. A cookie opens one connection: the host
//!    keeps the cookies that did while they are valid, so a recorded Response replayed after its guest has gone
//!    opens nothing (with fresh host keys it could not read the old traffic anyway, but it would take a slot).
//! 3. Connected packets are sealed (see `packet`); anything that does not open under the connection's key —
//!    forged, corrupted, replayed from far back or sealed under another peer's key — is dropped and counted as
//!    `forged`. An authentic replay within the window is a `duplicate` or `too_old`.
//!
//! Rate limits (see `rate_limit`): each source IP address has its own handshake bucket, and two global buckets cap
//! the challenges sent and the Responses answered per second, the second reachable only with a valid cookie. A
//! guest's Request and Response carry a join MAC (`crypto::JoinMacKey`, keyed by the join secret), checked first
//! for the cost of one hash: packets with a valid one draw on a second, separate set of these limits, so machines
//! without the code — any number of them — cannot use up what players with the code need. The cost falls on the
//! requester: it sends more bytes than it gets back and must complete a round trip at its own address before the
//! host does any expensive work.
//!
//! Direct links: a guest may also hold connections to other guests (slots 1 and up), with no handshake of their
//! own: the host, which both guests trust, makes a pair of keys for the two (`direct_link_keys`) and hands each its
//! half with the other's address over its own sealed connection; each guest then opens the link
//! (`open_direct`). What they carry is sealed, acked, kept alive and timed out as the host's connection is, and
//! a guest whose NAT rebinds is followed there as a host follows its guests. Anything else from an address that
//! is not the host's is still dropped unread.
//!
//! Acks: a received payload is handed up as `Received` and acked only once the caller `accept`s it, so what the
//! peer sees acked is what the game took (keep-alives and disconnects are accepted here).
//!
//! Buffers: datagrams and payloads live in buffers taken from a pool and returned to it, so once the pool has grown
//! to the traffic nothing on the send or receive path allocates. The pool starts with [`PREFILLED_BUFFERS`], more
//! than a game's steady traffic keeps in flight, so a burst of late packets minutes in does not allocate either.
//!
//! Refusals: a host answers a request of another protocol version with `Denied(VersionMismatch)` (the layout every
//! version reads, so untagged); a guest keeps trying and gives it as its reason if the join times out, so a forged
//! one ends nothing. A full host, and a wrong secret, are refused after the guest's Response with a tag under the
//! X25519 secret of both keys (`crypto::refusal_tag`): the guest believes a refusal only from the host that
//! challenged it, which its join code pins (`EndpointConfig::host_key_hash`: a Challenge from another key is
//! dropped). Someone who sees a guest's Request on the path can thus neither end its join nor play its host.

use crate::ack::AckEvent;
use crate::connection::{Connection, ConnectionStats};
use crate::crypto::{
    host_handshake, host_key_hash, refusal_tag, restore_counter, same_bytes, CookieKey, GuestHandshake,
    HandshakeContext, JoinMacKey, JoinSecret, KeyPair, PacketKey, RandomError, Randomness, SessionKeys, COOKIE_BYTES,
    DIRECT_KEY_BYTES, HANDSHAKE_FIRST_BYTES, HOST_KEY_HASH_BYTES, JOIN_MAC_BYTES, PUBLIC_KEY_BYTES, TAG_BYTES,
};
use crate::packet::{
    deny_reason_code, read_packet, write_packet, write_sealed, ConnectedHeader, DenyReason, DisconnectReason, Packet,
    PacketType, ACK_FIELDS_BYTES, CONNECTED_CLEAR_BYTES, CONNECTED_HEADER_BYTES, MAX_PACKET_BYTES, MAX_PAYLOAD_BYTES,
    MAX_PEERS_LIMIT, PROTOCOL_VERSION,
};
use crate::rate_limit::{address_key, AddressLimiter, TokenBucket};
use crate::serialize::ReadStream;
use std::collections::VecDeque;
use std::net::SocketAddr;
use thiserror::Error;

/// A challenge is valid in the time bucket it was issued in and the next one (so 10 to 20 s).
const CHALLENGE_BUCKET_S: f64 = 10.0;
/// Events kept for a caller that does not poll; the oldest go first.
const MAX_QUEUED_EVENTS: usize = 16_384;
/// Datagrams kept for a caller that does not drain them.
const MAX_QUEUED_DATAGRAMS: usize = 4096;
/// Spare buffers kept for reuse; beyond this a returned buffer is freed.
const MAX_POOLED_BUFFERS: usize = 1024;
/// Buffers made at creation (about 77 KB): a lockstep game over a jittery link grew its pool once after 10 s of play.
const PREFILLED_BUFFERS: usize = 64;

/// The buffer pool at creation: [`PREFILLED_BUFFERS`] buffers, and room for [`MAX_POOLED_BUFFERS`] so returning one
/// never grows the pool itself.
fn prefilled_pool() -> Vec<Vec<u8>> {
    let mut pool = Vec::with_capacity(MAX_POOLED_BUFFERS);
    pool.extend((0..PREFILLED_BUFFERS).map(|_| Vec::with_capacity(MAX_PACKET_BYTES)));
    pool
}

/// Endpoint settings; `Default` is the game's configuration.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Players including the host: a host accepts `max_players - 1` guests.
    pub max_players: usize,
    pub protocol_version: u8,
    /// A connection (or a guest's handshake) with nothing received for this long is dropped (seconds).
    pub timeout_s: f64,
    /// A keep-alive goes out when nothing else was sent for this long (seconds).
    pub keepalive_interval_s: f64,
    /// A guest resends its handshake packet this often (seconds).
    pub handshake_resend_s: f64,
    /// Disconnect packets sent at once, so that one arrives under heavy loss.
    pub disconnect_redundancy: u32,
    /// Handshake packets one source address may have answered per second, and the burst it may save up. A joining
    /// guest resends every `handshake_resend_s` (10 a second), well inside it.
    pub handshake_rate_per_address_per_s: f64,
    pub handshake_burst_per_address: f64,
    /// Challenges the host sends per second over all addresses: bounds its upload under a flood of requests
    /// (20,000 challenges of 60 bytes is under 15 Mbit/s with IP headers).
    pub challenge_rate_per_s: f64,
    /// Responses the host answers per second over all addresses (each costs three X25519 operations, the Noise
    /// handshake's, about 150 µs).
    pub response_rate_per_s: f64,
    /// On a host: the secret its guests must have (`None`: a fresh random one, read back with `join_secret`;
    /// `JoinSecret::OPEN` for an open game). On a guest: the secret from the join code (`None`: an open game).
    pub join_secret: Option<JoinSecret>,
    /// On a guest: the host's key hash from the join code ([`crate::crypto::host_key_hash`]); a Challenge from any
    /// other key is dropped (counted as `wrong_host`). `None` (joining by address) takes whichever host answers.
    pub host_key_hash: Option<[u8; HOST_KEY_HASH_BYTES]>,
    /// On a host: the most guests one IP address (an IPv6 address's /64) may have connected at once; `None` takes
    /// any number. An open game takes one, so a single machine cannot fill it from many ports. Loopback (the host's
    /// own bots) is never limited.
    pub max_guests_per_address: Option<usize>,
    /// Only with the `test-keys` feature (the fuzzers): every secret this endpoint draws — its keys, cookie key,
    /// join secret, salt and handshake ephemerals — comes from this seed instead of the operating system, so a
    /// failure reproduces. `None`: the operating system's, as always in the game.
    #[cfg(feature = "test-keys")]
    pub key_seed: Option<u64>,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            max_players: 4,
            protocol_version: PROTOCOL_VERSION,
            timeout_s: 5.0,
            keepalive_interval_s: 0.1,
            handshake_resend_s: 0.1,
            disconnect_redundancy: 10,
            handshake_rate_per_address_per_s: 16.0,
            handshake_burst_per_address: 32.0,
            challenge_rate_per_s: 20_000.0,
            response_rate_per_s: 256.0,
            join_secret: None,
            host_key_hash: None,
            max_guests_per_address: None,
            #[cfg(feature = "test-keys")]
            key_seed: None,
        }
    }
}

/// A peer, by slot. On a guest, the host is `PeerId(0)`, and the other slots are direct links to other guests
/// (`Endpoint::open_direct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u8);

/// Why joining failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConnectError {
    #[error("the host is full")]
    Full,
    #[error(
        "the host already has as many players from this IP address as it takes from one (an open game takes one): \
         ask the host for a join code"
    )]
    AddressFull,
    #[error("protocol version mismatch: host speaks {host_version}, we speak {ours}")]
    VersionMismatch { host_version: u8, ours: u8 },
    #[error("the host refused our join code: it is wrong or from an earlier game (ask the host for the current one)")]
    WrongSecret,
    #[error("no answer from the host")]
    TimedOut,
    #[error(
        "the host that answered is not the one in the join code (another machine at that address, or someone on the \
         way pretending to be it): ask the host for its current code"
    )]
    WrongHost,
}

/// Why `send` refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SendError {
    #[error("payload of {bytes} bytes exceeds the {max} bytes a packet can carry")]
    TooLarge { bytes: usize, max: usize },
    #[error("peer {0:?} is not connected")]
    NotConnected(PeerId),
}

/// Why an endpoint could not start.
#[derive(Debug, Clone, Error)]
pub enum EndpointError {
    #[error("cannot make keys: {0}")]
    Random(#[from] RandomError),
}

/// What the caller learns from `pop_event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointEvent {
    Connected {
        peer: PeerId,
    },
    ConnectFailed {
        reason: ConnectError,
    },
    Disconnected {
        peer: PeerId,
        reason: DisconnectReason,
    },
    /// A payload that opened under the peer's key, delivered at most once (it may arrive out of order: compare
    /// sequences). Its bytes are `Endpoint::payload()` until the next `pop_event`. It is acked only once the caller
    /// passes its sequence to `accept`.
    Received {
        peer: PeerId,
        sequence: u16,
    },
    Acked {
        peer: PeerId,
        sequence: u16,
    },
    /// Sent packet that left the ack window unacked.
    Lost {
        peer: PeerId,
        sequence: u16,
    },
}

/// Datagrams refused, by cause; nothing else changes when one is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropCounters {
    pub malformed: u64,
    pub unknown_sender: u64,
    pub wrong_version: u64,
    /// Responses whose cookie was not one this host issued to that address lately.
    pub bad_challenge: u64,
    /// Responses whose cookie already opened a connection (a cookie opens one): a recorded Response replayed.
    pub replayed_cookie: u64,
    /// Handshake packets over the per-address or global rate.
    pub rate_limited: u64,
    /// Sealed packets that did not open: forged, corrupted, replayed from beyond the window, sealed under another
    /// peer's key, or a handshake packet with a bad seal or a low-order key.
    pub forged: u64,
    /// Responses whose proof did not open: a guest without this game's join secret.
    pub wrong_secret: u64,
    /// Challenges from a host whose key is not the one the join code names.
    pub wrong_host: u64,
    /// Authentic packets received before (a network duplicate or a replay within the window).
    pub duplicate: u64,
    /// Authentic packets older than the receive window.
    pub too_old: u64,
    pub unexpected: u64,
    pub events_overflowed: u64,
    pub datagrams_overflowed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GuestState {
    Requesting,
    Responding {
        cookie: [u8; COOKIE_BYTES],
        /// Our Noise message, sent again until the host answers.
        proof: [u8; HANDSHAKE_FIRST_BYTES],
        /// The key of the host that challenged us: a refusal must carry its tag.
        host_public: [u8; PUBLIC_KEY_BYTES],
    },
    Connected,
    Failed,
    Disconnected,
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Host,
    Guest {
        host: SocketAddr,
        salt: u64,
        state: GuestState,
        started_s: f64,
        last_handshake_s: f64,
    },
}

/// A host or a guest.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    role: Role,
    /// The host's key pair for its whole life; a guest's for this join.
    keys: KeyPair,
    cookie_key: CookieKey,
    join_secret: JoinSecret,
    /// Where this endpoint's secrets come from (the operating system, except in the fuzzers).
    randomness: Randomness,
    /// A guest's half of the Noise handshake between its Response and the host's Accepted.
    pending_handshake: Option<Box<GuestHandshake>>,
    slots: Vec<Option<Connection>>,
    events: VecDeque<EndpointEvent>,
    /// The bytes of each `Received` in `events`, in the same order.
    payloads: VecDeque<Vec<u8>>,
    /// The bytes of the last `Received` popped.
    payload: Vec<u8>,
    outgoing: VecDeque<(SocketAddr, Vec<u8>)>,
    /// The datagram last popped by `pop_outgoing`.
    popped: Vec<u8>,
    pool: Vec<Vec<u8>>,
    /// Where a sealed packet is opened (a copy: the datagram is the caller's).
    scratch: Box<[u8; MAX_PACKET_BYTES]>,
    drops: DropCounters,
    /// Handshake limits: `[0]` for packets without a valid join MAC (strangers, wrong codes, open games), `[1]` for
    /// those with one — which nobody without the code can make, so no flood of theirs can use these up.
    limits: [HandshakeLimits; 2],
    /// The join MAC's key, from the join secret (see `crypto::JoinMacKey`).
    join_mac: JoinMacKey,
    /// The cookies that opened a connection while they are valid: a cookie opens one (see [`UsedCookies`]).
    used_cookies: UsedCookies,
    /// On a guest: a refusal that could not be checked (a version mismatch), the reason given if the join times out.
    refused: Option<ConnectError>,
}

/// One set of handshake limits: per source address, and over all addresses for challenges sent and Responses
/// answered (each of those costs X25519 operations).
#[derive(Debug)]
struct HandshakeLimits {
    address: AddressLimiter,
    challenges: TokenBucket,
    responses: TokenBucket,
}

impl HandshakeLimits {
    fn new(config: &EndpointConfig, now_s: f64, hash_key: [u8; 16]) -> Self {
        HandshakeLimits {
            address: AddressLimiter::new(
                config.handshake_rate_per_address_per_s,
                config.handshake_burst_per_address,
                now_s,
                hash_key,
            ),
            challenges: TokenBucket::full(config.challenge_rate_per_s, now_s),
            responses: TokenBucket::full(config.response_rate_per_s, now_s),
        }
    }
}

/// The join MAC a guest's Request or Response should carry, over all its fields but the MAC (`None` for other
/// packets). The guest writes it and the host checks it with this one function.
fn expected_join_mac(key: &JoinMacKey, version: u8, packet: &Packet<'_>) -> Option<[u8; JOIN_MAC_BYTES]> {
    match *packet {
        Packet::Request {
            client_salt,
            public_key,
            ..
        } => Some(key.mac(version, PacketType::Request as u8, client_salt, &public_key, None)),
        Packet::Response {
            client_salt,
            public_key,
            cookie,
            proof,
            ..
        } => Some(key.mac(
            version,
            PacketType::Response as u8,
            client_salt,
            &public_key,
            Some((&cookie, &proof)),
        )),
        _ => None,
    }
}

/// Whether `packet` carries the join MAC its fields call for: its sender has the join secret.
fn has_join_mac(key: &JoinMacKey, version: u8, packet: &Packet<'_>) -> bool {
    let (Packet::Request { mac, .. } | Packet::Response { mac, .. }) = packet else {
        return false;
    };
    expected_join_mac(key, version, packet).is_some_and(|expected| same_bytes(&expected, mac))
}

/// The cookies that opened a connection, with the bucket each was issued in, kept until it expires. A recorded
/// Response replayed from the guest's address after the guest timed out (or left) carries a cookie still valid
/// for up to 20 s; without this it would open a slot again (with fresh keys — the host's ephemeral is new, so
/// nothing recorded opens under them — but a seat held by nobody until it times out). Sized once for every proof
/// the rate limit lets open in a cookie's life, so nothing valid is forgotten and nothing is allocated per packet.
#[derive(Debug)]
struct UsedCookies {
    entries: VecDeque<(i64, [u8; COOKIE_BYTES])>,
    capacity: usize,
}

impl UsedCookies {
    /// Room for `rate_per_s` proofs a second (and a burst of as many) over a cookie's two buckets.
    fn new(rate_per_s: f64) -> UsedCookies {
        let capacity = (rate_per_s.max(1.0) * (2.0 * CHALLENGE_BUCKET_S + 1.0))
            .ceil()
            .min(65_536.0) as usize;
        UsedCookies {
            entries: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// Forgets cookies issued before `bucket - 1` (no longer valid), and answers whether `cookie` opened a
    /// connection.
    fn contains(&mut self, bucket: i64, cookie: &[u8; COOKIE_BYTES]) -> bool {
        while self.entries.front().is_some_and(|(b, _)| *b < bucket - 1) {
            self.entries.pop_front();
        }
        self.entries.iter().any(|(_, c)| same_bytes(c, cookie))
    }

    fn insert(&mut self, issued_bucket: i64, cookie: [u8; COOKIE_BYTES]) {
        if self.entries.len() == self.capacity {
            // Past the rate limit's reach (a rate changed at run time): the oldest goes.
            self.entries.pop_front();
        }
        self.entries.push_back((issued_bucket, cookie));
    }
}

impl Endpoint {
    fn new(config: EndpointConfig, role: Role, slots: usize, now_s: f64) -> Result<Self, EndpointError> {
        let is_host = matches!(role, Role::Host);
        #[cfg(feature = "test-keys")]
        let mut randomness = match config.key_seed {
            Some(seed) => Randomness::Seeded { seed, drawn: 0 },
            None => Randomness::Os,
        };
        #[cfg(not(feature = "test-keys"))]
        let mut randomness = Randomness::Os;
        let join_secret = match config.join_secret {
            Some(secret) => secret,
            None if is_host => JoinSecret::from_randomness(&mut randomness)?,
            None => JoinSecret::OPEN,
        };
        let keys = KeyPair::from_randomness(&mut randomness)?;
        let cookie_key = CookieKey::from_randomness(&mut randomness)?;
        let limits = [
            HandshakeLimits::new(&config, now_s, randomness.bytes()?),
            HandshakeLimits::new(&config, now_s, randomness.bytes()?),
        ];
        Ok(Endpoint {
            limits,
            join_mac: JoinMacKey::new(&join_secret),
            // Both sets of limits answer Responses at `response_rate_per_s`.
            used_cookies: UsedCookies::new(if is_host { 2.0 * config.response_rate_per_s } else { 0.0 }),
            refused: None,
            config,
            role,
            keys,
            cookie_key,
            randomness,
            join_secret,
            pending_handshake: None,
            slots: vec![None; slots],
            events: VecDeque::new(),
            payloads: VecDeque::new(),
            payload: Vec::with_capacity(MAX_PACKET_BYTES),
            outgoing: VecDeque::new(),
            popped: Vec::with_capacity(MAX_PACKET_BYTES),
            pool: prefilled_pool(),
            scratch: Box::new([0; MAX_PACKET_BYTES]),
            drops: DropCounters::default(),
        })
    }

    /// A host accepting `config.max_players - 1` guests (clamped to what the wire can name).
    pub fn host(config: EndpointConfig, now_s: f64) -> Result<Self, EndpointError> {
        let guests = config.max_players.clamp(2, usize::from(MAX_PEERS_LIMIT)) - 1;
        Self::new(config, Role::Host, guests, now_s)
    }

    /// A guest that starts its handshake with `host` at once.
    pub fn join(config: EndpointConfig, host: SocketAddr, now_s: f64) -> Result<Self, EndpointError> {
        let role = Role::Guest {
            host,
            salt: 0,
            state: GuestState::Requesting,
            started_s: now_s,
            last_handshake_s: now_s,
        };
        // Slot 0 is the host; the others are direct links to other guests, opened when the host introduces them.
        let slots = config.max_players.clamp(2, usize::from(MAX_PEERS_LIMIT));
        let mut e = Self::new(config, role, slots, now_s)?;
        let salt = u64::from_le_bytes(e.randomness.bytes()?);
        if let Role::Guest { salt: s, .. } = &mut e.role {
            *s = salt;
        }
        let request = e.request(salt);
        e.emit_packet(host, &request);
        Ok(e)
    }

    /// A guest's Request, with its join MAC.
    fn request(&self, client_salt: u64) -> Packet<'static> {
        self.with_join_mac(Packet::Request {
            client_salt,
            public_key: self.keys.public,
            mac: [0; JOIN_MAC_BYTES],
        })
    }

    /// A guest's Response to a challenge, with its join MAC.
    fn response(
        &self,
        client_salt: u64,
        cookie: [u8; COOKIE_BYTES],
        proof: [u8; HANDSHAKE_FIRST_BYTES],
    ) -> Packet<'static> {
        self.with_join_mac(Packet::Response {
            client_salt,
            public_key: self.keys.public,
            cookie,
            proof,
            mac: [0; JOIN_MAC_BYTES],
        })
    }

    /// `packet` (a Request or Response) with the join MAC its fields call for.
    fn with_join_mac(&self, mut packet: Packet<'static>) -> Packet<'static> {
        let expected = expected_join_mac(&self.join_mac, self.config.protocol_version, &packet);
        if let (Some(m), Packet::Request { mac, .. } | Packet::Response { mac, .. }) = (expected, &mut packet) {
            *mac = m;
        }
        packet
    }

    /// The hash of this endpoint's public key, which a host's join code carries.
    pub fn key_hash(&self) -> [u8; HOST_KEY_HASH_BYTES] {
        host_key_hash(&self.keys.public)
    }

    pub fn is_host(&self) -> bool {
        matches!(self.role, Role::Host)
    }

    /// On a host: the secret guests must have (goes into the join code). On a guest: the one it joins with.
    pub fn join_secret(&self) -> JoinSecret {
        self.join_secret
    }

    /// On a guest: connected to the host. On a host: always true.
    pub fn is_connected(&self) -> bool {
        match self.role {
            Role::Host => true,
            Role::Guest { state, .. } => state == GuestState::Connected,
        }
    }

    pub fn drops(&self) -> DropCounters {
        self.drops
    }

    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| PeerId(i as u8))
    }

    pub fn peer_addr(&self, peer: PeerId) -> Option<SocketAddr> {
        self.slot(peer).map(|c| c.addr)
    }

    pub fn stats(&self, peer: PeerId) -> Option<ConnectionStats> {
        self.slot(peer).map(Connection::stats)
    }

    /// Whether `sequence` from `peer` was received and accepted, while it is still within the receive window
    /// (512 packets): an oracle for tests and `net-soak` to check acks against.
    pub fn has_received(&self, peer: PeerId, sequence: u16) -> bool {
        self.slot(peer).is_some_and(|c| c.acks.was_accepted(sequence))
    }

    /// The keys of the connection to `peer`, as this end uses them (it sends with `send`). Only with the `test-keys`
    /// feature, which the crate's own tests turn on: the attacker fuzzers seal hostile packets with a guest's keys;
    /// the game never has this.
    #[cfg(feature = "test-keys")]
    pub fn peer_keys(&self, peer: PeerId) -> Option<crate::crypto::SessionKeys> {
        self.slot(peer).map(|c| c.keys.clone())
    }

    /// The next event. After a `Received`, its bytes are `payload()`.
    pub fn pop_event(&mut self) -> Option<EndpointEvent> {
        let event = self.events.pop_front()?;
        if matches!(event, EndpointEvent::Received { .. }) {
            if let Some(bytes) = self.payloads.pop_front() {
                let old = std::mem::replace(&mut self.payload, bytes);
                self.recycle(old);
            }
        }
        Some(event)
    }

    /// The bytes of the `Received` last popped.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The game took the payload `sequence` from `peer`: it is acked from the next packet on. Returns false when
    /// there is no such payload in the receive window (or it was accepted already).
    pub fn accept(&mut self, peer: PeerId, sequence: u16) -> bool {
        self.slots
            .get_mut(usize::from(peer.0))
            .and_then(Option::as_mut)
            .is_some_and(|c| c.acks.on_accept(sequence))
    }

    /// The next datagram to put on the wire, with its destination; the bytes are valid until the next call.
    pub fn pop_outgoing(&mut self) -> Option<(SocketAddr, &[u8])> {
        let (to, bytes) = self.outgoing.pop_front()?;
        let old = std::mem::replace(&mut self.popped, bytes);
        self.recycle(old);
        Some((to, &self.popped))
    }

    fn slot(&self, peer: PeerId) -> Option<&Connection> {
        self.slots.get(usize::from(peer.0)).and_then(Option::as_ref)
    }

    /// A buffer from the pool (a new one only when more are in flight than ever before).
    fn buffer(&mut self) -> Vec<u8> {
        let mut b = self.pool.pop().unwrap_or_else(|| Vec::with_capacity(MAX_PACKET_BYTES));
        b.clear();
        b
    }

    fn recycle(&mut self, buffer: Vec<u8>) {
        if self.pool.len() < MAX_POOLED_BUFFERS {
            self.pool.push(buffer);
        }
    }

    fn push_event(&mut self, event: EndpointEvent) {
        if self.events.len() >= MAX_QUEUED_EVENTS {
            if let Some(EndpointEvent::Received { .. }) = self.events.pop_front() {
                if let Some(b) = self.payloads.pop_front() {
                    self.recycle(b);
                }
            }
            self.drops.events_overflowed += 1;
        }
        self.events.push_back(event);
    }

    fn emit(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        if self.outgoing.len() >= MAX_QUEUED_DATAGRAMS {
            if let Some((_, b)) = self.outgoing.pop_front() {
                self.recycle(b);
            }
            self.drops.datagrams_overflowed += 1;
        }
        self.outgoing.push_back((to, bytes));
    }

    /// Refuses a handshake of another version, saying why (no tag: the peer may not read one).
    fn deny_version(&mut self, to: SocketAddr, client_salt: u64, host_version: u8) {
        let packet = Packet::Denied {
            client_salt,
            reason: DenyReason::VersionMismatch { host_version },
            tag: [0; TAG_BYTES],
        };
        self.emit_packet(to, &packet);
    }

    /// Refuses a guest that sent its Response (with `guest_public`), saying why, with the tag that shows the guest
    /// the refusal is ours (`crypto::refusal_tag`; one X25519 operation, paid for by a response token).
    fn deny_tagged(&mut self, to: SocketAddr, client_salt: u64, reason: DenyReason, guest_public: &[u8; 32]) {
        let (code, arg) = deny_reason_code(reason);
        let host_public = self.keys.public;
        let Some(tag) = refusal_tag(
            &self.keys,
            guest_public,
            &host_public,
            guest_public,
            client_salt,
            [code, arg],
        ) else {
            self.drops.forged += 1;
            return;
        };
        self.emit_packet(
            to,
            &Packet::Denied {
                client_salt,
                reason,
                tag,
            },
        );
    }

    /// Encodes and queues a handshake packet. Only our own well-formed packets come here, so an encoding failure is
    /// a bug, reported through tracing and dropped rather than panicking in a live game.
    fn emit_packet(&mut self, to: SocketAddr, packet: &Packet<'_>) {
        let mut buf = self.buffer();
        buf.resize(MAX_PACKET_BYTES, 0);
        match write_packet(packet, self.config.protocol_version, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                self.emit(to, buf);
            }
            Err(e) => {
                tracing::error!("could not encode {packet:?}: {e}");
                self.recycle(buf);
            }
        }
    }

    /// Sends `payload` to `peer` in one packet; returns the packet's sequence (matched later by `Acked`/`Lost`).
    pub fn send(&mut self, now_s: f64, peer: PeerId, payload: &[u8]) -> Result<u16, SendError> {
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(SendError::TooLarge {
                bytes: payload.len(),
                max: MAX_PAYLOAD_BYTES,
            });
        }
        self.send_connected(now_s, peer, PacketType::Payload, payload)
            .ok_or(SendError::NotConnected(peer))
    }

    /// Seals and queues a connected packet (payload, keep-alive or disconnect) with the next counter.
    fn send_connected(&mut self, now_s: f64, peer: PeerId, packet_type: PacketType, body: &[u8]) -> Option<u16> {
        let mut buf = self.buffer();
        let Some(conn) = self.slots.get_mut(usize::from(peer.0)).and_then(Option::as_mut) else {
            self.recycle(buf);
            return None;
        };
        let bytes = CONNECTED_HEADER_BYTES + body.len();
        let mut header = conn.acks.ack_fields(now_s);
        header.sequence = conn.acks.on_send(now_s, bytes);
        let counter = conn.send_counter;
        conn.send_counter += 1;
        conn.on_sent(now_s, bytes);
        if let Err(e) = write_sealed(&conn.keys.send, packet_type, counter, &mut header, body, &mut buf) {
            tracing::error!("could not encode a connected packet: {e}");
            self.recycle(buf);
            return None;
        }
        let addr = conn.addr;
        self.emit(addr, buf);
        self.drain_ack_events(peer);
        Some(header.sequence)
    }

    fn drain_ack_events(&mut self, peer: PeerId) {
        loop {
            let Some(conn) = self.slots.get_mut(usize::from(peer.0)).and_then(Option::as_mut) else {
                return;
            };
            let Some(e) = conn.acks.pop_event() else { return };
            if let AckEvent::Lost(_) = e {
                conn.on_lost();
            }
            self.push_event(match e {
                AckEvent::Acked(sequence) => EndpointEvent::Acked { peer, sequence },
                AckEvent::Lost(sequence) => EndpointEvent::Lost { peer, sequence },
            });
        }
    }

    /// On a host: fresh keys for a direct link between two of its guests, `a` and `b` by player order: the first
    /// half seals what `a` sends `b`, the second what `b` sends `a`. The host hands them to both over their own
    /// sealed connections, with each other's address (`open_direct`).
    pub fn direct_link_keys(&mut self) -> Result<[u8; 2 * DIRECT_KEY_BYTES], RandomError> {
        self.randomness.bytes()
    }

    /// On a guest: a direct link in slot `peer` (not 0, the host's) to another guest at `addr`, with the keys the
    /// host made for the pair (`send` seals what we send, `receive` opens what it sends). Its packets are sealed,
    /// acked, kept alive and timed out as the host's are; there is no handshake (the host vouched for both ends).
    /// Keys are fresh per introduction: never open a link twice with the same keys (the counters start again at
    /// 0). Returns false, changing nothing, on a host or for a slot out of range.
    pub fn open_direct(
        &mut self,
        now_s: f64,
        peer: PeerId,
        addr: SocketAddr,
        send: &[u8; DIRECT_KEY_BYTES],
        receive: &[u8; DIRECT_KEY_BYTES],
    ) -> bool {
        let slots = self.slots.len();
        let Role::Guest { salt, .. } = self.role else {
            return false;
        };
        let Some(slot) = self.slots.get_mut(usize::from(peer.0)).filter(|_| peer.0 != 0) else {
            return false;
        };
        let keys = SessionKeys {
            send: PacketKey::from_bytes(send),
            receive: PacketKey::from_bytes(receive),
        };
        *slot = Some(Connection::new(addr, keys, salt, (peer.0, slots as u8), now_s));
        tracing::debug!("direct link {peer:?} to {addr} opened");
        true
    }

    /// Closes the connection to `peer`, telling it several times over.
    pub fn disconnect(&mut self, now_s: f64, peer: PeerId) {
        self.close(now_s, peer, DisconnectReason::Closed, true);
    }

    /// Closes everything (a host shutting down, a guest leaving).
    pub fn shutdown(&mut self, now_s: f64) {
        let reason = if self.is_host() {
            DisconnectReason::HostShutdown
        } else {
            DisconnectReason::Closed
        };
        for i in 0..self.slots.len() {
            self.close(now_s, PeerId(i as u8), reason, true);
        }
    }

    fn close(&mut self, now_s: f64, peer: PeerId, reason: DisconnectReason, notify: bool) {
        if self.slot(peer).is_none() {
            return;
        }
        if notify {
            for _ in 0..self.config.disconnect_redundancy {
                self.send_connected(now_s, peer, PacketType::Disconnect, &[reason.code()]);
            }
        }
        let Some(conn) = self.slots.get_mut(usize::from(peer.0)).and_then(Option::take) else {
            return;
        };
        if let (Role::Guest { state, .. }, 0) = (&mut self.role, peer.0) {
            *state = GuestState::Disconnected;
        }
        tracing::debug!("peer {peer:?} at {} disconnected: {reason:?}", conn.addr);
        self.push_event(EndpointEvent::Disconnected { peer, reason });
    }

    /// Timeouts, keep-alives, handshake resends and rate windows. Call once per tick.
    pub fn update(&mut self, now_s: f64) {
        if let Role::Guest {
            host,
            salt,
            state,
            started_s,
            last_handshake_s,
        } = self.role
        {
            let waiting = matches!(state, GuestState::Requesting | GuestState::Responding { .. });
            if waiting && now_s - started_s >= self.config.timeout_s {
                self.set_guest_state(GuestState::Failed);
                self.pending_handshake = None;
                // Say why nobody let us in: a host of another version, only a host with another key answering, or
                // no answer.
                let reason = match self.refused {
                    Some(reason) => reason,
                    None if self.drops.wrong_host > 0 => ConnectError::WrongHost,
                    None => ConnectError::TimedOut,
                };
                self.push_event(EndpointEvent::ConnectFailed { reason });
            } else if waiting && now_s - last_handshake_s >= self.config.handshake_resend_s {
                let packet = match state {
                    GuestState::Responding { cookie, proof, .. } => self.response(salt, cookie, proof),
                    _ => self.request(salt),
                };
                self.emit_packet(host, &packet);
                if let Role::Guest { last_handshake_s, .. } = &mut self.role {
                    *last_handshake_s = now_s;
                }
            }
        }
        for i in 0..self.slots.len() {
            let peer = PeerId(i as u8);
            let Some(conn) = self.slots[i].as_mut() else { continue };
            conn.update_rates(now_s);
            if now_s - conn.last_receive_s >= self.config.timeout_s {
                self.close(now_s, peer, DisconnectReason::TimedOut, false);
            } else if now_s - conn.last_send_s >= self.config.keepalive_interval_s {
                self.send_connected(now_s, peer, PacketType::KeepAlive, &[]);
            }
        }
    }

    fn set_guest_state(&mut self, new: GuestState) {
        if let Role::Guest { state, .. } = &mut self.role {
            *state = new;
        }
    }

    /// Processes one received datagram. Anything malformed, unexpected or unauthenticated is counted in `drops`
    /// and changes nothing else.
    pub fn receive(&mut self, now_s: f64, from: SocketAddr, data: &[u8]) {
        let (version, packet) = match read_packet(data) {
            Ok(p) => p,
            Err(_) => {
                self.drops.malformed += 1;
                return;
            }
        };
        if let Packet::Connected {
            packet_type,
            sequence,
            sealed,
        } = packet
        {
            let clear = &data[..CONNECTED_CLEAR_BYTES];
            match self.role {
                // A guest hears from its host, and from the guests the host introduced (direct links).
                Role::Guest { host, .. } if host != from && !self.slots[1..].iter().any(Option::is_some) => {
                    self.drops.unknown_sender += 1
                }
                _ => self.connected_receive(now_s, from, version, packet_type, sequence, clear, sealed),
            }
            return;
        }
        match self.role {
            Role::Host => self.host_receive(now_s, from, version, &packet),
            Role::Guest { host, .. } if host == from => self.guest_receive(now_s, version, &packet),
            Role::Guest { .. } => self.drops.unknown_sender += 1,
        }
    }

    fn challenge_bucket(now_s: f64) -> i64 {
        (now_s / CHALLENGE_BUCKET_S).floor() as i64
    }

    /// Whether `from`'s IP address (its /64) has all the guests `max_guests_per_address` lets it have.
    fn address_is_full(&self, from: SocketAddr) -> bool {
        let Some(limit) = self.config.max_guests_per_address else {
            return false;
        };
        if from.ip().is_loopback() {
            return false;
        }
        let key = address_key(from);
        let connected = self
            .slots
            .iter()
            .flatten()
            .filter(|c| address_key(c.addr) == key)
            .count();
        connected >= limit
    }

    fn find_by_addr(&self, addr: SocketAddr) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|c| c.addr == addr))
    }

    fn host_receive(&mut self, now_s: f64, from: SocketAddr, version: u8, packet: &Packet<'_>) {
        // The join MAC first (one hash): it decides which limits a Request or Response draws on.
        let coded = usize::from(has_join_mac(&self.join_mac, version, packet));
        match *packet {
            Packet::Request {
                client_salt,
                public_key,
                ..
            } => {
                if !self.limits[coded].address.allow(from, now_s) {
                    self.drops.rate_limited += 1;
                    return;
                }
                if version != self.config.protocol_version {
                    self.drops.wrong_version += 1;
                    self.deny_version(from, client_salt, self.config.protocol_version);
                    return;
                }
                if let Some(i) = self.find_by_addr(from) {
                    self.resend_accept(i, client_salt);
                    return;
                }
                // A full host still challenges: its refusal comes after the Response, with a tag the guest can
                // check (it has the host's key by then), so a stranger's "full" ends no one's join.
                let rate = self.config.challenge_rate_per_s;
                if !self.limits[coded].challenges.take(now_s, rate, rate) {
                    self.drops.rate_limited += 1;
                    return;
                }
                let bucket = Self::challenge_bucket(now_s);
                let cookie = self.cookie_key.cookie(from, client_salt, &public_key, bucket);
                let host_public = self.keys.public;
                self.emit_packet(
                    from,
                    &Packet::Challenge {
                        client_salt,
                        cookie,
                        public_key: host_public,
                    },
                );
            }
            Packet::Response {
                client_salt,
                public_key,
                cookie,
                proof,
                ..
            } => self.host_receive_response(now_s, from, version, coded, client_salt, &public_key, &cookie, &proof),
            Packet::Challenge { .. } | Packet::Accepted { .. } | Packet::Denied { .. } | Packet::Connected { .. } => {
                self.drops.unexpected += 1
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn host_receive_response(
        &mut self,
        now_s: f64,
        from: SocketAddr,
        version: u8,
        coded: usize,
        client_salt: u64,
        public_key: &[u8; PUBLIC_KEY_BYTES],
        cookie: &[u8; COOKIE_BYTES],
        proof: &[u8; HANDSHAKE_FIRST_BYTES],
    ) {
        if version != self.config.protocol_version {
            self.drops.wrong_version += 1;
            return;
        }
        if !self.limits[coded].address.allow(from, now_s) {
            self.drops.rate_limited += 1;
            return;
        }
        let bucket = Self::challenge_bucket(now_s);
        let issued = [bucket, bucket - 1]
            .into_iter()
            .find(|&b| same_bytes(cookie, &self.cookie_key.cookie(from, client_salt, public_key, b)));
        let Some(issued) = issued else {
            self.drops.bad_challenge += 1;
            return;
        };
        if let Some(i) = self.find_by_addr(from) {
            self.resend_accept(i, client_salt);
            return;
        }
        if self.used_cookies.contains(bucket, cookie) {
            self.drops.replayed_cookie += 1;
            return;
        }
        let rate = self.config.response_rate_per_s;
        if !self.limits[coded].responses.take(now_s, rate, rate) {
            self.drops.rate_limited += 1;
            return;
        }
        let Some(i) = self.slots.iter().position(Option::is_none) else {
            self.deny_tagged(from, client_salt, DenyReason::Full, public_key);
            return;
        };
        if self.address_is_full(from) {
            self.deny_tagged(from, client_salt, DenyReason::AddressFull, public_key);
            return;
        }
        let index = (i as u8 + 1, self.slots.len() as u8 + 1);
        let context = HandshakeContext {
            version,
            client_salt,
            guest_public: public_key,
            cookie,
        };
        let handshake = host_handshake(
            &mut self.randomness,
            &self.keys,
            &self.join_secret,
            context,
            proof,
            [index.0, index.1],
        );
        let (accept, keys) = match handshake {
            Ok(done) => done,
            Err(crate::crypto::HandshakeError::DidNotOpen) => {
                self.drops.wrong_secret += 1;
                self.deny_tagged(from, client_salt, DenyReason::WrongSecret, public_key);
                return;
            }
            Err(e) => {
                tracing::error!("handshake with {from} failed: {e}");
                self.drops.forged += 1;
                return;
            }
        };
        self.used_cookies.insert(issued, *cookie);
        let mut conn = Connection::new(from, keys, client_salt, index, now_s);
        conn.accept = accept;
        self.slots[i] = Some(conn);
        tracing::debug!("guest {from} connected in slot {i}");
        self.resend_accept(i, client_salt);
        self.push_event(EndpointEvent::Connected { peer: PeerId(i as u8) });
    }

    /// Answers a repeated handshake from a connected guest (its accept was lost) with the same accept, byte for
    /// byte (a new Noise answer would carry other keys); a different salt at the same address is a new guest that
    /// must wait for the old connection to time out.
    fn resend_accept(&mut self, slot: usize, client_salt: u64) {
        let Some(conn) = self.slots[slot].as_ref() else { return };
        if conn.client_salt != client_salt {
            self.drops.unexpected += 1;
            return;
        }
        let (addr, sealed) = (conn.addr, conn.accept);
        self.emit_packet(addr, &Packet::Accepted { client_salt, sealed });
    }

    /// A refusal naming our salt. One for being full or a wrong secret ends the join only with the tag of the host
    /// that challenged us (the one our code pins); without it, it is a stranger's that saw our Request, dropped
    /// (counted as forged). A version mismatch cannot carry one (the host may not read our version's): it is
    /// remembered and given as the reason if the join times out, and ends nothing before, so a forged one changes
    /// nothing either.
    fn guest_refused(&mut self, reason: DenyReason, tag: &[u8; TAG_BYTES]) {
        let Role::Guest { host, salt, state, .. } = self.role else {
            return;
        };
        let error = match reason {
            DenyReason::Full => ConnectError::Full,
            DenyReason::VersionMismatch { host_version } => {
                self.refused = Some(ConnectError::VersionMismatch {
                    host_version,
                    ours: self.config.protocol_version,
                });
                return;
            }
            DenyReason::WrongSecret => ConnectError::WrongSecret,
            DenyReason::AddressFull => ConnectError::AddressFull,
        };
        let GuestState::Responding { host_public, .. } = state else {
            self.drops.forged += 1;
            return;
        };
        let (code, arg) = deny_reason_code(reason);
        let own_public = self.keys.public;
        let expected = refusal_tag(&self.keys, &host_public, &host_public, &own_public, salt, [code, arg]);
        if !expected.is_some_and(|t| same_bytes(&t, tag)) {
            self.drops.forged += 1;
            return;
        }
        tracing::warn!("host {host} refused us: {error}");
        self.set_guest_state(GuestState::Failed);
        self.pending_handshake = None;
        self.push_event(EndpointEvent::ConnectFailed { reason: error });
    }

    fn guest_receive(&mut self, now_s: f64, version: u8, packet: &Packet<'_>) {
        let Role::Guest { host, salt, state, .. } = self.role else {
            return;
        };
        let handshaking = matches!(state, GuestState::Requesting | GuestState::Responding { .. });
        match *packet {
            Packet::Denied {
                client_salt,
                reason,
                tag,
            } if handshaking && client_salt == salt => self.guest_refused(reason, &tag),
            _ if version != self.config.protocol_version => self.drops.wrong_version += 1,
            Packet::Challenge {
                client_salt,
                cookie,
                public_key: host_public,
            } if state == GuestState::Requesting && client_salt == salt => {
                if self
                    .config
                    .host_key_hash
                    .is_some_and(|pin| !same_bytes(&pin, &host_key_hash(&host_public)))
                {
                    // Not the host the code names: keep waiting for the one that is.
                    self.drops.wrong_host += 1;
                    return;
                }
                let own_public = self.keys.public;
                let context = HandshakeContext {
                    version,
                    client_salt: salt,
                    guest_public: &own_public,
                    cookie: &cookie,
                };
                let (half, proof) =
                    match GuestHandshake::start(&mut self.randomness, &host_public, &self.join_secret, context) {
                        Ok(started) => started,
                        Err(e) => {
                            // A low-order or otherwise unusable host key: not a host we can talk to.
                            tracing::debug!("challenge from {host} not usable: {e}");
                            self.drops.forged += 1;
                            return;
                        }
                    };
                self.pending_handshake = Some(Box::new(half));
                self.set_guest_state(GuestState::Responding {
                    cookie,
                    proof,
                    host_public,
                });
                let response = self.response(salt, cookie, proof);
                self.emit_packet(host, &response);
                if let Role::Guest { last_handshake_s, .. } = &mut self.role {
                    *last_handshake_s = now_s;
                }
            }
            Packet::Accepted { client_salt, sealed } if client_salt == salt => {
                let Some(half) = self
                    .pending_handshake
                    .as_mut()
                    .filter(|_| matches!(state, GuestState::Responding { .. }))
                else {
                    self.drops.unexpected += 1;
                    return;
                };
                let Ok((plain, keys)) = half.finish(&sealed) else {
                    self.drops.forged += 1;
                    return;
                };
                let [index, count] = plain;
                if count == 0 || count > MAX_PEERS_LIMIT || index == 0 || index >= count {
                    self.drops.malformed += 1;
                    return;
                }
                self.pending_handshake = None;
                self.slots[0] = Some(Connection::new(host, keys, salt, (index, count), now_s));
                self.set_guest_state(GuestState::Connected);
                tracing::debug!("connected to host {host} as peer {index} of {count}");
                self.push_event(EndpointEvent::Connected { peer: PeerId(0) });
            }
            _ => self.drops.unexpected += 1,
        }
    }

    /// On a host, a connected packet from an address no guest has: a guest whose NAT gave it a new address (port)
    /// keeps its connection if the packet opens under its key and is newer than anything it sent before — then the
    /// connection moves to the new address, as QUIC moves a connection on its newest authenticated packet. Nobody
    /// without the guest's key can move it; an authentic packet replayed from elsewhere is not newer than what
    /// arrived, and the guest's next packet from its real address moves it back. Tried only within the address's
    /// handshake rate, so junk from strangers costs at most a few tag checks per allowed packet.
    fn rebound_slot(
        &mut self,
        now_s: f64,
        from: SocketAddr,
        sequence: u16,
        clear: &[u8],
        sealed: &[u8],
    ) -> Option<usize> {
        // A guest's host stays where its join code says; its direct links may move.
        let first = usize::from(!self.is_host());
        if self.slots[first..].iter().all(Option::is_none) || !self.limits[0].address.allow(from, now_s) {
            return None;
        }
        let plain_len = sealed.len() - TAG_BYTES;
        let tag: &[u8; TAG_BYTES] = sealed[plain_len..].try_into().ok()?;
        let slot = self.slots.iter().enumerate().position(|(i, c)| {
            let Some(conn) = c.as_ref().filter(|_| i >= first) else {
                return false;
            };
            let counter = restore_counter(conn.newest_received, sequence);
            let plain = &mut self.scratch[..plain_len];
            plain.copy_from_slice(&sealed[..plain_len]);
            conn.newest_received.is_none_or(|n| counter > n) && conn.keys.receive.open(counter, clear, plain, tag)
        })?;
        let conn = self.slots[slot].as_mut()?;
        tracing::info!("peer {slot} moved from {} to {from} (its NAT rebound)", conn.addr);
        conn.moved_to(from);
        Some(slot)
    }

    /// Opens a sealed packet from `from`; only what opens under that connection's key and is new changes anything.
    #[allow(clippy::too_many_arguments)]
    fn connected_receive(
        &mut self,
        now_s: f64,
        from: SocketAddr,
        version: u8,
        packet_type: PacketType,
        sequence: u16,
        clear: &[u8],
        sealed: &[u8],
    ) {
        if version != self.config.protocol_version {
            self.drops.wrong_version += 1;
            return;
        }
        let slot = match self.find_by_addr(from) {
            Some(slot) => slot,
            None => match self.rebound_slot(now_s, from, sequence, clear, sealed) {
                Some(slot) => slot,
                None => {
                    self.drops.unknown_sender += 1;
                    return;
                }
            },
        };
        let peer = PeerId(slot as u8);
        let Some(conn) = self.slots[slot].as_mut() else { return };
        let plain_len = sealed.len() - TAG_BYTES;
        let tag: &[u8; TAG_BYTES] = sealed[plain_len..].try_into().expect("read_packet checked the length");
        let plain = &mut self.scratch[..plain_len];
        plain.copy_from_slice(&sealed[..plain_len]);
        let counter = restore_counter(conn.newest_received, sequence);
        if !conn.keys.receive.open(counter, clear, plain, tag) {
            self.drops.forged += 1;
            return;
        }
        match conn.acks.on_receive(now_s, sequence) {
            Ok(()) => {}
            Err(crate::ack::ReceiveRefusal::Duplicate) => {
                self.drops.duplicate += 1;
                return;
            }
            Err(crate::ack::ReceiveRefusal::TooOld) => {
                self.drops.too_old += 1;
                return;
            }
        }
        conn.newest_received = Some(conn.newest_received.map_or(counter, |n| n.max(counter)));
        let mut header = ConnectedHeader {
            sequence,
            ..ConnectedHeader::default()
        };
        let mut r = ReadStream::new(&plain[..ACK_FIELDS_BYTES]);
        if header.serialize_ack_fields(&mut r).is_err() {
            // Cannot happen: the length was checked and every bit pattern is a valid header.
            self.drops.malformed += 1;
            return;
        }
        conn.on_received(now_s, CONNECTED_CLEAR_BYTES + sealed.len());
        let samples = conn.acks.on_acks(now_s, &header);
        conn.on_ack_samples(samples);
        match packet_type {
            PacketType::Payload => {
                let mut bytes = self.buffer();
                bytes.extend_from_slice(&self.scratch[ACK_FIELDS_BYTES..plain_len]);
                self.drain_ack_events(peer);
                // Queued with its event; should `push_event` drop the oldest `Received`, it drops the oldest payload.
                self.payloads.push_back(bytes);
                self.push_event(EndpointEvent::Received { peer, sequence });
            }
            PacketType::Disconnect => {
                conn.acks.on_accept(sequence);
                self.drain_ack_events(peer);
                let reason = DisconnectReason::from_code(self.scratch[ACK_FIELDS_BYTES]);
                tracing::debug!("peer {peer:?} closed the connection ({reason:?})");
                self.close(now_s, peer, DisconnectReason::Closed, false);
            }
            _ => {
                conn.acks.on_accept(sequence);
                self.drain_ack_events(peer);
            }
        }
    }
}
