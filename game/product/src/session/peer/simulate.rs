//! Simulating: the physics step and the authority bookkeeping around it (touch, rest, return to default), the
//! body flags it needs, and the remote hands' cubes moved first.

use super::*;

/// A cube returned to default by rule 9: dynamic again and awake, where it is.
pub(super) fn wake_dynamic(world: &mut World, id: BodyId) -> Result<(), PhysicsError> {
    if world.is_removed(id)? {
        return Ok(());
    }
    if world.kind(id)? == BodyKind::Kinematic {
        world.set_kind(id, BodyKind::Dynamic)?;
    }
    let s = world.state(id)?;
    world.set_state(id, &BodyState { at_rest: false, ..s })
}

impl Peer {
    /// Tells the world which cubes this peer simulates for everyone (as the table now says, after what arrived):
    /// rest detection is on exactly for its own unheld cubes, and every cube under another authority is remote.
    pub(super) fn set_body_flags(&mut self) -> Result<(), PeerError> {
        for cube in 0..self.cube_count as usize {
            let id = BodyId(cube as u32);
            let local = self.table.is_local_authority(cube as u32);
            let want = local && self.table.holder(cube as u32) == NOBODY;
            if want != self.rest_detection[cube] {
                self.world.set_rest_detection(id, want)?;
                self.rest_detection[cube] = want;
            }
            self.world.set_remote(id, !local)?;
        }
        Ok(())
    }

    /// The physics step, then the authority bookkeeping: collisions raise priorities, touch spreads authority
    /// (rule 3), the host returns rested cubes to default (rule 8), and rest detection is on exactly for the cubes
    /// this peer simulates for everyone.
    pub fn simulate(&mut self) -> Result<(), PeerError> {
        let started = std::time::Instant::now();
        let result = self.simulate_step();
        self.stats.simulate_s += started.elapsed().as_secs_f64();
        result
    }

    pub(super) fn simulate_step(&mut self) -> Result<(), PeerError> {
        self.set_body_flags()?;
        self.follow_remote_hands()?;
        for (cube, (rested, moved)) in self.rested_before.iter_mut().zip(&mut self.physics_step).enumerate() {
            let s = self.world.state(BodyId(cube as u32))?;
            (*rested, *moved) = (s.at_rest, -s.position);
            self.pushed_here[cube] -= s.linear_velocity;
        }
        self.world.step();
        let fall = self.world.config().gravity * self.world.config().dt;
        for (cube, moved) in self.physics_step.iter_mut().enumerate() {
            let mut s = self.world.state(BodyId(cube as u32))?;
            if s.at_rest && !self.rested_before[cube] {
                // Put to rest by this step, where the step's motion left it: snapped to the wire's grid now, not at
                // the next step's quantization, so a settled cube does not move a fraction of a quantum one step
                // after it settled (600 s of four bots at 25 % loss: 0.5 µm on the host, whose copy came to rest a
                // step before the authority's resting pose arrived). The next step's quantization then finds it
                // already there; a cube at rest all step did not move and is there already.
                let snapped = quantize_body_state(&s);
                if snapped != s {
                    self.world.set_state(BodyId(cube as u32), &snapped)?;
                    s = snapped;
                }
            }
            *moved += s.position;
            let pushed = &mut self.pushed_here[cube];
            if self.table.is_local_authority(cube as u32) || !pushed.is_finite() {
                *pushed = Vec3::ZERO;
            } else {
                // What falling alone would have given it does not count (a resting body falls nowhere).
                *pushed += s.linear_velocity - if s.at_rest { Vec3::ZERO } else { fall };
            }
        }
        self.smoothing.step();
        let report = self.world.report();
        for c in &report.contacts {
            for body in [Some(c.a), c.b].into_iter().flatten() {
                for link in self.links.iter_mut().flatten() {
                    if let Some(a) = link.sender.activity.get_mut(body.index()) {
                        a.record_collision(c.approach_speed);
                    }
                }
            }
        }
        if self.welcomed {
            self.table
                .spread_by_contact(&self.world, &report.contacts, &self.rested_before)?;
        }
        self.returned.clear();
        let returned = &mut self.returned;
        self.table
            .return_rested(&self.world, |c, previous| returned.push((c, previous)))?;
        self.step += 1;
        for cube in 0..self.cube_count as usize {
            let id = BodyId(cube as u32);
            if !self.is_host && self.table.is_local_authority(cube as u32) && self.table.me() != DEFAULT_AUTHORITY {
                // The resting state this guest would have the host commit; a cube moving again has none (its old
                // resting state is superseded, not lost).
                let q = quantize_state(&self.world.state(id)?);
                self.rest_claims[cube] = q.at_rest.then(|| (self.table.stamp(cube as u32), q));
            } else if ![DEFAULT_AUTHORITY, self.table.me()].contains(&self.table.stamp(cube as u32).authority) {
                // Another player's claim won — a later one, or one of the same sequence the host saw first (a tie:
                // its return to default carries the same stamp ours would). Ours is superseded, not awaiting commit.
                self.rest_claims[cube] = None;
            }
            let sends = sent_every_packet(self.table.pinned_to(cube as u32), self.table.me(), self.is_host);
            if self.welcomed && sends && !self.world.state(id)?.at_rest {
                // A player's own cube (rule 10), moving: what the others most need to see, so its player sends it
                // in every packet, as an avatar, and the host relays it as often to the other guests.
                self.record_interaction(id);
            }
            if self.table.is_local_authority(cube as u32) {
                // Its resting state is this peer's own to say now: a resting pose applied while another authority
                // had it no longer holds it (the measure would otherwise count the sub-quantum snap of a cube that
                // rested here off the grid, onto the same pose from its next authority, as jitter).
                self.applied_rest[cube] = None;
            }
            let a = self.table.stamp(cube as u32).authority;
            if a != self.last_authority[cube] {
                self.last_authority[cube] = a;
                self.authority_changed_step[cube] = self.step;
                self.stats.authority_changes += 1;
            }
        }
        // Remote hands as drawn this step, and the cubes in them.
        let me = self.table.me();
        self.remote.sample(
            self.clock_s,
            me,
            &self.table,
            &self.world,
            &self.physics_step,
            &mut self.smoothing,
        )?;
        Ok(())
    }

    /// Host: the cubes the last step returned to default, with the authority each had.
    pub fn returned_this_step(&self) -> &[(u32, u8)] {
        &self.returned
    }
}
