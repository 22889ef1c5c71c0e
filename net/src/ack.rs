//! Which of our packets the peer received.
//!
//! Every connected packet carries the newest sequence we received (`ack`) and 32 bits for the ones before it, so
//! each received packet is acknowledged by about 33 packets going the other way. The sender keeps what it sent in a
//! sequence buffer; an ack marks the exact sequence stored there, once, so a packet that never arrived is never
//! reported as acked. Received sequences are kept in a window too: a duplicate or a packet older than the window
//! is refused, so the game never sees one twice.
//!
//! Only what the game accepted is acked: a packet is recorded as received when it arrives (for the duplicate
//! check) and joins the ack fields, and is echoed for RTT, only once the game calls `on_accept` for it. A packet
//! the game refused looks lost to its sender, who then never uses it as a baseline.
//!
//! Loss is a judgement, acks are facts: a packet is judged lost once the peer's acks have moved
//! `LOSS_DECISION_PACKETS` past it without it (or when it leaves the sent buffer); should an ack for it still
//! arrive, `Acked` follows the `Lost` and the loss count is taken back.
//!
//! RTT: each received packet is echoed once, in arrival order, with the time it was held (see `ConnectedHeader`).

use crate::packet::{ConnectedHeader, NO_ECHO};
use crate::sequence::{sequence_diff, SequenceBuffer};
use std::collections::VecDeque;

/// Sent packets remembered (about 5.7 s at 90 packets per second). Must exceed the longest round trip in packets,
/// or late acks are missed (never false).
pub const SENT_BUFFER_PACKETS: usize = 512;
/// Received sequences remembered for duplicate detection and ack bits.
pub const RECEIVED_BUFFER_PACKETS: usize = 512;
/// A packet is judged lost when the peer's newest ack is this many packets past it: the 33 an ack header can cover,
/// plus room for the peer's older headers (which might still ack it) to arrive reordered, about 0.7 s at 90 Hz.
pub const LOSS_DECISION_PACKETS: i32 = 96;
/// Acks pending for the caller, at most; the oldest are dropped past this (a caller that never polls).
pub const MAX_PENDING_EVENTS: usize = 4096;
/// Received packets waiting to be echoed; more than this between two sends and the oldest are skipped.
const MAX_PENDING_ECHOES: usize = 16;
/// The ack sent before anything was received. The peer's sequences start at 0, so half the space away names
/// nothing it has sent (it would time out long before sending 32768 packets unheard), and no bits are set.
const NOTHING_RECEIVED_ACK: u16 = 32768;

/// What happened to a packet we sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckEvent {
    Acked(u16),
    /// Judged lost (no ack while the peer's acks moved well past it); an `Acked` may still follow.
    Lost(u16),
}

#[derive(Debug, Clone, Copy, Default)]
struct SentPacket {
    time_s: f64,
    bytes: u32,
    acked: bool,
    lost: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct ReceivedPacket {
    arrived_s: f64,
    accepted: bool,
}

/// Measurements taken while processing an incoming header.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AckSamples {
    /// Round-trip sample from the echo, the peer's holding time removed (seconds).
    pub rtt_s: Option<f64>,
    /// Bytes newly acked.
    pub acked_bytes: u64,
    pub acked_packets: u64,
    /// Packets newly judged lost, and lost packets acked after all.
    pub lost_packets: u64,
    pub unlost_packets: u64,
}

/// Why a received sequence was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveRefusal {
    Duplicate,
    TooOld,
}

/// Ack state for one connection.
#[derive(Debug, Clone)]
pub struct AckTracker {
    next_sequence: u16,
    sent: SequenceBuffer<SentPacket>,
    received: SequenceBuffer<ReceivedPacket>,
    /// The received packets the game accepted: what the ack fields name.
    accepted: SequenceBuffer<()>,
    /// Oldest sent sequence not yet acked or judged lost (the loss scan resumes here).
    unresolved: u16,
    newest_ack: Option<u16>,
    echoes: VecDeque<(u16, f64)>,
    events: VecDeque<AckEvent>,
    pub acked_total: u64,
    pub lost_total: u64,
}

impl Default for AckTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl AckTracker {
    pub fn new() -> Self {
        AckTracker {
            next_sequence: 0,
            sent: SequenceBuffer::new(SENT_BUFFER_PACKETS),
            received: SequenceBuffer::new(RECEIVED_BUFFER_PACKETS),
            accepted: SequenceBuffer::new(RECEIVED_BUFFER_PACKETS),
            unresolved: 0,
            newest_ack: None,
            // Both queues are bounded; sized to their bounds once, so a burst of acks (a late packet's ack fields
            // resolving many sequences at once) never grows them while running.
            echoes: VecDeque::with_capacity(MAX_PENDING_ECHOES),
            events: VecDeque::with_capacity(MAX_PENDING_EVENTS),
            acked_total: 0,
            lost_total: 0,
        }
    }

