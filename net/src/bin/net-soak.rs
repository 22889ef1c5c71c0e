//! `net-soak`: two endpoints connect through the link simulator and exchange sequenced packets at 90 per second
//! each way; prints one JSON object with what was sent, received and acked, and the estimates against the
//! configured link. Over real UDP on 127.0.0.1 (one thread per endpoint, real clock) by default, or in memory
//! with a simulated clock (`--socket memory`, runs faster than real time).
//!
//! Checks made here, from outside the protocol: every ack names a packet the other side really received
//! (`false_acks`), and no payload is delivered twice (`duplicates_delivered`). Every connected packet is sealed
//! (`"encrypted": true`); what failed to open is `forged`.

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tumble_net::endpoint::DropCounters;
use tumble_net::endpoint::{EndpointEvent, PeerId};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::CONNECTED_HEADER_BYTES;
use tumble_net::sequence::sequence_diff;
use tumble_net::socket::{IPV4_UDP_HEADER_BYTES, IPV6_UDP_HEADER_BYTES};
use tumble_net::{ConnectionStats, Endpoint, EndpointConfig, LinkConfig, LinkSim, UdpTransport};

/// Packets per second each way, as the game sends.
const SEND_RATE_HZ: f64 = 90.0;
/// Longest the UDP loop sleeps when nothing is due (s): bounds how late `update` runs.
const MAX_WAIT_S: f64 = 0.002;
/// Memory mode's simulated clock step (s).
const MEMORY_TICK_S: f64 = 0.0005;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SocketKind {
    Udp,
    Memory,
}

#[derive(Debug, Parser)]
#[command(about = "Soak the Tumble transport through the link simulator and report JSON")]
struct Args {
    /// Seconds of sending (after the handshake).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// One-way delay added in each direction (ms).
    #[arg(long, default_value_t = 0.0)]
    latency_ms: f64,
    /// ± jitter on each direction's delay (ms).
    #[arg(long, default_value_t = 0.0)]
    jitter_ms: f64,
    /// Loss in each direction (percent).
    #[arg(long, default_value_t = 0.0)]
    loss_pct: f64,
    /// Duplicates in each direction (percent).
    #[arg(long, default_value_t = 0.0)]
    dup_pct: f64,
    /// Extra reordering (percent of packets held back up to 50 ms).
    #[arg(long, default_value_t = 0.0)]
    reorder_pct: f64,
    /// Bandwidth cap per direction (kbps); 0 = none.
    #[arg(long, default_value_t = 0.0)]
    bandwidth_kbps: f64,
    /// Payload bytes per packet.
    #[arg(long, default_value_t = 100)]
    payload_bytes: usize,
    #[arg(long, value_enum, default_value_t = SocketKind::Udp)]
    socket: SocketKind,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Over IPv6 loopback ([::1]) instead of 127.0.0.1 (UDP mode); kbps then count 48-byte IP and UDP headers.
    #[arg(long)]
    ipv6: bool,
    /// Print the JSON object on stdout (always printed; the flag is accepted for the documented command line).
    #[arg(long)]
    json: bool,
}

/// One side's view of the run.
#[derive(Debug, Default)]
struct Side {
    sent: u64,
    sent_sequences: BTreeSet<u64>,
    last_sent: u64,
    received: BTreeSet<u64>,
    last_received: u64,
    duplicates_delivered: u64,
    acked: Vec<u64>,
    disconnects: u64,
    connected_at_s: Option<f64>,
    stats: ConnectionStats,
    drops: DropCounters,
}

/// The sequence as a number that does not wrap, chosen nearest to `reference`.
fn unwrap_sequence(seq: u16, reference: u64) -> u64 {
    (reference as i64 + i64::from(sequence_diff(seq, reference as u16))).max(0) as u64
}

impl Side {
    fn on_sent(&mut self, seq: u16) {
        let u = if self.sent == 0 {
            u64::from(seq)
        } else {
            unwrap_sequence(seq, self.last_sent)
        };
        self.last_sent = u;
        self.sent += 1;
        self.sent_sequences.insert(u);
    }

