//! Baselines for delta encoding, on both ends of one connection.
//!
//! - Sender ([`AckedBaselines`]): remembers which cube states went into each packet; when the transport reports a
//!   packet acked, those states become the newest each cube is *known* to have reached the receiver. Only such
//!   states may serve as baselines: a state that was merely sent may have been lost.
//! - Receiver ([`ReceivedStates`]): a ring of the last [`RECEIVED_STATES_PER_CUBE`] received states per cube, keyed
//!   by simulation step, where a delta's baseline is looked up.
//!
//! States are keyed by the step they describe (a `u64` that never wraps), packets by their 16-bit sequence. Both
//! structures are flat arrays sized once, indexed by cube id and by sequence or step modulo their depth.

use crate::sync::codec::delta::MAX_BASELINE_AGE_STEPS;
use crate::sync::codec::quantize::QuantizedState;

/// Sent packets whose contents are remembered until acked: 256 at 90 packets a second is 2.8 s, longer than any
/// ack can take before the transport gives the packet up.
pub const SENT_PACKETS_TRACKED: usize = 256;
/// Received states kept per cube. Deeper than the oldest baseline age, so any baseline the sender may pick (acked,
/// at most [`MAX_BASELINE_AGE_STEPS`] old) is still here.
pub const RECEIVED_STATES_PER_CUBE: usize = 256;
const _: () = assert!(RECEIVED_STATES_PER_CUBE > MAX_BASELINE_AGE_STEPS as usize);

/// Updates kept for unacked packets, on average per tracked packet: the ring holds [`SENT_PACKETS_TRACKED`] packets
/// of this many updates, or fewer larger ones (it is sized for up to 64 per packet when the scene has that many
/// cubes). A packet whose record the ring overwrote before its ack came is treated as lost.
const RECORDED_UPDATES_PER_PACKET: usize = 64;

#[derive(Clone, Copy, Debug, Default)]
struct SentPacket {
    /// The sequence this slot currently describes, if any (slots are reused modulo their count).
    sequence: Option<u16>,
    step: u64,
    /// Where its updates start in the ring (counted from the ring's first write, never wrapping) and how many.
    start: u64,
    len: usize,
}

/// The sender's view of one connection: per cube, the newest state the receiver is known to hold.
#[derive(Clone, Debug)]
pub struct AckedBaselines {
    acked: Vec<Option<(u64, QuantizedState)>>,
    sent: Vec<SentPacket>,
    /// The updates of the tracked packets, one ring sized at creation: recording a packet never allocates.
    updates: Vec<(u32, QuantizedState)>,
    /// Updates written to the ring so far.
    written: u64,
}

impl AckedBaselines {
    pub fn new(cube_count: usize) -> Self {
        let ring = SENT_PACKETS_TRACKED * cube_count.clamp(1, RECORDED_UPDATES_PER_PACKET);
        Self {
            acked: vec![None; cube_count],
            sent: vec![SentPacket::default(); SENT_PACKETS_TRACKED],
            updates: vec![(0, QuantizedState::default()); ring],
            written: 0,
        }
    }

    /// Records what packet `sequence`, describing `step`, carried. A slot still holding an unacked older packet is
    /// overwritten: that packet is treated as lost (as is one too large for the ring).
    pub fn record_sent(&mut self, sequence: u16, step: u64, cubes: &[(u32, QuantizedState)]) {
        let ring = self.updates.len();
        let slot = &mut self.sent[usize::from(sequence) % SENT_PACKETS_TRACKED];
        slot.sequence = (cubes.len() <= ring).then_some(sequence);
        slot.step = step;
        slot.start = self.written;
        slot.len = cubes.len().min(ring);
        for &update in &cubes[..slot.len] {
            self.updates[(self.written % ring as u64) as usize] = update;
            self.written += 1;
        }
    }

