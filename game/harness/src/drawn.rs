//! What every screen draws, against the truth. Each step, for every peer and every cube that peer does not
//! simulate for everyone, the pose the peer draws (simulated plus smoothing, or in a remote hand the played-out
//! hand: [`Peer::drawn_pose`], what its renderer is given) against the pose the cube's authority simulates at the same
//! step; and for every remote head and hand, how far behind its owner it is drawn and how far from where the owner
//! had it then. The harness may read every world to measure; nothing crosses between them otherwise.
//!
//! - **Drawn error**: |drawn − truth|, split by whether the authority has had the cube at rest for a second (a
//!   settled stack, which must be drawn exactly) or not.
//! - **Visible jump**: how much a drawn trajectory breaks in one frame beyond what the truth did:
//!   `|Δdrawn(t) − Δdrawn(t−1)| − |Δtruth(t) − Δtruth(t−1)|` (no less than 0), with Δ the step-to-step motion and
//!   the truth the authority's own trajectory. A snap of 5 cm reads 5 cm, a glide at steady speed 0, a bounce both
//!   sides share 0. Nothing of the smoother enters it: a smoother that glides a correction at 10 m/s² reads what
//!   its glide bends, whatever cap it has.
//!   A cube drawn in a remote hand follows the hand as played out, behind its holder: its bends are the truth's,
//!   later, so it (and for half a second after it leaves the hand) is held to the largest bend of the truth over the
//!   last half second.
//! - **Late visible jump** (beside the visible jump, not instead of it): the same, with the truth's bend the largest
//!   the truth made over the time news takes to come ([`DrawnMeter::with_news_steps`]). A remote copy runs that far
//!   behind its authority (a received state is applied as it is), so a bounce it shares reads its full size in the
//!   visible jump, at the step it bounces here, and 0 here; a snap, or a bend the truth never made, reads in both.
//!   What is left in this one is what breaks on the screen; what is only in the other is lateness.
//! - **Avatar delay and error**: for each remote head and tracked hand, the time of the owner's sample it is drawn
//!   from (behind the peer's clock), and its distance from the owner's own pose at that time.
//!
//! A guest is measured from [`JOIN_GRACE_STEPS`] after its welcome: before that, cubes arrive.
//!
//! Distributions go into fixed log-spaced histograms ([`PopHistogram`]): nothing grows with the run's length.

use glam::Vec3;
use serde_json::{json, Value};
use tumble_engine::physics::BodyId;

use tumble_game::avatar::{Avatar, HAND_COUNT};
use tumble_game::session::peer::{Peer, JOIN_GRACE_STEPS};
use tumble_game::smoothing::PopHistogram;
use tumble_game::STEP_HZ;

/// Steps the authority must have had a cube at rest for it to count as settled (1 s).
pub const SETTLED_STEPS: u64 = STEP_HZ as u64;
/// A cube drawn in a remote hand follows the hand as played out, some steps behind its holder: its bends are
/// the truth's, later. For such a cube, and for this long after it leaves the hand, the truth's bend is the largest
/// of the truth's over this many steps (0.5 s, more than a playout delay), not the same step's.
const HAND_WINDOW_STEPS: usize = 45;
/// A drawn frame that bends more than this beyond the truth (m) is counted (`visible_jumps_over_1cm`): the issue's
/// line on the largest, as a count of how often it is crossed.
const COUNTED_JUMP_M: f32 = 0.01;
/// Owner avatar poses kept per player (steps): longer than any playout delay measured (4 s).
const AVATAR_HISTORY_STEPS: usize = 360;

/// Longest avatar delay told apart (ms); longer ones count in the last bin.
const MAX_DELAY_MS: usize = 4000;

/// Avatar delays in 1 ms bins: a percentile to the millisecond, rounded up (a distance's log-spaced bins, 12 %
/// wide, would put anything from 89 to 100 ms at 100). Sized once.
#[derive(Clone, Debug)]
pub struct DelayHistogram {
    /// Bin `i`: delays over `i − 1` and up to `i` ms (bin 0: none).
    bins: Vec<u64>,
    count: u64,
}

impl DelayHistogram {
    pub fn new() -> Self {
        Self {
            bins: vec![0; MAX_DELAY_MS + 1],
            count: 0,
        }
    }

