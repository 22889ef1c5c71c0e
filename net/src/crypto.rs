//! The cryptography of a connection, on well-kept crates: X25519 for the key exchange, BLAKE2 for key derivation
//! and the handshake cookie, ChaCha20-Poly1305 for every connected packet. Nothing here is hand-made crypto; this
//! file only fixes which bytes go where.
//!
//! - Secrets (the host's key pair, the cookie key, a guest's key pair, the join secret) come from the operating
//!   system's random source and never from a seed.
//! - Keys: a Noise NKpsk0 handshake ([`NOISE_PARAMS`], run by the `snow` crate) between the host's static key,
//!   which the guest's join code pins, and a fresh ephemeral key on each side, with the join secret as the
//!   pre-shared key. Every connection thus has keys of its own (a replayed handshake meets a new host ephemeral
//!   and gets other keys), a past connection's keys stay secret if the host's key leaks later, a peer without the
//!   join secret cannot finish, and an eavesdropper learns nothing. `snow` hands out the two transport keys
//!   (`risky-raw-split`) and our packets use them with ChaCha20-Poly1305 directly, because they bind their clear
//!   header (type and sequence) as associated data and restore their counter from it, which Noise's transport
//!   messages have no room for.
//! - Nonces: a connection's packets are numbered from 0 with a 64-bit counter per direction, of which the wire
//!   carries the low 16 bits (the sequence); the receiver restores the rest from the newest packet it accepted,
//!   as QUIC does. A counter is never used twice under one key, and a packet replayed from more than half the
//!   sequence space ago restores to another counter and fails to open.

use blake2::digest::{FixedOutput, Mac, Update};
use blake2::Blake2sMac;
use chacha20poly1305::aead::generic_array::typenum::U16;
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Nonce, Tag};
use thiserror::Error;
use x25519_dalek::{PublicKey, StaticSecret};

/// Bytes of a Poly1305 tag, on every sealed packet.
pub const TAG_BYTES: usize = 16;
/// Bytes of an X25519 public key.
pub const PUBLIC_KEY_BYTES: usize = 32;
/// Bytes of a handshake cookie (a truncated keyed BLAKE2s).
pub const COOKIE_BYTES: usize = 16;
/// Bytes of the join secret: 80 bits, out of reach of guessing online (rate-limited) and offline alike.
pub const JOIN_SECRET_BYTES: usize = 10;
/// Bytes of the host key hash a join code carries: 80 bits, so making another key with the same hash (a second
/// preimage) is out of reach.
pub const HOST_KEY_HASH_BYTES: usize = 10;

/// The operating system's random source failed (it does not on any supported system; reported, never papered
/// over with a weaker generator).
#[derive(Debug, Clone, Error)]
#[error("the operating system's random source failed: {0}")]
pub struct RandomError(String);

/// Where an endpoint's secrets come from: the operating system's random source — always, in the game — or, with
/// the `test-keys` feature only, a seed, so that a fuzzer's failure reproduces from its input and its seed.
#[derive(Debug, Clone)]
pub enum Randomness {
    Os,
    /// A BLAKE2b stream keyed by `seed`; `drawn` counts the 64-byte blocks taken.
    #[cfg(feature = "test-keys")]
    Seeded {
        seed: u64,
        drawn: u64,
    },
}

impl Randomness {
    /// Fills `out`.
    pub fn fill(&mut self, out: &mut [u8]) -> Result<(), RandomError> {
        match self {
            Randomness::Os => getrandom::fill(out).map_err(|e| RandomError(e.to_string())),
            #[cfg(feature = "test-keys")]
            Randomness::Seeded { seed, drawn } => {
                for chunk in out.chunks_mut(64) {
                    let mut h = blake2::Blake2b512::default();
                    Update::update(&mut h, b"tumble seeded randomness");
                    Update::update(&mut h, &seed.to_le_bytes());
                    Update::update(&mut h, &drawn.to_le_bytes());
                    chunk.copy_from_slice(&h.finalize_fixed()[..chunk.len()]);
                    *drawn += 1;
                }
                Ok(())
            }
        }
    }

