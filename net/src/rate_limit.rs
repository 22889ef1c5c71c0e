//! Rate limits for the handshake, so that a flood of requests — from forged addresses as from real ones — neither
//! locks real players out nor turns the host into a reflector.
//!
//! - Each source address has a token bucket (in a fixed table indexed by a keyed hash of the address, so an
//!   attacker can't aim many addresses at one bucket). A flooding address exhausts only its own bucket, and bounds
//!   what the host sends towards a spoofed victim.
//! - Over all addresses, a bucket caps the challenges per second (the host's upload under a flood) and another the
//!   sealed responses it opens per second (each costs an X25519 operation). Only a requester that received its
//!   challenge at its address can send a response that gets that far, so forged addresses never spend the second.
//!
//! Nothing here allocates after construction.

use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;

/// Buckets in the per-address table: 1,000 flooding addresses share a real guest's bucket with odds of about 1 in 4,
/// and a shared bucket still lets the guest through at half its rate.
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

    /// Takes one token if there is one.
    pub fn take(&mut self, now_s: f64, rate_per_s: f64, burst: f64) -> bool {
        let elapsed = (now_s - self.time_s).max(0.0);
        self.time_s = self.time_s.max(now_s);
        self.tokens = (self.tokens + elapsed * rate_per_s).min(burst);
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
    /// SipHash with keys from the process's random state: which addresses share a bucket is unknowable outside.
    hasher: RandomState,
    rate_per_s: f64,
    burst: f64,
}

impl AddressLimiter {
    pub fn new(rate_per_s: f64, burst: f64, now_s: f64) -> Self {
        AddressLimiter {
            buckets: vec![TokenBucket::full(burst, now_s); ADDRESS_BUCKETS],
            hasher: RandomState::new(),
            rate_per_s,
            burst,
        }
    }

    /// Takes a token from `addr`'s bucket if it has one.
    pub fn allow(&mut self, addr: SocketAddr, now_s: f64) -> bool {
        let i = self.hasher.hash_one(addr) as usize % ADDRESS_BUCKETS;
        self.buckets[i].take(now_s, self.rate_per_s, self.burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flooding_address_is_held_to_its_rate_and_others_are_not_touched() {
        let mut limiter = AddressLimiter::new(10.0, 20.0, 0.0);
        let flooder: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let quiet: SocketAddr = "10.0.0.2:9".parse().unwrap();
        let mut allowed = 0;
        for k in 0..10_000 {
            allowed += usize::from(limiter.allow(flooder, k as f64 * 1e-4));
        }
        // One second of flood: the burst plus one second at the rate.
        assert!((29..=31).contains(&allowed), "{allowed}");
        assert!(
            limiter.allow(quiet, 1.0)
                || limiter.hasher.hash_one(quiet) % 4096 == limiter.hasher.hash_one(flooder) % 4096
        );
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
