//! The command lines that play a networked game: `tumble host`, `tumble join ADDR:PORT` and `tumble local
//! --players N`, each in the desktop view; `--headless` (with `--seconds S` for tests and scripts) runs the same
//! game with no window and prints one JSON object at the end.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use tumble_net::crypto::JoinSecret;
use tumble_net::join_code::JoinTarget;
use tumble_net::LinkConfig;

use crate::run_settings::{validate_link, LinkArgs};

use super::mode::{Mode, NetView};
use super::scenes::default_scene;
use super::DesktopError;
use crate::session::net_play::{
    HostOptions, JoinOptions, LocalOptions, NetPlay, NetPlayError, DEFAULT_PORT, PLAY_KBPS_BUDGET,
    PORT_MAPPING_LIFETIME,
};
use crate::session::peer::MAX_PLAYERS;

/// `tumble host`.
#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// Scene file [default: assets/scenes/table64.toml]; guests must load the same one
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// Guest seats filled by bots in this process (builder, thrower, catcher), each on its own UDP socket
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub bots: u8,
    /// UDP port to listen on (0: any free port, printed in the log)
    #[arg(long, value_name = "P", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// No window and no hands: a dedicated host that runs until Ctrl-C
    #[arg(long)]
    pub headless: bool,
    /// With --headless: stop after S seconds and print a JSON summary
    #[arg(long, value_name = "S", requires = "headless")]
    pub seconds: Option<f64>,
    /// Per-connection budget, each direction (kbps, IP/UDP headers included)
    #[arg(long, value_name = "K", default_value_t = PLAY_KBPS_BUDGET)]
    pub kbps_budget: u32,
    /// An open game: no join code, anyone who reaches the port joins with `tumble join ADDR:PORT` (for a LAN;
    /// still encrypted). Without it, players need the join code the host prints and shows
    #[arg(long)]
    pub open: bool,
    /// The address the join code names, when players reach this host at another address than its LAN one (a
    /// public address with the port forwarded); a port of 0 means the port bound
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_host_address)]
    pub public_addr: Option<SocketAddr>,
    /// Do not ask the router to forward the port (PCP, NAT-PMP, UPnP-IGD; asked by default when this machine has a
    /// private address and no --public-addr is given): the join code names the LAN address
    #[arg(long)]
    pub no_port_mapping: bool,
    /// The lifetime asked of the router for the port mapping (s); it is renewed at half of what it grants
    #[arg(long, value_name = "S", hide = true, default_value_t = PORT_MAPPING_LIFETIME.as_secs())]
    pub port_mapping_lifetime: u64,
    /// Close the window after N frames (smoke tests)
    #[arg(long, value_name = "N", hide = true)]
    pub frames: Option<u64>,
}

/// `tumble join`.
#[derive(Args, Debug, Clone)]
pub struct JoinArgs {
    /// The host's join code (as it prints and shows it), or ADDR:PORT of an open game (an IPv4 or [IPv6] address,
    /// or a host name)
    #[arg(value_name = "CODE|ADDR:PORT", value_parser = parse_join_target)]
    pub host: JoinTarget,
    /// Scene file; must be the host's [default: assets/scenes/table64.toml]
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// No window: join, stand idle for --seconds, print a JSON summary (tests and scripts)
    #[arg(long, hide = true, requires = "seconds")]
    pub headless: bool,
    #[arg(long, value_name = "S", hide = true, requires = "headless")]
    pub seconds: Option<f64>,
    /// Per-connection budget, each direction (kbps, IP/UDP headers included)
    #[arg(long, value_name = "K", default_value_t = PLAY_KBPS_BUDGET)]
    pub kbps_budget: u32,
    #[arg(long, value_name = "N", hide = true)]
    pub frames: Option<u64>,
    /// A test hook: say this game protocol version in the hello, as a guest of another build would
    #[arg(long, value_name = "V", hide = true)]
    pub pretend_protocol_version: Option<u16>,
}