    pub fn bytes<const N: usize>(&mut self) -> Result<[u8; N], RandomError> {
        let mut out = [0u8; N];
        self.fill(&mut out)?;
        Ok(out)
    }

    /// A `snow` handshake builder whose ephemeral keys come from this source.
    fn noise_builder<'a>(&mut self, params: snow::params::NoiseParams) -> Result<snow::Builder<'a>, HandshakeError> {
        match self {
            Randomness::Os => Ok(snow::Builder::new(params)),
            #[cfg(feature = "test-keys")]
            Randomness::Seeded { .. } => {
                let seed = self.bytes::<32>().map_err(|e| HandshakeError::Setup(e.to_string()))?;
                Ok(snow::Builder::with_resolver(params, Box::new(SeededResolver { seed })))
            }
        }
    }
}

/// `snow`'s default primitives with a seeded random source (the ephemeral keys), for the fuzzers.
#[cfg(feature = "test-keys")]
struct SeededResolver {
    seed: [u8; 32],
}

#[cfg(feature = "test-keys")]
impl snow::resolvers::CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn snow::types::Random>> {
        let seed = u64::from_le_bytes(self.seed[..8].try_into().expect("8 bytes"));
        Some(Box::new(SeededRandom(Randomness::Seeded { seed, drawn: 0 })))
    }
    fn resolve_dh(&self, choice: &snow::params::DHChoice) -> Option<Box<dyn snow::types::Dh>> {
        snow::resolvers::DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &snow::params::HashChoice) -> Option<Box<dyn snow::types::Hash>> {
        snow::resolvers::DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &snow::params::CipherChoice) -> Option<Box<dyn snow::types::Cipher>> {
        snow::resolvers::DefaultResolver.resolve_cipher(choice)
    }
}

#[cfg(feature = "test-keys")]
struct SeededRandom(Randomness);

#[cfg(feature = "test-keys")]
impl snow::types::Random for SeededRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill(dest).map_err(|_| snow::Error::Rng)
    }
}

/// The secret a host gives its players (in the join code). All zeros is the open game: anyone who reaches the
/// port may join (still encrypted against eavesdroppers, but not authenticated against a man in the middle).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct JoinSecret(pub [u8; JOIN_SECRET_BYTES]);

impl JoinSecret {
    pub const OPEN: JoinSecret = JoinSecret([0; JOIN_SECRET_BYTES]);

    pub fn random() -> Result<Self, RandomError> {
        Self::from_randomness(&mut Randomness::Os)
    }

    pub fn from_randomness(randomness: &mut Randomness) -> Result<Self, RandomError> {
        loop {
            let s = JoinSecret(randomness.bytes()?);
            if s != Self::OPEN {
                return Ok(s);
            }
        }
    }

    pub fn is_open(&self) -> bool {
        *self == Self::OPEN
    }
}

impl std::fmt::Debug for JoinSecret {
    /// Never printed: a secret in a log would let anyone reading it join.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_open() {
            "JoinSecret(open)"
        } else {
            "JoinSecret(..)"
        })
    }
}

/// An X25519 key pair: the host's static key for its whole life (pinned by its join code; the Noise handshake's
/// `s`), and the key a guest asks with, one per join (its refusals are tagged for it).
#[derive(Clone)]
pub struct KeyPair {
    secret: StaticSecret,
    pub public: [u8; PUBLIC_KEY_BYTES],
}

impl KeyPair {
    pub fn random() -> Result<Self, RandomError> {
        Self::from_randomness(&mut Randomness::Os)
    }

    pub fn from_randomness(randomness: &mut Randomness) -> Result<Self, RandomError> {
        let secret = StaticSecret::from(randomness.bytes::<32>()?);
        let public = PublicKey::from(&secret).to_bytes();
        Ok(KeyPair { secret, public })
    }

    /// The shared secret with `their_public`, or `None` for a public key of low order (the result would be the
    /// same for everyone, so a peer sending one is refused).
    fn shared(&self, their_public: &[u8; PUBLIC_KEY_BYTES]) -> Option<[u8; 32]> {
        let shared = self.secret.diffie_hellman(&PublicKey::from(*their_public));
        shared.was_contributory().then(|| shared.to_bytes())
    }
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair {{ public: {:02x?}.. }}", &self.public[..4])
    }
}

