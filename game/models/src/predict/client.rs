//! The predicting client: player 2's machine. Each frame it samples its input and applies it to its own copy of
//! the world at once, so its cube answers in the step the key is pressed; it keeps every input and the state its
//! cube had at the start of each step ([`super::history`]) and sends every input the server has not acked.
//!
//! On a server state for step `c` it compares the state it predicted for `c`. Beyond [`CORRECTION_POSITION_M`]
//! or [`CORRECTION_ANGLE_RAD`] it rewinds and replays ([`PredictClient::rewind`]): its cube, the server player's
//! cube and every field cube the packet carries are set to the server's state at `c`, and the whole world is
//! stepped again from `c` to the present with the stored inputs (the server player's held at the one the packet
//! says it used). The rest of the world cannot be rewound — the client has no history of it — so it is replayed
//! from where it is: cubes the packet does not carry are far from the client's cube, or at rest. What the client
//! re-simulates is the whole world, because the solver steps a world whole: a correction costs one world step
//! per step of round trip (`cpu_ms_per_step` counts it).
//!
//! The server player's cube is always shown as the server last said (a state from the past): it is set to each
//! packet's state, and put back there after a replay has stepped it. Field cubes are predicted: the client
//! simulates them itself, and a replay sets those the packet carries.
//!
//! What is drawn does not jump: every body a rewind moved keeps its drawn pose and eases to the new one — the
//! client's cube at a bounded rate ([`super::smoothing`]), the others on [`tumble_game::smoothing::DrawSmoothing`]'s
//! spring.

use std::time::Instant;

use tumble_engine::physics::{BodyId, BodyState, World};

use super::history::{StepRing, HISTORY_STEPS};
use super::packet::StatePacket;
use super::server::{hold_until_first_step, release, CLIENT, PLAYERS};
use super::smoothing::CorrectionSmoothing;
use super::PredictError;
use crate::inputs::packet::{unwrap_step, InputPacket, MAX_INPUTS_PER_PACKET, MAX_PLAYERS};
use tumble_game::avatar::Pose;
use tumble_game::cube_game::{CubeGame, CubeInput};
use tumble_game::smoothing::DrawSmoothing;
#[cfg(doc)]
use tumble_game::smoothing::MAX_SMOOTHED_ERROR_M;

/// A predicted position this far (m) from the server's is corrected: a few millimetres, far above float noise,
/// far below what a player sees.
pub const CORRECTION_POSITION_M: f32 = 0.005;
/// A predicted rotation this far (rad, 0.57°) from the server's is corrected.
pub const CORRECTION_ANGLE_RAD: f32 = 0.01;
/// Cubes within this distance of this player's cube here (m) that move here are left to the rewinds: its
/// prediction may have touched them (it covers 0.7 m in a 100 ms round trip at 7 m/s).
pub const KEEP_NEAR_OWN_M: f32 = 3.0;
/// A cube slower than this here (m/s, rad/s) counts as resting for a carried resting state: it is settling, not on
/// its way anywhere (rest detection takes a while to call it).
pub const STILL_M_S: f32 = 0.05;
pub const STILL_RAD_S: f32 = 0.1;
/// A drawn pose moved by a rewind more than this (m) was not smoothed (the smoothing dropped an offset too large
/// to ease).
const UNSMOOTHED_M: f32 = 1e-4;

