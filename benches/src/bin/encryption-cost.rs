//! What sealing every packet costs, for `make bench`: bytes per packet (the sealed header against version 1's
//! unsealed one), microseconds per packet to seal and to open (ChaCha20-Poly1305 at the sizes the game sends, and
//! the whole endpoint path), and the kbps it adds on the loopback run the sync issue sets (table64, a throw every
//! 2 s, 50 ms ± 5 ms each way, 60 s) at 5 % and 25 % loss. Prints one JSON object on stdout and writes
//! `encryption.md` into the output folder. Timings are of this machine, in this run: compare them only with each
//! other.

use std::fmt::Write as _;
use std::hint::black_box;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::json;
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::load_scene;
use tumble_game::run_settings::RunSettings;
use tumble_harness::loopback::{run_loopback_recorded, LoopbackConfig, IP_UDP_HEADER_BYTES};
use tumble_net::crypto::{handshake_in_memory, JoinSecret};
use tumble_net::endpoint::{EndpointEvent, PeerId};
use tumble_net::memory::MemoryNetwork;
use tumble_net::packet::{ACK_FIELDS_BYTES, CONNECTED_HEADER_BYTES, MAX_PAYLOAD_BYTES};
use tumble_net::{Endpoint, EndpointConfig, LinkConfig};

/// Version 1's connected header, unsealed: prefix 4, session key 4, sequence 2, ack 2, ack bits 4, echo 4.
const UNSEALED_HEADER_BYTES: usize = 20;
/// Packets timed per figure.
const ITERATIONS: u32 = 200_000;