    /// Takes one event; a payload is accepted (the soak's "game" takes everything that arrives).
    fn on_event(&mut self, now_s: f64, event: EndpointEvent, ep: &mut Endpoint) {
        match event {
            EndpointEvent::Connected { .. } => self.connected_at_s = Some(now_s),
            EndpointEvent::Received { sequence, peer } => {
                ep.accept(peer, sequence);
                let u = unwrap_sequence(sequence, self.last_received);
                self.last_received = self.last_received.max(u);
                if !self.received.insert(u) {
                    self.duplicates_delivered += 1;
                }
            }
            EndpointEvent::Acked { sequence, .. } => {
                let u = unwrap_sequence(sequence, self.last_sent);
                // Acks of keep-alives (before and after the payload stream) are not payloads: not counted.
                if self.sent_sequences.contains(&u) {
                    self.acked.push(u);
                }
            }
            EndpointEvent::Disconnected { reason, .. } => {
                tracing::warn!("disconnected: {reason:?}");
                self.disconnects += 1;
            }
            EndpointEvent::ConnectFailed { reason } => {
                tracing::warn!("connect failed: {reason}");
                self.disconnects += 1;
            }
            EndpointEvent::Lost { sequence, .. } => {
                let u = unwrap_sequence(sequence, self.last_sent);
                let kind = if self.sent_sequences.contains(&u) {
                    "payload"
                } else {
                    "keep-alive"
                };
                tracing::info!("{kind} {sequence} judged lost at {now_s:.3} s");
            }
        }
    }
}

/// When each side sends, and until when.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    seconds: f64,
    drain_s: f64,
    handshake_limit_s: f64,
}

/// Sends every payload due by `now_s` (none before the connection, none at or after `stop_s`).
fn send_due(
    now_s: f64,
    next_send_s: &mut Option<f64>,
    stop_s: Option<f64>,
    ep: &mut Endpoint,
    side: &mut Side,
    payload: &[u8],
) {
    let connected = ep.peers().next().is_some();
    if !connected {
        return;
    }
    let due = next_send_s.get_or_insert(now_s);
    while *due <= now_s && stop_s.is_none_or(|stop| *due < stop) {
        match ep.send(now_s, PeerId(0), payload) {
            Ok(seq) => side.on_sent(seq),
            Err(e) => tracing::warn!("send failed: {e}"),
        }
        *due += 1.0 / SEND_RATE_HZ;
    }
}

fn link_config(a: &Args) -> LinkConfig {
    LinkConfig {
        latency_ms: a.latency_ms,
        jitter_ms: a.jitter_ms,
        loss_pct: a.loss_pct,
        duplicate_pct: a.dup_pct,
        reorder_pct: a.reorder_pct,
        bandwidth_kbps: a.bandwidth_kbps,
        ..LinkConfig::default()
    }
}

/// One endpoint on its own thread, over a real socket with the link simulator in front of its sends.
fn run_udp_side(
    mut socket: UdpTransport,
    mut ep: Endpoint,
    mut link: LinkSim,
    start: Instant,
    schedule: Schedule,
    payload: Vec<u8>,
    finished: Arc<AtomicUsize>,
) -> Result<Side> {
    let mut side = Side::default();
    let mut next_send_s = None;
    let mut done = false;
    loop {
        let now = start.elapsed().as_secs_f64();
        socket.receive_into(now, &mut ep)?;
        ep.update(now);
        while let Some(e) = ep.pop_event() {
            side.on_event(now, e, &mut ep);
        }
        let stop_send = side.connected_at_s.map(|t| t + schedule.seconds);
        if side.connected_at_s.is_none() && now > schedule.handshake_limit_s {
            anyhow::bail!("no connection after {:.1} s", schedule.handshake_limit_s);
        }
        // Each side stops sending payloads on its own clock, but keeps acking until both have drained: the
        // guest connects later than the host, and its last packets deserve acks too.
        if !done && stop_send.is_some_and(|s| now > s + schedule.drain_s) {
            done = true;
            side.stats = ep.stats(PeerId(0)).unwrap_or_default();
            side.drops = ep.drops();
            finished.fetch_add(1, Ordering::SeqCst);
        }
        if done && finished.load(Ordering::SeqCst) == 2 {
            break;
        }
        send_due(now, &mut next_send_s, stop_send, &mut ep, &mut side, &payload);
        socket.flush(now, &mut ep, Some(&mut link));
        let mut wake = now + MAX_WAIT_S;
        if let Some(t) = next_send_s {
            wake = wake.min(t);
        }
        if let Some(t) = link.next_delivery_s() {
            wake = wake.min(t);
        }
        let wait = (wake - start.elapsed().as_secs_f64()).max(0.0);
        socket.wait(Duration::from_secs_f64(wait))?;
    }
    Ok(side)
}