/// What the client counted.
#[derive(Clone, Debug, Default)]
pub struct ClientStats {
    pub steps: u64,
    /// Wall time simulating steps, replays included (s).
    pub step_cpu_s: f64,
    /// Sum over steps of the time from sampling the input for the step to simulating it (s).
    pub input_delay_s_sum: f64,
    /// Server states compared with the prediction for their step; those equal to the bit.
    pub states_compared: u64,
    pub states_exact: u64,
    /// Whether the newest state compared was equal to the bit.
    pub last_state_exact: bool,
    /// The first state that was not the prediction to the bit.
    pub first_inexact_step: Option<u64>,
    /// States for steps a replay predicted (after the last rewind's step) that were not the server's to the bit.
    pub inexact_after_replay: u64,
    /// The largest difference of those (m, rad, m/s or rad/s, whichever is largest).
    pub error_after_replay_max: f32,
    /// The step the last rewind went back to.
    pub last_rewind_step: Option<u64>,
    /// Largest distance between a predicted and a server position, corrected or not (m).
    pub prediction_error_max_m: f32,
    /// Predictions beyond the threshold: each one a rewind and replay.
    pub corrections: u64,
    /// Largest position error among the corrections (m), and largest angle (rad).
    pub correction_max_m: f32,
    pub correction_angle_max_rad: f32,
    /// Largest move of the client's cube in the present that a correction made in the simulation (m): what an
    /// unsmoothed view would jump by.
    pub correction_jump_max_m: f32,
    /// Largest motion of the drawn cube in one frame beyond what the simulation moved it (m): the smoothing's.
    pub correction_drawn_max_m: f32,
    /// Largest distance between where the cube was drawn and where it was simulated after a correction (m).
    pub correction_offset_max_m: f32,
    /// Rewinds whose drawn pose jumped (the smoothing dropped the offset).
    pub unsmoothed_rewinds: u64,
    /// Largest move a rewind made of any other body in the present (m): what an unsmoothed view would jump by.
    pub others_rewind_moved_max_m: f32,
    /// Largest jump of any other body's drawn pose at a rewind whose move the draw smoothing took as an offset to
    /// ease out (m); moves it dropped (past its reach, [`MAX_SMOOTHED_ERROR_M`]) are counted apart.
    pub others_rewind_drawn_max_m: f32,
    /// Rewinds' moves of other bodies past that reach: drawn as they are (a cube metres away is put where it is).
    pub others_rewind_snapped: u64,
    /// Rewinds (corrections and the join) and the steps they replayed.
    pub rewinds: u64,
    pub replayed_steps: u64,
    /// Client step of the first server state: the join, a rewind not counted as a correction, and only when that
    /// state is not the prediction to the bit.
    pub joined_at_step: Option<u64>,
    pub packets_read: u64,
    pub packets_refused: u64,
    /// States older than the newest one had (reordered or duplicated), or older than the history.
    pub states_stale: u64,
    /// Carried states the world refused (a bad rotation, a position out of range).
    pub states_refused: u64,
    /// Carried resting cubes set here without a rewind: the server has them at rest, and so does this world, in
    /// another pose (the two simulations parted there).
    pub resting_cubes_set: u64,
}

pub struct PredictClient {
    world: World,
    game: CubeGame,
    own: BodyId,
    other: BodyId,
    inputs: StepRing<CubeInput>,
    /// The client's cube at the start of each step, as predicted.
    states: StepRing<BodyState>,
    /// When each input was sampled (s).
    sampled_at: StepRing<f64>,
    /// Inputs sampled so far: the next is for this step. Steps simulated: `next_step`.
    sampled: u64,
    next_step: u64,
    /// The oldest input the server has not acked.
    oldest_unacked: u64,
    /// The server player's input as last heard: held for the steps the client runs ahead.
    other_input: CubeInput,
    newest_state: Option<u64>,
    /// The other bodies' drawn offsets (a spring each).
    smoothing: DrawSmoothing,
    /// The client's cube's drawn offset: eased at a bounded rate.
    own_smoothing: CorrectionSmoothing,
    /// Scratch: every body's pose before a rewind.
    poses: Vec<Pose>,
    packet: StatePacket,
    input_packet: InputPacket,
    pub stats: ClientStats,
}

fn pose(world: &World, id: BodyId) -> Result<Pose, PredictError> {
    let s = world.state(id)?;
    Ok(Pose::new(s.position, s.rotation))
}

