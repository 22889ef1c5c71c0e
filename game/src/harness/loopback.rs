//! The loopback harness behind `tumble loopback`: an authority world and a non-authority world in one process,
//! joined by two `tumble-net` endpoints (host = authority side, guest = non-authority side) through the link
//! simulator: in memory on a simulated clock (deterministic, faster than real time), or over two UDP sockets on
//! 127.0.0.1 on the real clock (paced at the step rate, so a run takes its simulated seconds). Each fixed step both worlds are quantized, the authority
//! side sends one state packet built by [`Sender`] (90 packets a second, as many as steps), the guest applies what
//! arrives through [`Receiver`], and the sender learns what arrived from the endpoint's `Acked` events. What the
//! run cost and how well the two sides agree comes back as a [`LoopbackReport`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::{json, Value};
use tumble_engine::physics::{BodyId, World};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::CONNECTED_HEADER_BYTES;
use tumble_net::{
    Endpoint, EndpointConfig, EndpointEvent, LinkConfig, LinkSim, PeerId, UdpTransport, MAX_PACKET_BYTES,
};

use crate::harness::bandwidth::{all_cubes_bits, RecordedPacket, RecordedUpdate, Recording};
use crate::harness::thrower::Thrower;
use crate::sync::codec::delta::Encoding;
use crate::sync::codec::predict::STEP_HZ;
use crate::sync::codec::quantize::quantize_world;
use crate::sync::codec::quantize::{quantize_body_state, quantize_state};
use crate::sync::codec::reject_notice::{read_reject_notice, write_reject_notice, RejectNotices, REJECT_NOTICE_BYTES};
use crate::sync::codec::state_packet::PacketCoding;
use crate::sync::link::priority::packet_budget_bytes;
use crate::sync::link::receiver::Receiver;
use crate::sync::link::sender::Sender;

/// IP (20) + UDP (8) header bytes every datagram carries on a real wire, counted in the reported rates.
pub const IP_UDP_HEADER_BYTES: usize = 28;
/// Seconds at the end of a run with no throws, so the world can settle and the two sides converge.
pub const SETTLE_S: f64 = 10.0;
/// Default bandwidth budget for the authority → non-authority direction (kbps): a quarter of the reference's 256.
pub const DEFAULT_KBPS_BUDGET: u32 = 64;
/// Clock ticks per physics step for the network (deliveries, acks): about 0.9 ms resolution at 90 Hz.
const SUBTICKS_PER_STEP: u64 = 12;
/// How long the handshake may take on the simulated clock before the run is abandoned (s).
const HANDSHAKE_LIMIT_S: f64 = 30.0;
/// A cube counts as in free flight once it has touched nothing for this many steps: longer than a baseline's age
/// at a 100 ms round trip, so the whole prediction window was contact-free.
const FREE_FLIGHT_STEPS: u64 = 20;
/// Longest the UDP loop sleeps between looks at the sockets (s): bounds how late a datagram is read.
const MAX_UDP_WAIT_S: f64 = 0.001;

/// Where the datagrams travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkKind {
    /// In-process, simulated clock: deterministic from the seed.
    #[default]
    Memory,
    /// Two UDP sockets on 127.0.0.1, real clock, the link simulator in front of each side's sends.
    Udp,
}

/// What one run does (the link flags mean what they mean for `net-soak`: one-way, per direction).
#[derive(Debug, Clone)]
pub struct LoopbackConfig {
    pub seconds: f64,
    pub latency_ms: f64,
    pub jitter_ms: f64,
    pub loss_pct: f64,
    pub dup_pct: f64,
    pub kbps_budget: u32,
    /// Seconds between throws; `None`: no thrower.
    pub throw_every_s: Option<f64>,
    pub seed: u64,
    pub link: LinkKind,
    /// How state packets are coded (both sides alike).
    pub coding: PacketCoding,
    /// Damage every n-th state packet before it is sent (cut to half its length): the receiver must refuse it
    /// and tell the sender, which must recover. For tests.
    pub damage_every_n_packets: Option<u64>,
}

