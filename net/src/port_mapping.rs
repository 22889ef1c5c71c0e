//! Asking the home router to forward a UDP port to this machine, so players outside its network reach a host
//! behind it: PCP (RFC 6887) first, then NAT-PMP (RFC 6886), then UPnP-IGD — the order RFC 6886 §1.1 recommends,
//! the newest protocol first.
//!
//! On well-kept crates: `crab_nat` speaks PCP and NAT-PMP (both on the gateway's port 5351; miniupnpd and most
//! routers answer both), `igd-next` speaks UPnP-IGD (SSDP search, then SOAP over HTTP) with its blocking API.
//! `crab_nat` is asynchronous on tokio; it runs here on a current-thread runtime made for each request (the
//! `rt`, `net` and `time` features only: no thread pool), so callers see a blocking API like the rest.
//!
//! [`map_udp`] gives up within [`MappingOptions::timeout`] (3.5 s by default): PCP and NAT-PMP get 0.75 s each
//! (a request and one retry; a router answers in milliseconds), UPnP's search runs alongside them from the start
//! and its mapping request is made only when both have failed. A [`Mapping`] knows its method, its external
//! address and its lifetime; [`Mapping::renew`] and [`Mapping::remove`] talk to the same gateway the same way, and
//! [`Mapping::keep`] hands it to a thread that renews it at half its lifetime and removes it when dropped.
//!
//! [`MappingError`] says what each method answered (no gateway, no answer, refused with its code), so a host can
//! tell its player what to forward by hand. [`is_private`] says whether an address can only be reached inside
//! its own network (RFC 1918, CGNAT, link-local, ULA): a guest whose join to such an address gets no answer is
//! told why.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::num::NonZeroU16;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crab_nat::{GatewayAddress, InternetProtocol, PortMapping, PortMappingOptions, PortMappingType, TimeoutConfig};

/// How a mapping was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Pcp,
    NatPmp,
    UpnpIgd,
}

impl Method {
    /// The name in logs and reports: "pcp", "nat-pmp", "upnp-igd".
    pub fn name(self) -> &'static str {
        match self {
            Method::Pcp => "pcp",
            Method::NatPmp => "nat-pmp",
            Method::UpnpIgd => "upnp-igd",
        }
    }

    /// The protocol's own name, for sentences: "PCP", "NAT-PMP", "UPnP".
    pub fn label(self) -> &'static str {
        match self {
            Method::Pcp => "PCP",
            Method::NatPmp => "NAT-PMP",
            Method::UpnpIgd => "UPnP",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What [`map_udp`] may use.
#[derive(Clone, Debug)]
pub struct MappingOptions {
    /// The whole attempt gives up after this long.
    pub timeout: Duration,
    /// The router to ask (PCP, NAT-PMP); `None`: the default route's gateway.
    pub gateway: Option<Ipv4Addr>,
    /// The methods to try, in this order of preference.
    pub methods: Vec<Method>,
    /// The mapping's description on the router (UPnP shows it in its table).
    pub description: String,
}

impl Default for MappingOptions {
    fn default() -> Self {
        MappingOptions {
            timeout: Duration::from_millis(3500),
            gateway: None,
            methods: vec![Method::Pcp, Method::NatPmp, Method::UpnpIgd],
            description: "Tumble".to_string(),
        }
    }
}

/// Why one method gave no mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MethodError {
    /// No default route, so no router to ask.
    NoGateway,
    /// Nothing answered in time.
    NoAnswer(Duration),
    /// The router answered and said no (its code or words).
    Refused(String),
    /// Anything else (a socket error, a malformed answer).
    Failed(String),
    /// Not tried (the time ran out before its turn, or the caller left it out).
    NotTried(String),
}

