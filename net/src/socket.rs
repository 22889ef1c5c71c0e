//! The UDP socket: non-blocking, driven by `mio::Poll`, IPv4 or IPv6. It moves datagrams between the socket and an
//! `Endpoint`, optionally through a `LinkSim` on the sending side (the simulated delay, loss and duplicates then
//! apply to real traffic).

use crate::endpoint::Endpoint;
use crate::link_sim::LinkSim;
use crate::packet::MAX_PACKET_BYTES;
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use thiserror::Error;

const SOCKET_TOKEN: Token = Token(0);
/// What IPv4 (20) and UDP (8) add to every datagram on the wire.
pub const IPV4_UDP_HEADER_BYTES: usize = 28;
/// What IPv6 (40) and UDP (8) add to every datagram on the wire.
pub const IPV6_UDP_HEADER_BYTES: usize = 48;

/// The IP and UDP header bytes of a datagram to or from `peer` (an IPv4-mapped IPv6 address travels as IPv4).
pub fn ip_udp_header_bytes(peer: SocketAddr) -> usize {
    match peer.ip() {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => IPV6_UDP_HEADER_BYTES,
        _ => IPV4_UDP_HEADER_BYTES,
    }
}
/// Receive buffer: larger than any valid packet, so an oversize datagram shows up as oversize and is dropped.
const RECEIVE_BUFFER_BYTES: usize = 2048;

/// Socket failures, each naming the address involved.
#[derive(Debug, Error)]
pub enum SocketError {
    #[error("address {0} is already in use")]
    AddrInUse(SocketAddr),
    #[error("cannot bind {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("cannot send to {to}: {source}")]
    Send { to: SocketAddr, source: io::Error },
    #[error("{to} is unreachable from a socket bound to {local}")]
    Unreachable { to: SocketAddr, local: SocketAddr },
    #[error("socket receive failed: {0}")]
    Receive(io::Error),
    #[error("poll failed: {0}")]
    Poll(io::Error),
}

/// Datagrams one [`UdpTransport::receive_into`] hands over: some 90,000 a second at 90 ticks, far above any game's
/// traffic, and a bound on the time a flood can take from a tick.
pub const MAX_DATAGRAMS_PER_RECEIVE: usize = 1024;

/// One bound UDP socket and its poller.
#[derive(Debug)]
pub struct UdpTransport {
    socket: UdpSocket,
    poll: Poll,
    events: Events,
    local: SocketAddr,
    buf: Vec<u8>,
    /// Datagrams the kernel refused for lack of buffer space (would block): UDP, so they count as lost.
    pub send_would_block: u64,
    /// ICMP errors reported by the kernel on receive (e.g. a peer's port closed); not fatal for a UDP server.
    pub receive_errors: u64,
    /// Datagrams the socket refused with an error (an unreachable or invalid destination); dropped and counted.
    pub send_errors: u64,
}

impl UdpTransport {
    /// Binds `addr` (port 0 picks a free port; see `local_addr`).
    pub fn bind(addr: SocketAddr) -> Result<Self, SocketError> {
        let mut socket = UdpSocket::bind(addr).map_err(|source| match source.kind() {
            io::ErrorKind::AddrInUse => SocketError::AddrInUse(addr),
            _ => SocketError::Bind { addr, source },
        })?;
        let local = socket
            .local_addr()
            .map_err(|source| SocketError::Bind { addr, source })?;
        let poll = Poll::new().map_err(SocketError::Poll)?;
        poll.registry()
            .register(&mut socket, SOCKET_TOKEN, Interest::READABLE)
            .map_err(SocketError::Poll)?;
        Ok(UdpTransport {
            socket,
            poll,
            events: Events::with_capacity(16),
            local,
            buf: vec![0; RECEIVE_BUFFER_BYTES],
            send_would_block: 0,
            receive_errors: 0,
            send_errors: 0,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Sends one datagram. A destination of the other address family, an unspecified address or port 0 is a clear
    /// error; a full kernel buffer is counted and the datagram dropped, as UDP would.
    pub fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> Result<(), SocketError> {
        let unreachable = to.port() == 0
            || to.ip().is_unspecified()
            || (to.is_ipv4() != self.local.is_ipv4() && !Self::mapped(to, self.local));
        if unreachable {
            return Err(SocketError::Unreachable { to, local: self.local });
        }
        debug_assert!(bytes.len() <= MAX_PACKET_BYTES);
        match self.socket.send_to(bytes, to) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.send_would_block += 1;
                Ok(())
            }
            Err(source) => Err(SocketError::Send { to, source }),
        }
    }

    /// An IPv6 socket can reach IPv4 peers through mapped addresses; an IPv4 socket can't reach IPv6.
    fn mapped(to: SocketAddr, local: SocketAddr) -> bool {
        to.is_ipv4() && local.is_ipv6()
    }

    /// Waits until the socket is readable or `timeout` passes.
    pub fn wait(&mut self, timeout: Duration) -> Result<(), SocketError> {
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(SocketError::Poll(e)),
        }
    }

    /// Hands the datagrams waiting in the socket to `endpoint`, at most [`MAX_DATAGRAMS_PER_RECEIVE`]: a flood
    /// can not stall a tick; the rest waits in the socket for the next call (every caller reads every tick, or
    /// after a bounded wait, so mio's edge-triggered readiness loses nothing).
    pub fn receive_into(&mut self, now_s: f64, endpoint: &mut Endpoint) -> Result<usize, SocketError> {
        self.receive_at_most(now_s, endpoint, MAX_DATAGRAMS_PER_RECEIVE)
    }

    /// [`UdpTransport::receive_into`] with another bound (`max` datagrams).
    pub fn receive_at_most(&mut self, now_s: f64, endpoint: &mut Endpoint, max: usize) -> Result<usize, SocketError> {
        let mut count = 0;
        while count < max {
            match self.socket.recv_from(&mut self.buf) {
                Ok((n, from)) => {
                    endpoint.receive(now_s, from, &self.buf[..n]);
                    count += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(count),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    self.receive_errors += 1;
                }
                Err(e) => return Err(SocketError::Receive(e)),
            }
        }
        Ok(count)
    }

    /// Sends what `endpoint` queued, through `link` when given (then only what the link has delivered by `now_s`
    /// reaches the socket; call again later for the rest). A datagram the socket refuses is counted in
    /// `send_errors` (the first error of a flush is logged) and the flush goes on: UDP, so it counts as lost.
    pub fn flush(&mut self, now_s: f64, endpoint: &mut Endpoint, link: Option<&mut LinkSim>) {
        let mut first_error = None;
        match link {
            None => {
                while let Some((to, bytes)) = endpoint.pop_outgoing() {
                    if let Err(e) = self.send_to(to, bytes) {
                        self.send_errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
            Some(link) => {
                while let Some((to, bytes)) = endpoint.pop_outgoing() {
                    link.send(now_s, self.local, to, bytes);
                }
                while let Some(d) = link.pop_ready(now_s) {
                    if let Err(e) = self.send_to(d.to, d.bytes) {
                        self.send_errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(e) = first_error {
            tracing::warn!("a datagram was not sent ({} so far): {e}", self.send_errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_and_udp_headers_are_counted_by_family() {
        assert_eq!(ip_udp_header_bytes("10.0.0.1:5".parse().unwrap()), 28);
        assert_eq!(ip_udp_header_bytes("[2001:db8::1]:5".parse().unwrap()), 48);
        // An IPv4 peer reached through an IPv6 socket travels as IPv4.
        assert_eq!(ip_udp_header_bytes("[::ffff:10.0.0.1]:5".parse().unwrap()), 28);
    }
}
