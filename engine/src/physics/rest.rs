//! Our rest detection. Every awake body keeps its last [`REST_WINDOW`] poses *and velocities* in a ring buffer. A
//! body is *still* only when nothing about it changes over a full window:
//!
//! - pose: no pose in the window is farther than the linear threshold, or turned more than the angular threshold,
//!   from the newest (jitter under quantization stays inside these, so it cannot keep a body awake);
//! - speed: no point of the body moved faster than [`REST_MAX_POINT_SPEED_M_S`] at any step of the window;
//! - acceleration: the trend of its velocity over the window (a least-squares fit, so jitter averages out)
//!   changes the speed of its fastest point by at most [`REST_MAX_POINT_SPEED_CHANGE_M_S`]. This is what "its
//!   support can hold it" means without knowing the support: a body whose contacts surround its centre of mass is
//!   not accelerated, and one on an edge half a degree past balance is (its speed grows every step, so it is
//!   never still however slowly it starts). Unless the trend keeps turning back — twice or more in the last two
//!   windows ([`MIN_REVERSALS`], [`REVERSAL_SPAN_STEPS`]) —: that body rocks where it stands (a cube lying across
//!   the edges of two others rocked a few mm/s each way for ever, its trend past the threshold at every step),
//!   and the pose test alone holds it.
//!
//! An island whose bodies are all still is put to rest (velocities zeroed — by then they are below the speed
//! threshold — and the solver skips it). The window starts over whenever something from outside the body's own
//! motion acts on it: it is woken, its state is set, a kinematic body pushes it, it is hit or gets a new contact,
//! or it loses one (`World::detect_rest`, `World::wake_bodies_that_lost_a_contact`), so it must be seen still for
//! a whole window after the last such event.

use glam::{Quat, Vec3};

/// Steps kept per body: 16 steps is 178 ms at 90 Hz.
pub const REST_WINDOW: usize = 16;

/// Fastest a point of a still body may move at any step of the window (m/s): linear speed plus angular speed
/// times the body's bounding radius. What this adds to the pose threshold is that a body may not *jump* within it
/// (moving fast in one step of the window). It is not lower because velocities the solver reports are not all
/// motion under quantization: a body rounded up off its support by a fraction of 1/4096 m closes the gap at up to
/// 2 cm/s every step and is rounded back, and the solver's unconverged friction can leave the pieces of a toppled
/// tower sliding one quantum (0.24 mm) per step, 2.2 cm/s, which is creep for rest detection to stop.
pub const REST_MAX_POINT_SPEED_M_S: f32 = 0.05;

/// Most the velocity trend of a still body may change the speed of its fastest point over the window (m/s). A
/// steady net acceleration `a` shows as `a · 15 steps` = `a · 0.167 s`, so this lets through 0.03 m/s² (0.3 % of
/// g). A 1 m cube on an edge 1° past balance accelerates its corners at about 0.16 m/s² (0.026 m/s over the
/// window); the smallest tilt caught is about 0.2°, near what state quantization itself can show (a speed change
/// below 1/2048 m/s per step rounds away).
pub const REST_MAX_POINT_SPEED_CHANGE_M_S: f32 = 0.005;

/// Steps over which a rocking body's trend must have turned back ([`MotionHistory::observe_trend`]): two windows.
pub const REVERSAL_SPAN_STEPS: u32 = 2 * REST_WINDOW as u32;
const REVERSAL_SPAN_MASK: u32 = if REVERSAL_SPAN_STEPS >= 32 {
    u32::MAX
} else {
    (1 << REVERSAL_SPAN_STEPS) - 1
};
/// Turns back within the span that make a body rocking, not accelerating: two, so that a body set down that
/// rocks back once and then tips the other way (one turn) is still seen accelerating.
pub const MIN_REVERSALS: u32 = 2;

/// What a body must stay within over the window to be still.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RestThresholds {
    /// Farthest any pose in the window may be from the newest (m).
    pub max_distance_m: f32,
    /// Cosine of half the largest turn from the newest pose (see [`min_half_cos`]).
    pub min_half_cos: f32,
    /// See [`REST_MAX_POINT_SPEED_M_S`].
    pub max_point_speed_m_s: f32,
    /// See [`REST_MAX_POINT_SPEED_CHANGE_M_S`].
    pub max_point_speed_change_m_s: f32,
}

impl RestThresholds {
    /// The pose thresholds given (m, rad), the speed thresholds of this module.
    pub fn new(max_distance_m: f32, max_turn_rad: f32) -> RestThresholds {
        RestThresholds {
            max_distance_m,
            min_half_cos: min_half_cos(max_turn_rad),
            max_point_speed_m_s: REST_MAX_POINT_SPEED_M_S,
            max_point_speed_change_m_s: REST_MAX_POINT_SPEED_CHANGE_M_S,
        }
    }
}