/// The angle of the rotation from `a` to `b` (rad), from the sine of its half (`Quat::angle_between` takes the
/// arccosine of a dot product near 1, whose rounding alone reads as 1e-3 rad).
fn angle_between(a: glam::Quat, b: glam::Quat) -> f32 {
    2.0 * (a * b.conjugate()).xyz().length().min(1.0).asin()
}

fn same_bits(a: &BodyState, b: &BodyState) -> bool {
    let bits = |s: &BodyState| {
        let mut v = [0u32; 13];
        let floats = s.position.to_array().into_iter().chain(s.rotation.to_array());
        let floats = floats
            .chain(s.linear_velocity.to_array())
            .chain(s.angular_velocity.to_array());
        for (slot, f) in v.iter_mut().zip(floats) {
            *slot = f.to_bits();
        }
        (v, s.at_rest)
    };
    bits(a) == bits(b)
}

impl PredictClient {
    /// The client on `world` (the scene both machines built alike); the game adds both player cubes.
    pub fn new(mut world: World) -> Result<Self, PredictError> {
        let game = CubeGame::new(&mut world, PLAYERS)?;
        let bodies = world.body_count();
        let [other, own] = [game.players()[0], game.players()[1]];
        hold_until_first_step(&mut world, own)?;
        let placeholder = world.state(own)?;
        Ok(Self {
            world,
            game,
            own,
            other,
            inputs: StepRing::new(CubeInput::NONE),
            states: StepRing::new(placeholder),
            sampled_at: StepRing::new(0.0),
            sampled: 0,
            next_step: 0,
            oldest_unacked: 0,
            other_input: CubeInput::NONE,
            newest_state: None,
            smoothing: DrawSmoothing::new(bodies),
            own_smoothing: CorrectionSmoothing::default(),
            poses: vec![Pose::default(); bodies],
            packet: StatePacket::with_capacity(),
            input_packet: InputPacket::with_capacity(),
            stats: ClientStats::default(),
        })
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    pub fn game(&self) -> &CubeGame {
        &self.game
    }

    /// The step of the newest server state read (the server player's cube is set to it).
    pub fn newest_state(&self) -> Option<u64> {
        self.newest_state
    }

    /// The client's player cube.
    pub fn own_cube(&self) -> BodyId {
        self.own
    }

    /// Steps simulated so far.
    pub fn steps(&self) -> u64 {
        self.next_step
    }

    /// Where the client's cube is drawn now.
    pub fn drawn_own(&self) -> Result<Pose, PredictError> {
        let sim = pose(&self.world, self.own)?;
        Ok(self.own_smoothing.drawn(&sim))
    }

    /// Stores this frame's input for the next step; returns that step. Refused when the server has acked none of
    /// a whole history's inputs (they could no longer all be sent, nor replayed).
    pub fn sample(&mut self, now_s: f64, input: CubeInput) -> Result<u64, PredictError> {
        let step = self.sampled;
        if step - self.oldest_unacked >= HISTORY_STEPS as u64 {
            return Err(PredictError::HistoryFull);
        }
        self.inputs.put(step, input);
        self.sampled_at.put(step, now_s);
        self.sampled += 1;
        Ok(step)
    }

    /// Simulates every sampled step not yet simulated (one a frame: the client never waits for the network),
    /// then eases what is drawn by one step.
    pub fn advance(&mut self, now_s: f64) -> Result<(), PredictError> {
        while self.next_step < self.sampled {
            let step = self.next_step;
            let input = self.inputs.get(step).unwrap_or_default();
            self.states.put(step, self.world.state(self.own)?);
            if step == 0 {
                release(&mut self.world, self.own)?;
            }
            let start = Instant::now();
            self.game.step(&mut self.world, &[self.other_input, input])?;
            self.stats.step_cpu_s += start.elapsed().as_secs_f64();
            self.stats.steps += 1;
            self.stats.input_delay_s_sum += now_s - self.sampled_at.get(step).unwrap_or(now_s);
            self.next_step += 1;
            self.smoothing.step();
            let eased = self.own_smoothing.step();
            self.stats.correction_drawn_max_m = self.stats.correction_drawn_max_m.max(eased);
        }
        Ok(())
    }

    /// Writes this frame's packet: every input the server has not acked, oldest first (at most a packet's worth).
    pub fn write_packet(&mut self, buf: &mut [u8]) -> Result<usize, PredictError> {
        let p = &mut self.input_packet;
        let first = self.oldest_unacked;
        let end = self.sampled.min(first + MAX_INPUTS_PER_PACKET as u64);
        p.acks = [None; MAX_PLAYERS];
        p.checksum = None;
        p.first_step[CLIENT] = first as u16;
        p.inputs[CLIENT].clear();
        p.inputs[CLIENT].extend((first..end).map(|s| self.inputs.get(s).unwrap_or_default()));
        Ok(p.write(buf)?)
    }

    /// Reads a server packet; a malformed one is refused whole (nothing of it used) and counted.
    pub fn read_packet(&mut self, bytes: &[u8]) -> Result<(), PredictError> {
        let checked = self.check_packet(bytes);
        let (acked, state_step) = match checked {
            Ok(v) => v,
            Err(e) => {
                self.stats.packets_refused += 1;
                return Err(e);
            }
        };
        self.stats.packets_read += 1;
        if let Some(acked) = acked {
            self.oldest_unacked = self.oldest_unacked.max(acked + 1);
        }
        if let Some(c) = state_step {
            self.on_state(c)?;
        }
        Ok(())
    }

    /// Reads `bytes` into the scratch packet and checks it: the ack within what was sent, the state's step not
    /// in the future, every carried id a field cube of this world.
    fn check_packet(&mut self, bytes: &[u8]) -> Result<(Option<u64>, Option<u64>), PredictError> {
        self.packet.read(bytes)?;
        let acked = match self.packet.input_ack {
            Some(low) => {
                let acked = unwrap_step(low, self.sampled).ok_or(PredictError::StepBeforeStart)?;
                if acked >= self.sampled {
                    return Err(PredictError::FromTheFuture {
                        step: acked,
                        now: self.sampled,
                    });
                }
                Some(acked)
            }
            None => None,
        };
        if !self.packet.has_state {
            return Ok((acked, None));
        }
        let c = unwrap_step(self.packet.step, self.next_step).ok_or(PredictError::StepBeforeStart)?;
        if c > self.next_step {
            return Err(PredictError::FromTheFuture {
                step: c,
                now: self.next_step,
            });
        }
        let bodies = self.world.body_count();
        for cube in &self.packet.cubes {
            let id = BodyId(u32::from(cube.id));
            if usize::from(cube.id) >= bodies || id == self.own || id == self.other {
                return Err(PredictError::NotAFieldCube(cube.id));
            }
        }
        Ok((acked, Some(c)))
    }

    /// A server state for step `c`: compared with the prediction; beyond the threshold (or the first one, unless
    /// it is the prediction to the bit), a rewind. The server player's cube is set to it either way.
    fn on_state(&mut self, c: u64) -> Result<(), PredictError> {
        if self.newest_state.is_some_and(|newest| c <= newest) || self.next_step - c >= HISTORY_STEPS as u64 {
            self.stats.states_stale += 1;
            return Ok(());
        }
        self.newest_state = Some(c);
        self.other_input = self.packet.other_input;
        let predicted = if c == self.next_step {
            self.world.state(self.own)?
        } else {
            match self.states.get(c) {
                Some(s) => s,
                None => {
                    self.stats.states_stale += 1;
                    return Ok(());
                }
            }
        };
        let server = self.packet.own;
        let error_m = predicted.position.distance(server.position);
        let error_rad = angle_between(predicted.rotation, server.rotation);
        let s = &mut self.stats;
        s.states_compared += 1;
        s.last_state_exact = same_bits(&predicted, &server);
        s.states_exact += u64::from(s.last_state_exact);
        if !s.last_state_exact && s.first_inexact_step.is_none() {
            s.first_inexact_step = Some(c);
        }
        if !s.last_state_exact && s.last_rewind_step.is_some_and(|r| c > r) {
            s.inexact_after_replay += 1;
            let spin = predicted.angular_velocity.distance(server.angular_velocity);
            let speed = predicted.linear_velocity.distance(server.linear_velocity);
            s.error_after_replay_max = s
                .error_after_replay_max
                .max(error_m.max(error_rad).max(spin).max(speed));
        }
        s.prediction_error_max_m = s.prediction_error_max_m.max(error_m);
        let joining = s.joined_at_step.is_none();
        if joining {
            s.joined_at_step = Some(c);
        }
        let beyond = error_m > CORRECTION_POSITION_M || error_rad > CORRECTION_ANGLE_RAD;
        if (joining && !s.last_state_exact) || beyond {
            if !joining {
                let other_m = self.packet.other.position.distance(server.position);
                tracing::debug!(
                    step = c,
                    present = self.next_step,
                    error_m,
                    error_rad,
                    other_m,
                    "correction"
                );
                s.corrections += 1;
                s.correction_max_m = s.correction_max_m.max(error_m);
                s.correction_angle_max_rad = s.correction_angle_max_rad.max(error_rad);
            }
            let start = Instant::now();
            let jump = self.rewind(c)?;
            self.stats.step_cpu_s += start.elapsed().as_secs_f64();
            if !joining {
                self.stats.correction_jump_max_m = self.stats.correction_jump_max_m.max(jump);
            }
        } else {
            let old = pose(&self.world, self.other)?;
            self.set_other_to_server()?;
            let new = pose(&self.world, self.other)?;
            self.smoothing.on_snap(self.other.index(), &old, &new);
            self.set_resting_cubes()?;
        }
        Ok(())
    }

    /// The carried cubes the server has at rest, set here where this world has them in another pose (eased in the
    /// drawing): a resting state holds at any step, so it needs no rewind. Only while this player's cube is still
    /// (setting bodies changes the order the solver meets contacts in, and so the prediction's last bits). Near
    /// this player's cube a cube moving here is left to the simulation (this player's cube may have hit it since
    /// the server's step); further away the server's word holds even over a cube moving here (a neighbour that
    /// went its own way here pushes it, 2.4 cm on cubes900 seed 7 at 120 s, until both are set).
    fn set_resting_cubes(&mut self) -> Result<(), PredictError> {
        let own_state = self.world.state(self.own)?;
        let own = own_state.position;
        let own_moving = !own_state.at_rest && own_state.linear_velocity.length() >= STILL_M_S;
        if own_moving {
            return Ok(());
        }
        for k in 0..self.packet.cubes.len() {
            let cube = self.packet.cubes[k];
            let id = BodyId(u32::from(cube.id));
            let here = self.world.state(id)?;
            let still_here = here.at_rest
                || (here.linear_velocity.length() < STILL_M_S && here.angular_velocity.length() < STILL_RAD_S);
            let near_own = here.position.distance(own) < KEEP_NEAR_OWN_M;
            if !cube.state.at_rest || (near_own && !still_here) || same_bits(&here, &cube.state) {
                continue;
            }
            let old = pose(&self.world, id)?;
            if self.world.set_state(id, &cube.state).is_err() {
                self.stats.states_refused += 1;
                continue;
            }
            let new = pose(&self.world, id)?;
            self.smoothing.on_snap(id.index(), &old, &new);
            self.stats.resting_cubes_set += 1;
        }
        Ok(())
    }

    /// Rewinds to the server's state at step `c` in the scratch packet and replays the stored inputs to the
    /// present; every body that moved keeps its drawn pose and eases to the new one. Returns how far the client's
    /// cube moved in the present (m).
    pub fn rewind(&mut self, c: u64) -> Result<f32, PredictError> {
        for (i, slot) in self.poses.iter_mut().enumerate() {
            *slot = pose(&self.world, BodyId(i as u32))?;
        }
        let own = self.own.index();
        let drawn_before = self.own_smoothing.drawn(&self.poses[own]);
        self.world.set_state(self.own, &self.packet.own)?;
        self.set_other_to_server()?;
        for k in 0..self.packet.cubes.len() {
            let cube = self.packet.cubes[k];
            if self.world.set_state(BodyId(u32::from(cube.id)), &cube.state).is_err() {
                self.stats.states_refused += 1;
            }
        }
        for step in c..self.next_step {
            self.states.put(step, self.world.state(self.own)?);
            let input = self.inputs.get(step).unwrap_or_default();
            self.game.step(&mut self.world, &[self.other_input, input])?;
            self.stats.replayed_steps += 1;
        }
        self.stats.rewinds += 1;
        self.stats.last_rewind_step = Some(c);
        // The server player's cube is shown as the server said, not as the replay guessed on.
        self.set_other_to_server()?;
        for i in 0..self.poses.len() {
            let new = pose(&self.world, BodyId(i as u32))?;
            if i != own && new != self.poses[i] {
                let drawn_before = self.smoothing.drawn_pose(i, &self.poses[i]);
                self.smoothing.on_snap(i, &self.poses[i], &new);
                let drawn_after = self.smoothing.drawn_pose(i, &new);
                let s = &mut self.stats;
                let moved = new.position.distance(self.poses[i].position);
                s.others_rewind_moved_max_m = s.others_rewind_moved_max_m.max(moved);
                // The smoothing drops an offset past its reach (this move, or this one on top of what it was still
                // easing): such a body is drawn where it is.
                let dropped = moved > 0.001 && self.smoothing.position_offset(i) == glam::Vec3::ZERO;
                if dropped {
                    s.others_rewind_snapped += 1;
                } else {
                    s.others_rewind_drawn_max_m = s
                        .others_rewind_drawn_max_m
                        .max(drawn_after.position.distance(drawn_before.position));
                }
            }
        }
        let sim_after = pose(&self.world, self.own)?;
        self.own_smoothing.on_correction(&self.poses[own], &sim_after);
        self.stats.correction_offset_max_m = self.stats.correction_offset_max_m.max(self.own_smoothing.offset_m());
        let drawn_after = self.own_smoothing.drawn(&sim_after);
        let drawn_jump = drawn_after.position.distance(drawn_before.position);
        if drawn_jump > UNSMOOTHED_M {
            self.stats.unsmoothed_rewinds += 1;
            self.stats.correction_drawn_max_m = self.stats.correction_drawn_max_m.max(drawn_jump);
        }
        Ok(sim_after.position.distance(self.poses[own].position))
    }

    fn set_other_to_server(&mut self) -> Result<(), PredictError> {
        if self.world.set_state(self.other, &self.packet.other).is_err() {
            self.stats.states_refused += 1;
        }
        Ok(())
    }

    /// Where body `id` is drawn: the client's cube through its correction smoothing, every other body through the
    /// draw smoothing (a rewind or the server player's state moves it without a jump).
    pub fn drawn_pose(&self, id: BodyId) -> Result<Pose, PredictError> {
        if id == self.own {
            return self.drawn_own();
        }
        Ok(self.smoothing.drawn_pose(id.index(), &pose(&self.world, id)?))
    }

    /// Turns the draw smoothing of the other bodies off (the control of `others_rewind_drawn_max_m`).
    #[doc(hidden)]
    pub fn draw_without_smoothing(&mut self) {
        self.smoothing.set_enabled(false);
    }

    /// Sets body `id` of the client's world behind the protocol's back (a test hook of the bench).
    #[doc(hidden)]
    pub fn set_body_state(&mut self, id: BodyId, state: &BodyState) -> Result<(), PredictError> {
        Ok(self.world.set_state(id, state)?)
    }

    /// Changes the client's cube behind the protocol's back (a test hook of the bench: a misprediction the server
    /// will correct).
    #[doc(hidden)]
    pub fn nudge_own(&mut self, by: glam::Vec3) -> Result<(), PredictError> {
        let mut s = self.world.state(self.own)?;
        s.position += by;
        s.at_rest = false;
        self.world.set_state(self.own, &s)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::packet::CarriedCube;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::parse_scene;

    fn field() -> World {
        let text = "[[grid]]\norigin = [-3.0, 0.5, -3.0]\ncount = [4, 1, 4]\nspacing = [2.0, 2.0, 2.0]\n";
        parse_scene(text, "field16.toml")
            .unwrap()
            .build_world(WorldConfig::default())
            .unwrap()
    }

    #[test]
    fn the_cube_answers_in_the_step_its_input_is_sampled() {
        let mut client = PredictClient::new(field()).unwrap();
        let own = client.own_cube();
        let start = client.world().state(own).unwrap().position;
        let step = client.sample(0.0, CubeInput::from_bits(CubeInput::FORWARD)).unwrap();
        assert_eq!(step, 0);
        client.advance(0.0).unwrap();
        let s = client.world().state(own).unwrap();
        // Player 2 faces −z: forward is towards −z.
        assert!(s.linear_velocity.z < -0.05, "{:?}", s.linear_velocity);
        assert!(s.position.z < start.z);
        assert_eq!(
            client.drawn_own().unwrap().position,
            s.position,
            "drawn where simulated"
        );
        assert_eq!(client.stats.input_delay_s_sum, 0.0);
        assert_eq!(
            client.states.get(0).unwrap().position,
            start,
            "the state before step 0 is kept"
        );
    }

    #[test]
    fn malformed_or_lying_packets_are_refused_and_change_nothing() {
        let mut client = PredictClient::new(field()).unwrap();
        for k in 0..5 {
            client.sample(k as f64 * tumble_game::STEP_S, CubeInput::NONE).unwrap();
            client.advance(k as f64 * tumble_game::STEP_S).unwrap();
        }
        let before = client.world().checksum();
        let mut buf = [0u8; 2048];
        let honest = |client: &PredictClient| StatePacket {
            input_ack: Some(2),
            has_state: true,
            step: 3,
            own: client.states.get(3).unwrap(),
            other: client.world().state(client.other).unwrap(),
            ..StatePacket::default()
        };
        let n = honest(&client).write(&mut buf).unwrap();
        for cut in 0..n {
            assert!(client.read_packet(&buf[..cut]).is_err());
        }
        assert!(client.read_packet(b"garbage!").is_err());
        let lies = [
            StatePacket {
                input_ack: Some(5),
                ..honest(&client)
            },
            StatePacket {
                step: 6,
                ..honest(&client)
            },
            StatePacket {
                cubes: vec![CarriedCube {
                    id: client.own.0 as u16,
                    state: client.world().state(client.own).unwrap(),
                }],
                ..honest(&client)
            },
            StatePacket {
                cubes: vec![CarriedCube {
                    id: 999,
                    state: client.world().state(client.own).unwrap(),
                }],
                ..honest(&client)
            },
        ];
        for mut lie in lies {
            let m = lie.write(&mut buf).unwrap();
            let e = client.read_packet(&buf[..m]).unwrap_err();
            assert!(
                matches!(e, PredictError::FromTheFuture { .. } | PredictError::NotAFieldCube(_)),
                "{e}"
            );
        }
        assert_eq!(client.stats.packets_refused, n as u64 + 5);
        assert_eq!(client.stats.packets_read, 0);
        assert_eq!(client.world().checksum(), before);
        assert_eq!(client.oldest_unacked, 0, "no ack taken from a refused packet");
        // The honest one is taken: its state is the prediction to the bit.
        let n = honest(&client).write(&mut buf).unwrap();
        client.read_packet(&buf[..n]).unwrap();
        assert_eq!(client.oldest_unacked, 3);
        assert_eq!((client.stats.states_compared, client.stats.states_exact), (1, 1));
        assert_eq!(client.stats.rewinds, 0, "the prediction was right: no rewind");
    }
}
