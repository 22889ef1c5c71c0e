//! One player's machine in a lockstep game: its world and game state, every player's inputs, its connections
//! (a guest has one, to the host; the host one per guest), the playout buffer and the checksums. Player 1 (index
//! 0) hosts: a guest sends the host its own inputs, the host sends each guest everyone else's — its own and the
//! other guests' as they arrive (relayed) — so with two players each simply sends the other its own. Per frame, in
//! order: [`LockstepPeer::read_packet`] for whatever arrived, [`LockstepPeer::sample`] this frame's input,
//! [`LockstepPeer::advance`] (the steps that are due and whose inputs are all here),
//! [`LockstepPeer::write_packet`] for each connection. The peer does no I/O and reads no clock: times come in.

use std::time::Instant;

use tumble_engine::physics::{PhysicsError, World};
use tumble_net::SerializeError;

use super::checksum::Checksums;
use super::playout::{FramePlan, PlayoutBuffer, PlayoutConfig};
use crate::inputs::packet::{unwrap_step, InputPacket, MAX_INPUTS_PER_PACKET};
use crate::inputs::window::{InputWindow, WindowFull, WINDOW_STEPS};
use tumble_game::cube_game::{CubeGame, CubeInput};

pub use crate::inputs::packet::MAX_PLAYERS;