/// `tumble local` (link flags mean what they mean for `tumble loopback`: one way, each direction).
#[derive(Args, Debug, Clone)]
pub struct LocalArgs {
    /// Players in this one window, the host included; keys 1–N take over a player's hands
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=MAX_PLAYERS as i64))]
    pub players: u8,
    /// What plays each player while the hands are elsewhere, player 1 (the host) first, comma-separated: builder,
    /// thrower, contender, catcher, idle [default: every player idle]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub bots: Vec<String>,
    /// Scene file [default: assets/scenes/table64.toml]
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// The link: `--link` and the flags that change its parts
    #[command(flatten)]
    pub link: LinkArgs,
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Per-connection budget, each direction (kbps, IP/UDP headers included)
    #[arg(long, value_name = "K", default_value_t = PLAY_KBPS_BUDGET)]
    pub kbps_budget: u32,
    /// No window: the bots play for --seconds (then rest for --settle-s) and a JSON summary is printed
    #[arg(long, requires = "seconds")]
    pub headless: bool,
    #[arg(long, value_name = "S", requires = "headless")]
    pub seconds: Option<f64>,
    /// With --headless: seconds at the end with the bots' hands still, so the worlds can come to rest
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub settle_s: f64,
    #[arg(long, value_name = "N", hide = true)]
    pub frames: Option<u64>,
}

/// `tumble local`'s one-way latency when no link is given (ms): a 100 ms round trip.
pub const LOCAL_LATENCY_MS: f64 = 50.0;

/// A join code, or `ADDR:PORT` of an open game. Codes have neither dots nor colons, addresses and names do.
pub fn parse_join_target(text: &str) -> Result<JoinTarget, String> {
    if text.contains([':', '.']) {
        return parse_host_address(text).map(|addr| JoinTarget {
            host_key: None,
            addr,
            secret: JoinSecret::OPEN,
        });
    }
    tumble_net::join_code::decode(text).map_err(|e| e.to_string())
}

/// `ADDR:PORT` → an address: a literal first, else a name resolved once (the first address it gives).
pub fn parse_host_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let hint = "expected ADDR:PORT, e.g. 192.168.1.20:40000 or [::1]:40000";
    let Some((_, port)) = text.rsplit_once(':') else {
        return Err(format!("'{text}' has no port: {hint}"));
    };
    if port.parse::<u16>().is_err() {
        return Err(format!("'{port}' is not a port (0 to 65535): {hint}"));
    }
    match text.to_socket_addrs() {
        Ok(mut addrs) => addrs.next().ok_or_else(|| format!("'{text}' resolves to no address")),
        Err(e) => Err(format!("'{text}': {e}: {hint}")),
    }
}

/// `tumble local`'s link: `--link` and the link flags, over its own default of 50 ms each way.
fn link(args: &LocalArgs) -> Result<LinkConfig, DesktopError> {
    let link = args.link.config_or(LinkConfig {
        latency_ms: LOCAL_LATENCY_MS,
        ..LinkConfig::default()
    });
    validate_link(&link).map_err(|e| bad(e.to_string()))?;
    Ok(link)
}

fn bad(text: String) -> DesktopError {
    DesktopError::Net(crate::session::net_play::NetPlayError::Bad(text))
}

fn positive(seconds: Option<f64>) -> Result<Option<f64>, DesktopError> {
    match seconds {
        Some(s) if !(s.is_finite() && s > 0.0) => Err(bad(format!("--seconds must be positive (got {s})"))),
        other => Ok(other),
    }
}

impl HostArgs {
    pub fn options(&self) -> HostOptions {
        HostOptions {
            scene: self.scene.clone().unwrap_or_else(default_scene),
            port: self.port,
            bots: usize::from(self.bots),
            playing: !self.headless,
            kbps_budget: self.kbps_budget,
            open: self.open,
            public_addr: self.public_addr,
            port_mapping: !self.no_port_mapping,
            port_mapping_lifetime: std::time::Duration::from_secs(self.port_mapping_lifetime.max(1)),
        }
    }
}

impl LocalArgs {
    pub fn options(&self) -> Result<LocalOptions, DesktopError> {
        Ok(LocalOptions {
            scene: self.scene.clone().unwrap_or_else(default_scene),
            players: usize::from(self.players),
            bots: self.bots.clone(),
            link: link(self)?,
            seed: self.seed,
            kbps_budget: self.kbps_budget,
        })
    }
}

