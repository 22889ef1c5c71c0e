//! One player's machine in a session: its own world, its authority table, its hands, and its connections — to
//! every guest on the host, to the host on a guest. It does no I/O and keeps no clock: a harness or a game loop
//! drives it one fixed step at a time, and moves its endpoint's datagrams.
//!
//! Per step, in order: [`Peer::play`] (hands → interaction → grabs and releases claim cubes), [`Peer::quantize`],
//! [`Peer::send`], then the network delivers and [`Peer::receive`] judges (host) or accepts (guest) what arrived,
//! then [`Peer::simulate`] steps the physics and does the authority bookkeeping (touch, rest, return to default).

use glam::Vec3;
use thiserror::Error;
use tumble_engine::physics::{BodyId, BodyKind, BodyState, PhysicsError, World};
use tumble_net::packet::CONNECTED_HEADER_BYTES;
use tumble_net::socket::ip_udp_header_bytes;
use tumble_net::{DisconnectReason, Endpoint, EndpointEvent, PeerId, MAX_PACKET_BYTES};

use crate::authority::rules::{guest_accepts, guest_accepts_hold, judge_claim, RejectCounts, RejectReason};
use crate::authority::{AuthorityTable, NOBODY};
use crate::avatar::{Avatar, AvatarInput, HandSide, Pose};
use crate::interaction::{Interaction, InteractionEvent};
use crate::session::hello::{
    judge_hello, write_hello, write_refusal, Hello, Refusal, RefusalReason, SceneId, PROTOCOL_VERSION,
};
use crate::session::hostile::{forge, Forgery};
use crate::session::message::{
    header_bytes, read_message, write_header, Message, MessageError, StateHeader, Welcome, MESSAGE_STATE,
};
use crate::session::remote_avatars::RemoteAvatars;
use crate::smoothing::{DrawSmoothing, Motion};
use crate::sync::codec::avatar_state::{AvatarPoses, WireAvatar, DESKTOP_HAND_REACH_M};
use crate::sync::codec::quantize::{quantize_state, quantize_world, QuantizedState, POSITION_UNITS_PER_M};
use crate::sync::codec::reject_notice::{read_reject_notice, write_reject_notice, RejectNotices, REJECT_NOTICE_BYTES};
use crate::sync::codec::stamp::{AuthorityStamp, DEFAULT_AUTHORITY, MAX_AUTHORITY};
use crate::sync::link::avatar_baseline::{AvatarSample, AvatarSet, ReceivedAvatars, SentAvatars, NO_AVATARS};
use crate::sync::link::priority::{packet_budget_bytes, IP_UDP_HEADER_BYTES};
use crate::sync::link::receiver::{apply_state, Receiver};
use crate::sync::link::sender::{Sender, SyncError};

/// Packets per second per connection: one per 90 Hz step.
pub const PACKETS_PER_S: u32 = crate::STEP_HZ;
/// Steps after a guest's welcome in which changes of authority are arrival, not hand-overs (1 s: at the default
/// budget about 30 updates fit a packet, so every cube of table64 has had its first, absolute, state by then).
pub const JOIN_GRACE_STEPS: u64 = crate::STEP_HZ as u64;
/// Players in a session, host included.
pub const MAX_PLAYERS: usize = 4;

/// Why a peer stopped.
#[derive(Debug, Error)]
pub enum PeerError {
    #[error(transparent)]
    Physics(#[from] PhysicsError),
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error(transparent)]
    Message(#[from] MessageError),
    #[error("the host's scene differs: {host_cubes} cubes (checksum {host_checksum:08x}), ours {our_cubes} ({our_checksum:08x})")]
    SceneMismatch {
        host_cubes: u32,
        host_checksum: u32,
        our_cubes: u32,
        our_checksum: u32,
    },
    #[error("--kbps-budget {kbps} leaves {bytes} bytes a packet: too few for the message header and one cube update")]
    BudgetTooSmall { kbps: u32, bytes: usize },
    #[error(
        "the host runs another version of Tumble: it speaks game protocol {host}, this build {ours}; both players \
         need the same build"
    )]
    VersionRefused { ours: u16, host: u16 },
    #[error("the host plays scene {host}, and this guest loaded {ours}: join with the host's scene (--scene FILE)")]
    SceneRefused { ours: Box<SceneId>, host: Box<SceneId> },
    #[error(
        "the host runs an older build of Tumble (game protocol 1, before versions were sent); this build speaks \
         protocol {PROTOCOL_VERSION}: both players need the same build"
    )]
    HostTooOld,
}

/// How a guest lost its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostGone {
    /// The host said goodbye (it quit, or shut down).
    Left,
    /// Nothing came from the host for the transport's timeout: it vanished (a crash, a lost network).
    TimedOut,
}

impl HostGone {
    pub fn name(self) -> &'static str {
        match self {
            HostGone::Left => "the host left the game",
            HostGone::TimedOut => "the host stopped answering",
        }
    }
}

/// How a peer sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerConfig {
    /// Per connection and direction, IP/UDP headers included (kbps).
    pub kbps_budget: u32,
    /// A packet every this many physics steps on each connection (1: every step, 90 a second; 3: 30 a second).
    /// Physics stays at 90 Hz; what a packet carries is the state at the step it is sent.
    pub send_every_steps: u32,
}

impl PeerConfig {
    /// A packet every step under `kbps_budget`.
    pub fn with_budget(kbps_budget: u32) -> PeerConfig {
        PeerConfig {
            kbps_budget,
            send_every_steps: 1,
        }
    }

    /// Packets a second on each connection.
    pub fn packets_per_s(&self) -> u32 {
        PACKETS_PER_S / self.send_every_steps.clamp(1, PACKETS_PER_S)
    }
}

/// The player index a guest in endpoint slot `peer` gets: the host is player 1, guests 2..=4.
pub fn guest_player(peer: PeerId) -> u8 {
    peer.0 + 2
}

/// What a peer counted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PeerStats {
    /// Updates the host refused, by reason (host only).
    pub rejected: RejectCounts,
    /// Claims of this peer that the host's word overrode (a conflict lost, a stale claim corrected).
    pub corrections: u64,
    /// Largest position change such an override made (m).
    pub correction_max_m: f64,
    /// Cubes this peer was holding when another player won them.
    pub holds_lost: u64,
    pub grabs: u64,
    pub throws: u64,
    /// Messages refused whole as malformed.
    pub malformed: u64,
    /// Authority changes this peer saw (stamps whose authority index changed).
    pub authority_changes: u64,
    /// Host returns of this guest's cubes that came after the cube had moved on, and were taken back (rule 8b).
    pub reclaims: u64,
    /// Host: claims (cube states and holds) taken, by the player who sent them (index = player).
    pub accepted_claims: [u64; 5],
    /// State messages that were the newest yet from their sender, and the sum of their ages on arrival: this
    /// peer's step less the sender's step (steps; a measure of how old the remote states applied here are, read
    /// where every peer's steps start together, as in the harnesses).
    pub newest_states: u64,
    pub newest_state_age_steps: u64,
    /// Wall time spent in [`Peer::simulate`] (s): the physics step and the authority bookkeeping.
    pub simulate_s: f64,
    /// Received states that moved a cube in this peer's simulation by more than 1 cm, and by more than 10 cm: how
    /// often what this peer simulated of another's cube was wrong by that much (the smoothing then hides the jump
    /// from the eye; these count it). A guest's first second after its welcome (every cube arriving) is not counted.
    pub corrections_over_1cm: u64,
    pub corrections_over_10cm: u64,
    /// Guest: seconds the host's game stood still as seen from here — every gap of more than [`STALL_GAP_S`]
    /// between two messages from the host with a newer step (a host whose game stopped stepping, or whose packets
    /// stopped coming), summed.
    pub seconds_stalled: f64,
}

/// A gap between the host's messages longer than this (s) is a stall: at 90 messages a second, many lost in a
/// row, or the host's game not stepping.
pub const STALL_GAP_S: f64 = 1.0;

/// What one connection's sender put on the wire, by part (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SentBytes {
    /// The remote player.
    pub to: u8,
    /// Cube state bodies.
    pub cubes: u64,
    /// Avatars in the message headers, with the cubes in their hands (and the avatar baseline's age).
    pub avatars: u64,
    /// The rest of the message headers: type byte, sender step, welcome, avatar presence flags.
    pub header: u64,
    /// Everything else on the wire: transport header, acks, keep-alives, IP/UDP.
    pub rest: u64,
    /// Packets sent.
    pub packets: u64,
}