/// Host and guest settings for a soak: the game's, the guest given the host's join secret as from a join code.
fn endpoints(host_addr: SocketAddr) -> Result<(Endpoint, Endpoint)> {
    let host = Endpoint::host(EndpointConfig::default(), 0.0)?;
    let guest_config = EndpointConfig {
        join_secret: Some(host.join_secret()),
        ..EndpointConfig::default()
    };
    let guest = Endpoint::join(guest_config, host_addr, 0.0)?;
    Ok((host, guest))
}

fn run_udp(a: &Args, schedule: Schedule) -> Result<(Side, Side)> {
    let loopback = if a.ipv6 { "[::1]:0" } else { "127.0.0.1:0" };
    let host_socket = UdpTransport::bind(loopback.parse()?).context("binding the host socket")?;
    let guest_socket = UdpTransport::bind(loopback.parse()?).context("binding the guest socket")?;
    let start = Instant::now();
    let (host, guest) = endpoints(host_socket.local_addr())?;
    let payload = vec![0x5a; a.payload_bytes];
    let (host_link, guest_link) = (
        LinkSim::new(link_config(a), a.seed ^ 0x1111),
        LinkSim::new(link_config(a), a.seed ^ 0x2222),
    );
    let p = payload.clone();
    let finished = Arc::new(AtomicUsize::new(0));
    let f = finished.clone();
    let host_thread = std::thread::spawn(move || run_udp_side(host_socket, host, host_link, start, schedule, p, f));
    let guest_side = run_udp_side(guest_socket, guest, guest_link, start, schedule, payload, finished);
    let host_side = host_thread
        .join()
        .map_err(|_| anyhow::anyhow!("host thread panicked"))??;
    Ok((host_side, guest_side?))
}