/// Bytes of one direction's key of a direct link between two guests.
pub const DIRECT_KEY_BYTES: usize = 32;

/// One direction's AEAD key.
#[derive(Clone)]
pub struct PacketKey(ChaCha20Poly1305);

impl std::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PacketKey(..)")
    }
}

fn nonce(counter: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&counter.to_le_bytes());
    Nonce::from(n)
}

impl PacketKey {
    fn new(bytes: &[u8]) -> Self {
        PacketKey(ChaCha20Poly1305::new_from_slice(bytes).expect("32-byte key"))
    }

    /// A key from its 32 bytes: a direct link's, which the host made and handed to both guests over their own
    /// sealed connections (`Endpoint::direct_link_keys`, `Endpoint::open_direct`).
    pub fn from_bytes(bytes: &[u8; DIRECT_KEY_BYTES]) -> Self {
        Self::new(bytes)
    }

    /// Encrypts `buf` in place, binding `aad` (sent in clear) to it; returns the tag to append.
    pub fn seal(&self, counter: u64, aad: &[u8], buf: &mut [u8]) -> [u8; TAG_BYTES] {
        // The detached form never allocates and cannot fail for packet-sized buffers.
        let tag = self
            .0
            .encrypt_in_place_detached(&nonce(counter), aad, buf)
            .expect("packets are far below ChaCha20's length limit");
        tag.into()
    }

    /// Decrypts `buf` in place if `tag` proves it was sealed under this key with this counter and `aad`;
    /// otherwise `buf` is unspecified and `false` comes back.
    pub fn open(&self, counter: u64, aad: &[u8], buf: &mut [u8], tag: &[u8; TAG_BYTES]) -> bool {
        self.0
            .decrypt_in_place_detached(&nonce(counter), aad, buf, Tag::from_slice(tag))
            .is_ok()
    }
}

/// The keys of one connection, as seen from one end.
#[derive(Debug, Clone)]
pub struct SessionKeys {
    pub send: PacketKey,
    pub receive: PacketKey,
}

/// The Noise protocol of the handshake (<https://noiseprotocol.org/noise.html>), run by the `snow` crate:
/// - **NK**: the guest knows the host's static key before it speaks (from the Challenge, checked against the hash
///   its join code pins), the host knows nothing of the guest's; each side brings a fresh ephemeral key, so every
///   connection gets keys no earlier one had (and that no recorded handshake can reproduce), and keys of a past
///   connection stay secret even if the host's static key leaks later (forward secrecy).
/// - **psk0**: the join secret, hashed to 32 bytes, mixed in before anything else: without it the guest's first
///   message does not open, and nothing about the secret can be learned from the handshake offline.
/// - X25519, ChaCha20-Poly1305, BLAKE2s: the primitives the rest of the transport uses.
pub const NOISE_PARAMS: &str = "Noise_NKpsk0_25519_ChaChaPoly_BLAKE2s";
/// The guest's Noise message (in its Response): its ephemeral key and the tag of an empty payload.
pub const HANDSHAKE_FIRST_BYTES: usize = PUBLIC_KEY_BYTES + TAG_BYTES;
/// What the host's Noise message carries: the guest's peer index and the peer count.
pub const ACCEPT_PAYLOAD_BYTES: usize = 2;
/// The host's Noise message (its Accepted): its ephemeral key, the payload sealed, the tag.
pub const HANDSHAKE_SECOND_BYTES: usize = PUBLIC_KEY_BYTES + ACCEPT_PAYLOAD_BYTES + TAG_BYTES;

/// Why a Noise handshake step failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HandshakeError {
    /// The peer's message did not open: it lacks the join secret, was sealed for another key, or was forged.
    #[error("the handshake message did not open")]
    DidNotOpen,
    /// `snow` refused to set up (it does not for the fixed parameters here; reported, never a panic).
    #[error("the handshake could not start: {0}")]
    Setup(String),
}