#[derive(Parser, Debug)]
#[command(about = "Bytes, microseconds and kbps that packet encryption costs (JSON on stdout)")]
struct Args {
    #[arg(long, default_value = "assets/scenes/table64.toml")]
    scene: PathBuf,
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    #[arg(long, value_delimiter = ',', default_value = "5,25")]
    loss_pct: Vec<f64>,
    /// Folder for encryption.md
    #[arg(long, default_value = "target/bench-report")]
    out: PathBuf,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("encryption-cost: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Mean microseconds of `f` over `ITERATIONS` calls.
fn time_us(mut f: impl FnMut(u64)) -> f64 {
    for i in 0..1000u64 {
        f(i);
    }
    let start = Instant::now();
    for i in 0..ITERATIONS {
        f(u64::from(i) + 1000);
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(ITERATIONS)
}

/// Seal and open of one packet's sealed part (ack fields and `payload` bytes), in µs.
fn seal_open_us(payload: usize) -> Result<(f64, f64)> {
    let (h, g) = handshake_in_memory(&JoinSecret::OPEN).context("keys")?;
    let plain = vec![0x5au8; ACK_FIELDS_BYTES + payload];
    let mut buf = plain.clone();
    let seal = time_us(|counter| {
        buf.copy_from_slice(&plain);
        black_box(g.send.seal(counter, b"clr", &mut buf));
    });
    let mut sealed = plain.clone();
    let tag = g.send.seal(7, b"clr", &mut sealed);
    let open = time_us(|_| {
        buf.copy_from_slice(&sealed);
        assert!(h.receive.open(7, b"clr", &mut buf, black_box(&tag)));
    });
    Ok((seal, open))
}

/// A guest's packet of `payload` bytes through both endpoints (seal, queue, parse, open, acks, delivery), in µs.
fn endpoint_path_us(payload: usize) -> Result<f64> {
    let secret = JoinSecret([1; 10]);
    let config = EndpointConfig {
        join_secret: Some(secret),
        ..EndpointConfig::default()
    };
    let (host_addr, guest_addr): (SocketAddr, SocketAddr) = ("10.0.0.1:1".parse()?, "10.0.0.2:1".parse()?);
    let mut host = Endpoint::host(config.clone(), 0.0)?;
    let mut guest = Endpoint::join(config, host_addr, 0.0)?;
    let mut net = MemoryNetwork::new(LinkConfig::default(), 1);
    let mut t = 0.0;
    while !guest.is_connected() {
        t += 0.01;
        anyhow::ensure!(t < 5.0, "no connection");
        net.pump(t, &mut [(host_addr, &mut host), (guest_addr, &mut guest)]);
    }
    let bytes = vec![0x33u8; payload];
    Ok(time_us(|i| {
        let now = t + i as f64 * 1e-4;
        let seq = guest.send(now, PeerId(0), &bytes).expect("connected");
        if let Some((_, datagram)) = guest.pop_outgoing() {
            host.receive(now, guest_addr, datagram);
        }
        while let Some(e) = host.pop_event() {
            if let EndpointEvent::Received { peer, .. } = e {
                host.accept(peer, seq);
            }
        }
    }))
}

fn run(args: &Args) -> Result<()> {
    let added = CONNECTED_HEADER_BYTES - UNSEALED_HEADER_BYTES;
    let mut md = String::from("# Packet encryption: what it costs\n\n");
    let _ = writeln!(
        md,
        "Connected header: {CONNECTED_HEADER_BYTES} bytes sealed (mark and type 1, sequence 2, sealed ack fields \
         {ACK_FIELDS_BYTES}, tag 16) against {UNSEALED_HEADER_BYTES} unsealed in version 1: **+{added} bytes a \
         packet**, {} with IP and UDP.\n",
        CONNECTED_HEADER_BYTES + IP_UDP_HEADER_BYTES
    );
    let _ = writeln!(md, "| sealed part (ack fields + payload) | seal µs | open µs |");
    let _ = writeln!(md, "|---|---|---|");
    let mut timings = Vec::new();
    for payload in [0usize, 150, MAX_PAYLOAD_BYTES] {
        let (seal, open) = seal_open_us(payload)?;
        let _ = writeln!(md, "| {} bytes | {seal:.3} | {open:.3} |", ACK_FIELDS_BYTES + payload);
        timings.push(json!({ "payload_bytes": payload, "seal_us": seal, "open_us": open }));
    }
    let path_us = endpoint_path_us(150)?;
    let _ = writeln!(
        md,
        "\nA 150-byte payload through both endpoints (seal, parse, open, acks, delivery): {path_us:.3} µs.\n"
    );
    let scene = load_scene(&args.scene)?;
    let _ = writeln!(
        md,
        "## kbps added on {}, a throw every 2 s, 50 ms ± 5 ms each way, {} s\n",
        args.scene.display(),
        args.seconds
    );
    let _ = writeln!(
        md,
        "| loss | packets/s | kbps measured (IP/UDP included) | kbps the seal adds | share |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    let mut runs = Vec::new();
    for &loss in &args.loss_pct {
        let config = LoopbackConfig {
            run: RunSettings::link(args.seconds, 50.0, 5.0, loss),
            throw_every_s: Some(2.0),
            ..LoopbackConfig::default()
        };
        let report = run_loopback_recorded(
            &config,
            scene.build_world(WorldConfig::default())?,
            scene.build_world(WorldConfig::default())?,
            None,
        )?;
        let seconds = (report.steps as f64 / f64::from(tumble_game::STEP_HZ)).max(1e-9);
        let packets_per_s = report.packets_sent as f64 / seconds;
        let kbps_added = packets_per_s * added as f64 * 8.0 / 1000.0;
        let share = kbps_added / report.kbps_mean.max(1e-9);
        let _ = writeln!(
            md,
            "| {loss} % | {packets_per_s:.1} | {:.1} | {kbps_added:.1} | {:.0} % |",
            report.kbps_mean,
            100.0 * share
        );
        runs.push(json!({
            "loss_pct": loss,
            "packets_per_s": packets_per_s,
            "kbps_mean": report.kbps_mean,
            "kbps_added": kbps_added,
        }));
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let md_path = args.out.join("encryption.md");
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    eprint!("{md}");
    eprintln!("written: {}", md_path.display());
    println!(
        "{}",
        json!({
            "header_bytes": CONNECTED_HEADER_BYTES,
            "unsealed_header_bytes": UNSEALED_HEADER_BYTES,
            "bytes_added_per_packet": added,
            "seal_open": timings,
            "endpoint_path_us_150": path_us,
            "table64": runs,
        })
    );
    Ok(())
}