/// Both endpoints in one thread on a simulated clock, through the in-memory network.
fn run_memory(a: &Args, schedule: Schedule) -> Result<(Side, Side)> {
    let (host_addr, guest_addr): (SocketAddr, SocketAddr) = ("10.0.0.1:1".parse()?, "10.0.0.2:1".parse()?);
    let mut net = MemoryNetwork::new(link_config(a), a.seed);
    let (mut host, mut guest) = endpoints(host_addr)?;
    let payload = vec![0x5a; a.payload_bytes];
    let (mut hs, mut gs) = (Side::default(), Side::default());
    let (mut host_next, mut guest_next) = (None, None);
    let mut now = 0.0;
    loop {
        now += MEMORY_TICK_S;
        // Deliveries first, then updates and sends, then the new datagrams onto the links, all at the same `now`:
        // a zero-latency link then delivers within the tick, as a socket would.
        net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
        host.update(now);
        guest.update(now);
        while let Some(e) = host.pop_event() {
            hs.on_event(now, e, &mut host);
        }
        while let Some(e) = guest.pop_event() {
            gs.on_event(now, e, &mut guest);
        }
        let start = match (hs.connected_at_s, gs.connected_at_s) {
            (Some(h), Some(g)) => h.max(g),
            _ if now > schedule.handshake_limit_s => anyhow::bail!("no connection after {:.1} s", now),
            _ => continue,
        };
        let stop = start + schedule.seconds;
        if now > stop + schedule.drain_s {
            break;
        }
        send_due(now, &mut host_next, Some(stop), &mut host, &mut hs, &payload);
        send_due(now, &mut guest_next, Some(stop), &mut guest, &mut gs, &payload);
        net.pump(now, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    }
    hs.stats = host.stats(PeerId(0)).unwrap_or_default();
    gs.stats = guest.stats(PeerId(0)).unwrap_or_default();
    (hs.drops, gs.drops) = (host.drops(), guest.drops());
    Ok((hs, gs))
}

/// Acks on `from` that name packets `to` never received.
fn false_acks(from: &Side, to: &Side) -> u64 {
    from.acked.iter().filter(|s| !to.received.contains(s)).count() as u64
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let a = Args::parse();
    anyhow::ensure!(a.seconds > 0.0, "--seconds must be positive");
    anyhow::ensure!(
        a.payload_bytes <= tumble_net::packet::MAX_PAYLOAD_BYTES,
        "--payload-bytes too large"
    );
    // Time for the last packets' acks to come back before counting: a round trip plus jitter plus margin.
    let drain_s = (2.0 * (a.latency_ms + a.jitter_ms)) / 1000.0 + 0.5;
    let schedule = Schedule {
        seconds: a.seconds,
        drain_s,
        handshake_limit_s: 30.0,
    };
    let wall = Instant::now();
    let (host, guest) = match a.socket {
        SocketKind::Udp => run_udp(&a, schedule)?,
        SocketKind::Memory => run_memory(&a, schedule)?,
    };
    let sent = host.sent + guest.sent;
    let received = (host.received.len() + guest.received.len()) as u64;
    let acked = (host.acked.len() + guest.acked.len()) as u64;
    let false_acks = false_acks(&host, &guest) + false_acks(&guest, &host);
    let duplicates = host.duplicates_delivered + guest.duplicates_delivered;
    let rtt_ms = (host.stats.rtt_ms + guest.stats.rtt_ms) / 2.0;
    let configured_rtt_ms = 2.0 * a.latency_ms;
    let (lost, resolved) = [&host, &guest].iter().fold((0, 0), |(l, r), s| {
        (
            l + s.stats.packets_lost,
            r + s.stats.packets_lost + s.stats.packets_acked,
        )
    });
    let loss_pct = if resolved > 0 {
        100.0 * lost as f64 / resolved as f64
    } else {
        0.0
    };
    // Payload and header bytes of everything each side sent (handshake excluded), over the sending time (keep-alives while draining add a little).
    let kbps = |s: &Side| s.stats.bytes_sent as f64 * 8.0 / 1000.0 / a.seconds;
    // The same with the IP and UDP headers of each datagram (28 bytes over IPv4, 48 over IPv6).
    let ip_udp = if a.ipv6 && a.socket == SocketKind::Udp {
        IPV6_UDP_HEADER_BYTES
    } else {
        IPV4_UDP_HEADER_BYTES
    };
    let kbps_ip =
        |s: &Side| (s.stats.bytes_sent + s.stats.packets_sent * ip_udp as u64) as f64 * 8.0 / 1000.0 / a.seconds;
    let forged = host.drops.forged + guest.drops.forged;
    let disconnects = host.disconnects + guest.disconnects;
    // Within 10 %, or 1 ms where 10 % is less (a zero-latency link still has a few microseconds of loopback).
    let rtt_tolerance_ms = (0.1 * configured_rtt_ms).max(1.0);
    let rtt_ok = (rtt_ms - configured_rtt_ms).abs() <= rtt_tolerance_ms;
    let pass = false_acks == 0 && duplicates == 0 && disconnects == 0 && rtt_ok && (loss_pct - a.loss_pct).abs() <= 3.0;
    let out = json!({
        "sent": sent,
        "received": received,
        "acked": acked,
        "false_acks": false_acks,
        "duplicates_delivered": duplicates,
        "rtt_ms": rtt_ms,
        "configured_rtt_ms": configured_rtt_ms,
        "loss_pct": loss_pct,
        "configured_loss_pct": a.loss_pct,
        "kbps_up": kbps(&guest),
        "kbps_down": kbps(&host),
        "kbps_up_with_ip": kbps_ip(&guest),
        "kbps_down_with_ip": kbps_ip(&host),
        "ip_udp_header_bytes": ip_udp,
        "ip_version": if a.ipv6 && a.socket == SocketKind::Udp { 6 } else { 4 },
        "encrypted": true,
        "forged": forged,
        "disconnects": disconnects,
        "jitter_ms": (host.stats.jitter_ms + guest.stats.jitter_ms) / 2.0,
        "socket": format!("{:?}", a.socket).to_lowercase(),
        "seconds": a.seconds,
        "packet_bytes": CONNECTED_HEADER_BYTES + a.payload_bytes,
        "wall_s": wall.elapsed().as_secs_f64(),
        "rtt_tolerance_ms": rtt_tolerance_ms,
        "pass": pass,
    });
    println!("{out}");
    Ok(())
}