    pub fn next_sequence(&self) -> u16 {
        self.next_sequence
    }

    /// Records a packet about to be sent and returns its sequence.
    pub fn on_send(&mut self, now_s: f64, bytes: usize) -> u16 {
        let seq = self.next_sequence;
        self.next_sequence = seq.wrapping_add(1);
        let entry = SentPacket {
            time_s: now_s,
            bytes: bytes as u32,
            acked: false,
            lost: false,
        };
        // Sends are consecutive, so the only eviction is the packet one buffer-length older.
        if let Ok(Some((old_seq, old))) = self.sent.insert(seq, entry) {
            if !old.acked && !old.lost {
                self.lost_total += 1;
                self.push_event(AckEvent::Lost(old_seq));
            }
        }
        if sequence_diff(seq, self.unresolved) >= SENT_BUFFER_PACKETS as i32 {
            self.unresolved = seq.wrapping_sub(SENT_BUFFER_PACKETS as u16 - 1);
        }
        seq
    }

    /// The ack and echo fields for an outgoing header at `now_s` (sequence and session key left to the caller).
    pub fn ack_fields(&mut self, now_s: f64) -> ConnectedHeader {
        let mut h = ConnectedHeader {
            ack: NOTHING_RECEIVED_ACK,
            echo_delay_100us: NO_ECHO,
            ..Default::default()
        };
        if let Some(ack) = self.accepted.newest() {
            h.ack = ack;
            for i in 0..32u16 {
                if self.accepted.exists(ack.wrapping_sub(1 + i)) {
                    h.ack_bits |= 1 << i;
                }
            }
        }
        if let Some((seq, arrived_s)) = self.echoes.pop_front() {
            // Rounded down so the corrected sample never undershoots the true round trip.
            let held = ((now_s - arrived_s).max(0.0) * 10_000.0).floor();
            h.echo_sequence = seq;
            h.echo_delay_100us = held.min(f64::from(NO_ECHO - 1)) as u16;
        }
        h
    }

    /// Checks a received sequence without recording it.
    pub fn check_receive(&self, sequence: u16) -> Result<(), ReceiveRefusal> {
        if self.received.is_too_old(sequence) {
            Err(ReceiveRefusal::TooOld)
        } else if self.received.exists(sequence) {
            Err(ReceiveRefusal::Duplicate)
        } else {
            Ok(())
        }
    }

    /// Records a received sequence (call only for a packet that authenticated); it is not acked until
    /// `on_accept`.
    pub fn on_receive(&mut self, now_s: f64, sequence: u16) -> Result<(), ReceiveRefusal> {
        self.check_receive(sequence)?;
        let packet = ReceivedPacket {
            arrived_s: now_s,
            accepted: false,
        };
        let _ = self.received.insert(sequence, packet);
        Ok(())
    }

    /// The game accepted `sequence`: it is acked from the next header on and echoed once. False when it was not
    /// received, was accepted already, or has left the window.
    pub fn on_accept(&mut self, sequence: u16) -> bool {
        let Some(packet) = self.received.get_mut(sequence) else {
            return false;
        };
        if packet.accepted {
            return false;
        }
        packet.accepted = true;
        let arrived_s = packet.arrived_s;
        if self.accepted.insert(sequence, ()).is_err() {
            return false;
        }
        if self.echoes.len() >= MAX_PENDING_ECHOES {
            self.echoes.pop_front();
        }
        self.echoes.push_back((sequence, arrived_s));
        true
    }

    /// Applies the peer's ack and echo fields: newly acked packets become `Acked` events, packets the acks have
    /// moved well past become `Lost`.
    pub fn on_acks(&mut self, now_s: f64, header: &ConnectedHeader) -> AckSamples {
        let mut samples = AckSamples::default();
        // The ack must name a packet still in our sent window: an ack ahead of our next sequence, or the peer's
        // "nothing received" value before we have sent half the sequence space, names nothing we sent.
        let behind = sequence_diff(self.next_sequence, header.ack);
        if (1..=SENT_BUFFER_PACKETS as i32).contains(&behind) {
            self.apply_acks(header, &mut samples);
        }
        if header.echo_delay_100us != NO_ECHO && sequence_diff(header.echo_sequence, self.next_sequence) < 0 {
            if let Some(sent) = self.sent.get(header.echo_sequence) {
                let held_s = f64::from(header.echo_delay_100us) / 10_000.0;
                samples.rtt_s = Some((now_s - sent.time_s - held_s).max(0.0));
            }
        }
        self.judge_losses(&mut samples);
        samples
    }

