//! The judgements, as pure functions of stamps: how two claims compare, what the host accepts from a guest, what a
//! guest accepts from the host. The rule numbers match the module doc of [`crate::authority`].

use std::cmp::Ordering;

use tumble_net::sequence::sequence_greater_than;

use crate::sync::codec::stamp::{AuthorityStamp, DEFAULT_AUTHORITY, MAX_AUTHORITY};

/// Furthest a guest's ownership sequence may run ahead of the host's in one claim. A player grabs a cube at most a
/// few times in one round trip; a claim far ahead is forged (rule 7), and taking it would let a liar win every
/// future conflict over that cube.
pub const MAX_OWNERSHIP_LEAD: u16 = 8;
/// The same for the authority sequence (touches and grabs both bump it).
pub const MAX_AUTHORITY_LEAD: u16 = 32;

/// Why the host refused an update. Counted per reason; never relayed, never applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectReason {
    /// The claim names another authority than the player who sent it (impersonation).
    NotSender,
    /// The cube is in another player's hand.
    HeldByAnother,
    /// An older claim than the host's (it lost a race the host already judged, or arrived late).
    Stale,
    /// As recent as the host's, but the host saw another player's claim first.
    LostTie,
    /// A sequence further ahead than any honest player gets in a round trip.
    SequenceJump,
    /// The cube is not in the scene, or is out of the simulation.
    UnknownCube,
    /// A held cube or avatar pose that is NaN, infinite or far outside the play space.
    BadPose,
    /// The packet did not parse (a malformed or damaged message); nothing in it was used.
    Malformed,
}

impl RejectReason {
    pub const ALL: [RejectReason; 8] = [
        RejectReason::NotSender,
        RejectReason::HeldByAnother,
        RejectReason::Stale,
        RejectReason::LostTie,
        RejectReason::SequenceJump,
        RejectReason::UnknownCube,
        RejectReason::BadPose,
        RejectReason::Malformed,
    ];

    /// The JSON key for this reason.
    pub fn name(self) -> &'static str {
        match self {
            RejectReason::NotSender => "not_sender",
            RejectReason::HeldByAnother => "held_by_another",
            RejectReason::Stale => "stale",
            RejectReason::LostTie => "lost_tie",
            RejectReason::SequenceJump => "sequence_jump",
            RejectReason::UnknownCube => "unknown_cube",
            RejectReason::BadPose => "bad_pose",
            RejectReason::Malformed => "malformed",
        }
    }
}

/// Counts of refused updates, by reason (index = position in [`RejectReason::ALL`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RejectCounts(pub [u64; RejectReason::ALL.len()]);

