//! Held cubes: the cubes in other players' hands, taken from their avatars, pinned in the played-out hand a step
//! behind, let go where the hand lets go; and the peer's own holds lost to a better claim.

use glam::Quat;

use super::*;

/// The fastest a cube held in a remote hand is moved here with that hand (m/s): faster than hands move (a throw
/// leaves at up to 12 m/s). A played-out hand that moves faster has jumped (a hold played out far from where the
/// cube was, a cube passed from one hand to the other): the rest is a gap, caught up at
/// [`REMOTE_HELD_CATCH_UP_M_S`]. Swept there in one step, the kinematic cube hit what it met at up to 50 m/s.
pub const MAX_REMOTE_HELD_SPEED_M_S: f32 = 15.0;

/// The same for turning (rad/s): a hand turns at a few turns a second at most.
pub const MAX_REMOTE_HELD_SPIN_RAD_S: f32 = 30.0;

/// How fast a remote held cube closes the gap between where it is simulated here and where the played-out hand has
/// it (m/s), on top of the hand's own motion: as fast as the hand may move. Slower, the cube lags the hand it is
/// drawn in and pushes what it meets late: tried at 1 m/s, ten 600 s sessions bent 8,804 drawn frames by over 1 cm,
/// against 7,423 at this speed. A gap in position sweeps what it meets at this speed at most
/// (`a_remote_hands_jump_is_caught_up_without_flinging_what_the_held_cube_meets`).
pub const REMOTE_HELD_CATCH_UP_M_S: f32 = MAX_REMOTE_HELD_SPEED_M_S;

/// How fast a remote held cube closes a gap in its turn (rad/s), on top of the hand's own turning: slowly. A gap
/// is where two worlds disagree, not motion anyone made: a cube tumbling here when its hold played out was taken
/// from where it lay in the holder's world, 16 cm and 15° away, and turned there at the hand's 30 rad/s its corners
/// swept at 26 m/s and threw the cube lying on it at 30 m/s (a 9 m jump on every other screen). At this speed the
/// corners of a one-metre cube move at 1.7 m/s.
pub const REMOTE_HELD_CATCH_UP_RAD_S: f32 = 2.0;

/// Moves kinematic cube `id` for one step towards `target`, which moves with `motion` (the played-out hand's): with
/// the hand, at most at [`MAX_REMOTE_HELD_SPEED_M_S`] and [`MAX_REMOTE_HELD_SPIN_RAD_S`], and across what is left
/// between the two at most at [`REMOTE_HELD_CATCH_UP_M_S`] and [`REMOTE_HELD_CATCH_UP_RAD_S`]. A cube that has
/// caught up follows the hand exactly, and pushes what it meets at the hand's speed.
pub(super) fn move_held_towards(
    world: &mut World,
    id: BodyId,
    target: &Pose,
    motion: &Motion,
) -> Result<(), PhysicsError> {
    let dt = world.config().dt;
    let now = world.state(id)?;
    let with_hand = now.position + (motion.velocity * dt).clamp_length_max(MAX_REMOTE_HELD_SPEED_M_S * dt);
    let position = with_hand + (target.position - with_hand).clamp_length_max(REMOTE_HELD_CATCH_UP_M_S * dt);
    let turn = (motion.spin * dt).clamp_length_max(MAX_REMOTE_HELD_SPIN_RAD_S * dt);
    let turned = (Quat::from_scaled_axis(turn) * now.rotation).normalize();
    let gap = turned.angle_between(target.rotation);
    let most = REMOTE_HELD_CATCH_UP_RAD_S * dt;
    let rotation = if gap > most {
        turned.slerp(target.rotation, most / gap)
    } else {
        target.rotation
    };
    world.set_kinematic_target(id, position, rotation)
}

impl Peer {
    /// The cubes in `player`'s hands as `avatar` has them: each a claim, judged (host) or accepted (guest) as a
    /// cube state is; a taken one is that player's to hold (kinematic, following the played-out hand). True when
    /// every claim was taken.
    pub(super) fn take_held(&mut self, player: u8, avatar: &WireAvatar) -> Result<bool, PeerError> {
        let mut all_taken = true;
        for hand in avatar.to_poses().hands {
            let Some(held) = hand.held else { continue };
            let cube = held.cube;
            if self.world.is_removed(BodyId(cube))? {
                self.refuse(RejectReason::UnknownCube);
                all_taken = false;
                continue;
            }
            let stamp = AuthorityStamp {
                authority: player,
                authority_seq: held.authority_seq,
                ownership_seq: held.ownership_seq,
            };
            let local = self.table.stamp(cube);
            let taken = if self.is_host {
                match judge_claim(player, &stamp, &local, self.table.reserved_for(cube)) {
                    Ok(()) => {
                        self.stats.accepted_claims[usize::from(player.min(4))] += 1;
                        true
                    }
                    Err(reason) => {
                        self.refuse(reason);
                        false
                    }
                }
            } else {
                guest_accepts_hold(self.table.me(), &stamp, &local)
            };
            all_taken &= taken;
            if taken {
                self.put_in_hand(cube, player, stamp)?;
            }
        }
        Ok(all_taken)
    }