    /// Counts one delay (s; a negative one as 0).
    pub fn add(&mut self, delay_s: f64) {
        let ms = (delay_s * 1000.0).ceil().clamp(0.0, MAX_DELAY_MS as f64) as usize;
        self.bins[ms] += 1;
        self.count += 1;
    }

    /// The delay (ms) that a share `q` of those counted are at or under, to the millisecond above; `None` when
    /// nothing was counted.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let rank = ((self.count as f64 * q.clamp(0.0, 1.0)).ceil() as u64).max(1);
        let mut seen = 0;
        for (ms, n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(ms as f64);
            }
        }
        None
    }
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest of a path's bends `window` (by step modulo its length) over the last `steps` steps to `now`.
fn largest_bend(window: &[f32; HAND_WINDOW_STEPS], now: u64, steps: usize) -> f32 {
    largest_bend_ago(window, now, steps).1
}

/// The same, with how many steps ago (0: this step) the truth made it: the evidence of how late a bend is drawn.
fn largest_bend_ago(window: &[f32; HAND_WINDOW_STEPS], now: u64, steps: usize) -> (usize, f32) {
    let now = now as usize;
    (0..steps.min(HAND_WINDOW_STEPS))
        .map(|k| (k, window[(now + HAND_WINDOW_STEPS - k) % HAND_WINDOW_STEPS]))
        .fold((0, 0.0), |best, (k, b)| if b > best.1 { (k, b) } else { best })
}

/// One peer's view of one cube over the last three steps: where it drew it, and whether those samples run on.
#[derive(Clone, Copy, Debug, Default)]
struct Track {
    drawn: [Vec3; 3],
    /// Samples in a row (0..=3); a cube this peer simulates for everyone, or a removed one, starts over.
    len: u8,
    /// Steps since the cube was last drawn in a remote hand (saturating; `u16::MAX`: never).
    since_hand: u16,
}

impl Track {
    fn new() -> Self {
        Track {
            since_hand: u16::MAX,
            ..Track::default()
        }
    }

    fn push(&mut self, p: Vec3) {
        self.drawn = [self.drawn[1], self.drawn[2], p];
        self.len = (self.len + 1).min(3);
    }

    /// |Δ(t) − Δ(t−1)| once three samples run on.
    fn bend(&self) -> Option<f32> {
        (self.len == 3).then(|| ((self.drawn[2] - self.drawn[1]) - (self.drawn[1] - self.drawn[0])).length())
    }
}

/// Head and hands as positions, each with whether it is tracked (the head always is).
pub type AvatarPoints = [(bool, Vec3); 1 + HAND_COUNT];

/// The points of `avatar`.
pub fn avatar_points(avatar: &Avatar) -> AvatarPoints {
    let mut out = [(true, avatar.head.position); 1 + HAND_COUNT];
    for h in 0..HAND_COUNT {
        out[1 + h] = (avatar.hands[h].tracked, avatar.hands[h].pose.position);
    }
    out
}

/// One player's own avatar as it was at each step (the truth its remote copies are drawn against).
#[derive(Clone, Debug)]
struct AvatarHistory {
    /// (step, points), by step modulo the length.
    samples: Vec<Option<(u64, AvatarPoints)>>,
}

impl AvatarHistory {
    fn new() -> Self {
        Self {
            samples: vec![None; AVATAR_HISTORY_STEPS],
        }
    }

    fn record(&mut self, step: u64, points: &AvatarPoints) {
        self.samples[step as usize % AVATAR_HISTORY_STEPS] = Some((step, *points));
    }

    fn at(&self, step: u64) -> Option<&AvatarPoints> {
        match &self.samples[step as usize % AVATAR_HISTORY_STEPS] {
            Some((s, a)) if *s == step => Some(a),
            _ => None,
        }
    }

    /// The owner's head and hand positions at fractional step `t` (between the two steps around it).
    fn positions_at(&self, t: f64) -> Option<AvatarPoints> {
        if !(t.is_finite() && t >= 0.0) {
            return None;
        }
        let (k, f) = (t.floor() as u64, (t - t.floor()) as f32);
        let a = self.at(k)?;
        let b = self.at(k + 1).unwrap_or(a);
        let mut out = *a;
        for (o, (pa, pb)) in out.iter_mut().zip(a.iter().zip(b)) {
            *o = (pa.0 && pb.0, pa.1.lerp(pb.1, f));
        }
        Some(out)
    }
}

