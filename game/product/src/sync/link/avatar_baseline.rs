//! Avatar baselines on both ends of one connection, as `baseline.rs` does for cubes, but per message: every state
//! message carries the avatars of the players it speaks for, so the avatars of one acked message are all known to
//! the receiver together, and one baseline (named by its sender step) serves every avatar in the next message.
//!
//! - Sender ([`SentAvatars`]): the avatars each sent packet carried, by transport sequence; when a packet is acked
//!   its set becomes the baseline if it is newer than the one known.
//! - Receiver ([`ReceivedAvatars`]): a ring of the avatar sets of the last [`AVATAR_RING`] sender steps, where a
//!   message's baseline is looked up.
//!
//! Flat arrays sized once; recording, acking and looking up allocate nothing.

use crate::sync::codec::avatar_state::{AvatarTrail, WireAvatar};
use crate::sync::codec::stamp::MAX_AUTHORITY;

/// Players a message can carry avatars for (index = player − 1).
pub const AVATAR_SLOTS: usize = MAX_AUTHORITY as usize;
/// Oldest baseline a message may name (sender steps): 2.8 s at 90 Hz, longer than any ack takes.
pub const MAX_AVATAR_BASELINE_AGE_STEPS: u32 = 255;
/// Sent packets remembered until acked (256 at 90 a second: 2.8 s, as for cubes).
pub const AVATAR_SENT_TRACKED: usize = 256;
/// Received sets kept: deeper than the oldest baseline age, so any baseline the sender may name is still here.
pub const AVATAR_RING: usize = 256;
const _: () = assert!(AVATAR_RING > MAX_AVATAR_BASELINE_AGE_STEPS as usize);

/// One player's avatar as a message carries it: the step of that player's own clock it was sampled at (relayed
/// avatars keep their player's step, so the receiver's jitter buffer plays them at the pace they were made).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AvatarSample {
    pub step: u32,
    pub avatar: WireAvatar,
    /// Where the head and hands were at the steps just before `step` (none from a sender that sends every step).
    pub trail: AvatarTrail,
}

/// The avatars one message carried, by player (index = player − 1).
pub type AvatarSet = [Option<AvatarSample>; AVATAR_SLOTS];

/// The empty set.
pub const NO_AVATARS: AvatarSet = [None; AVATAR_SLOTS];

#[derive(Clone, Copy, Debug)]
struct SentSet {
    sequence: Option<u16>,
    step: u32,
    set: AvatarSet,
}

/// The sender's view: the newest avatar set the receiver is known to hold.
#[derive(Clone, Debug)]
pub struct SentAvatars {
    sent: Vec<SentSet>,
    acked: Option<(u32, AvatarSet)>,
    /// The baseline before the newest: the receiver holds it too (the prior of a predicted reference).
    prior: Option<(u32, AvatarSet)>,
}

impl Default for SentAvatars {
    fn default() -> Self {
        Self::new()
    }
}

impl SentAvatars {
    pub fn new() -> Self {
        Self {
            sent: vec![
                SentSet {
                    sequence: None,
                    step: 0,
                    set: NO_AVATARS,
                };
                AVATAR_SENT_TRACKED
            ],
            acked: None,
            prior: None,
        }
    }

    /// Records that transport packet `sequence`, sent at sender step `step`, carried `set`.
    pub fn record_sent(&mut self, sequence: u16, step: u32, set: &AvatarSet) {
        self.sent[usize::from(sequence) % AVATAR_SENT_TRACKED] = SentSet {
            sequence: Some(sequence),
            step,
            set: *set,
        };
    }

    /// The transport says packet `sequence` arrived: its set becomes the baseline when newer (wrap-safe) than the
    /// one known. Unknown, evicted or repeated acks change nothing.
    pub fn on_acked(&mut self, sequence: u16) {
        let slot = &mut self.sent[usize::from(sequence) % AVATAR_SENT_TRACKED];
        if slot.sequence != Some(sequence) {
            return;
        }
        slot.sequence = None;
        let newer = self
            .acked
            .is_none_or(|(step, _)| (slot.step.wrapping_sub(step) as i32) > 0);
        if newer {
            self.prior = self.acked.replace((slot.step, slot.set));
        }
    }

