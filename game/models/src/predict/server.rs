//! The server: player 1's machine, which simulates the world with authority. Its own player's input is applied
//! in the step it is sampled; the client's input for client step `k` is applied at server step `k + offset`,
//! where the offset is fixed when the client's first inputs arrive: that arrival's step less the newest input's
//! step, plus [`ServerConfig::buffer_steps`] of slack for jitter. An input not here by its step is replaced by
//! the last one used (counted as late; the client will be corrected). After each step the server's packet
//! carries the state that step made, tagged with the client step it is at the start of.

use std::time::Instant;

use tumble_engine::physics::{BodyId, BodyKind, World};

use super::packet::{carried_cube_bits, CarriedCube, StatePacket, MAX_CARRIED_CUBES, MAX_STATE_PACKET_BYTES};
use super::PredictError;
use crate::inputs::packet::{unwrap_step, InputPacket, MAX_PLAYERS};
use crate::inputs::window::InputWindow;
use tumble_game::cube_game::{CubeGame, CubeInput};
use tumble_net::SerializeError;

/// Players of a prediction game: the server's and the client's.
pub const PLAYERS: usize = 2;
/// The client's player index (player 2): its inputs ride in that slot of lockstep's input packet.
pub const CLIENT: usize = 1;
/// Field cubes within this distance of the client's cube (centre to centre, m) are carried in the server's
/// packets, nearest first, as many as fit: the ones its prediction may meet within a round trip (it rolls at
/// 7 m/s at most, and what it hits moves on).
pub const NEAR_RADIUS_M: f32 = 6.0;
/// Resting cubes beyond [`NEAR_RADIUS_M`] carried in each packet besides the near ones, in turn over the whole
/// field: what keeps the rest of the client's world from drifting (a resting state holds at any step, so the
/// client applies it where its own copy rests too). 900 cubes go round in 1.7 s at 90 packets a second.
pub const FAR_RESTING_PER_PACKET: usize = 6;

#[derive(Clone, Copy, Debug)]
pub struct ServerConfig {
    /// Steps of slack between a client input's arrival and its step, set once with the offset.
    pub buffer_steps: u64,
    /// Resting cubes beyond the near ones carried per packet ([`FAR_RESTING_PER_PACKET`]; 0: the near ones only,
    /// as before — a control).
    pub far_resting_per_packet: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            buffer_steps: 3,
            far_resting_per_packet: FAR_RESTING_PER_PACKET,
        }
    }
}

/// What the server counted.
#[derive(Clone, Debug, Default)]
pub struct ServerStats {
    pub steps: u64,
    /// Wall time simulating steps (s).
    pub step_cpu_s: f64,
    /// Client steps applied with the client's own input, and with a stand-in (it had not arrived).
    pub inputs_applied: u64,
    pub late_inputs: u64,
    pub packets_read: u64,
    pub packets_refused: u64,
    pub packets_written: u64,
    /// Field cubes carried, summed over packets written.
    pub cubes_carried: u64,
}

/// Holds the client's cube still, kinematic, until the client's first step: both machines do this, so the
/// cube starts its first step in the same state on both, bit for bit, however long the server ran before the
/// client's inputs came — and a prediction that nothing touches never needs a correction.
pub fn hold_until_first_step(world: &mut World, cube: BodyId) -> Result<(), PredictError> {
    Ok(world.set_kind(cube, BodyKind::Kinematic)?)
}

/// Lets the client's cube go at its first step (the other half of [`hold_until_first_step`]).
pub fn release(world: &mut World, cube: BodyId) -> Result<(), PredictError> {
    Ok(world.set_kind(cube, BodyKind::Dynamic)?)
}

pub struct PredictServer {
    world: World,
    game: CubeGame,
    config: ServerConfig,
    client_inputs: InputWindow,
    /// Server step at which client step 0 runs (the client's inputs apply `offset` steps after their own step).
    offset: Option<u64>,
    /// The client step whose own input the last step used (a late input's stand-in is an older step's).
    applied_input: Option<u64>,
    /// The next server step.
    next_step: u64,
    own_input: CubeInput,
    /// The client input the last step used (a late one is replaced by it).
    last_client_input: CubeInput,
    /// The newest client step applied.
    applied: Option<u64>,
    input_packet: InputPacket,
    packet: StatePacket,
    /// Scratch: (distance, id) of the field cubes near the client's cube.
    near: Vec<(f32, u32)>,
    /// The next body the far resting cubes are looked for from (round the field in turn).
    far_cursor: u32,
    pub stats: ServerStats,
}

