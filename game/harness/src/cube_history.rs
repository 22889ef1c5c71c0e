//! What each cube went through on one peer, as a short log of changes: for the `--processes` harness's failure
//! evidence. A rare failure of a ten-minute soak (a resting copy that moved, final states that differ) cannot be
//! rerun at will — the processes' timing differs on every run — so the report must carry what led up to it.
//!
//! The log is sampled twice a step: before the physics step (after what arrived was applied and the world was
//! quantized) and after it. Telling the two apart says whether a cube was moved by the simulation or by what the
//! peer applied. Only changes are kept, [`HISTORY_LEN`] a cube, so the log reaches back past idle stretches.

use serde_json::{json, Value};

use tumble_game::sync::codec::quantize::QuantizedState;

/// Changes kept per cube.
pub const HISTORY_LEN: usize = 16;

/// When in a step a sample was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// After receiving, playing and quantizing: what the physics step starts from.
    BeforePhysics,
    /// After the physics step and the authority rules that follow it.
    AfterPhysics,
}

/// One cube as a peer had it at a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeSample {
    pub state: QuantizedState,
    /// [authority, authority seq, ownership seq].
    pub stamp: [u16; 3],
    pub holder: u8,
    pub kinematic: bool,
    /// The resting state from another authority this copy is held to, if any.
    pub pinned: Option<QuantizedState>,
    /// Where the cube is drawn (millimetres): the smoothing's eased pose, in which pops show.
    pub drawn_mm: [i32; 3],
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    ms: f64,
    step: u64,
    phase: Phase,
    sample: CubeSample,
}

/// A ring of the last changes of every cube.
pub struct CubeHistory {
    rings: Vec<[Option<Entry>; HISTORY_LEN]>,
    /// Per cube: where the next entry goes.
    next: Vec<usize>,
}

impl CubeHistory {
    pub fn new(cubes: usize) -> Self {
        Self {
            rings: vec![[None; HISTORY_LEN]; cubes],
            next: vec![0; cubes],
        }
    }

    /// Records `sample` for `cube` if it differs from the cube's last one.
    pub fn record(&mut self, cube: usize, ms: f64, step: u64, phase: Phase, sample: CubeSample) {
        let (Some(ring), Some(next)) = (self.rings.get_mut(cube), self.next.get_mut(cube)) else {
            return;
        };
        let last = ring[(*next + HISTORY_LEN - 1) % HISTORY_LEN];
        if last.is_some_and(|e| e.sample == sample) {
            return;
        }
        ring[*next] = Some(Entry {
            ms,
            step,
            phase,
            sample,
        });
        *next = (*next + 1) % HISTORY_LEN;
    }

    /// The cube's changes, oldest first, as JSON objects.
    pub fn to_json(&self, cube: usize) -> Value {
        let (Some(ring), Some(&next)) = (self.rings.get(cube), self.next.get(cube)) else {
            return Value::Null;
        };
        let entries: Vec<Value> = (0..HISTORY_LEN)
            .filter_map(|k| ring[(next + k) % HISTORY_LEN])
            .map(|e| {
                let s = &e.sample;
                json!({
                    "ms": e.ms,
                    "step": e.step,
                    "phase": match e.phase {
                        Phase::BeforePhysics => "before_physics",
                        Phase::AfterPhysics => "after_physics",
                    },
                    "state": state_json(&s.state),
                    "stamp": s.stamp,
                    "holder": s.holder,
                    "kinematic": s.kinematic,
                    "pinned": s.pinned.as_ref().map(state_json),
                    "drawn_mm": s.drawn_mm,
                })
            })
            .collect();
        Value::Array(entries)
    }
}

/// A quantized state as the final report writes it: position, rotation (dropped index, other three), velocities,
/// at rest.
pub fn state_json(q: &QuantizedState) -> Value {
    json!([
        q.position,
        q.rotation.largest,
        q.rotation.smallest_three,
        q.linear_velocity,
        q.angular_velocity,
        q.at_rest
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::BodyState;
    use tumble_game::sync::codec::quantize::quantize_state;

    fn sample(y: f32) -> CubeSample {
        let state = quantize_state(&BodyState {
            position: glam::Vec3::new(0.0, y, 0.0),
            rotation: glam::Quat::IDENTITY,
            linear_velocity: glam::Vec3::ZERO,
            angular_velocity: glam::Vec3::ZERO,
            at_rest: true,
        });
        CubeSample {
            state,
            stamp: [0, 1, 0],
            holder: 0,
            kinematic: false,
            pinned: None,
            drawn_mm: [0, (y * 1000.0) as i32, 0],
        }
    }

    #[test]
    fn keeps_only_changes_and_the_newest_of_them() {
        let mut h = CubeHistory::new(2);
        h.record(1, 0.0, 0, Phase::BeforePhysics, sample(1.0));
        h.record(1, 1.0, 0, Phase::AfterPhysics, sample(1.0));
        assert_eq!(
            h.to_json(1).as_array().map(Vec::len),
            Some(1),
            "an unchanged sample is not kept"
        );
        for k in 0..40u32 {
            h.record(
                1,
                f64::from(k),
                u64::from(k),
                Phase::AfterPhysics,
                sample(2.0 + k as f32),
            );
        }
        let log = h.to_json(1);
        let log = log.as_array().expect("an array");
        assert_eq!(log.len(), HISTORY_LEN);
        assert_eq!(log[0]["step"], 40 - HISTORY_LEN as u64);
        assert_eq!(log[HISTORY_LEN - 1]["step"], 39);
        assert_eq!(h.to_json(0), json!([]));
        assert_eq!(h.to_json(9), Value::Null);
    }
}
