//! The priority accumulator: which cubes go into the next state packet to one peer. Every step each cube adds its
//! priority factor to its accumulator (one per cube per connection); a packet takes cubes in order of accumulated
//! priority until its bit budget is spent, and sent cubes start again from zero. A cube that is never urgent still
//! climbs, so everything is resent eventually; a boosted cube (just thrown, or in a hard collision) jumps the queue.
//!
//! The touched factor is a million times the base (the reference's numbers), so while more cubes are touched than a
//! packet holds, a cube below that class would wait until every player let go: an awake cube that has waited half a
//! second ([`starving`]) climbs as a touched cube does from then on and takes its turn among them.
//!
//! Resting cubes keep the base factor: the reference found that sending them less made the two simulations drift
//! apart where other cubes hit them. Held cubes get -1 and are never sent as state (they travel with the avatar).
//!
//! Accumulators are integers and the order breaks ties by cube id, so the choice depends on nothing but the inputs.

/// Steps per second of the simulation (and of the activity timers below); the predictor's, which checks it
/// against the engine's step.
use crate::STEP_HZ;
/// Factor of every cube not held: resting cubes included, so they are never starved.
pub const BASE_PRIORITY: i64 = 1;
/// Factor of an awake cube (moving, or settling): sent more often than resting ones, so that a cube bumped and
/// resettled by the authority reaches the other side awake at least once, never as a resting cube that jumps.
pub const AWAKE_PRIORITY: i64 = 3;
/// Factor of a cube in a collision faster than [`HIGH_ENERGY_COLLISION_SPEED_M_S`] within the last
/// [`COLLISION_BOOST_STEPS`]: hard impacts are where two simulations diverge most.
pub const COLLISION_PRIORITY: i64 = 10;
/// Factor of a cube a player touched or threw within the last [`INTERACTION_BOOST_STEPS`]: what the players look at.
pub const INTERACTION_PRIORITY: i64 = 1_000_000;
/// The accumulator of a cube to send in the next packet once ([`crate::sync::link::sender::Sender::hurry`]): a
/// second of a touched cube's climb, so it goes before every cube but those starved longer than that.
pub const HURRY_PRIORITY: i64 = INTERACTION_PRIORITY * STEP_HZ as i64;
/// A held cube's accumulator: never sent.
pub const HELD_PRIORITY: i64 = -1;
/// Relative normal speed (m/s) above which a collision boosts both cubes.
pub const HIGH_ENERGY_COLLISION_SPEED_M_S: f32 = 5.0;
/// A quarter second at 90 Hz (rounded up).
pub const COLLISION_BOOST_STEPS: u32 = STEP_HZ.div_ceil(4);
/// One second at 90 Hz.
pub const INTERACTION_BOOST_STEPS: u32 = STEP_HZ;
/// An awake cube left unsent this long (steps; half a second at 90 Hz) is starving: more cubes are being touched
/// than the budget carries (a katamari ball per player, relayed by the host), and every packet goes to them. It
/// then climbs as fast as a touched cube, so it takes its turn among them instead of waiting until every player
/// lets go while the other side's copy drifts metres away.
pub const STARVED_AWAKE_STEPS: i64 = STEP_HZ as i64 / 2;

/// What the authority side knows about one cube's recent history, kept per cube (shared by all connections).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubeActivity {
    /// In a player's hand this step.
    pub held: bool,
    /// Not at rest this step (the sender sets it from the captured state).
    pub awake: bool,
    /// Steps since the last high-energy collision (saturates; `u32::MAX` means never).
    pub steps_since_collision: u32,
    /// Steps since a player last touched or threw the cube (saturates; `u32::MAX` means never).
    pub steps_since_interaction: u32,
}

impl Default for CubeActivity {
    fn default() -> Self {
        Self {
            held: false,
            awake: false,
            steps_since_collision: u32::MAX,
            steps_since_interaction: u32::MAX,
        }
    }
}

impl CubeActivity {
    /// Records a collision at `speed_m_s`; slow ones are ordinary contact and change nothing.
    pub fn record_collision(&mut self, speed_m_s: f32) {
        if speed_m_s > HIGH_ENERGY_COLLISION_SPEED_M_S {
            self.steps_since_collision = 0;
        }
    }

    /// Records fresh news of the cube from its authority, to pass on (the host relaying a guest's state): raised as
    /// a hard collision raises it, for the next few packets.
    pub fn record_news(&mut self) {
        self.steps_since_collision = 0;
    }

    /// Records a player touching, grabbing or throwing the cube.
    pub fn record_interaction(&mut self) {
        self.steps_since_interaction = 0;
    }
}

