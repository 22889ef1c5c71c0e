//! Remote rest jitter: the largest step-to-step movement of a cube as a remote peer has it (what it simulates, and
//! so draws) while the peer with authority over it has it at rest. Precisely, per cube:
//!
//! - the authority's *rest run* is the stretch of steps over which every state it captured for the cube was at
//!   rest (it ends the moment the authority has the cube awake);
//! - the remote's copy is *pinned* once it has applied a resting state describing a step inside the current rest
//!   run (a resting state from before the run, or an awake one, unpins it);
//! - while pinned, from the measurement after the one in whose step it was pinned, any movement of the remote's
//!   quantized pose counts: its farthest corner's displacement (position and rotation both), in metres.
//!
//! A cube's arrival at its resting pose is never counted (it was not pinned the measurement before); a correction
//! that moves a pinned cube is, and so is a pinned cube that the remote's own simulation moves. Flat arrays by cube
//! index, sized once; nothing allocated per step. Used by `loopback`; `session` can feed it per guest.

use glam::{Quat, Vec3};

/// Tracks one remote copy of a scene against the authority's rest.
#[derive(Clone, Debug)]
pub struct RestJitter {
    /// Per cube: first step of the authority's current rest run (`None` while it has the cube awake).
    rest_since: Vec<Option<u64>>,
    /// Per cube: the measurement step in which the remote's copy became pinned (`None` when not pinned).
    pinned_since: Vec<Option<u64>>,
    /// Per cube: the remote's quantized pose at the last measurement.
    previous: Vec<Option<(Vec3, Quat)>>,
    max_m: f64,
}

impl RestJitter {
    pub fn new(cube_count: usize) -> Self {
        Self {
            rest_since: vec![None; cube_count],
            pinned_since: vec![None; cube_count],
            previous: vec![None; cube_count],
            max_m: 0.0,
        }
    }

    /// The authority's state of cube `cube` describing `step` is (or is not) at rest. Call it for every step's
    /// state, in step order (calling twice for one step is harmless).
    pub fn authority_state(&mut self, cube: usize, at_rest: bool, step: u64) {
        let Some(since) = self.rest_since.get_mut(cube) else {
            return;
        };
        if at_rest {
            since.get_or_insert(step);
        } else {
            *since = None;
            self.pinned_since[cube] = None;
        }
    }

    /// The remote applied a state of cube `cube` describing the authority's step `described_step`, during the
    /// step `now` it will next be measured in.
    pub fn applied(&mut self, cube: usize, at_rest: bool, described_step: u64, now: u64) {
        let Some(pinned) = self.pinned_since.get_mut(cube) else {
            return;
        };
        let in_run = self.rest_since[cube].is_some_and(|since| since <= described_step);
        if at_rest && in_run {
            pinned.get_or_insert(now);
        } else {
            *pinned = None;
        }
    }

    /// The remote's quantized pose of cube `cube` after step `now` (`None` once removed), for a box of
    /// `half_extents`.
    pub fn measure(&mut self, cube: usize, pose: Option<(Vec3, Quat)>, half_extents: Vec3, now: u64) {
        let Some(previous) = self.previous.get_mut(cube) else {
            return;
        };
        if let (Some(before), Some(after)) = (*previous, pose) {
            if self.pinned_since[cube].is_some_and(|p| p < now) {
                self.max_m = self
                    .max_m
                    .max(f64::from(corner_movement_m(before, after, half_extents)));
            }
        }
        *previous = pose;
        if pose.is_none() {
            self.pinned_since[cube] = None;
        }
    }

    /// The largest movement counted so far (m).
    pub fn max_m(&self) -> f64 {
        self.max_m
    }
}

/// How far the farthest corner of a box of `half_extents` moves from pose `a` to pose `b` (m).
pub fn corner_movement_m(a: (Vec3, Quat), b: (Vec3, Quat), half_extents: Vec3) -> f32 {
    let mut most = 0.0f32;
    for k in 0..8u32 {
        let sign = |bit: u32| if k & bit == 0 { -1.0 } else { 1.0 };
        let corner = half_extents * Vec3::new(sign(1), sign(2), sign(4));
        let moved = (b.0 + b.1 * corner) - (a.0 + a.1 * corner);
        most = most.max(moved.length());
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF: Vec3 = Vec3::splat(0.5);

    fn at(x: f32) -> Option<(Vec3, Quat)> {
        Some((Vec3::new(x, 0.5, 0.0), Quat::IDENTITY))
    }

    #[test]
    fn only_movement_of_a_pinned_cube_counts_and_arrival_does_not() {
        let mut j = RestJitter::new(1);
        // The authority rests the cube from step 10; the remote's copy is still moving toward it.
        j.measure(0, at(0.3), HALF, 9);
        j.authority_state(0, true, 10);
        j.measure(0, at(0.2), HALF, 10);
        // A resting state from step 8 (before the run) arrives in step 11: not pinned; the arrival moves it.
        j.applied(0, true, 8, 11);
        j.measure(0, at(0.1), HALF, 11);
        // The one from step 10 arrives in step 12: pinned, but arriving is not jitter.
        j.applied(0, true, 10, 12);
        j.measure(0, at(0.0), HALF, 12);
        j.measure(0, at(0.0), HALF, 13);
        assert_eq!(j.max_m(), 0.0);
        // Then something moves it 2 mm: counted.
        j.measure(0, at(0.002), HALF, 14);
        assert!((j.max_m() - 0.002).abs() < 1e-6, "{}", j.max_m());
        // The authority wakes it: movement no longer counts, and a new rest run needs a new resting state.
        j.authority_state(0, false, 15);
        j.measure(0, at(0.5), HALF, 15);
        j.authority_state(0, true, 16);
        j.measure(0, at(0.9), HALF, 16);
        assert!((j.max_m() - 0.002).abs() < 1e-6);
        // An awake state unpins too.
        j.applied(0, true, 16, 17);
        j.measure(0, at(0.9), HALF, 17);
        j.applied(0, false, 16, 18);
        j.measure(0, at(1.9), HALF, 18);
        assert!((j.max_m() - 0.002).abs() < 1e-6);
    }

    #[test]
    fn a_turn_in_place_counts_by_its_farthest_corner() {
        let turn = Quat::from_rotation_y(0.01);
        let moved = corner_movement_m((Vec3::ZERO, Quat::IDENTITY), (Vec3::ZERO, turn), HALF);
        // A corner 0.707 m from the axis moves 0.707 * 0.01 m.
        assert!((moved - 0.5f32.hypot(0.5) * 0.01).abs() < 1e-4, "{moved}");
        let mut j = RestJitter::new(1);
        j.authority_state(0, true, 0);
        j.applied(0, true, 0, 0);
        j.measure(0, Some((Vec3::ZERO, Quat::IDENTITY)), HALF, 0);
        j.measure(0, Some((Vec3::ZERO, turn)), HALF, 1);
        assert!(j.max_m() > 0.007, "{}", j.max_m());
    }
}