impl fmt::Display for MethodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MethodError::NoGateway => f.write_str("no gateway (no default route)"),
            MethodError::NoAnswer(t) => write!(f, "no answer in {:.2} s", t.as_secs_f64()),
            MethodError::Refused(why) => write!(f, "refused: {why}"),
            MethodError::Failed(why) => f.write_str(why),
            MethodError::NotTried(why) => write!(f, "not tried: {why}"),
        }
    }
}

/// Every method tried, and why each failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingError {
    pub attempts: Vec<(Method, MethodError)>,
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (method, why)) in self.attempts.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}: {why}", method.label())?;
        }
        Ok(())
    }
}

impl std::error::Error for MappingError {}

/// What a mapping is, apart from how to talk to its router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappingInfo {
    pub method: Method,
    /// Where the rest of the internet reaches the mapped port.
    pub external: SocketAddr,
    /// This machine's address and port the router forwards to.
    pub local: SocketAddrV4,
    /// What the router granted (0 for a UPnP router that only keeps permanent mappings).
    pub lifetime: Duration,
}

enum Handle {
    /// PCP or NAT-PMP.
    Crab(PortMapping),
    Upnp {
        gateway: Box<igd_next::Gateway>,
        /// The lease asked for (0: permanent).
        lease_s: u32,
    },
}

/// A UDP port mapping on the router.
pub struct Mapping {
    info: MappingInfo,
    handle: Handle,
    granted_at: Instant,
}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapping").field("info", &self.info).finish()
    }
}

/// PCP and NAT-PMP: a request and one retry.
const GATEWAY_TIMEOUTS: TimeoutConfig = TimeoutConfig {
    initial_timeout: Duration::from_millis(250),
    max_retries: 1,
    max_retry_timeout: Some(Duration::from_millis(500)),
};
/// What [`GATEWAY_TIMEOUTS`] add up to.
const GATEWAY_WAIT: Duration = Duration::from_millis(750);
/// A renewal that failed is tried again this much later (or at the next half-lifetime, if sooner).
const RENEW_RETRY: Duration = Duration::from_secs(30);

/// Asks the router to forward UDP `local_port` to this machine for `lifetime` (the router may grant another).
/// Tries `options.methods` in order and returns the first mapping made, or every method's failure.
pub fn map_udp(local_port: u16, lifetime: Duration, options: &MappingOptions) -> Result<Mapping, MappingError> {
    let started = Instant::now();
    let deadline = started + options.timeout;
    let lifetime_s = lifetime.as_secs().clamp(1, u64::from(u32::MAX)) as u32;
    let mut attempts = Vec::new();
    let Some(port) = NonZeroU16::new(local_port) else {
        let why = MethodError::Failed("port 0 cannot be mapped".into());
        return Err(MappingError {
            attempts: options.methods.iter().map(|&m| (m, why.clone())).collect(),
        });
    };
    let gateway = options.gateway.or_else(default_gateway);
    // UPnP's search has no side effects: it runs from the start, alongside PCP and NAT-PMP.
    let upnp = options.methods.contains(&Method::UpnpIgd).then(|| {
        UpnpAttempt::start(
            local_port,
            lifetime_s,
            options.description.clone(),
            deadline.saturating_duration_since(Instant::now()),
        )
    });
    for &method in &options.methods {
        let result = match method {
            Method::Pcp | Method::NatPmp => {
                let Some(gateway) = gateway else {
                    attempts.push((method, MethodError::NoGateway));
                    continue;
                };
                if Instant::now() + GATEWAY_WAIT > deadline {
                    attempts.push((method, MethodError::NotTried("out of time".into())));
                    continue;
                }
                map_on_gateway(method, gateway, port, lifetime_s)
            }
            Method::UpnpIgd => match &upnp {
                Some(attempt) => attempt.finish(deadline),
                None => continue,
            },
        };
        match result {
            Ok(mapping) => {
                if let Some(attempt) = &upnp {
                    attempt.cancel();
                }
                tracing::debug!(method = %mapping.info.method, elapsed_ms = started.elapsed().as_millis() as u64, "port mapped");
                return Ok(mapping);
            }
            Err(e) => attempts.push((method, e)),
        }
    }
    Err(MappingError { attempts })
}

