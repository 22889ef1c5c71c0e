//! Join codes: what a host gives its players so that they, and only they, can join — and join that host and no
//! other. A code carries the host's address, the game's join secret and a hash of the host's public key (see
//! `crypto`), in base32 grouped by four, e.g. `C4AQ-ABPA-4RFB-...`: 44 characters for an IPv4 host, 63 for IPv6.
//! A guest takes a Challenge only from the key the code names, so neither another holder of the code nor someone
//! on the path can play the host.
//!
//! Layout before encoding: address (4 or 16 bytes), port (2), secret (10), host key hash (10), check (1). The check
//! byte is the first byte of a BLAKE2s hash of the rest, so a mistyped code is refused as mistyped rather than
//! sent to a wrong address. Reading forgives case, dashes and spaces, and the digits people type for look-alike letters (0 for O,
//! 1 for I, 8 for B).
//!
//! A LAN game may be open (no secret): then `tumble join ADDR:PORT` works and anyone who reaches the port can join;
//! the traffic is still encrypted, but joining by address authenticates nobody: whoever answers at the address is
//! taken as the host. A host is open only when asked (`tumble host --open`); its code still names its key.

use crate::crypto::{JoinSecret, HOST_KEY_HASH_BYTES, JOIN_SECRET_BYTES};
use blake2::{Blake2s256, Digest};
use data_encoding::BASE32_NOPAD;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use thiserror::Error;

const V4_BYTES: usize = 4 + 2 + JOIN_SECRET_BYTES + HOST_KEY_HASH_BYTES + 1;
const V6_BYTES: usize = 16 + 2 + JOIN_SECRET_BYTES + HOST_KEY_HASH_BYTES + 1;
/// Characters between dashes in a written code.
const GROUP_CHARS: usize = 4;

/// Why a join code was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JoinCodeError {
    #[error("'{0}' is neither a join code nor ADDR:PORT (a code looks like C4AQ-ABPA-4RFB-...)")]
    NotACode(String),
    #[error(
        "the join code has {0} characters; a code has 44 (IPv4 host) or 63 (IPv6 host): part of it is missing, or it \
         is from an older version of Tumble"
    )]
    WrongLength(usize),
    #[error(
        "the join code is mistyped (its check does not match): compare it with the host's, character by character"
    )]
    BadCheck,
    #[error("the join code names an unusable address ({0})")]
    BadAddress(SocketAddr),
}

/// Where to join, with what secret (`JoinSecret::OPEN` when joining an open game by address) and which host key
/// to accept (`None` when joining by address: any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinTarget {
    pub addr: SocketAddr,
    pub secret: JoinSecret,
    pub host_key: Option<[u8; HOST_KEY_HASH_BYTES]>,
}

fn check_byte(bytes: &[u8]) -> u8 {
    Blake2s256::digest(bytes)[0]
}

/// The code for a host at `addr` with `secret` and the key whose hash is `host_key` (`Endpoint::key_hash`).
pub fn encode(addr: SocketAddr, secret: &JoinSecret, host_key: &[u8; HOST_KEY_HASH_BYTES]) -> String {
    let mut bytes = Vec::with_capacity(V6_BYTES);
    match addr.ip() {
        IpAddr::V4(v4) => bytes.extend_from_slice(&v4.octets()),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => bytes.extend_from_slice(&v4.octets()),
            None => bytes.extend_from_slice(&v6.octets()),
        },
    }
    bytes.extend_from_slice(&addr.port().to_be_bytes());
    bytes.extend_from_slice(&secret.0);
    bytes.extend_from_slice(host_key);
    bytes.push(check_byte(&bytes));
    let text = BASE32_NOPAD.encode(&bytes);
    let groups: Vec<&str> = text
        .as_bytes()
        .chunks(GROUP_CHARS)
        .map(|c| std::str::from_utf8(c).expect("base32 is ASCII"))
        .collect();
    groups.join("-")
}

