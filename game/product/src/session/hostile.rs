//! The hostile guest: instead of its own state it sends forged claims, one kind per step in turn, to prove that the
//! host refuses them all, counts each by reason, relays none, and that nobody else's world changes:
//!
//! 0. a cube state claimed for another player's authority index (impersonation);
//! 1. a cube state claiming authority it does not hold (the host's own sequences, so a tie it did not win);
//! 2. an avatar holding a cube someone else holds (or, when nobody holds one, holding a cube outside the play
//!    space);
//! 3. a sequence jump (ownership and authority sequences far ahead, to win every future conflict);
//! 4. an avatar far away: hands across the play space from the head, holding a cube;
//! 5. garbage bytes where a message should be;
//! 6. an avatar in another player's slot, its head at [`IMPOSTOR_HEAD`] (impersonation: the host knows the sender
//!    by its connection).
//!
//! A guest can also make claims that look honest (grab any free cube): the authority scheme trusts players with
//! what they touch, as the reference does; that is not forgery and is not sent here.

use glam::{Quat, Vec3};

use crate::authority::{AuthorityTable, NOBODY};
use crate::avatar::{Avatar, Pose};
use crate::session::message::StateHeader;
use crate::sync::codec::avatar_state::{WireAvatar, PLAY_SPACE_HALF_WIDTH_M};
use crate::sync::codec::stamp::{AuthorityStamp, MAX_AUTHORITY};
use crate::sync::link::avatar_baseline::AvatarSample;

/// Kinds of forgery, sent in turn.
pub const FORGERY_KINDS: u64 = 7;
/// How far ahead the jumped sequences run.
const JUMP: u16 = 1000;
/// Far-away poses sit this far in from the play space's edge (m): the wire can say them, the host must not take
/// them.
const EDGE_INSET_M: f32 = 0.5;
/// Where the impersonating avatar's head is (m): tests look for it in the victim's avatar elsewhere.
pub const IMPOSTOR_HEAD: Vec3 = Vec3::new(0.0, 1.7, 0.0);
/// A held cube's offset from its hand in the far-away avatars (m): beyond the play space from a hand at its edge.
const FAR_OFFSET_M: f32 = 1.9;

/// An avatar with its head at `head` and its right hand, tracked, at `hand`, holding `held` (cube, offset from the
/// hand, stamp) if any. `None` if the wire cannot carry it.
fn avatar_at(head: Vec3, hand: Vec3, held: Option<(u32, Vec3, AuthorityStamp)>) -> Option<WireAvatar> {
    let mut a = Avatar {
        head: Pose::new(head, Quat::IDENTITY),
        ..Avatar::default()
    };
    a.hands[1].tracked = true;
    a.hands[1].grip = 1.0;
    a.hands[1].pose = Pose::new(hand, Quat::IDENTITY);
    let held = held.map(|(cube, offset, stamp)| (cube, Pose::new(offset, Quat::IDENTITY), stamp));
    WireAvatar::from_avatar(&a, [None, held]).ok()
}

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
    let edge = PLAY_SPACE_HALF_WIDTH_M - EDGE_INSET_M;
    let mut say = |player: u8, avatar: Option<WireAvatar>| {
        if let (Some(slot), Some(avatar)) = (header.avatars.get_mut(usize::from(player).wrapping_sub(1)), avatar) {
            *slot = Some(AvatarSample {
                step: step as u32,
                avatar,
                ..AvatarSample::default()
            });
        }
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
            // The holder's own sequences: a claim to a hold we never won. (A newer ownership sequence would be an
            // honest grab if the holder has let go meanwhile.)
            let held = (0..cubes).find(|&c| table.holder(c) != NOBODY && table.holder(c) != me);
            let avatar = match held {
                Some(c) => avatar_at(
                    Vec3::new(0.0, 1.7, 0.0),
                    Vec3::new(0.3, 1.2, 0.0),
                    Some((c, Vec3::ZERO, table.stamp(c))),
                ),
                None => avatar_at(
                    Vec3::new(edge, 1.7, 0.0),
                    Vec3::new(edge, 1.2, 0.0),
                    Some((cube, Vec3::X * FAR_OFFSET_M, next(stamp))),
                ),
            };
            say(me, avatar);
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
            let avatar = avatar_at(
                Vec3::new(-edge, 1.7, 0.0),
                Vec3::new(edge, 1.2, 0.0),
                Some((cube, Vec3::ZERO, next(stamp))),
            );
            say(me, avatar);
            Forgery::Claim { header, cube: None }
        }
        6 => {
            // Another player's slot (player 2, or 3 when we are 2: a guest that is there in any session of three),
            // its hand holding a cube with a claim that would win if it were that player's.
            let victim = if me == 2 { 3 } else { 2 };
            let avatar = avatar_at(
                IMPOSTOR_HEAD,
                Vec3::new(0.3, 1.2, 0.0),
                Some((cube, Vec3::ZERO, next(stamp))),
            );
            say(victim, avatar);
            Forgery::Claim { header, cube: None }
        }
        _ => Forgery::Garbage,
    }
}