impl RejectCounts {
    pub fn add(&mut self, reason: RejectReason) {
        self.0[reason as usize] += 1;
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, other: &RejectCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

fn compare_sequence(a: u16, b: u16) -> Ordering {
    if a == b {
        Ordering::Equal
    } else if sequence_greater_than(a, b) {
        Ordering::Greater
    } else {
        Ordering::Less
    }
}

/// Rule 4: which of two claims on one cube is more recent. Ownership first (a grab beats any number of touches),
/// then authority; both wrap-safe. `Equal` means the same seqs, whoever they name.
pub fn compare_claims(a: &AuthorityStamp, b: &AuthorityStamp) -> Ordering {
    compare_sequence(a.ownership_seq, b.ownership_seq).then(compare_sequence(a.authority_seq, b.authority_seq))
}

/// How far `a` runs ahead of `b` (0 when behind or equal).
fn lead(a: u16, b: u16) -> u16 {
    if sequence_greater_than(a, b) {
        a.wrapping_sub(b)
    } else {
        0
    }
}

/// Rules 5 and 7: the host's verdict on a claim `claim` sent by player `sender` (1–4) for a cube whose stamp on the
/// host is `host` and which player `holder` holds (0 = nobody).
pub fn judge_claim(sender: u8, claim: &AuthorityStamp, host: &AuthorityStamp, holder: u8) -> Result<(), RejectReason> {
    if claim.authority != sender || sender == DEFAULT_AUTHORITY || sender > MAX_AUTHORITY {
        return Err(RejectReason::NotSender);
    }
    if holder != 0 && holder != sender {
        return Err(RejectReason::HeldByAnother);
    }
    if lead(claim.ownership_seq, host.ownership_seq) > MAX_OWNERSHIP_LEAD
        || (claim.ownership_seq == host.ownership_seq
            && lead(claim.authority_seq, host.authority_seq) > MAX_AUTHORITY_LEAD)
    {
        return Err(RejectReason::SequenceJump);
    }
    match compare_claims(claim, host) {
        Ordering::Greater => Ok(()),
        Ordering::Equal if host.authority == sender => Ok(()),
        Ordering::Equal => Err(RejectReason::LostTie),
        Ordering::Less => Err(RejectReason::Stale),
    }
}

/// Rule 6: whether a guest whose player index is `me` takes what the host says about a cube (`host`), given its own
/// stamp `local`. Newer always wins; as recent with another authority means the host broke a tie against this
/// guest, and the host's word is final; the guest's own newer claims are kept until the host has judged them.
pub fn guest_accepts(me: u8, host: &AuthorityStamp, local: &AuthorityStamp) -> bool {
    match compare_claims(host, local) {
        Ordering::Greater => true,
        Ordering::Equal => host.authority != me || local.authority != me,
        Ordering::Less => false,
    }
}

/// Rule 6b: whether a guest whose player index is `me` takes the host's news that another player holds a cube
/// (`host`, relayed in that player's avatar), given its own stamp `local`. Holds are judged by ownership alone: the
/// host refuses any claim on a cube someone holds (rule 7), so a grab of this guest made as recently (the same
/// ownership sequence: both grabbed before hearing of the other) lost to the one the host saw first, whatever the
/// authority sequences say; an older grab of ours is superseded. Only a newer grab of ours is kept for the host to
/// judge.
pub fn guest_accepts_hold(me: u8, host: &AuthorityStamp, local: &AuthorityStamp) -> bool {
    host.authority != me && compare_sequence(host.ownership_seq, local.ownership_seq) != Ordering::Less
}

/// Whether a guest's resting claim `claim` (its stamp when it last had the cube at rest) was superseded or
/// committed by what the host ended with (`host`): `None` when a later claim by anyone took the cube after it
/// (it moved on), else `Some(committed)` — the host's final stamp is the claim itself or its return to default,
/// so the host's final state must be the guest's resting state.
pub fn commit_outcome(claim: &AuthorityStamp, host: &AuthorityStamp) -> Option<()> {
    let returned = AuthorityStamp {
        authority: DEFAULT_AUTHORITY,
        authority_seq: claim.authority_seq.wrapping_add(1),
        ownership_seq: claim.ownership_seq,
    };
    (host == claim || *host == returned).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_concedes_a_hold_grabbed_as_recently_even_with_a_higher_authority_sequence() {
        // Players 2 and 3 grabbed the same cube before hearing of each other: both ownership sequences are 2; 2's
        // authority sequence is higher (it had touched the cube before). The host saw 3's grab first.
        let mine = stamp(2, 187, 2);
        let theirs = stamp(3, 186, 2);
        assert!(
            !guest_accepts(2, &theirs, &mine),
            "by stamps alone, player 2 would keep its claim for ever"
        );
        assert!(guest_accepts_hold(2, &theirs, &mine));
        // An older hold does not take a cube from a newer grab; our own hold is never news.
        assert!(!guest_accepts_hold(2, &stamp(3, 190, 1), &mine));
        assert!(guest_accepts_hold(2, &stamp(3, 100, 3), &mine));
        assert!(!guest_accepts_hold(2, &stamp(2, 187, 2), &mine));
    }

    fn stamp(authority: u8, authority_seq: u16, ownership_seq: u16) -> AuthorityStamp {
        AuthorityStamp {
            authority,
            authority_seq,
            ownership_seq,
        }
    }

    #[test]
    fn rule_4_ownership_beats_authority_and_both_wrap() {
        // A newer grab beats a claim with many more touches.
        assert_eq!(compare_claims(&stamp(2, 0, 6), &stamp(3, 900, 5)), Ordering::Greater);
        assert_eq!(compare_claims(&stamp(2, 10, 5), &stamp(3, 9, 5)), Ordering::Greater);
        assert_eq!(compare_claims(&stamp(2, 9, 5), &stamp(3, 9, 5)), Ordering::Equal);
        // Across the 16-bit wrap: 1 follows 65535.
        assert_eq!(compare_claims(&stamp(2, 0, 1), &stamp(3, 0, 65535)), Ordering::Greater);
        assert_eq!(compare_claims(&stamp(2, 1, 4), &stamp(3, 65535, 4)), Ordering::Greater);
    }

    #[test]
    fn rule_5_newer_wins_ties_go_to_the_first_seen_and_holds_are_exclusive() {
        let host = stamp(0, 4, 2);
        // A touch (authority + 1) by player 2 is taken.
        assert_eq!(judge_claim(2, &stamp(2, 5, 2), &host, 0), Ok(()));
        // The same touch by player 3 after the host took player 2's: a tie, and player 2 was first.
        let after = stamp(2, 5, 2);
        assert_eq!(judge_claim(3, &stamp(3, 5, 2), &after, 0), Err(RejectReason::LostTie));
        // Player 2's further updates under the claim it won are taken.
        assert_eq!(judge_claim(2, &stamp(2, 5, 2), &after, 0), Ok(()));
        // A grab by player 3 beats player 2's touch...
        assert_eq!(judge_claim(3, &stamp(3, 6, 3), &after, 0), Ok(()));
        // ...but not a cube player 2 holds.
        assert_eq!(
            judge_claim(3, &stamp(3, 6, 3), &stamp(2, 5, 3), 2),
            Err(RejectReason::HeldByAnother)
        );
        // Old news loses.
        assert_eq!(judge_claim(2, &stamp(2, 3, 2), &host, 0), Err(RejectReason::Stale));
    }

    #[test]
    fn rule_6_a_guest_takes_newer_news_and_the_hosts_tie_break_but_keeps_its_own_newer_claim() {
        let mine = stamp(2, 5, 2);
        // The host has not heard of my touch yet: its older view is ignored.
        assert!(!guest_accepts(2, &stamp(0, 4, 2), &mine));
        // The host gave the same touch to player 3 first: I give way.
        assert!(guest_accepts(2, &stamp(3, 5, 2), &mine));
        // Someone grabbed it: newer ownership wins.
        assert!(guest_accepts(2, &stamp(4, 5, 3), &mine));
        // Returned to default by the host after it committed my resting state: authority + 1.
        assert!(guest_accepts(2, &stamp(0, 6, 2), &mine));
        // Plain updates of a cube that is not mine are taken as they come.
        assert!(guest_accepts(2, &stamp(3, 5, 2), &stamp(3, 5, 2)));
        // An echo of my own claim changes nothing.
        assert!(!guest_accepts(2, &mine, &mine));
    }

    #[test]
    fn rule_7_forged_claims_are_refused() {
        let host = stamp(0, 4, 2);
        // Claiming for another player, or for the default authority.
        assert_eq!(judge_claim(2, &stamp(3, 5, 2), &host, 0), Err(RejectReason::NotSender));
        assert_eq!(judge_claim(2, &stamp(0, 5, 2), &host, 0), Err(RejectReason::NotSender));
        assert_eq!(judge_claim(5, &stamp(5, 5, 2), &host, 0), Err(RejectReason::NotSender));
        // Jumping the sequences far ahead to win every future conflict.
        assert_eq!(
            judge_claim(2, &stamp(2, 4, 2 + MAX_OWNERSHIP_LEAD + 1), &host, 0),
            Err(RejectReason::SequenceJump)
        );
        assert_eq!(
            judge_claim(2, &stamp(2, 4 + MAX_AUTHORITY_LEAD + 1, 2), &host, 0),
            Err(RejectReason::SequenceJump)
        );
        assert_eq!(judge_claim(2, &stamp(2, 4, 2 + MAX_OWNERSHIP_LEAD), &host, 0), Ok(()));
    }
}
