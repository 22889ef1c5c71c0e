//! How far apart two peers' step counters are: each peer counts its own steps from when it started, so a message's
//! age is not simply this peer's step less the sender's. Each side keeps the smallest difference it has seen on a
//! connection (this step less the sender step of a message arriving: the offset of the counters plus the fastest
//! trip) and tells the other; half the difference of the two floors is the offset, the fastest trips cancelling
//! where the link is as fast both ways (as NTP reads a clock from four timestamps). A floor is the smallest of the
//! last two windows, so that it follows a counter that slipped (a step dropped) within a window or two.

/// Steps a floor window lasts (10 s at 90 Hz).
const WINDOW_STEPS: u64 = 900;

/// One connection's counter floors: this side's, and the other side's as it last said.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepClock {
    /// The smallest lag of this window and of the last one (this step − sender step, steps).
    current: Option<i32>,
    previous: Option<i32>,
    window_started: u64,
    /// The other side's floor for the messages it receives from us, from its newest header that carried it.
    theirs: Option<i32>,
}

impl StepClock {
    /// A message of sender step `sender_step` arrived at this peer's step `step`; its lag (wrap-safe), which
    /// [`StepClock::age`] turns into an age.
    pub fn arrived(&mut self, step: u64, sender_step: u32) -> i32 {
        if step >= self.window_started + WINDOW_STEPS {
            self.previous = self.current.take();
            self.window_started = step;
        }
        let lag = (step as u32).wrapping_sub(sender_step) as i32;
        self.current = Some(self.current.map_or(lag, |c| c.min(lag)));
        lag
    }

    /// This side's floor, to tell the other.
    pub fn floor(&self) -> Option<i32> {
        match (self.current, self.previous) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The other side said its floor.
    pub fn heard(&mut self, theirs: i32) {
        self.theirs = Some(theirs);
    }

    /// How many of the sender's steps ago a message of lag `lag` was sent: the lag less the counters' offset.
    /// `None` until both floors are known.
    pub fn age(&self, lag: i32) -> Option<u32> {
        let (ours, theirs) = (self.floor()?, self.theirs?);
        let offset = (i64::from(ours) - i64::from(theirs)).div_euclid(2);
        u32::try_from(i64::from(lag) - offset).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two counters 1,000 steps apart (B started 1,000 steps after A), trips of 4 to 7 steps each way.
    #[test]
    fn the_offset_of_two_counters_is_read_from_the_floors_and_ages_come_out_true() {
        let (mut a, mut b) = (StepClock::default(), StepClock::default());
        let started_apart = 1000u64;
        for (k, trip) in [4u64, 6, 5, 7, 4, 5].iter().enumerate() {
            let sent_by_a = 2000 + 10 * k as u64;
            b.arrived(sent_by_a + trip - started_apart, sent_by_a as u32);
            let sent_by_b = 1000 + 10 * k as u64;
            a.arrived(sent_by_b + started_apart + trip, sent_by_b as u32);
        }
        a.heard(b.floor().unwrap());
        b.heard(a.floor().unwrap());
        // A message B sent at its step 1,500 reaches A 6 steps later: A's step 2,506.
        let lag = a.arrived(2506, 1500);
        assert_eq!(a.age(lag), Some(6));
        let lag = b.arrived(2503 - started_apart, 2498);
        assert_eq!(b.age(lag), Some(5));
        // Not before the other side said its floor.
        assert_eq!(StepClock::default().age(3), None);
    }

    #[test]
    fn a_floor_follows_a_counter_that_slipped_within_two_windows() {
        let mut c = StepClock::default();
        c.arrived(100, 96);
        assert_eq!(c.floor(), Some(4));
        // The sender's counter dropped 10 steps behind: lags of 14 from then on.
        for step in (200..200 + 2 * WINDOW_STEPS + 10).step_by(10) {
            c.arrived(step, (step - 14) as u32);
        }
        assert_eq!(c.floor(), Some(14));
    }
}
