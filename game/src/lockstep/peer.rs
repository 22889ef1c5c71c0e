//! One player's machine in a lockstep game: its world and game state, its inputs and the other player's, the
//! playout buffer and the checksums. Per frame, in order: [`LockstepPeer::read_packet`] for whatever arrived,
//! [`LockstepPeer::sample`] this frame's input, [`LockstepPeer::advance`] (the steps that are due and whose inputs
//! are all here), [`LockstepPeer::write_packet`]. The peer does no I/O and reads no clock: times come in.

use std::time::Instant;

use tumble_engine::physics::{PhysicsError, World};
use tumble_net::SerializeError;

use super::checksum::Checksums;
use super::input_window::{LocalInputs, RemoteInputs, WindowFull, WINDOW_STEPS};
use super::packet::{unwrap_step, InputPacket, MAX_INPUTS_PER_PACKET};
use super::playout::{FramePlan, PlayoutBuffer, PlayoutConfig};
use crate::cube_game::{CubeGame, CubeInput};

/// Players of a lockstep game in this slice.
pub const PLAYERS: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum LockstepError {
    #[error(transparent)]
    WindowFull(#[from] WindowFull),
    #[error("physics: {0}")]
    Physics(#[from] PhysicsError),
    #[error("malformed lockstep packet: {0}")]
    Malformed(#[from] SerializeError),
    #[error("lockstep packet acks input step {acked}, but only {sent} were sent")]
    AckFromTheFuture { acked: u64, sent: u64 },
    #[error("lockstep packet's first step is before step 0")]
    StepBeforeStart,
}

/// What a peer counted.
#[derive(Clone, Debug, Default)]
pub struct PeerStats {
    /// Frames since the first step ran.
    pub frames: u64,
    /// Frames that waited: a step was due and an input was missing.
    pub hitch_frames: u64,
    /// Frames that ran more than one step.
    pub catchup_frames: u64,
    /// Frames (after the first step) that ran none with none due: the delay grew.
    pub idle_frames: u64,
    pub steps: u64,
    /// Sum over steps of the time from sampling this player's input for the step to simulating it (s).
    pub step_delay_s_sum: f64,
    /// Wall time spent simulating steps (s).
    pub step_cpu_s: f64,
    pub packets_written: u64,
    /// Inputs carried in the packets written.
    pub inputs_written: u64,
    pub packets_read: u64,
    pub packets_refused: u64,
    /// Most field cubes in a player's colour after any step (the game touched that many at once).
    pub coloured_max: usize,
}

pub struct LockstepPeer {
    /// 0 for player 1, 1 for player 2.
    player: usize,
    world: World,
    game: CubeGame,
    local: LocalInputs,
    remote: RemoteInputs,
    playout: PlayoutBuffer,
    checksums: Checksums,
    next_step: u64,
    /// Own inputs before this step have been carried by a packet.
    written_end: u64,
    /// Scratch packet, its input vector reused.
    packet: InputPacket,
    /// When each own input was sampled (s), a ring like the input window.
    sampled_at: Vec<f64>,
    pub stats: PeerStats,
}

impl LockstepPeer {
    /// Player `player` (0 or 1) on `world`, the scene both players built alike; the game adds both player cubes.
    pub fn new(
        player: usize,
        mut world: World,
        playout: PlayoutConfig,
        checksum_every_steps: u64,
    ) -> Result<Self, LockstepError> {
        let game = CubeGame::new(&mut world, PLAYERS)?;
        Ok(Self {
            player: player.min(PLAYERS - 1),
            world,
            game,
            local: LocalInputs::default(),
            remote: RemoteInputs::default(),
            playout: PlayoutBuffer::new(playout),
            checksums: Checksums::new(checksum_every_steps),
            next_step: 0,
            written_end: 0,
            packet: InputPacket::with_capacity(),
            sampled_at: vec![0.0; WINDOW_STEPS],
            stats: PeerStats::default(),
        })
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    pub fn game(&self) -> &CubeGame {
        &self.game
    }

    /// Steps simulated so far.
    pub fn steps(&self) -> u64 {
        self.next_step
    }

    /// Own inputs sampled so far.
    pub fn sampled(&self) -> u64 {
        self.local.sampled()
    }

    pub fn playout(&self) -> &PlayoutBuffer {
        &self.playout
    }

    pub fn checksums(&self) -> &Checksums {
        &self.checksums
    }

    /// The game's checksum now.
    pub fn checksum(&self) -> u64 {
        self.game.checksum(&self.world)
    }

    /// The world, to change it behind the protocol's back (tests of desync detection).
    #[cfg(test)]
    pub(crate) fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Stores this frame's input (for the next step number); returns that step.
    pub fn sample(&mut self, now_s: f64, input: CubeInput) -> Result<u64, LockstepError> {
        let step = self.local.push(input, self.next_step)?;
        self.sampled_at[step as usize % WINDOW_STEPS] = now_s;
        Ok(step)
    }

    /// Writes this frame's packet: the unacked inputs (oldest first, at most a packet's worth), the ack, the
    /// pending checksum. Returns its length.
    pub fn write_packet(&mut self, buf: &mut [u8]) -> Result<usize, LockstepError> {
        let p = &mut self.packet;
        p.ack = self.remote.contiguous().checked_sub(1).map(|s| s as u16);
        let first = self.local.oldest_unacked();
        let end = self.local.sampled().min(first + MAX_INPUTS_PER_PACKET as u64);
        p.first_step = first as u16;
        p.inputs.clear();
        p.inputs.extend((first..end).map(|s| self.local.get(s)));
        p.checksum = self.checksums.to_send();
        let n = p.write(buf)?;
        self.stats.packets_written += 1;
        self.stats.inputs_written += end - first;
        self.written_end = self.written_end.max(end);
        Ok(n)
    }

    /// Reads a packet from the other player that arrived at `now_s`. A malformed one is refused whole and counted;
    /// nothing of it is used.
    pub fn read_packet(&mut self, now_s: f64, bytes: &[u8]) -> Result<(), LockstepError> {
        let checked = self.check_packet(bytes);
        let (acked, first) = match checked {
            Ok(v) => v,
            Err(e) => {
                self.stats.packets_refused += 1;
                return Err(e);
            }
        };
        self.stats.packets_read += 1;
        if let Some(step) = acked {
            self.local.on_ack(step);
            self.checksums.on_input_ack(step);
        }
        for (k, &input) in self.packet.inputs.iter().enumerate() {
            let step = first + k as u64;
            if self.remote.insert(step, input) {
                self.playout.on_arrival(step, now_s);
            }
        }
        if let Some(sample) = self.packet.checksum {
            self.checksums.on_remote(sample);
        }
        Ok(())
    }

    /// Reads `bytes` into the scratch packet and checks its steps: the ack unwrapped and within what was sent, the
    /// first input's step unwrapped.
    fn check_packet(&mut self, bytes: &[u8]) -> Result<(Option<u64>, u64), LockstepError> {
        self.packet.read(bytes)?;
        let sent = self.local.sampled();
        let acked = match self.packet.ack {
            Some(low) => {
                let acked = unwrap_step(low, sent).ok_or(LockstepError::StepBeforeStart)?;
                if acked >= sent {
                    return Err(LockstepError::AckFromTheFuture { acked, sent });
                }
                Some(acked)
            }
            None => None,
        };
        let first = if self.packet.inputs.is_empty() {
            0
        } else {
            unwrap_step(self.packet.first_step, self.remote.contiguous()).ok_or(LockstepError::StepBeforeStart)?
        };
        Ok((acked, first))
    }

    /// Runs the steps that are due by `now_s` and whose inputs are all here (at most a few); says what it did.
    pub fn advance(&mut self, now_s: f64) -> Result<FramePlan, LockstepError> {
        let available = self.local.sampled().min(self.remote.contiguous());
        let plan = self.playout.plan(now_s, self.next_step, available);
        if self.next_step > 0 {
            let s = &mut self.stats;
            s.frames += 1;
            s.hitch_frames += u64::from(plan.hitch);
            s.catchup_frames += u64::from(plan.steps > 1);
            s.idle_frames += u64::from(plan.steps == 0 && !plan.hitch);
        }
        for _ in 0..plan.steps {
            self.run_step(now_s)?;
        }
        Ok(plan)
    }

    fn run_step(&mut self, now_s: f64) -> Result<(), LockstepError> {
        let step = self.next_step;
        let own = self.local.get(step);
        // Checked by the caller: every step below `contiguous` has arrived.
        let other = self.remote.get(step).unwrap_or_default();
        let mut inputs = [CubeInput::NONE; PLAYERS];
        inputs[self.player] = own;
        inputs[1 - self.player] = other;
        let start = Instant::now();
        self.game.step(&mut self.world, &inputs)?;
        self.stats.step_cpu_s += start.elapsed().as_secs_f64();
        self.stats.steps += 1;
        self.stats.coloured_max = self.stats.coloured_max.max(self.game.coloured_count());
        self.stats.step_delay_s_sum += now_s - self.sampled_at[step as usize % WINDOW_STEPS];
        let (game, world) = (&self.game, &self.world);
        let unsent = (self.local.sampled() > self.written_end).then(|| self.local.sampled() - 1);
        self.checksums.after_step(step, unsent, || game.checksum(world));
        self.next_step += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::packet::MAX_INPUT_PACKET_BYTES;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::parse_scene;

    fn field() -> World {
        let text = "[[grid]]\norigin = [-3.0, 0.5, -3.0]\ncount = [4, 1, 4]\nspacing = [2.0, 2.0, 2.0]\n";
        parse_scene(text, "field16.toml")
            .unwrap()
            .build_world(WorldConfig::default())
            .unwrap()
    }

    fn pair() -> [LockstepPeer; 2] {
        let config = PlayoutConfig {
            delay_s: 0.0,
            ..PlayoutConfig::default()
        };
        [0, 1].map(|p| LockstepPeer::new(p, field(), config, 30).unwrap())
    }

    /// Two peers joined by a perfect wire: every packet arrives in the same frame.
    #[test]
    fn two_peers_on_a_perfect_wire_stay_bit_identical_and_agree_at_every_checksum() {
        let mut peers = pair();
        let mut bots = [crate::cube_game::CubeBot::new(1), crate::cube_game::CubeBot::new(2)];
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        for frame in 0..600u64 {
            let now = frame as f64 / 90.0;
            for (peer, bot) in peers.iter_mut().zip(&mut bots) {
                peer.sample(now, bot.next_input()).unwrap();
                peer.advance(now).unwrap();
            }
            for from in 0..2 {
                let n = peers[from].write_packet(&mut buf).unwrap();
                peers[1 - from].read_packet(now, &buf[..n]).unwrap();
            }
        }
        assert_eq!(peers[0].steps(), peers[1].steps());
        assert!(peers[0].steps() > 590);
        assert_eq!(peers[0].checksum(), peers[1].checksum());
        for p in &peers {
            assert!(p.checksums().compared >= 19, "{} compared", p.checksums().compared);
            assert_eq!(p.checksums().mismatches, 0);
            assert_eq!(p.stats.hitch_frames, 0);
            assert!(
                p.stats.inputs_written <= 2 * p.stats.packets_written,
                "acked inputs are not resent"
            );
        }
    }

    #[test]
    fn malformed_or_lying_packets_are_refused_and_change_nothing() {
        let mut peers = pair();
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        peers[1].sample(0.0, CubeInput::NONE).unwrap();
        let n = peers[1].write_packet(&mut buf).unwrap();
        let before = peers[0].checksum();
        for cut in 0..n {
            assert!(peers[0].read_packet(0.0, &buf[..cut]).is_err());
        }
        assert!(peers[0].read_packet(0.0, b"garbage!").is_err());
        // An ack of input step 5 when none was sent.
        let mut lie = InputPacket {
            ack: Some(5),
            ..InputPacket::default()
        };
        let m = lie.write(&mut buf).unwrap();
        assert!(matches!(
            peers[0].read_packet(0.0, &buf[..m]),
            Err(LockstepError::AckFromTheFuture { .. })
        ));
        // Inputs said to start before step 0.
        let mut early = InputPacket {
            first_step: 65_000,
            inputs: vec![CubeInput::NONE],
            ..InputPacket::default()
        };
        let m = early.write(&mut buf).unwrap();
        assert!(matches!(
            peers[0].read_packet(0.0, &buf[..m]),
            Err(LockstepError::StepBeforeStart)
        ));
        assert_eq!(peers[0].stats.packets_refused, n as u64 + 3);
        assert_eq!(peers[0].stats.packets_read, 0);
        assert_eq!(peers[0].checksum(), before);
        assert_eq!(peers[0].remote.contiguous(), 0, "no input taken from a refused packet");
    }
}