    /// The transport says packet `sequence` arrived: its states become baselines where they are newer than what
    /// is known. Unknown, evicted or repeated acks change nothing.
    pub fn on_acked(&mut self, sequence: u16) {
        let ring = self.updates.len() as u64;
        let slot = &mut self.sent[usize::from(sequence) % SENT_PACKETS_TRACKED];
        if slot.sequence != Some(sequence) {
            return;
        }
        slot.sequence = None;
        // Overwritten since by newer packets' updates: as good as lost.
        if self.written - slot.start > ring {
            return;
        }
        for k in 0..slot.len as u64 {
            let (cube, state) = self.updates[((slot.start + k) % ring) as usize];
            if let Some(known) = self.acked.get_mut(cube as usize) {
                if known.is_none_or(|(step, _)| step < slot.step) {
                    *known = Some((slot.step, state));
                }
            }
        }
    }

    /// The baseline to encode `cube` against at step `now`, with its age in steps, or `None` (send absolute) when
    /// nothing is acked or the acked state is too old (or, impossibly, from the future).
    pub fn baseline(&self, cube: u32, now: u64) -> Option<(&QuantizedState, u32)> {
        let (step, state) = self.acked.get(cube as usize)?.as_ref()?;
        let age = now.checked_sub(*step)?;
        (1..=u64::from(MAX_BASELINE_AGE_STEPS))
            .contains(&age)
            .then_some((state, age as u32))
    }

    /// The newest state of `cube` the receiver is known to hold, however old.
    pub fn newest(&self, cube: u32) -> Option<&QuantizedState> {
        self.acked.get(cube as usize)?.as_ref().map(|(_, state)| state)
    }

    /// Drops every baseline and every unacked packet record: all updates are absolute until new acks arrive.
    /// For when the receiver reports it rejected a packet the transport had acked, so its baselines can't be
    /// trusted.
    pub fn forget_all(&mut self) {
        self.acked.iter_mut().for_each(|known| *known = None);
        self.sent.iter_mut().for_each(|slot| slot.sequence = None);
    }

    /// Drops a cube's baseline, so its next update is absolute (after the receiver rejected one).
    pub fn forget(&mut self, cube: u32) {
        if let Some(known) = self.acked.get_mut(cube as usize) {
            *known = None;
        }
    }
}

/// The receiver's ring of received states, [`RECEIVED_STATES_PER_CUBE`] deep per cube, in one flat array.
#[derive(Clone, Debug)]
pub struct ReceivedStates {
    cube_count: usize,
    entries: Vec<Option<(u64, QuantizedState)>>,
}

impl ReceivedStates {
    pub fn new(cube_count: usize) -> Self {
        Self {
            cube_count,
            entries: vec![None; cube_count * RECEIVED_STATES_PER_CUBE],
        }
    }

    fn slot(&self, cube: u32, step: u64) -> Option<usize> {
        let cube = cube as usize;
        (cube < self.cube_count)
            .then(|| cube * RECEIVED_STATES_PER_CUBE + (step % RECEIVED_STATES_PER_CUBE as u64) as usize)
    }

    /// Stores the state `cube` had at `step`. Out-of-range cubes are ignored (the packet reader has already
    /// refused them); an older state never replaces a newer one in the same slot (reordered packets).
    pub fn insert(&mut self, cube: u32, step: u64, state: QuantizedState) {
        if let Some(i) = self.slot(cube, step) {
            if self.entries[i].is_none_or(|(s, _)| s <= step) {
                self.entries[i] = Some((step, state));
            }
        }
    }