#[derive(Debug, thiserror::Error)]
pub enum LockstepError {
    #[error(transparent)]
    WindowFull(#[from] WindowFull),
    #[error("physics: {0}")]
    Physics(#[from] PhysicsError),
    #[error("malformed lockstep packet: {0}")]
    Malformed(#[from] SerializeError),
    #[error("lockstep packet acks input step {acked} of player {player}, but only {sent} were sent")]
    AckFromTheFuture { player: usize, acked: u64, sent: u64 },
    #[error("lockstep packet's first step is before step 0")]
    StepBeforeStart,
    #[error("lockstep packet carries or acks player {player}'s inputs, which do not travel that way")]
    WrongPlayer { player: usize },
    #[error("a lockstep game has 2 to {MAX_PLAYERS} players, this one player {player} of {players}")]
    BadPlayers { player: usize, players: usize },
    #[error("no lockstep connection {0}")]
    NoConnection(usize),
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

/// One connection: to the host (a guest's only one) or to one guest (the host has one per guest).
#[derive(Clone, Debug)]
struct Connection {
    /// The player at the other end.
    remote: usize,
    /// Per player: the first of that player's steps the other end lacks (its ack, plus one).
    acked_end: [u64; MAX_PLAYERS],
    /// This peer's own inputs before this step have been carried by a packet on this connection.
    written_end: u64,
    checksums: Checksums,
}

/// Whether player `p`'s inputs travel from a peer of player `me` to player `remote` (the host relays).
fn sends(me: usize, remote: usize, p: usize) -> bool {
    if me == 0 {
        p != remote
    } else {
        p == me
    }
}

/// The oldest of player `p`'s steps a peer still needs: not yet simulated, or not yet acked on a connection
/// that carries it.
fn oldest_kept(me: usize, connections: &[Connection], p: usize, next_step: u64) -> u64 {
    connections
        .iter()
        .filter(|c| sends(me, c.remote, p))
        .map(|c| c.acked_end[p])
        .fold(next_step, u64::min)
}

/// A checked packet's steps, per player: its ack unwrapped, and the step of its first input.
type CheckedSteps = ([Option<u64>; MAX_PLAYERS], [u64; MAX_PLAYERS]);

pub struct LockstepPeer {
    /// 0 for player 1 (the host), 1 for player 2, ...
    player: usize,
    players: usize,
    world: World,
    game: CubeGame,
    /// Every player's inputs, this peer's own included.
    windows: Vec<InputWindow>,
    connections: Vec<Connection>,
    playout: PlayoutBuffer,
    next_step: u64,
    /// Scratch packet, its input vectors reused.
    packet: InputPacket,
    /// When each own input was sampled (s), a ring like the input window.
    sampled_at: Vec<f64>,
    pub stats: PeerStats,
}

impl LockstepPeer {
    /// Player `player` (0 hosts) of `players` on `world`, the scene every player built alike; the game adds the
    /// player cubes.
    pub fn new(
        player: usize,
        players: usize,
        mut world: World,
        playout: PlayoutConfig,
        checksum_every_steps: u64,
    ) -> Result<Self, LockstepError> {
        if !(2..=MAX_PLAYERS).contains(&players) || player >= players {
            return Err(LockstepError::BadPlayers { player, players });
        }
        let game = CubeGame::new(&mut world, players)?;
        let remotes: Vec<usize> = if player == 0 { (1..players).collect() } else { vec![0] };
        let connections = remotes
            .into_iter()
            .map(|remote| Connection {
                remote,
                acked_end: [0; MAX_PLAYERS],
                written_end: 0,
                checksums: Checksums::new(checksum_every_steps),
            })
            .collect();
        Ok(Self {
            player,
            players,
            world,
            game,
            windows: vec![InputWindow::default(); players],
            connections,
            playout: PlayoutBuffer::new(playout),
            next_step: 0,
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

    pub fn player(&self) -> usize {
        self.player
    }

    /// This peer's connections: one per guest on the host, one to the host on a guest.
    pub fn connection_count(&self) -> usize {
        self.connections.len()
    }

    /// The player at the other end of connection `conn`.
    pub fn connection_player(&self, conn: usize) -> Option<usize> {
        self.connections.get(conn).map(|c| c.remote)
    }

    /// Steps simulated so far.
    pub fn steps(&self) -> u64 {
        self.next_step
    }

    /// Own inputs sampled so far.
    pub fn sampled(&self) -> u64 {
        self.windows[self.player].contiguous()
    }

    pub fn playout(&self) -> &PlayoutBuffer {
        &self.playout
    }

    /// The checksum exchanges with the peer at the other end of connection `conn`.
    pub fn checksums(&self, conn: usize) -> Option<&Checksums> {
        self.connections.get(conn).map(|c| &c.checksums)
    }

    /// Checksum exchanges compared on every connection (the fewest of any).
    pub fn checksums_compared(&self) -> u64 {
        self.connections.iter().map(|c| c.checksums.compared).min().unwrap_or(0)
    }

    /// Checksum exchanges found different, on all connections together.
    pub fn desyncs(&self) -> u64 {
        self.connections.iter().map(|c| c.checksums.mismatches).sum()
    }

    /// The earliest step after which a checksum differed on any connection.
    pub fn first_desync_step(&self) -> Option<u64> {
        self.connections
            .iter()
            .filter_map(|c| c.checksums.first_mismatch_step)
            .min()
    }

    /// The game's checksum now.
    pub fn checksum(&self) -> u64 {
        self.game.checksum(&self.world)
    }

    /// The world, to change it behind the protocol's back (a test hook of the bench: desync detection).
    #[doc(hidden)]
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Stores this frame's input (for the next step number); returns that step.
    pub fn sample(&mut self, now_s: f64, input: CubeInput) -> Result<u64, LockstepError> {
        let keep = oldest_kept(self.player, &self.connections, self.player, self.next_step);
        let step = self.windows[self.player].push(input, keep)?;
        self.sampled_at[step as usize % WINDOW_STEPS] = now_s;
        Ok(step)
    }

    /// Writes this frame's packet on connection `conn`: the inputs the other end lacks of every player whose
    /// inputs travel there (oldest first, at most a packet's worth each), the acks of those that come from there,
    /// the pending checksum. Returns its length.
    pub fn write_packet(&mut self, conn: usize, buf: &mut [u8]) -> Result<usize, LockstepError> {
        let (me, players) = (self.player, self.players);
        let c = self
            .connections
            .get_mut(conn)
            .ok_or(LockstepError::NoConnection(conn))?;
        let p = &mut self.packet;
        let mut carried = 0;
        for q in 0..MAX_PLAYERS {
            let window = self.windows.get(q).filter(|_| q < players);
            p.acks[q] = window
                .filter(|_| sends(c.remote, me, q))
                .and_then(|w| w.contiguous().checked_sub(1))
                .map(|s| s as u16);
            p.inputs[q].clear();
            p.first_step[q] = 0;
            let Some(w) = window.filter(|_| sends(me, c.remote, q)) else {
                continue;
            };
            let first = c.acked_end[q];
            let end = w.contiguous().min(first + MAX_INPUTS_PER_PACKET as u64);
            if end > first {
                p.first_step[q] = first as u16;
                // Kept until acked here (`oldest_kept`), so every one is still in the window.
                p.inputs[q].extend((first..end).map(|s| w.get(s).unwrap_or_default()));
                carried += end - first;
            }
            if q == me {
                c.written_end = c.written_end.max(end);
            }
        }
        p.checksum = c.checksums.to_send();
        let n = p.write(buf)?;
        self.stats.packets_written += 1;
        self.stats.inputs_written += carried;
        Ok(n)
    }

    /// Reads a packet that arrived on connection `conn` at `now_s`. A malformed one is refused whole and counted;
    /// nothing of it is used.
    pub fn read_packet(&mut self, conn: usize, now_s: f64, bytes: &[u8]) -> Result<(), LockstepError> {
        let (acks, firsts) = match self.check_packet(conn, bytes) {
            Ok(v) => v,
            Err(e) => {
                self.stats.packets_refused += 1;
                return Err(e);
            }
        };
        self.stats.packets_read += 1;
        let me = self.player;
        let c = &mut self.connections[conn];
        for (q, acked) in acks.iter().enumerate() {
            if let Some(step) = *acked {
                c.acked_end[q] = c.acked_end[q].max(step + 1);
                if q == me {
                    c.checksums.on_input_ack(step);
                }
            }
        }
        if let Some(sample) = self.packet.checksum {
            c.checksums.on_remote(sample);
        }
        for (q, &first) in firsts.iter().enumerate().take(self.players) {
            let keep = oldest_kept(me, &self.connections, q, self.next_step);
            for (k, &input) in self.packet.inputs[q].iter().enumerate() {
                let step = first + k as u64;
                if self.windows[q].insert(step, input, keep) && self.step_complete(step) {
                    self.playout.on_arrival(step, now_s);
                }
            }
        }
        Ok(())
    }

    /// Every other player's input for `step` is here (the last one just arrived, if it was new).
    fn step_complete(&self, step: u64) -> bool {
        self.windows
            .iter()
            .enumerate()
            .all(|(q, w)| q == self.player || w.contiguous() > step || w.get(step).is_some())
    }

    /// Reads `bytes` into the scratch packet and checks it against connection `conn`: only players whose inputs
    /// travel that way, acks unwrapped and within what this peer has, first steps unwrapped.
    fn check_packet(&mut self, conn: usize, bytes: &[u8]) -> Result<CheckedSteps, LockstepError> {
        let remote = self
            .connections
            .get(conn)
            .ok_or(LockstepError::NoConnection(conn))?
            .remote;
        self.packet.read(bytes)?;
        let mut acks = [None; MAX_PLAYERS];
        let mut firsts = [0; MAX_PLAYERS];
        for q in 0..MAX_PLAYERS {
            let inbound = q < self.players && sends(remote, self.player, q);
            let outbound = q < self.players && sends(self.player, remote, q);
            if let Some(low) = self.packet.acks[q] {
                if !outbound {
                    return Err(LockstepError::WrongPlayer { player: q + 1 });
                }
                let sent = self.windows[q].contiguous();
                let acked = unwrap_step(low, sent).ok_or(LockstepError::StepBeforeStart)?;
                if acked >= sent {
                    return Err(LockstepError::AckFromTheFuture {
                        player: q + 1,
                        acked,
                        sent,
                    });
                }
                acks[q] = Some(acked);
            }
            if !self.packet.inputs[q].is_empty() {
                if !inbound {
                    return Err(LockstepError::WrongPlayer { player: q + 1 });
                }
                firsts[q] = unwrap_step(self.packet.first_step[q], self.windows[q].contiguous())
                    .ok_or(LockstepError::StepBeforeStart)?;
            }
        }
        Ok((acks, firsts))
    }

    /// Runs the steps that are due by `now_s` and whose inputs are all here (at most a few); says what it did.
    pub fn advance(&mut self, now_s: f64) -> Result<FramePlan, LockstepError> {
        let available = self.windows.iter().map(InputWindow::contiguous).min().unwrap_or(0);
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
        let mut inputs = [CubeInput::NONE; MAX_PLAYERS];
        for (input, w) in inputs.iter_mut().zip(&self.windows) {
            // Checked by the caller: every step below every window's `contiguous` is here.
            *input = w.get(step).unwrap_or_default();
        }
        let start = Instant::now();
        self.game.step(&mut self.world, &inputs[..self.players])?;
        self.stats.step_cpu_s += start.elapsed().as_secs_f64();
        self.stats.steps += 1;
        self.stats.coloured_max = self.stats.coloured_max.max(self.game.coloured_count());
        self.stats.step_delay_s_sum += now_s - self.sampled_at[step as usize % WINDOW_STEPS];
        let (game, world) = (&self.game, &self.world);
        let sampled = self.windows[self.player].contiguous();
        // Taken once, whichever connection asks first.
        let mut value = None;
        for c in &mut self.connections {
            let unsent = (sampled > c.written_end).then(|| sampled - 1);
            c.checksums
                .after_step(step, unsent, || *value.get_or_insert_with(|| game.checksum(world)));
        }
        self.next_step += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::packet::MAX_INPUT_PACKET_BYTES;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::parse_scene;

    fn field() -> World {
        let text = "[[grid]]\norigin = [-3.0, 0.5, -3.0]\ncount = [4, 1, 4]\nspacing = [2.0, 2.0, 2.0]\n";
        parse_scene(text, "field16.toml")
            .unwrap()
            .build_world(WorldConfig::default())
            .unwrap()
    }

    fn peers(players: usize) -> Vec<LockstepPeer> {
        let config = PlayoutConfig {
            delay_s: 0.0,
            ..PlayoutConfig::default()
        };
        (0..players)
            .map(|p| LockstepPeer::new(p, players, field(), config, 30).unwrap())
            .collect()
    }

    /// Peers joined by a perfect wire: every packet arrives in the same frame, the host's first (so a guest's
    /// input reaches the other guests one frame later, relayed). `frames` frames from frame `start`, then
    /// `drain` more in which nobody samples.
    fn play(peers: &mut [LockstepPeer], start: u64, frames: u64, drain: u64) {
        let mut bots: Vec<_> = (0..peers.len() as u64)
            .map(|p| tumble_game::cube_game::CubeBot::new(p + 1))
            .collect();
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        for frame in start..start + frames + drain {
            let now = frame as f64 * tumble_game::STEP_S;
            for (peer, bot) in peers.iter_mut().zip(&mut bots) {
                if frame < start + frames {
                    peer.sample(now, bot.next_input()).unwrap();
                }
                peer.advance(now).unwrap();
            }
            for from in 0..peers.len() {
                for conn in 0..peers[from].connection_count() {
                    let to = peers[from].connection_player(conn).unwrap();
                    let n = peers[from].write_packet(conn, &mut buf).unwrap();
                    // The host's connection k goes to guest k + 1; a guest's only one to the host.
                    let back = if to == 0 { from - 1 } else { 0 };
                    peers[to].read_packet(back, now, &buf[..n]).unwrap();
                }
            }
        }
    }

    #[test]
    fn two_peers_on_a_perfect_wire_stay_bit_identical_and_agree_at_every_checksum() {
        let mut peers = peers(2);
        play(&mut peers, 0, 600, 0);
        assert_eq!(peers[0].steps(), peers[1].steps());
        assert!(peers[0].steps() > 590);
        assert_eq!(peers[0].checksum(), peers[1].checksum());
        for p in &peers {
            assert!(p.checksums_compared() >= 19, "{} compared", p.checksums_compared());
            assert_eq!(p.desyncs(), 0);
            assert_eq!(p.stats.hitch_frames, 0);
            assert!(
                p.stats.inputs_written <= 2 * p.stats.packets_written,
                "acked inputs are not resent"
            );
        }
    }

    #[test]
    fn four_peers_through_the_host_stay_bit_identical_and_agree_at_every_checksum() {
        let mut peers = peers(4);
        play(&mut peers, 0, 600, 90);
        let steps = peers[0].steps();
        assert_eq!(steps, 600, "every sampled step simulated");
        for p in &peers {
            assert_eq!(p.steps(), steps, "player {}", p.player() + 1);
            assert_eq!(p.checksum(), peers[0].checksum(), "player {}", p.player() + 1);
            assert_eq!(
                p.checksums_compared(),
                20,
                "every exchange compared on every connection"
            );
            assert_eq!(p.desyncs(), 0);
        }
        // The host sends each guest the three other players' inputs, each about once.
        let host = &peers[0].stats;
        assert!(
            host.inputs_written >= 3 * 3 * 590,
            "{} inputs relayed",
            host.inputs_written
        );
        assert!(host.inputs_written <= 3 * 2 * host.packets_written);
        // Every guest moved its own cube, and every machine saw it move the same way.
        for g in 1..4 {
            let cube = peers[0].game().players()[g];
            let there = peers[g].world().state(cube).unwrap().position;
            assert_eq!(peers[0].world().state(cube).unwrap().position, there);
        }
    }

    #[test]
    fn a_desync_on_one_guest_is_found_by_the_host_and_that_guest_only() {
        let mut peers = peers(3);
        play(&mut peers, 0, 100, 0);
        let cube = peers[2].game().players()[2];
        let mut s = peers[2].world().state(cube).unwrap();
        s.position.x += 0.5;
        peers[2].world_mut().set_state(cube, &s).unwrap();
        play(&mut peers, 100, 200, 90);
        assert!(peers[0].desyncs() >= 1);
        assert_eq!(
            peers[0].checksums(0).unwrap().mismatches,
            0,
            "guest 2 agrees with the host"
        );
        assert!(peers[0].checksums(1).unwrap().mismatches >= 1);
        assert_eq!(peers[1].desyncs(), 0);
        assert!(peers[2].desyncs() >= 1);
    }

    #[test]
    fn malformed_or_lying_packets_are_refused_and_change_nothing() {
        let mut peers = peers(2);
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        peers[1].sample(0.0, CubeInput::NONE).unwrap();
        let n = peers[1].write_packet(0, &mut buf).unwrap();
        let before = peers[0].checksum();
        for cut in 0..n {
            assert!(peers[0].read_packet(0, 0.0, &buf[..cut]).is_err());
        }
        assert!(peers[0].read_packet(0, 0.0, b"garbage!").is_err());
        // An ack of input step 5 when none was sent.
        let mut lie = InputPacket::default();
        lie.acks[0] = Some(5);
        let m = lie.write(&mut buf).unwrap();
        assert!(matches!(
            peers[0].read_packet(0, 0.0, &buf[..m]),
            Err(LockstepError::AckFromTheFuture { player: 1, .. })
        ));
        // Inputs said to start before step 0.
        let mut early = InputPacket::default();
        early.first_step[1] = 65_000;
        early.inputs[1] = vec![CubeInput::NONE];
        let m = early.write(&mut buf).unwrap();
        assert!(matches!(
            peers[0].read_packet(0, 0.0, &buf[..m]),
            Err(LockstepError::StepBeforeStart)
        ));
        assert_eq!(peers[0].stats.packets_refused, n as u64 + 3);
        assert_eq!(peers[0].stats.packets_read, 0);
        assert_eq!(peers[0].checksum(), before);
        assert_eq!(
            peers[0].windows[1].contiguous(),
            0,
            "no input taken from a refused packet"
        );
        assert!(matches!(
            peers[0].write_packet(1, &mut buf),
            Err(LockstepError::NoConnection(1))
        ));
    }

    #[test]
    fn a_guest_cannot_send_inputs_for_another_player() {
        let mut peers = peers(3);
        let mut buf = [0u8; MAX_INPUT_PACKET_BYTES];
        // Guest 2 (index 1) on its connection to the host, claiming player 3's inputs, or the host's.
        for forged in [2, 0] {
            let mut p = InputPacket::default();
            p.inputs[forged] = vec![CubeInput::from_bits(1)];
            let m = p.write(&mut buf).unwrap();
            assert!(matches!(
                peers[0].read_packet(0, 0.0, &buf[..m]),
                Err(LockstepError::WrongPlayer { .. })
            ));
        }
        // Or acking inputs of its own player, which the host never sends it.
        let mut p = InputPacket::default();
        p.acks[1] = Some(0);
        let m = p.write(&mut buf).unwrap();
        assert!(peers[0].read_packet(0, 0.0, &buf[..m]).is_err());
        assert_eq!(peers[0].stats.packets_refused, 3);
        assert!(peers[0].windows.iter().all(|w| w.contiguous() == 0));
        assert!(matches!(
            LockstepPeer::new(4, 4, field(), PlayoutConfig::default(), 30),
            Err(LockstepError::BadPlayers { player: 4, players: 4 })
        ));
    }
}