/// Advances every cube's timers by one step.
pub fn tick_activity(activity: &mut [CubeActivity]) {
    for a in activity {
        a.steps_since_collision = a.steps_since_collision.saturating_add(1);
        a.steps_since_interaction = a.steps_since_interaction.saturating_add(1);
    }
}

/// This step's factor for one cube: the largest that applies, or [`HELD_PRIORITY`].
pub fn priority_factor(a: &CubeActivity) -> i64 {
    if a.held {
        HELD_PRIORITY
    } else if a.steps_since_interaction < INTERACTION_BOOST_STEPS {
        INTERACTION_PRIORITY
    } else if a.steps_since_collision < COLLISION_BOOST_STEPS {
        COLLISION_PRIORITY
    } else if a.awake {
        AWAKE_PRIORITY
    } else {
        BASE_PRIORITY
    }
}

/// Puts a cube with accumulator `acc` at the head of the next packet, once: [`HURRY_PRIORITY`] unless it has
/// waited longer than that already.
pub fn hurry(acc: &mut i64) {
    *acc = (*acc).max(HURRY_PRIORITY);
}

/// Whether a cube with accumulator `acc` is starving: awake and unsent for [`STARVED_AWAKE_STEPS`] at the awake
/// factor or more.
pub fn starving(acc: i64, a: &CubeActivity) -> bool {
    a.awake && acc >= STARVED_AWAKE_STEPS * AWAKE_PRIORITY
}

/// One step of accumulation for one connection: positive factors add up (from 0 if the cube was held), negative
/// ones pin the accumulator to -1; a [`starving`] cube climbs at [`INTERACTION_PRIORITY`] from then on, so it
/// takes its turn among the touched cubes. Cubes beyond the shorter slice are left alone.
pub fn accumulate(accumulators: &mut [i64], activity: &[CubeActivity]) {
    for (acc, a) in accumulators.iter_mut().zip(activity) {
        let mut factor = priority_factor(a);
        if factor > 0 && starving(*acc, a) {
            factor = factor.max(INTERACTION_PRIORITY);
        }
        *acc = if factor < 0 {
            HELD_PRIORITY
        } else {
            (*acc).max(0).saturating_add(factor)
        };
    }
}

/// The sendable cubes (accumulator ≥ 0), highest accumulated priority first, equal ones by ascending id. Fills
/// `order` (cleared first) so a caller can reuse its buffer every step.
pub fn order_by_priority(accumulators: &[i64], order: &mut Vec<u32>) {
    order.clear();
    order.extend((0..accumulators.len() as u32).filter(|&id| accumulators[id as usize] >= 0));
    // Keys (priority, id) are unique, so an unstable sort is still deterministic.
    order.sort_unstable_by_key(|&id| (std::cmp::Reverse(accumulators[id as usize]), id));
}

/// Takes cubes from `order` while they fit in `budget_bits`, where `bits_of(id)` is what the cube's update costs
/// (an awake cube costs more than a resting one, so a cube that no longer fits is skipped and smaller ones after
/// it may still go). Fills `selected` (cleared first) in packet order and returns the bits used.
pub fn fill_packet(
    order: &[u32],
    budget_bits: usize,
    mut bits_of: impl FnMut(u32) -> usize,
    selected: &mut Vec<u32>,
) -> usize {
    selected.clear();
    let mut used = 0;
    for &id in order {
        let bits = bits_of(id);
        if used + bits <= budget_bits {
            used += bits;
            selected.push(id);
        }
    }
    used
}

/// Sent cubes start again from zero, giving the others their turn. Ids out of range are ignored.
pub fn mark_sent(accumulators: &mut [i64], sent: &[u32]) {
    for &id in sent {
        if let Some(acc) = accumulators.get_mut(id as usize) {
            *acc = 0;
        }
    }
}

/// IP (20) + UDP (8) header bytes every datagram carries on a real wire, counted in budgets and rates.
pub const IP_UDP_HEADER_BYTES: usize = 28;

