//! Judging: a host judges every fresh cube update a guest sends (the authority rules) and accepts or refuses it;
//! a guest accepts what the host sends unless its own claim is newer.

use super::*;
use crate::sync::codec::quantize::dequantize_state;

impl Peer {
    pub(super) fn take_updates(&mut self, peer: PeerId, from_player: u8, age_steps: u32) -> Result<(), PeerError> {
        let slot = if self.is_host { usize::from(peer.0) } else { 0 };
        let count = self.links[slot].as_ref().map_or(0, |l| l.receiver.update_count());
        // Left over only if the last message's reading stopped at an error.
        self.taken_now.clear();
        self.fresh_moving.clear();
        for i in 0..count {
            let Some((id, state)) = self.links[slot].as_mut().and_then(|l| l.receiver.take_fresh(i)) else {
                continue;
            };
            let cube = id.0;
            let local = self.table.stamp(cube);
            let taken = if self.is_host {
                match judge_claim(from_player, &state.stamp, &local, self.table.reserved_for(cube)) {
                    Ok(()) => {
                        self.stats.accepted_claims[usize::from(from_player.min(4))] += 1;
                        true
                    }
                    Err(reason) => {
                        self.refuse(reason);
                        if matches!(reason, RejectReason::Stale | RejectReason::LostTie) {
                            // The guest simulates and sends a cube that is no longer its: tell it now (the cube
                            // waited its turn before, seconds on a full link, while the guest sent it in every
                            // packet and every one was refused).
                            if let Some(link) = self.links[slot].as_mut() {
                                link.sender.hurry(cube);
                            }
                        }
                        false
                    }
                }
            } else {
                guest_accepts(self.table.me(), &state.stamp, &local)
            };
            if !taken {
                continue;
            }
            let mine = local.authority == self.table.me() && self.table.me() != DEFAULT_AUTHORITY;
            if mine && state.stamp.authority != self.table.me() {
                let here = quantize_state(&self.world.state(id)?);
                let same = here.at_rest
                    && (here.position, here.rotation, here.at_rest) == (state.position, state.rotation, state.at_rest);
                let half_diagonal_m = self.world.half_extents(id)?.length();
                if state.stamp.authority == DEFAULT_AUTHORITY && moved_on_from(&here, &state, half_diagonal_m) {
                    // Rule 8b: the host returned the cube on a resting state we have since moved on from (the
                    // cube was hit again while the news was on its way). Take it back at once, one authority
                    // sequence later, with what we have: the host takes the newer claim and nothing is lost.
                    // Still resting where the host has it (to a millimetre), we have not moved on: the host's copy
                    // may have woken since (a neighbour's update touched it there) and say so, but taking the cube
                    // back for that only has the host return it again, and in a block of touching cubes each
                    // return woke the next: a loop that never ended.
                    self.stats.reclaims += 1;
                    let again = AuthorityStamp {
                        authority: self.table.me(),
                        authority_seq: state.stamp.authority_seq.wrapping_add(1),
                        ownership_seq: state.stamp.ownership_seq,
                    };
                    self.table.set(cube, again, self.table.holder(cube));
                    continue;
                }
                if state.stamp.authority != DEFAULT_AUTHORITY && !same {
                    self.stats.corrections += 1;
                    let moved = Vec3::from_array(std::array::from_fn(|k| {
                        (here.position[k] - state.position[k]) as f32 / POSITION_UNITS_PER_M
                    }));
                    self.stats.correction_max_m = self.stats.correction_max_m.max(f64::from(moved.length()));
                }
            }
            self.lose_if_mine(cube)?;
            if self.world.kind(id)? == BodyKind::Kinematic && !self.interaction.is_held(id) {
                self.set_kind_keeping_rest(id, BodyKind::Dynamic)?;
            }
            self.table.set(cube, state.stamp, NOBODY);
            if self.is_host && !state.at_rest {
                // Fresh news from the cube's authority: pass it on to the other guests soon, not in its turn.
                for (k, link) in self.links.iter_mut().enumerate() {
                    if let (Some(link), true) = (link.as_mut(), k != slot) {
                        if let Some(a) = link.sender.activity.get_mut(cube as usize) {
                            a.record_news();
                        }
                    }
                }
            }
            let old = self.world.state(id)?;
            apply_state(&mut self.world, id, &state)?;
            self.applied_rest[cube as usize] = state.at_rest.then_some(state);
            if self.is_host && state.at_rest {
                self.taken_rest[cube as usize] = Some(state);
            }
            self.taken_now.push((id, old));
            // (A cube named twice in one message, which only a broken peer sends, is predicted once.)
            if self.may_carry_forward(id)? && !self.fresh_moving.contains(&id) {
                self.fresh_moving.push(id);
            }
        }
        // Every state of the message is in (as it came) before any is carried forward: the cubes it moves are
        // predicted together, at one age, with what they meet.
        self.carry_forward(age_steps)?;
        for k in 0..self.taken_now.len() {
            let (id, old) = self.taken_now[k];
            let new = self.world.state(id)?;
            if self.steps_since_welcome() > JOIN_GRACE_STEPS {
                let moved = old.position.distance(new.position);
                self.stats.corrections_over_1cm += u64::from(moved > 0.01);
                self.stats.corrections_over_10cm += u64::from(moved > 0.1);
            }
            self.snap_drawn(id.0 as usize, &old, &new);
        }
        self.taken_now.clear();
        self.fresh_moving.clear();
        Ok(())
    }