impl Mapping {
    pub fn info(&self) -> MappingInfo {
        self.info
    }

    pub fn method(&self) -> Method {
        self.info.method
    }

    pub fn external(&self) -> SocketAddr {
        self.info.external
    }

    pub fn lifetime(&self) -> Duration {
        self.info.lifetime
    }

    /// When to renew: half the lifetime after it was granted (never, for a permanent UPnP mapping).
    pub fn renew_at(&self) -> Option<Instant> {
        (!self.info.lifetime.is_zero()).then(|| self.granted_at + self.info.lifetime / 2)
    }

    /// Asks the router again, for the same external port and lifetime.
    pub fn renew(&mut self) -> Result<(), MethodError> {
        match &mut self.handle {
            Handle::Crab(mapping) => {
                block_on(mapping.renew())?.map_err(|e| crab_error(&e))?;
                let (external, lifetime) = crab_external(mapping, self.info.external.ip())?;
                self.info.external = external;
                self.info.lifetime = lifetime;
            }
            Handle::Upnp { gateway, lease_s } => {
                gateway
                    .add_port(
                        igd_next::PortMappingProtocol::UDP,
                        self.info.external.port(),
                        SocketAddr::V4(self.info.local),
                        *lease_s,
                        "Tumble",
                    )
                    .map_err(|e| upnp_add_error(&e))?;
            }
        }
        self.granted_at = Instant::now();
        Ok(())
    }

    /// Asks the router to drop the mapping.
    pub fn remove(self) -> Result<(), MethodError> {
        match self.handle {
            Handle::Crab(mapping) => block_on(mapping.try_drop())?.map_err(|(e, _)| crab_error(&e)),
            Handle::Upnp { gateway, .. } => gateway
                .remove_port(igd_next::PortMappingProtocol::UDP, self.info.external.port())
                .map_err(|e| MethodError::Failed(e.to_string())),
        }
    }

    /// A thread keeps the mapping: renews it at half its lifetime (a failed renewal is logged and tried again
    /// within [`RENEW_RETRY`]) and removes it when the [`KeptMapping`] is dropped.
    pub fn keep(self) -> KeptMapping {
        let info = self.info;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("port-mapping".into())
            .spawn(move || keep_renewed(self, &stopped))
            .map_err(|e| tracing::warn!("no thread to renew the port mapping: {e}"))
            .ok();
        KeptMapping {
            info,
            stop: Some(stop),
            thread,
        }
    }
}

fn keep_renewed(mut mapping: Mapping, stopped: &mpsc::Receiver<()>) {
    let mut next = mapping.renew_at();
    loop {
        let wait = next.map(|t| t.saturating_duration_since(Instant::now()));
        let stop = match wait {
            Some(wait) => !matches!(stopped.recv_timeout(wait), Err(mpsc::RecvTimeoutError::Timeout)),
            None => {
                let _ = stopped.recv();
                true
            }
        };
        if stop {
            let (method, external) = (mapping.method(), mapping.external());
            match mapping.remove() {
                Ok(()) => tracing::info!(%method, %external, "port mapping removed"),
                Err(e) => tracing::warn!(%method, %external, "could not remove the port mapping: {e}"),
            }
            return;
        }
        match mapping.renew() {
            Ok(()) => {
                tracing::info!(method = %mapping.method(), external = %mapping.external(), lifetime_s = mapping.lifetime().as_secs(), "port mapping renewed");
                next = mapping.renew_at();
            }
            Err(e) => {
                tracing::warn!(method = %mapping.method(), "could not renew the port mapping: {e}");
                let half = mapping.lifetime() / 2;
                next = Some(Instant::now() + RENEW_RETRY.min(half.max(Duration::from_secs(1))));
            }
        }
    }
}