/// What one peer had and drew at one step: everything the meter reads of it, as plain data — taken from a
/// [`Peer`] in one process ([`PeerSample::take`]), or read back from a peer process's trace (`--processes`).
#[derive(Clone, Debug, Default)]
pub struct PeerSample {
    /// In the game this step.
    pub present: bool,
    pub player: u8,
    /// Past its arrival ([`JOIN_GRACE_STEPS`] after its welcome): what it draws is measured.
    pub measured: bool,
    /// The peer's own step, and its own avatar then, once it plays (a guest's avatar stands still, unsent, until
    /// its first step after the welcome).
    pub own: Option<(u64, AvatarPoints)>,
    /// Per cube: where it simulates it (`None`: removed), where it draws it, and whether it draws it in a remote
    /// hand.
    pub sim: Vec<Option<Vec3>>,
    pub drawn: Vec<Vec3>,
    pub in_hand: Vec<bool>,
    /// Per player 1..=4 (index player − 1): the sender time (s) it plays that player's avatar at, and where it draws
    /// its head and hands.
    pub remote: [Option<(f64, AvatarPoints)>; 4],
    /// When the peer played those avatars out, on the clock the owners' steps are timed by (s), where it is not the
    /// measure's step time (a process steps on the wall clock and samples its buffers as its step begins).
    pub played_at_s: Option<f64>,
}

impl PeerSample {
    /// `peer` as it is now, after its step (into the buffers `self` already has).
    pub fn take(&mut self, peer: &Peer) -> Result<(), tumble_engine::physics::PhysicsError> {
        let cubes = peer.world.body_count();
        self.present = true;
        self.player = peer.player();
        self.measured = peer.steps_since_welcome() > JOIN_GRACE_STEPS;
        self.own = (peer.steps_since_welcome() >= 2 && peer.player() != 0)
            .then(|| (peer.step_count().saturating_sub(1), avatar_points(&peer.avatar)));
        self.sim.clear();
        self.drawn.clear();
        self.in_hand.clear();
        for c in 0..cubes {
            let id = BodyId(c as u32);
            let removed = peer.world.is_removed(id)?;
            self.sim.push(
                (!removed)
                    .then(|| peer.world.state(id).map(|s| s.position))
                    .transpose()?,
            );
            self.drawn.push(peer.drawn_pose(id)?.position);
            self.in_hand.push(peer.remote_avatars().hand_drawn(c).is_some());
        }
        for player in 1..=4u8 {
            let played = peer.remote_avatar(player);
            let time = peer.remote_avatars().playout(player).and_then(|p| p.playout_time_s());
            self.remote[usize::from(player) - 1] = match (played, time) {
                (Some(a), Some(t)) if player != peer.player() => {
                    let mut points = [(true, a.head.position); 1 + HAND_COUNT];
                    for h in 0..HAND_COUNT {
                        points[1 + h] = (a.hands[h].tracked, a.hands[h].pose.position);
                    }
                    Some((t, points))
                }
                _ => None,
            };
        }
        Ok(())
    }

    /// Not in the game this step.
    pub fn absent(&mut self) {
        self.present = false;
    }
}

/// The measures of what is drawn, over a run.
#[derive(Clone, Debug)]
pub struct DrawnMeter {
    /// Per seat, per cube.
    tracks: Vec<Vec<Track>>,
    /// Per seat, per cube: its own simulated positions over the last three steps (the truth's motion when that
    /// seat is the authority).
    sims: Vec<Vec<Track>>,
    /// Per seat, per cube: the bends of its own simulated path over the last [`HAND_WINDOW_STEPS`], by step.
    sim_bends: Vec<Vec<[f32; HAND_WINDOW_STEPS]>>,
    /// Per player 1..=4 (index player − 1).
    avatars: Vec<AvatarHistory>,
    pub error_resting: PopHistogram,
    pub error_moving: PopHistogram,
    pub jump: PopHistogram,
    /// The late visible jump (see the module's notes), and its window (steps, at most [`HAND_WINDOW_STEPS`]).
    pub jump_late: PopHistogram,
    /// Drawn frames (one peer, one cube, one step) whose visible jump is over [`COUNTED_JUMP_M`], and of those the
    /// ones whose late visible jump is not: the truth made that bend within the news window, and it is drawn late.
    jumps_over_1cm: u64,
    late_jumps_over_1cm: u64,
    late_window: usize,
    pub avatar_delay: DelayHistogram,
    pub avatar_error: PopHistogram,
    pub steps: u64,
    /// The largest resting error and the largest visible jump, with where and when: a figure past its line carries
    /// its evidence.
    worst_resting: Option<Worst>,
    worst_jump: Option<Worst>,
    worst_jump_late: Option<Worst>,
}

