//! The hostile guest: instead of its own state it sends forged claims, one kind per step in turn, to prove that the
//! host refuses them all, counts each by reason, relays none, and that nobody else's world changes:
//!
//! 0. a cube state claimed for another player's authority index (impersonation);
//! 1. a cube state claiming authority it does not hold (the host's own sequences, so a tie it did not win);
//! 2. a hold on a cube someone else holds (or, when nobody holds one, a hold at an absurd pose);
//! 3. a sequence jump (ownership and authority sequences far ahead, to win every future conflict);
//! 4. a hold far outside the play space;
//! 5. garbage bytes where a message should be.
//!
//! A guest can also make claims that look honest (grab any free cube): the authority scheme trusts players with
//! what they touch, as the reference does; that is not forgery and is not sent here.

use crate::authority::{AuthorityTable, NOBODY};
use crate::session::message::{Hold, StateHeader};
use crate::sync::codec::quantize::{QuantizedRotation, POSITION_UNITS_PER_M};
use crate::sync::codec::stamp::{AuthorityStamp, MAX_AUTHORITY};

/// Kinds of forgery, sent in turn.
pub const FORGERY_KINDS: u64 = 6;
/// How far ahead the jumped sequences run.
const JUMP: u16 = 1000;
/// Where the absurd holds are (m): far outside any play space, within what the wire can say.
const FAR_AWAY_M: f32 = 200.0;

/// What to send this step instead of honest state: the header, the cube to send (if any) with the stamp to give
/// it, or garbage.
#[allow(clippy::large_enum_variant)] // one at a time, on the stack
pub enum Forgery {
    Claim {
        header: StateHeader,
        cube: Option<(u32, AuthorityStamp)>,
    },
    Garbage,
}

/// The forgery for `step` by player `me`, knowing what `table` knows.
pub fn forge(step: u64, me: u8, table: &AuthorityTable) -> Forgery {
    let cubes = table.len() as u32;
    let cube = (step / FORGERY_KINDS % u64::from(cubes.max(1))) as u32;
    let stamp = table.stamp(cube);
    let other = me % MAX_AUTHORITY + 1;
    let mut header = StateHeader {
        sender_step: step as u32,
        ..StateHeader::default()
    };
    let far = [(FAR_AWAY_M * POSITION_UNITS_PER_M) as i32, 0, 0];
    let hold = |cube: u32, stamp: AuthorityStamp, position: [i32; 3]| Hold {
        player: me,
        cube,
        stamp,
        position,
        rotation: QuantizedRotation::IDENTITY,
    };
    let next = |s: AuthorityStamp| AuthorityStamp {
        authority: me,
        authority_seq: s.authority_seq.wrapping_add(1),
        ownership_seq: s.ownership_seq.wrapping_add(1),
    };
    match step % FORGERY_KINDS {
        0 => Forgery::Claim {
            header,
            cube: Some((
                cube,
                AuthorityStamp {
                    authority: other,
                    ..next(stamp)
                },
            )),
        },
        1 => Forgery::Claim {
            header,
            cube: Some((cube, AuthorityStamp { authority: me, ..stamp })),
        },
        2 => {
            // The holder's own sequences with our index: a claim to a hold we never won. (A newer ownership
            // sequence would be an honest grab if the holder has let go meanwhile.)
            let held = (0..cubes).find(|&c| table.holder(c) != NOBODY && table.holder(c) != me);
            let (c, position) = match held {
                Some(c) => (c, [0, 4096, 0]),
                None => (cube, far),
            };
            let mine = AuthorityStamp {
                authority: me,
                ..table.stamp(c)
            };
            header.push_hold(hold(c, mine, position));
            Forgery::Claim { header, cube: None }
        }
        3 => Forgery::Claim {
            header,
            cube: Some((
                cube,
                AuthorityStamp {
                    authority: me,
                    authority_seq: stamp.authority_seq.wrapping_add(JUMP),
                    ownership_seq: stamp.ownership_seq.wrapping_add(JUMP),
                },
            )),
        },
        4 => {
            header.push_hold(hold(cube, next(stamp), far));
            Forgery::Claim { header, cube: None }
        }
        _ => Forgery::Garbage,
    }
}