/// A mapping a thread renews; dropping it removes the mapping (waiting at most for the router's answer).
pub struct KeptMapping {
    info: MappingInfo,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl KeptMapping {
    pub fn info(&self) -> MappingInfo {
        self.info
    }
}

impl Drop for KeptMapping {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `future` on a current-thread runtime made for it; a runtime that cannot be made (no epoll instance or timer
/// left to this process) is the method's failure, not a panic.
fn block_on<F: std::future::Future>(future: F) -> Result<F::Output, MethodError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| MethodError::Failed(format!("no async runtime for the request: {e}")))?;
    Ok(runtime.block_on(future))
}

/// PCP or NAT-PMP on `gateway`'s port 5351.
fn map_on_gateway(
    method: Method,
    gateway: Ipv4Addr,
    port: NonZeroU16,
    lifetime_s: u32,
) -> Result<Mapping, MethodError> {
    let local_ip = local_address_towards(IpAddr::V4(gateway)).map_err(|e| MethodError::Failed(e.to_string()))?;
    let options = PortMappingOptions {
        external_port: Some(port),
        lifetime_seconds: Some(lifetime_s),
        timeout_config: Some(GATEWAY_TIMEOUTS),
    };
    let gw = GatewayAddress::IpV4(gateway);
    let mapping = match method {
        Method::Pcp => block_on(crab_nat::pcp::port_mapping(
            crab_nat::pcp::BaseMapRequest::new(gw, IpAddr::V4(local_ip), InternetProtocol::Udp, port),
            None,
            None,
            options,
        ))?
        .map_err(|e| crab_error(&crab_nat::MappingFailure::Pcp(e)))?,
        _ => block_on(crab_nat::natpmp::port_mapping(gw, InternetProtocol::Udp, port, options))?
            .map_err(|e| crab_error(&crab_nat::MappingFailure::NatPmp(e)))?,
    };
    let external_ip = match mapping.mapping_type() {
        PortMappingType::Pcp { external_ip, .. } => external_ip,
        PortMappingType::NatPmp => IpAddr::V4(
            block_on(crab_nat::natpmp::external_address(gw, Some(GATEWAY_TIMEOUTS)))?
                .map_err(|e| crab_error(&crab_nat::MappingFailure::NatPmp(e)))?,
        ),
    };
    let (external, lifetime) = crab_external(&mapping, external_ip)?;
    Ok(Mapping {
        info: MappingInfo {
            method,
            external,
            local: SocketAddrV4::new(local_ip, port.get()),
            lifetime,
        },
        handle: Handle::Crab(mapping),
        granted_at: Instant::now(),
    })
}

/// The external address and lifetime of a PCP or NAT-PMP mapping (`ip`: the external address when the mapping
/// does not carry it, NAT-PMP's).
fn crab_external(mapping: &PortMapping, ip: IpAddr) -> Result<(SocketAddr, Duration), MethodError> {
    let ip = match mapping.mapping_type() {
        PortMappingType::Pcp { external_ip, .. } => external_ip,
        PortMappingType::NatPmp => ip,
    };
    // PCP carries IPv4 as an IPv4-mapped IPv6 address.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    if mapping.lifetime() == 0 {
        return Err(MethodError::Refused("the router granted a lifetime of 0 s".into()));
    }
    Ok((
        SocketAddr::new(ip, mapping.external_port().get()),
        Duration::from_secs(u64::from(mapping.lifetime())),
    ))
}