fn setup_error(e: snow::Error) -> HandshakeError {
    HandshakeError::Setup(e.to_string())
}

/// BLAKE2s of `bytes` after a label naming what the hash is for, so no two uses of one input give the same bytes.
fn labelled_hash(label: &[u8], bytes: &[u8]) -> [u8; 32] {
    let mut h = blake2::Blake2s256::default();
    Update::update(&mut h, label);
    Update::update(&mut h, bytes);
    h.finalize_fixed().into()
}

/// A 16-byte keyed BLAKE2s under `key` (the cookie, the join MAC, the refusal tag).
fn mac16(key: &[u8; 32]) -> Blake2sMac<U16> {
    <Blake2sMac<U16> as blake2::digest::KeyInit>::new_from_slice(key).expect("32 bytes is a valid BLAKE2s key")
}

/// The 32-byte pre-shared key of a join secret (the open game's is public: all zeros hashed).
fn noise_psk(secret: &JoinSecret) -> [u8; 32] {
    labelled_hash(b"tumble join secret psk", &secret.0)
}

/// Bytes of the prologue: a label, the version, the salt, the guest's key, the cookie.
const PROLOGUE_BYTES: usize = 6 + 1 + 8 + PUBLIC_KEY_BYTES + COOKIE_BYTES;

fn noise_builder<'a>(
    randomness: &mut Randomness,
    psk: &'a [u8; 32],
    prologue: &'a [u8],
) -> Result<snow::Builder<'a>, HandshakeError> {
    let params: snow::params::NoiseParams = NOISE_PARAMS.parse().map_err(setup_error)?;
    randomness
        .noise_builder(params)?
        .psk(0, psk)
        .and_then(|b| b.prologue(prologue))
        .map_err(setup_error)
}

/// The two transport keys of a finished handshake; `initiator` is the guest.
fn split_keys(state: &mut snow::HandshakeState, initiator: bool) -> SessionKeys {
    let (guest_to_host, host_to_guest) = state.dangerously_get_raw_split();
    let (guest_to_host, host_to_guest) = (PacketKey::new(&guest_to_host), PacketKey::new(&host_to_guest));
    if initiator {
        SessionKeys {
            send: guest_to_host,
            receive: host_to_guest,
        }
    } else {
        SessionKeys {
            send: host_to_guest,
            receive: guest_to_host,
        }
    }
}

/// What identifies one guest's handshake: the protocol version, its salt, the key it asked with (which its refusals
/// are tagged for) and the cookie it answers. Both ends hash it in first (Noise's prologue), so the Noise messages
/// belong to this exchange and no other.
#[derive(Debug, Clone, Copy)]
pub struct HandshakeContext<'a> {
    pub version: u8,
    pub client_salt: u64,
    pub guest_public: &'a [u8; PUBLIC_KEY_BYTES],
    pub cookie: &'a [u8; COOKIE_BYTES],
}

impl HandshakeContext<'_> {
    fn prologue(&self) -> [u8; PROLOGUE_BYTES] {
        let mut p = [0u8; PROLOGUE_BYTES];
        p[..6].copy_from_slice(b"tumble");
        p[6] = self.version;
        p[7..15].copy_from_slice(&self.client_salt.to_le_bytes());
        p[15..15 + PUBLIC_KEY_BYTES].copy_from_slice(self.guest_public);
        p[15 + PUBLIC_KEY_BYTES..].copy_from_slice(self.cookie);
        p
    }
}

/// A guest's half of the handshake, between its Response and the host's Accepted.
pub struct GuestHandshake {
    state: snow::HandshakeState,
}

impl std::fmt::Debug for GuestHandshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GuestHandshake(..)")
    }
}

