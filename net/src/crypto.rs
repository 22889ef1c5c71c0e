//! The cryptography of a connection, on well-kept crates: X25519 for the key exchange, BLAKE2 for key derivation
//! and the handshake cookie, ChaCha20-Poly1305 for every connected packet. Nothing here is hand-made crypto; this
//! file only fixes which bytes go where.
//!
//! - Secrets (the host's key pair, the cookie key, a guest's key pair, the join secret) come from the operating
//!   system's random source and never from a seed.
//! - Keys: both ends compute the X25519 shared secret of the host's key and the guest's key, and hash it with the
//!   join secret and both public keys into one key per direction. A peer that does not know the join secret
//!   derives other keys, so its first sealed packet fails to open: the join secret is a pre-shared key, as in
//!   WireGuard or Noise's `psk` patterns, and an eavesdropper learns nothing from the handshake.
//! - Nonces: a connection's packets are numbered from 0 with a 64-bit counter per direction, of which the wire
//!   carries the low 16 bits (the sequence); the receiver restores the rest from the newest packet it accepted,
//!   as QUIC does. A counter is never used twice under one key, and a packet replayed from more than half the
//!   sequence space ago restores to another counter and fails to open.

use blake2::digest::{FixedOutput, Mac, Update};
use blake2::{Blake2b512, Blake2sMac};
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
/// The counter the handshake's sealed packets use; connected packets count up from 0 and never reach it.
pub const HANDSHAKE_COUNTER: u64 = u64::MAX;

/// The operating system's random source failed (it does not on any supported system; reported, never papered
/// over with a weaker generator).
#[derive(Debug, Clone, Error)]
#[error("the operating system's random source failed: {0}")]
pub struct RandomError(String);

/// `N` bytes from the operating system's random source.
pub fn os_random<const N: usize>() -> Result<[u8; N], RandomError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| RandomError(e.to_string()))?;
    Ok(bytes)
}

/// A 64-bit value from the operating system's random source.
pub fn os_random_u64() -> Result<u64, RandomError> {
    os_random::<8>().map(u64::from_le_bytes)
}

/// The secret a host gives its players (in the join code). All zeros is the open game: anyone who reaches the
/// port may join (still encrypted against eavesdroppers, but not authenticated against a man in the middle).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct JoinSecret(pub [u8; JOIN_SECRET_BYTES]);

impl JoinSecret {
    pub const OPEN: JoinSecret = JoinSecret([0; JOIN_SECRET_BYTES]);