    /// An older set the receiver also holds, for a message at sender step `now`: its age and the set, or `None`.
    pub fn prior(&self, now: u32) -> Option<(u32, &AvatarSet)> {
        let (step, set) = self.prior.as_ref()?;
        let age = now.wrapping_sub(*step);
        (1..=MAX_AVATAR_BASELINE_AGE_STEPS).contains(&age).then_some((age, set))
    }

    /// The baseline for a message at sender step `now`: its age in steps (1..=[`MAX_AVATAR_BASELINE_AGE_STEPS`])
    /// and the set, or `None` (code absolute).
    pub fn baseline(&self, now: u32) -> Option<(u32, &AvatarSet)> {
        let (step, set) = self.acked.as_ref()?;
        let age = now.wrapping_sub(*step);
        (1..=MAX_AVATAR_BASELINE_AGE_STEPS).contains(&age).then_some((age, set))
    }

    /// Forgets the baseline and every unacked record (the receiver refused a message: it may lack what we think
    /// it has).
    pub fn forget_all(&mut self) {
        self.acked = None;
        self.prior = None;
        self.sent.iter_mut().for_each(|s| s.sequence = None);
    }
}

/// The receiver's ring of the avatar sets of recent messages, by sender step.
#[derive(Clone, Debug)]
pub struct ReceivedAvatars {
    ring: Vec<Option<(u32, AvatarSet)>>,
}

impl Default for ReceivedAvatars {
    fn default() -> Self {
        Self::new()
    }
}

impl ReceivedAvatars {
    pub fn new() -> Self {
        Self {
            ring: vec![None; AVATAR_RING],
        }
    }

    /// Keeps the set a message of sender step `step` carried (a duplicate writes the same again).
    pub fn insert(&mut self, step: u32, set: &AvatarSet) {
        self.ring[step as usize % AVATAR_RING] = Some((step, *set));
    }

    /// The set the message of sender step `step` carried, if it was received and not yet overwritten.
    pub fn get(&self, step: u32) -> Option<AvatarSet> {
        let (s, set) = self.ring[step as usize % AVATAR_RING]?;
        (s == step).then_some(set)
    }

    pub fn clear(&mut self) {
        self.ring.iter_mut().for_each(|e| *e = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(step: u32) -> AvatarSet {
        let mut s = NO_AVATARS;
        s[1] = Some(AvatarSample {
            step,
            avatar: WireAvatar::default(),
            ..AvatarSample::default()
        });
        s
    }

    #[test]
    fn only_acked_sets_become_baselines_and_the_newest_wins() {
        let mut a = SentAvatars::new();
        a.record_sent(7, 100, &set(100));
        a.record_sent(8, 101, &set(101));
        assert!(a.baseline(102).is_none(), "nothing acked");
        a.on_acked(8);
        a.on_acked(7);
        assert_eq!(
            a.baseline(102),
            Some((1, &set(101))),
            "the later ack of an older packet is ignored"
        );
        assert!(a.baseline(101).is_none(), "age 0 is no baseline");
        assert!(a.baseline(101 + 256).is_none(), "too old");
        a.forget_all();
        assert!(a.baseline(102).is_none());
        // Evicted records are not acked.
        a.record_sent(9, 102, &set(102));
        a.record_sent(9 + AVATAR_SENT_TRACKED as u16, 103, &set(103));
        a.on_acked(9);
        assert!(a.baseline(104).is_none());
        // Steps wrap.
        a.record_sent(1, u32::MAX, &set(5));
        a.on_acked(1);
        assert_eq!(a.baseline(3).map(|(age, _)| age), Some(4));
    }

    #[test]
    fn the_receiver_ring_answers_only_for_the_exact_step() {
        let mut r = ReceivedAvatars::new();
        r.insert(10, &set(10));
        assert_eq!(r.get(10), Some(set(10)));
        assert_eq!(r.get(10 + AVATAR_RING as u32), None);
        r.insert(10 + AVATAR_RING as u32, &set(11));
        assert_eq!(r.get(10), None, "overwritten");
        r.clear();
        assert_eq!(r.get(10 + AVATAR_RING as u32), None);
    }
}
