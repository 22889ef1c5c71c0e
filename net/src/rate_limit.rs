//! Rate limits for the handshake, so that a flood of requests — from forged addresses as from real ones — neither
//! locks real players out nor turns the host into a reflector.
//!
//! - Each source address has its tokens — an IP address, whatever the port (an IPv6 address's /64, the block one
//!   machine is given), so one machine flooding from thousands of ports is held to one address's rate. They are
//!   kept in a fixed table indexed by a keyed hash of the address, so an attacker can't aim many addresses at one
//!   entry, and each address has two entries (two hashes) and takes from the fuller: a flooding address empties
//!   its own two, and an address sharing one of them with it still has its other. A flooding address bounds what
//!   the host sends towards a spoofed victim.
//! - Over all addresses, a bucket caps the challenges per second (the host's upload under a flood) and another the
//!   sealed responses it opens per second (each costs an X25519 operation). Only a requester that received its
//!   challenge at its address can send a response that gets that far, so forged addresses never spend the second.
//!
//! Nothing here allocates after construction.

use std::hash::{DefaultHasher, Hasher};
use std::net::{IpAddr, SocketAddr};

/// Buckets in the per-address table. An address uses two, so 1,000 flooding addresses (2,000 buckets emptied) leave
/// a real guest one of its two with odds of about 3 in 4, both with about 1 in 4 — at half its rate, as a lone
/// bucket refills at half the address's rate — and one flooding machine shares both of a guest's with odds of
/// 1 in 16 million.
pub const ADDRESS_BUCKETS: usize = 4096;

/// A token bucket: `rate_per_s` tokens a second, at most `burst` saved.
#[derive(Debug, Clone, Copy)]
pub struct TokenBucket {
    tokens: f64,
    time_s: f64,
}

impl TokenBucket {
    pub fn full(burst: f64, now_s: f64) -> Self {
        TokenBucket {
            tokens: burst,
            time_s: now_s,
        }
    }

    /// Adds the tokens earned since the last call, up to `burst`.
    fn refill(&mut self, now_s: f64, rate_per_s: f64, burst: f64) {
        let elapsed = (now_s - self.time_s).max(0.0);
        self.time_s = self.time_s.max(now_s);
        self.tokens = (self.tokens + elapsed * rate_per_s).min(burst);
    }