/// The last poses and velocities of one body.
#[derive(Clone, Copy, Debug)]
pub struct MotionHistory {
    positions: [Vec3; REST_WINDOW],
    rotations: [Quat; REST_WINDOW],
    linear: [Vec3; REST_WINDOW],
    angular: [Vec3; REST_WINDOW],
    /// Index of the newest entry.
    head: u8,
    /// Entries recorded since the last clear, up to the window.
    len: u8,
    /// The velocity's trend over the full window as of the last push (zero before the window fills): linear,
    /// angular. Computed once a step, read by the rest test and the reversal bookkeeping.
    trend: [Vec3; 2],
    /// The trend the last reversal was judged against ([`MotionHistory::observe_trend`]): linear, angular.
    reference_trend: [Vec3; 2],
    /// One bit per step observed, newest lowest: whether the trend turned against the reference at that step.
    reversals: u32,
}

impl Default for MotionHistory {
    fn default() -> Self {
        Self {
            positions: [Vec3::ZERO; REST_WINDOW],
            rotations: [Quat::IDENTITY; REST_WINDOW],
            linear: [Vec3::ZERO; REST_WINDOW],
            angular: [Vec3::ZERO; REST_WINDOW],
            head: 0,
            len: 0,
            trend: [Vec3::ZERO; 2],
            reference_trend: [Vec3::ZERO; 2],
            reversals: 0,
        }
    }
}

impl MotionHistory {
    /// Starts the window over: the body must be seen still for [`REST_WINDOW`] more steps.
    pub fn clear(&mut self) {
        self.len = 0;
        self.trend = [Vec3::ZERO; 2];
        self.reference_trend = [Vec3::ZERO; 2];
        self.reversals = 0;
    }

    /// Steps recorded since the last clear, up to the window.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, position: Vec3, rotation: Quat, linear: Vec3, angular: Vec3) {
        let head = (self.head as usize + 1) % REST_WINDOW;
        self.head = head as u8;
        self.positions[head] = position;
        self.rotations[head] = rotation;
        self.linear[head] = linear;
        self.angular[head] = angular;
        self.len = (self.len + 1).min(REST_WINDOW as u8);
        self.trend = if (self.len as usize) == REST_WINDOW {
            self.window_trend()
        } else {
            [Vec3::ZERO; 2]
        };
    }

    /// Once per step after [`MotionHistory::push`]: notes whether the velocity's trend over the full window turned
    /// against the one last noted as a reversal (their dot product, angular parts weighted by `radius`², below
    /// zero). A body that tips over an edge accelerates one way step after step; one that rocks on a pile it stands
    /// on turns its trend back every half period.
    pub fn observe_trend(&mut self, radius: f32) {
        self.reversals <<= 1;
        if (self.len as usize) < REST_WINDOW {
            return;
        }
        let [dv, dw] = self.trend;
        let [rv, rw] = self.reference_trend;
        if dv.dot(rv) + dw.dot(rw) * radius * radius < 0.0 {
            self.reversals |= 1;
            self.reference_trend = [dv, dw];
        } else if rv == Vec3::ZERO && rw == Vec3::ZERO {
            self.reference_trend = [dv, dw];
        }
    }

    /// Whether the trend turned back at least [`MIN_REVERSALS`] times in the last [`REVERSAL_SPAN_STEPS`] steps:
    /// the body rocks about where it stands rather than accelerating away.
    fn rocking(&self) -> bool {
        (self.reversals & REVERSAL_SPAN_MASK).count_ones() >= MIN_REVERSALS
    }

    /// True when the window is full and the body neither moved, nor moved fast, nor accelerated in it (see the
    /// module comment). `radius` (m) turns angular speeds into the speed of the body's farthest point.
    pub fn is_still(&self, radius: f32, t: &RestThresholds) -> bool {
        (self.len as usize) == REST_WINDOW
            && self.pose_is_still(t)
            && self.speeds_are_small(radius, t)
            && self.not_accelerating(radius, t)
    }

    fn pose_is_still(&self, t: &RestThresholds) -> bool {
        let (p, q) = (self.positions[self.head as usize], self.rotations[self.head as usize]);
        let max_d2 = t.max_distance_m * t.max_distance_m;
        self.positions.iter().zip(&self.rotations).all(|(pk, qk)| {
            // |dot| because q and -q are the same rotation.
            (*pk - p).length_squared() <= max_d2 && qk.dot(q).abs() >= t.min_half_cos
        })
    }

    fn speeds_are_small(&self, radius: f32, t: &RestThresholds) -> bool {
        self.linear
            .iter()
            .zip(&self.angular)
            .all(|(v, w)| point_speed(*v, *w, radius) <= t.max_point_speed_m_s)
    }

    /// The velocity's trend over the window, fitted by least squares (the slope times the window's length): a
    /// steady acceleration shows in full, while the step-to-step jitter of a body held by a large pile (a few mm/s
    /// in a 5,050-cube pyramid) mostly averages out, which comparing single entries would not do.
    ///
    /// A trend past the threshold that keeps turning back (the body rocks in place, a few mm/s each way, as a cube
    /// lying across the edges of two others can for ever) is not acceleration: the pose test still holds such a
    /// body to the linear and angular thresholds over the window.
    fn not_accelerating(&self, radius: f32, t: &RestThresholds) -> bool {
        let [dv, dw] = self.trend;
        point_speed(dv, dw, radius) <= t.max_point_speed_change_m_s || self.rocking()
    }

    /// The least-squares trend of the linear and angular velocity over the window.
    fn window_trend(&self) -> [Vec3; 2] {
        let (mut dv, mut dw) = (Vec3::ZERO, Vec3::ZERO);
        for age in 0..REST_WINDOW {
            let k = (self.head as usize + REST_WINDOW - age) % REST_WINDOW;
            let weight = TREND_WEIGHTS[REST_WINDOW - 1 - age];
            dv += self.linear[k] * weight;
            dw += self.angular[k] * weight;
        }
        [dv, dw]
    }
}