    /// A claim on `cube` in `player`'s hand was taken: the table says so, and the cube follows the hand.
    pub(super) fn put_in_hand(&mut self, cube: u32, player: u8, stamp: AuthorityStamp) -> Result<(), PeerError> {
        self.lose_if_mine(cube)?;
        self.table.set(cube, stamp, player);
        self.applied_rest[cube as usize] = None;
        let id = BodyId(cube);
        if self.world.kind(id)? != BodyKind::Kinematic {
            self.set_kind_keeping_rest(id, BodyKind::Kinematic)?;
        }
        // The newest avatar's pose is judged (the host) and relayed, not followed: `follow_remote_hands` moves the
        // cube with the played-out hand (until that hand takes it, where it was), which moves smoothly, where the
        // newest avatar jumps as packets arrive in bursts and a cube dragged along at such speeds would fling what
        // it touches.
        Ok(())
    }

    /// Releases: cubes held (as we know it) by the sender's player — on a guest, by anyone but us, since the host
    /// speaks for everyone — that no avatar in its newest message names.
    pub(super) fn release_unnamed(&mut self, from_player: u8, header: &StateHeader) -> Result<(), PeerError> {
        let named = |c: u32| {
            header
                .avatars
                .iter()
                .flatten()
                .any(|a| a.avatar.hands.iter().any(|h| h.held.is_some_and(|held| held.cube == c)))
        };
        for cube in 0..self.cube_count {
            let holder = self.table.holder(cube);
            let released = holder != NOBODY
                && holder != self.table.me()
                && !named(cube)
                && (holder == from_player || !self.is_host);
            if released {
                self.table.set_holder(cube, NOBODY);
                let id = BodyId(cube);
                if self.world.kind(id)? == BodyKind::Kinematic {
                    self.set_kind_keeping_rest(id, BodyKind::Dynamic)?;
                }
            }
        }
        Ok(())
    }

    /// Changes a cube's kind for someone else's hold or release without waking what rests around it here. The
    /// world wakes a body's neighbours when its kind changes; but the cubes this peer does not simulate for
    /// everyone must move only when their authority says so (else a resting tower under a remote hand settles a
    /// few micrometres here and is snapped back: rest jitter). Cubes this peer simulates keep the wake.
    pub(super) fn set_kind_keeping_rest(&mut self, id: BodyId, kind: BodyKind) -> Result<(), PhysicsError> {
        self.resting_before.clear();
        for c in 0..self.cube_count {
            let other = BodyId(c);
            if c != id.0
                && !self.table.is_local_authority(c)
                && !self.world.is_removed(other)?
                && self.world.state(other)?.at_rest
            {
                self.resting_before.push(c);
            }
        }
        self.world.set_kind(id, kind)?;
        for i in 0..self.resting_before.len() {
            let other = BodyId(self.resting_before[i]);
            let s = self.world.state(other)?;
            if !s.at_rest {
                self.world.set_state(other, &BodyState { at_rest: true, ..s })?;
            }
        }
        Ok(())
    }

    /// This peer held `cube` or had a claim on it, and someone else's word won: let go, count it.
    pub(super) fn lose_if_mine(&mut self, cube: u32) -> Result<(), PeerError> {
        if self.interaction.forget(BodyId(cube)) {
            self.stats.holds_lost += 1;
            let id = BodyId(cube);
            if self.world.kind(id)? == BodyKind::Kinematic {
                self.set_kind_keeping_rest(id, BodyKind::Dynamic)?;
            }
        }
        Ok(())
    }

    /// Cubes held by other players are simulated where they are drawn: in the played-out hand (or, until the hold
    /// plays out, where they were), one step behind, so they push what they touch at the hand's own speed.
    pub(super) fn follow_remote_hands(&mut self) -> Result<(), PeerError> {
        let me = self.table.me();
        for cube in 0..self.cube_count as usize {
            let holder = self.table.holder(cube as u32);
            let id = BodyId(cube as u32);
            if holder == NOBODY || holder == me || self.world.kind(id)? != BodyKind::Kinematic {
                continue;
            }
            let (target, motion) = match (self.remote.hand_drawn(cube), self.remote.hand_drawn_motion(cube)) {
                (Some(pose), Some(motion)) => (pose, motion),
                _ => (pose(&self.world.state(id)?), Motion::default()),
            };
            move_held_towards(&mut self.world, id, &target, &motion)?;
        }
        Ok(())
    }
}
