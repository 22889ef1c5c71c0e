//! The authority stamp every cube update carries: who may move the cube (its authority index: 0 = default, the
//! host's simulation; 1–4 = a player) and how recent that claim is (the authority and ownership sequences, 16-bit
//! and wrap-safe). The rules that change and judge stamps are in [`crate::authority`]; this file is only how a
//! stamp travels.
//!
//! On the wire a stamp is coded against the baseline the update uses: almost always "same as the baseline's" (one
//! adaptive flag, a fraction of a bit), else in full. An absolute update codes it in full behind a "default stamp"
//! flag, since cubes nobody has touched have the stamp (0, 0, 0).

use tumble_net::{SerializeError, Stream};

use crate::sync::codec::entropy_stream::context;

/// Authority index of the default owner: the host's simulation (drawn white).
pub const DEFAULT_AUTHORITY: u8 = 0;
/// Highest authority index: four players, 1–4 (blue, red, green, yellow).
pub const MAX_AUTHORITY: u8 = 4;

/// One cube's authority and ownership, as every peer holds it and the wire carries it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AuthorityStamp {
    /// 0 = default, 1–4 = the player with authority.
    pub authority: u8,
    /// Bumped each time a player takes authority (touch, grab) and when the cube returns to default.
    pub authority_seq: u16,
    /// Bumped each time a player grabs the cube. Ownership is stronger than authority.
    pub ownership_seq: u16,
}

impl AuthorityStamp {
    pub const DEFAULT: AuthorityStamp = AuthorityStamp {
        authority: DEFAULT_AUTHORITY,
        authority_seq: 0,
        ownership_seq: 0,
    };
}

fn serialize_full<S: Stream>(s: &mut S, stamp: &mut AuthorityStamp) -> Result<(), SerializeError> {
    let mut authority = u32::from(stamp.authority);
    s.set_context(context::STAMP_AUTHORITY);
    s.serialize_uint(&mut authority, u32::from(MAX_AUTHORITY))?;
    let (mut own, mut auth) = (u32::from(stamp.ownership_seq), u32::from(stamp.authority_seq));
    s.set_context(context::STAMP_SEQUENCE);
    s.serialize_bits(&mut own, 16)?;
    s.serialize_bits(&mut auth, 16)?;
    // In range by the reads above (a bounded uint and two 16-bit fields), so the casts are exact.
    *stamp = AuthorityStamp {
        authority: authority as u8,
        authority_seq: auth as u16,
        ownership_seq: own as u16,
    };
    Ok(())
}

/// A stamp against `reference` (the baseline's stamp, or [`AuthorityStamp::DEFAULT`] for an absolute update): a
/// "same" flag, then the full stamp when it differs.
pub fn serialize_stamp<S: Stream>(
    s: &mut S,
    stamp: &mut AuthorityStamp,
    reference: &AuthorityStamp,
) -> Result<(), SerializeError> {
    let mut same = stamp == reference;
    s.set_context(context::STAMP_SAME);
    s.serialize_bool(&mut same)?;
    if same {
        *stamp = *reference;
        Ok(())
    } else {
        serialize_full(s, stamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_net::{ReadStream, WriteStream};

    #[test]
    fn stamps_round_trip_against_a_reference_and_bad_authority_is_refused() {
        let reference = AuthorityStamp {
            authority: 2,
            authority_seq: 65535,
            ownership_seq: 7,
        };
        for stamp in [
            reference,
            AuthorityStamp::DEFAULT,
            AuthorityStamp {
                authority: 4,
                authority_seq: 0,
                ownership_seq: 65535,
            },
        ] {
            let mut buf = [0u8; 16];
            let mut w = WriteStream::new(&mut buf);
            serialize_stamp(&mut w, &mut { stamp }, &reference).unwrap();
            let n = w.finish().unwrap();
            let mut got = AuthorityStamp::DEFAULT;
            serialize_stamp(&mut ReadStream::new(&buf[..n]), &mut got, &reference).unwrap();
            assert_eq!(got, stamp);
        }
        // Authority 5 names no player: a writer refuses it, and a reader refuses the bits for it.
        let mut buf = [0u8; 16];
        let bad = AuthorityStamp {
            authority: 5,
            ..AuthorityStamp::DEFAULT
        };
        assert!(serialize_stamp(&mut WriteStream::new(&mut buf), &mut { bad }, &reference).is_err());
        // Hand-made: "not same", then authority 5 in the 3 bits a bound of 4 takes.
        let mut w = WriteStream::new(&mut buf);
        w.serialize_bool(&mut false).unwrap();
        w.serialize_bits(&mut 5, 3).unwrap();
        w.serialize_bits(&mut 0, 32).unwrap();
        let n = w.finish().unwrap();
        let mut got = AuthorityStamp::DEFAULT;
        assert!(serialize_stamp(&mut ReadStream::new(&buf[..n]), &mut got, &reference).is_err());
    }
}