/// `tumble host`: the desktop view, or with `--headless` a dedicated host (JSON at the end with `--seconds`).
pub fn run_host(args: &HostArgs) -> Result<Option<Value>, DesktopError> {
    let seconds = positive(args.seconds)?;
    if args.headless {
        let mut play = NetPlay::host(&args.options())?;
        play.run_headless(seconds)?;
        return Ok(Some(summary(&play)));
    }
    super::run_with(args.frames, || {
        Ok(Mode::Net(Box::new(NetView::start(NetPlay::host(&args.options())?)?)))
    })?;
    Ok(None)
}

/// `tumble join ADDR:PORT`: the desktop view as a guest (or `--headless` for `--seconds`, idle hands).
pub fn run_join(args: &JoinArgs) -> Result<Option<Value>, DesktopError> {
    let seconds = positive(args.seconds)?;
    let options = JoinOptions {
        scene: args.scene.clone().unwrap_or_else(default_scene),
        host: args.host,
        kbps_budget: args.kbps_budget,
        pretend_version: args.pretend_protocol_version,
    };
    if args.headless {
        let mut play = NetPlay::join(&options)?;
        return match play.run_headless(seconds) {
            Ok(()) => Ok(Some(summary(&play))),
            Err(NetPlayError::HostGone(how)) => {
                let mut report = summary(&play);
                report["host_gone"] = json!(how.name());
                Err(DesktopError::HostGone(report))
            }
            Err(e) => Err(e.into()),
        };
    }
    super::run_with(args.frames, || {
        Ok(Mode::Net(Box::new(NetView::start(NetPlay::join(&options)?)?)))
    })?;
    Ok(None)
}

/// `tumble local`: N players in one window (or `--headless`: the bots play, then rest, and the worlds compare).
pub fn run_local(args: &LocalArgs) -> Result<Option<Value>, DesktopError> {
    let options = args.options()?;
    if args.headless {
        let seconds = positive(args.seconds)?.unwrap_or(0.0);
        if !(args.settle_s.is_finite() && args.settle_s >= 0.0) {
            return Err(bad(format!("--settle-s must be 0 or more (got {})", args.settle_s)));
        }
        let mut play = NetPlay::local(&options)?;
        play.run_simulated(seconds, args.settle_s)?;
        return Ok(Some(summary(&play)));
    }
    super::run_with(args.frames, || {
        Ok(Mode::Net(Box::new(NetView::start(NetPlay::local(&options)?)?)))
    })?;
    Ok(None)
}