impl Default for LoopbackConfig {
    fn default() -> Self {
        Self {
            seconds: 10.0,
            latency_ms: 0.0,
            jitter_ms: 0.0,
            loss_pct: 0.0,
            dup_pct: 0.0,
            kbps_budget: DEFAULT_KBPS_BUDGET,
            throw_every_s: None,
            seed: 1,
            link: LinkKind::Memory,
            coding: PacketCoding::default(),
            damage_every_n_packets: None,
        }
    }
}

/// What a run measured. Rates count the authority → non-authority direction only, every datagram on the wire
/// (state packets and anything else the host sends) with its IP/UDP header.
#[derive(Debug, Clone)]
pub struct LoopbackReport {
    pub steps: u64,
    pub kbps_mean: f64,
    /// 95th percentile of the per-second rates (whole seconds of the run).
    pub kbps_p95: f64,
    /// State packet body bits (transport and IP headers excluded) per cube update written.
    pub bits_per_cube_update: f64,
    pub updates_by_encoding: [u64; 5],
    /// Updates of awake cubes that touched nothing for 20 steps (`FREE_FLIGHT_STEPS`), per encoding.
    pub free_flight_updates_by_encoding: [u64; 5],
    pub packets_sent: u64,
    /// State packets the host's endpoint judged lost.
    pub packets_lost: u64,
    /// State packets the receiver refused as malformed.
    pub packets_rejected: u64,
    pub throws: u64,
    pub max_divergence_m_at_end: f64,
    pub remote_rest_jitter_m: f64,
    /// From the last throw (or the start, with none) until the two sides became bit-identical and stayed so.
    pub seconds_to_converge: Option<f64>,
    pub bit_identical_at_end: bool,
}

impl LoopbackReport {
    pub fn to_json(&self) -> Value {
        let by_encoding = |counts: &[u64; 5]| {
            let mut map = serde_json::Map::new();
            for (e, &n) in Encoding::ALL.iter().zip(counts) {
                map.insert(format!("{e:?}"), json!(n));
            }
            Value::Object(map)
        };
        json!({
            "steps": self.steps,
            "kbps_mean": self.kbps_mean,
            "kbps_p95": self.kbps_p95,
            "bits_per_cube_update": self.bits_per_cube_update,
            "updates_by_encoding": by_encoding(&self.updates_by_encoding),
            "free_flight_updates_by_encoding": by_encoding(&self.free_flight_updates_by_encoding),
            "packets_sent": self.packets_sent,
            "packets_lost": self.packets_lost,
            "packets_rejected": self.packets_rejected,
            "throws": self.throws,
            "max_divergence_m_at_end": self.max_divergence_m_at_end,
            "remote_rest_jitter_m": self.remote_rest_jitter_m,
            "seconds_to_converge": self.seconds_to_converge,
            "bit_identical_at_end": self.bit_identical_at_end,
        })
    }
}

/// What carries the datagrams between the two endpoints.
enum LinkIo {
    Memory(MemoryNetwork),
    Udp(Box<UdpIo>),
}

struct UdpIo {
    host_socket: UdpTransport,
    guest_socket: UdpTransport,
    host_link: LinkSim,
    guest_link: LinkSim,
    start: Instant,
}

/// The two endpoints and the network between them.
struct Link {
    io: LinkIo,
    host: Endpoint,
    guest: Endpoint,
    host_addr: SocketAddr,
    guest_addr: SocketAddr,
}