/// Weights that turn a window of samples, oldest first, into its least-squares slope times the window's span
/// (`REST_WINDOW - 1` steps): for sample `j`, `(j - mean) / Σ (j - mean)² · (REST_WINDOW - 1)`. For a ramp this
/// is exactly its change from the first sample to the last.
const TREND_WEIGHTS: [f32; REST_WINDOW] = trend_weights();

const fn trend_weights() -> [f32; REST_WINDOW] {
    let n = REST_WINDOW as f32;
    let mean = (n - 1.0) / 2.0;
    let mut sum_sq = 0.0;
    let mut j = 0;
    while j < REST_WINDOW {
        let d = j as f32 - mean;
        sum_sq += d * d;
        j += 1;
    }
    let mut w = [0.0; REST_WINDOW];
    let mut j = 0;
    while j < REST_WINDOW {
        w[j] = (j as f32 - mean) / sum_sq * (n - 1.0);
        j += 1;
    }
    w
}

/// Upper bound on the speed of any point within `radius` of the centre (m/s).
fn point_speed(linear: Vec3, angular: Vec3, radius: f32) -> f32 {
    linear.length() + angular.length() * radius
}

/// Cosine of half of `angle`: the smallest |q0·q1| two rotations at most `angle` apart can have.
pub fn min_half_cos(angle_rad: f32) -> f32 {
    (0.5 * angle_rad).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RADIUS_M: f32 = 0.87;

    fn thresholds() -> RestThresholds {
        RestThresholds::new(0.005, 0.01)
    }

    fn push_pose(h: &mut MotionHistory, p: Vec3, q: Quat) {
        h.push(p, q, Vec3::ZERO, Vec3::ZERO);
    }

    #[test]
    fn still_only_after_a_full_window_of_small_motion() {
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            assert!(
                !h.is_still(RADIUS_M, &thresholds()),
                "not still before the window is full ({i})"
            );
            push_pose(&mut h, Vec3::new(0.0, 0.5 + i as f32 * 1e-4, 0.0), Quat::IDENTITY);
        }
        assert!(h.is_still(RADIUS_M, &thresholds()));
        h.clear();
        assert!(
            h.is_empty() && !h.is_still(RADIUS_M, &thresholds()),
            "a cleared window starts over"
        );
    }

    #[test]
    fn motion_or_turn_beyond_thresholds_in_the_window_is_not_still() {
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            push_pose(&mut h, Vec3::new(i as f32 * 0.001, 0.0, 0.0), Quat::IDENTITY);
        }
        assert!(!h.is_still(RADIUS_M, &thresholds()), "moved 15 mm over the window");
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            push_pose(&mut h, Vec3::ZERO, Quat::from_rotation_y(i as f32 * 0.002));
        }
        assert!(!h.is_still(RADIUS_M, &thresholds()), "turned 0.03 rad over the window");
        // Old motion leaves the window.
        for _ in 0..REST_WINDOW {
            push_pose(&mut h, Vec3::ZERO, Quat::from_rotation_y(0.03));
        }
        assert!(h.is_still(RADIUS_M, &thresholds()));
    }

    #[test]
    fn negated_quaternion_is_the_same_rotation() {
        let mut h = MotionHistory::default();
        let q = Quat::from_rotation_x(1.0);
        for i in 0..REST_WINDOW {
            push_pose(&mut h, Vec3::ZERO, if i % 2 == 0 { q } else { -q });
        }
        assert!(h.is_still(RADIUS_M, &thresholds()));
    }

    #[test]
    fn a_body_that_barely_moves_but_is_fast_or_speeding_up_is_not_still() {
        // Fast in one step of the window (a hit it has not moved from yet).
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            let v = if i == 5 { Vec3::X * 0.05 } else { Vec3::ZERO };
            h.push(Vec3::ZERO, Quat::IDENTITY, v, Vec3::ZERO);
        }
        assert!(!h.is_still(RADIUS_M, &thresholds()));
        // A cube tipping over an edge 1° past balance: 0.18 rad/s² from rest, a pose change of 3 mrad only.
        let alpha = 0.18 / 90.0;
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            h.push(Vec3::ZERO, Quat::IDENTITY, Vec3::ZERO, Vec3::Z * alpha * i as f32);
        }
        assert!(!h.is_still(RADIUS_M, &thresholds()), "speeding up");
        // The same tilt starting late in the window: the trend shows it six steps after it began. (A body that
        // lost a prop has its window cleared by the world, so this is the fallback, not the only defence.)
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            let since = (i + 7).saturating_sub(REST_WINDOW);
            h.push(Vec3::ZERO, Quat::IDENTITY, Vec3::ZERO, Vec3::Z * alpha * since as f32);
        }
        assert!(!h.is_still(RADIUS_M, &thresholds()), "speeding up for six steps");
        // Residual jitter of a body held by its supports is still, even at several mm/s from step to step.
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            let sign = if i % 2 == 0 { 3.0 } else { -3.0 };
            h.push(
                Vec3::ZERO,
                Quat::IDENTITY,
                Vec3::Y * 0.001 * sign,
                Vec3::X * 0.001 * sign,
            );
        }
        assert!(h.is_still(RADIUS_M, &thresholds()));
    }

    /// Velocities as a cube lying across the edges of two others had them for the last 20 s of a session (5 %
    /// loss, seed 6, player 4's world): a few mm/s each way, linear and angular, with a period of about 19 steps,
    /// in a pose that stayed within 0.1 mm. Its trend over a window passed 5 mm/s at every step, so it never came
    /// to rest, its authority never returned it, and the session did not end identical.
    fn rocking_at(step: usize) -> (Vec3, Vec3, Vec3) {
        let phase = step as f32 * std::f32::consts::TAU / 19.0;
        let v = Vec3::new(0.003 * phase.sin(), -0.002, 0.005 * phase.cos());
        let w = Vec3::new(0.005 * phase.cos(), 0.0, 0.004 * phase.sin());
        (Vec3::new(0.0, 0.0, 0.00005 * phase.sin()), v, w)
    }

    /// Those steps pushed, the reversals noted after each (as the world does) or not (the rule before).
    fn rocking(h: &mut MotionHistory, steps: std::ops::Range<usize>, note_reversals: bool) {
        for i in steps {
            let (p, v, w) = rocking_at(i);
            h.push(p, Quat::IDENTITY, v, w);
            if note_reversals {
                h.observe_trend(RADIUS_M);
            }
        }
    }

    #[test]
    fn a_body_rocking_in_place_is_still_and_one_that_turns_back_once_and_tips_is_not() {
        let mut h = MotionHistory::default();
        rocking(&mut h, 0..200, true);
        let stills = (200..219)
            .filter(|&i| {
                rocking(&mut h, i..i + 1, true);
                h.is_still(RADIUS_M, &thresholds())
            })
            .count();
        // Not at every step (the pose test looks at every step's window too), but within a period.
        assert!(stills > 0, "rocking is never still");
        // Without the reversals noted (the rule before), the trend alone never lets it rest.
        let mut plain = MotionHistory::default();
        let trend_says_still = (0..60)
            .filter(|&i| {
                rocking(&mut plain, i..i + 1, false);
                plain.is_still(RADIUS_M, &thresholds())
            })
            .count();
        assert_eq!(trend_says_still, 0, "the trend alone passes this rocking");
        // Set down, it swings back once (one reversal of its trend), then tips the other way: never rocking, so
        // its trend is judged as before and keeps it awake once it passes the threshold.
        let alpha = 0.18 / 90.0;
        let mut h = MotionHistory::default();
        for i in 0..REST_WINDOW {
            h.push(Vec3::ZERO, Quat::IDENTITY, Vec3::ZERO, Vec3::Z * (-alpha * i as f32));
            h.observe_trend(RADIUS_M);
        }
        for i in 0..60 {
            h.push(Vec3::ZERO, Quat::IDENTITY, Vec3::ZERO, Vec3::Z * alpha * i as f32);
            h.observe_trend(RADIUS_M);
            assert!(!h.rocking(), "tipping, step {i}: {:b}", h.reversals);
        }
        assert!(!h.is_still(RADIUS_M, &thresholds()), "tipping");
    }
}