fn crab_error(e: &crab_nat::MappingFailure) -> MethodError {
    use crab_nat::{natpmp, pcp, MappingFailure};
    let refused = |what: &str| MethodError::Refused(what.to_string());
    match e {
        MappingFailure::Pcp(pcp::Failure::Timeout) | MappingFailure::NatPmp(natpmp::Failure::Timeout) => {
            MethodError::NoAnswer(GATEWAY_WAIT)
        }
        MappingFailure::Pcp(pcp::Failure::Socket(io)) | MappingFailure::NatPmp(natpmp::Failure::Socket(io))
            if io.kind() == std::io::ErrorKind::ConnectionRefused =>
        {
            MethodError::Failed("the router's port 5351 is closed".into())
        }
        MappingFailure::Pcp(pcp::Failure::UnsupportedVersion(v)) => {
            refused(&format!("unsupported version (the router speaks {v})"))
        }
        MappingFailure::Pcp(pcp::Failure::NotAuthorized(_)) => refused("not authorized (code 2)"),
        MappingFailure::NatPmp(natpmp::Failure::NotAuthorized) => refused("not authorized (code 2)"),
        MappingFailure::NatPmp(natpmp::Failure::NetworkFailure) => refused("network failure (code 3)"),
        MappingFailure::NatPmp(natpmp::Failure::OutOfResources) => refused("out of resources (code 4)"),
        MappingFailure::NatPmp(natpmp::Failure::UnsupportedVersion(_)) => refused("unsupported version (code 1)"),
        MappingFailure::NatPmp(natpmp::Failure::UnsupportedOpcode) => refused("unsupported opcode (code 5)"),
        MappingFailure::Pcp(other) if other.to_string().starts_with("Server responded") => MethodError::Refused(
            other
                .to_string()
                .trim_start_matches("Server responded with code: ")
                .to_string(),
        ),
        other => MethodError::Failed(other.to_string()),
    }
}

/// UPnP-IGD on its own thread: the search at once; the mapping only when asked ([`UpnpAttempt::finish`]). A
/// mapping made after the caller stopped waiting is removed at once.
struct UpnpAttempt {
    go: mpsc::Sender<bool>,
    result: mpsc::Receiver<Result<Mapping, MethodError>>,
}