    /// Whether cube `id`, just given another authority's state, is carried forward by the state's age: when it
    /// moves, dynamic, out of every hand and not a player's own cube (`forward`). Not when resting (it rests where
    /// its authority says), held, or its player's own; nor in a game whose players push cubes with forces (the cube
    /// game's pull and blow): the scratch worlds have only gravity, and a pulled cube carried on ballistic there
    /// lands where nothing put it.
    fn may_carry_forward(&self, id: BodyId) -> Result<bool, PeerError> {
        let cube = id.0;
        let forces_at_play = self.own_game_input.is_some() || self.game_inputs.iter().any(Option::is_some);
        Ok(self.predict_forward
            && !forces_at_play
            && !self.world.state(id)?.at_rest
            && self.world.kind(id)? == BodyKind::Dynamic
            && self.table.holder(cube) == NOBODY
            && self.table.pinned_to(cube) == NOBODY)
    }

    /// The moving cubes a message just gave states `age_steps` old (`fresh_moving`), carried forward to now: all
    /// together with the bodies they may meet when the group fits (`ForwardPrediction::carry_group_forward`),
    /// otherwise each alone, stopped short of any other body.
    fn carry_forward(&mut self, age_steps: u32) -> Result<(), PeerError> {
        if self.fresh_moving.is_empty() {
            return Ok(());
        }
        if self.group_forward
            && self
                .forward
                .carry_group_forward(&self.world, &self.fresh_moving, age_steps)?
        {
            for (k, &id) in self.fresh_moving.iter().enumerate() {
                self.world.set_state(id, &self.forward.predicted()[k])?;
            }
            return Ok(());
        }
        for k in 0..self.fresh_moving.len() {
            let id = self.fresh_moving[k];
            let state = self.world.state(id)?;
            if let Some(ahead) = self.forward.carry_forward(&self.world, id, &state, age_steps)? {
                self.world.set_state(id, &ahead)?;
            }
        }
        Ok(())
    }
}

/// A cube whose copy here rests within this of the host's (its farthest corner, m) is where the host has it: the
/// host's copy may have woken since the return, not moved on.
const RETURNED_POSE_TOLERANCE_M: f32 = 0.001;

/// Rule 8b's test: whether this guest's copy `here` of a cube the host returned to default in state `returned` has
/// moved on from it — awake, or resting farther than [`RETURNED_POSE_TOLERANCE_M`] from it at the corners of a box
/// of half diagonal `half_diagonal_m` (whether the host's copy is awake does not matter).
fn moved_on_from(here: &QuantizedState, returned: &QuantizedState, half_diagonal_m: f32) -> bool {
    let (a, b) = (dequantize_state(here), dequantize_state(returned));
    let turn_rad = a.rotation.angle_between(b.rotation);
    !(here.at_rest && a.position.distance(b.position) + turn_rad * half_diagonal_m <= RETURNED_POSE_TOLERANCE_M)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn state(x: f32, turn_rad: f32, at_rest: bool) -> QuantizedState {
        quantize_state(&BodyState {
            position: Vec3::new(x, 0.5, 0.0),
            rotation: Quat::from_rotation_y(turn_rad),
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            at_rest,
        })
    }

    #[test]
    fn a_guest_resting_where_the_host_returned_its_cube_has_not_moved_on_even_if_the_hosts_copy_woke() {
        let half_diagonal_m = 0.75f32.sqrt();
        let resting_here = state(1.0, 0.0, true);
        // The host's copy woke after the return, a few micrometres off: the same cube, not a new resting place.
        assert!(!moved_on_from(
            &resting_here,
            &state(1.00002, 0.0, false),
            half_diagonal_m
        ));
        assert!(!moved_on_from(&resting_here, &state(1.0, 0.0, true), half_diagonal_m));
        // Moved on: awake here, or resting 5 cm away, or turned 2 mrad (1.7 mm at the corners).
        assert!(moved_on_from(
            &state(1.0, 0.0, false),
            &state(1.0, 0.0, true),
            half_diagonal_m
        ));
        assert!(moved_on_from(&resting_here, &state(1.05, 0.0, true), half_diagonal_m));
        assert!(moved_on_from(&resting_here, &state(1.0, 0.002, true), half_diagonal_m));
    }
}
