//! The other players' avatars on one peer: each played out of its own jitter buffer
//! ([`AvatarPlayout`], pushed with the player's sample step and the arrival time), sampled once per step so the
//! view can draw remote heads and hands, and the cubes in remote hands drawn in those hands.
//!
//! What is drawn and what is simulated differ here on purpose. A remote held cube is *simulated* where the newest
//! avatar puts it (the hold rules, `session::peer`), but *drawn* in the played-out hand, which runs a playout delay
//! behind: drawn pose = played-out hand pose ∘ the cube's pose in the hand. When a cube starts or stops being drawn
//! from a hand, the jump between the two is handed to [`DrawSmoothing`] as a snap, so it eases instead of popping.
//!
//! The host also keeps each guest's newest accepted avatar here, to relay. Fixed arrays (players 1–4) and one
//! per-cube array sized once: nothing allocates per step.

use tumble_engine::physics::{BodyId, PhysicsError, World};

use crate::authority::{AuthorityTable, NOBODY};
use crate::avatar::Pose;
use crate::smoothing::DrawSmoothing;
use crate::sync::codec::avatar_state::AvatarPoses;
use crate::sync::link::avatar_baseline::{AvatarSample, AVATAR_SLOTS};
use crate::sync::link::playout::AvatarPlayout;

/// The remote players' avatars as this peer plays them out.
#[derive(Clone, Debug)]
pub struct RemoteAvatars {
    playouts: [AvatarPlayout; AVATAR_SLOTS],
    /// What each player's buffer gave at the last [`RemoteAvatars::sample`] (index = player − 1).
    played: [Option<AvatarPoses>; AVATAR_SLOTS],
    /// Host: each guest's newest accepted avatar, relayed to the others.
    newest: [Option<AvatarSample>; AVATAR_SLOTS],
    /// Per cube: where it is drawn from a remote hand this step (`None`: drawn from its simulation).
    hand_drawn: Vec<Option<Pose>>,
    /// Per cube: the same, the step before.
    hand_drawn_before: Vec<Option<Pose>>,
}

fn slot(player: u8) -> Option<usize> {
    let s = usize::from(player).checked_sub(1)?;
    (s < AVATAR_SLOTS).then_some(s)
}

impl RemoteAvatars {
    pub fn new(cube_count: usize) -> Self {
        Self {
            playouts: std::array::from_fn(|_| AvatarPlayout::new()),
            played: [None; AVATAR_SLOTS],
            newest: [None; AVATAR_SLOTS],
            hand_drawn: vec![None; cube_count],
            hand_drawn_before: vec![None; cube_count],
        }
    }

    /// A sample of `player`'s avatar arrived at `arrival_s` (this peer's clock).
    pub fn push(&mut self, player: u8, sample: &AvatarSample, arrival_s: f64) {
        if let Some(s) = slot(player) {
            self.playouts[s].push(u64::from(sample.step), arrival_s, sample.avatar);
        }
    }

    /// Host: `player`'s avatar was judged and accepted: it is the one relayed from now on, and it is played out.
    pub fn accept(&mut self, player: u8, sample: &AvatarSample, arrival_s: f64) {
        if let Some(s) = slot(player) {
            self.newest[s] = Some(*sample);
        }
        self.push(player, sample, arrival_s);
    }

    /// Host: `player`'s newest accepted avatar.
    pub fn newest(&self, player: u8) -> Option<&AvatarSample> {
        self.newest.get(slot(player)?)?.as_ref()
    }

    /// `player` left: its avatar is no longer drawn nor relayed; a player joining in its slot starts afresh.
    pub fn forget(&mut self, player: u8) {
        if let Some(s) = slot(player) {
            self.playouts[s].reset();
            self.played[s] = None;
            self.newest[s] = None;
        }
    }

    /// `player`'s avatar as played out at the last step (`None`: nothing has arrived).
    pub fn played(&self, player: u8) -> Option<&AvatarPoses> {
        self.played.get(slot(player)?)?.as_ref()
    }

    /// `player`'s jitter buffer.
    pub fn playout(&self, player: u8) -> Option<&AvatarPlayout> {
        self.playouts.get(slot(player)?)
    }

    /// Where `cube` is drawn from a remote hand this step, if it is.
    pub fn hand_drawn(&self, cube: usize) -> Option<Pose> {
        self.hand_drawn.get(cube).copied().flatten()
    }

    /// How far `cube` moved in the remote hand it is drawn from over the last step (m), when it was drawn from
    /// one both steps: the motion its drawn pose follows, as a simulated cube's follows its velocity.
    pub fn hand_drawn_step(&self, cube: usize) -> Option<glam::Vec3> {
        let (now, before) = (
            self.hand_drawn(cube)?,
            self.hand_drawn_before.get(cube).copied().flatten()?,
        );
        Some(now.position - before.position)
    }

    /// Once per step at `now_s`: every buffer that has samples is played out, and each cube held by a remote
    /// player (in `table`) whose played-out hand holds it is drawn there. `me`'s own slot is never played.
    pub fn sample(
        &mut self,
        now_s: f64,
        me: u8,
        table: &AuthorityTable,
        world: &World,
        smoothing: &mut DrawSmoothing,
    ) -> Result<(), PhysicsError> {
        for (s, (playout, played)) in self.playouts.iter_mut().zip(&mut self.played).enumerate() {
            *played = if s + 1 == usize::from(me) {
                None
            } else {
                playout.sample(now_s)
            };
        }
        for cube in 0..self.hand_drawn.len() {
            let holder = table.holder(cube as u32);
            let in_hand = if holder == NOBODY || holder == me {
                None
            } else {
                self.played(holder).and_then(|poses| {
                    poses
                        .hands
                        .iter()
                        .filter_map(|h| h.held_world_pose())
                        .find(|&(c, _)| c == cube as u32)
                        .map(|(_, pose)| pose)
                })
            };
            let was = self.hand_drawn[cube];
            if in_hand.is_some() || was.is_some() {
                let s = world.state(BodyId(cube as u32))?;
                let simulated = Pose::new(s.position, s.rotation);
                // The drawn pose stays put across the switch between the hand and the simulation, then eases.
                match (was, in_hand) {
                    (None, Some(hand)) => smoothing.on_snap(cube, &simulated, &hand),
                    (Some(hand), None) => smoothing.on_snap(cube, &hand, &simulated),
                    _ => {}
                }
            }
            self.hand_drawn_before[cube] = was;
            self.hand_drawn[cube] = in_hand;
        }
        Ok(())
    }
}