impl Link {
    /// Deliveries first, then timers, then the new datagrams onto the links, all at the same `now_s` (as
    /// `net-soak` does: a zero-latency link then delivers within the tick).
    /// Over UDP, first waits for the real clock to reach `now_s`, and works at the real time then; returns the
    /// time used.
    fn tick(&mut self, now_s: f64) -> Result<f64> {
        match &mut self.io {
            LinkIo::Memory(net) => {
                net.pump(
                    now_s,
                    &mut [(self.host_addr, &mut self.host), (self.guest_addr, &mut self.guest)],
                );
                self.host.update(now_s);
                self.guest.update(now_s);
                net.pump(
                    now_s,
                    &mut [(self.host_addr, &mut self.host), (self.guest_addr, &mut self.guest)],
                );
                Ok(now_s)
            }
            LinkIo::Udp(udp) => {
                loop {
                    let now = udp.start.elapsed().as_secs_f64();
                    if now >= now_s {
                        break;
                    }
                    udp.host_socket
                        .wait(Duration::from_secs_f64((now_s - now).min(MAX_UDP_WAIT_S)))?;
                }
                let now = udp.start.elapsed().as_secs_f64();
                udp.host_socket.receive_into(now, &mut self.host)?;
                udp.guest_socket.receive_into(now, &mut self.guest)?;
                self.host.update(now);
                self.guest.update(now);
                udp.host_socket.flush(now, &mut self.host, Some(&mut udp.host_link))?;
                udp.guest_socket
                    .flush(now, &mut self.guest, Some(&mut udp.guest_link))?;
                Ok(now)
            }
        }
    }

    /// The time sends are stamped with: `scheduled_s` in memory, the real clock over UDP.
    fn now(&self, scheduled_s: f64) -> f64 {
        match &self.io {
            LinkIo::Memory(_) => scheduled_s,
            LinkIo::Udp(udp) => udp.start.elapsed().as_secs_f64(),
        }
    }

    /// Host's wire bytes so far (datagrams plus IP/UDP headers) to the guest.
    fn host_wire_bytes(&self) -> u64 {
        self.host
            .stats(PeerId(0))
            .map_or(0, |s| s.bytes_sent + s.packets_sent * IP_UDP_HEADER_BYTES as u64)
    }
}

/// Runs `config` on two copies of one scene: `authority` (the host's) and `remote` (the guest's), built alike.
pub fn run_loopback(config: &LoopbackConfig, authority: World, remote: World) -> Result<LoopbackReport> {
    run_loopback_recorded(config, authority, remote, None)
}

/// [`run_loopback`], also recording what each packet carried into `recording` (for [`crate::harness::bandwidth`]).
pub fn run_loopback_recorded(
    config: &LoopbackConfig,
    authority: World,
    remote: World,
    mut recording: Option<&mut Recording>,
) -> Result<LoopbackReport> {
    let mut session = LoopbackSession::new(config, authority, remote)?;
    while !session.is_finished() {
        session.step(recording.as_deref_mut())?;
    }
    session.report()
}

/// A loopback run one step at a time, so a view can draw both worlds as it goes; [`run_loopback`] drives one to
/// its end.
pub struct LoopbackSession {
    config: LoopbackConfig,
    authority: World,
    remote: World,
    link: Link,
    /// Clock ticks the handshake took; the run's clock starts after them.
    handshake_ticks: u64,
    steps: u64,
    step: u64,
    thrower: Option<Thrower>,
    sender: Sender,
    receiver: Receiver,
    reject_notices: RejectNotices,
    buf: Vec<u8>,
    /// Transport sequence → the sender's packet sequence (they advance together, but keep-alives could take
    /// transport sequences, so the map makes no assumption). Indexed by sequence: no hash map.
    sender_sequence: Vec<Option<u16>>,
    next_sender_sequence: u16,
    body_bytes: u64,
    packets_sent: u64,
    packets_lost: u64,
    throws: u64,
    last_throw_step: u64,
    last_contact: Vec<u64>,
    free_flight: [u64; 5],
    second_rates: Vec<f64>,
    bytes_at_second: u64,
    wire_bytes_at_start: u64,
    prev_remote: Vec<Option<(glam::Vec3, bool)>>,
    rest_jitter_m: f64,
    identical_since: Option<u64>,
}

/// Length of a clock tick (s).
const TICK_S: f64 = 1.0 / (STEP_HZ as f64 * SUBTICKS_PER_STEP as f64);

