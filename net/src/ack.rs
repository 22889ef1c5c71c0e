//! Which of our packets the peer received.
//!
//! Every connected packet carries the newest sequence we received (`ack`) and 32 bits for the ones before it, so
//! each received packet is acknowledged by about 33 packets going the other way. The sender keeps what it sent in a
//! sequence buffer; an ack marks the exact sequence stored there, once, so a packet that never arrived is never
//! reported as acked. A packet that leaves the buffer unacked is reported lost. Received sequences are kept in a
//! window too: a duplicate or a packet older than the window is refused, so the game never sees one twice.

use crate::packet::ConnectedHeader;
use crate::sequence::{sequence_diff, SequenceBuffer};
use std::collections::VecDeque;

/// Sent packets remembered (about 5.7 s at 90 packets per second); a packet unacked when it leaves is lost. Must
/// exceed the longest round trip in packets, or late acks are missed (never false).
pub const SENT_BUFFER_PACKETS: usize = 512;
/// Received sequences remembered for duplicate detection and ack bits.
pub const RECEIVED_BUFFER_PACKETS: usize = 512;
/// Acks pending for the caller, at most; the oldest are dropped past this (a caller that never polls).
pub const MAX_PENDING_EVENTS: usize = 4096;

/// The ack sent before anything was received.
const NOTHING_RECEIVED_ACK: u16 = 32768;

/// What happened to a packet we sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckEvent {
    Acked(u16),
    /// Left the sent window without an ack.
    Lost(u16),
}

#[derive(Debug, Clone, Copy, Default)]
struct SentPacket {
    time_s: f64,
    bytes: u32,
    acked: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct ReceivedPacket {
    time_s: f64,
}

/// A measurement taken while processing an incoming header.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AckSamples {
    /// Round-trip sample of the newest ack, with the peer's holding delay removed, in seconds.
    pub rtt_s: Option<f64>,
    /// Bytes newly acked.
    pub acked_bytes: u64,
    pub acked_packets: u64,
}

/// Ack state for one connection.
#[derive(Debug, Clone)]
pub struct AckTracker {
    next_sequence: u16,
    sent: SequenceBuffer<SentPacket>,
    received: SequenceBuffer<ReceivedPacket>,
    events: VecDeque<AckEvent>,
    pub acked_total: u64,
    pub lost_total: u64,
}

impl Default for AckTracker {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a received sequence was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveRefusal {
    Duplicate,
    TooOld,
}

impl AckTracker {
    pub fn new() -> Self {
        AckTracker {
            next_sequence: 0,
            sent: SequenceBuffer::new(SENT_BUFFER_PACKETS),
            received: SequenceBuffer::new(RECEIVED_BUFFER_PACKETS),
            events: VecDeque::new(),
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
        };
        // Sends are consecutive, so the only eviction is the packet one buffer-length older.
        if let Ok(Some((old_seq, old))) = self.sent.insert(seq, entry) {
            if !old.acked {
                self.lost_total += 1;
                self.push_event(AckEvent::Lost(old_seq));
            }
        }
        seq
    }

    /// The ack fields for an outgoing header at `now_s`.
    pub fn ack_fields(&self, now_s: f64) -> (u16, u32, u16) {
        let Some(ack) = self.received.newest() else {
            // Nothing received yet. The peer's sequences start at 0, so half the space away names nothing it has
            // sent (it would time out long before sending 32768 packets unheard), and no bits are set.
            return (NOTHING_RECEIVED_ACK, 0, 0);
        };
        let mut bits = 0u32;
        for i in 0..32u16 {
            if self.received.exists(ack.wrapping_sub(1 + i)) {
                bits |= 1 << i;
            }
        }
        let held_s = self.received.get(ack).map_or(0.0, |r| (now_s - r.time_s).max(0.0));
        // Rounded down so the corrected sample never undershoots the true round trip.
        let delay = (held_s * 10_000.0).floor().min(f64::from(u16::MAX)) as u16;
        (ack, bits, delay)
    }

    /// Checks a received sequence without recording it (the packet may still fail later checks).
    pub fn check_receive(&self, sequence: u16) -> Result<(), ReceiveRefusal> {
        if self.received.is_too_old(sequence) {
            Err(ReceiveRefusal::TooOld)
        } else if self.received.exists(sequence) {
            Err(ReceiveRefusal::Duplicate)
        } else {
            Ok(())
        }
    }

