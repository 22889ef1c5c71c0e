//! `--conflict-test`: two guests squeeze on the same cube in the same step, again and again. Both reach for the
//! cube from above, close their hands at the same scheduled step, lift it a little, and — whoever won — put it back
//! down gently, so the pile stays and the next round finds a resting cube. The cube is chosen from the scene by the
//! round number, so both guests pick the same one without talking.

use glam::{Quat, Vec3};
use tumble_engine::physics::BodyId;

use super::driver::Driver;
use crate::avatar::{AvatarInput, HandInput, HandSide, Pose};
use crate::session::peer::Peer;

/// Steps per round: 3 s.
pub const ROUND_STEPS: u64 = 270;
/// Within a round: reach from above until this step, squeeze at [`SQUEEZE_STEP`], lift until [`LIFT_STEP`], lower
/// back until [`PUT_DOWN_STEP`], open the hand, and wait.
const REACH_STEP: u64 = 60;
pub const SQUEEZE_STEP: u64 = 70;
const LIFT_STEP: u64 = 120;
const PUT_DOWN_STEP: u64 = 170;
const OPEN_STEP: u64 = 175;
/// How far above the cube's top face the hand waits, and how high it lifts the cube (m).
const HOVER_M: f32 = 0.6;
const LIFT_M: f32 = 0.3;
/// Gap between the hand and the cube's top face when it squeezes (m): within reach.
const GRIP_GAP_M: f32 = 0.04;

/// One of the two contending guests.
pub struct ConflictDriver {
    /// The target cube of the current round and where its top face was when the round began.
    target: Option<(BodyId, Vec3)>,
}

impl ConflictDriver {
    pub fn new() -> Self {
        Self { target: None }
    }

    /// The cube for `round`: walks the scene's cubes, skipping any whose top is covered (the top of a pile is
    /// where a hand from above reaches).
    fn pick(peer: &Peer, round: u64) -> Option<(BodyId, Vec3)> {
        let n = peer.world.body_count() as u64;
        (0..n).find_map(|k| {
            let id = BodyId(((round * 7 + k) % n) as u32);
            let s = peer.world.state(id).ok()?;
            let half = peer.world.half_extents(id).ok()?;
            let top = s.position + Vec3::Y * half.y;
            let covered = (0..n as u32).any(|j| {
                j != id.0
                    && peer
                        .world
                        .state(BodyId(j))
                        .is_ok_and(|o| (o.position - top).length() < 0.75 && o.position.y > s.position.y)
            });
            (!covered && s.at_rest && !peer.world.is_removed(id).unwrap_or(true)).then_some((id, top))
        })
    }
}

impl Default for ConflictDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl Driver for ConflictDriver {
    fn input(&mut self, step: u64, peer: &Peer, active: bool) -> AvatarInput {
        let round = step / ROUND_STEPS;
        let t = step % ROUND_STEPS;
        if t == 0 || self.target.is_none() {
            self.target = Self::pick(peer, round);
        }
        let Some((_, top)) = self.target else {
            return AvatarInput::default();
        };
        let grip_at = top + Vec3::Y * GRIP_GAP_M;
        let hover = top + Vec3::Y * HOVER_M;
        let lerp = |a: Vec3, b: Vec3, from: u64, to: u64| {
            a.lerp(b, ((t.saturating_sub(from)) as f32 / (to - from) as f32).min(1.0))
        };
        let (position, grip) = if !active {
            (hover, 0.0)
        } else if t < REACH_STEP {
            (lerp(hover, grip_at, 0, REACH_STEP), 0.0)
        } else if t < SQUEEZE_STEP {
            (grip_at, 0.0)
        } else if t < LIFT_STEP {
            (lerp(grip_at, grip_at + Vec3::Y * LIFT_M, SQUEEZE_STEP, LIFT_STEP), 1.0)
        } else if t < PUT_DOWN_STEP {
            (lerp(grip_at + Vec3::Y * LIFT_M, grip_at, LIFT_STEP, PUT_DOWN_STEP), 1.0)
        } else if t < OPEN_STEP {
            (grip_at, 1.0)
        } else {
            (lerp(grip_at, hover, OPEN_STEP, ROUND_STEPS), 0.0)
        };
        let mut input = AvatarInput {
            head: Some(Pose::new(hover + Vec3::Y, Quat::IDENTITY)),
            ..AvatarInput::default()
        };
        input.hands[HandSide::Right.index()] = HandInput {
            tracked: true,
            pose: Pose::new(position, Quat::IDENTITY),
            grip,
            ..HandInput::default()
        };
        input
    }
}