/// Where a guest's connection stands with the host: its hello not heard yet, welcomed, or refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admission {
    Waiting,
    Welcomed,
    Refused(Refusal),
}

/// One connection's sync state.
struct Link {
    peer: PeerId,
    /// Host: whether the guest's hello was heard and welcomed (states go only to a welcomed guest).
    admission: Admission,
    /// The remote player's index (on a guest, the host's: 1).
    player: u8,
    sender: Sender,
    receiver: Receiver,
    reject_notices: RejectNotices,
    /// Transport sequence → the sender's packet sequence, indexed by transport sequence (no hash map).
    sender_sequence: Vec<Option<u16>>,
    next_sender_sequence: u16,
    /// Transport sequence of a packet that carried the welcome; once one is acked the welcome stops.
    welcome_sequences: Vec<bool>,
    welcome_acked: bool,
    /// Newest header step processed from this link (holds are taken from newer headers only).
    newest_header_step: Option<u32>,
    /// When it arrived (this peer's clock, s).
    newest_header_at_s: Option<f64>,
    /// Message bytes sent before the state bodies (type byte, header: welcome, avatars).
    header_bytes_sent: u64,
    /// Of those, the avatars' share (bits).
    avatar_bits_sent: u64,
    /// The avatars each sent message carried, and the acked baseline among them.
    avatars_sent: SentAvatars,
    /// The avatars of the messages received, by sender step (baselines of the next ones).
    avatars_received: ReceivedAvatars,
}

impl Link {
    fn new(peer: PeerId, player: u8, cubes: usize) -> Self {
        Self {
            peer,
            admission: Admission::Waiting,
            player,
            sender: Sender::new(cubes),
            receiver: Receiver::new(cubes),
            reject_notices: RejectNotices::default(),
            sender_sequence: vec![None; usize::from(u16::MAX) + 1],
            next_sender_sequence: 0,
            welcome_sequences: vec![false; usize::from(u16::MAX) + 1],
            welcome_acked: false,
            newest_header_step: None,
            newest_header_at_s: None,
            header_bytes_sent: 0,
            avatar_bits_sent: 0,
            avatars_sent: SentAvatars::new(),
            avatars_received: ReceivedAvatars::new(),
        }
    }
}

/// A host or a guest, with its world.
pub struct Peer {
    is_host: bool,
    pub world: World,
    pub table: AuthorityTable,
    pub interaction: Interaction,
    pub avatar: Avatar,
    endpoint: Endpoint,
    /// Host: one per endpoint slot; guest: `[0]` is the host.
    links: Vec<Option<Link>>,
    step: u64,
    cube_count: u32,
    scene_checksum: u32,
    /// The rest-detection flag each cube has in `world` (on only where this peer simulates for everyone).
    rest_detection: Vec<bool>,
    /// Per cube: the authority index last seen, to count changes.
    last_authority: Vec<u8>,
    /// Per cube: the step its authority index last changed here (for the hand-over pop meter).
    pub authority_changed_step: Vec<u64>,
    /// The per-connection budget (kbps, each direction, headers included); each connection's bytes per message
    /// come from `packet_budget_for` (its IP headers depend on its address family).
    kbps_budget: u32,
    /// A packet every this many steps (see [`PeerConfig::send_every_steps`]).
    send_every_steps: u32,
    message_buf: Vec<u8>,
    /// The payload being read (a copy of the endpoint's).
    receive_buf: Vec<u8>,
    pub stats: PeerStats,
    /// Host: cubes returned to default in the last step, with the authority they had.
    returned: Vec<(u32, u8)>,
    /// A guest that has not been welcomed yet has no player index and does not play.
    welcomed: bool,
    /// The step this peer was welcomed at (0 for the host).
    welcomed_at_step: u64,
    /// Sends forged claims instead of its own state (`session::hostile`), for tests of the host's judgement.
    hostile: bool,
    /// Guest: per cube, the last resting state it had while it was the cube's authority, with the stamp then.
    rest_claims: Vec<Option<(AuthorityStamp, QuantizedState)>>,
    /// Per cube: the resting state last applied from another authority, until an awake state or a hand replaces
    /// it or this peer becomes its authority (what the harness's rest-jitter measure holds a remote copy to).
    applied_rest: Vec<Option<QuantizedState>>,
    /// What is drawn eases into what is simulated after every snap.
    pub smoothing: DrawSmoothing,
    /// Links measure what they would send with no budget (`Sender::measure_demand`).
    measure_demand: bool,
    /// Per cube: at rest before this step's physics (rule 3b takes other players' resting cubes on touch).
    rested_before: Vec<bool>,
    /// Per cube: how far the last physics step moved it (m), contacts and depenetration included; a snap to a
    /// received state is not in it. What a drawn cube's motion is measured against.
    physics_step: Vec<Vec3>,
    /// Scratch: cubes at rest before a kind change (`set_kind_keeping_rest`).
    resting_before: Vec<u32>,
    /// Scratch: the stamps a forged packet gives the cubes.
    forged_stamps: Vec<AuthorityStamp>,
    /// The other players' avatars, played out; on the host also the newest accepted ones, to relay.
    remote: RemoteAvatars,
    /// This player's avatar as last sent (kept when a step's cannot be put on the wire).
    own_avatar: Option<AvatarSample>,
    /// The latest time `send` or `receive` was given (s): the clock remote avatars are played out on.
    clock_s: f64,
    /// This peer said goodbye ([`Peer::leave`]): it sends nothing more.
    left: bool,
    /// Guest: the host is gone, how, and when this guest learnt it (its clock, s). It then sends nothing and its
    /// hands act on nothing; its world stays to look at.
    host_gone: Option<(HostGone, f64)>,
    /// Guest: the players the host last said are in the game (bit `p − 1`); host: its own count.
    present: u8,
    /// The scene this peer loaded, as a hello says it (its name is set by [`Peer::set_scene_name`]).
    scene: SceneId,
    /// The game protocol version its hello says ([`PROTOCOL_VERSION`]; another only as a test hook).
    protocol_version: u16,
    /// Guest: a welcome to another scene (by its cube count and checksum), while the host's refusal, which names
    /// it, is awaited.
    scene_mismatch: Option<Welcome>,
    /// Whether the avatar sent carries the head as it is (off only as [`Peer::stop_sending_head`]'s control).
    send_head: bool,
    /// This player's game input (see [`StateHeader::game_inputs`]), sent with every message from now on.
    own_game_input: Option<u8>,
    /// The other players' newest game inputs (index = player − 1): on the host those it accepted from each guest
    /// (relayed), on a guest those the host said.
    game_inputs: [Option<u8>; 4],
}

impl Peer {
    /// A host on `endpoint` (made with `Endpoint::host`). `playing`: the host has hands (player 1); otherwise it
    /// is a dedicated host (authority index 0 only).
    pub fn host(world: World, endpoint: Endpoint, config: PeerConfig, playing: bool) -> Result<Peer, PeerError> {
        let me = if playing { 1 } else { DEFAULT_AUTHORITY };
        let slots = MAX_PLAYERS - 1;
        Peer::new(world, endpoint, config, true, me, slots)
    }

    /// A guest on `endpoint` (made with `Endpoint::join`); it plays once the host's welcome arrives.
    pub fn guest(world: World, endpoint: Endpoint, config: PeerConfig) -> Result<Peer, PeerError> {
        Peer::new(world, endpoint, config, false, DEFAULT_AUTHORITY, 1)
    }

