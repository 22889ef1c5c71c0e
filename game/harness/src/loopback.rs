//! The loopback harness behind `tumble loopback`: an authority world and a non-authority world in one process,
//! joined by two `tumble-net` endpoints (host = authority side, guest = non-authority side) through the link
//! simulator: in memory on a simulated clock (deterministic, faster than real time), or over two UDP sockets on
//! 127.0.0.1 on the real clock (paced at the step rate, so a run takes its simulated seconds). Each fixed step both worlds are quantized, the authority
//! side sends one state packet built by [`Sender`] (90 packets a second, as many as steps), the guest applies what
//! arrives through [`Receiver`], and the sender learns what arrived from the endpoint's `Acked` events. What the
//! run cost and how well the two sides agree comes back as a [`LoopbackReport`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tumble_game::run_settings::RunSettings;

use anyhow::{bail, Result};
use serde_json::{json, Value};
use tumble_engine::physics::{BodyId, World};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::CONNECTED_HEADER_BYTES;
use tumble_net::{
    Endpoint, EndpointConfig, EndpointEvent, LinkConfig, LinkSim, PeerId, UdpTransport, MAX_PACKET_BYTES,
};

use crate::bandwidth::{all_cubes_bits, RecordedPacket, RecordedUpdate, Recording};
use crate::demand::Demand;
use crate::min_budget::{largest_update_body_bytes, min_kbps_budget, PacketLimits};
use crate::rest_jitter::RestJitter;
use crate::thrower::Thrower;
use tumble_game::sync::codec::delta::Encoding;
use tumble_game::sync::codec::quantize::quantize_body_state;
use tumble_game::sync::codec::quantize::quantize_world;
pub(crate) use tumble_game::sync::codec::quantize::{bit_identical, body_differs};
use tumble_game::sync::codec::reject_notice::{
    read_reject_notice, write_reject_notice, RejectNotices, REJECT_NOTICE_BYTES,
};
use tumble_game::sync::codec::state_packet::{unwrap_step, PacketCoding};
use tumble_game::sync::link::priority::packet_budget_bytes;
use tumble_game::sync::link::receiver::{apply_state, Receiver};
use tumble_game::sync::link::sender::Sender;
use tumble_game::STEP_HZ;

pub use tumble_game::sync::link::priority::IP_UDP_HEADER_BYTES;
/// Seconds at the end of a run with no throws, so the world can settle and the two sides converge.
pub const SETTLE_S: f64 = 10.0;
/// Default bandwidth budget for the authority → non-authority direction (kbps): the smallest that carries
/// table64's largest update in every packet. It was 64, a quarter of the reference's 256, before packets were
/// sealed: the tag costs 9 bytes a packet net (see `tumble_net::packet`), 6.5 kbps at 90 packets a second.
pub const DEFAULT_KBPS_BUDGET: u32 = 70;
/// Clock ticks per physics step for the network (deliveries, acks): about 0.9 ms resolution at 90 Hz.
pub(crate) const SUBTICKS_PER_STEP: u64 = 12;
/// How long the handshake may take on the simulated clock before the run is abandoned (s).
pub(crate) const HANDSHAKE_LIMIT_S: f64 = 30.0;
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
    /// Length, seed and link.
    pub run: RunSettings,
    pub kbps_budget: u32,
    /// Seconds between throws; `None`: no thrower.
    pub throw_every_s: Option<f64>,
    pub link: LinkKind,
    /// How state packets are coded (both sides alike).
    pub coding: PacketCoding,
    /// Damage every n-th state packet before it is sent (cut to half its length): the receiver must refuse it
    /// and tell the sender, which must recover. For tests.
    pub damage_every_n_packets: Option<u64>,
}

