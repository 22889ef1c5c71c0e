//! Desync detection: every [`CHECKSUM_EVERY_STEPS`] steps each side takes the game's checksum (world bits and
//! colours) and sends it, folded to 32 bits, until the other side acks it; each side compares its own with the
//! other's for the same exchange as soon as it has both, and counts every exchange that differs. Lockstep never
//! corrects a desync — the two worlds go their own ways from then on — so it must be reported, never silent.
//!
//! The ack needs no field of its own: the checksum rides in every packet from the one that first carries input
//! step `f` (the newest, not yet sent, when it was taken) until the other side acks input `f`; input `f` reaches
//! the other side only in such a packet, so its ack means the checksum arrived. With no unsent input (the game
//! stopped sampling) nothing can confirm it and it is sent until a newer one replaces it. Only the newest checksum
//! is sent: an older one still unacked is dropped (its exchange goes uncompared; the next one still tells).

use crate::inputs::packet::{unwrap_step, ChecksumSample};

/// Steps between checksums (1 s at 90 Hz).
pub const CHECKSUM_EVERY_STEPS: u64 = tumble_game::STEP_HZ as u64;
/// Exchanges remembered per side, to compare whichever side is ahead (64 s at one a second).
const RING: usize = 64;

/// One exchange's checksum, or nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    exchange: u64,
    value: u32,
    present: bool,
    compared: bool,
}

#[derive(Clone, Debug)]
pub struct Checksums {
    every: u64,
    own: [Slot; RING],
    remote: [Slot; RING],
    /// Newest own exchange taken.
    newest_own: u64,
    /// The own checksum being sent, and the input step whose ack confirms it (none: sent until replaced).
    pending: Option<(ChecksumSample, Option<u64>)>,
    pub compared: u64,
    pub mismatches: u64,
    /// The step after which the first differing checksums were taken.
    pub first_mismatch_step: Option<u64>,
}

impl Checksums {
    pub fn new(every_steps: u64) -> Self {
        Self {
            every: every_steps.max(1),
            own: [Slot::default(); RING],
            remote: [Slot::default(); RING],
            newest_own: 0,
            pending: None,
            compared: 0,
            mismatches: 0,
            first_mismatch_step: None,
        }
    }

    /// After step `step` ran (0-based): takes the checksum when an exchange falls there. `checksum` is called
    /// only then; `unsent_input` is this side's newest input step if no packet has carried it yet: its ack will
    /// confirm delivery.
    pub fn after_step(&mut self, step: u64, unsent_input: Option<u64>, checksum: impl FnOnce() -> u64) {
        if !(step + 1).is_multiple_of(self.every) {
            return;
        }
        let exchange = (step + 1) / self.every;
        let full = checksum();
        let value = (full ^ (full >> 32)) as u32;
        self.newest_own = exchange;
        self.own[exchange as usize % RING] = Slot {
            exchange,
            value,
            present: true,
            compared: false,
        };
        let sample = ChecksumSample {
            exchange: exchange as u16,
            value,
        };
        self.pending = Some((sample, unsent_input));
        self.compare(exchange);
    }

    /// What the next packet carries.
    pub fn to_send(&self) -> Option<ChecksumSample> {
        self.pending.map(|(sample, _)| sample)
    }

    /// The other side acked this side's inputs up to `step`.
    pub fn on_input_ack(&mut self, step: u64) {
        if self
            .pending
            .is_some_and(|(_, confirm)| confirm.is_some_and(|c| step >= c))
        {
            self.pending = None;
        }
    }

    /// The other side's checksum arrived (maybe again).
    pub fn on_remote(&mut self, sample: ChecksumSample) {
        let Some(exchange) = unwrap_step(sample.exchange, self.newest_own) else {
            return;
        };
        if exchange == 0 {
            return;
        }
        let slot = &mut self.remote[exchange as usize % RING];
        if slot.present && slot.exchange == exchange {
            return;
        }
        *slot = Slot {
            exchange,
            value: sample.value,
            present: true,
            compared: false,
        };
        self.compare(exchange);
    }

    fn compare(&mut self, exchange: u64) {
        let i = exchange as usize % RING;
        let (own, remote) = (self.own[i], self.remote[i]);
        let both = own.present && remote.present && own.exchange == exchange && remote.exchange == exchange;
        if !both || own.compared {
            return;
        }
        self.own[i].compared = true;
        self.compared += 1;
        if own.value != remote.value {
            self.mismatches += 1;
            let step = exchange * self.every - 1;
            self.first_mismatch_step.get_or_insert(step);
            tracing::error!(
                exchange,
                step,
                own = own.value,
                remote = remote.value,
                "lockstep desync: checksums differ"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_checksums_compare_whichever_side_is_first_and_differences_are_counted_once() {
        let mut c = Checksums::new(10);
        c.after_step(8, Some(8), || unreachable!("no exchange after step 8"));
        c.after_step(9, Some(12), || 0xAAAA_0000_0000_BBBB);
        let mine = c.to_send().unwrap();
        assert_eq!(mine.exchange, 1);
        assert_eq!(mine.value, 0xAAAA_BBBB);
        c.on_input_ack(11);
        assert!(c.to_send().is_some(), "not acked yet");
        c.on_input_ack(12);
        assert!(c.to_send().is_none());
        // The other side's exchange 1 agrees; its exchange 2 arrives before ours and differs.
        c.on_remote(mine);
        assert_eq!((c.compared, c.mismatches), (1, 0));
        c.on_remote(ChecksumSample { exchange: 2, value: 5 });
        assert_eq!(c.compared, 1, "ours is not taken yet");
        c.after_step(19, None, || 6);
        c.on_remote(ChecksumSample { exchange: 2, value: 5 });
        assert_eq!((c.compared, c.mismatches, c.first_mismatch_step), (2, 1, Some(19)));
        c.on_input_ack(u64::MAX);
        assert!(
            c.to_send().is_some(),
            "with no unsent input to confirm it, it is sent until replaced"
        );
    }
}