    fn new(
        mut world: World,
        endpoint: Endpoint,
        config: PeerConfig,
        is_host: bool,
        me: u8,
        slots: usize,
    ) -> Result<Peer, PeerError> {
        let cubes = world.body_count();
        let budget = packet_budget_bytes(
            config.kbps_budget,
            config.packets_per_s(),
            (IP_UDP_HEADER_BYTES + CONNECTED_HEADER_BYTES) as u32,
            (MAX_PACKET_BYTES + IP_UDP_HEADER_BYTES) as u32,
        ) as usize;
        // A welcome, and room for at least one absolute update. (Avatars may take the packet past the budget while
        // they are absolute, after a join: they must travel.)
        let worst = StateHeader {
            welcome: Some(Welcome::default()),
            ..StateHeader::default()
        };
        let header = header_bytes(&worst, cubes as u32).unwrap_or(usize::MAX);
        if budget < header.saturating_add(MIN_BODY_BYTES) {
            return Err(PeerError::BudgetTooSmall {
                kbps: config.kbps_budget,
                bytes: budget,
            });
        }
        let scene_hash = world.checksum();
        let scene_checksum = scene_hash as u32;
        let mut rest_detection = vec![true; cubes];
        let table = AuthorityTable::new(cubes, me, is_host);
        for (i, flag) in rest_detection.iter_mut().enumerate() {
            *flag = table.is_local_authority(i as u32);
            world.set_rest_detection(BodyId(i as u32), *flag)?;
            world.set_remote(BodyId(i as u32), !*flag)?;
        }
        let mut links = Vec::with_capacity(slots);
        links.resize_with(slots, || None);
        if !is_host {
            links[0] = Some(Link::new(PeerId(0), 1, cubes));
        }
        Ok(Peer {
            is_host,
            world,
            table,
            interaction: Interaction::default(),
            avatar: Avatar::default(),
            endpoint,
            links,
            step: 0,
            cube_count: cubes as u32,
            scene_checksum,
            rest_detection,
            last_authority: vec![DEFAULT_AUTHORITY; cubes],
            authority_changed_step: vec![0; cubes],
            kbps_budget: config.kbps_budget,
            send_every_steps: config.send_every_steps.clamp(1, PACKETS_PER_S),
            message_buf: vec![0u8; MAX_PACKET_BYTES],
            receive_buf: Vec::with_capacity(MAX_PACKET_BYTES),
            stats: PeerStats::default(),
            welcomed: is_host,
            welcomed_at_step: 0,
            returned: Vec::with_capacity(cubes),
            hostile: false,
            measure_demand: false,
            smoothing: DrawSmoothing::new(cubes),
            rest_claims: vec![None; cubes],
            applied_rest: vec![None; cubes],
            rested_before: vec![false; cubes],
            physics_step: vec![Vec3::ZERO; cubes],
            resting_before: Vec::with_capacity(cubes),
            forged_stamps: vec![AuthorityStamp::DEFAULT; cubes],
            remote: {
                let mut remote = RemoteAvatars::new(cubes);
                remote.set_interval_steps(config.send_every_steps.clamp(1, PACKETS_PER_S));
                remote
            },
            own_avatar: None,
            clock_s: 0.0,
            left: false,
            host_gone: None,
            present: if is_host && me != DEFAULT_AUTHORITY {
                1 << (me - 1)
            } else {
                0
            },
            scene: SceneId::new("", scene_hash),
            protocol_version: PROTOCOL_VERSION,
            scene_mismatch: None,
            send_head: true,
            own_game_input: None,
            game_inputs: [None; 4],
        })
    }

    /// Guest: the error for a welcome to another scene when the host's refusal (which names its scene) never came:
    /// the cube counts and checksums.
    pub fn scene_mismatch_error(&self) -> Option<PeerError> {
        self.scene_mismatch.map(|w| PeerError::SceneMismatch {
            host_cubes: w.cube_count,
            host_checksum: w.scene_checksum,
            our_cubes: self.cube_count,
            our_checksum: self.scene_checksum,
        })
    }

    /// This player's game input from now on (a byte whose meaning is the game's: the cube game's keys); every
    /// message carries it, and the host relays it to the other guests.
    pub fn set_game_input(&mut self, input: Option<u8>) {
        self.own_game_input = input;
    }

    /// `player`'s newest game input this peer has heard (`None`: none yet, or the player is this peer's own or gone).
    pub fn game_input(&self, player: u8) -> Option<u8> {
        if player == self.table.me() {
            return None;
        }
        *self.game_inputs.get(usize::from(player).checked_sub(1)?)?
    }

    /// The game inputs a message to `to_player` carries: this player's own; on the host also every other guest's
    /// newest, never the receiver's own.
    fn game_inputs_for(&self, to_player: u8) -> [Option<u8>; 4] {
        let mut out = [None; 4];
        let me = self.table.me();
        if let Some(own) = usize::from(me).checked_sub(1).and_then(|s| out.get_mut(s)) {
            *own = self.own_game_input;
        }
        if self.is_host {
            for (p, input) in self.game_inputs.iter().enumerate() {
                if p + 1 != usize::from(to_player) && p + 1 != usize::from(me) {
                    out[p] = *input;
                }
            }
        }
        out
    }

    /// The game inputs of a newer message from `from_player`: the host takes only the sender's own slot (as with
    /// avatars), a guest every slot but its own.
    fn take_game_inputs(&mut self, from_player: u8, header: &StateHeader) {
        let me = self.table.me();
        for (p, input) in header.game_inputs.iter().enumerate() {
            let player = p as u8 + 1;
            let mine = if self.is_host {
                player == from_player
            } else {
                player != me
            };
            if mine {
                self.game_inputs[p] = *input;
            }
        }
    }

    /// A negative control of the avatar measures: from now on the avatar this peer sends keeps its head where it
    /// was (what every VR player sent before its head went on the wire).
    pub fn stop_sending_head(&mut self) {
        self.send_head = false;
    }

    /// A negative control of the drawn measures: every snap drawn as it is, nothing eased.
    pub fn draw_without_smoothing(&mut self) {
        self.smoothing.set_enabled(false);
    }

    /// A test hook: this guest's hello says protocol `version`, as a guest of another build would.
    pub fn speak_protocol_version(&mut self, version: u16) {
        self.protocol_version = version;
    }

    /// The scene's name, for the hello (a guest's) or a refusal (the host's): both sides are named when they differ.
    pub fn set_scene_name(&mut self, name: &str) {
        self.scene = SceneId::new(name, self.scene.hash);
    }

    /// The scene this peer loaded, as its hello or refusal names it.
    pub fn scene(&self) -> SceneId {
        self.scene
    }

    /// Guest: whether the host has welcomed it (it plays from then on).
    pub fn is_welcomed(&self) -> bool {
        self.welcomed
    }

    /// Says goodbye: every connection is closed with a sealed goodbye, sent several times over (the transport's
    /// `disconnect_redundancy`) so that one arrives under heavy loss. The host then frees the player's seat and
    /// releases its cubes at once; a host leaving tells every guest. Nothing is sent after it.
    pub fn leave(&mut self, now_s: f64) {
        if !self.left {
            self.left = true;
            self.endpoint.shutdown(now_s);
            tracing::info!(player = self.table.me(), host = self.is_host, "said goodbye");
        }
    }

    /// Whether this peer has said goodbye.
    pub fn has_left(&self) -> bool {
        self.left
    }

    /// Guest: whether its host is gone, how, and when it learnt it (s, this peer's clock).
    pub fn host_gone(&self) -> Option<(HostGone, f64)> {
        self.host_gone
    }

    /// The players in the game as this peer knows it (bit `p − 1` for player `p`): on the host, those connected and
    /// itself when it plays; on a guest, what the host last said.
    pub fn players_present(&self) -> u8 {
        self.present
    }

    pub fn is_host(&self) -> bool {
        self.is_host
    }

    /// Where cube `id` is drawn: its simulated pose (or, in a remote player's hand, that hand as played out)
    /// plus what is left of the smoothing of its last snaps.
    pub fn drawn_pose(&self, id: BodyId) -> Result<Pose, PhysicsError> {
        let base = match self.remote.hand_drawn(id.index()) {
            Some(in_hand) => in_hand,
            None => pose(&self.world.state(id)?),
        };
        Ok(self.smoothing.drawn_pose(id.index(), &base))
    }

    /// How far cube `id`'s drawn pose is explained to move over the last step (m), for pop measurements: the
    /// physics step's motion of it (contacts and depenetration included, snaps to received states not), or,
    /// drawn in a remote hand, that hand's played-out motion (the simulation follows it a step behind); plus its smoothing offset carried on at the offset's speed (a
    /// snap keeps the motion the cube was drawn with). What the smoothing's easing adds, and any snap drawn as it
    /// is, is left unexplained.
    pub fn explained_step(&self, id: BodyId) -> Result<Vec3, PhysicsError> {
        let dt = self.world.config().dt;
        let cube = id.index();
        let base = match self.remote.hand_drawn_motion(cube) {
            Some(motion) => motion.velocity * dt,
            None => self.physics_step.get(cube).copied().unwrap_or_default(),
        };
        Ok(base + self.smoothing.offset_velocity(cube) * dt)
    }