impl UpnpAttempt {
    fn start(local_port: u16, lease_s: u32, description: String, search_for: Duration) -> UpnpAttempt {
        let (go, go_rx) = mpsc::channel::<bool>();
        let (result_tx, result) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("upnp-igd".into()).spawn(move || {
            let gateway = upnp_search(search_for);
            if !go_rx.recv().unwrap_or(false) {
                return;
            }
            let mapped = gateway.and_then(|g| upnp_map(g, local_port, lease_s, &description));
            if let Err(mpsc::SendError(Ok(late))) = result_tx.send(mapped) {
                let _ = late.remove();
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("no thread for UPnP: {e}");
        }
        UpnpAttempt { go, result }
    }

    fn finish(&self, deadline: Instant) -> Result<Mapping, MethodError> {
        let _ = self.go.send(true);
        let left = deadline.saturating_duration_since(Instant::now());
        match self.result.recv_timeout(left) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(MethodError::NoAnswer(left)),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(MethodError::Failed("the UPnP thread ended".into())),
        }
    }

    fn cancel(&self) {
        let _ = self.go.send(false);
    }
}

fn upnp_search(timeout: Duration) -> Result<igd_next::Gateway, MethodError> {
    let mut options = igd_next::SearchOptions::default();
    options.timeout = Some(timeout);
    options.single_search_timeout = Some(timeout);
    options.gateway_ip_version = igd_next::GatewayIpVersion::V4;
    igd_next::search_gateway(options).map_err(|e| match e {
        igd_next::SearchError::IoError(io)
            if matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
        {
            MethodError::NoAnswer(timeout)
        }
        igd_next::SearchError::IoError(io) if io.kind() == std::io::ErrorKind::NetworkUnreachable => {
            MethodError::NoGateway
        }
        other => MethodError::Failed(format!("search: {other}")),
    })
}

fn upnp_map(
    gateway: igd_next::Gateway,
    local_port: u16,
    lease_s: u32,
    description: &str,
) -> Result<Mapping, MethodError> {
    let local_ip = match local_address_towards(gateway.addr.ip()) {
        Ok(ip) => ip,
        Err(e) => return Err(MethodError::Failed(e.to_string())),
    };
    let local = SocketAddrV4::new(local_ip, local_port);
    let udp = igd_next::PortMappingProtocol::UDP;
    let mut lease_s = lease_s;
    let mut added = gateway.add_port(udp, local_port, SocketAddr::V4(local), lease_s, description);
    if matches!(added, Err(igd_next::AddPortError::OnlyPermanentLeasesSupported)) {
        lease_s = 0;
        added = gateway.add_port(udp, local_port, SocketAddr::V4(local), lease_s, description);
    }
    let external_port = match added {
        Ok(()) => local_port,
        Err(igd_next::AddPortError::PortInUse) => gateway
            .add_any_port(udp, SocketAddr::V4(local), lease_s, description)
            .map_err(|e| MethodError::Refused(e.to_string()))?,
        Err(e) => return Err(upnp_add_error(&e)),
    };
    let external_ip = match gateway.get_external_ip() {
        Ok(ip) => ip,
        Err(e) => {
            let _ = gateway.remove_port(udp, external_port);
            return Err(MethodError::Failed(format!("mapped, but no external address: {e}")));
        }
    };
    Ok(Mapping {
        info: MappingInfo {
            method: Method::UpnpIgd,
            external: SocketAddr::new(external_ip, external_port),
            local,
            lifetime: Duration::from_secs(u64::from(lease_s)),
        },
        handle: Handle::Upnp {
            gateway: Box::new(gateway),
            lease_s,
        },
        granted_at: Instant::now(),
    })
}

fn upnp_add_error(e: &igd_next::AddPortError) -> MethodError {
    use igd_next::{AddPortError, RequestError};
    // igd-next turns the UPnP error codes it knows into variants: named here with their codes again.
    let refused = |what: &str, code: u16| MethodError::Refused(format!("{what} (code {code})"));
    match e {
        AddPortError::ActionNotAuthorized => refused("not authorized", 606),
        AddPortError::PortInUse => refused("the port is mapped to another machine", 718),
        AddPortError::SamePortValuesRequired => refused("external and internal ports must be the same", 724),
        AddPortError::OnlyPermanentLeasesSupported => refused("only permanent leases", 725),
        AddPortError::RequestError(RequestError::ErrorCode(code, text)) => refused(text, *code),
        AddPortError::RequestError(other) => MethodError::Failed(other.to_string()),
        other => MethodError::Refused(other.to_string()),
    }
}

/// The address this machine sends from towards `to` (a UDP "connect" sends nothing).
fn local_address_towards(to: IpAddr) -> std::io::Result<Ipv4Addr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    socket.connect((to, crab_nat::GATEWAY_PORT))?;
    match socket.local_addr()?.ip() {
        IpAddr::V4(v4) => Ok(v4),
        IpAddr::V6(v6) => Err(std::io::Error::other(format!("an IPv6 source address {v6}"))),
    }
}

/// The IPv4 default route's gateway (Linux: `/proc/net/route`); `None` without one.
pub fn default_gateway() -> Option<Ipv4Addr> {
    std::fs::read_to_string("/proc/net/route")
        .ok()
        .and_then(|table| parse_default_gateway(&table))
}

/// The default route's gateway in a `/proc/net/route` table: the first row with destination and mask 0 and the
/// gateway flag (0x2), the lowest metric first. Addresses there are hexadecimal in the machine's byte order.
pub fn parse_default_gateway(table: &str) -> Option<Ipv4Addr> {
    const RTF_UP: u32 = 0x1;
    const RTF_GATEWAY: u32 = 0x2;
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 {
                return None;
            }
            let (dest, gateway, flags, metric, mask) = (
                hex(f[1])?,
                hex(f[2])?,
                hex(f[3])?,
                f[6].parse::<u32>().ok()?,
                hex(f[7])?,
            );
            let default = dest == 0 && mask == 0 && flags & (RTF_UP | RTF_GATEWAY) == RTF_UP | RTF_GATEWAY;
            (default && gateway != 0).then(|| (metric, Ipv4Addr::from(gateway.to_ne_bytes())))
        })
        .min_by_key(|(metric, _)| *metric)
        .map(|(_, gateway)| gateway)
}