/// One measured moment: which seat drew which cube how far off, at which step of the meter, and the poses.
#[derive(Clone, Copy, Debug)]
struct Worst {
    value: f32,
    seat: usize,
    cube: usize,
    step: u64,
    truth_seat: usize,
    drawn: Vec3,
    truth: Vec3,
}

impl Worst {
    fn keep(slot: &mut Option<Worst>, w: Worst) {
        if slot.is_none_or(|old| w.value > old.value) {
            *slot = Some(w);
        }
    }

    fn to_json(self, what: &str) -> Value {
        json!({
            "what": what,
            "m": self.value,
            "seat": self.seat + 1,
            "cube": self.cube,
            "second": self.step as f64 / f64::from(STEP_HZ),
            "authority_seat": self.truth_seat + 1,
            "drawn": self.drawn.to_array(),
            "truth": self.truth.to_array(),
        })
    }
}

/// Who simulates a cube for everyone this step, and since when it has had the cube at rest.
#[derive(Clone, Copy, Debug)]
pub struct Authority {
    /// The seat whose world is the truth for the cube.
    pub seat: usize,
    pub settled: bool,
}

impl DrawnMeter {
    pub fn new(seats: usize, cubes: usize) -> Self {
        Self {
            tracks: vec![vec![Track::new(); cubes]; seats],
            sims: vec![vec![Track::default(); cubes]; seats],
            sim_bends: vec![vec![[0.0; HAND_WINDOW_STEPS]; cubes]; seats],
            avatars: (0..4).map(|_| AvatarHistory::new()).collect(),
            error_resting: PopHistogram::default(),
            error_moving: PopHistogram::default(),
            jump: PopHistogram::default(),
            jump_late: PopHistogram::default(),
            jumps_over_1cm: 0,
            late_jumps_over_1cm: 0,
            late_window: 1,
            avatar_delay: DelayHistogram::new(),
            avatar_error: PopHistogram::default(),
            steps: 0,
            worst_resting: None,
            worst_jump: None,
            worst_jump_late: None,
        }
    }

    /// The late visible jump's window: the steps news may take to reach a peer (the session's `news_steps`: two
    /// one-way trips with their jitter, a send interval at each hop, one more for a lost packet, two steps), at most
    /// [`HAND_WINDOW_STEPS`]. Without it the window is one step and the late figure reads as the visible jump.
    pub fn with_news_steps(mut self, steps: u64) -> Self {
        self.late_window = (steps as usize).clamp(1, HAND_WINDOW_STEPS);
        self
    }