    /// Records a received sequence; call only for a packet that was accepted.
    pub fn on_receive(&mut self, now_s: f64, sequence: u16) -> Result<(), ReceiveRefusal> {
        self.check_receive(sequence)?;
        let _ = self.received.insert(sequence, ReceivedPacket { time_s: now_s });
        Ok(())
    }

    /// Applies the peer's ack fields: each newly acked packet becomes an `Acked` event.
    pub fn on_acks(&mut self, now_s: f64, header: &ConnectedHeader) -> AckSamples {
        let mut samples = AckSamples::default();
        // Anything acked must be something we sent: an ack ahead of our next sequence is nonsense.
        if sequence_diff(header.ack, self.next_sequence) >= 0 {
            return samples;
        }
        for i in 0..33u16 {
            let is_acked = i == 0 || header.ack_bits & (1 << (i - 1)) != 0;
            if !is_acked {
                continue;
            }
            let seq = header.ack.wrapping_sub(i);
            let Some(sent) = self.sent.get_mut(seq) else { continue };
            if sent.acked {
                continue;
            }
            sent.acked = true;
            samples.acked_bytes += u64::from(sent.bytes);
            samples.acked_packets += 1;
            if i == 0 {
                let held_s = f64::from(header.ack_delay_100us) / 10_000.0;
                samples.rtt_s = Some((now_s - sent.time_s - held_s).max(0.0));
            }
            self.acked_total += 1;
            self.push_event(AckEvent::Acked(seq));
        }
        samples
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_from(rx: &AckTracker, now: f64) -> ConnectedHeader {
        let (ack, ack_bits, ack_delay_100us) = rx.ack_fields(now);
        ConnectedHeader {
            ack,
            ack_bits,
            ack_delay_100us,
            ..Default::default()
        }
    }

    #[test]
    fn ack_bits_name_exactly_what_arrived_across_the_wrap() {
        let mut tx = AckTracker::new();
        tx.next_sequence = 65520;
        let mut rx = AckTracker::new();
        let mut delivered = Vec::new();
        for k in 0..40u32 {
            let seq = tx.on_send(0.0, 100);
            // Drop every third packet.
            if k % 3 != 1 {
                rx.on_receive(0.0, seq).unwrap();
                delivered.push(seq);
            }
        }
        let h = header_from(&rx, 0.0);
        assert_eq!(h.ack, *delivered.last().unwrap());
        tx.on_acks(0.01, &h);
        let mut acked = Vec::new();
        while let Some(e) = tx.pop_event() {
            match e {
                AckEvent::Acked(s) => acked.push(s),
                AckEvent::Lost(_) => panic!("nothing left the window"),
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
        rx.on_receive(0.0, 5).unwrap();
        assert_eq!(rx.on_receive(0.0, 5), Err(ReceiveRefusal::Duplicate));
        rx.on_receive(0.0, 5 + RECEIVED_BUFFER_PACKETS as u16).unwrap();
        assert_eq!(rx.on_receive(0.0, 5), Err(ReceiveRefusal::TooOld));
        // Reordered but within the window: accepted once.
        rx.on_receive(0.0, 100).unwrap();
        assert_eq!(rx.on_receive(0.0, 100), Err(ReceiveRefusal::Duplicate));
    }

    #[test]
    fn unacked_packets_leaving_the_window_are_lost_and_rtt_excludes_hold_time() {
        let mut tx = AckTracker::new();
        let mut rx = AckTracker::new();
        let first = tx.on_send(1.0, 10);
        rx.on_receive(1.05, first).unwrap();
        // The receiver holds the ack 8 ms before replying; the sample is the 100 ms path only.
        let h = header_from(&rx, 1.058);
        let s = tx.on_acks(1.108, &h);
        assert!((s.rtt_s.unwrap() - 0.1).abs() < 2e-4, "{:?}", s.rtt_s);
        assert_eq!(tx.pop_event(), Some(AckEvent::Acked(first)));
        for _ in 0..SENT_BUFFER_PACKETS + 1 {
            tx.on_send(2.0, 10);
        }
        // Sequence 1 was never acked and has now left the window.
        assert_eq!(tx.pop_event(), Some(AckEvent::Lost(1)));
        assert_eq!(tx.lost_total, 1);
    }

    #[test]
    fn acks_for_unsent_sequences_are_ignored() {
        let mut tx = AckTracker::new();
        tx.on_send(0.0, 1);
        let h = ConnectedHeader {
            ack: 500,
            ack_bits: u32::MAX,
            ..Default::default()
        };
        assert_eq!(tx.on_acks(0.0, &h).acked_packets, 0);
        assert_eq!(tx.pop_event(), None);
    }
}
