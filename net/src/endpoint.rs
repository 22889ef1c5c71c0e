//! The endpoint: a host with up to `max_players - 1` guests, or a guest of one host. It does no I/O: the caller
//! passes in the time and each received datagram, and takes out the datagrams to send, so the same code runs over
//! a UDP socket, through the link simulator, or in a test with a hand-made clock.
//!
//! Handshake (all guest packets padded to `HANDSHAKE_REQUEST_BYTES`; every host reply is smaller):
//! 1. guest → `Request { salt }`; the host answers `Challenge { salt, challenge }` where the challenge is a keyed
//!    hash of the guest's address, salt and a time bucket. The host keeps no state for it, so a flood of requests
//!    costs nothing but the (rate-limited) replies.
//! 2. guest → `Response { salt, challenge }`; only a sender that received the challenge at that address can echo
//!    it, so a spoofed address can't connect. The host opens a slot and answers `Accepted` with a session key.
//! 3. Connected packets carry the session key; a packet from the right address with the wrong key is dropped.
//!
//! A full host answers `Denied(Full)`; a request of another protocol version gets `Denied(VersionMismatch)`.

use crate::ack::AckEvent;
use crate::connection::{Connection, ConnectionStats};
use crate::packet::{
    read_packet, write_packet, ConnectedHeader, DenyReason, DisconnectReason, Packet, MAX_PACKET_BYTES,
    MAX_PAYLOAD_BYTES, MAX_PEERS_LIMIT, PROTOCOL_VERSION,
};
use crate::rng::Rng;
use std::collections::hash_map::DefaultHasher;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use thiserror::Error;

/// A challenge is valid in the time bucket it was issued in and the next one (so 10 to 20 s).
const CHALLENGE_BUCKET_S: f64 = 10.0;
/// Events kept for a caller that does not poll; the oldest go first.
const MAX_QUEUED_EVENTS: usize = 16_384;
/// Datagrams kept for a caller that does not drain them.
const MAX_QUEUED_DATAGRAMS: usize = 4096;

/// Endpoint settings; `Default` is the game's configuration.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Players including the host: a host accepts `max_players - 1` guests.
    pub max_players: usize,
    pub protocol_version: u8,
    /// A connection (or a guest's handshake) with nothing received for this long is dropped (seconds).
    pub timeout_s: f64,
    /// A keep-alive goes out when nothing else was sent for this long (seconds).
    pub keepalive_interval_s: f64,
    /// A guest resends its handshake packet this often (seconds).
    pub handshake_resend_s: f64,
    /// Disconnect packets sent at once, so that one arrives under heavy loss.
    pub disconnect_redundancy: u32,
    /// Handshake packets a host processes per second, and the burst it allows.
    pub handshake_rate_per_s: f64,
    pub handshake_burst: f64,
    /// Seeds the salts, session keys and the challenge secret. `Default` takes it from `rng::entropy_seed`; tests
    /// set it for reproducible runs (never in a live game: a known seed gives away the session keys).
    pub seed: u64,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            max_players: 4,
            protocol_version: PROTOCOL_VERSION,
            timeout_s: 5.0,
            keepalive_interval_s: 0.1,
            handshake_resend_s: 0.1,
            disconnect_redundancy: 10,
            handshake_rate_per_s: 64.0,
            handshake_burst: 64.0,
            seed: crate::rng::entropy_seed(),
        }
    }
}

/// A peer, by slot. On a guest, the host is `PeerId(0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u8);

/// Why joining failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConnectError {
    #[error("the host is full")]
    Full,
    #[error("protocol version mismatch: host speaks {host_version}, we speak {ours}")]
    VersionMismatch { host_version: u8, ours: u8 },
    #[error("no answer from the host")]
    TimedOut,
}

/// Why `send` refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SendError {
    #[error("payload of {bytes} bytes exceeds the {max} bytes a packet can carry")]
    TooLarge { bytes: usize, max: usize },
    #[error("peer {0:?} is not connected")]
    NotConnected(PeerId),
}