impl GuestHandshake {
    /// Starts the handshake with the host whose static key is `host_public`; returns the message for the Response.
    pub fn start(
        randomness: &mut Randomness,
        host_public: &[u8; PUBLIC_KEY_BYTES],
        secret: &JoinSecret,
        context: HandshakeContext<'_>,
    ) -> Result<(GuestHandshake, [u8; HANDSHAKE_FIRST_BYTES]), HandshakeError> {
        let psk = noise_psk(secret);
        let prologue = context.prologue();
        let mut state = noise_builder(randomness, &psk, &prologue)?
            .remote_public_key(host_public)
            .and_then(|b| b.build_initiator())
            .map_err(setup_error)?;
        let mut first = [0u8; HANDSHAKE_FIRST_BYTES];
        let n = state.write_message(&[], &mut first).map_err(setup_error)?;
        if n != HANDSHAKE_FIRST_BYTES {
            return Err(HandshakeError::Setup(format!("first message of {n} bytes")));
        }
        Ok((GuestHandshake { state }, first))
    }

    /// Reads the host's message: the payload and the connection's keys, or `DidNotOpen` (then nothing changed, and
    /// the real host's message can still come).
    pub fn finish(
        &mut self,
        second: &[u8; HANDSHAKE_SECOND_BYTES],
    ) -> Result<([u8; ACCEPT_PAYLOAD_BYTES], SessionKeys), HandshakeError> {
        let mut payload = [0u8; HANDSHAKE_SECOND_BYTES];
        let n = self
            .state
            .read_message(second, &mut payload)
            .map_err(|_| HandshakeError::DidNotOpen)?;
        if n != ACCEPT_PAYLOAD_BYTES || !self.state.is_handshake_finished() {
            return Err(HandshakeError::DidNotOpen);
        }
        let keys = split_keys(&mut self.state, true);
        Ok(([payload[0], payload[1]], keys))
    }
}

/// The host's half, in one step (the host keeps nothing between a guest's messages): reads the guest's message and
/// answers with `payload`. `DidNotOpen` means the guest lacks the join secret (or the message was forged).
pub fn host_handshake(
    randomness: &mut Randomness,
    host: &KeyPair,
    secret: &JoinSecret,
    context: HandshakeContext<'_>,
    first: &[u8; HANDSHAKE_FIRST_BYTES],
    payload: [u8; ACCEPT_PAYLOAD_BYTES],
) -> Result<([u8; HANDSHAKE_SECOND_BYTES], SessionKeys), HandshakeError> {
    let psk = noise_psk(secret);
    let prologue = context.prologue();
    let private = host.secret.to_bytes();
    let mut state = noise_builder(randomness, &psk, &prologue)?
        .local_private_key(&private)
        .and_then(|b| b.build_responder())
        .map_err(setup_error)?;
    let mut empty = [0u8; HANDSHAKE_FIRST_BYTES];
    match state.read_message(first, &mut empty) {
        Ok(0) => {}
        _ => return Err(HandshakeError::DidNotOpen),
    }
    let mut second = [0u8; HANDSHAKE_SECOND_BYTES];
    let n = state.write_message(&payload, &mut second).map_err(setup_error)?;
    if n != HANDSHAKE_SECOND_BYTES || !state.is_handshake_finished() {
        return Err(HandshakeError::Setup(format!("second message of {n} bytes")));
    }
    Ok((second, split_keys(&mut state, false)))
}

/// Both halves of a handshake in memory, for benches and tests that need a connection's keys: (host's, guest's).
pub fn handshake_in_memory(secret: &JoinSecret) -> Result<(SessionKeys, SessionKeys), HandshakeError> {
    let host = KeyPair::random().map_err(|e| HandshakeError::Setup(e.to_string()))?;
    let guest = KeyPair::random().map_err(|e| HandshakeError::Setup(e.to_string()))?;
    let context = HandshakeContext {
        version: 0,
        client_salt: 1,
        guest_public: &guest.public,
        cookie: &[0; COOKIE_BYTES],
    };
    let os = &mut Randomness::Os;
    let (mut guest_half, first) = GuestHandshake::start(os, &host.public, secret, context)?;
    let (second, host_keys) = host_handshake(os, &host, secret, context, &first, [1, 2])?;
    let (_, guest_keys) = guest_half.finish(&second)?;
    Ok((host_keys, guest_keys))
}