    /// The state `cube` had at `step`, if it was received and not yet overwritten.
    pub fn get(&self, cube: u32, step: u64) -> Option<QuantizedState> {
        let (s, state) = self.entries[self.slot(cube, step)?]?;
        (s == step).then_some(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::quantize::QuantizedRotation;

    fn state(x: i32) -> QuantizedState {
        QuantizedState {
            position: [x, 0, 0],
            rotation: QuantizedRotation::IDENTITY,
            linear_velocity: [0; 3],
            angular_velocity: [0; 3],
            at_rest: true,
            stamp: crate::sync::codec::stamp::AuthorityStamp::DEFAULT,
        }
    }

    #[test]
    fn only_acked_states_become_baselines() {
        let mut b = AckedBaselines::new(4);
        b.record_sent(10, 100, &[(0, state(1)), (2, state(2))]);
        b.record_sent(11, 101, &[(0, state(3))]);
        assert_eq!(b.baseline(0, 105), None, "nothing acked yet");
        b.on_acked(10);
        assert_eq!(b.baseline(0, 105), Some((&state(1), 5)));
        assert_eq!(b.baseline(2, 105), Some((&state(2), 5)));
        assert_eq!(b.baseline(1, 105), None);
        // A later packet acked first, then the earlier one: the newer state stays.
        b.record_sent(12, 102, &[(2, state(4))]);
        b.record_sent(13, 103, &[(2, state(5))]);
        b.on_acked(13);
        b.on_acked(12);
        assert_eq!(b.baseline(2, 105), Some((&state(5), 2)));
        // Repeated and unknown acks change nothing; out-of-range cubes are ignored.
        b.on_acked(13);
        b.on_acked(9999);
        b.record_sent(14, 104, &[(77, state(6))]);
        b.on_acked(14);
        assert_eq!(b.baseline(0, 105), Some((&state(1), 5)));
        assert_eq!(b.baseline(77, 105), None);
    }

    #[test]
    fn baselines_age_out_and_can_be_forgotten() {
        let mut b = AckedBaselines::new(1);
        b.record_sent(0, 1000, &[(0, state(1))]);
        b.on_acked(0);
        assert_eq!(b.baseline(0, 1000), None, "age 0 is not a baseline");
        assert_eq!(b.baseline(0, 999), None, "from the future");
        assert_eq!(b.baseline(0, 1000 + 255).map(|(_, age)| age), Some(255));
        assert_eq!(b.baseline(0, 1000 + 256), None);
        b.forget(0);
        assert_eq!(b.baseline(0, 1001), None);
        b.record_sent(1, 1001, &[(0, state(2))]);
        b.record_sent(2, 1002, &[(0, state(3))]);
        b.on_acked(1);
        b.forget_all();
        b.on_acked(2);
        assert_eq!(
            b.baseline(0, 1003),
            None,
            "packets sent before forget_all are not trusted either"
        );
    }

    #[test]
    fn evicted_packets_are_not_acked() {
        let mut b = AckedBaselines::new(1);
        b.record_sent(5, 10, &[(0, state(1))]);
        // Same slot, 256 sequences later: the old packet is forgotten, its ack means nothing.
        b.record_sent(5 + SENT_PACKETS_TRACKED as u16, 300, &[(0, state(2))]);
        b.on_acked(5);
        assert_eq!(b.baseline(0, 301), None);
        b.on_acked(5 + SENT_PACKETS_TRACKED as u16);
        assert_eq!(b.baseline(0, 301), Some((&state(2), 1)));
        // Sequences wrap: 65535 and 0 are different slots, both work.
        b.record_sent(u16::MAX, 400, &[(0, state(3))]);
        b.record_sent(0, 401, &[(0, state(4))]);
        b.on_acked(0);
        assert_eq!(b.baseline(0, 402), Some((&state(4), 1)));
    }

    #[test]
    fn receiver_ring_keeps_the_last_states_per_cube() {
        let mut r = ReceivedStates::new(2);
        for step in 0..300u64 {
            r.insert(1, step, state(step as i32));
        }
        assert_eq!(r.get(1, 299), Some(state(299)));
        assert_eq!(r.get(1, 300 - RECEIVED_STATES_PER_CUBE as u64), Some(state(44)));
        assert_eq!(r.get(1, 43), None, "overwritten");
        assert_eq!(r.get(0, 299), None, "never received");
        assert_eq!(r.get(2, 299), None, "no such cube");
        r.insert(7, 1, state(1));
        // A late packet does not replace a newer state in its slot.
        r.insert(1, 299 - RECEIVED_STATES_PER_CUBE as u64, state(-1));
        assert_eq!(r.get(1, 299), Some(state(299)));
    }
}