/// Reads a join code.
pub fn decode(code: &str) -> Result<JoinTarget, JoinCodeError> {
    let cleaned: String = code
        .chars()
        .filter(|c| !matches!(c, '-' | ' ' | '\t'))
        .map(|c| match c.to_ascii_uppercase() {
            '0' => 'O',
            '1' => 'I',
            '8' => 'B',
            other => other,
        })
        .collect();
    if cleaned.is_empty()
        || !cleaned
            .chars()
            .all(|c| c.is_ascii_uppercase() || ('2'..='7').contains(&c))
    {
        return Err(JoinCodeError::NotACode(code.to_string()));
    }
    let bytes = BASE32_NOPAD
        .decode(cleaned.as_bytes())
        .map_err(|_| JoinCodeError::WrongLength(cleaned.len()))?;
    let ip_bytes = match bytes.len() {
        V4_BYTES => 4,
        V6_BYTES => 16,
        _ => return Err(JoinCodeError::WrongLength(cleaned.len())),
    };
    let (body, check) = bytes.split_at(bytes.len() - 1);
    if check_byte(body) != check[0] {
        return Err(JoinCodeError::BadCheck);
    }
    let ip = if ip_bytes == 4 {
        IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&body[..4]).expect("4 bytes")))
    } else {
        IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&body[..16]).expect("16 bytes")))
    };
    let port = u16::from_be_bytes([body[ip_bytes], body[ip_bytes + 1]]);
    let addr = SocketAddr::new(ip, port);
    if port == 0 || ip.is_unspecified() {
        return Err(JoinCodeError::BadAddress(addr));
    }
    let secret_at = ip_bytes + 2;
    let key_at = secret_at + JOIN_SECRET_BYTES;
    let secret = JoinSecret(body[secret_at..key_at].try_into().expect("secret bytes"));
    let host_key = body[key_at..].try_into().expect("host key hash bytes");
    Ok(JoinTarget {
        addr,
        secret,
        host_key: Some(host_key),
    })
}

/// A join code, or `ADDR:PORT` (a literal address) for an open game.
pub fn parse_target(text: &str) -> Result<JoinTarget, JoinCodeError> {
    if let Ok(addr) = text.trim().parse::<SocketAddr>() {
        return Ok(JoinTarget {
            addr,
            secret: JoinSecret::OPEN,
            host_key: None,
        });
    }
    decode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; HOST_KEY_HASH_BYTES] = [0x3c, 1, 2, 3, 4, 5, 6, 7, 8, 0xf0];

    #[test]
    fn codes_round_trip_for_both_families() {
        let secret = JoinSecret([0xa5, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        for addr in ["192.168.1.20:40000", "[2001:db8::7]:40000", "[::ffff:10.0.0.2]:5"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let code = encode(addr, &secret, &KEY);
            let back = decode(&code).unwrap();
            assert_eq!(back.secret, secret);
            assert_eq!(back.host_key, Some(KEY));
            assert_eq!(back.addr.port(), addr.port());
            let chars = code.replace('-', "").len();
            assert!(chars == 44 || chars == 63, "{code}");
            // Case, spacing and dashes do not matter.
            assert_eq!(decode(&code.to_lowercase().replace('-', " ")).unwrap(), back);
        }
        let v4: SocketAddr = "[::ffff:10.0.0.2]:5".parse().unwrap();
        assert_eq!(
            decode(&encode(v4, &secret, &KEY)).unwrap().addr,
            "10.0.0.2:5".parse().unwrap()
        );
    }

    #[test]
    fn mistyped_and_partial_codes_are_clear_errors() {
        let code = encode("10.0.0.1:40000".parse().unwrap(), &JoinSecret([9; 10]), &KEY);
        // Each single-character change of this code is caught, by the check or by the length (base32's last
        // character carries unused bits). In general the check misses one change in 256.
        let chars: Vec<char> = code.chars().collect();
        for i in (0..chars.len()).filter(|&i| chars[i] != '-') {
            let mut typo = chars.clone();
            typo[i] = if typo[i] == 'A' { 'C' } else { 'A' };
            let typo: String = typo.into_iter().collect();
            assert!(decode(&typo).is_err(), "{typo} accepted");
        }
        assert!(matches!(decode(&code[..20]), Err(JoinCodeError::WrongLength(_))));
        assert!(matches!(decode("not a code!"), Err(JoinCodeError::NotACode(_))));
        assert!(matches!(
            parse_target("10.0.0.1:40000"),
            Ok(JoinTarget {
                secret: JoinSecret::OPEN,
                host_key: None,
                ..
            })
        ));
    }
}