/// Bytes one packet may carry so that `packets_per_s` packets (each with `overhead_bytes` of IP/UDP and protocol
/// header) stay within `kbps`, capped at `max_packet_bytes`. Zero when the header alone exceeds the rate.
pub fn packet_budget_bytes(kbps: u32, packets_per_s: u32, overhead_bytes: u32, max_packet_bytes: u32) -> u32 {
    let per_packet = u64::from(kbps) * 1000 / 8 / u64::from(packets_per_s.max(1));
    (per_packet.min(u64::from(max_packet_bytes)) as u32).saturating_sub(overhead_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One send step for `n` cubes under `activity`: accumulate, order, fill, reset. Returns the sent ids.
    fn send_step(
        acc: &mut [i64],
        activity: &[CubeActivity],
        budget_bits: usize,
        bits_of: &dyn Fn(u32) -> usize,
    ) -> Vec<u32> {
        let (mut order, mut sent) = (Vec::new(), Vec::new());
        accumulate(acc, activity);
        order_by_priority(acc, &mut order);
        let used = fill_packet(&order, budget_bits, bits_of, &mut sent);
        assert!(used <= budget_bits);
        mark_sent(acc, &sent);
        sent
    }

    /// More touched cubes than a packet holds (three katamari balls relayed by a host) must not starve a cube that
    /// nobody touches but that moves: it takes its turn among them once it has waited half a second.
    #[test]
    fn an_awake_cube_is_sent_while_more_touched_cubes_than_fit_keep_coming() {
        let touched = 20;
        let mut activity = vec![CubeActivity::default(); touched + 2];
        let mut acc = vec![0i64; touched + 2];
        let (awake, resting) = (touched as u32, touched as u32 + 1);
        activity[touched].awake = true;
        let bits_of = |_| 100;
        let mut sent_at = Vec::new();
        for step in 0..STEP_HZ as usize * 3 {
            for a in &mut activity[..touched] {
                a.awake = true;
                a.record_interaction();
            }
            let sent = send_step(&mut acc, &activity, 5 * 100, &bits_of);
            assert!(!sent.contains(&resting), "a resting cube waits for the touched ones");
            if sent.contains(&awake) {
                sent_at.push(step);
            }
            tick_activity(&mut activity);
        }
        let first = STARVED_AWAKE_STEPS as usize;
        assert!(
            !sent_at.is_empty() && sent_at[0] <= first + touched / 5 + 1,
            "first sent at {sent_at:?}"
        );
        for gap in sent_at.windows(2).map(|w| w[1] - w[0]) {
            assert!(gap <= first + touched / 5 + 1, "then every {gap} steps: {sent_at:?}");
        }
    }

    /// A hurried cube (a refused claim's answer) goes in the very next packet, ahead of touched cubes that fill
    /// it, and then waits its turn again.
    #[test]
    fn a_hurried_resting_cube_goes_in_the_next_packet_once() {
        let touched = 20;
        let mut activity = vec![CubeActivity::default(); touched + 1];
        let mut acc = vec![0i64; touched + 1];
        let resting = touched as u32;
        let bits_of = |_| 100;
        for step in 0..STEP_HZ as usize {
            for a in &mut activity[..touched] {
                a.awake = true;
                a.record_interaction();
            }
            if step == 30 {
                hurry(&mut acc[touched]);
            }
            let sent = send_step(&mut acc, &activity, 5 * 100, &bits_of);
            assert_eq!(sent.contains(&resting), step == 30, "step {step}: {sent:?}");
            if step == 30 {
                assert_eq!(sent[0], resting, "ahead of every touched cube");
            }
            tick_activity(&mut activity);
        }
    }

    #[test]
    fn factors_follow_activity() {
        let mut a = CubeActivity::default();
        assert_eq!(priority_factor(&a), BASE_PRIORITY);
        a.record_collision(HIGH_ENERGY_COLLISION_SPEED_M_S);
        assert_eq!(priority_factor(&a), BASE_PRIORITY, "not faster than the threshold");
        a.awake = true;
        assert_eq!(priority_factor(&a), AWAKE_PRIORITY);
        a.awake = false;
        a.record_collision(6.0);
        assert_eq!(priority_factor(&a), COLLISION_PRIORITY);
        a.record_interaction();
        assert_eq!(priority_factor(&a), INTERACTION_PRIORITY);
        a.held = true;
        assert_eq!(priority_factor(&a), HELD_PRIORITY);
        a.held = false;
        // Boosts expire: the collision after a quarter second, the interaction after one.
        let mut cubes = [a];
        for _ in 0..COLLISION_BOOST_STEPS {
            tick_activity(&mut cubes);
        }
        assert_eq!(priority_factor(&cubes[0]), INTERACTION_PRIORITY);
        for _ in COLLISION_BOOST_STEPS..INTERACTION_BOOST_STEPS {
            tick_activity(&mut cubes);
        }
        assert_eq!(priority_factor(&cubes[0]), BASE_PRIORITY);
        assert_eq!((COLLISION_BOOST_STEPS, INTERACTION_BOOST_STEPS), (23, 90));
        // Timers saturate instead of wrapping back into a boost.
        let mut never = [CubeActivity::default()];
        tick_activity(&mut never);
        assert_eq!(never[0].steps_since_collision, u32::MAX);
    }

    #[test]
    fn held_cubes_are_never_sent_and_restart_from_zero() {
        let mut acc = vec![50, 50, 50];
        let mut activity = vec![CubeActivity::default(); 3];
        activity[1].held = true;
        for _ in 0..10 {
            let sent = send_step(&mut acc, &activity, 10_000, &|_| 100);
            assert_eq!(sent, vec![0, 2]);
            assert_eq!(acc[1], HELD_PRIORITY);
        }
        activity[1].held = false;
        accumulate(&mut acc, &activity);
        assert_eq!(acc, vec![1, 1, 1]);
    }

    #[test]
    fn ties_break_by_id_and_boosts_go_first() {
        let mut order = Vec::new();
        order_by_priority(&[5, 7, 5, -1, 7, 0], &mut order);
        assert_eq!(order, vec![1, 4, 0, 2, 5]);

        let mut acc = vec![0; 6];
        let mut activity = vec![CubeActivity::default(); 6];
        activity[4].record_collision(8.0);
        activity[5].record_interaction();
        // Room for two cubes: the thrown one, then the one that collided.
        assert_eq!(send_step(&mut acc, &activity, 200, &|_| 100), vec![5, 4]);
    }

    #[test]
    fn every_cube_gets_its_turn() {
        // 64 equal cubes, room for 8 per packet: plain round robin, each sent exactly once per 8 packets.
        const CUBES: usize = 64;
        let mut acc = vec![0; CUBES];
        let activity = vec![CubeActivity::default(); CUBES];
        let mut sends = vec![0; CUBES];
        for _ in 0..80 {
            for id in send_step(&mut acc, &activity, 800, &|_| 100) {
                sends[id as usize] += 1;
            }
        }
        assert!(sends.iter().all(|&n| n == 10), "{sends:?}");
    }

    #[test]
    fn resting_cubes_are_not_starved_by_thrown_ones() {
        // 4 cubes thrown every second keep their boost; the other 60 rest. Room for 8 per packet.
        const CUBES: usize = 64;
        let mut acc = vec![0; CUBES];
        let mut activity = vec![CubeActivity::default(); CUBES];
        let mut last_sent = [0usize; CUBES];
        let mut longest_wait = 0;
        for step in 1..=900 {
            if step % STEP_HZ as usize == 1 {
                activity[..4].iter_mut().for_each(CubeActivity::record_interaction);
            }
            let sent = send_step(&mut acc, &activity, 800, &|_| 100);
            assert!(
                sent.starts_with(&[0, 1, 2, 3]),
                "thrown cubes go every packet: {sent:?}"
            );
            for id in sent {
                longest_wait = longest_wait.max(step - last_sent[id as usize]);
                last_sent[id as usize] = step;
            }
            tick_activity(&mut activity);
        }
        // 60 resting cubes share 4 slots a packet: each waits 15 packets.
        assert_eq!(longest_wait, 15);
    }

    #[test]
    fn packets_fill_to_the_budget_skipping_what_does_not_fit() {
        let order = [0, 1, 2, 3, 4];
        let bits = |id: u32| if id.is_multiple_of(2) { 216 } else { 117 };
        let mut selected = Vec::new();
        // Awake (216 bits) and resting (117 bits) cubes alternate. In 400 bits: 0 and 1 (333); neither 2 (549) nor
        // 3 (450) fits. In 460 bits, 2 is skipped but 3 still fits.
        assert_eq!(fill_packet(&order, 400, bits, &mut selected), 333);
        assert_eq!(selected, vec![0, 1]);
        assert_eq!(fill_packet(&order, 460, bits, &mut selected), 450);
        assert_eq!(selected, vec![0, 1, 3]);
        assert_eq!(fill_packet(&order, 0, bits, &mut selected), 0);
        assert!(selected.is_empty());
        // Out-of-range ids are ignored when marking.
        let mut acc = vec![3, 3];
        mark_sent(&mut acc, &[1, 7]);
        assert_eq!(acc, vec![3, 0]);
    }

    #[test]
    fn budget_from_a_rate() {
        // 64 kbps at 90 packets a second: 88 bytes a packet, less 28 of IP/UDP and, say, 12 of header.
        assert_eq!(packet_budget_bytes(64, 90, 40, 1200), 48);
        // A generous rate is capped by the packet size.
        assert_eq!(packet_budget_bytes(100_000, 60, 40, 1200), 1160);
        assert_eq!(packet_budget_bytes(1, 90, 40, 1200), 0);
        assert_eq!(packet_budget_bytes(64, 0, 40, 1200), 1200 - 40);
    }
}