/// Whether `ip` is reachable only inside its own network, so a player elsewhere cannot reach it: RFC 1918
/// (10/8, 172.16/12, 192.168/16), shared address space for carrier-grade NAT (100.64/10), link-local
/// (169.254/16, fe80::/10) and unique local IPv6 (fc00::/7); an IPv4-mapped IPv6 address as its IPv4 one.
/// Loopback and public addresses are not.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private() || v4.is_link_local() || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_the_ones_only_their_own_network_reaches() {
        for private in [
            "10.0.0.2",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.254",
            "192.168.77.2",
            "169.254.10.1",
            "100.64.0.1",
            "100.127.255.254",
            "fd12:3456::1",
            "fc00::1",
            "fe80::1",
            "::ffff:192.168.1.5",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private} is private");
        }
        for public in [
            "203.0.113.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "192.169.0.1",
            "127.0.0.1",
            "::1",
            "2001:db8::1",
            "fec0::1",
            "::ffff:203.0.113.9",
        ] {
            assert!(!is_private(public.parse().unwrap()), "{public} is not private");
        }
    }

    #[test]
    fn the_default_gateway_comes_from_the_route_table() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                     wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n\
                     eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
        let expected = if cfg!(target_endian = "little") {
            Ipv4Addr::new(192, 0, 2, 1)
        } else {
            Ipv4Addr::new(1, 2, 0, 192)
        };
        assert_eq!(parse_default_gateway(table), Some(expected), "the lowest metric wins");
        let no_default = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n\
                          eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\n";
        assert_eq!(parse_default_gateway(no_default), None);
        let down = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n\
                    eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\n";
        assert_eq!(parse_default_gateway(down), None, "a route that is not up");
        assert_eq!(parse_default_gateway("garbage\nnot a table at all\n"), None);
    }

    #[test]
    fn a_mapping_error_names_every_method_and_why() {
        let e = MappingError {
            attempts: vec![
                (Method::Pcp, MethodError::NoAnswer(Duration::from_millis(750))),
                (Method::NatPmp, MethodError::Refused("not authorized (code 2)".into())),
                (Method::UpnpIgd, MethodError::NoGateway),
            ],
        };
        assert_eq!(
            e.to_string(),
            "PCP: no answer in 0.75 s, NAT-PMP: refused: not authorized (code 2), UPnP: no gateway (no default route)"
        );
    }

    #[test]
    fn port_zero_is_refused_without_asking_anyone() {
        let started = Instant::now();
        let e = map_udp(0, Duration::from_secs(60), &MappingOptions::default()).unwrap_err();
        assert_eq!(e.attempts.len(), 3);
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn a_silent_gateway_is_given_up_on_in_time() {
        // 192.0.2.1 (TEST-NET-1) answers nobody: PCP and NAT-PMP time out or find the port closed; UPnP is left
        // out (its search goes to the LAN's multicast group, whatever is there).
        let options = MappingOptions {
            timeout: Duration::from_millis(2000),
            gateway: Some(Ipv4Addr::new(192, 0, 2, 1)),
            methods: vec![Method::Pcp, Method::NatPmp],
            ..MappingOptions::default()
        };
        let started = Instant::now();
        let e = map_udp(40_000, Duration::from_secs(60), &options).unwrap_err();
        eprintln!("{e}");
        assert!(
            started.elapsed() < Duration::from_millis(2100),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(e.attempts.len(), 2, "{e}");
        assert!(e.to_string().starts_with("PCP: "), "{e}");
    }
}