/// What the caller learns from `pop_event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointEvent {
    Connected {
        peer: PeerId,
    },
    ConnectFailed {
        reason: ConnectError,
    },
    Disconnected {
        peer: PeerId,
        reason: DisconnectReason,
    },
    /// A payload, delivered at most once (it may arrive out of order: compare sequences).
    Received {
        peer: PeerId,
        sequence: u16,
        data: Vec<u8>,
    },
    Acked {
        peer: PeerId,
        sequence: u16,
    },
    /// Sent packet that left the ack window unacked.
    Lost {
        peer: PeerId,
        sequence: u16,
    },
}

/// Datagrams refused, by cause; nothing else changes when one is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropCounters {
    pub malformed: u64,
    pub unknown_sender: u64,
    pub wrong_version: u64,
    pub bad_challenge: u64,
    pub rate_limited: u64,
    pub duplicate: u64,
    pub too_old: u64,
    pub unexpected: u64,
    pub events_overflowed: u64,
    pub datagrams_overflowed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GuestState {
    Requesting,
    Responding { challenge: u64 },
    Connected,
    Failed,
    Disconnected,
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Host,
    Guest {
        host: SocketAddr,
        salt: u64,
        state: GuestState,
        started_s: f64,
        last_handshake_s: f64,
    },
}

/// A host or a guest.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    role: Role,
    rng: Rng,
    secret: u64,
    slots: Vec<Option<Connection>>,
    events: VecDeque<EndpointEvent>,
    outgoing: VecDeque<(SocketAddr, Vec<u8>)>,
    drops: DropCounters,
    tokens: f64,
    tokens_time_s: f64,
}

impl Endpoint {
    fn new(config: EndpointConfig, role: Role, slots: usize, now_s: f64) -> Self {
        let mut rng = Rng::new(config.seed);
        let secret = rng.next_u64();
        let tokens = config.handshake_burst;
        Endpoint {
            config,
            role,
            rng,
            secret,
            slots: vec![None; slots],
            events: VecDeque::new(),
            outgoing: VecDeque::new(),
            drops: DropCounters::default(),
            tokens,
            tokens_time_s: now_s,
        }
    }

    /// A host accepting `config.max_players - 1` guests (clamped to what the wire can name).
    pub fn host(config: EndpointConfig, now_s: f64) -> Self {
        let guests = config.max_players.clamp(2, usize::from(MAX_PEERS_LIMIT)) - 1;
        Self::new(config, Role::Host, guests, now_s)
    }

    /// A guest that starts its handshake with `host` at once.
    pub fn join(config: EndpointConfig, host: SocketAddr, now_s: f64) -> Self {
        let mut e = Self::new(config, Role::Host, 1, now_s);
        let salt = e.rng.next_u64();
        e.role = Role::Guest {
            host,
            salt,
            state: GuestState::Requesting,
            started_s: now_s,
            last_handshake_s: now_s,
        };
        e.emit_packet(host, &Packet::Request { client_salt: salt });
        e
    }

    pub fn is_host(&self) -> bool {
        matches!(self.role, Role::Host)
    }

    /// On a guest: connected to the host. On a host: always true.
    pub fn is_connected(&self) -> bool {
        match self.role {
            Role::Host => true,
            Role::Guest { state, .. } => state == GuestState::Connected,
        }
    }