impl LoopbackSession {
    /// Checks the configuration, joins the two endpoints (the handshake runs here) and gets both sides ready.
    pub fn new(config: &LoopbackConfig, authority: World, mut remote: World) -> Result<Self> {
        let cubes = authority.body_count();
        if remote.body_count() != cubes {
            bail!("the two worlds differ in body count");
        }
        if !(config.seconds.is_finite() && config.seconds > 0.0) {
            bail!("--seconds must be positive");
        }
        let steps = (config.seconds * STEP_HZ as f64).round() as u64;
        let body_budget = packet_budget_bytes(
            config.kbps_budget,
            STEP_HZ as u32,
            (IP_UDP_HEADER_BYTES + CONNECTED_HEADER_BYTES) as u32,
            (MAX_PACKET_BYTES + IP_UDP_HEADER_BYTES) as u32,
        ) as usize;
        if body_budget == 0 {
            bail!(
                "--kbps-budget {} leaves no room for state at {STEP_HZ} packets a second",
                config.kbps_budget
            );
        }
        let thrower = match config.throw_every_s {
            Some(t) if t.is_finite() && t > 0.0 => {
                let last = steps.saturating_sub((SETTLE_S * STEP_HZ as f64) as u64);
                Some(Thrower::new((t * STEP_HZ as f64).round() as u64, last, config.seed))
            }
            Some(_) => bail!("--throw-every-s must be positive"),
            None => None,
        };
        let (link, handshake_ticks) = connect(config)?;

        let mut sender = Sender::new(cubes);
        let mut receiver = Receiver::new(cubes);
        sender.coding = config.coding;
        receiver.coding = config.coding;
        Receiver::follow_authority_rest(&mut remote)?;
        let bytes_at_second = link.host_wire_bytes();
        Ok(Self {
            config: config.clone(),
            authority,
            remote,
            link,
            handshake_ticks,
            steps,
            step: 0,
            thrower,
            sender,
            receiver,
            reject_notices: RejectNotices::default(),
            buf: vec![0u8; body_budget],
            sender_sequence: vec![None; usize::from(u16::MAX) + 1],
            next_sender_sequence: 0,
            body_bytes: 0,
            packets_sent: 0,
            packets_lost: 0,
            throws: 0,
            last_throw_step: 0,
            last_contact: vec![0; cubes],
            free_flight: [0; 5],
            second_rates: Vec::with_capacity(config.seconds as usize + 1),
            bytes_at_second,
            wire_bytes_at_start: bytes_at_second,
            prev_remote: vec![None; cubes],
            rest_jitter_m: 0.0,
            identical_since: None,
        })
    }

    /// The authority side's world (the host's).
    pub fn authority(&self) -> &World {
        &self.authority
    }

    /// The non-authority side's world (the guest's).
    pub fn remote(&self) -> &World {
        &self.remote
    }

    /// Steps run so far, and in all.
    pub fn progress(&self) -> (u64, u64) {
        (self.step, self.steps)
    }

    pub fn is_finished(&self) -> bool {
        self.step >= self.steps
    }

    /// One fixed step of both sides: throw, quantize, send, deliver, step, measure.
    pub fn step(&mut self, recording: Option<&mut Recording>) -> Result<()> {
        let step = self.step;
        self.throw(step)?;
        quantize_world(&mut self.authority)?;
        quantize_world(&mut self.remote)?;
        self.send(step, recording)?;
        for k in 0..SUBTICKS_PER_STEP {
            let now = self.link.tick(link_time(self.handshake_ticks, step, k, TICK_S))?;
            self.guest_events(now)?;
            self.host_events()?;
        }
        let report = self.authority.step();
        for c in &report.contacts {
            for body in [Some(c.a), c.b].into_iter().flatten() {
                self.last_contact[body.index()] = step;
                self.sender.activity[body.index()].record_collision(c.approach_speed);
            }
        }
        self.remote.step();
        self.measure(step)?;
        self.step += 1;
        Ok(())
    }