impl PredictServer {
    /// The server on `world` (the scene both machines built alike); the game adds both player cubes.
    pub fn new(mut world: World, config: ServerConfig) -> Result<Self, PredictError> {
        let game = CubeGame::new(&mut world, PLAYERS)?;
        // The client's cube holds still until the client's first step runs here (see `hold_until_first_step`).
        hold_until_first_step(&mut world, game.players()[1])?;
        let bodies = world.body_count();
        Ok(Self {
            world,
            game,
            config,
            client_inputs: InputWindow::default(),
            offset: None,
            applied_input: None,
            next_step: 0,
            own_input: CubeInput::NONE,
            last_client_input: CubeInput::NONE,
            applied: None,
            input_packet: InputPacket::with_capacity(),
            packet: StatePacket::with_capacity(),
            near: Vec::with_capacity(bodies),
            far_cursor: 0,
            stats: ServerStats::default(),
        })
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    pub fn game(&self) -> &CubeGame {
        &self.game
    }

    /// Server step at which client step 0 runs, once the client's first inputs arrived.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// Sets the server player's input for the next step.
    pub fn sample(&mut self, input: CubeInput) {
        self.own_input = input;
    }

    /// Runs one step: the server player's input, and the client's for the client step due now.
    pub fn advance(&mut self) -> Result<(), PredictError> {
        let mut client_input = CubeInput::NONE;
        if let Some(step) = self.offset.and_then(|o| self.next_step.checked_sub(o)) {
            client_input = match self.client_inputs.get(step) {
                Some(input) => {
                    self.stats.inputs_applied += 1;
                    self.applied_input = Some(step);
                    input
                }
                None => {
                    self.stats.late_inputs += 1;
                    self.last_client_input
                }
            };
            self.last_client_input = client_input;
            if self.applied.is_none() {
                release(&mut self.world, self.game.players()[1])?;
            }
            self.applied = Some(step);
        }
        let start = Instant::now();
        self.game.step(&mut self.world, &[self.own_input, client_input])?;
        self.stats.step_cpu_s += start.elapsed().as_secs_f64();
        self.stats.steps += 1;
        self.next_step += 1;
        Ok(())
    }

    /// The newest client step applied (its state is the client's at the start of the next).
    pub fn applied(&self) -> Option<u64> {
        self.applied
    }

    /// The client step whose own input the last step used: [`PredictServer::applied`], or an older step when its
    /// input was late and the last one stood in.
    pub fn applied_input(&self) -> Option<u64> {
        self.applied_input
    }

    /// Reads the client's input packet; a malformed one is refused whole and counted.
    pub fn read_packet(&mut self, bytes: &[u8]) -> Result<(), PredictError> {
        let result = self.take_inputs(bytes);
        match result {
            Ok(()) => self.stats.packets_read += 1,
            Err(_) => self.stats.packets_refused += 1,
        }
        result
    }

    fn take_inputs(&mut self, bytes: &[u8]) -> Result<(), PredictError> {
        self.input_packet.read(bytes)?;
        // Only the client's own inputs travel here (lockstep's packet, player 2's slot), and nothing is acked.
        let p = &self.input_packet;
        let foreign = (0..MAX_PLAYERS).any(|q| q != CLIENT && !p.inputs[q].is_empty());
        if foreign || p.acks.iter().any(Option::is_some) {
            return Err(PredictError::Malformed(SerializeError::ValueOutOfRange));
        }
        let count = p.inputs[CLIENT].len() as u64;
        if count == 0 {
            return Ok(());
        }
        let first =
            unwrap_step(p.first_step[CLIENT], self.client_inputs.contiguous()).ok_or(PredictError::StepBeforeStart)?;
        // Kept from the next client step this server applies.
        let keep = self.offset.map_or(0, |o| self.next_step.saturating_sub(o));
        for (k, &input) in p.inputs[CLIENT].iter().enumerate() {
            self.client_inputs.insert(first + k as u64, input, keep);
        }
        if self.offset.is_none() {
            let newest = first + count - 1;
            self.offset = Some((self.next_step + self.config.buffer_steps).saturating_sub(newest));
        }
        Ok(())
    }

    /// Writes this frame's packet: the input ack and, once the client's inputs are being applied, the state the
    /// last step made with the field cubes nearest the client's cube. Returns its length.
    pub fn write_packet(&mut self, buf: &mut [u8]) -> Result<usize, PredictError> {
        let [server_cube, client_cube] = [self.game.players()[0], self.game.players()[1]];
        let p = &mut self.packet;
        p.input_ack = self.client_inputs.contiguous().checked_sub(1).map(|s| s as u16);
        p.cubes.clear();
        p.has_state = self.applied.is_some();
        if let Some(applied) = self.applied {
            p.step = (applied + 1) as u16;
            p.other_input = self.own_input;
            p.own = self.world.state(client_cube)?;
            p.other = self.world.state(server_cube)?;
            self.near.clear();
            // Ids travel as 16 bits: bodies past that are never carried.
            for i in 0..(self.world.body_count() as u32).min(u32::from(u16::MAX) + 1) {
                let id = BodyId(i);
                if id == server_cube || id == client_cube || self.world.is_removed(id)? {
                    continue;
                }
                let d = self.world.state(id)?.position.distance(p.own.position);
                if d < NEAR_RADIUS_M {
                    self.near.push((d, i));
                }
            }
            // Nearest first, ties by id: the same world gives the same packet.
            self.near
                .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut bits = p.bits();
            // Room is kept for the far resting cubes: a crowd near the client's cube must not starve the field.
            let far_per_packet = self.config.far_resting_per_packet.min(MAX_CARRIED_CUBES);
            let far_room = far_per_packet * carried_cube_bits(true);
            for &(_, i) in &self.near {
                let state = self.world.state(BodyId(i))?;
                let more = carried_cube_bits(state.at_rest);
                if p.cubes.len() + far_per_packet == MAX_CARRIED_CUBES
                    || (bits + more + far_room).div_ceil(8) > MAX_STATE_PACKET_BYTES
                {
                    break;
                }
                bits += more;
                p.cubes.push(CarriedCube { id: i as u16, state });
            }
            // Then a few resting cubes further away, in turn.
            let bodies = (self.world.body_count() as u32).min(u32::from(u16::MAX) + 1);
            let (start, mut far) = (self.far_cursor, 0);
            for k in 0..bodies {
                let i = (start + k) % bodies;
                let id = BodyId(i);
                if far == far_per_packet || p.cubes.len() == MAX_CARRIED_CUBES {
                    self.far_cursor = i;
                    break;
                }
                if id == server_cube || id == client_cube || self.world.is_removed(id)? {
                    continue;
                }
                let state = self.world.state(id)?;
                // Near cubes the packet already carries are skipped; near ones it had no room for are not.
                if !state.at_rest || p.cubes.iter().any(|c| u32::from(c.id) == i) {
                    continue;
                }
                let more = carried_cube_bits(true);
                if (bits + more).div_ceil(8) > MAX_STATE_PACKET_BYTES {
                    break;
                }
                bits += more;
                far += 1;
                p.cubes.push(CarriedCube { id: i as u16, state });
                self.far_cursor = (i + 1) % bodies;
            }
        }
        let n = p.write(buf)?;
        self.stats.packets_written += 1;
        self.stats.cubes_carried += p.cubes.len() as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::parse_scene;

    fn field() -> World {
        let text = "[[grid]]\norigin = [-3.0, 0.5, -3.0]\ncount = [4, 1, 4]\nspacing = [2.0, 2.0, 2.0]\n";
        parse_scene(text, "field16.toml")
            .unwrap()
            .build_world(WorldConfig::default())
            .unwrap()
    }

    fn inputs(first: u16, inputs: &[u8]) -> Vec<u8> {
        let mut p = InputPacket::default();
        p.first_step[CLIENT] = first;
        p.inputs[CLIENT] = inputs.iter().map(|&b| CubeInput::from_bits(b)).collect();
        let mut buf = vec![0u8; 256];
        let n = p.write(&mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn client_inputs_apply_at_their_step_plus_the_offset_and_late_ones_are_reused() {
        let mut server = PredictServer::new(
            field(),
            ServerConfig {
                buffer_steps: 2,
                ..ServerConfig::default()
            },
        )
        .unwrap();
        let mut buf = [0u8; MAX_STATE_PACKET_BYTES];
        for _ in 0..5 {
            server.advance().unwrap();
        }
        let n = server.write_packet(&mut buf).unwrap();
        let mut p = StatePacket::with_capacity();
        p.read(&buf[..n]).unwrap();
        assert!(!p.has_state && p.input_ack.is_none(), "no client input yet: no state");
        // Client steps 0 and 1 arrive before server step 5: client step 1 runs at server step 5 + 2.
        server.read_packet(&inputs(0, &[4, 4])).unwrap();
        assert_eq!(server.offset(), Some(6));
        for _ in 0..5 {
            server.advance().unwrap();
        }
        // Server steps 6..=9 ran client steps 0..=3; 2 and 3 had not arrived and reused step 1's.
        assert_eq!((server.stats.inputs_applied, server.stats.late_inputs), (2, 2));
        let n = server.write_packet(&mut buf).unwrap();
        p.read(&buf[..n]).unwrap();
        assert_eq!((p.has_state, p.step, p.input_ack), (true, 4, Some(1)));
        assert!(!p.cubes.is_empty() && p.cubes.len() <= MAX_CARRIED_CUBES);
        let client_cube = server.game().players()[1];
        assert_eq!(p.own, server.world().state(client_cube).unwrap());
        assert!(p.own.linear_velocity.z < 0.0, "rolling forward (−z for player 2)");
        let distance = |c: &CarriedCube| c.state.position.distance(p.own.position);
        assert!(
            p.cubes.windows(2).all(|w| distance(&w[0]) <= distance(&w[1])),
            "nearest first"
        );
        // Garbage is refused and counted.
        assert!(server.read_packet(b"\x4c\xff\xff\xff\xff").is_err());
        assert!(server.read_packet(&inputs(65_000, &[1])).is_err(), "before step 0");
        assert_eq!(server.stats.packets_refused, 2);
    }
}