    /// One step, after every peer simulated it: `peers[seat]` (absent: not in the game), `authority[cube]` (`None`:
    /// no peer has the truth this step, as when its authority just left), `now_s` the time peers play remote avatars
    /// out at.
    pub fn observe(&mut self, peers: &[PeerSample], authority: &[Option<Authority>], now_s: f64) {
        self.steps += 1;
        let slot = self.steps as usize % HAND_WINDOW_STEPS;
        for (seat, peer) in peers.iter().enumerate() {
            if !peer.present {
                self.tracks[seat].iter_mut().for_each(|t| t.len = 0);
                self.sims[seat].iter_mut().for_each(|t| t.len = 0);
                continue;
            }
            for (c, sim) in self.sims[seat].iter_mut().enumerate() {
                match peer.sim.get(c).copied().flatten() {
                    Some(p) => sim.push(p),
                    None => sim.len = 0,
                }
                self.sim_bends[seat][c][slot] = sim.bend().unwrap_or(0.0);
            }
            if let (Some(player), Some((step, points))) = (usize::from(peer.player).checked_sub(1), peer.own) {
                if let Some(h) = self.avatars.get_mut(player) {
                    h.record(step, &points);
                }
            }
        }
        for (seat, peer) in peers.iter().enumerate() {
            if !(peer.present && peer.measured) {
                continue;
            }
            for (c, who) in authority.iter().enumerate() {
                let track = &mut self.tracks[seat][c];
                let here = peer.sim.get(c).copied().flatten();
                let Some(who) = who.filter(|w| w.seat != seat && here.is_some()) else {
                    track.len = 0;
                    continue;
                };
                let Some(truth) = peers
                    .get(who.seat)
                    .filter(|p| p.present)
                    .and_then(|p| p.sim.get(c).copied().flatten())
                else {
                    track.len = 0;
                    continue;
                };
                let drawn = peer.drawn[c];
                let error = drawn.distance(truth);
                // Where and when, for the evidence of either figure (both read this step's drawn and true poses).
                let here = Worst {
                    value: error,
                    seat,
                    cube: c,
                    step: self.steps,
                    truth_seat: who.seat,
                    drawn,
                    truth,
                };
                if who.settled {
                    if error > 0.001 {
                        tracing::debug!(
                            step = self.steps,
                            seat,
                            cube = c,
                            error,
                            truth_seat = who.seat,
                            drawn = ?drawn,
                            simulated = ?peer.sim[c],
                            truth = ?truth,
                            "a settled cube drawn off"
                        );
                    }
                    self.error_resting.add(error);
                    Worst::keep(&mut self.worst_resting, here);
                } else {
                    self.error_moving.add(error);
                }
                track.push(drawn);
                let in_hand = peer.in_hand[c];
                track.since_hand = if in_hand { 0 } else { track.since_hand.saturating_add(1) };
                let truth_bend = if usize::from(track.since_hand) <= HAND_WINDOW_STEPS {
                    let window = &self.sim_bends[who.seat][c];
                    self.sims[who.seat][c]
                        .bend()
                        .map(|_| window.iter().copied().fold(0.0, f32::max))
                } else {
                    self.sims[who.seat][c].bend()
                };
                if let (Some(bend), Some(truth_bend)) = (track.bend(), truth_bend) {
                    let jump = (bend - truth_bend).max(0.0);
                    // The evidence is gathered only when it is logged: it is a search over every seat's cubes.
                    if jump > COUNTED_JUMP_M && tracing::enabled!(tracing::Level::DEBUG) {
                        // The nearest cube any seat draws in a remote hand (a hand's push, which the holder's world
                        // makes a playout delay before the others').
                        let at = peer.sim[c].unwrap_or(Vec3::ZERO);
                        let held_near = peers
                            .iter()
                            .flat_map(|p| {
                                (0..p.sim.len())
                                    .filter(move |&d| d != c && p.in_hand.get(d) == Some(&true))
                                    .filter_map(move |d| p.sim[d].map(|q| (d, q.distance(at))))
                            })
                            .min_by(|x, y| x.1.total_cmp(&y.1));
                        tracing::debug!(
                            ?held_near,
                            step = self.steps,
                            seat,
                            player = peer.player,
                            cube = c,
                            jump,
                            truth_seat = who.seat,
                            since_hand = track.since_hand,
                            truth_bend,
                            window_max = self.sim_bends[who.seat][c].iter().copied().fold(0.0, f32::max),
                            truth_bent = ?largest_bend_ago(&self.sim_bends[who.seat][c], self.steps, self.late_window),
                            simulated = ?self.sims[seat][c].drawn,
                            drawn = ?track.drawn,
                            truth = ?self.sims[who.seat][c].drawn,
                            "a visible jump"
                        );
                    }
                    self.jump.add(jump);
                    Worst::keep(&mut self.worst_jump, Worst { value: jump, ..here });
                    let late_truth =
                        truth_bend.max(largest_bend(&self.sim_bends[who.seat][c], self.steps, self.late_window));
                    let late = (bend - late_truth).max(0.0);
                    if late > COUNTED_JUMP_M && tracing::enabled!(tracing::Level::DEBUG) {
                        // The nearest cube this seat draws in a remote hand (evidence of a push the authority's world
                        // did not have).
                        let at = peer.sim[c].unwrap_or(Vec3::ZERO);
                        let nearest_held = (0..peer.sim.len())
                            .filter(|&d| d != c && peer.in_hand[d])
                            .filter_map(|d| peer.sim[d].map(|p| (d, p.distance(at))))
                            .min_by(|x, y| x.1.total_cmp(&y.1));
                        tracing::debug!(
                            nearest_in_remote_hand = ?nearest_held,
                            simulated = ?self.sims[seat][c].drawn,
                            step = self.steps,
                            seat,
                            cube = c,
                            late,
                            truth_seat = who.seat,
                            since_hand = track.since_hand,
                            late_truth,
                            drawn = ?track.drawn,
                            truth = ?self.sims[who.seat][c].drawn,
                            "a late visible jump"
                        );
                    }
                    self.jump_late.add(late);
                    if jump > COUNTED_JUMP_M {
                        self.jumps_over_1cm += 1;
                        self.late_jumps_over_1cm += u64::from(late <= COUNTED_JUMP_M);
                    }
                    Worst::keep(&mut self.worst_jump_late, Worst { value: late, ..here });
                }
            }
            self.observe_avatars(peer, now_s);
        }
    }