    fn throw(&mut self, step: u64) -> Result<()> {
        if let Some(t) = self.thrower.as_mut() {
            if let Some(id) = t.maybe_throw(step, &mut self.authority)? {
                self.sender.activity[id.index()].record_interaction();
                // A throw is a change no predictor can know about, like a contact.
                self.last_contact[id.index()] = step;
                self.last_throw_step = step;
                self.throws += 1;
            }
        }
        Ok(())
    }

    /// Writes this step's state packet and hands it to the host's endpoint.
    fn send(&mut self, step: u64, recording: Option<&mut Recording>) -> Result<()> {
        let sequence = self.next_sender_sequence;
        self.next_sender_sequence = sequence.wrapping_add(1);
        let n = self
            .sender
            .write_packet(&self.authority, step, sequence, &mut self.buf)?;
        self.body_bytes += n as u64;
        let (sent, encodings) = self.sender.last_packet();
        for (&id, &e) in sent.iter().zip(encodings) {
            let awake = !self.authority.state(BodyId(id))?.at_rest;
            if awake && step >= self.last_contact[id as usize] + FREE_FLIGHT_STEPS {
                self.free_flight[e as usize] += 1;
            }
        }
        if let Some(rec) = recording {
            record_packet(rec, &self.sender, self.authority.body_count(), step, n);
        }
        let send_s = self.link.now(link_time(self.handshake_ticks, step, 0, TICK_S));
        let damaged = self
            .config
            .damage_every_n_packets
            .is_some_and(|every| every > 0 && (step + 1).is_multiple_of(every));
        let len = if damaged { n / 2 } else { n };
        match self.link.host.send(send_s, PeerId(0), &self.buf[..len]) {
            Ok(transport) => {
                self.sender_sequence[usize::from(transport)] = Some(sequence);
                self.packets_sent += 1;
            }
            Err(e) => tracing::warn!("state packet not sent: {e}"),
        }
        Ok(())
    }

    /// The guest applies what arrived; a packet it refuses sends a reject notice back.
    fn guest_events(&mut self, now: f64) -> Result<()> {
        while let Some(e) = self.link.guest.pop_event() {
            match e {
                EndpointEvent::Received { data, .. } => {
                    if let Err(err) = self.receiver.receive(&data, &mut self.remote) {
                        // The complaint travels back like any message (and may be lost: the next refusal sends
                        // another).
                        tracing::warn!("state packet refused: {err}");
                        let mut notice = [0u8; REJECT_NOTICE_BYTES];
                        let n = write_reject_notice(&mut notice, self.receiver.rejected_packets as u16)?;
                        if let Err(e) = self.link.guest.send(now, PeerId(0), &notice[..n]) {
                            tracing::warn!("reject notice not sent: {e}");
                        }
                    }
                }
                EndpointEvent::Disconnected { reason, .. } => bail!("guest disconnected: {reason:?}"),
                _ => {}
            }
        }
        Ok(())
    }

    /// The host learns acks, losses and reject notices.
    fn host_events(&mut self) -> Result<()> {
        while let Some(e) = self.link.host.pop_event() {
            match e {
                EndpointEvent::Received { data, .. } => match read_reject_notice(&data) {
                    Ok(refused) if self.reject_notices.is_new(refused) => self.sender.resync(),
                    Ok(_) => {}
                    Err(err) => tracing::warn!("unknown message from the guest refused: {err}"),
                },
                EndpointEvent::Acked { sequence, .. } => {
                    if let Some(s) = self.sender_sequence[usize::from(sequence)].take() {
                        self.sender.on_acked(s);
                    }
                }
                EndpointEvent::Lost { sequence, .. } => {
                    let ours = self.sender_sequence[usize::from(sequence)].take().is_some();
                    self.packets_lost += u64::from(ours);
                }
                EndpointEvent::Disconnected { reason, .. } => bail!("host lost the guest: {reason:?}"),
                _ => {}
            }
        }
        Ok(())
    }