    pub fn drops(&self) -> DropCounters {
        self.drops
    }

    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| PeerId(i as u8))
    }

    pub fn peer_addr(&self, peer: PeerId) -> Option<SocketAddr> {
        self.slot(peer).map(|c| c.addr)
    }

    pub fn stats(&self, peer: PeerId) -> Option<ConnectionStats> {
        self.slot(peer).map(Connection::stats)
    }

    /// Whether `sequence` from `peer` was received, while it is still within the receive window (512 packets):
    /// an oracle for tests and `net-soak` to check acks against.
    pub fn has_received(&self, peer: PeerId, sequence: u16) -> bool {
        self.slot(peer).is_some_and(|c| c.acks.was_received(sequence))
    }

    pub fn pop_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    /// The next datagram to put on the wire, with its destination.
    pub fn pop_outgoing(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.outgoing.pop_front()
    }

    fn slot(&self, peer: PeerId) -> Option<&Connection> {
        self.slots.get(usize::from(peer.0)).and_then(Option::as_ref)
    }

    fn push_event(&mut self, event: EndpointEvent) {
        if self.events.len() >= MAX_QUEUED_EVENTS {
            self.events.pop_front();
            self.drops.events_overflowed += 1;
        }
        self.events.push_back(event);
    }

    fn emit(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        if self.outgoing.len() >= MAX_QUEUED_DATAGRAMS {
            self.outgoing.pop_front();
            self.drops.datagrams_overflowed += 1;
        }
        self.outgoing.push_back((to, bytes));
    }

    /// Encodes and queues a packet; returns its size. Only our own well-formed packets come here, so an encoding
    /// failure is a bug, reported through tracing and dropped rather than panicking in a live game.
    /// Refuses a handshake, saying why.
    fn deny(&mut self, to: SocketAddr, client_salt: u64, reason: DenyReason) {
        self.emit_packet(to, &Packet::Denied { client_salt, reason });
    }

    fn emit_packet(&mut self, to: SocketAddr, packet: &Packet<'_>) -> usize {
        let mut buf = vec![0u8; MAX_PACKET_BYTES];
        match write_packet(packet, self.config.protocol_version, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                self.emit(to, buf);
                n
            }
            Err(e) => {
                tracing::error!("could not encode {packet:?}: {e}");
                0
            }
        }
    }

    /// Sends `payload` to `peer` in one packet; returns the packet's sequence (matched later by `Acked`/`Lost`).
    pub fn send(&mut self, now_s: f64, peer: PeerId, payload: &[u8]) -> Result<u16, SendError> {
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(SendError::TooLarge {
                bytes: payload.len(),
                max: MAX_PAYLOAD_BYTES,
            });
        }
        self.send_connected(now_s, peer, Some(payload))
            .ok_or(SendError::NotConnected(peer))
    }

    /// Sends a payload packet, or a keep-alive when `payload` is `None`.
    fn send_connected(&mut self, now_s: f64, peer: PeerId, payload: Option<&[u8]>) -> Option<u16> {
        let conn = self.slots.get_mut(usize::from(peer.0))?.as_mut()?;
        let bytes = crate::packet::CONNECTED_HEADER_BYTES + payload.map_or(0, <[u8]>::len);
        let mut header = conn.acks.ack_fields(now_s);
        header.sequence = conn.acks.on_send(now_s, bytes);
        header.session_key = conn.session_key;
        let sequence = header.sequence;
        conn.on_sent(now_s, bytes);
        let addr = conn.addr;
        let packet = match payload {
            Some(payload) => Packet::Payload { header, payload },
            None => Packet::KeepAlive { header },
        };
        self.emit_packet(addr, &packet);
        self.drain_ack_events(peer);
        Some(sequence)
    }

    fn drain_ack_events(&mut self, peer: PeerId) {
        let Some(conn) = self.slots.get_mut(usize::from(peer.0)).and_then(Option::as_mut) else {
            return;
        };
        let mut pending = Vec::new();
        while let Some(e) = conn.acks.pop_event() {
            if let AckEvent::Lost(_) = e {
                conn.on_lost();
            }
            pending.push(e);
        }
        for e in pending {
            self.push_event(match e {
                AckEvent::Acked(sequence) => EndpointEvent::Acked { peer, sequence },
                AckEvent::Lost(sequence) => EndpointEvent::Lost { peer, sequence },
            });
        }
    }

    /// Closes the connection to `peer`, telling it several times over.
    pub fn disconnect(&mut self, peer: PeerId) {
        self.close(peer, DisconnectReason::Closed, true);
    }

    /// Closes everything (a host shutting down, a guest leaving).
    pub fn shutdown(&mut self) {
        let reason = if self.is_host() {
            DisconnectReason::HostShutdown
        } else {
            DisconnectReason::Closed
        };
        for i in 0..self.slots.len() {
            self.close(PeerId(i as u8), reason, true);
        }
    }

    fn close(&mut self, peer: PeerId, reason: DisconnectReason, notify: bool) {
        let Some(conn) = self.slots.get_mut(usize::from(peer.0)).and_then(Option::take) else {
            return;
        };
        if notify {
            let packet = Packet::Disconnect {
                session_key: conn.session_key,
                reason,
            };
            for _ in 0..self.config.disconnect_redundancy {
                self.emit_packet(conn.addr, &packet);
            }
        }
        if let Role::Guest { state, .. } = &mut self.role {
            *state = GuestState::Disconnected;
        }
        tracing::debug!("peer {peer:?} at {} disconnected: {reason:?}", conn.addr);
        self.push_event(EndpointEvent::Disconnected { peer, reason });
    }

    /// Timeouts, keep-alives, handshake resends and rate windows. Call once per tick.
    pub fn update(&mut self, now_s: f64) {
        if let Role::Guest {
            host,
            salt,
            state,
            started_s,
            last_handshake_s,
        } = self.role
        {
            let waiting = matches!(state, GuestState::Requesting | GuestState::Responding { .. });
            if waiting && now_s - started_s >= self.config.timeout_s {
                self.set_guest_state(GuestState::Failed);
                self.push_event(EndpointEvent::ConnectFailed {
                    reason: ConnectError::TimedOut,
                });
            } else if waiting && now_s - last_handshake_s >= self.config.handshake_resend_s {
                let packet = match state {
                    GuestState::Responding { challenge } => Packet::Response {
                        client_salt: salt,
                        challenge,
                    },
                    _ => Packet::Request { client_salt: salt },
                };
                self.emit_packet(host, &packet);
                if let Role::Guest { last_handshake_s, .. } = &mut self.role {
                    *last_handshake_s = now_s;
                }
            }
        }
        for i in 0..self.slots.len() {
            let peer = PeerId(i as u8);
            let Some(conn) = self.slots[i].as_mut() else { continue };
            conn.update_rates(now_s);
            if now_s - conn.last_receive_s >= self.config.timeout_s {
                self.close(peer, DisconnectReason::TimedOut, false);
            } else if now_s - conn.last_send_s >= self.config.keepalive_interval_s {
                self.send_connected(now_s, peer, None);
            }
        }
    }

    fn set_guest_state(&mut self, new: GuestState) {
        if let Role::Guest { state, .. } = &mut self.role {
            *state = new;
        }
    }

    /// Processes one received datagram. Anything malformed, unexpected or unauthenticated is counted in `drops`
    /// and changes nothing else.
    pub fn receive(&mut self, now_s: f64, from: SocketAddr, data: &[u8]) {
        let (version, packet) = match read_packet(data) {
            Ok(p) => p,
            Err(_) => {
                self.drops.malformed += 1;
                return;
            }
        };
        match self.role {
            Role::Host => self.host_receive(now_s, from, version, &packet),
            Role::Guest { host, .. } if host == from => self.guest_receive(now_s, version, &packet),
            Role::Guest { .. } => self.drops.unknown_sender += 1,
        }
    }

    /// Token bucket shared by all handshake packets: bounds the host's reply rate under a flood.
    fn take_handshake_token(&mut self, now_s: f64) -> bool {
        let elapsed = (now_s - self.tokens_time_s).max(0.0);
        self.tokens_time_s = now_s;
        self.tokens = (self.tokens + elapsed * self.config.handshake_rate_per_s).min(self.config.handshake_burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.drops.rate_limited += 1;
            false
        }
    }

    fn challenge_for(&self, addr: SocketAddr, salt: u64, bucket: i64) -> u64 {
        let mut h = DefaultHasher::new();
        self.secret.hash(&mut h);
        addr.hash(&mut h);
        salt.hash(&mut h);
        bucket.hash(&mut h);
        h.finish()
    }

    fn challenge_bucket(now_s: f64) -> i64 {
        (now_s / CHALLENGE_BUCKET_S).floor() as i64
    }

    fn find_by_addr(&self, addr: SocketAddr) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|c| c.addr == addr))
    }

    fn host_receive(&mut self, now_s: f64, from: SocketAddr, version: u8, packet: &Packet<'_>) {
        match *packet {
            Packet::Request { client_salt } => {
                if !self.take_handshake_token(now_s) {
                    return;
                }
                if version != self.config.protocol_version {
                    self.drops.wrong_version += 1;
                    let reason = DenyReason::VersionMismatch {
                        host_version: self.config.protocol_version,
                    };
                    self.deny(from, client_salt, reason);
                    return;
                }
                if let Some(i) = self.find_by_addr(from) {
                    self.resend_accept(i, client_salt);
                    return;
                }
                if self.slots.iter().all(Option::is_some) {
                    self.deny(from, client_salt, DenyReason::Full);
                    return;
                }
                let challenge = self.challenge_for(from, client_salt, Self::challenge_bucket(now_s));
                self.emit_packet(from, &Packet::Challenge { client_salt, challenge });
            }
            Packet::Response { client_salt, challenge } => {
                if version != self.config.protocol_version {
                    self.drops.wrong_version += 1;
                    return;
                }
                if !self.take_handshake_token(now_s) {
                    return;
                }
                let bucket = Self::challenge_bucket(now_s);
                let valid = challenge == self.challenge_for(from, client_salt, bucket)
                    || challenge == self.challenge_for(from, client_salt, bucket - 1);
                if !valid {
                    self.drops.bad_challenge += 1;
                    return;
                }
                if let Some(i) = self.find_by_addr(from) {
                    self.resend_accept(i, client_salt);
                    return;
                }
                let Some(i) = self.slots.iter().position(Option::is_none) else {
                    self.deny(from, client_salt, DenyReason::Full);
                    return;
                };
                let session_key = self.rng.next_u32();
                self.slots[i] = Some(Connection::new(from, session_key, client_salt, i as u8, now_s));
                tracing::debug!("guest {from} connected in slot {i}");
                self.resend_accept(i, client_salt);
                self.push_event(EndpointEvent::Connected { peer: PeerId(i as u8) });
            }
            Packet::KeepAlive { header } => self.connected_receive(now_s, from, version, &header, None),
            Packet::Payload { header, payload } => self.connected_receive(now_s, from, version, &header, Some(payload)),
            Packet::Disconnect { session_key, .. } => self.disconnect_receive(from, session_key),
            Packet::Challenge { .. } | Packet::Accepted { .. } | Packet::Denied { .. } => self.drops.unexpected += 1,
        }
    }

    /// Answers a repeated handshake from a connected guest (its accept was lost); a different salt at the same
    /// address is a new guest that must wait for the old connection to time out.
    fn resend_accept(&mut self, slot: usize, client_salt: u64) {
        let Some(conn) = self.slots[slot].as_ref() else { return };
        if conn.client_salt != client_salt {
            self.drops.unexpected += 1;
            return;
        }
        let packet = Packet::Accepted {
            client_salt,
            session_key: conn.session_key,
            peer_index: slot as u8 + 1,
            max_peers: self.slots.len() as u8 + 1,
        };
        let addr = conn.addr;
        self.emit_packet(addr, &packet);
    }

    fn guest_receive(&mut self, now_s: f64, version: u8, packet: &Packet<'_>) {
        let Role::Guest { host, salt, state, .. } = self.role else {
            return;
        };
        let handshaking = matches!(state, GuestState::Requesting | GuestState::Responding { .. });
        match *packet {
            Packet::Denied { client_salt, reason } if handshaking && client_salt == salt => {
                let reason = match reason {
                    DenyReason::Full => ConnectError::Full,
                    DenyReason::VersionMismatch { host_version } => ConnectError::VersionMismatch {
                        host_version,
                        ours: self.config.protocol_version,
                    },
                };
                tracing::warn!("host {host} refused us: {reason}");
                self.set_guest_state(GuestState::Failed);
                self.push_event(EndpointEvent::ConnectFailed { reason });
            }
            _ if version != self.config.protocol_version => self.drops.wrong_version += 1,
            Packet::Challenge { client_salt, challenge } if state == GuestState::Requesting && client_salt == salt => {
                self.set_guest_state(GuestState::Responding { challenge });
                self.emit_packet(
                    host,
                    &Packet::Response {
                        client_salt: salt,
                        challenge,
                    },
                );
                if let Role::Guest { last_handshake_s, .. } = &mut self.role {
                    *last_handshake_s = now_s;
                }
            }
            Packet::Accepted {
                client_salt,
                session_key,
                ..
            } if handshaking && client_salt == salt => {
                self.slots[0] = Some(Connection::new(host, session_key, salt, 0, now_s));
                self.set_guest_state(GuestState::Connected);
                tracing::debug!("connected to host {host}");
                self.push_event(EndpointEvent::Connected { peer: PeerId(0) });
            }
            Packet::KeepAlive { header } => self.connected_receive(now_s, host, version, &header, None),
            Packet::Payload { header, payload } => self.connected_receive(now_s, host, version, &header, Some(payload)),
            Packet::Disconnect { session_key, .. } => self.disconnect_receive(host, session_key),
            _ => self.drops.unexpected += 1,
        }
    }

    fn disconnect_receive(&mut self, from: SocketAddr, session_key: u32) {
        match self.find_by_addr(from) {
            Some(i) if self.slots[i].as_ref().is_some_and(|c| c.session_key == session_key) => {
                self.close(PeerId(i as u8), DisconnectReason::Closed, false)
            }
            _ => self.drops.unknown_sender += 1,
        }
    }

    fn connected_receive(
        &mut self,
        now_s: f64,
        from: SocketAddr,
        version: u8,
        header: &ConnectedHeader,
        payload: Option<&[u8]>,
    ) {
        if version != self.config.protocol_version {
            self.drops.wrong_version += 1;
            return;
        }
        let slot = match self.find_by_addr(from) {
            Some(i)
                if self.slots[i]
                    .as_ref()
                    .is_some_and(|c| c.session_key == header.session_key) =>
            {
                i
            }
            _ => {
                self.drops.unknown_sender += 1;
                return;
            }
        };
        let peer = PeerId(slot as u8);
        let Some(conn) = self.slots[slot].as_mut() else { return };
        match conn.acks.on_receive(now_s, header.sequence) {
            Ok(()) => {}
            Err(crate::ack::ReceiveRefusal::Duplicate) => {
                self.drops.duplicate += 1;
                return;
            }
            Err(crate::ack::ReceiveRefusal::TooOld) => {
                self.drops.too_old += 1;
                return;
            }
        }
        let bytes = crate::packet::CONNECTED_HEADER_BYTES + payload.map_or(0, <[u8]>::len);
        conn.on_received(now_s, bytes);
        let samples = conn.acks.on_acks(now_s, header);
        conn.on_ack_samples(samples);
        self.drain_ack_events(peer);
        if let Some(data) = payload {
            self.push_event(EndpointEvent::Received {
                peer,
                sequence: header.sequence,
                data: data.to_vec(),
            });
        }
    }
}