/// What a headless run ends with: per seat, its player, connections, steps, cubes per authority and counters;
/// and whether every seat's world is the same bits (meaningful where all peers are in this process).
fn summary(play: &NetPlay) -> Value {
    let seats: Vec<Value> = play
        .seats
        .iter()
        .map(|s| {
            let p = &s.peer;
            json!({
                "player": p.player(),
                "connections": p.wire_bytes().count(),
                "steps": p.step_count(),
                "cubes_per_authority": p.table.counts(),
                "grabs": p.stats.grabs,
                "throws": p.stats.throws,
                "corrections": p.stats.corrections,
                "rejected": p.stats.rejected.total(),
            })
        })
        .collect();
    let mapping = play.port_mapping.map(|m| {
        json!({
            "method": m.method.name(),
            "external": m.external.to_string(),
            "local": m.local.to_string(),
            "lifetime_s": m.lifetime.as_secs(),
        })
    });
    json!({
        "role": play.role,
        "port": play.host_port(),
        "join_code": play.join_code,
        "port_mapping": mapping,
        "port_mapping_error": play.port_mapping_error,
        "seats": seats,
        "worlds_identical": play.worlds_identical(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    enum Cli {
        Host(HostArgs),
        Join(JoinArgs),
        Local(LocalArgs),
    }

    fn parse(args: &[&str]) -> Result<Cli, String> {
        Cli::try_parse_from(std::iter::once("tumble").chain(args.iter().copied())).map_err(|e| e.to_string())
    }

    #[test]
    fn good_command_lines_parse() {
        let Cli::Host(h) = parse(&["host", "--bots", "3", "--port", "5000"]).unwrap() else {
            panic!()
        };
        assert_eq!((h.bots, h.port, h.headless), (3, 5000, false));
        assert!(h.options().playing);
        let Cli::Host(h) = parse(&["host", "--headless", "--seconds", "2"]).unwrap() else {
            panic!()
        };
        assert!(!h.options().playing, "a headless host is a dedicated host");
        assert!(
            h.options().port_mapping,
            "a host asks its router for a port mapping by default"
        );
        assert_eq!(h.options().port_mapping_lifetime, PORT_MAPPING_LIFETIME);
        let Cli::Host(h) = parse(&["host", "--open", "--no-port-mapping"]).unwrap() else {
            panic!()
        };
        assert!(!h.options().port_mapping);
        let Cli::Join(j) = parse(&["join", "127.0.0.1:40000"]).unwrap() else {
            panic!()
        };
        assert_eq!(j.host.addr, "127.0.0.1:40000".parse().unwrap());
        assert!(j.host.secret.is_open());
        let Cli::Join(j) = parse(&["join", "[::1]:7"]).unwrap() else {
            panic!()
        };
        assert_eq!(j.host.addr, "[::1]:7".parse().unwrap());
        let secret = JoinSecret([3; 10]);
        let code = tumble_net::join_code::encode("192.168.1.20:40000".parse().unwrap(), &secret, &[5; 10]);
        let Cli::Join(j) = parse(&["join", &code]).unwrap() else {
            panic!()
        };
        assert_eq!(
            (j.host.addr, j.host.secret, j.host.host_key),
            ("192.168.1.20:40000".parse().unwrap(), secret, Some([5; 10]))
        );
        let Cli::Host(h) = parse(&["host", "--open", "--public-addr", "203.0.113.5:40000"]).unwrap() else {
            panic!()
        };
        let o = h.options();
        assert!(o.open && o.public_addr == Some("203.0.113.5:40000".parse().unwrap()));
        let Cli::Local(l) = parse(&["local", "--players", "2", "--bots", "idle,thrower", "--loss-pct", "5"]).unwrap()
        else {
            panic!()
        };
        let o = l.options().unwrap();
        assert_eq!((o.players, o.bots.len(), o.link.loss_pct), (2, 2, 5.0));
    }

    #[test]
    fn bad_command_lines_are_refused_with_a_reason() {
        for (args, says) in [
            (&["join", "10.0.0.1"][..], "has no port"),
            (&["join", "10.0.0.1:99999"], "not a port"),
            (&["join", "10.0.0.1:port"], "not a port"),
            (&["join"], "ADDR:PORT"),
            (&["join", "ABCD-EFGH"], "part of it is missing"),
            (&["join", "hello!"], "neither a join code nor ADDR:PORT"),
            (&["host", "--port", "70000"], "70000"),
            (&["host", "--bots", "4"], "4"),
            (&["host", "--seconds", "3"], "--headless"),
            (&["local", "--players", "5"], "5"),
            (&["local", "--players", "0"], "0"),
        ] {
            let e = parse(args).expect_err(&format!("{args:?} parsed"));
            assert!(e.contains(says), "{args:?}: {e}");
        }
        let Cli::Local(l) = parse(&["local", "--loss-pct", "150"]).unwrap() else {
            panic!()
        };
        let e = l.options().err().unwrap().to_string();
        assert!(e.contains("--loss-pct must be in 0..=100"), "{e}");
        assert!(positive(Some(-1.0)).is_err() && positive(Some(f64::NAN)).is_err());
    }

    #[test]
    fn host_names_resolve_and_literals_need_no_lookup() {
        assert_eq!(parse_host_address("localhost:40000").map(|a| a.port()), Ok(40000));
        assert_eq!(parse_host_address("1.2.3.4:5"), Ok("1.2.3.4:5".parse().unwrap()));
        assert!(parse_host_address("").is_err());
    }
}