    /// Remote rest jitter, convergence and the per-second rate, after both worlds stepped.
    fn measure(&mut self, step: u64) -> Result<()> {
        // Remote rest jitter: movement over one step (snaps included) of a cube at rest before and after it, on
        // the quantized state (what the next step starts from): the step that puts a cube to rest leaves it a
        // fraction of a quantum off the grid, and the snap back is no visible movement.
        for (i, prev) in self.prev_remote.iter_mut().enumerate() {
            let id = BodyId(i as u32);
            if self.remote.is_removed(id)? {
                *prev = None;
                continue;
            }
            let s = quantize_body_state(&self.remote.state(id)?);
            if let Some((p, was_at_rest)) = *prev {
                if was_at_rest && s.at_rest {
                    self.rest_jitter_m = self.rest_jitter_m.max(f64::from((s.position - p).length()));
                }
            }
            *prev = Some((s.position, s.at_rest));
        }
        if step >= self.last_throw_step {
            if bit_identical(&self.authority, &self.remote)? {
                self.identical_since.get_or_insert(step);
            } else {
                self.identical_since = None;
            }
        }
        if (step + 1).is_multiple_of(STEP_HZ as u64) {
            let bytes = self.link.host_wire_bytes();
            self.second_rates
                .push((bytes - self.bytes_at_second) as f64 * 8.0 / 1000.0);
            self.bytes_at_second = bytes;
        }
        Ok(())
    }

    /// What the run measured so far.
    pub fn report(&self) -> Result<LoopbackReport> {
        let step_s = 1.0 / STEP_HZ as f64;
        let steps = self.step;
        let wire_bytes = self.link.host_wire_bytes() - self.wire_bytes_at_start;
        let mut max_divergence_m = 0.0f64;
        for i in 0..self.authority.body_count() as u32 {
            let id = BodyId(i);
            if self.authority.is_removed(id)? || self.remote.is_removed(id)? {
                continue;
            }
            let d = (self.authority.state(id)?.position - self.remote.state(id)?.position).length();
            max_divergence_m = max_divergence_m.max(f64::from(d));
        }
        let bit_identical_at_end = bit_identical(&self.authority, &self.remote)?;
        let updates: u64 = self.sender.updates_by_encoding.iter().sum();
        Ok(LoopbackReport {
            steps,
            kbps_mean: wire_bytes as f64 * 8.0 / 1000.0 / (steps.max(1) as f64 * step_s),
            kbps_p95: percentile(&mut self.second_rates.clone(), 0.95),
            bits_per_cube_update: if updates > 0 {
                self.body_bytes as f64 * 8.0 / updates as f64
            } else {
                0.0
            },
            updates_by_encoding: self.sender.updates_by_encoding,
            free_flight_updates_by_encoding: self.free_flight,
            packets_sent: self.packets_sent,
            packets_lost: self.packets_lost,
            packets_rejected: self.receiver.rejected_packets,
            throws: self.throws,
            max_divergence_m_at_end: max_divergence_m,
            remote_rest_jitter_m: self.rest_jitter_m,
            seconds_to_converge: self
                .identical_since
                .filter(|_| bit_identical_at_end)
                .map(|s| (s + 1 - self.last_throw_step) as f64 * step_s),
            bit_identical_at_end,
        })
    }
}

