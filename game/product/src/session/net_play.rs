//! A networked game as a view plays it: the [`Peer`]s this process runs (one for `tumble join`, the host and its
//! bots for `tumble host`, every player for `tumble local`), the transport between them, and which one the desktop
//! hands drive and the window shows. No window here: the desktop view, `tumble vr`, `tumble host --headless` and
//! the session screenshot all drive it one fixed step at a time, so it is tested headless.
//!
//! Two transports. **UDP**: every peer has its own socket, bots included (`tumble host --bots N` joins each bot to
//! the host over 127.0.0.1 as any guest would: separate worlds that learn of each other only through packets), on
//! the real clock. **Memory** (`tumble local`): every peer on one [`MemoryNetwork`], the link simulator, on a clock
//! that advances with the steps, so a run is the same bits from the same seed and inputs.
//!
//! Each step, every peer: hands (the desktop's for the controlled seat, a bot's or none for the others) → `play`,
//! `quantize`, `send`; then the network delivers and every peer `receive`s; then `simulate`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyId, World};
use tumble_net::crypto::{JoinSecret, HOST_KEY_HASH_BYTES};
use tumble_net::endpoint::ConnectError;
use tumble_net::join_code::{self, JoinTarget};
use tumble_net::memory::MemoryNetwork;
use tumble_net::port_mapping::{self, KeptMapping, MappingInfo, MappingOptions};
use tumble_net::{Endpoint, EndpointConfig, EndpointEvent, LinkConfig, SocketError, UdpTransport};

use crate::avatar::blend_input;
use crate::avatar::AvatarInput;
use crate::bots::{make_driver, Driver, DRIVER_NAMES};
use crate::desktop::sim::SimStats;
use crate::fixed_step::{FixedStep, STEP_S};
use crate::interaction::InteractionEvent;
use crate::interpolate::PoseBuffer;
use crate::session::net_graphs::NetGraphs;
use crate::session::peer::{HostGone, Peer, PeerConfig, PeerError, MAX_PLAYERS};
use crate::session::DEFAULT_SESSION_KBPS_BUDGET;
use crate::sync::codec::quantize::bit_identical;

/// The port `tumble host` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 40_000;
/// Network clock ticks per step on the memory transport (deliveries land between steps, as they would).
const SUBTICKS_PER_STEP: u64 = 12;
/// What `--bots N` puts in the guest seats, in order.
pub const HOST_BOTS: [&str; 3] = ["builder", "thrower", "catcher"];
/// How long `join` waits for the host's welcome once connected (s): a round trip or two, and the host's step.
const WELCOME_WAIT_S: f64 = 5.0;
/// How long `join` polls its socket between looks while the handshake runs.
const HANDSHAKE_POLL: Duration = Duration::from_millis(5);

/// Why a networked game could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum NetPlayError {
    #[error("scene {path}: {source}")]
    Scene { path: PathBuf, source: anyhow::Error },
    #[error("could not open a UDP socket on {addr}: {source}")]
    Socket { addr: SocketAddr, source: SocketError },
    #[error(transparent)]
    Io(#[from] SocketError),
    #[error("could not join {addr}: {reason}")]
    Join { addr: SocketAddr, reason: ConnectError },
    #[error("the host at {addr} needs a join code: ask the host for it and run `tumble join CODE`")]
    NeedsCode { addr: SocketAddr },
    /// No answer from a private address (RFC 1918, CGNAT, link-local, ULA): from outside the host's network, its
    /// router did not forward the port.
    #[error(
        "could not join {addr}: no answer from {addr}, a private address (reachable only inside the host's own \
         network): the host's router did not map the port; the host must forward UDP port {port} on its router to \
         its machine and pass --public-addr PUBLIC:{port} (see its log), then give you the new join code",
        port = .addr.port()
    )]
    PrivateNoAnswer { addr: SocketAddr },
    #[error(transparent)]
    Peer(#[from] PeerError),
    #[error("{0}")]
    Bad(String),
    #[error("{}", .0.name())]
    HostGone(HostGone),
}

/// `tumble host`.
#[derive(Clone, Debug, PartialEq)]
pub struct HostOptions {
    pub scene: PathBuf,
    /// 0: any free port (tests).
    pub port: u16,
    /// Guest seats filled by bots in this process, each a guest on its own UDP socket (0 to 3).
    pub bots: usize,
    /// The host plays (player 1, the desktop hands); false: a dedicated host.
    pub playing: bool,
    pub kbps_budget: u32,
    /// An open game: no join secret, anyone who reaches the port joins (`tumble join ADDR:PORT`). Otherwise
    /// players need the join code.
    pub open: bool,
    /// The address the join code names (what players reach: a public address with a forwarded port; port 0: the
    /// port bound); `None`: the router's mapping if it made one, else this machine's LAN address.
    pub public_addr: Option<SocketAddr>,
    /// Ask the router to forward the port (PCP, NAT-PMP, UPnP-IGD) when `public_addr` is `None` and this machine
    /// has a private address (`tumble host --no-port-mapping`: false).
    pub port_mapping: bool,
    /// The lifetime asked of the router; the mapping is renewed at half what it grants.
    pub port_mapping_lifetime: Duration,
}

/// The lifetime `tumble host` asks of its router for the port mapping (renewed at half of it while the game runs).
pub const PORT_MAPPING_LIFETIME: Duration = Duration::from_secs(1800);

/// `tumble join`.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinOptions {
    pub scene: PathBuf,
    /// The host's address and join secret (from a join code; `JoinSecret::OPEN` for `ADDR:PORT`).
    pub host: JoinTarget,
    pub kbps_budget: u32,
    /// A test hook (`tumble join --pretend-protocol-version`): say this game protocol version in the hello, as a
    /// guest of another build would. `None`: this build's.
    pub pretend_version: Option<u16>,
}