    /// The simulation moved cube `cube` from `old` to `new` (a received state, news of a hold): what is drawn
    /// keeps its pose and motion and eases into the new ones. A cube drawn from a remote hand is not drawn where it
    /// is simulated, so its simulation's jumps are not seen (the switch out of the hand eases from the hand).
    fn snap_drawn(&mut self, cube: usize, old: &BodyState, new: &BodyState) {
        if self.remote.hand_drawn(cube).is_some() {
            return;
        }
        if self.table.pinned_to(cube as u32) != NOBODY {
            // Another player's own cube, which its player's forces drive: this peer's simulation of it between
            // states lacks those forces, so the velocity it had here is no better a guess than the new one, and
            // carrying it on would draw the cube drifting off (metres, when a hover's lift is missing here).
            self.smoothing.on_snap(cube, &pose(old), &pose(new));
            return;
        }
        let jump = Motion {
            velocity: old.linear_velocity - new.linear_velocity,
            spin: old.angular_velocity - new.angular_velocity,
        };
        self.smoothing.on_snap_moving(cube, &pose(old), &pose(new), jump);
    }

    /// Player `player`'s avatar as this peer plays it out (the jitter buffer's sample at the last step), for
    /// drawing remote heads and hands; `None` for this peer's own player and players nothing has arrived from.
    pub fn remote_avatar(&self, player: u8) -> Option<&AvatarPoses> {
        self.remote.played(player)
    }

    /// The other players' avatars and jitter buffers on this peer.
    pub fn remote_avatars(&self) -> &RemoteAvatars {
        &self.remote
    }

    /// Guest: the resting states it last had as each cube's authority, with the stamp they had.
    pub fn rest_claims(&self) -> &[Option<(AuthorityStamp, QuantizedState)>] {
        &self.rest_claims
    }

    /// Per cube: the resting state last applied from another authority (`None` once an awake state, a hand or this
    /// peer's own authority took over, or before any arrived).
    pub fn applied_rest(&self) -> &[Option<QuantizedState>] {
        &self.applied_rest
    }

    /// Steps since this guest was welcomed (a host: `u64::MAX`); 0 for a guest not yet welcomed. A guest that
    /// just joined takes every cube from absolute states: those snaps are arrival, not hand-overs.
    pub fn steps_since_welcome(&self) -> u64 {
        if self.is_host {
            u64::MAX
        } else if self.welcomed {
            self.step - self.welcomed_at_step
        } else {
            0
        }
    }

    /// From now on every connection also measures its demand: what it would send with no budget.
    pub fn measure_demand(&mut self) {
        self.measure_demand = true;
        for link in self.links.iter_mut().flatten() {
            link.sender.measure_demand = true;
        }
    }

