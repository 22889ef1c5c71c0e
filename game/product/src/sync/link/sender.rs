//! The authority side of one connection: each step it captures every cube's quantized state, accumulates
//! priorities, and writes a state packet of the most important cubes, delta-encoded against what the receiver is
//! known to hold. Transport acks come back through [`Sender::on_acked`].

use thiserror::Error;
use tumble_engine::physics::{BodyId, PhysicsError, World};

use crate::sync::codec::delta::Encoding;
use crate::sync::codec::quantize::{quantize_state, QuantizedState};
use crate::sync::codec::stamp::AuthorityStamp;
use crate::sync::codec::state_packet::{
    write_entropy_state_packet, write_state_packet, PacketCoding, StatePacketError,
};
use crate::sync::link::baseline::AckedBaselines;
use crate::sync::link::priority::{
    accumulate, hurry, mark_sent, order_by_priority, tick_activity, CubeActivity, HELD_PRIORITY,
};

/// Why a state packet could not be produced.
#[derive(Debug, Error)]
pub enum SyncError {
    #[error(transparent)]
    Physics(#[from] PhysicsError),
    #[error(transparent)]
    Packet(#[from] StatePacketError),
}

/// A state packet writer (bit-packed or entropy-coded).
type WriteFn = fn(
    &mut [u8],
    u64,
    &[QuantizedState],
    &[u32],
    &AckedBaselines,
    &mut Vec<u32>,
    &mut Vec<Encoding>,
) -> Result<usize, crate::sync::codec::state_packet::StatePacketError>;

/// A resting cube whose stamp went out and has not been acked since is sent again once this many steps (half a
/// second at 90 Hz, longer than any round trip the game plays over) have passed since it last went: a resting
/// cube otherwise waits its turn, seconds on a busy link, and the news that its authority changed (a return to
/// default, a claim refused) must not be lost with one packet.
pub const UNACKED_STAMP_RESEND_STEPS: u64 = crate::STEP_HZ as u64 / 2;

/// A resting cube's news of a new resting pose (see `write_packet_for`) that has not been acked goes again once
/// this many steps (0.22 s: a round trip of 100 ms, a send interval at 30 packets a second and room for jitter) have
/// passed since it went: a receiver whose copy rests at the old pose draws it there until the news arrives, and at
/// 25 % loss one try in four is lost.
pub const REST_NEWS_RESEND_STEPS: u64 = 20;

/// A resting cube's news of a new resting pose goes in this many packets in a row before it waits
/// [`REST_NEWS_RESEND_STEPS`] for an ack: with one copy, a lost packet left the receivers drawing the old pose for a
/// resend interval and a round trip (27 steps after the authority rested it, 5 % loss: a settled cube moving on
/// three screens a third of a second after it settled). Two copies a packet apart are both lost once in 400 at 5 %
/// loss, once in 16 at 25 %; the news is a few bytes, once per rest.
pub const REST_NEWS_COPIES: u8 = 2;

/// The most packets in a row a resting cube's news goes in, on the lossiest links.
pub const MAX_REST_NEWS_COPIES: u8 = 6;

/// The share of rest news (per hop) that may be lost in every copy and wait [`REST_NEWS_RESEND_STEPS`] for its
/// resend: a little above what [`REST_NEWS_COPIES`] gives at 5 % loss (1 in 400). Two copies at 25 % loss are all
/// lost once in 16, and a guest hears through the host over two hops: in 600 s of four bots (seed 1) two resting
/// cubes that their new authority had nudged half a millimetre and rested moved on a guest a third of a second
/// after they settled.
pub const REST_NEWS_MISS_SHARE: f64 = 0.003;

/// Copies of a resting cube's news for a link that loses `loss_pct` percent of its packets: the fewest (at least
/// [`REST_NEWS_COPIES`]) whose all being lost is no likelier than [`REST_NEWS_MISS_SHARE`], independent losses
/// assumed. 5 %: 2; 10 %: 3; 25 %: 5.
pub fn rest_news_copies(loss_pct: f64) -> u8 {
    if !loss_pct.is_finite() {
        return REST_NEWS_COPIES;
    }
    let loss = (loss_pct / 100.0).clamp(0.0, 1.0);
    (REST_NEWS_COPIES..MAX_REST_NEWS_COPIES)
        .find(|&n| loss.powi(i32::from(n)) <= REST_NEWS_MISS_SHARE)
        .unwrap_or(MAX_REST_NEWS_COPIES)
}

/// Sender state for one connection. Cube ids are body ids.
#[derive(Debug)]
pub struct Sender {
    acked: AckedBaselines,
    accumulators: Vec<i64>,
    /// Per cube: held, recent collisions and interactions. The game writes it; the sender ticks it each step.
    pub activity: Vec<CubeActivity>,
    states: Vec<QuantizedState>,
    order: Vec<u32>,
    sent: Vec<u32>,
    encodings: Vec<Encoding>,
    sent_states: Vec<(u32, QuantizedState)>,
    /// Updates written so far, per encoding in [`Encoding::ALL`] order.
    pub updates_by_encoding: [u64; 5],
    /// How packets are coded; the receiver must use the same.
    pub coding: PacketCoding,
    /// Also measure demand: what each packet would have carried with no budget (every sendable cube), by
    /// writing it a second time into a scratch buffer. For harnesses; costs a second encoding per packet.
    pub measure_demand: bool,
    /// State bytes written so far, and what they would have been with no budget (when measured).
    pub body_bytes: u64,
    pub demand_bytes: u64,
    demand_buf: Vec<u8>,
    demand_sent: Vec<u32>,
    demand_encodings: Vec<Encoding>,
    /// The step of the last packet: activity (collisions, interactions) is aged by the steps between packets.
    last_step: Option<u64>,
    /// Per cube: the step it last went out and the state it carried then.
    last_sent: Vec<Option<(u64, QuantizedState)>>,
    /// Per cube: in how many packets that last state has gone since it changed (saturating).
    same_sent: Vec<u8>,
    /// Packets in which a resting cube was hurried because the receiver had not acked its stamp (see
    /// [`UNACKED_STAMP_RESEND_STEPS`]; a cube the budget keeps out of one packet is counted again in the next).
    pub stamp_resends: u64,
    /// Packets in which a resting cube was hurried because the receiver still had it resting at another pose (it
    /// never heard the cube wake) or last heard it awake (a cube the budget keeps out of one packet is counted
    /// again in the next).
    pub rest_news_hurries: u64,
    /// Packets in which a moving cube was hurried because its stamp changed since the receiver last heard of it
    /// and it has not gone since (see [`Sender::write_packet_for`]).
    pub claim_hurries: u64,
    /// Packets in a row a resting cube's news goes in ([`rest_news_copies`] of the link's loss; the owner sets it).
    pub rest_news_copies: u8,
}

impl Sender {
    pub fn new(cube_count: usize) -> Self {
        Self {
            acked: AckedBaselines::new(cube_count),
            accumulators: vec![0; cube_count],
            activity: vec![CubeActivity::default(); cube_count],
            states: Vec::with_capacity(cube_count),
            order: Vec::with_capacity(cube_count),
            sent: Vec::with_capacity(cube_count),
            encodings: Vec::with_capacity(cube_count),
            sent_states: Vec::with_capacity(cube_count),
            updates_by_encoding: [0; 5],
            coding: PacketCoding::default(),
            measure_demand: false,
            body_bytes: 0,
            demand_bytes: 0,
            demand_buf: Vec::new(),
            demand_sent: Vec::new(),
            demand_encodings: Vec::new(),
            last_step: None,
            last_sent: vec![None; cube_count],
            same_sent: vec![0; cube_count],
            stamp_resends: 0,
            rest_news_hurries: 0,
            claim_hurries: 0,
            rest_news_copies: REST_NEWS_COPIES,
        }
    }

    /// One step: capture the world's quantized states (the world has just been quantized, so this is exact),
    /// accumulate priorities, and write packet `sequence` for `step` into `buf`. Returns the bytes written. Every
    /// cube goes with the default authority stamp and may be sent (one-way sync).
    pub fn write_packet(
        &mut self,
        world: &World,
        step: u64,
        sequence: u16,
        buf: &mut [u8],
    ) -> Result<usize, SyncError> {
        self.write_packet_for(world, &[], |_| true, step, sequence, buf)
    }

    /// [`Sender::write_packet`] for a peer of a multi-player session: each cube's state carries its stamp from
    /// `stamps` (indexed by cube; default for cubes past its end), and only cubes for which `sendable(id)` holds
    /// may go (the others' accumulators are pinned as a held cube's are: those cubes belong to someone else, or
    /// travel in an avatar).
    pub fn write_packet_for(
        &mut self,
        world: &World,
        stamps: &[AuthorityStamp],
        sendable: impl Fn(u32) -> bool,
        step: u64,
        sequence: u16,
        buf: &mut [u8],
    ) -> Result<usize, SyncError> {
        self.states.clear();
        for i in 0..self.accumulators.len() {
            let mut state = quantize_state(&world.state(BodyId(i as u32))?);
            state.stamp = stamps.get(i).copied().unwrap_or_default();
            self.activity[i].awake = !state.at_rest;
            self.states.push(state);
        }
        accumulate(&mut self.accumulators, &self.activity);
        for (i, acc) in self.accumulators.iter_mut().enumerate() {
            if !sendable(i as u32) {
                *acc = HELD_PRIORITY;
                continue;
            }
            let state = &self.states[i];
            let newest = self.acked.newest(i as u32);
            let unacked = newest.is_none_or(|a| a.stamp != state.stamp);
            let went_long_ago = self.last_sent[i]
                .is_some_and(|(at, sent)| sent.stamp == state.stamp && step >= at + UNACKED_STAMP_RESEND_STEPS);
            // A moving cube under a new stamp (this player took it by touch, or the host relays a claim it just
            // accepted) goes at once: until the claim arrives the host simulates and relays its own version, and
            // the other guests see the cube's motion only when the news gets through. Gently pushed, such a cube
            // has a low priority and waited, at 25 % loss, a quarter of a second for its turn, long enough to
            // come to rest and reach the others as a jump from its old resting pose to its new one. (Only a stamp
            // that changed since the receiver last heard of the cube: at a join nothing is acked yet, and every
            // cube goes in its turn.)
            let claim = newest.is_some_and(|a| a.stamp != state.stamp);
            let new_stamp = self.last_sent[i].is_none_or(|(_, sent)| sent.stamp != state.stamp);
            if !state.at_rest && claim && new_stamp {
                hurry(acc);
                self.claim_hurries += 1;
            }
            if state.at_rest && unacked && went_long_ago {
                hurry(acc);
                self.stamp_resends += 1;
            }
            // The receiver shows the cube resting where it rested before (every state of it awake stayed out of
            // full packets, and it has come to rest somewhere else), or the last it heard was the cube awake, and its
            // copy comes to rest where its own simulation takes it, which at a millimetre or more from the
            // authority's (measured at 25 % loss, a lone cube pushed across the floor) is a settled cube drawn in
            // the wrong place. The resting pose goes at once, or the receiver's copy would be wrong until the
            // cube's turn came (seconds on a busy link); in `rest_news_copies` packets in a row, and again every
            // `REST_NEWS_RESEND_STEPS` until acked.
            let receiver_unsettled =
                newest.is_some_and(|a| !a.at_rest || (a.position, a.rotation) != (state.position, state.rotation));
            let news_went = self.same_sent[i] >= self.rest_news_copies
                && self.last_sent[i].is_some_and(|(at, sent)| sent == *state && step < at + REST_NEWS_RESEND_STEPS);
            if state.at_rest && receiver_unsettled && !news_went {
                hurry(acc);
                self.rest_news_hurries += 1;
            }
        }
        // Aged by the steps since the last packet (one, when a packet goes every step).
        let elapsed = self.last_step.map_or(1, |last| step.saturating_sub(last).max(1));
        self.last_step = Some(step);
        for _ in 0..elapsed.min(u64::from(u16::MAX)) {
            tick_activity(&mut self.activity);
        }
        order_by_priority(&self.accumulators, &mut self.order);
        let write: WriteFn = match self.coding {
            PacketCoding::BitPacked => write_state_packet,
            PacketCoding::Entropy => write_entropy_state_packet,
        };
        let n = write(
            buf,
            step,
            &self.states,
            &self.order,
            &self.acked,
            &mut self.sent,
            &mut self.encodings,
        )?;
        self.body_bytes += n as u64;
        if self.measure_demand {
            self.demand_bytes += self.measure_demand_bytes(step, write)? as u64;
        }
        mark_sent(&mut self.accumulators, &self.sent);
        for &id in &self.sent {
            let (id, state) = (id as usize, self.states[id as usize]);
            let again = self.last_sent[id].is_some_and(|(_, sent)| sent == state);
            self.same_sent[id] = if again { self.same_sent[id].saturating_add(1) } else { 1 };
            self.last_sent[id] = Some((step, state));
        }
        self.sent_states.clear();
        self.sent_states
            .extend(self.sent.iter().map(|&id| (id, self.states[id as usize])));
        self.acked.record_sent(sequence, step, &self.sent_states);
        for &e in &self.encodings {
            self.updates_by_encoding[e as usize] += 1;
        }
        Ok(n)
    }

    /// Bytes the packet would take with every sendable cube in it (no budget), in priority order.
    fn measure_demand_bytes(&mut self, step: u64, write: WriteFn) -> Result<usize, SyncError> {
        /// Room for every cube of the largest scene a packet can name, uncompressed.
        const DEMAND_BUF_BYTES: usize = 1 << 20;
        if self.demand_buf.is_empty() {
            self.demand_buf = vec![0; DEMAND_BUF_BYTES];
            self.demand_sent.reserve(self.accumulators.len());
            self.demand_encodings.reserve(self.accumulators.len());
        }
        Ok(write(
            &mut self.demand_buf,
            step,
            &self.states,
            &self.order,
            &self.acked,
            &mut self.demand_sent,
            &mut self.demand_encodings,
        )?)
    }

    /// Sends `cube` in the next packet (once; then it climbs as its activity says): the host telling a guest at
    /// once that a claim of its was refused, so that it stops simulating and sending a cube that is no longer its.
    pub fn hurry(&mut self, cube: u32) {
        if let Some(acc) = self.accumulators.get_mut(cube as usize) {
            hurry(acc);
        }
    }

    /// Cube `id`'s state as captured for the last packet, and the acked baseline (state, age) it was encoded
    /// against at `step` (until the next ack arrives). For the bandwidth table's recording.
    pub fn captured(&self, id: u32, step: u64) -> Option<(QuantizedState, Option<(QuantizedState, u32)>)> {
        let state = *self.states.get(id as usize)?;
        Some((state, self.acked.baseline(id, step).map(|(b, age)| (*b, age))))
    }

    /// The cubes the last packet carried, in packet order, with their encodings.
    pub fn last_packet(&self) -> (&[u32], &[Encoding]) {
        (&self.sent, &self.encodings)
    }

    /// The receiver reports that it rejected a state packet. The transport acked that packet anyway, so the
    /// states it carried may now serve as baselines the receiver does not have: drop them all and send absolute
    /// until fresh acks arrive. (Rejection never happens between two honest peers; this keeps a corrupt packet
    /// from poisoning every later one.)
    pub fn resync(&mut self) {
        self.acked.forget_all();
    }

    /// The transport reports packet `sequence` received.
    pub fn on_acked(&mut self, sequence: u16) {
        self.acked.on_acked(sequence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;
    use tumble_engine::physics::{BodyDesc, BodyState, WorldConfig};

    /// Moves the twenty cubes somewhere new (touched every step, no prediction saves them: they fill every packet).
    fn shake(world: &mut World, step: u64) {
        for k in 0..20u64 {
            let id = BodyId(k as u32);
            let s = world.state(id).unwrap();
            let r = (k * 7919 + step * 104_729) % 1000;
            let position = Vec3::new(3.0 * k as f32, 20.0 + r as f32 * 0.01, r as f32 * 0.003);
            world.set_state(id, &BodyState { position, ..s }).unwrap();
        }
    }

    /// Twenty cubes in flight and one at rest, cube 20.
    fn busy_world() -> World {
        let mut world = World::new(WorldConfig::default()).unwrap();
        for k in 0..21 {
            let id = world
                .add_body(&BodyDesc {
                    position: Vec3::new(3.0 * k as f32, 50.0, 0.0),
                    ..BodyDesc::default()
                })
                .unwrap();
            let s = world.state(id).unwrap();
            world.set_state(id, &BodyState { at_rest: k == 20, ..s }).unwrap();
        }
        world
    }

    /// `steps` steps of the busy world's link: every step the twenty cubes are touched, `before` changes what that
    /// step is about (the world, the sender, the stamps), a packet goes, and it is acked unless its step is in
    /// `lost`. Returns the steps whose packets carried cube 20, and the sender.
    fn busy_link(
        steps: u64,
        lost: &[u64],
        mut before: impl FnMut(u64, &mut World, &mut Sender, &mut [AuthorityStamp]),
    ) -> (Vec<u64>, Sender) {
        let mut world = busy_world();
        let mut sender = Sender::new(21);
        let mut stamps = vec![AuthorityStamp::default(); 21];
        let mut buf = [0u8; 160];
        let mut went = Vec::new();
        for step in 0..steps {
            for a in &mut sender.activity[..20] {
                a.record_interaction();
            }
            before(step, &mut world, &mut sender, &mut stamps);
            sender
                .write_packet_for(&world, &stamps, |_| true, step, step as u16, &mut buf)
                .unwrap();
            if sender.last_packet().0.contains(&20) {
                went.push(step);
            }
            if !lost.contains(&step) {
                sender.on_acked(step as u16);
            }
            world.step();
            shake(&mut world, step);
        }
        (went, sender)
    }

    /// 300 steps of the busy world's link: the resting cube 20's stamp changes at step 10 and goes at once; the
    /// packets of the steps in `lost` never arrive, every other one is acked. Returns the steps whose packets
    /// carried cube 20, and the sender's count of stamp resends.
    fn resting_cube_sent_at(lost: &[u64]) -> (Vec<u64>, u64) {
        let (went, sender) = busy_link(300, lost, |step, _, sender, stamps| {
            if step == 10 {
                // The cube's authority changes while it rests (a return to default), and the news goes at once.
                stamps[20].authority_seq = 1;
                sender.hurry(20);
            }
        });
        (went, sender.stamp_resends)
    }

    #[test]
    fn a_resting_cubes_new_stamp_goes_again_until_acked() {
        // The news went in a lost packet: sent again half a second later, then acked: once more only.
        let (went, resends) = resting_cube_sent_at(&[10]);
        assert_eq!(went, vec![10, 10 + UNACKED_STAMP_RESEND_STEPS], "{went:?}");
        assert_eq!(resends, 1);
    }

    /// 120 steps of the busy world's link: the resting cube 20 goes at step 0 (hurried), wakes
    /// at step 30 and falls among the twenty touched cubes that fill every packet, and is put to rest where it is
    /// at step `rest_at` (its state unchanged but for that: same stamp); the packets of the steps in `lost` are never
    /// acked. Returns the steps whose packets carried it and the sender's count of rest-news hurries.
    fn woken_cube_sent_at(rest_at: u64, lost: &[u64]) -> (Vec<u64>, u64) {
        let cube = BodyId(20);
        let (went, sender) = busy_link(120, lost, |step, world, sender, _| {
            if step == 0 {
                sender.hurry(20);
            }
            if step == 30 || step == rest_at {
                let s = world.state(cube).unwrap();
                let at_rest = step == rest_at;
                world.set_state(cube, &BodyState { at_rest, ..s }).unwrap();
            }
        });
        (went, sender.rest_news_hurries)
    }

    #[test]
    fn a_cube_that_woke_unseen_and_rested_elsewhere_goes_at_once() {
        // Awake for 20 steps it never wins a place among the touched cubes (it starves only after half a second);
        // resting at a new pose, the receiver would show it jump when its turn came. It goes in the next packet,
        // once.
        let (went, hurries) = woken_cube_sent_at(50, &[]);
        assert_eq!(went, vec![0, 50], "{went:?}");
        assert_eq!(hurries, 1);
    }

    #[test]
    fn a_new_resting_pose_lost_on_the_way_goes_again_until_acked() {
        // The packet with the news is lost: its copy in the next packet gets through, is acked, and it stops.
        let (went, hurries) = woken_cube_sent_at(50, &[50]);
        assert_eq!(went, vec![0, 50, 51], "{went:?}");
        assert_eq!(hurries, 2);
        // Both copies lost: it goes again `REST_NEWS_RESEND_STEPS` after the second, is acked, and stops.
        let (went, hurries) = woken_cube_sent_at(50, &[50, 51]);
        assert_eq!(went, vec![0, 50, 51, 51 + REST_NEWS_RESEND_STEPS], "{went:?}");
        assert_eq!(hurries, 3);
    }

    #[test]
    fn a_lossy_link_sends_a_resting_pose_in_more_packets_in_a_row() {
        assert_eq!(
            [0.0, 5.0, 10.0, 25.0, 50.0, 100.0, f64::NAN].map(rest_news_copies),
            [2, 2, 3, 5, 6, 6, 2]
        );
        // At 25 % loss, five copies: the first four lost, the fifth gets through, is acked, and it stops.
        let (went, sender) = busy_link(120, &[50, 51, 52, 53], |step, world, sender, _| {
            sender.rest_news_copies = rest_news_copies(25.0);
            if step == 0 {
                sender.hurry(20);
            }
            if step == 30 || step == 50 {
                let s = world.state(BodyId(20)).unwrap();
                world
                    .set_state(
                        BodyId(20),
                        &BodyState {
                            at_rest: step == 50,
                            ..s
                        },
                    )
                    .unwrap();
            }
        });
        assert_eq!(went, vec![0, 50, 51, 52, 53, 54], "{went:?}");
        assert_eq!(sender.rest_news_hurries, 5);
    }

    #[test]
    fn a_cube_last_heard_awake_goes_at_once_when_it_comes_to_rest() {
        // Awake from step 30, it starves among the touched cubes and goes awake once it has waited half a second
        // (acked: the receiver's newest state of it is awake, and its copy comes to rest wherever its own
        // simulation takes it). Put to rest at step 100, it goes in that step's packet, once.
        let (went, hurries) = woken_cube_sent_at(100, &[]);
        let awake_sends = went.iter().filter(|&&s| s > 30 && s < 100).count();
        assert!(awake_sends >= 1, "{went:?}");
        assert_eq!(went.last(), Some(&100), "{went:?}");
        assert_eq!(hurries, 1);
    }

    /// 70 steps of the busy world's link: cube 20 goes at step 0 (hurried) and falls, awake, among the twenty
    /// touched cubes that fill every packet, and is claimed (a new stamp) at step 30; every packet is acked.
    /// Returns the steps from 30 on whose packets carried it, and the sender's count of claim hurries.
    fn claimed_moving_cube_sent_at() -> (Vec<u64>, u64) {
        let (went, sender) = busy_link(70, &[], |step, world, sender, stamps| {
            if step == 0 {
                let s = world.state(BodyId(20)).unwrap();
                world.set_state(BodyId(20), &BodyState { at_rest: false, ..s }).unwrap();
                sender.hurry(20);
            }
            if step == 30 {
                stamps[20] = AuthorityStamp {
                    authority: 2,
                    authority_seq: 1,
                    ownership_seq: 0,
                };
            }
        });
        (
            went.into_iter().filter(|&step| step >= 30).collect(),
            sender.claim_hurries,
        )
    }

    #[test]
    fn a_moving_cubes_new_stamp_goes_at_once() {
        // Claimed, it goes in the next packet (without the hurry it waited among the touched cubes until step 47:
        // checked), is acked, and stops.
        let (went, hurries) = claimed_moving_cube_sent_at();
        assert_eq!(went, vec![30], "{went:?}");
        assert_eq!(hurries, 1);
    }

    #[test]
    fn an_acked_stamp_is_not_sent_again() {
        let (went, resends) = resting_cube_sent_at(&[]);
        assert_eq!(went, vec![10], "{went:?}");
        assert_eq!(resends, 0);
    }
}