    /// Takes one token if there is one.
    pub fn take(&mut self, now_s: f64, rate_per_s: f64, burst: f64) -> bool {
        self.refill(now_s, rate_per_s, burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Token buckets per source address.
#[derive(Debug)]
pub struct AddressLimiter {
    buckets: Vec<TokenBucket>,
    /// SipHash over a secret from the endpoint's random source and the address: which addresses share a bucket is
    /// unknowable outside, so nobody can aim a flood at another's bucket.
    hash_key: [u8; 16],
    /// Each bucket's: half an address's, as an address has two.
    rate_per_s: f64,
    burst: f64,
}

/// What a limit is keyed on: the IP address (its port left out), an IPv6 address's /64.
pub fn address_key(addr: SocketAddr) -> [u8; 8] {
    match addr.ip() {
        IpAddr::V4(v4) => u64::from(u32::from(v4)).to_le_bytes(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u64::from(u32::from(v4)).to_le_bytes(),
            // The /64 with its top bit set, so it never equals an IPv4 key.
            None => (u64::from_be_bytes(v6.octets()[..8].try_into().expect("8 bytes")) | 1 << 63).to_le_bytes(),
        },
    }
}

impl AddressLimiter {
    /// An address may send `rate_per_s` a second and save up `burst`; `hash_key` is secret (random).
    pub fn new(rate_per_s: f64, burst: f64, now_s: f64, hash_key: [u8; 16]) -> Self {
        AddressLimiter {
            buckets: vec![TokenBucket::full(burst / 2.0, now_s); ADDRESS_BUCKETS],
            hash_key,
            rate_per_s: rate_per_s / 2.0,
            burst: burst / 2.0,
        }
    }

    /// `addr`'s two buckets.
    fn buckets_of(&self, addr: SocketAddr) -> (usize, usize) {
        let mut hasher = DefaultHasher::new();
        hasher.write(&self.hash_key);
        hasher.write(&address_key(addr));
        let h = hasher.finish();
        ((h as usize) % ADDRESS_BUCKETS, ((h >> 32) as usize) % ADDRESS_BUCKETS)
    }

    /// Takes a token from the fuller of `addr`'s buckets if it has one.
    pub fn allow(&mut self, addr: SocketAddr, now_s: f64) -> bool {
        let (i, j) = self.buckets_of(addr);
        for k in [i, j] {
            self.buckets[k].refill(now_s, self.rate_per_s, self.burst);
        }
        let fuller = if self.buckets[j].tokens > self.buckets[i].tokens {
            j
        } else {
            i
        };
        self.buckets[fuller].take(now_s, self.rate_per_s, self.burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flooding_address_is_held_to_its_rate_and_others_are_not_touched() {
        let mut limiter = AddressLimiter::new(10.0, 20.0, 0.0, [5; 16]);
        let flooder: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let quiet: SocketAddr = "10.0.0.2:9".parse().unwrap();
        let mut allowed = 0;
        for k in 0..10_000 {
            // Every packet from another port of the same machine.
            let from = SocketAddr::new(flooder.ip(), 1024 + (k % 5000) as u16);
            allowed += usize::from(limiter.allow(from, k as f64 * 1e-4));
        }
        // One second of flood: the burst plus one second at the rate, whatever the ports (less up to a token left
        // in each of its two buckets).
        assert!((28..=31).contains(&allowed), "{allowed}");
        let (f, q) = (limiter.buckets_of(flooder), limiter.buckets_of(quiet));
        let shares_both = [q.0, q.1].iter().all(|b| [f.0, f.1].contains(b));
        assert!(limiter.allow(quiet, 1.0) || shares_both);
    }

    /// An address sharing one of its buckets with a flooding one still gets in through its other.
    #[test]
    fn an_address_sharing_a_bucket_with_a_flooder_has_its_other() {
        let mut limiter = AddressLimiter::new(10.0, 20.0, 0.0, [5; 16]);
        let flooder: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let (f0, f1) = limiter.buckets_of(flooder);
        let neighbour = (0..1_000_000u32)
            .map(|k| SocketAddr::from((std::net::Ipv4Addr::from(0x0b00_0000 + k), 9)))
            .find(|&a| {
                let (a0, a1) = limiter.buckets_of(a);
                (a0 == f0 || a0 == f1 || a1 == f0 || a1 == f1) && !(a0 == f0 && a1 == f1) && !(a0 == f1 && a1 == f0)
            })
            .expect("an address sharing one bucket");
        for k in 0..10_000 {
            limiter.allow(flooder, k as f64 * 1e-4);
        }
        assert!(!limiter.allow(flooder, 1.0), "the flooder is held");
        assert!(limiter.allow(neighbour, 1.0), "its neighbour is not");
    }

    #[test]
    fn limits_are_keyed_on_the_ip_address_and_an_ipv6_addresses_64() {
        let key = |s: &str| address_key(s.parse().unwrap());
        assert_eq!(key("10.0.0.1:1"), key("10.0.0.1:2"));
        assert_ne!(key("10.0.0.1:1"), key("10.0.0.2:1"));
        assert_eq!(key("10.0.0.1:1"), key("[::ffff:10.0.0.1]:1"));
        assert_eq!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:2:ffff::9]:7"));
        assert_ne!(key("[2001:db8:1:2::1]:1"), key("[2001:db8:1:3::1]:1"));
    }

    #[test]
    fn a_bucket_refills_at_its_rate_up_to_its_burst() {
        let mut b = TokenBucket::full(2.0, 0.0);
        assert!(b.take(0.0, 1.0, 2.0) && b.take(0.0, 1.0, 2.0) && !b.take(0.0, 1.0, 2.0));
        assert!(b.take(1.0, 1.0, 2.0) && !b.take(1.0, 1.0, 2.0));
        // A clock that steps back gives nothing.
        assert!(!b.take(0.5, 1.0, 2.0));
        assert!(b.take(100.0, 1.0, 2.0) && b.take(100.0, 1.0, 2.0) && !b.take(100.0, 1.0, 2.0));
    }
}