/// Builds the link the configuration asks for and runs the handshake on the simulated clock (the run's clock
/// starts once the guest is in). Returns the link and the ticks the handshake took.
fn connect(config: &LoopbackConfig) -> Result<(Link, u64)> {
    let link_config = LinkConfig {
        latency_ms: config.latency_ms,
        jitter_ms: config.jitter_ms,
        loss_pct: config.loss_pct,
        duplicate_pct: config.dup_pct,
        ..LinkConfig::default()
    };
    let (io, host_addr, guest_addr): (LinkIo, SocketAddr, SocketAddr) = match config.link {
        LinkKind::Memory => (
            LinkIo::Memory(MemoryNetwork::new(link_config, config.seed)),
            "10.0.0.1:1".parse()?,
            "10.0.0.2:1".parse()?,
        ),
        LinkKind::Udp => {
            let host_socket = UdpTransport::bind("127.0.0.1:0".parse()?)?;
            let guest_socket = UdpTransport::bind("127.0.0.1:0".parse()?)?;
            let (host_addr, guest_addr) = (host_socket.local_addr(), guest_socket.local_addr());
            let udp = UdpIo {
                host_socket,
                guest_socket,
                // One seeded simulator per direction, as net-soak has.
                host_link: LinkSim::new(link_config, config.seed ^ 0x1111),
                guest_link: LinkSim::new(link_config, config.seed ^ 0x2222),
                start: Instant::now(),
            };
            (LinkIo::Udp(Box::new(udp)), host_addr, guest_addr)
        }
    };
    let endpoint_config = |seed| EndpointConfig {
        seed,
        ..Default::default()
    };
    let mut link = Link {
        io,
        host: Endpoint::host(endpoint_config(config.seed), 0.0),
        guest: Endpoint::join(endpoint_config(config.seed.wrapping_add(1)), host_addr, 0.0),
        host_addr,
        guest_addr,
    };
    let mut tick = 0u64;
    loop {
        tick += 1;
        let now = link.tick(tick as f64 * TICK_S)?;
        while link.host.pop_event().is_some() {}
        while let Some(e) = link.guest.pop_event() {
            if let EndpointEvent::ConnectFailed { reason } = e {
                bail!("the guest could not connect: {reason}");
            }
        }
        if link.guest.is_connected() && link.host.peers().next().is_some() {
            return Ok((link, tick));
        }
        if now > HANDSHAKE_LIMIT_S {
            bail!("no connection after {HANDSHAKE_LIMIT_S} s of simulated time");
        }
    }
}

/// Adds the packet the sender just wrote (`body_bytes` long) to `rec`.
fn record_packet(rec: &mut Recording, sender: &Sender, cubes: usize, step: u64, body_bytes: usize) {
    rec.cube_count = cubes as u32;
    rec.seconds = (step + 1) as f64 / STEP_HZ as f64;
    let mut packet = RecordedPacket {
        sent_body_bytes: body_bytes,
        ..RecordedPacket::default()
    };
    for id in 0..cubes as u32 {
        if let Some((state, _)) = sender.captured(id, step) {
            let (absolute, rest_bit) = all_cubes_bits(&state);
            packet.all_cubes_absolute_bits += absolute;
            packet.all_cubes_rest_bit_bits += rest_bit;
        }
    }
    for &id in sender.last_packet().0 {
        if let Some((state, baseline)) = sender.captured(id, step) {
            packet.updates.push(RecordedUpdate { id, state, baseline });
        }
    }
    rec.packets.push(packet);
}

/// Simulated time of sub-tick `k` of `step`, the run starting after `handshake_ticks` ticks: computed from
/// integers each time so it never drifts.
fn link_time(handshake_ticks: u64, step: u64, k: u64, dt: f64) -> f64 {
    (handshake_ticks + step * SUBTICKS_PER_STEP + k + 1) as f64 * dt
}