    /// Per connection, what this peer sent, by part.
    pub fn sent_breakdown(&self) -> impl Iterator<Item = SentBytes> + '_ {
        self.links.iter().flatten().filter_map(|l| {
            let s = self.endpoint.stats(l.peer)?;
            let wire = s.bytes_sent + s.packets_sent * self.ip_udp_bytes(l.peer) as u64;
            let (cubes, header) = (l.sender.body_bytes, l.header_bytes_sent);
            let avatars = (l.avatar_bits_sent / 8).min(header);
            Some(SentBytes {
                to: l.player,
                cubes,
                avatars,
                header: header - avatars,
                rest: wire.saturating_sub(cubes + header),
                packets: s.packets_sent,
            })
        })
    }

    /// Per connection: the remote player and the wire bytes this peer would have sent it with no budget (the
    /// bytes sent, with the state bodies replaced by what they would have been). Zero unless measured.
    pub fn demand_wire_bytes(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.links.iter().flatten().filter_map(|l| {
            let s = self.endpoint.stats(l.peer)?;
            let wire = s.bytes_sent + s.packets_sent * self.ip_udp_bytes(l.peer) as u64;
            let demand = (wire + l.sender.demand_bytes).saturating_sub(l.sender.body_bytes);
            Some((l.player, if l.sender.measure_demand { demand } else { 0 }))
        })
    }

    /// From now on this guest sends forged claims instead of its own state (see `session::hostile`).
    pub fn make_hostile(&mut self) {
        self.hostile = !self.is_host;
    }

    /// This peer's player index (0 for a dedicated host or a guest not yet welcomed).
    pub fn player(&self) -> u8 {
        self.table.me()
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// The hands act on the world: grabs claim cubes (rule 1), releases keep authority (rule 2).
    pub fn play(&mut self, input: &AvatarInput) -> Result<(), PeerError> {
        if !self.welcomed || self.table.me() == DEFAULT_AUTHORITY {
            return Ok(());
        }
        if self.left || self.host_gone.is_some() {
            // Nobody to play with: the hands are still drawn, open, and act on nothing (what they held falls).
            let mut open = *input;
            open.hands.iter_mut().for_each(|h| h.grip = 0.0);
            self.avatar.update(&open, self.world.config().dt);
            self.interaction.update(&mut self.world, &self.avatar)?;
            return Ok(());
        }
        self.avatar.update(input, self.world.config().dt);
        self.interaction.update(&mut self.world, &self.avatar)?;
        for i in 0..self.interaction.events().len() {
            match self.interaction.events()[i] {
                InteractionEvent::Grabbed { body, .. } => {
                    self.table.grab(body.0);
                    self.stats.grabs += 1;
                    self.record_interaction(body);
                }
                InteractionEvent::Released {
                    body, linear_velocity, ..
                } => {
                    self.table.release(body.0);
                    if linear_velocity.length() > 0.0 {
                        self.stats.throws += 1;
                    }
                    self.record_interaction(body);
                }
            }
        }
        Ok(())
    }

    /// Rule 10: pins body `cube` to `player` (the cube game's player cubes). Call it on every peer alike, before
    /// anything is sent.
    pub fn pin(&mut self, cube: BodyId, player: u8) -> Result<(), PeerError> {
        self.world.state(cube)?;
        self.table.pin(cube.0, player);
        self.last_authority[cube.index()] = player;
        Ok(())
    }

    /// Rule 11: this player's forces are about to push `cube` (at rest until now: `was_at_rest`). Takes it where
    /// touch would; one this peer then simulates has its priority raised; true when this peer now simulates it for everyone (taken, or already
    /// its own), and so may push it.
    pub fn claim_pushed(&mut self, cube: BodyId, was_at_rest: bool) -> Result<bool, PeerError> {
        if !self.welcomed {
            return Ok(false);
        }
        self.world.state(cube)?;
        self.table.claim_by_push(&self.world, cube.0, was_at_rest)?;
        let mine = self.table.is_local_authority(cube.0) && self.table.me() != DEFAULT_AUTHORITY;
        if mine {
            // Pushed by this player's forces (a katamari ball rolls on with it): sent as often as its player cube.
            self.record_interaction(cube);
        }
        Ok(mine)
    }

    fn record_interaction(&mut self, body: BodyId) {
        for link in self.links.iter_mut().flatten() {
            if let Some(a) = link.sender.activity.get_mut(body.index()) {
                a.record_interaction();
            }
        }
    }

    /// Both sides quantize every body before every step.
    pub fn quantize(&mut self) -> Result<(), PeerError> {
        quantize_world(&mut self.world)?;
        Ok(())
    }

    /// Sends this step's message on every connection.
    pub fn send(&mut self, now_s: f64) -> Result<(), PeerError> {
        self.clock_s = self.clock_s.max(now_s);
        if self.left || self.host_gone.is_some() {
            return Ok(());
        }
        if !self.step.is_multiple_of(u64::from(self.send_every_steps)) {
            return Ok(());
        }
        if !self.is_host && !self.welcomed {
            // Until the host welcomes it, a guest says who it is: its protocol version and its scene.
            let hello = Hello {
                version: self.protocol_version,
                scene: self.scene,
            };
            let n = write_hello(&mut self.message_buf, &hello).map_err(MessageError::from)?;
            if let Err(e) = self.endpoint.send(now_s, PeerId(0), &self.message_buf[..n]) {
                tracing::debug!("hello not sent: {e}");
            }
            return Ok(());
        }
        self.capture_own_avatar();
        for slot in 0..self.links.len() {
            if self.links[slot].is_some() {
                self.send_on(slot, now_s)?;
            }
        }
        Ok(())
    }

    /// This player's avatar this step, with the cubes in its hands (those the table says it holds), stamped
    /// with this step. A dedicated host or a guest not yet welcomed has none; an avatar the wire cannot carry (a
    /// hand outside the play space) leaves the last one in place, so held cubes stay held.
    fn capture_own_avatar(&mut self) {
        let me = self.table.me();
        if !self.welcomed || me == DEFAULT_AUTHORITY {
            self.own_avatar = None;
            return;
        }
        let held = HandSide::BOTH.map(|side| {
            let h = self.interaction.hand(side).held?;
            (self.table.holder(h.body.0) == me).then(|| (h.body.0, h.offset, self.table.stamp(h.body.0)))
        });
        let mut avatar = self.avatar;
        if !self.send_head {
            avatar.head = Pose::IDENTITY;
        }
        match WireAvatar::from_avatar(&avatar, held) {
            Ok(avatar) => {
                self.own_avatar = Some(AvatarSample {
                    step: self.step as u32,
                    avatar,
                })
            }
            Err(e) => tracing::debug!("own avatar not sendable, the last one stands: {e}"),
        }
    }

    /// The avatars a message to `to_player` carries: a guest its own; the host its own and the newest accepted
    /// avatar of every other guest, never the receiver's own, with only the held cubes the host's table gives
    /// that player (the host's word is final).
    fn avatars_for(&self, to_player: u8) -> AvatarSet {
        let mut set = NO_AVATARS;
        let me = self.table.me();
        if let Some(own) = self.own_avatar {
            set[usize::from(me) - 1] = Some(own);
        }
        if !self.is_host {
            return set;
        }
        for player in 1..=MAX_AUTHORITY {
            if player == to_player || player == me {
                continue;
            }
            let Some(mut sample) = self.remote.newest(player).copied() else {
                continue;
            };
            for hand in &mut sample.avatar.hands {
                if hand.held.is_some_and(|h| self.table.holder(h.cube) != player) {
                    hand.held = None;
                }
            }
            set[usize::from(player) - 1] = Some(sample);
        }
        set
    }

    fn send_on(&mut self, slot: usize, now_s: f64) -> Result<(), PeerError> {
        if self.is_host {
            let link = self.links[slot].as_ref().expect("checked by the caller");
            match link.admission {
                // Welcomed at once, the hello judged when it comes (a guest checks the welcome's scene itself, and
                // a guest of another build cannot read it): joining costs no extra round trip.
                Admission::Waiting | Admission::Welcomed => {}
                Admission::Refused(refusal) => {
                    // Said every step until the guest leaves (it does as soon as one arrives) or times out.
                    let n = write_refusal(&mut self.message_buf, &refusal).map_err(MessageError::from)?;
                    let _ = self.endpoint.send(now_s, link.peer, &self.message_buf[..n]);
                    return Ok(());
                }
            }
        }
        if self.hostile && self.welcomed {
            return self.send_forged(slot, now_s);
        }
        let (player, welcome_acked) = {
            let link = self.links[slot].as_ref().expect("checked by the caller");
            (link.player, link.welcome_acked)
        };
        let step = self.step as u32;
        let baseline = self.links[slot]
            .as_ref()
            .and_then(|l| l.avatars_sent.baseline(step))
            .map(|(age, set)| (age, *set));
        let avatars = self.avatars_for(player);
        // With a baseline, an older acked set too — avatars are then coded against their motion carried on — unless
        // every avatar is its baseline's, on schedule (one bit each: the prior's age would cost more than it saves).
        let moving = baseline.is_some_and(|(age, base)| {
            avatars.iter().zip(base.iter()).any(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => a.avatar != b.avatar || a.step != b.step.wrapping_add(age),
                (Some(_), None) => true,
                (None, _) => false,
            })
        });
        let prior = self.links[slot]
            .as_ref()
            .and_then(|l| l.avatars_sent.prior(step))
            .map(|(age, set)| (age, *set))
            .filter(|_| moving);
        let mut header = StateHeader {
            sender_step: step,
            welcome: None,
            avatar_baseline_age: baseline.map(|(age, _)| age),
            avatar_prior_age: prior.map(|(age, _)| age),
            avatars,
            present: self.is_host.then_some(self.present),
            game_inputs: self.game_inputs_for(player),
        };
        if self.is_host && !welcome_acked {
            header.welcome = Some(Welcome {
                player,
                cube_count: self.cube_count,
                scene_checksum: self.scene_checksum,
            });
        }
        // The header goes first, avatars included; the state body is written right after it, to what is left of
        // the budget.
        let (head, avatar_bits) = write_header(
            &mut self.message_buf,
            &header,
            self.cube_count,
            baseline.as_ref().map(|(_, set)| set),
            prior.as_ref().map(|(_, set)| set),
        )?;
        let budget = self.link_budget(slot);
        let end = (head + budget.saturating_sub(head).max(MIN_BODY_BYTES)).min(self.message_buf.len());
        let me = self.table.me();
        let is_host = self.is_host;
        let table = &self.table;
        let link = self.links[slot].as_mut().expect("checked by the caller");
        let sequence = link.next_sender_sequence;
        link.next_sender_sequence = sequence.wrapping_add(1);
        let sendable = |c: u32| {
            let s = table.stamp(c);
            table.holder(c) == NOBODY
                && if is_host {
                    s.authority != player
                } else {
                    s.authority == me && me != DEFAULT_AUTHORITY
                }
        };
        let n = link.sender.write_packet_for(
            &self.world,
            table.stamps(),
            sendable,
            self.step,
            sequence,
            &mut self.message_buf[head..end],
        )?;
        let m = head + n;
        link.header_bytes_sent += head as u64;
        link.avatar_bits_sent += avatar_bits as u64;
        match self.endpoint.send(now_s, link.peer, &self.message_buf[..m]) {
            Ok(transport) => {
                link.sender_sequence[usize::from(transport)] = Some(sequence);
                link.welcome_sequences[usize::from(transport)] = header.welcome.is_some();
                link.avatars_sent.record_sent(transport, step, &header.avatars);
            }
            Err(e) => tracing::debug!("state message not sent: {e}"),
        }
        Ok(())
    }

    /// The hostile guest's message: a forgery instead of its own state.
    fn send_forged(&mut self, slot: usize, now_s: f64) -> Result<(), PeerError> {
        let link = self.links[slot].as_mut().expect("checked by the caller");
        let (header, forged) = match forge(self.step, self.table.me(), &self.table) {
            Forgery::Garbage => {
                let garbage = [MESSAGE_STATE, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
                let _ = self.endpoint.send(now_s, link.peer, &garbage);
                return Ok(());
            }
            Forgery::Claim { header, cube } => (header, cube),
        };
        let budget = self.link_budget(slot);
        let link = self.links[slot].as_mut().expect("checked by the caller");
        let (head, _) = write_header(&mut self.message_buf, &header, self.cube_count, None, None)?;
        let end = (head + budget).min(self.message_buf.len());
        self.forged_stamps.copy_from_slice(self.table.stamps());
        if let Some((cube, stamp)) = forged {
            self.forged_stamps[cube as usize] = stamp;
        }
        let sequence = link.next_sender_sequence;
        link.next_sender_sequence = sequence.wrapping_add(1);
        let n = link.sender.write_packet_for(
            &self.world,
            &self.forged_stamps,
            |c| forged.is_some_and(|(f, _)| f == c),
            self.step,
            sequence,
            &mut self.message_buf[head..end],
        )?;
        let m = head + n;
        if let Ok(transport) = self.endpoint.send(now_s, link.peer, &self.message_buf[..m]) {
            link.sender_sequence[usize::from(transport)] = Some(sequence);
        }
        Ok(())
    }

    /// Handles everything the endpoint has for us: connections, acks, messages (judged on the host, accepted or
    /// ignored on a guest).
    pub fn receive(&mut self, now_s: f64) -> Result<(), PeerError> {
        self.clock_s = self.clock_s.max(now_s);
        while let Some(event) = self.endpoint.pop_event() {
            match event {
                EndpointEvent::Connected { peer } if self.is_host => {
                    if let Some(slot) = self.links.get_mut(usize::from(peer.0)) {
                        let mut link = Link::new(peer, guest_player(peer), self.cube_count as usize);
                        link.sender.measure_demand = self.measure_demand;
                        self.present |= 1 << (link.player - 1);
                        *slot = Some(link);
                    }
                }
                EndpointEvent::Disconnected { peer, reason } if self.is_host => {
                    tracing::info!(peer = peer.0, ?reason, "a guest left");
                    self.guest_left(peer)?;
                }
                EndpointEvent::Disconnected { reason, .. } if self.host_gone.is_none() && !self.left => {
                    let how = match reason {
                        DisconnectReason::TimedOut => HostGone::TimedOut,
                        DisconnectReason::Closed | DisconnectReason::HostShutdown => HostGone::Left,
                    };
                    tracing::warn!(?reason, "{}", how.name());
                    self.host_gone = Some((how, now_s));
                    self.forget_everyone()?;
                }
                EndpointEvent::Received { peer, sequence } => {
                    // Copied out of the endpoint (which `on_message` may send on) into a buffer kept for reuse.
                    let mut data = std::mem::take(&mut self.receive_buf);
                    data.clear();
                    data.extend_from_slice(self.endpoint.payload());
                    let read = self.on_message(peer, &data, now_s);
                    self.receive_buf = data;
                    if read? {
                        self.endpoint.accept(peer, sequence);
                    }
                }
                EndpointEvent::Acked { peer, sequence } => {
                    if let Some(link) = self.link_mut(peer) {
                        if let Some(s) = link.sender_sequence[usize::from(sequence)].take() {
                            link.sender.on_acked(s);
                        }
                        link.avatars_sent.on_acked(sequence);
                        if link.welcome_sequences[usize::from(sequence)] {
                            link.welcome_acked = true;
                        }
                    }
                }
                EndpointEvent::Lost { peer, sequence } => {
                    if let Some(link) = self.link_mut(peer) {
                        link.sender_sequence[usize::from(sequence)] = None;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn slot_of(&self, peer: PeerId) -> usize {
        if self.is_host {
            usize::from(peer.0)
        } else {
            0
        }
    }

    fn link_mut(&mut self, peer: PeerId) -> Option<&mut Link> {
        let slot = self.slot_of(peer);
        self.links.get_mut(slot).and_then(|l| l.as_mut())
    }

    /// Rule 9: a guest left or timed out.
    fn guest_left(&mut self, peer: PeerId) -> Result<(), PeerError> {
        let Some(link) = self.links.get_mut(usize::from(peer.0)).and_then(|l| l.take()) else {
            return Ok(());
        };
        self.present &= !(1u8 << (link.player - 1));
        self.remote.forget(link.player);
        self.game_inputs[usize::from(link.player - 1)] = None;
        let mut returned = Vec::new();
        self.table.release_player(link.player, |c| returned.push(c));
        for c in returned {
            wake_dynamic(&mut self.world, BodyId(c))?;
        }
        Ok(())
    }

    /// The host is gone: the other players' avatars go (nobody plays them now), and the cubes in their hands fall
    /// where they are.
    fn forget_everyone(&mut self) -> Result<(), PeerError> {
        let me = self.table.me();
        for player in (1..=MAX_AUTHORITY).filter(|&p| p != me) {
            self.forget_player(player)?;
        }
        self.present = if me == DEFAULT_AUTHORITY { 0 } else { 1 << (me - 1) };
        Ok(())
    }

    /// Player `player` is no longer in the game (as the host says): its avatar is no longer played out and the
    /// cubes its hands held here are let go.
    fn forget_player(&mut self, player: u8) -> Result<(), PeerError> {
        self.remote.forget(player);
        if let Some(input) = self.game_inputs.get_mut(usize::from(player).wrapping_sub(1)) {
            *input = None;
        }
        for cube in 0..self.cube_count {
            if self.table.holder(cube) == player {
                self.table.set_holder(cube, NOBODY);
                let id = BodyId(cube);
                if self.world.kind(id)? == BodyKind::Kinematic {
                    self.set_kind_keeping_rest(id, BodyKind::Dynamic)?;
                }
            }
        }
        Ok(())
    }

    /// Reads and applies one message; true when it was read (the transport then acks it, and the sender may code
    /// against it), false when it was refused.
    fn on_message(&mut self, peer: PeerId, data: &[u8], now_s: f64) -> Result<bool, PeerError> {
        let read = {
            let ring = self
                .links
                .get(self.slot_of(peer))
                .and_then(|l| l.as_ref())
                .map(|l| &l.avatars_received);
            read_message(data, self.cube_count, |step| ring.and_then(|r| r.get(step)))
        };
        let message = match read {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!("message refused: {e}");
                self.refuse(RejectReason::Malformed);
                if let (MessageError::MissingAvatarBaseline(_), Some(link)) = (e, self.link_mut(peer)) {
                    // A message we could not read (it is not acked): tell the sender, which then codes absolute.
                    link.receiver.rejected_packets += 1;
                    let count = link.receiver.rejected_packets as u16;
                    let link_peer = link.peer;
                    let mut notice = [0u8; REJECT_NOTICE_BYTES];
                    if let Ok(n) = write_reject_notice(&mut notice, count) {
                        let _ = self.endpoint.send(now_s, link_peer, &notice[..n]);
                    }
                }
                return Ok(false);
            }
        };
        match message {
            Message::Hello(hello) => return Ok(self.on_hello(peer, &hello)),
            Message::Refused(refusal) if !self.is_host && !self.welcomed => {
                let host = refusal.scene;
                return Err(match refusal.reason {
                    RefusalReason::Version => PeerError::VersionRefused {
                        ours: self.protocol_version,
                        host: refusal.version,
                    },
                    RefusalReason::Scene => PeerError::SceneRefused {
                        ours: Box::new(self.scene),
                        host: Box::new(host),
                    },
                });
            }
            Message::Refused(_) => return Ok(false),
            Message::Legacy if self.is_host => {
                tracing::warn!(
                    peer = peer.0,
                    addr = ?self.endpoint.peer_addr(peer),
                    "a guest of an older build (game protocol 1, no version) tried to join: disconnected; this \
                     host speaks protocol {PROTOCOL_VERSION}"
                );
                self.endpoint.disconnect(now_s, peer);
                self.guest_left(peer)?;
                return Ok(false);
            }
            Message::Legacy => return Err(PeerError::HostTooOld),
            Message::State { .. } if self.is_host && self.link_refused(peer) => return Ok(false),
            Message::RejectNotice(bytes) => {
                if let (Ok(refused), Some(link)) = (read_reject_notice(bytes), self.link_mut(peer)) {
                    if link.reject_notices.is_new(refused) {
                        link.sender.resync();
                        link.avatars_sent.forget_all();
                    }
                }
            }
            Message::State { header, body } => {
                if !self.is_host {
                    self.take_welcome(&header)?;
                    if !self.welcomed && (self.scene_mismatch.is_some() || self.protocol_version != PROTOCOL_VERSION) {
                        // Not this guest's game: nothing here is applied; the host's refusal, naming its scene, is
                        // on its way (`NetPlay` waits for it).
                        return Ok(false);
                    }
                }
                let Some(link) = self.link_mut(peer) else {
                    return Ok(false);
                };
                // Kept whatever the body holds: the sender will code against this message once it is acked.
                link.avatars_received.insert(header.sender_step, &header.avatars);
                if let Err(e) = link.receiver.read(body) {
                    tracing::debug!("state body refused: {e}");
                    let mut notice = [0u8; REJECT_NOTICE_BYTES];
                    let count = link.receiver.rejected_packets as u16;
                    let link_peer = link.peer;
                    self.refuse(RejectReason::Malformed);
                    if let Ok(n) = write_reject_notice(&mut notice, count) {
                        let _ = self.endpoint.send(now_s, link_peer, &notice[..n]);
                    }
                    return Ok(false);
                }
                // Headers are ordered by the sender's step (wrap-safe over 32 bits): held cubes come from the newest
                // only.
                let newer = link
                    .newest_header_step
                    .is_none_or(|s| (header.sender_step.wrapping_sub(s) as i32) > 0);
                let mut gap = 0.0;
                if newer {
                    link.newest_header_step = Some(header.sender_step);
                    gap = link.newest_header_at_s.replace(now_s).map_or(0.0, |last| now_s - last);
                }
                let player = link.player;
                if gap > STALL_GAP_S && !self.is_host {
                    tracing::warn!(gap_s = gap, "the host's game stood still");
                    self.stats.seconds_stalled += gap;
                }
                if newer {
                    let age = (self.step as u32).wrapping_sub(header.sender_step) as i32;
                    self.stats.newest_states += 1;
                    self.stats.newest_state_age_steps += age.max(0) as u64;
                }
                if newer && !self.is_host {
                    self.take_presence(header.present)?;
                }
                self.take_avatars(player, &header, newer, now_s)?;
                if newer && self.welcomed {
                    self.take_game_inputs(player, &header);
                }
                self.take_updates(peer, player)?;
            }
        }
        Ok(true)
    }

    /// Guest: who the host says is in the game; a player who left is forgotten here.
    fn take_presence(&mut self, present: Option<u8>) -> Result<(), PeerError> {
        let Some(now) = present else { return Ok(()) };
        let gone = self.present & !now;
        self.present = now;
        let me = self.table.me();
        for player in (1..=MAX_AUTHORITY).filter(|&p| gone & (1 << (p - 1)) != 0 && p != me) {
            tracing::info!(player, "a player left the game");
            self.forget_player(player)?;
        }
        Ok(())
    }

    /// Host: whether the guest on `peer` was refused (its hello named another version or scene).
    fn link_refused(&self, peer: PeerId) -> bool {
        self.links
            .get(usize::from(peer.0))
            .and_then(|l| l.as_ref())
            .is_some_and(|l| matches!(l.admission, Admission::Refused(_)))
    }

    /// Host: a guest's hello. Its version and scene must be the host's; otherwise it is refused (every step, naming
    /// the host's own), and the host says so in its log. True when read.
    fn on_hello(&mut self, peer: PeerId, hello: &Hello) -> bool {
        if !self.is_host {
            return false;
        }
        let ours = self.scene;
        let addr = self.endpoint.peer_addr(peer);
        let Some(link) = self.links.get_mut(usize::from(peer.0)).and_then(|l| l.as_mut()) else {
            return false;
        };
        if link.admission != Admission::Waiting {
            return true;
        }
        match judge_hello(hello, &ours) {
            None => {
                link.admission = Admission::Welcomed;
                tracing::info!(player = link.player, ?addr, scene = %hello.scene, "a guest joined");
            }
            Some(reason) => {
                link.admission = Admission::Refused(Refusal {
                    version: PROTOCOL_VERSION,
                    scene: ours,
                    reason,
                });
                tracing::warn!(
                    ?addr,
                    guest_version = hello.version,
                    guest_scene = %hello.scene,
                    host_version = PROTOCOL_VERSION,
                    host_scene = %ours,
                    "refused a guest: {}",
                    match reason {
                        RefusalReason::Version => "another version of Tumble",
                        RefusalReason::Scene => "another scene",
                    }
                );
            }
        }
        true
    }

    fn refuse(&mut self, reason: RejectReason) {
        if self.is_host {
            self.stats.rejected.add(reason);
        } else if reason == RejectReason::Malformed {
            self.stats.malformed += 1;
        }
    }

    fn take_welcome(&mut self, header: &StateHeader) -> Result<(), PeerError> {
        let Some(w) = header.welcome else { return Ok(()) };
        if self.welcomed || self.protocol_version != PROTOCOL_VERSION {
            // (A guest pretending to be of another build cannot read this build's welcome, as such a guest could not.)
            return Ok(());
        }
        if w.cube_count != self.cube_count || w.scene_checksum != self.scene_checksum {
            // Another scene: not welcomed. The host's refusal names it (see `scene_mismatch_error`).
            self.scene_mismatch = Some(w);
            return Ok(());
        }
        // A fresh table for the player index the host gave, keeping the cubes pinned from the start (rule 10).
        let mut table = AuthorityTable::new(self.cube_count as usize, w.player, false);
        for cube in 0..self.cube_count {
            match self.table.pinned_to(cube) {
                NOBODY => {}
                player => table.pin(cube, player),
            }
        }
        self.table = table;
        self.welcomed = true;
        self.welcomed_at_step = self.step;
        Ok(())
    }

    /// The avatars in a message from `from_player`'s connection. Every avatar is played out (the host: only those
    /// it accepts); the newest message's (`newer`) also carry claims: the cubes in their hands, judged (host) or
    /// accepted (guest) like cube states, and releases (a cube the sender's side held that no avatar names now).
    ///
    /// The host takes only the sender's own slot (the sender is known by its connection: an avatar in another
    /// slot is impersonation, refused), refuses an implausible avatar whole, and relays an avatar only when it
    /// and every cube in its hands were accepted.
    fn take_avatars(
        &mut self,
        from_player: u8,
        header: &StateHeader,
        newer: bool,
        now_s: f64,
    ) -> Result<(), PeerError> {
        if !self.is_host {
            let me = self.table.me();
            for player in (1..=MAX_AUTHORITY).filter(|&p| p != me) {
                if let Some(sample) = header.avatar(player) {
                    self.remote.push(player, sample, now_s);
                }
            }
            if newer {
                for player in (1..=MAX_AUTHORITY).filter(|&p| p != me) {
                    if let Some(sample) = header
                        .avatar(player)
                        .filter(|s| s.avatar.is_plausible(DESKTOP_HAND_REACH_M))
                    {
                        self.take_held(player, &sample.avatar)?;
                    }
                }
                self.release_unnamed(from_player, header)?;
            }
            return Ok(());
        }
        if !newer {
            return Ok(());
        }
        for player in (1..=MAX_AUTHORITY).filter(|&p| p != from_player) {
            if header.avatar(player).is_some() {
                self.refuse(RejectReason::NotSender);
            }
        }
        if let Some(sample) = header.avatar(from_player) {
            if !sample.avatar.is_plausible(DESKTOP_HAND_REACH_M) {
                self.refuse(RejectReason::BadPose);
                return Ok(());
            }
            if self.take_held(from_player, &sample.avatar)? {
                self.remote.accept(from_player, sample, now_s);
            }
        }
        self.release_unnamed(from_player, header)
    }

    /// The cubes in `player`'s hands as `avatar` has them: each a claim, judged (host) or accepted (guest) as a
    /// cube state is; a taken one is that player's to hold (kinematic, following the played-out hand). True when
    /// every claim was taken.
    fn take_held(&mut self, player: u8, avatar: &WireAvatar) -> Result<bool, PeerError> {
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
    fn put_in_hand(&mut self, cube: u32, player: u8, stamp: AuthorityStamp) -> Result<(), PeerError> {
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
    fn release_unnamed(&mut self, from_player: u8, header: &StateHeader) -> Result<(), PeerError> {
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
    fn set_kind_keeping_rest(&mut self, id: BodyId, kind: BodyKind) -> Result<(), PhysicsError> {
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
    fn lose_if_mine(&mut self, cube: u32) -> Result<(), PeerError> {
        if self.interaction.forget(BodyId(cube)) {
            self.stats.holds_lost += 1;
            let id = BodyId(cube);
            if self.world.kind(id)? == BodyKind::Kinematic {
                self.set_kind_keeping_rest(id, BodyKind::Dynamic)?;
            }
        }
        Ok(())
    }

    fn take_updates(&mut self, peer: PeerId, from_player: u8) -> Result<(), PeerError> {
        let slot = if self.is_host { usize::from(peer.0) } else { 0 };
        let count = self.links[slot].as_ref().map_or(0, |l| l.receiver.update_count());
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
                if state.stamp.authority == DEFAULT_AUTHORITY && !same {
                    // Rule 8b: the host returned the cube on a resting state we have since moved on from (the
                    // cube was hit again while the news was on its way). Take it back at once, one authority
                    // sequence later, with what we have: the host takes the newer claim and nothing is lost.
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
            let new = self.world.state(id)?;
            if self.steps_since_welcome() > JOIN_GRACE_STEPS {
                let moved = old.position.distance(new.position);
                self.stats.corrections_over_1cm += u64::from(moved > 0.01);
                self.stats.corrections_over_10cm += u64::from(moved > 0.1);
            }
            self.snap_drawn(cube as usize, &old, &new);
        }
        Ok(())
    }

    /// Tells the world which cubes this peer simulates for everyone (as the table now says, after what arrived):
    /// rest detection is on exactly for its own unheld cubes, and every cube under another authority is remote.
    fn set_body_flags(&mut self) -> Result<(), PeerError> {
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

    /// Cubes held by other players are simulated where they are drawn: in the played-out hand (or, until the hold
    /// plays out, where they were), one step behind, so they push what they touch at the hand's own speed.
    fn follow_remote_hands(&mut self) -> Result<(), PeerError> {
        let me = self.table.me();
        for cube in 0..self.cube_count as usize {
            let holder = self.table.holder(cube as u32);
            let id = BodyId(cube as u32);
            if holder == NOBODY || holder == me || self.world.kind(id)? != BodyKind::Kinematic {
                continue;
            }
            let target = match self.remote.hand_drawn(cube) {
                Some(pose) => pose,
                None => pose(&self.world.state(id)?),
            };
            move_held_towards(&mut self.world, id, &target)?;
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

    fn simulate_step(&mut self) -> Result<(), PeerError> {
        self.set_body_flags()?;
        self.follow_remote_hands()?;
        for (cube, (rested, moved)) in self.rested_before.iter_mut().zip(&mut self.physics_step).enumerate() {
            let s = self.world.state(BodyId(cube as u32))?;
            (*rested, *moved) = (s.at_rest, -s.position);
        }
        self.world.step();
        for (cube, moved) in self.physics_step.iter_mut().enumerate() {
            *moved += self.world.state(BodyId(cube as u32))?.position;
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

    /// The IP and UDP header bytes of each datagram to or from `peer`: 28 over IPv4, 48 over IPv6.
    fn ip_udp_bytes(&self, peer: PeerId) -> usize {
        self.endpoint
            .peer_addr(peer)
            .map_or(IP_UDP_HEADER_BYTES, ip_udp_header_bytes)
    }

    /// The state packet's byte budget on the connection to `peer` (less over IPv6, whose headers are longer).
    fn packet_budget_for(&self, peer: PeerId) -> usize {
        let ip = self.ip_udp_bytes(peer);
        packet_budget_bytes(
            self.kbps_budget,
            PACKETS_PER_S / self.send_every_steps,
            (ip + CONNECTED_HEADER_BYTES) as u32,
            (MAX_PACKET_BYTES + ip) as u32,
        ) as usize
    }

    /// The message byte budget of the connection in link slot `slot` (0 when there is none: the caller checked).
    fn link_budget(&self, slot: usize) -> usize {
        self.links[slot].as_ref().map_or(0, |l| self.packet_budget_for(l.peer))
    }

    /// Per-connection wire bytes so far, sent and received, IP/UDP headers included, by remote player.
    pub fn wire_bytes(&self) -> impl Iterator<Item = (u8, u64, u64)> + '_ {
        self.links.iter().flatten().filter_map(|l| {
            let s = self.endpoint.stats(l.peer)?;
            let header = self.ip_udp_bytes(l.peer) as u64;
            Some((
                l.player,
                s.bytes_sent + s.packets_sent * header,
                s.bytes_received + s.packets_received * header,
            ))
        })
    }

    /// Host: the cubes the last step returned to default, with the authority each had.
    pub fn returned_this_step(&self) -> &[(u32, u8)] {
        &self.returned
    }
}

/// Whether a moving cube pinned to `pinned` goes in every packet of a peer whose player is `me`: its own player's
/// cube always, and on the host every player's (relayed to the other guests). A headless host's `me` is 0, which
/// is also "pinned to nobody": only pinned cubes count.
fn sent_every_packet(pinned: u8, me: u8, is_host: bool) -> bool {
    pinned != NOBODY && (pinned == me || is_host)
}

/// Smallest state body worth sending: one absolute update of an awake cube with its stamp, and the packet header.
const MIN_BODY_BYTES: usize = 40;

fn pose(s: &BodyState) -> Pose {
    Pose::new(s.position, s.rotation)
}

/// The fastest a cube held in a remote hand is moved here (m/s): faster than hands move (a throw leaves at up to
/// 12 m/s). The played-out hand jumps when a hold plays out far from where the cube was pinned, or a cube passes
/// from one hand to the other; swept there in one step, the kinematic cube hit what it met at up to 50 m/s, and a
/// cube flung at 33 m/s is past what any easing can draw smoothly.
pub const MAX_REMOTE_HELD_SPEED_M_S: f32 = 15.0;
/// The same for turning (rad/s): a hand turns at a few turns a second at most.
pub const MAX_REMOTE_HELD_SPIN_RAD_S: f32 = 30.0;

/// Moves kinematic cube `id` towards `target` in one step, at most at [`MAX_REMOTE_HELD_SPEED_M_S`] and
/// [`MAX_REMOTE_HELD_SPIN_RAD_S`]: a jump of the hand is caught up over a few steps.
fn move_held_towards(world: &mut World, id: BodyId, target: &Pose) -> Result<(), PhysicsError> {
    let dt = world.config().dt;
    let now = world.state(id)?;
    let position = now.position + (target.position - now.position).clamp_length_max(MAX_REMOTE_HELD_SPEED_M_S * dt);
    let angle = now.rotation.angle_between(target.rotation);
    let most = MAX_REMOTE_HELD_SPIN_RAD_S * dt;
    let rotation = if angle > most {
        now.rotation.slerp(target.rotation, most / angle)
    } else {
        target.rotation
    };
    world.set_kinematic_target(id, position, rotation)
}

/// A cube returned to default by rule 9: dynamic again and awake, where it is.
fn wake_dynamic(world: &mut World, id: BodyId) -> Result<(), PhysicsError> {
    if world.is_removed(id)? {
        return Ok(());
    }
    if world.kind(id)? == BodyKind::Kinematic {
        world.set_kind(id, BodyKind::Dynamic)?;
    }
    let s = world.state(id)?;
    world.set_state(id, &BodyState { at_rest: false, ..s })
}

#[cfg(test)]
mod tests {
    use glam::{Quat, Vec3};
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    use super::*;

    /// A cube in a remote hand whose played-out pose jumps 1 m through a resting cube, followed for 30 steps:
    /// the fastest the resting cube is then sent moving (m/s).
    fn fling_speed(follow: impl Fn(&mut World, BodyId, &Pose)) -> f32 {
        let mut world = World::new(WorldConfig::default()).unwrap();
        let held = world
            .add_body(&BodyDesc {
                kind: BodyKind::Kinematic,
                position: Vec3::new(-0.6, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let struck = world
            .add_body(&BodyDesc {
                position: Vec3::new(0.6, 0.5, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let jumped_to = Pose::new(Vec3::new(0.4, 0.5, 0.0), Quat::IDENTITY);
        let mut fastest = 0.0f32;
        for _ in 0..30 {
            follow(&mut world, held, &jumped_to);
            world.step();
            fastest = fastest.max(world.state(struck).unwrap().linear_velocity.length());
        }
        fastest
    }

    #[test]
    fn only_pinned_cubes_go_in_every_packet_and_on_a_guest_only_its_own() {
        // A headless host (player 0) and an unpinned cube: ordinary priority, not every packet.
        assert!(!sent_every_packet(NOBODY, DEFAULT_AUTHORITY, true));
        assert!(!sent_every_packet(NOBODY, 2, false));
        assert!(sent_every_packet(2, 2, false));
        assert!(!sent_every_packet(3, 2, false));
        assert!(sent_every_packet(3, DEFAULT_AUTHORITY, true));
        assert!(sent_every_packet(3, 1, true));
    }

    #[test]
    fn a_remote_hands_jump_is_caught_up_without_flinging_what_the_held_cube_meets() {
        let swept = fling_speed(|w, id, to| w.set_kinematic_target(id, to.position, to.rotation).unwrap());
        let caught_up = fling_speed(|w, id, to| move_held_towards(w, id, to).unwrap());
        eprintln!("a 1 m jump of a remote hand flings a cube at {swept:.1} m/s swept, {caught_up:.1} m/s caught up");
        assert!(swept > 30.0, "{swept}");
        assert!(caught_up <= MAX_REMOTE_HELD_SPEED_M_S * 1.5, "{caught_up}");
    }
}