/// The hash of a host's X25519 public key that its join code carries: a guest given the code takes a Challenge
/// only from the host with that key, so whoever else holds the code, or sits on the path, cannot be the host.
pub fn host_key_hash(public: &[u8; PUBLIC_KEY_BYTES]) -> [u8; HOST_KEY_HASH_BYTES] {
    let out = labelled_hash(b"tumble host key", public);
    out[..HOST_KEY_HASH_BYTES].try_into().expect("32 bytes")
}

/// The tag on a host's refusal of a guest that sent its Response (the host is full, or the guest's secret is
/// wrong): a keyed BLAKE2s under a key hashed from the X25519 secret of the host's key and the guest's — which
/// takes no join secret, so a guest with a wrong one can check it too — over both keys, the salt and the reason.
/// A guest believes a refusal only with this tag from the host it is joining (the one its code pins), so nobody
/// else who saw its Request can end its join. `None` for a low-order key.
pub fn refusal_tag(
    own: &KeyPair,
    their_public: &[u8; PUBLIC_KEY_BYTES],
    host_public: &[u8; PUBLIC_KEY_BYTES],
    guest_public: &[u8; PUBLIC_KEY_BYTES],
    client_salt: u64,
    reason: [u8; 2],
) -> Option<[u8; TAG_BYTES]> {
    let shared = own.shared(their_public)?;
    let mut mac = mac16(&labelled_hash(b"tumble refusal key", &shared));
    Mac::update(&mut mac, host_public);
    Mac::update(&mut mac, guest_public);
    Mac::update(&mut mac, &client_salt.to_le_bytes());
    Mac::update(&mut mac, &reason);
    Some(mac.finalize().into_bytes().into())
}

/// Bytes of the join MAC on a guest's Request and Response.
pub const JOIN_MAC_BYTES: usize = 16;

/// The key of the join MAC: a keyed BLAKE2s any holder of the join secret can make and the host checks for the cost
/// of one hash, before it spends a shared token or an X25519 operation (as WireGuard's `mac1` does with the
/// responder's key). Handshakes with a valid MAC draw on limits of their own, so a flood from machines without the
/// code — however many, with valid cookies or not — cannot use up what the players with the code need. (In an open
/// game the secret is public and the MAC proves nothing.)
#[derive(Clone)]
pub struct JoinMacKey([u8; 32]);

impl std::fmt::Debug for JoinMacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JoinMacKey(..)")
    }
}

impl JoinMacKey {
    pub fn new(secret: &JoinSecret) -> Self {
        JoinMacKey(labelled_hash(b"tumble join mac", &secret.0))
    }

    /// The MAC over a handshake packet's fields: its version and type, the salt, the guest's key, and for a Response
    /// the cookie and the Noise message.
    pub fn mac(
        &self,
        version: u8,
        packet_type: u8,
        client_salt: u64,
        guest_public: &[u8; PUBLIC_KEY_BYTES],
        response: Option<(&[u8; COOKIE_BYTES], &[u8; HANDSHAKE_FIRST_BYTES])>,
    ) -> [u8; JOIN_MAC_BYTES] {
        let mut mac = mac16(&self.0);
        Mac::update(&mut mac, &[version, packet_type]);
        Mac::update(&mut mac, &client_salt.to_le_bytes());
        Mac::update(&mut mac, guest_public);
        if let Some((cookie, proof)) = response {
            Mac::update(&mut mac, cookie);
            Mac::update(&mut mac, proof);
        }
        mac.finalize().into_bytes().into()
    }
}

/// The host's cookie key: a challenge proves that the requester receives at its address, and costs the host one
/// keyed hash and no state.
#[derive(Clone)]
pub struct CookieKey([u8; 32]);

impl std::fmt::Debug for CookieKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieKey(..)")
    }
}

impl CookieKey {
    pub fn random() -> Result<Self, RandomError> {
        Self::from_randomness(&mut Randomness::Os)
    }

    pub fn from_randomness(randomness: &mut Randomness) -> Result<Self, RandomError> {
        Ok(CookieKey(randomness.bytes()?))
    }