/// True when every cube has the same quantized state (and the same removed flag) on both sides.
fn bit_identical(a: &World, b: &World) -> Result<bool> {
    for i in 0..a.body_count() as u32 {
        let id = BodyId(i);
        let removed = a.is_removed(id)?;
        if removed != b.is_removed(id)? {
            return Ok(false);
        }
        if !removed && quantize_state(&a.state(id)?) != quantize_state(&b.state(id)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The `q` quantile (nearest rank) of `values`; 0 when empty.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::load_scene;

    fn run_table64(config: &LoopbackConfig) -> LoopbackReport {
        let scene = load_scene(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/scenes/table64.toml")).unwrap();
        let authority = scene.build_world(WorldConfig::default()).unwrap();
        let remote = scene.build_world(WorldConfig::default()).unwrap();
        run_loopback(config, authority, remote).unwrap()
    }

    #[test]
    fn short_table64_run_without_loss_ends_bit_identical_and_reports_every_field() {
        // 3 simulated seconds through a 20 ms link each way, no loss: the settled table must arrive exactly.
        let config = LoopbackConfig {
            seconds: 3.0,
            latency_ms: 20.0,
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        let json = report.to_json();
        for field in [
            "kbps_mean",
            "kbps_p95",
            "bits_per_cube_update",
            "updates_by_encoding",
            "packets_sent",
            "packets_lost",
            "max_divergence_m_at_end",
            "remote_rest_jitter_m",
            "seconds_to_converge",
        ] {
            assert!(json.get(field).is_some(), "{field} missing from {json}");
        }
        for e in Encoding::ALL {
            assert!(json["updates_by_encoding"].get(format!("{e:?}")).is_some());
        }
        assert!(report.bit_identical_at_end, "{json}");
        assert_eq!(report.max_divergence_m_at_end, 0.0);
        assert!(report.seconds_to_converge.is_some());
        assert_eq!(report.packets_sent, 270);
        assert_eq!(report.packets_lost, 0);
        assert_eq!(report.packets_rejected, 0);
        // Headers included, every packet within the budget.
        assert!(report.kbps_mean > 0.0 && report.kbps_mean <= f64::from(DEFAULT_KBPS_BUDGET));
    }

    #[test]
    fn udp_on_localhost_carries_state() {
        // Real sockets and the real clock: one second of wall time. Timing varies, so only the plumbing is
        // checked (every step sent, nothing refused, the remote not far off); exactness is the memory link's job.
        let config = LoopbackConfig {
            seconds: 1.0,
            latency_ms: 10.0,
            link: LinkKind::Udp,
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        assert_eq!(report.packets_sent, 90);
        assert_eq!(report.packets_rejected, 0);
        assert!(report.updates_by_encoding.iter().sum::<u64>() > 0);
        assert!(report.max_divergence_m_at_end < 0.01, "{}", report.to_json());
    }

    #[test]
    fn throws_through_a_lossy_link_end_identical_with_no_remote_rest_jitter() {
        // Throws every second for the first 10 s, then 10 s to settle; 50 ms each way, 10 % loss.
        let config = LoopbackConfig {
            seconds: 20.0,
            latency_ms: 50.0,
            jitter_ms: 5.0,
            loss_pct: 10.0,
            throw_every_s: Some(1.0),
            seed: 4,
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        assert!(report.throws >= 9, "{}", report.to_json());
        assert!(report.bit_identical_at_end, "{}", report.to_json());
        assert_eq!(report.remote_rest_jitter_m, 0.0, "{}", report.to_json());
    }

    #[test]
    fn damaged_packets_are_refused_and_the_sender_recovers_through_the_notice() {
        // A 20 ms link each way; every 40th state packet cut short. Each is refused, the notice brings the sender
        // back to absolute states, and the settled table still arrives exactly.
        let config = LoopbackConfig {
            seconds: 6.0,
            latency_ms: 20.0,
            damage_every_n_packets: Some(40),
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        assert!(report.packets_rejected >= 10, "{}", report.to_json());
        assert!(report.bit_identical_at_end, "{}", report.to_json());
        // Without the notice the sender would code against refused states forever: nearly every packet refused.
        assert!(
            report.packets_rejected < report.packets_sent / 10,
            "{}",
            report.to_json()
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_report() {
        let config = LoopbackConfig {
            seconds: 2.0,
            latency_ms: 30.0,
            jitter_ms: 5.0,
            loss_pct: 10.0,
            throw_every_s: Some(0.5),
            seed: 7,
            ..LoopbackConfig::default()
        };
        let (a, b) = (run_table64(&config), run_table64(&config));
        assert_eq!(a.to_json(), b.to_json());
    }
}