    fn apply_acks(&mut self, header: &ConnectedHeader, samples: &mut AckSamples) {
        if self.newest_ack.is_none_or(|n| sequence_diff(header.ack, n) > 0) {
            self.newest_ack = Some(header.ack);
        }
        for i in 0..33u16 {
            if i > 0 && header.ack_bits & (1 << (i - 1)) == 0 {
                continue;
            }
            let seq = header.ack.wrapping_sub(i);
            let Some(sent) = self.sent.get_mut(seq) else { continue };
            if sent.acked {
                continue;
            }
            sent.acked = true;
            if sent.lost {
                sent.lost = false;
                self.lost_total -= 1;
                samples.unlost_packets += 1;
            }
            samples.acked_bytes += u64::from(sent.bytes);
            samples.acked_packets += 1;
            self.acked_total += 1;
            self.push_event(AckEvent::Acked(seq));
        }
    }

    /// Walks forward from the oldest unresolved packet to `LOSS_DECISION_PACKETS` behind the newest ack.
    fn judge_losses(&mut self, samples: &mut AckSamples) {
        let Some(newest) = self.newest_ack else { return };
        while sequence_diff(newest, self.unresolved) > LOSS_DECISION_PACKETS
            && sequence_diff(self.next_sequence, self.unresolved) > 0
        {
            let seq = self.unresolved;
            if let Some(sent) = self.sent.get_mut(seq) {
                if !sent.acked && !sent.lost {
                    sent.lost = true;
                    self.lost_total += 1;
                    samples.lost_packets += 1;
                    self.push_event(AckEvent::Lost(seq));
                }
            }
            self.unresolved = seq.wrapping_add(1);
        }
    }