impl Default for LoopbackConfig {
    fn default() -> Self {
        LoopbackConfig {
            run: RunSettings {
                seconds: 10.0,
                seed: 1,
                link: LinkConfig::default(),
            },
            kbps_budget: DEFAULT_KBPS_BUDGET,
            throw_every_s: None,
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
    /// The run's length, seed and link (the report's head).
    pub run: RunSettings,
    pub steps: u64,
    pub kbps_mean: f64,
    /// 95th percentile of the per-second rates (whole seconds of the run).
    pub kbps_p95: f64,
    /// What the sender would have sent with no budget (headers included): a shadow sender with room for every
    /// cube each step, hearing the same acks ([`crate::demand`]). The rate is min(budget, demand) or a
    /// little under it.
    pub kbps_demand_mean: f64,
    /// The smallest `kbps_budget` this scene and coding can run on (the run refuses a smaller one): one packet a
    /// step must carry the largest single update ([`crate::min_budget`]).
    pub kbps_budget_min: u32,
    /// State packet body bits (transport and IP headers excluded) per cube update written.
    pub bits_per_cube_update: f64,
    /// Cube updates written per state packet sent.
    pub updates_per_packet_mean: f64,
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
    /// Largest step-to-step movement of a remote cube (farthest corner, quantized pose) while the authority has it
    /// at rest and the remote has applied a resting state from within that rest ([`crate::rest_jitter`]).
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
        crate::with_run(
            &self.run,
            json!({
                "steps": self.steps,
                "kbps_mean": self.kbps_mean,
                "kbps_p95": self.kbps_p95,
                "kbps_demand_mean": self.kbps_demand_mean,
                "kbps_budget_min": self.kbps_budget_min,
                "bits_per_cube_update": self.bits_per_cube_update,
                "updates_per_packet_mean": self.updates_per_packet_mean,
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
            }),
        )
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

/// The two endpoints and the network between them (also `tumble compare`'s, [`crate::compare`]).
pub(crate) struct Link {
    io: LinkIo,
    pub(crate) host: Endpoint,
    pub(crate) guest: Endpoint,
    host_addr: SocketAddr,
    guest_addr: SocketAddr,
}

impl Link {
    /// Bytes each side has sent so far, IP/UDP headers included: (host, guest).
    pub(crate) fn wire_bytes(&self) -> (u64, u64) {
        (wire_bytes(&self.host), wire_bytes(&self.guest))
    }

    /// Deliveries first, then timers, then the new datagrams onto the links, all at the same `now_s` (as
    /// `net-soak` does: a zero-latency link then delivers within the tick).
    /// Over UDP, first waits for the real clock to reach `now_s`, and works at the real time then; returns the
    /// time used.
    pub(crate) fn tick(&mut self, now_s: f64) -> Result<f64> {
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
                udp.host_socket.flush(now, &mut self.host, Some(&mut udp.host_link));
                udp.guest_socket.flush(now, &mut self.guest, Some(&mut udp.guest_link));
                Ok(now)
            }
        }
    }

    /// The time sends are stamped with: `scheduled_s` in memory, the real clock over UDP.
    pub(crate) fn now(&self, scheduled_s: f64) -> f64 {
        match &self.io {
            LinkIo::Memory(_) => scheduled_s,
            LinkIo::Udp(udp) => udp.start.elapsed().as_secs_f64(),
        }
    }

    /// Host's wire bytes so far (datagrams plus IP/UDP headers) to the guest.
    pub(crate) fn host_wire_bytes(&self) -> u64 {
        wire_bytes(&self.host)
    }

    /// Guest's wire bytes so far (datagrams plus IP/UDP headers) to the host.
    pub(crate) fn guest_wire_bytes(&self) -> u64 {
        wire_bytes(&self.guest)
    }
}

/// Hands every packet `endpoint` has received to `read`, acking (accepting) those it takes; one it refuses is
/// logged as `what` and left unacked. A lost connection is an error naming `side`.
pub(crate) fn read_packets<E: std::fmt::Display>(
    endpoint: &mut Endpoint,
    side: &str,
    what: &str,
    mut read: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<()> {
    while let Some(event) = endpoint.pop_event() {
        match event {
            EndpointEvent::Received { peer, sequence } => match read(endpoint.payload()) {
                Ok(()) => {
                    endpoint.accept(peer, sequence);
                }
                Err(e) => tracing::debug!("{what} refused: {e}"),
            },
            EndpointEvent::Disconnected { reason, .. } => bail!("{side} lost its connection: {reason:?}"),
            _ => {}
        }
    }
    Ok(())
}

/// An endpoint's bytes sent to its first peer, datagrams plus IP/UDP headers.
pub(crate) fn wire_bytes(endpoint: &Endpoint) -> u64 {
    endpoint
        .stats(PeerId(0))
        .map_or(0, |s| s.bytes_sent + s.packets_sent * IP_UDP_HEADER_BYTES as u64)
}

/// Runs `config` on two copies of one scene: `authority` (the host's) and `remote` (the guest's), built alike.
pub fn run_loopback(config: &LoopbackConfig, authority: World, remote: World) -> Result<LoopbackReport> {
    run_loopback_recorded(config, authority, remote, None)
}

/// [`run_loopback`], also recording what each packet carried into `recording` (for [`crate::bandwidth`]).
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
    demand: Demand,
    kbps_budget_min: u32,
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
    rest_jitter: RestJitter,
    identical_since: Option<u64>,
    /// A remote cube to move right after the remote's next step, before it is measured (tests only).
    #[cfg(test)]
    pending_nudge: Option<(BodyId, glam::Vec3)>,
}

/// Length of a clock tick (s).
pub(crate) const TICK_S: f64 = 1.0 / (STEP_HZ as f64 * SUBTICKS_PER_STEP as f64);

/// One state packet a step; per datagram the IP/UDP and transport headers, and the transport's size cap.
const PACKET_LIMITS: PacketLimits = PacketLimits {
    packets_per_s: STEP_HZ,
    overhead_bytes: (IP_UDP_HEADER_BYTES + CONNECTED_HEADER_BYTES) as u32,
    max_packet_bytes: (MAX_PACKET_BYTES + IP_UDP_HEADER_BYTES) as u32,
};

/// Refuses a budget too small for the largest single update: any cube that needs one (every cube's first, a
/// thrown cube's after a loss) would never be sent, and the run would still end looking healthy. Returns the
/// smallest budget that works.
fn check_budget(config: &LoopbackConfig, cubes: usize) -> Result<u32> {
    let coding = match config.coding {
        PacketCoding::Entropy => "entropy",
        PacketCoding::BitPacked => "bit-packed",
    };
    let max_body = (PACKET_LIMITS.max_packet_bytes - PACKET_LIMITS.overhead_bytes) as usize;
    let Some(largest) = largest_update_body_bytes(cubes as u32, config.coding, max_body) else {
        bail!("a scene of {cubes} cubes cannot be synchronised: no state packet holds one of its updates");
    };
    let Some(min) = min_kbps_budget(largest, &PACKET_LIMITS) else {
        bail!("a scene of {cubes} cubes cannot be synchronised: its largest update ({largest} bytes) fits no packet");
    };
    if config.kbps_budget < min {
        bail!(
            "--kbps-budget {} is too small: the smallest budget that works for this scene ({cubes} cubes, {coding} \
             coding) is {min} kbps. Each of the {STEP_HZ} state packets a second must hold the largest single \
             update, an awake cube in full with its authority stamp: {largest} bytes of state plus {} bytes of \
             IP/UDP and transport headers",
            config.kbps_budget,
            PACKET_LIMITS.overhead_bytes
        );
    }
    Ok(min)
}

impl LoopbackSession {
    /// Checks the configuration, joins the two endpoints (the handshake runs here) and gets both sides ready.
    pub fn new(config: &LoopbackConfig, authority: World, mut remote: World) -> Result<Self> {
        let cubes = authority.body_count();
        if remote.body_count() != cubes {
            bail!("the two worlds differ in body count");
        }
        if !(config.run.seconds.is_finite() && config.run.seconds > 0.0) {
            bail!("--seconds must be positive");
        }
        let steps = (config.run.seconds * STEP_HZ as f64).round() as u64;
        let kbps_budget_min = check_budget(config, cubes)?;
        let body_budget = packet_budget_bytes(
            config.kbps_budget,
            PACKET_LIMITS.packets_per_s,
            PACKET_LIMITS.overhead_bytes,
            PACKET_LIMITS.max_packet_bytes,
        ) as usize;
        let thrower = match config.throw_every_s {
            Some(t) if t.is_finite() && t > 0.0 => {
                let last = steps.saturating_sub((SETTLE_S * STEP_HZ as f64) as u64);
                Some(Thrower::new((t * STEP_HZ as f64).round() as u64, last, config.run.seed))
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
            demand: Demand::new(cubes, config.coding, IP_UDP_HEADER_BYTES),
            kbps_budget_min,
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
            second_rates: Vec::with_capacity(config.run.seconds as usize + 1),
            bytes_at_second,
            wire_bytes_at_start: bytes_at_second,
            rest_jitter: RestJitter::new(cubes),
            identical_since: None,
            #[cfg(test)]
            pending_nudge: None,
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

    /// Moves a remote cube by `offset` behind the receiver's back (its rest flag kept), as a broken receiver or a
    /// remote simulation that disturbs a resting cube would: for tests of the figures that must catch it.
    #[cfg(test)]
    fn nudge_remote(&mut self, id: BodyId, offset: glam::Vec3) -> Result<()> {
        let mut s = self.remote.state(id)?;
        s.position += offset;
        self.remote.set_state(id, &s)?;
        Ok(())
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
        #[cfg(test)]
        if let Some((id, offset)) = self.pending_nudge.take() {
            self.nudge_remote(id, offset)?;
        }
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
        self.note_authority_rest(step)?;
        let n = self
            .sender
            .write_packet(&self.authority, step, sequence, &mut self.buf)?;
        self.demand.send(&self.authority, step, sequence)?;
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
                EndpointEvent::Received { peer, sequence } => match self.receiver.read(self.link.guest.payload()) {
                    Ok(packet_step) => {
                        // Acked only now that it was read: a refused packet stays unacked, never a baseline.
                        self.link.guest.accept(peer, sequence);
                        self.apply_received(packet_step)?
                    }
                    Err(err) => {
                        // The complaint travels back like any message (and may be lost: the next refusal sends
                        // another).
                        tracing::warn!("state packet refused: {err}");
                        let mut notice = [0u8; REJECT_NOTICE_BYTES];
                        let n = write_reject_notice(&mut notice, self.receiver.rejected_packets as u16)?;
                        if let Err(e) = self.link.guest.send(now, PeerId(0), &notice[..n]) {
                            tracing::warn!("reject notice not sent: {e}");
                        }
                    }
                },
                EndpointEvent::Disconnected { reason, .. } => bail!("guest disconnected: {reason:?}"),
                _ => {}
            }
        }
        Ok(())
    }

    /// Applies the packet the receiver just read, as [`Receiver::receive`] does, telling the rest-jitter meter which
    /// states the remote applied and which step of the authority's each describes (the packet carries the step's
    /// low bits; it is at most a few seconds old).
    fn apply_received(&mut self, packet_step: u64) -> Result<()> {
        let described = unwrap_step(packet_step as u16, self.step);
        for i in 0..self.receiver.update_count() {
            if let Some((id, state)) = self.receiver.take_fresh(i) {
                apply_state(&mut self.remote, id, &state)?;
                self.rest_jitter
                    .applied(id.index(), state.at_rest, described, self.step);
            }
        }
        Ok(())
    }

    /// Tells the rest-jitter meter whether each authority cube is at rest in its state describing `step`.
    fn note_authority_rest(&mut self, step: u64) -> Result<()> {
        for i in 0..self.authority.body_count() {
            let id = BodyId(i as u32);
            let at_rest = !self.authority.is_removed(id)? && self.authority.state(id)?.at_rest;
            self.rest_jitter.authority_state(i, at_rest, step);
        }
        Ok(())
    }

    /// The host learns acks, losses and reject notices.
    fn host_events(&mut self) -> Result<()> {
        while let Some(e) = self.link.host.pop_event() {
            match e {
                EndpointEvent::Received { peer, sequence } => match read_reject_notice(self.link.host.payload()) {
                    Ok(refused) => {
                        self.link.host.accept(peer, sequence);
                        if self.reject_notices.is_new(refused) {
                            self.sender.resync();
                            self.demand.resync();
                        }
                    }
                    Err(err) => tracing::warn!("unknown message from the guest refused: {err}"),
                },
                EndpointEvent::Acked { sequence, .. } => {
                    if let Some(s) = self.sender_sequence[usize::from(sequence)].take() {
                        self.sender.on_acked(s);
                        self.demand.on_acked(s);
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
        // The authority's stepped state is what the next packet describes; a cube it woke this step is no longer
        // at rest, so the remote's copy moving with it in the same step is not jitter.
        self.note_authority_rest(step + 1)?;
        // Poses as quantized, what the next step starts from: the step that puts a cube to rest leaves it a
        // fraction of a quantum off the grid, and the snap back is no visible movement.
        for i in 0..self.remote.body_count() {
            let id = BodyId(i as u32);
            let pose = if self.remote.is_removed(id)? {
                None
            } else {
                let s = quantize_body_state(&self.remote.state(id)?);
                Some((s.position, s.rotation))
            };
            self.rest_jitter.measure(i, pose, self.remote.half_extents(id)?, step);
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
        let kbps = |bytes: u64| bytes as f64 * 8.0 / 1000.0 / (steps.max(1) as f64 * step_s);
        Ok(LoopbackReport {
            run: self.config.run.clone(),
            steps,
            kbps_mean: kbps(wire_bytes),
            kbps_p95: percentile(&mut self.second_rates.clone(), 0.95),
            kbps_demand_mean: kbps(self.demand.wire_bytes()),
            kbps_budget_min: self.kbps_budget_min,
            bits_per_cube_update: if updates > 0 {
                self.body_bytes as f64 * 8.0 / updates as f64
            } else {
                0.0
            },
            updates_per_packet_mean: updates as f64 / self.packets_sent.max(1) as f64,
            updates_by_encoding: self.sender.updates_by_encoding,
            free_flight_updates_by_encoding: self.free_flight,
            packets_sent: self.packets_sent,
            packets_lost: self.packets_lost,
            packets_rejected: self.receiver.rejected_packets,
            throws: self.throws,
            max_divergence_m_at_end: max_divergence_m,
            remote_rest_jitter_m: self.rest_jitter.max_m(),
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
pub(crate) fn connect(config: &LoopbackConfig) -> Result<(Link, u64)> {
    let link_config = config.run.link;
    let (io, host_addr, guest_addr): (LinkIo, SocketAddr, SocketAddr) = match config.link {
        LinkKind::Memory => (
            LinkIo::Memory(MemoryNetwork::new(link_config, config.run.seed)),
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
                host_link: LinkSim::new(link_config, config.run.seed ^ 0x1111),
                guest_link: LinkSim::new(link_config, config.run.seed ^ 0x2222),
                start: Instant::now(),
            };
            (LinkIo::Udp(Box::new(udp)), host_addr, guest_addr)
        }
    };
    let host = Endpoint::host(EndpointConfig::default(), 0.0)?;
    let guest_config = EndpointConfig {
        join_secret: Some(host.join_secret()),
        ..Default::default()
    };
    let mut link = Link {
        io,
        guest: Endpoint::join(guest_config, host_addr, 0.0)?,
        host,
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
pub(crate) fn link_time(handshake_ticks: u64, step: u64, k: u64, dt: f64) -> f64 {
    (handshake_ticks + step * SUBTICKS_PER_STEP + k + 1) as f64 * dt
}

/// The `q` quantile (nearest rank) of `values`; 0 when empty.
pub(crate) fn percentile(values: &mut [f64], q: f64) -> f64 {
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

    fn worlds(scene: &str) -> (World, World) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/scenes")
            .join(scene);
        let scene = load_scene(&path).unwrap();
        let world = || scene.build_world(WorldConfig::default()).unwrap();
        (world(), world())
    }

    fn run_scene(scene: &str, config: &LoopbackConfig) -> LoopbackReport {
        let (authority, remote) = worlds(scene);
        run_loopback(config, authority, remote).unwrap()
    }

    fn run_table64(config: &LoopbackConfig) -> LoopbackReport {
        run_scene("table64.toml", config)
    }

    /// The most a run can put on the wire under `kbps_budget`: full packets every step (kbps).
    fn budget_capacity_kbps(kbps_budget: u32) -> f64 {
        let body = packet_budget_bytes(
            kbps_budget,
            PACKET_LIMITS.packets_per_s,
            PACKET_LIMITS.overhead_bytes,
            PACKET_LIMITS.max_packet_bytes,
        );
        f64::from((body + PACKET_LIMITS.overhead_bytes) * PACKET_LIMITS.packets_per_s) * 8.0 / 1000.0
    }

    /// Throws every second for the first 10 s, then 10 s to settle; 50 ms each way with 5 ms jitter.
    fn throwing(loss_pct: f64, kbps_budget: u32) -> LoopbackConfig {
        LoopbackConfig {
            run: RunSettings {
                seed: 4,
                ..RunSettings::link(20.0, 50.0, 5.0, loss_pct)
            },
            kbps_budget,
            throw_every_s: Some(1.0),
            ..LoopbackConfig::default()
        }
    }

    /// `kbps_mean` recomputed from the other fields: the host sends only state packets once connected, each with
    /// its body and the transport and IP/UDP headers.
    fn wire_kbps_from_parts(r: &LoopbackReport) -> f64 {
        let updates: u64 = r.updates_by_encoding.iter().sum();
        let body_bytes = r.bits_per_cube_update * updates as f64 / 8.0;
        let wire_bytes = body_bytes + (r.packets_sent * u64::from(PACKET_LIMITS.overhead_bytes)) as f64;
        wire_bytes * 8.0 / 1000.0 / (r.steps as f64 / STEP_HZ as f64)
    }

    #[test]
    fn short_table64_run_without_loss_ends_bit_identical_and_reports_every_field() {
        // 3 simulated seconds through a 20 ms link each way, no loss: the settled table must arrive exactly.
        let config = LoopbackConfig {
            run: RunSettings::link(3.0, 20.0, 0.0, 0.0),
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        let json = report.to_json();
        for field in [
            "steps",
            "kbps_mean",
            "kbps_p95",
            "kbps_demand_mean",
            "kbps_budget_min",
            "bits_per_cube_update",
            "updates_per_packet_mean",
            "updates_by_encoding",
            "free_flight_updates_by_encoding",
            "packets_sent",
            "packets_lost",
            "packets_rejected",
            "throws",
            "max_divergence_m_at_end",
            "remote_rest_jitter_m",
            "seconds_to_converge",
            "bit_identical_at_end",
        ] {
            assert!(json.get(field).is_some(), "{field} missing from {json}");
        }
        for e in Encoding::ALL {
            assert!(json["updates_by_encoding"].get(format!("{e:?}")).is_some());
        }
        assert!(report.bit_identical_at_end, "{json}");
        assert_eq!(report.max_divergence_m_at_end, 0.0);
        assert_eq!((report.steps, report.packets_sent), (270, 270));
        assert_eq!((report.packets_lost, report.packets_rejected, report.throws), (0, 0, 0));
        // Every cube's first update is absolute; nothing flies without a thrower; a settled table is mostly
        // "not changed".
        let [not_changed, _, _, _, absolute] = report.updates_by_encoding;
        assert!(absolute >= 64 && not_changed > 10 * absolute, "{json}");
        assert_eq!(report.free_flight_updates_by_encoding, [0; 5], "{json}");
        let updates: u64 = report.updates_by_encoding.iter().sum();
        assert!((report.updates_per_packet_mean * 270.0 - updates as f64).abs() < 1e-6);
        // The rate is what the packets carried (a rate that left out the headers, or counted bits as bytes,
        // would differ).
        assert!(
            (report.kbps_mean - wire_kbps_from_parts(&report)).abs() < 1e-9,
            "{json}"
        );
        // Nothing moves on the remote once it rests, and it converged within the first second (the table
        // settles in about a third of one, and the link adds 20 ms).
        assert_eq!(report.remote_rest_jitter_m, 0.0);
        let converge = report.seconds_to_converge.unwrap();
        assert!(converge > 0.02 && converge < 1.0, "{json}");
    }

    #[test]
    fn udp_on_localhost_carries_state() {
        // Real sockets and the real clock: one second of wall time. Timing varies, so only the plumbing is
        // checked (every step sent, nothing refused, the remote not far off); exactness is the memory link's job.
        let config = LoopbackConfig {
            run: RunSettings::link(1.0, 10.0, 0.0, 0.0),
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
    fn throws_through_a_lossy_link_at_the_default_budget_end_identical_and_stay_efficient() {
        // 10 % loss each way at 70 kbps (the smallest budget entropy coding allows for table64).
        let report = run_table64(&throwing(10.0, DEFAULT_KBPS_BUDGET));
        let json = report.to_json();
        assert_eq!(report.kbps_budget_min, 70, "{json}");
        // A throw every 90 steps from step 90 to step 900 (the last 10 s settle).
        assert_eq!(report.throws, 10, "{json}");
        assert!(report.bit_identical_at_end, "{json}");
        // From the last throw (10 s): the cube flies a second, lands, settles; then the link catches up.
        let converge = report.seconds_to_converge.unwrap();
        assert!(converge > 1.0 && converge < SETTLE_S - 2.0, "{json}");
        // Losses as configured: 10 % of 1800 packets, give or take the seeded draw (measured 184).
        assert!((130..=240).contains(&report.packets_lost), "{json}");
        // Thrown cubes in free flight go as "predicted" (measured 336 of 377, 89 %).
        let free: u64 = report.free_flight_updates_by_encoding.iter().sum();
        let predicted = report.free_flight_updates_by_encoding[Encoding::Predicted as usize];
        assert!(free > 200 && predicted * 10 >= free * 8, "{json}");
        // The budget binds while cubes fly (demand 91.5 kbps) and not once they settle: the rate stays under
        // what full packets would carry, and a second's rate never exceeds it.
        let capacity = budget_capacity_kbps(DEFAULT_KBPS_BUDGET);
        assert!(report.kbps_demand_mean > capacity, "{json}");
        assert!(
            report.kbps_mean < capacity && report.kbps_p95 <= capacity + 1e-9,
            "{json}"
        );
        // Efficiency, measured 7.87 bits per update and 27.1 updates per packet: a regression in the coding or
        // the packet filling shows here. (5.95 and 32.9 before rest detection required speed and acceleration to
        // be still too: cubes now rest later, so more updates carry motion.)
        assert!(report.bits_per_cube_update < 9.0, "{json}");
        assert!(report.updates_per_packet_mean > 24.0, "{json}");
        // 2.2 mm before rest detection required speed and acceleration to be still too (see
        // `a_remote_cube_rests_still_wherever_its_authority_rests_it`); 0 since.
        assert_eq!(report.remote_rest_jitter_m, 0.0, "{json}");
    }

    #[test]
    fn with_room_to_spare_no_remote_cube_moves_while_its_authority_rests_it() {
        // The same lossy run at twice the budget: every resting cube is resent within a step or two, and the
        // remote never moves a cube the authority has at rest.
        let report = run_table64(&throwing(10.0, 2 * DEFAULT_KBPS_BUDGET));
        assert!(report.bit_identical_at_end, "{}", report.to_json());
        assert_eq!(report.remote_rest_jitter_m, 0.0, "{}", report.to_json());
    }

    /// Issue 30, item 8: two touching towers of 25, a cube thrown into them every 3 s, 120 ms each way ±30 ms, 10 %
    /// loss and 10 % duplicates: no cube its authority has at rest moves on the remote. (Measured before: 3.5 cm and
    /// 19 cm on seeds 2 and 3 — the remote's copy of a thrown cube, a little off its authority's path, knocked
    /// resting cubes its authority never touched — and 0.1 mm on table64 once those were remote: a resting copy
    /// moved to a new resting pose was applied awake and turned by the solver until a second resting state came.)
    #[test]
    fn resting_towers_stay_still_on_the_remote_through_throws_loss_and_duplicates() {
        for seed in [2, 3] {
            let config = LoopbackConfig {
                run: RunSettings {
                    seconds: 24.0,
                    seed,
                    link: LinkConfig {
                        latency_ms: 120.0,
                        jitter_ms: 30.0,
                        loss_pct: 10.0,
                        duplicate_pct: 10.0,
                        ..LoopbackConfig::default().run.link
                    },
                },
                throw_every_s: Some(3.0),
                ..LoopbackConfig::default()
            };
            let report = run_scene("towers2x25.toml", &config);
            assert!(report.throws >= 4, "{}", report.to_json());
            assert_eq!(report.remote_rest_jitter_m, 0.0, "seed {seed}: {}", report.to_json());
        }
    }

    #[test]
    fn a_remote_cube_rests_still_wherever_its_authority_rests_it() {
        // Cube 24, step 606 of this run: a thrown cube bumps it on the authority, which puts it back to rest at
        // the same pose; on the remote the bump comes later, the resting state (applied at rest in step 610) is
        // woken again by the still-moving thrown cube, and with remote rest detection off it creeps for 47 steps
        // until the next state for it arrives, then is snapped back 2.2 mm. That was with rest judged by pose alone;
        // since rest also requires still speed and acceleration, this run measures 0. The mechanism (a resting
        // remote cube woken by the remote's own simulation) is not ruled out by construction: the session harness
        // still sees a few millimetres in long four-player runs.
        let report = run_table64(&throwing(10.0, DEFAULT_KBPS_BUDGET));
        assert_eq!(report.remote_rest_jitter_m, 0.0, "{}", report.to_json());
    }

    #[test]
    fn a_remote_cube_moved_behind_the_receivers_back_is_rest_jitter_and_delays_convergence() {
        // The table settles and converges; at 2 s a resting remote cube is lifted 1 cm behind the receiver's back;
        // the authority's next state for it puts it back.
        let config = LoopbackConfig {
            run: RunSettings::link(4.0, 20.0, 0.0, 0.0),
            ..LoopbackConfig::default()
        };
        let (authority, remote) = worlds("table64.toml");
        let mut session = LoopbackSession::new(&config, authority, remote).unwrap();
        let nudge = glam::Vec3::new(0.0, 41.0 / 4096.0, 0.0);
        while !session.is_finished() {
            if session.progress().0 == 180 {
                assert!(session.remote().state(BodyId(0)).unwrap().at_rest);
                // As if the remote's own step had moved it: the pose it draws after step 180 is lifted.
                session.pending_nudge = Some((BodyId(0), nudge));
            }
            session.step(None).unwrap();
        }
        let report = session.report().unwrap();
        let json = report.to_json();
        // Lifted, then put back: both movements are the nudge (the corners move with the centre).
        assert!(
            (report.remote_rest_jitter_m - f64::from(nudge.y)).abs() < 1e-6,
            "{json}"
        );
        assert!(report.bit_identical_at_end, "{json}");
        // Converged again only after the nudge, at 2 s, plus at least the link's delay.
        let converge = report.seconds_to_converge.unwrap();
        assert!(converge > 2.0 + 0.02 && converge < 3.0, "{json}");
    }

    #[test]
    fn a_remote_left_off_at_the_end_is_not_identical_and_has_not_converged() {
        let config = LoopbackConfig {
            run: RunSettings::link(2.0, 20.0, 0.0, 0.0),
            ..LoopbackConfig::default()
        };
        let (authority, remote) = worlds("table64.toml");
        let mut session = LoopbackSession::new(&config, authority, remote).unwrap();
        while !session.is_finished() {
            session.step(None).unwrap();
        }
        assert!(session.report().unwrap().bit_identical_at_end);
        session
            .nudge_remote(BodyId(5), glam::Vec3::new(0.01, 0.0, 0.0))
            .unwrap();
        let report = session.report().unwrap();
        let json = report.to_json();
        assert!(!report.bit_identical_at_end, "{json}");
        assert_eq!(report.seconds_to_converge, None, "{json}");
        assert!((report.max_divergence_m_at_end - 0.01).abs() < 1e-6, "{json}");
    }

    #[test]
    fn a_remote_that_refuses_every_packet_never_converges() {
        // Every state packet cut in half: all refused, so the remote simulates alone (rest detection off: its
        // cubes never rest where the authority's do).
        let config = LoopbackConfig {
            run: RunSettings::link(3.0, 20.0, 0.0, 0.0),
            damage_every_n_packets: Some(1),
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        let json = report.to_json();
        // All but the last packet or two, still in flight at the end.
        assert!(report.packets_rejected + 2 >= report.packets_sent, "{json}");
        assert!(!report.bit_identical_at_end, "{json}");
        assert_eq!(report.seconds_to_converge, None, "{json}");
        assert_eq!(
            report.remote_rest_jitter_m, 0.0,
            "nothing applied, nothing pinned: {json}"
        );
    }

    #[test]
    fn the_rate_is_the_demand_when_the_budget_does_not_bind() {
        // 2000 kbps: only the 1200-byte packet cap binds, in the first 14 steps (64 absolute states, 1.7 KB).
        // Measured 87.3 kbps against a demand of 90.4 kbps. A sender that wasted bytes (baselines unused, ids
        // repeated) would exceed the demand; one that left cubes out would fall far short.
        let (authority, remote) = worlds("table64.toml");
        let mut session = LoopbackSession::new(&throwing(0.0, 2000), authority, remote).unwrap();
        while !session.is_finished() {
            session.step(None).unwrap();
        }
        // The shadow had room for every cube in every packet, or the demand would be understated.
        assert_eq!(session.demand.short_packets, 0);
        let report = session.report().unwrap();
        let json = report.to_json();
        assert!(report.kbps_mean <= report.kbps_demand_mean * 1.02, "{json}");
        assert!(report.kbps_mean >= report.kbps_demand_mean * 0.93, "{json}");
        // Every cube in nearly every packet.
        assert!(report.updates_per_packet_mean > 63.0, "{json}");
        // Bursts while cubes fly, quiet once they rest: the 95th percentile second is well above the mean.
        assert!(report.kbps_p95 > 1.5 * report.kbps_mean, "{json}");
        assert!(
            (report.kbps_mean - wire_kbps_from_parts(&report)).abs() < 1e-9,
            "{json}"
        );
    }

    #[test]
    fn the_rate_fills_the_budget_when_demand_exceeds_it() {
        // smash: a tower hit by a cube, cubes tumbling for seconds: demand far above the budget throughout.
        // Measured: 65.3 kbps of 69.8 with entropy coding (its packets close a few bytes early: sizes are
        // estimated), 65.4 of 67.0 bit-packed at its smallest budget (67 here: smash has fewer cubes than
        // table64, so shorter ids).
        for (coding, budget, fill) in [(PacketCoding::Entropy, 70, 0.9), (PacketCoding::BitPacked, 67, 0.95)] {
            let config = LoopbackConfig {
                run: RunSettings::link(3.0, 20.0, 0.0, 0.0),
                kbps_budget: budget,
                coding,
                ..LoopbackConfig::default()
            };
            let report = run_scene("smash.toml", &config);
            let json = report.to_json();
            let capacity = budget_capacity_kbps(budget);
            assert_eq!(report.kbps_budget_min, budget, "{json}");
            assert!(report.kbps_demand_mean > 2.0 * capacity, "{json}");
            assert!(
                report.kbps_mean <= capacity && report.kbps_mean >= fill * capacity,
                "{json}"
            );
            assert!(
                report.kbps_p95 <= capacity + 1e-9 && report.kbps_p95 >= fill * capacity,
                "{json}"
            );
        }
    }

    #[test]
    fn a_budget_below_the_largest_update_is_refused_and_the_smallest_one_moves_state() {
        for (coding, min) in [(PacketCoding::Entropy, 70), (PacketCoding::BitPacked, 68)] {
            let config = LoopbackConfig {
                run: RunSettings::link(12.0, 20.0, 0.0, 0.0),
                throw_every_s: Some(1.0),
                kbps_budget: min - 1,
                coding,
                ..LoopbackConfig::default()
            };
            let (authority, remote) = worlds("table64.toml");
            let err = LoopbackSession::new(&config, authority, remote)
                .err()
                .unwrap()
                .to_string();
            assert!(
                err.contains(&format!("--kbps-budget {} is too small", min - 1))
                    && err.contains("the smallest budget that works for this scene (64 cubes, "),
                "{err}"
            );
            assert!(err.contains(&format!("is {min} kbps")), "{err}");
            // At the smallest budget: two throws (at 1 s and 2 s), and everything arrives.
            let report = run_table64(&LoopbackConfig {
                kbps_budget: min,
                ..config
            });
            let json = report.to_json();
            assert_eq!(report.throws, 2, "{json}");
            assert!(report.free_flight_updates_by_encoding.iter().sum::<u64>() > 0, "{json}");
            assert!(report.bit_identical_at_end, "{json}");
        }
    }

    #[test]
    fn the_95th_percentile_is_the_nearest_rank() {
        let mut rates: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut rates, 0.95), 19.0);
        assert_eq!(percentile(&mut [5.0], 0.95), 5.0);
        assert_eq!(percentile(&mut [], 0.95), 0.0);
    }

    #[test]
    fn damaged_packets_are_refused_and_the_sender_recovers_through_the_notice() {
        // A 20 ms link each way; every 40th state packet cut short. Each is refused, the notice brings the sender
        // back to absolute states, and the settled table still arrives exactly.
        let config = LoopbackConfig {
            run: RunSettings::link(6.0, 20.0, 0.0, 0.0),
            damage_every_n_packets: Some(40),
            ..LoopbackConfig::default()
        };
        let report = run_table64(&config);
        assert_eq!(report.packets_rejected, 540 / 40, "{}", report.to_json());
        assert!(report.bit_identical_at_end, "{}", report.to_json());
    }

    #[test]
    fn the_same_seed_gives_the_same_report() {
        let config = LoopbackConfig {
            run: RunSettings {
                seed: 7,
                ..RunSettings::link(2.0, 30.0, 5.0, 10.0)
            },
            throw_every_s: Some(0.5),
            ..LoopbackConfig::default()
        };
        let (a, b) = (run_table64(&config), run_table64(&config));
        assert_eq!(a.to_json(), b.to_json());
    }
}