    /// A keyed BLAKE2s over the requester's address, its salt and public key, and the time bucket.
    pub fn cookie(
        &self,
        addr: std::net::SocketAddr,
        client_salt: u64,
        guest_public: &[u8; PUBLIC_KEY_BYTES],
        bucket: i64,
    ) -> [u8; COOKIE_BYTES] {
        let mut mac = mac16(&self.0);
        let ip = match addr.ip() {
            std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            std::net::IpAddr::V6(v6) => v6.octets(),
        };
        Mac::update(&mut mac, &ip);
        Mac::update(&mut mac, &addr.port().to_le_bytes());
        Mac::update(&mut mac, &client_salt.to_le_bytes());
        Mac::update(&mut mac, guest_public);
        Mac::update(&mut mac, &bucket.to_le_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The full counter of a received sequence: the one nearest above the newest counter accepted so far (QUIC's
/// packet number recovery). `newest` is `None` before anything was accepted; counters start at 0.
pub fn restore_counter(newest: Option<u64>, sequence: u16) -> u64 {
    const SPACE: i128 = 1 << 16;
    let expected = newest.map_or(0, |n| i128::from(n) + 1);
    let candidate = (expected & !(SPACE - 1)) | i128::from(sequence);
    let restored = if candidate <= expected - SPACE / 2 {
        candidate + SPACE
    } else if candidate > expected + SPACE / 2 && candidate >= SPACE {
        candidate - SPACE
    } else {
        candidate
    };
    restored.clamp(0, i128::from(u64::MAX - 1)) as u64
}

/// Compares two byte strings in time independent of where they differ (a cookie check must not leak a prefix).
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_restore_across_wraps_and_reordering() {
        assert_eq!(restore_counter(None, 0), 0);
        assert_eq!(restore_counter(None, 5), 5);
        assert_eq!(restore_counter(Some(65_535), 0), 65_536);
        assert_eq!(restore_counter(Some(65_536), 65_535), 65_535);
        assert_eq!(restore_counter(Some(70_000), 70_100u32 as u16), 70_100);
        assert_eq!(restore_counter(Some(70_000), 69_000u32 as u16), 69_000);
        // More than half the space back is read as ahead: a replay that old restores to another counter.
        assert_eq!(restore_counter(Some(100_000), (100_000u32 - 40_000) as u16), 125_536);
    }

    fn context<'a>(guest: &'a KeyPair, cookie: &'a [u8; COOKIE_BYTES]) -> HandshakeContext<'a> {
        HandshakeContext {
            version: 4,
            client_salt: 7,
            guest_public: &guest.public,
            cookie,
        }
    }

    #[test]
    fn both_ends_derive_matching_keys_only_with_the_same_secret() {
        let host = KeyPair::random().unwrap();
        let guest = KeyPair::random().unwrap();
        let secret = JoinSecret::random().unwrap();
        let cookie = [3u8; COOKIE_BYTES];
        let (mut half, first) =
            GuestHandshake::start(&mut Randomness::Os, &host.public, &secret, context(&guest, &cookie)).unwrap();
        let (second, h) = host_handshake(
            &mut Randomness::Os,
            &host,
            &secret,
            context(&guest, &cookie),
            &first,
            [1, 4],
        )
        .unwrap();
        let (payload, g) = half.finish(&second).unwrap();
        assert_eq!(payload, [1, 4]);
        let mut buf = *b"hello host";
        let tag = g.send.seal(3, b"aad", &mut buf);
        assert_ne!(&buf, b"hello host");
        let mut copy = buf;
        assert!(h.receive.open(3, b"aad", &mut copy, &tag));
        assert_eq!(&copy, b"hello host");
        // Another counter, other aad, a flipped bit or the wrong direction: refused.
        assert!(!h.receive.open(4, b"aad", &mut buf.clone(), &tag));
        assert!(!h.receive.open(3, b"aae", &mut buf.clone(), &tag));
        let mut flipped = buf;
        flipped[0] ^= 1;
        assert!(!h.receive.open(3, b"aad", &mut flipped, &tag));
        assert!(!h.send.open(3, b"aad", &mut buf.clone(), &tag));
        // The wrong secret, another cookie or another salt: the guest's message does not open at the host.
        let other = JoinSecret::random().unwrap();
        assert_eq!(
            host_handshake(
                &mut Randomness::Os,
                &host,
                &other,
                context(&guest, &cookie),
                &first,
                [1, 4]
            )
            .unwrap_err(),
            HandshakeError::DidNotOpen
        );
        let other_cookie = [4u8; COOKIE_BYTES];
        assert!(host_handshake(
            &mut Randomness::Os,
            &host,
            &secret,
            context(&guest, &other_cookie),
            &first,
            [1, 4]
        )
        .is_err());
        let mut salted = context(&guest, &cookie);
        salted.client_salt = 8;
        assert!(host_handshake(&mut Randomness::Os, &host, &secret, salted, &first, [1, 4]).is_err());
        // A host with another static key cannot read it either: only the pinned host can accept.
        let impostor = KeyPair::random().unwrap();
        assert!(host_handshake(
            &mut Randomness::Os,
            &impostor,
            &secret,
            context(&guest, &cookie),
            &first,
            [1, 4]
        )
        .is_err());
    }

    #[test]
    fn the_same_guest_message_twice_gives_fresh_keys_and_a_forged_answer_changes_nothing() {
        // A recorded Response replayed: the host answers with a fresh ephemeral key, so the connection's keys differ
        // and nothing sealed under the first opens under the second.
        let host = KeyPair::random().unwrap();
        let guest = KeyPair::random().unwrap();
        let secret = JoinSecret::random().unwrap();
        let cookie = [9u8; COOKIE_BYTES];
        let (mut half, first) =
            GuestHandshake::start(&mut Randomness::Os, &host.public, &secret, context(&guest, &cookie)).unwrap();
        let (second_a, keys_a) = host_handshake(
            &mut Randomness::Os,
            &host,
            &secret,
            context(&guest, &cookie),
            &first,
            [1, 2],
        )
        .unwrap();
        let (second_b, keys_b) = host_handshake(
            &mut Randomness::Os,
            &host,
            &secret,
            context(&guest, &cookie),
            &first,
            [1, 2],
        )
        .unwrap();
        assert_ne!(second_a, second_b);
        let mut buf = *b"same plaintext";
        let tag = keys_a.send.seal(0, b"", &mut buf);
        assert!(!keys_b.send.open(0, b"", &mut buf.clone(), &tag));
        assert!(!keys_b.receive.open(0, b"", &mut buf.clone(), &tag));
        // A forged second message is refused and leaves the guest able to read the real one.
        let mut forged = second_a;
        forged[PUBLIC_KEY_BYTES] ^= 1;
        assert_eq!(half.finish(&forged).unwrap_err(), HandshakeError::DidNotOpen);
        let (payload, guest_keys) = half.finish(&second_a).unwrap();
        assert_eq!(payload, [1, 2]);
        assert!(guest_keys.receive.open(0, b"", &mut buf, &tag));
    }

    #[test]
    fn in_memory_handshakes_give_working_keys() {
        let (h, g) = handshake_in_memory(&JoinSecret::OPEN).unwrap();
        let mut buf = *b"x";
        let tag = h.send.seal(1, b"", &mut buf);
        assert!(g.receive.open(1, b"", &mut buf, &tag));
    }

    #[test]
    fn cookies_bind_address_salt_key_and_time() {
        let key = CookieKey::random().unwrap();
        let a: std::net::SocketAddr = "10.0.0.1:5".parse().unwrap();
        let b: std::net::SocketAddr = "10.0.0.1:6".parse().unwrap();
        let p = [1u8; 32];
        let c = key.cookie(a, 1, &p, 9);
        assert_eq!(c, key.cookie(a, 1, &p, 9));
        assert_ne!(c, key.cookie(b, 1, &p, 9));
        assert_ne!(c, key.cookie(a, 2, &p, 9));
        assert_ne!(c, key.cookie(a, 1, &[2u8; 32], 9));
        assert_ne!(c, key.cookie(a, 1, &p, 10));
        assert_ne!(c, CookieKey::random().unwrap().cookie(a, 1, &p, 9));
    }
}