    fn push_event(&mut self, event: AckEvent) {
        if self.events.len() >= MAX_PENDING_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    pub fn pop_event(&mut self) -> Option<AckEvent> {
        self.events.pop_front()
    }

    /// Whether `sequence` was received (within the window).
    pub fn was_received(&self, sequence: u16) -> bool {
        self.received.exists(sequence)
    }

    /// Whether `sequence` was received and accepted (within the window).
    pub fn was_accepted(&self, sequence: u16) -> bool {
        self.received.get(sequence).is_some_and(|p| p.accepted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl AckTracker {
        fn deliver(&mut self, now_s: f64, sequence: u16) -> Result<(), ReceiveRefusal> {
            self.on_receive(now_s, sequence)?;
            assert!(self.on_accept(sequence));
            Ok(())
        }
    }

    #[test]
    fn only_accepted_packets_are_acked_and_echoed() {
        let mut tx = AckTracker::new();
        let mut rx = AckTracker::new();
        let (a, b, c) = (tx.on_send(0.0, 10), tx.on_send(0.0, 10), tx.on_send(0.0, 10));
        for s in [a, b, c] {
            rx.on_receive(0.01, s).unwrap();
        }
        // Nothing accepted yet: the ack fields name nothing, and b stays unacked after the game refuses it.
        assert_eq!(rx.ack_fields(0.02).ack, NOTHING_RECEIVED_ACK);
        assert!(rx.on_accept(a) && rx.on_accept(c) && !rx.on_accept(c));
        assert_eq!(rx.on_receive(0.02, b), Err(ReceiveRefusal::Duplicate));
        let h = rx.ack_fields(0.03);
        assert_eq!((h.ack, h.ack_bits & 0b11), (c, 0b10));
        assert_eq!(h.echo_sequence, a);
        tx.on_acks(0.04, &h);
        let acked: Vec<_> = std::iter::from_fn(|| tx.pop_event()).collect();
        assert_eq!(acked, vec![AckEvent::Acked(c), AckEvent::Acked(a)]);
        assert!(rx.was_accepted(a) && !rx.was_accepted(b) && rx.was_received(b));
    }

    #[test]
    fn ack_bits_name_exactly_what_arrived_across_the_wrap() {
        let mut tx = AckTracker::new();
        tx.next_sequence = 65520;
        tx.unresolved = 65520;
        let mut rx = AckTracker::new();
        let mut delivered = Vec::new();
        for k in 0..40u32 {
            let seq = tx.on_send(0.0, 100);
            // Drop every third packet.
            if k % 3 != 1 {
                rx.deliver(0.0, seq).unwrap();
                delivered.push(seq);
            }
        }
        let h = rx.ack_fields(0.0);
        assert_eq!(h.ack, *delivered.last().unwrap());
        tx.on_acks(0.01, &h);
        let mut acked = Vec::new();
        while let Some(e) = tx.pop_event() {
            match e {
                AckEvent::Acked(s) => acked.push(s),
                AckEvent::Lost(s) => panic!("{s} judged lost too early"),
            }
        }
        // Exactly the delivered packets within 33 of the newest, nothing else.
        for s in &acked {
            assert!(delivered.contains(s), "false ack of {s}");
        }
        let in_window = delivered.iter().filter(|&&s| sequence_diff(h.ack, s) <= 32).count();
        assert_eq!(acked.len(), in_window);
        // Applying the same header again acks nothing new.
        assert_eq!(tx.on_acks(0.02, &h).acked_packets, 0);
    }

    #[test]
    fn duplicates_and_stale_packets_are_refused() {
        let mut rx = AckTracker::new();
        rx.deliver(0.0, 5).unwrap();
        assert_eq!(rx.deliver(0.0, 5), Err(ReceiveRefusal::Duplicate));
        rx.deliver(0.0, 5 + RECEIVED_BUFFER_PACKETS as u16).unwrap();
        assert_eq!(rx.deliver(0.0, 5), Err(ReceiveRefusal::TooOld));
        // Reordered but within the window: accepted once.
        rx.deliver(0.0, 100).unwrap();
        assert_eq!(rx.deliver(0.0, 100), Err(ReceiveRefusal::Duplicate));
    }

    #[test]
    fn rtt_sample_excludes_the_hold_time() {
        let mut tx = AckTracker::new();
        let mut rx = AckTracker::new();
        let first = tx.on_send(1.0, 10);
        rx.deliver(1.05, first).unwrap();
        // The receiver holds the packet 8 ms before replying; the sample is the 100 ms path only.
        let h = rx.ack_fields(1.058);
        assert_eq!(h.echo_sequence, first);
        let s = tx.on_acks(1.108, &h);
        assert!((s.rtt_s.unwrap() - 0.1).abs() < 2e-4, "{:?}", s.rtt_s);
        assert_eq!(tx.pop_event(), Some(AckEvent::Acked(first)));
        // Each arrival is echoed once.
        assert_eq!(rx.ack_fields(1.06).echo_delay_100us, NO_ECHO);
    }

    #[test]
    fn losses_are_judged_once_acks_move_past_and_taken_back_by_a_late_ack() {
        let mut tx = AckTracker::new();
        let mut rx = AckTracker::new();
        for _ in 0..200 {
            let seq = tx.on_send(0.0, 10);
            if seq != 3 {
                rx.deliver(0.0, seq).unwrap();
            }
        }
        let late = ConnectedHeader {
            ack: 3,
            ..Default::default()
        };
        let s = tx.on_acks(0.1, &rx.ack_fields(0.1));
        assert_eq!(s.lost_packets, 103);
        let events: Vec<_> = std::iter::from_fn(|| tx.pop_event()).collect();
        assert!(events.contains(&AckEvent::Lost(3)));
        assert!(!events.contains(&AckEvent::Acked(3)));
        // Sequences 0..=102 are resolved; all but 3 were never acked by that header (outside its 33), so lost too.
        assert_eq!(tx.lost_total, 103);
        // A late header acking 3 (say the packet was received after all) turns the judgement around.
        let s = tx.on_acks(0.2, &late);
        assert_eq!((s.acked_packets, s.unlost_packets), (1, 1));
        assert_eq!(tx.lost_total, 102);
        assert_eq!(tx.pop_event(), Some(AckEvent::Acked(3)));
    }

    #[test]
    fn the_nothing_received_ack_moves_nothing() {
        let mut tx = AckTracker::new();
        let rx = AckTracker::new();
        for n in 0..200 {
            let h = rx.clone().ack_fields(0.0);
            assert_eq!(tx.on_acks(0.0, &h), AckSamples::default(), "after {n} sends");
            tx.on_send(0.0, 10);
        }
        assert_eq!(tx.newest_ack, None);
        assert_eq!(tx.pop_event(), None);
    }

    #[test]
    fn packets_leaving_the_window_unresolved_are_lost() {
        let mut tx = AckTracker::new();
        for _ in 0..SENT_BUFFER_PACKETS + 1 {
            tx.on_send(2.0, 10);
        }
        assert_eq!(tx.pop_event(), Some(AckEvent::Lost(0)));
        assert_eq!(tx.lost_total, 1);
    }

    #[test]
    fn acks_for_unsent_sequences_are_ignored() {
        let mut tx = AckTracker::new();
        tx.on_send(0.0, 1);
        let h = ConnectedHeader {
            ack: 500,
            ack_bits: u32::MAX,
            echo_delay_100us: NO_ECHO,
            ..Default::default()
        };
        assert_eq!(tx.on_acks(0.0, &h).acked_packets, 0);
        assert_eq!(tx.pop_event(), None);
    }
}