/// `tumble local`.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalOptions {
    pub scene: PathBuf,
    /// 1 to 4, host included.
    pub players: usize,
    /// What drives each player the hands do not, player 1 (the host) first (bot names as `tumble session --bots`;
    /// missing: idle).
    pub bots: Vec<String>,
    pub link: LinkConfig,
    pub seed: u64,
    pub kbps_budget: u32,
}

/// One peer this process runs, and what moves its hands when the desktop hands do not.
pub struct Seat {
    pub peer: Peer,
    /// The bot per player index (`[player − 1]`; missing: idle). Which player a guest is, the host decides in
    /// its welcome, in the order the handshakes finish; the driver is made once it is known.
    bots: Vec<String>,
    driver: Option<Box<dyn Driver>>,
    seed: u64,
    pub graphs: NetGraphs,
}

enum Transport {
    /// One socket per seat (same index), on the real clock.
    Udp { sockets: Vec<UdpTransport>, clock: Instant },
    /// Every seat on one simulated network; seat `i` at [`memory_address`]`(i)`.
    Memory { net: MemoryNetwork },
}

/// The peers of this process and the view's choices.
pub struct NetPlay {
    pub seats: Vec<Seat>,
    transport: Transport,
    /// The seat the desktop (or VR) hands drive; the view shows its world.
    controlled: usize,
    step: u64,
    fixed: FixedStep,
    last_input: AvatarInput,
    /// The shown seat's drawn poses (smoothed), for interpolation between steps.
    pub poses: PoseBuffer,
    pub scene_name: String,
    /// What this process is, for the overlay.
    pub role: String,
    /// A host's join code (none for an open game or a guest).
    pub join_code: Option<String>,
    step_ms: f32,
    /// Bots play while true; false: they put down what they hold and stand still (so a world can come to rest).
    pub bots_active: bool,
    /// A host's port mapping on its router: how it was made and where players reach it.
    pub port_mapping: Option<MappingInfo>,
    /// Why a host has no port mapping (every method's answer, or why none was tried); `None` with a mapping, with
    /// `--public-addr` or `--no-port-mapping`, and on a guest.
    pub port_mapping_error: Option<String>,
    /// The mapping's keeper: renews it on its own thread, removes it when dropped (after the goodbyes).
    kept_mapping: Option<KeptMapping>,
    /// The controlled seat's grabs and releases since they were last taken ([`NetPlay::take_events`]), oldest
    /// first; at most [`MAX_KEPT_EVENTS`] (a headset's haptics read them once a frame).
    events: Vec<InteractionEvent>,
}

/// Interaction events kept for a frame loop that has not taken them (the oldest go first).
const MAX_KEPT_EVENTS: usize = 64;

fn memory_address(seat: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, seat as u8 + 1], 1000))
}

/// Makes a fresh world of the scene for each peer.
pub type WorldMaker = Box<dyn Fn() -> anyhow::Result<World>>;

fn load(scene: &Path) -> Result<(String, WorldMaker), NetPlayError> {
    let bad = |source| NetPlayError::Scene {
        path: scene.to_path_buf(),
        source,
    };
    let name = tumble_engine::scene::load_scene(scene)
        .map_err(|e| bad(e.into()))?
        .name
        .clone();
    Ok((name, world_maker(scene).map_err(bad)?))
}

/// The game's endpoint settings with `join_secret` (a host: `None` draws a fresh one) and, on a guest, the host key
/// the join code names (`None`: joining by address, any host).
fn endpoint_config(
    join_secret: Option<JoinSecret>,
    host_key_hash: Option<[u8; HOST_KEY_HASH_BYTES]>,
) -> EndpointConfig {
    EndpointConfig {
        join_secret,
        host_key_hash,
        ..EndpointConfig::default()
    }
}

/// This machine's address on its LAN: the source address the system would use towards the internet (a UDP
/// "connect" sends nothing). Loopback when there is no route.
fn lan_address() -> std::net::IpAddr {
    std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| {
            s.connect((Ipv4Addr::new(192, 0, 2, 1), 9))?;
            s.local_addr()
        })
        .map_or(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), |a| a.ip())
}

/// Asks the router to forward UDP `port` to this machine (before the game starts: at most
/// [`MappingOptions::timeout`]), and hands the mapping to a thread that renews it. Not tried when this machine's
/// address is not a private one (a public address needs no mapping; loopback has no router). Logs what it got, or
/// exactly what to forward by hand. Returns the kept mapping, or why there is none.
fn map_port(port: u16, lifetime: Duration) -> (Option<KeptMapping>, Option<String>) {
    let lan = lan_address();
    if !port_mapping::is_private(lan) {
        let why = if lan.is_loopback() {
            "no network (no route from this machine)".to_string()
        } else {
            format!("this machine's address {lan} is not a private one: nothing to map")
        };
        tracing::info!("no port mapping asked for: {why}");
        return (None, Some(format!("not tried: {why}")));
    }
    match port_mapping::map_udp(port, lifetime, &MappingOptions::default()) {
        Ok(mapping) => {
            let info = mapping.info();
            tracing::info!(
                method = %info.method,
                external = %info.external,
                lifetime_s = info.lifetime.as_secs(),
                "the router maps {} to this machine ({}, by {}): players outside this network reach the host there",
                info.external,
                info.local,
                info.method.label()
            );
            (Some(mapping.keep()), None)
        }
        Err(e) => {
            tracing::warn!("{}", no_mapping_advice(&e, lan, port));
            (None, Some(e.to_string()))
        }
    }
}