    /// The remote heads and hands `peer` draws, against their owners' own poses at the played moment.
    fn observe_avatars(&mut self, peer: &PeerSample, now_s: f64) {
        for (k, remote) in peer.remote.iter().enumerate() {
            let Some((t_s, drawn)) = remote else { continue };
            self.avatar_delay.add(peer.played_at_s.unwrap_or(now_s) - t_s);
            let Some(owner) = self.avatars[k].positions_at(t_s * f64::from(STEP_HZ)) else {
                continue;
            };
            let mut worst = 0.0f32;
            for ((tracked, d), (owner_tracked, o)) in drawn.iter().zip(owner.iter()) {
                if *tracked && *owner_tracked {
                    worst = worst.max(d.distance(*o));
                }
            }
            if worst > 0.5 {
                tracing::debug!(
                    viewer = peer.player,
                    player = k + 1,
                    t_steps = t_s * f64::from(STEP_HZ),
                    now_s,
                    worst,
                    "a remote avatar drawn far from its owner"
                );
            }
            self.avatar_error.add(worst);
        }
    }

    /// Where the largest resting error (over 1 mm) and the largest visible jump (over 1 cm) were drawn: the
    /// evidence `failure_evidence` carries when those figures pass their lines.
    pub fn evidence(&self) -> impl Iterator<Item = Value> + '_ {
        let resting = self
            .worst_resting
            .filter(|w| w.value > 0.001)
            .map(|w| w.to_json("the largest drawn error of a settled cube"));
        let jump = self
            .worst_jump
            .filter(|w| w.value > 0.01)
            .map(|w| w.to_json("the largest visible jump"));
        let late = self
            .worst_jump_late
            .filter(|w| w.value > 0.01)
            .map(|w| w.to_json("the largest late visible jump"));
        resting.into_iter().chain(jump).chain(late)
    }

    /// The figures, as `tumble session` reports them; a figure nothing fed is `null`. Corrections are per minute
    /// of `seconds`.
    pub fn to_json(&self, corrections: (u64, u64), seconds: f64) -> Value {
        let q = |h: &PopHistogram, q: f64| (h.count() > 0).then(|| f64::from(h.quantile_m(q)));
        let max = |h: &PopHistogram| (h.count() > 0).then(|| f64::from(h.max_m()));
        let mut all = self.error_resting.clone();
        all.merge(&self.error_moving);
        let per_minute = |n: u64| (seconds > 0.0).then(|| n as f64 * 60.0 / seconds);
        json!({
            "drawn_error_m_p50": q(&all, 0.5),
            "drawn_error_m_p99": q(&all, 0.99),
            "drawn_error_m_max": max(&all),
            "drawn_error_m_p50_resting": q(&self.error_resting, 0.5),
            "drawn_error_m_p99_resting": q(&self.error_resting, 0.99),
            "drawn_error_m_max_resting": max(&self.error_resting),
            "drawn_error_m_p50_moving": q(&self.error_moving, 0.5),
            "drawn_error_m_p99_moving": q(&self.error_moving, 0.99),
            "drawn_error_m_max_moving": max(&self.error_moving),
            "visible_jump_m_max": max(&self.jump),
            "visible_jump_m_p99": q(&self.jump, 0.99),
            "visible_jump_late_m_max": max(&self.jump_late),
            "visible_jump_late_m_p99": q(&self.jump_late, 0.99),
            "visible_jump_late_window_steps": (self.jump_late.count() > 0).then_some(self.late_window),
            "visible_jumps_over_1cm": per_minute(self.jumps_over_1cm),
            "visible_jumps_over_1cm_late": per_minute(self.late_jumps_over_1cm),
            "corrections_over_1cm": per_minute(corrections.0),
            "corrections_over_10cm": per_minute(corrections.1),
            "avatar_delay_ms_p50": self.avatar_delay.quantile_ms(0.5),
            "avatar_delay_ms_p99": self.avatar_delay.quantile_ms(0.99),
            "avatar_error_m_p99": q(&self.avatar_error, 0.99),
            "avatar_error_m_max": max(&self.avatar_error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avatar_delays_are_read_to_the_millisecond() {
        let mut h = DelayHistogram::new();
        assert_eq!(h.quantile_ms(0.99), None, "nothing counted: no figure");
        // 98 delays of 95.2 ms and two of 101 ms: the 99th percentile is over 100 ms (log bins 12 % wide would have
        // put 95.2 at 100).
        for _ in 0..98 {
            h.add(0.0952);
        }
        h.add(0.101);
        h.add(0.101);
        assert_eq!(h.quantile_ms(0.5), Some(96.0));
        assert_eq!(h.quantile_ms(0.99), Some(101.0));
        h.add(-0.5);
        h.add(60.0);
        assert_eq!(h.quantile_ms(0.0), Some(0.0), "a negative delay counts as none");
        assert_eq!(
            h.quantile_ms(1.0),
            Some(MAX_DELAY_MS as f64),
            "a longer one in the last bin"
        );
    }

    #[test]
    fn a_snap_reads_its_size_a_steady_glide_nothing() {
        let mut t = Track::default();
        for x in [0.0, 0.1, 0.2] {
            t.push(Vec3::new(x, 0.0, 0.0));
        }
        assert!(t.bend().unwrap() < 1e-6, "a glide at steady speed");
        t.push(Vec3::new(0.35, 0.0, 0.0));
        assert!(
            (t.bend().unwrap() - 0.05).abs() < 1e-5,
            "5 cm more than the glide's step"
        );
        let mut still = Track::default();
        for x in [1.0, 1.0, 1.05] {
            still.push(Vec3::new(x, 0.0, 0.0));
        }
        assert!((still.bend().unwrap() - 0.05).abs() < 1e-6, "a snap of 5 cm");
        let mut short = Track::default();
        short.push(Vec3::ZERO);
        assert_eq!(short.bend(), None);
    }

    #[test]
    fn the_owners_avatar_is_read_between_steps() {
        let mut h = AvatarHistory::new();
        let mut a = Avatar::default();
        for step in 0..10u64 {
            a.head.position = Vec3::new(step as f32, 1.7, 0.0);
            h.record(step, &avatar_points(&a));
        }
        let p = h.positions_at(3.5).unwrap();
        assert!((p[0].1.x - 3.5).abs() < 1e-6);
        assert!(!p[1].0, "an untracked hand");
        assert!(h.positions_at(500.0).is_none(), "not recorded");
        assert!(h.positions_at(f64::NAN).is_none());
    }

    /// Seat 0 is the authority of one cube that falls at 3 m/s and stops on the floor at step 20; seat 1 draws
    /// `drawn(step)`. Returns (visible jump max, late visible jump max) with the late window `window` steps.
    fn bounce_seen(window: u64, drawn: impl Fn(i64) -> f32) -> (f32, f32) {
        let meter = bounce_metered(window, drawn);
        (meter.jump.max_m(), meter.jump_late.max_m())
    }

    /// The meter after [`bounce_seen`]'s run.
    fn bounce_metered(window: u64, drawn: impl Fn(i64) -> f32) -> DrawnMeter {
        let mut meter = DrawnMeter::new(2, 1).with_news_steps(window);
        let mut peers = vec![PeerSample::default(); 2];
        for (seat, p) in peers.iter_mut().enumerate() {
            p.present = true;
            p.measured = true;
            p.player = seat as u8 + 1;
            p.in_hand = vec![false];
        }
        let authority = [Some(Authority {
            seat: 0,
            settled: false,
        })];
        for step in 0..60 {
            let truth = Vec3::new(0.0, falling(step as i64), 0.0);
            let here = Vec3::new(0.0, drawn(step as i64), 0.0);
            (peers[0].sim, peers[0].drawn) = (vec![Some(truth)], vec![truth]);
            (peers[1].sim, peers[1].drawn) = (vec![Some(here)], vec![here]);
            meter.observe(&peers, &authority, step as f64 / 90.0);
        }
        meter
    }

    /// Falling at 3 m/s (from before the meter starts) until it stops at step 20.
    fn falling(step: i64) -> f32 {
        10.0 - 3.0 / 90.0 * step.min(20) as f32
    }

    #[test]
    fn drawn_frames_over_a_centimetre_are_counted_and_the_late_ones_told_apart() {
        let counts = |m: &DrawnMeter| (m.jumps_over_1cm, m.late_jumps_over_1cm);
        // Drawn exactly: none.
        assert_eq!(counts(&bounce_metered(22, falling)), (0, 0));
        // The 3 m/s stop drawn five steps late: one frame over 1 cm, and the truth made that bend: late.
        assert_eq!(counts(&bounce_metered(22, |s| falling(s - 5))), (1, 1));
        // And a 5 cm snap the truth never made on top, which bends the drawn path twice (into the snap and out of
        // it): three frames, one late.
        let snapped = bounce_metered(22, |s| falling(s - 5) + if s >= 55 { 0.05 } else { 0.0 });
        assert_eq!(counts(&snapped), (3, 1));
        // A minute's rate, in the JSON.
        let j = snapped.to_json((0, 0), 30.0);
        assert_eq!(j["visible_jumps_over_1cm"], 6.0);
        assert_eq!(j["visible_jumps_over_1cm_late"], 2.0);
    }

    #[test]
    fn the_largest_bend_of_a_window_is_found_with_its_age() {
        let mut window = [0.0f32; HAND_WINDOW_STEPS];
        // Steps 98, 99 and 100 bent by 2, 5 and 1 cm; step 100 is now.
        for (step, bend) in [(98usize, 0.02f32), (99, 0.05), (100, 0.01)] {
            window[step % HAND_WINDOW_STEPS] = bend;
        }
        assert_eq!(largest_bend_ago(&window, 100, 3), (1, 0.05));
        assert_eq!(largest_bend_ago(&window, 100, 1), (0, 0.01));
        assert_eq!(largest_bend(&window, 100, 2), 0.05);
    }

    #[test]
    fn a_bounce_drawn_late_reads_in_the_visible_jump_and_not_the_late_one_but_a_snap_reads_in_both() {
        // Drawn five steps behind the truth: the same stop, five steps later.
        let (jump, late) = bounce_seen(22, |s| falling(s - 5));
        assert!(
            (jump - 3.0 / 90.0).abs() < 1e-4,
            "the stop's whole bend, at the step it stops here: {jump}"
        );
        assert!(late < 1e-5, "within the window the truth made that bend: {late}");
        // The window shorter than the lateness: the late figure reads it too.
        let (_, short) = bounce_seen(3, |s| falling(s - 5));
        assert!((short - 3.0 / 90.0).abs() < 1e-4, "{short}");
        // A copy a step behind that snaps 5 cm at step 55, longer after the stop than the window: both read it.
        let (jump, late) = bounce_seen(22, |s| falling(s - 1) + if s >= 55 { 0.05 } else { 0.0 });
        assert!(jump >= 0.05 - 1e-4 && late >= 0.05 - 1e-4, "{jump} {late}");
        // Drawn exactly: neither reads anything.
        let (jump, late) = bounce_seen(22, falling);
        assert!(jump < 1e-5 && late < 1e-5, "{jump} {late}");
    }
}