    pub fn random() -> Result<Self, RandomError> {
        loop {
            let s = JoinSecret(os_random()?);
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

/// An X25519 key pair: the host keeps one for its whole life (so its handshake stays stateless), a guest makes
/// one per join.
#[derive(Clone)]
pub struct KeyPair {
    secret: StaticSecret,
    pub public: [u8; PUBLIC_KEY_BYTES],
}

impl KeyPair {
    pub fn random() -> Result<Self, RandomError> {
        let secret = StaticSecret::from(os_random::<32>()?);
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

/// Derives both directions' keys; `None` when the peer's public key is of low order. `host_side` picks which of
/// the two keys this end sends with.
pub fn session_keys(
    own: &KeyPair,
    their_public: &[u8; PUBLIC_KEY_BYTES],
    secret: &JoinSecret,
    host_public: &[u8; PUBLIC_KEY_BYTES],
    guest_public: &[u8; PUBLIC_KEY_BYTES],
    client_salt: u64,
    host_side: bool,
) -> Option<SessionKeys> {
    let shared = own.shared(their_public)?;
    let mut h = Blake2b512::default();
    Update::update(&mut h, b"tumble session keys v2");
    Update::update(&mut h, &shared);
    Update::update(&mut h, &secret.0);
    Update::update(&mut h, host_public);
    Update::update(&mut h, guest_public);
    Update::update(&mut h, &client_salt.to_le_bytes());
    let out = h.finalize_fixed();
    let (guest_to_host, host_to_guest) = (PacketKey::new(&out[..32]), PacketKey::new(&out[32..]));
    Some(if host_side {
        SessionKeys {
            send: host_to_guest,
            receive: guest_to_host,
        }
    } else {
        SessionKeys {
            send: guest_to_host,
            receive: host_to_guest,
        }
    })
}

/// The hash of a host's X25519 public key that its join code carries: a guest given the code takes a Challenge
/// only from the host with that key, so whoever else holds the code, or sits on the path, cannot be the host.
pub fn host_key_hash(public: &[u8; PUBLIC_KEY_BYTES]) -> [u8; HOST_KEY_HASH_BYTES] {
    let mut h = blake2::Blake2s256::default();
    Update::update(&mut h, b"tumble host key");
    Update::update(&mut h, public);
    let out = h.finalize_fixed();
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
    let mut key = blake2::Blake2s256::default();
    Update::update(&mut key, b"tumble refusal key");
    Update::update(&mut key, &shared);
    let key = key.finalize_fixed();
    let mut mac = <Blake2sMac<U16> as blake2::digest::KeyInit>::new_from_slice(&key).expect("32-byte key");
    Mac::update(&mut mac, host_public);
    Mac::update(&mut mac, guest_public);
    Mac::update(&mut mac, &client_salt.to_le_bytes());
    Mac::update(&mut mac, &reason);
    Some(mac.finalize().into_bytes().into())
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
        Ok(CookieKey(os_random()?))
    }

    /// A keyed BLAKE2s over the requester's address, its salt and public key, and the time bucket.
    pub fn cookie(
        &self,
        addr: std::net::SocketAddr,
        client_salt: u64,
        guest_public: &[u8; PUBLIC_KEY_BYTES],
        bucket: i64,
    ) -> [u8; COOKIE_BYTES] {
        let mut mac = <Blake2sMac<U16> as blake2::digest::KeyInit>::new_from_slice(&self.0).expect("32-byte key");
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

    #[test]
    fn both_ends_derive_matching_keys_only_with_the_same_secret() {
        let host = KeyPair::random().unwrap();
        let guest = KeyPair::random().unwrap();
        let secret = JoinSecret::random().unwrap();
        let keys = |secret: &JoinSecret, host_side: bool| {
            let (own, theirs) = if host_side {
                (&host, &guest.public)
            } else {
                (&guest, &host.public)
            };
            session_keys(own, theirs, secret, &host.public, &guest.public, 7, host_side).unwrap()
        };
        let (h, g) = (keys(&secret, true), keys(&secret, false));
        let mut buf = *b"hello host";
        let tag = g.send.seal(3, b"aad", &mut buf);
        assert_ne!(&buf, b"hello host");
        let mut copy = buf;
        assert!(h.receive.open(3, b"aad", &mut copy, &tag));
        assert_eq!(&copy, b"hello host");
        // Another counter, other aad, a flipped bit, the wrong direction or the wrong secret: refused.
        assert!(!h.receive.open(4, b"aad", &mut buf.clone(), &tag));
        assert!(!h.receive.open(3, b"aae", &mut buf.clone(), &tag));
        let mut flipped = buf;
        flipped[0] ^= 1;
        assert!(!h.receive.open(3, b"aad", &mut flipped, &tag));
        assert!(!h.send.open(3, b"aad", &mut buf.clone(), &tag));
        let other = keys(&JoinSecret::random().unwrap(), true);
        assert!(!other.receive.open(3, b"aad", &mut buf.clone(), &tag));
    }

    #[test]
    fn low_order_public_keys_are_refused() {
        let host = KeyPair::random().unwrap();
        let zero = [0u8; 32];
        assert!(session_keys(&host, &zero, &JoinSecret::OPEN, &host.public, &zero, 1, true).is_none());
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