/// What a host is told when its router mapped nothing: every method's answer, and what to forward by hand.
fn no_mapping_advice(e: &port_mapping::MappingError, lan: std::net::IpAddr, port: u16) -> String {
    format!(
        "no port mapping ({e}): forward UDP port {port} on your router to {} and pass --public-addr PUBLIC:{port} \
         (PUBLIC: the router's public address); players on this network can join with the code as it is",
        SocketAddr::new(lan, port)
    )
}

fn bind(addr: SocketAddr) -> Result<UdpTransport, NetPlayError> {
    UdpTransport::bind(addr).map_err(|source| NetPlayError::Socket { addr, source })
}

/// A seed from the clock, so two processes' endpoints do not pick the same salts and session keys.
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

impl NetPlay {
    /// A host on `0.0.0.0:port` (the port it got is in [`NetPlay::host_port`]), and `bots` guests on 127.0.0.1.
    pub fn host(options: &HostOptions) -> Result<NetPlay, NetPlayError> {
        if options.bots > MAX_PLAYERS - 1 {
            return Err(NetPlayError::Bad(format!(
                "--bots must be 0 to {} (got {})",
                MAX_PLAYERS - 1,
                options.bots
            )));
        }
        let (name, make_world) = load(&options.scene)?;
        let seed = clock_seed();
        let socket = bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, options.port)))?;
        let port = socket.local_addr().port();
        let clock = Instant::now();
        let world = make_world().map_err(|source| NetPlayError::Scene {
            path: options.scene.clone(),
            source,
        })?;
        let secret = if options.open { Some(JoinSecret::OPEN) } else { None };
        // An open game takes one player per IP address: nothing proves who a guest is, so one machine must not take
        // every seat from several ports. (The host's own bots join over loopback, which is never limited.)
        let settings = EndpointConfig {
            max_guests_per_address: options.open.then_some(1),
            ..endpoint_config(secret, None)
        };
        let endpoint = Endpoint::host(settings, 0.0).map_err(|e| NetPlayError::Bad(e.to_string()))?;
        let secret = endpoint.join_secret();
        let key_hash = endpoint.key_hash();
        let (kept_mapping, port_mapping_error) = match options.public_addr {
            None if options.port_mapping => map_port(port, options.port_mapping_lifetime),
            _ => (None, None),
        };
        let mapped = kept_mapping.as_ref().map(KeptMapping::info);
        let advertised = match (options.public_addr, mapped) {
            (Some(a), _) if a.port() == 0 => SocketAddr::new(a.ip(), port),
            (Some(a), _) => a,
            (None, Some(m)) => m.external,
            (None, None) => SocketAddr::new(lan_address(), port),
        };
        let join_code = join_code::encode(advertised, &secret, &key_hash);
        let config = PeerConfig::fitting(options.kbps_budget, world.body_count());
        let mut host = Peer::host(world, endpoint, config, options.playing)?;
        host.set_scene_name(&name);
        // Player 1 is the desktop's hands (or nobody, dedicated); bots take the guest players in order.
        let bots: Vec<String> = std::iter::once("idle")
            .chain(HOST_BOTS.iter().copied().take(options.bots))
            .map(String::from)
            .collect();
        let mut seats = vec![Seat::new(host, &bots, seed)];
        let mut sockets = vec![socket];
        let to_host = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        for k in 0..options.bots {
            let bot_seed = seed.wrapping_add(7919 * (k as u64 + 1));
            let now = clock.elapsed().as_secs_f64();
            let world = make_world().map_err(|source| NetPlayError::Scene {
                path: options.scene.clone(),
                source,
            })?;
            let endpoint = Endpoint::join(endpoint_config(Some(secret), Some(key_hash)), to_host, now)
                .map_err(|e| NetPlayError::Bad(e.to_string()))?;
            let mut guest = Peer::guest(world, endpoint, config)?;
            guest.set_scene_name(&name);
            seats.push(Seat::new(guest, &bots, bot_seed));
            sockets.push(bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?);
        }
        if options.open {
            tracing::warn!(port, bots = options.bots, scene = %name, "hosting an open game: anyone who reaches port {port} can join with `tumble join ADDR:{port}` (one player per IP address), and nothing is authenticated: a machine on the way can read and change the game (a join code prevents both)");
        } else {
            tracing::info!(port, bots = options.bots, playing = options.playing, scene = %name, "hosting: players join with `tumble join {join_code}`");
        }
        let role = if options.open {
            format!("open host on port {port} · unauthenticated: anyone on the way can read and change the game")
        } else {
            format!("host on port {port} · join code {join_code}")
        };
        let mut play = NetPlay::new(seats, Transport::Udp { sockets, clock }, name, role);
        play.join_code = (!options.open).then_some(join_code);
        play.port_mapping = mapped;
        play.port_mapping_error = port_mapping_error;
        play.kept_mapping = kept_mapping;
        Ok(play)
    }

    /// A guest of `options.host`: the handshake runs here (blocking, at most the endpoint's 5 s timeout), so a full
    /// host or no answer is an error before any window opens.
    pub fn join(options: &JoinOptions) -> Result<NetPlay, NetPlayError> {
        let (name, make_world) = load(&options.scene)?;
        let host = options.host.addr;
        let any = if host.is_ipv6() {
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        };
        let mut socket = bind(any)?;
        let clock = Instant::now();
        let open = options.host.secret.is_open();
        let config = endpoint_config((!open).then_some(options.host.secret), options.host.host_key);
        let mut endpoint = Endpoint::join(config, host, 0.0).map_err(|e| NetPlayError::Bad(e.to_string()))?;
        tracing::info!(%host, "joining");
        handshake(&mut socket, &mut endpoint, clock).map_err(|e| match e {
            HandshakeError::Refused(ConnectError::WrongSecret) if open => NetPlayError::NeedsCode { addr: host },
            HandshakeError::Refused(ConnectError::TimedOut) if port_mapping::is_private(host.ip()) => {
                NetPlayError::PrivateNoAnswer { addr: host }
            }
            HandshakeError::Refused(reason) => NetPlayError::Join { addr: host, reason },
            HandshakeError::Io(e) => NetPlayError::Io(e),
        })?;
        tracing::info!(%host, "connected; waiting for the host's welcome");
        let world = make_world().map_err(|source| NetPlayError::Scene {
            path: options.scene.clone(),
            source,
        })?;
        let config = PeerConfig::fitting(options.kbps_budget, world.body_count());
        let mut guest = Peer::guest(world, endpoint, config)?;
        guest.set_scene_name(&name);
        if let Some(v) = options.pretend_version {
            guest.speak_protocol_version(v);
        }
        let mut play = NetPlay::new(
            vec![Seat::new(guest, &[], 0)],
            Transport::Udp {
                sockets: vec![socket],
                clock,
            },
            name,
            format!("guest of {host}"),
        );
        play.await_welcome(host)?;
        Ok(play)
    }

    /// A guest's hello until the host welcomes it — or refuses it, naming its own version or scene, which is an
    /// error here, before any window or headset session opens. At most [`WELCOME_WAIT_S`].
    fn await_welcome(&mut self, host: SocketAddr) -> Result<(), NetPlayError> {
        let since = self.now_s();
        while !self.seats[0].peer.is_welcomed() {
            if self.now_s() - since > WELCOME_WAIT_S {
                if let Some(e) = self.seats[0].peer.scene_mismatch_error() {
                    return Err(e.into());
                }
                return Err(NetPlayError::Bad(format!(
                    "could not join {host}: connected, but no welcome came within {WELCOME_WAIT_S} s"
                )));
            }
            let now = self.now_s();
            self.seats[0].peer.send(now)?;
            self.poll()?;
            if let Transport::Udp { sockets, .. } = &mut self.transport {
                sockets[0].wait(HANDSHAKE_POLL)?;
            }
        }
        tracing::info!(%host, player = self.seats[0].peer.player(), "welcomed");
        Ok(())
    }

    /// `players` peers on one simulated network: the host (seat 0) and guests joining at once.
    pub fn local(options: &LocalOptions) -> Result<NetPlay, NetPlayError> {
        if !(1..=MAX_PLAYERS).contains(&options.players) {
            return Err(NetPlayError::Bad(format!(
                "--players must be 1 to {MAX_PLAYERS} (got {})",
                options.players
            )));
        }
        if options.bots.len() > options.players {
            return Err(NetPlayError::Bad(format!(
                "--bots names {} seats for {} players",
                options.bots.len(),
                options.players
            )));
        }
        if let Some(bad) = options.bots.iter().find(|b| !DRIVER_NAMES.contains(&b.as_str())) {
            return Err(NetPlayError::Bad(format!(
                "unknown bot '{bad}': one of {}",
                DRIVER_NAMES.join(", ")
            )));
        }
        let (name, make_world) = load(&options.scene)?;
        let world = |_| {
            make_world().map_err(|source| NetPlayError::Scene {
                path: options.scene.clone(),
                source,
            })
        };
        let config = PeerConfig::fitting(options.kbps_budget, world(0)?.body_count());
        let mut seats = Vec::with_capacity(options.players);
        let (mut secret, mut key_hash) = (JoinSecret::OPEN, None);
        for i in 0..options.players {
            let bad = |e: tumble_net::endpoint::EndpointError| NetPlayError::Bad(e.to_string());
            let peer = if i == 0 {
                let endpoint = Endpoint::host(endpoint_config(None, None), 0.0).map_err(bad)?;
                secret = endpoint.join_secret();
                key_hash = Some(endpoint.key_hash());
                let mut host = Peer::host(world(i)?, endpoint, config, true)?;
                host.set_scene_name(&name);
                host
            } else {
                let endpoint =
                    Endpoint::join(endpoint_config(Some(secret), key_hash), memory_address(0), 0.0).map_err(bad)?;
                let mut guest = Peer::guest(world(i)?, endpoint, config)?;
                guest.set_scene_name(&name);
                guest
            };
            seats.push(Seat::new(peer, &options.bots, options.seed.wrapping_add(i as u64)));
        }
        let net = MemoryNetwork::new(options.link, options.seed);
        Ok(NetPlay::new(
            seats,
            Transport::Memory { net },
            name,
            format!("local, {} players", options.players),
        ))
    }

    fn new(seats: Vec<Seat>, transport: Transport, scene_name: String, role: String) -> NetPlay {
        let mut play = NetPlay {
            seats,
            transport,
            controlled: 0,
            step: 0,
            fixed: FixedStep::default(),
            last_input: AvatarInput::default(),
            poses: PoseBuffer::default(),
            scene_name,
            role,
            join_code: None,
            port_mapping: None,
            port_mapping_error: None,
            kept_mapping: None,
            step_ms: 0.0,
            bots_active: true,
            events: Vec::with_capacity(MAX_KEPT_EVENTS),
        };
        play.reset_poses();
        play
    }

    /// The UDP port seat 0 (the host) listens on; `None` on the memory transport.
    pub fn host_port(&self) -> Option<u16> {
        match &self.transport {
            Transport::Udp { sockets, .. } => sockets.first().map(|s| s.local_addr().port()),
            Transport::Memory { .. } => None,
        }
    }

    /// The seat the hands drive and the view shows.
    pub fn controlled(&self) -> usize {
        self.controlled
    }

    /// The peer on screen.
    pub fn shown(&self) -> &Peer {
        &self.seats[self.controlled].peer
    }

    /// The peer the hands drive, to change (VR forgets hand motion across a recentring).
    pub fn shown_mut(&mut self) -> &mut Peer {
        &mut self.seats[self.controlled].peer
    }

    /// The seat of this process playing `player` (1–4), once the host has welcomed it.
    pub fn seat_of_player(&self, player: u8) -> Option<usize> {
        self.seats.iter().position(|s| s.peer.player() == player && player != 0)
    }

    /// Hands the desktop hands to seat `seat` (its bot, if any, stops; the one left gets its bot back) and shows its
    /// world. Out of range: nothing changes. Returns whether it changed.
    pub fn take_over(&mut self, seat: usize) -> bool {
        if seat >= self.seats.len() || seat == self.controlled {
            return false;
        }
        self.controlled = seat;
        self.last_input = AvatarInput::default();
        self.reset_poses();
        true
    }

    fn reset_poses(&mut self) {
        let peer = &self.seats[self.controlled].peer;
        let n = peer.world.body_count();
        self.poses.fill_with(n, |i| drawn(peer, i));
    }

    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// The transport's clock now (s): the real clock on UDP, steps × 1/90 s in memory.
    fn now_s(&self) -> f64 {
        match &self.transport {
            Transport::Udp { clock, .. } => clock.elapsed().as_secs_f64(),
            Transport::Memory { .. } => self.step as f64 * STEP_S,
        }
    }

    /// One frame of `frame_s` with the desktop hands' input: the steps due, the hands blended across them.
    pub fn advance(&mut self, frame_s: f64, input: &AvatarInput) -> Result<u32, NetPlayError> {
        let steps = self.fixed.advance(frame_s);
        if steps == 0 {
            // Keep the sockets drained between steps, so nothing waits for the next step in the kernel.
            self.poll()?;
            return Ok(0);
        }
        let start = Instant::now();
        for k in 1..=steps {
            let blended = blend_input(&self.last_input, input, k as f32 / steps as f32);
            self.step_once(Some(&blended))?;
        }
        self.last_input = *input;
        self.step_ms = start.elapsed().as_secs_f32() * 1000.0 / steps as f32;
        Ok(steps)
    }

    /// Where the frame lies between the last two steps.
    pub fn alpha(&self) -> f32 {
        self.fixed.alpha()
    }

    /// One fixed step of every seat; `input` drives the controlled seat (`None`: every seat plays by its bot).
    pub fn step_once(&mut self, input: Option<&AvatarInput>) -> Result<(), NetPlayError> {
        let now = self.now_s();
        let step = self.step;
        let active = self.bots_active;
        for (i, seat) in self.seats.iter_mut().enumerate() {
            let hands = match input {
                Some(input) if i == self.controlled => *input,
                _ => seat.bot_input(step, active)?,
            };
            seat.peer.play(&hands)?;
            if i == self.controlled {
                for &event in seat.peer.interaction.events() {
                    if self.events.len() == MAX_KEPT_EVENTS {
                        self.events.remove(0);
                    }
                    self.events.push(event);
                }
            }
        }
        for seat in &mut self.seats {
            seat.peer.quantize()?;
            seat.peer.send(now)?;
        }
        self.deliver(now)?;
        for seat in &mut self.seats {
            seat.peer.simulate()?;
            seat.graphs.after_step(&seat.peer);
        }
        self.step += 1;
        let peer = &self.seats[self.controlled].peer;
        self.poses.record_with(peer.world.body_count(), |i| drawn(peer, i));
        Ok(())
    }

    /// Moves datagrams: what was sent leaves, what arrived is read.
    fn deliver(&mut self, now: f64) -> Result<(), NetPlayError> {
        match &mut self.transport {
            Transport::Memory { net } => {
                let tick = STEP_S / SUBTICKS_PER_STEP as f64;
                for k in 1..=SUBTICKS_PER_STEP {
                    let t = now + k as f64 * tick;
                    {
                        let mut nodes: Vec<(SocketAddr, &mut Endpoint)> = self
                            .seats
                            .iter_mut()
                            .enumerate()
                            .map(|(i, s)| (memory_address(i), s.peer.endpoint_mut()))
                            .collect();
                        net.pump(t, &mut nodes);
                        for (_, e) in nodes.iter_mut() {
                            e.update(t);
                        }
                        net.pump(t, &mut nodes);
                    }
                    for seat in &mut self.seats {
                        seat.peer.receive(t)?;
                    }
                }
                Ok(())
            }
            Transport::Udp { .. } => self.poll(),
        }
    }

    /// UDP: sends what is queued and reads what has arrived, on every socket.
    pub(crate) fn poll(&mut self) -> Result<(), NetPlayError> {
        let Transport::Udp { sockets, clock } = &mut self.transport else {
            return Ok(());
        };
        let now = clock.elapsed().as_secs_f64();
        for (seat, socket) in self.seats.iter_mut().zip(sockets.iter_mut()) {
            let endpoint = seat.peer.endpoint_mut();
            socket.flush(now, endpoint, None);
            socket.receive_into(now, endpoint)?;
            endpoint.update(now);
            socket.flush(now, endpoint, None);
            seat.peer.receive(now)?;
        }
        Ok(())
    }

    /// A dedicated host's loop (or a headless guest's): a step every 1/90 s of the real clock, waiting on the socket
    /// in between, until `seconds` have passed, Ctrl-C, or (a guest) the host is gone, which is the error
    /// [`NetPlayError::HostGone`]. Logs the connections every 5 s. The goodbye goes out when the `NetPlay` is dropped.
    pub fn run_headless(&mut self, seconds: Option<f64>) -> Result<(), NetPlayError> {
        let started = Instant::now();
        loop {
            let due = self.step as f64 * STEP_S;
            if seconds.is_some_and(|s| due >= s) || crate::quit::requested() {
                return Ok(());
            }
            if let Some((how, _)) = self.host_gone() {
                return Err(NetPlayError::HostGone(how));
            }
            let now = started.elapsed().as_secs_f64();
            if now < due {
                if let Transport::Udp { sockets, .. } = &mut self.transport {
                    sockets[0].wait(Duration::from_secs_f64((due - now).min(0.001)))?;
                }
                self.poll()?;
                continue;
            }
            self.step_once(None)?;
            if self.step.is_multiple_of(5 * 90) {
                self.log_status();
            }
        }
    }

    /// Steps as fast as they run (the memory transport's clock is the steps): `seconds` with the bots playing, then
    /// `settle_s` with their hands still.
    pub fn run_simulated(&mut self, seconds: f64, settle_s: f64) -> Result<(), NetPlayError> {
        for (s, active) in [(seconds, true), (settle_s, false)] {
            self.bots_active = active;
            for _ in 0..(s / STEP_S).round() as u64 {
                self.step_once(None)?;
            }
        }
        self.bots_active = true;
        Ok(())
    }

    /// Moves the controlled seat's grabs and releases since the last call into `out` (cleared first), oldest first.
    pub fn take_events(&mut self, out: &mut Vec<InteractionEvent>) {
        out.clear();
        out.extend_from_slice(&self.events);
        self.events.clear();
    }

    /// The shown seat's host is gone (a guest whose host left or vanished): how, and when it learnt it.
    pub fn host_gone(&self) -> Option<(HostGone, f64)> {
        self.shown().host_gone()
    }

    /// What a player is told when the game has ended under it, for the overlay (and the VR notice); `None` while
    /// it goes on.
    pub fn notice(&self) -> Option<String> {
        let (how, _) = self.host_gone()?;
        Some(format!(
            "{}: nothing you do reaches the others now. The world stays as it was for you to look at; Esc quits.",
            capitalised(how.name())
        ))
    }

    /// Every seat of this process says goodbye, and the goodbyes leave now (the sockets are flushed; on the memory
    /// transport they go onto the simulated network). Done when the `NetPlay` is dropped: a window closed, Ctrl-C,
    /// `--seconds` reached, a VR session ending.
    pub fn leave(&mut self) {
        let now = self.now_s();
        for seat in &mut self.seats {
            seat.peer.leave(now);
        }
        match &mut self.transport {
            Transport::Udp { sockets, .. } => {
                for (seat, socket) in self.seats.iter_mut().zip(sockets.iter_mut()) {
                    socket.flush(now, seat.peer.endpoint_mut(), None);
                }
            }
            Transport::Memory { net } => {
                let mut nodes: Vec<(SocketAddr, &mut Endpoint)> = self
                    .seats
                    .iter_mut()
                    .enumerate()
                    .map(|(i, s)| (memory_address(i), s.peer.endpoint_mut()))
                    .collect();
                net.pump(now, &mut nodes);
            }
        }
    }

    /// Whether every seat's world holds the same quantized states (`None` with one seat: nothing to compare).
    pub fn worlds_identical(&self) -> Option<bool> {
        let (first, rest) = self.seats.split_first()?;
        if rest.is_empty() {
            return None;
        }
        Some(
            rest.iter()
                .all(|s| bit_identical(&first.peer.world, &s.peer.world).unwrap_or(false)),
        )
    }

    fn log_status(&self) {
        let host = &self.seats[0].peer;
        let [none, p1, p2, p3, p4] = host.table.counts();
        tracing::info!(
            step = self.step,
            guests = host.endpoint().peers().count(),
            cubes_by_authority = ?[none, p1, p2, p3, p4],
            refused = host.stats.rejected.total(),
            "host"
        );
    }

    /// What the overlay's stats panel shows, for the peer on screen.
    pub fn stats(&self) -> SimStats {
        let peer = self.shown();
        let report = peer.world.report();
        SimStats {
            steps: peer.step_count(),
            step_ms: self.step_ms,
            cubes: peer.world.body_count(),
            resting: report.resting_bodies,
            awake: report.awake_bodies,
            grabs: peer.stats.grabs,
            throws: peer.stats.throws,
        }
    }
}

impl Drop for NetPlay {
    fn drop(&mut self) {
        self.leave();
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

impl Seat {
    fn new(peer: Peer, bots: &[String], seed: u64) -> Seat {
        Seat {
            peer,
            bots: bots.to_vec(),
            driver: None,
            seed,
            graphs: NetGraphs::default(),
        }
    }

    /// This step's hands from the seat's bot; none (untracked) for an idle seat or before the welcome.
    fn bot_input(&mut self, step: u64, active: bool) -> Result<AvatarInput, NetPlayError> {
        let player = self.peer.player();
        let bot = usize::from(player)
            .checked_sub(1)
            .and_then(|i| self.bots.get(i))
            .map_or("idle", String::as_str);
        if bot == "idle" {
            return Ok(AvatarInput::default());
        }
        if self.driver.is_none() {
            let driver = make_driver(bot, player, self.seed).map_err(|e| NetPlayError::Bad(e.to_string()))?;
            self.driver = Some(driver);
        }
        Ok(self
            .driver
            .as_mut()
            .map_or_else(AvatarInput::default, |d| d.input(step, &self.peer, active)))
    }
}

/// Cube `i` where `peer` draws it (simulated pose plus what is left of its smoothing).
fn drawn(peer: &Peer, i: usize) -> (Vec3, Quat) {
    peer.drawn_pose(BodyId(i as u32))
        .map_or((Vec3::ZERO, Quat::IDENTITY), |p| (p.position, p.rotation))
}

enum HandshakeError {
    Refused(ConnectError),
    Io(SocketError),
}

/// Runs a guest's handshake to the end: connected, or the reason it failed (the host is full, no answer).
fn handshake(socket: &mut UdpTransport, endpoint: &mut Endpoint, clock: Instant) -> Result<(), HandshakeError> {
    loop {
        let now = clock.elapsed().as_secs_f64();
        socket.flush(now, endpoint, None);
        socket.receive_into(now, endpoint).map_err(HandshakeError::Io)?;
        endpoint.update(now);
        socket.flush(now, endpoint, None);
        while let Some(event) = endpoint.pop_event() {
            match event {
                // A guest's link exists from the start (`Peer::guest`): nothing is lost by taking this event here.
                EndpointEvent::Connected { .. } => return Ok(()),
                EndpointEvent::ConnectFailed { reason } => return Err(HandshakeError::Refused(reason)),
                _ => {}
            }
        }
        socket.wait(HANDSHAKE_POLL).map_err(HandshakeError::Io)?;
    }
}

/// The default per-connection budget of the play commands: the session's.
pub const PLAY_KBPS_BUDGET: u32 = DEFAULT_SESSION_KBPS_BUDGET;

/// Loads the scene once to check it, and returns a maker of fresh worlds of it.
pub fn world_maker(path: &Path) -> anyhow::Result<WorldMaker> {
    let scene = tumble_engine::scene::load_scene(path)?;
    scene.build_world(tumble_engine::physics::WorldConfig::default())?;
    Ok(Box::new(move || {
        Ok(scene.build_world(tumble_engine::physics::WorldConfig::default())?)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table64() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/table64.toml")
    }

    fn local(players: usize, bots: &[&str]) -> LocalOptions {
        LocalOptions {
            scene: table64(),
            players,
            bots: bots.iter().map(|s| s.to_string()).collect(),
            link: LinkConfig {
                latency_ms: 30.0,
                jitter_ms: 5.0,
                loss_pct: 5.0,
                ..LinkConfig::default()
            },
            seed: 3,
            kbps_budget: PLAY_KBPS_BUDGET,
        }
    }

    #[test]
    fn two_local_players_end_agreeing_through_packets_only() {
        let mut play = NetPlay::local(&local(2, &["idle", "thrower"])).unwrap();
        // The thrower plays for 4 s; on the way the two worlds must differ at some step (news takes a trip), or
        // agreeing at the end would show nothing.
        let mut differed = false;
        for _ in 0..4 * 90 {
            play.step_once(None).unwrap();
            differed |= play.worlds_identical() == Some(false);
        }
        let guest = &play.seats[1].peer;
        assert_eq!(guest.player(), 2, "the guest was welcomed as player 2");
        assert!(guest.stats.grabs > 0, "{:?}", guest.stats);
        assert!(differed, "the worlds never differed: the test shows nothing");
        play.run_simulated(0.0, 8.0).unwrap();
        assert_eq!(play.worlds_identical(), Some(true));
        let (host, guest) = (&play.seats[0].peer, &play.seats[1].peer);
        assert_eq!(host.table.counts(), guest.table.counts());
        // Under loss the host refuses stale claims (older than what it has); nothing honest is refused otherwise.
        use crate::authority::rules::RejectReason;
        let r = host.stats.rejected;
        assert_eq!(r.total(), r.0[RejectReason::Stale as usize], "{r:?}");
    }

    #[test]
    fn the_desktop_hands_take_over_a_guest_and_the_host_sees_its_colour() {
        let mut play = NetPlay::local(&local(3, &[])).unwrap();
        assert!(!play.take_over(3), "no fourth seat");
        assert_eq!(play.seat_of_player(2), None, "not welcomed yet");
        for _ in 0..30 {
            play.step_once(None).unwrap();
        }
        assert_eq!(play.seat_of_player(1), Some(0));
        let seat = play.seat_of_player(2).expect("player 2 welcomed");
        assert!(play.take_over(seat));
        assert_eq!(play.controlled(), seat);
        // The lone cube at (-2, 0.5, 0), grabbed from above by the hands now driving player 2.
        let mut hands = AvatarInput::default();
        hands.hands[1] = crate::avatar::HandInput {
            tracked: true,
            pose: crate::avatar::Pose::new(Vec3::new(-2.0, 1.05, 0.0), Quat::IDENTITY),
            grip: 1.0,
            ..Default::default()
        };
        for _ in 0..90 {
            play.step_once(Some(&hands)).unwrap();
        }
        let guest = play.shown();
        assert_eq!(guest.player(), 2);
        let held: Vec<_> = guest.interaction.held_cubes().collect();
        assert_eq!(held.len(), 1, "player 2 holds the cube");
        let cube = held[0].0;
        for seat in &play.seats {
            let t = &seat.peer.table;
            assert_eq!(
                (t.stamp(cube).authority, t.holder(cube)),
                (2, 2),
                "player {}",
                seat.peer.player()
            );
            assert_eq!(
                crate::draw::table_tint(Some(t), cube),
                (crate::draw::authority_tint(2, true), true)
            );
        }
        // The host draws player 2's head and the hand holding the cube, in player 2's colour, where the packets
        // put them (its own hands are not in the remote set).
        let host = &play.seats[0].peer;
        let mut boxes = Vec::new();
        crate::draw::push_remote_avatar_boxes(host.remote_avatars(), host.player(), &mut boxes);
        let red = tumble_engine::render::PLAYER_RGB[1];
        let theirs: Vec<_> = boxes.iter().filter(|b| b.colour == red).collect();
        assert_eq!(theirs.len(), 2, "player 2's head and one tracked hand: {boxes:?}");
        let hand = theirs
            .iter()
            .find(|b| b.half_extents == crate::draw::HAND_HALF_EXTENTS_M)
            .expect("player 2's hand drawn");
        assert!(
            hand.position.distance(Vec3::new(-2.0, 1.05, 0.0)) < 0.01,
            "player 2's hand drawn at {}",
            hand.position
        );
        let blue = tumble_engine::render::PLAYER_RGB[0];
        assert!(
            boxes.iter().all(|b| b.colour != blue),
            "the host's own avatar is not drawn as remote"
        );
        // Back to player 1; player 2, with no bot, stands idle.
        assert!(play.take_over(0));
        assert_eq!(play.shown().player(), 1);
    }

    /// What a host and a guest are told when the router mapped nothing: the host, every method's answer and what to
    /// forward; a guest whose join to a private address got no answer, why and what the host must do.
    #[test]
    fn without_a_port_mapping_both_ends_are_told_what_to_forward() {
        use tumble_net::port_mapping::{MappingError, Method, MethodError};
        let e = MappingError {
            attempts: vec![
                (Method::Pcp, MethodError::NoAnswer(Duration::from_millis(750))),
                (Method::NatPmp, MethodError::Refused("not authorized (code 2)".into())),
                (Method::UpnpIgd, MethodError::NoAnswer(Duration::from_secs(2))),
            ],
        };
        let advice = no_mapping_advice(&e, "192.168.77.2".parse().unwrap(), 40_000);
        assert!(
            advice.starts_with(
                "no port mapping (PCP: no answer in 0.75 s, NAT-PMP: refused: not authorized (code 2), UPnP: no \
                 answer in 2.00 s): forward UDP port 40000 on your router to 192.168.77.2:40000 and pass \
                 --public-addr PUBLIC:40000"
            ),
            "{advice}"
        );
        let guest = NetPlayError::PrivateNoAnswer {
            addr: "10.0.0.2:40000".parse().unwrap(),
        }
        .to_string();
        assert!(
            guest.starts_with("could not join 10.0.0.2:40000: no answer from 10.0.0.2:40000, a private address"),
            "{guest}"
        );
        assert!(guest.contains("the host must forward UDP port 40000"), "{guest}");
        assert!(guest.contains("--public-addr PUBLIC:40000"), "{guest}");
    }

    /// A host with two bots over UDP on 127.0.0.1, in a thread of its own (it must answer while a guest's
    /// handshake blocks): a third guest is welcomed as player 4, a fourth is told the host is full.
    #[test]
    fn over_udp_a_guest_joins_the_host_and_its_bots_and_the_next_is_refused() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc};
        let (port_tx, port_rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let host_stop = stop.clone();
        let host = std::thread::spawn(move || {
            let options = HostOptions {
                scene: table64(),
                port: 0,
                bots: 2,
                playing: true,
                kbps_budget: PLAY_KBPS_BUDGET,
                open: false,
                public_addr: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
                port_mapping: false,
                port_mapping_lifetime: PORT_MAPPING_LIFETIME,
            };
            let mut play = NetPlay::host(&options).unwrap();
            let mut told = false;
            let mut last = Instant::now();
            while !host_stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                play.advance((now - last).as_secs_f64(), &AvatarInput::default())
                    .unwrap();
                last = now;
                // The port goes out once both bots are in, so the guests below come third and fourth.
                if !told && play.seats[0].peer.endpoint().peers().count() == 2 {
                    port_tx
                        .send((play.host_port().unwrap(), play.join_code.clone().unwrap()))
                        .unwrap();
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            play.seats.iter().map(|s| s.peer.player()).collect::<Vec<_>>()
        });
        let (port, code) = port_rx.recv_timeout(Duration::from_secs(20)).expect("the bots joined");
        // Without the code, by address: refused, and told why.
        let by_address = JoinOptions {
            scene: table64(),
            host: join_code::parse_target(&format!("127.0.0.1:{port}")).unwrap(),
            kbps_budget: PLAY_KBPS_BUDGET,
            pretend_version: None,
        };
        let refused = NetPlay::join(&by_address).err().expect("no code, no entry");
        assert!(matches!(refused, NetPlayError::NeedsCode { .. }), "{refused}");
        let join = JoinOptions {
            host: join_code::parse_target(&code).unwrap(),
            ..by_address
        };
        assert_eq!(join.host.addr, SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        let mut guest = NetPlay::join(&join).unwrap();
        let mut last = Instant::now();
        for _ in 0..2000 {
            let now = Instant::now();
            guest
                .advance((now - last).as_secs_f64(), &AvatarInput::default())
                .unwrap();
            last = now;
            if guest.shown().player() != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(guest.shown().player(), 4, "welcomed as the fourth player");
        let refused = NetPlay::join(&join).err().expect("a fifth player is refused");
        assert!(
            matches!(
                refused,
                NetPlayError::Join {
                    reason: ConnectError::Full,
                    ..
                }
            ),
            "{refused}"
        );
        assert_eq!(
            refused.to_string(),
            format!("could not join 127.0.0.1:{port}: the host is full")
        );
        stop.store(true, Ordering::Relaxed);
        let mut players = host.join().unwrap();
        players.sort_unstable();
        assert_eq!(players, vec![1, 2, 3], "the host and its two bots");
    }

    #[test]
    fn bad_local_options_are_refused() {
        let e = NetPlay::local(&local(5, &[])).err().unwrap().to_string();
        assert!(e.contains("--players must be 1 to 4 (got 5)"), "{e}");
        let e = NetPlay::local(&local(2, &["idle", "juggler"]))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown bot 'juggler'"), "{e}");
        let e = NetPlay::local(&local(1, &["idle", "idle"])).err().unwrap().to_string();
        assert!(e.contains("names 2 seats for 1 players"), "{e}");
    }
}
