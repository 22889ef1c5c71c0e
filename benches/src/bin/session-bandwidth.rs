//! The four-player bandwidth table for `make bench`: a session of four bots (builder, thrower, contender, catcher)
//! on table64, 50 ms each way with ±10 ms jitter and 1 % duplicates, at 5 % and 25 % loss and 90, 45 and 30 packets
//! a second, in one process on the
//! simulated clock. For every connection and direction: cube state, avatars (with the cubes in their hands), the
//! rest of the message headers (step, welcome) and the rest of the wire (transport header, acks, keep-alives, IP/UDP), in kbps. Prints one JSON object on stdout and
//! writes `session-bandwidth.md` into the output folder, with the demand (what each connection would send with no
//! budget) and what every screen drew against the truth (`harness::drawn`).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use serde_json::json;
use tumble_game::run_settings::RunSettings;
use tumble_harness::session::run_session;
use tumble_harness::session::SessionConfig;
use tumble_harness::session_cli::{make_driver, world_maker};
use tumble_net::LinkConfig;

#[derive(Parser, Debug)]
#[command(about = "Four-player session bandwidth per connection and direction (JSON on stdout)")]
struct Args {
    #[arg(long, default_value = "assets/scenes/table64.toml")]
    scene: PathBuf,
    /// Simulated seconds per run
    #[arg(long, default_value_t = 120.0)]
    seconds: f64,
    /// Loss rates to run (percent, each direction)
    #[arg(long, value_delimiter = ',', default_value = "5,25")]
    loss_pct: Vec<f64>,
    /// Packets a second on each connection to run (divisors of 90)
    #[arg(long, value_delimiter = ',', default_value = "90,45,30")]
    packets_per_s: Vec<u32>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for session-bandwidth.md
    #[arg(long, default_value = "target/bench-report")]
    out: PathBuf,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("session-bandwidth: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let seats = ["builder", "thrower", "contender", "catcher"];
    let mut md = String::from("# Four players: bandwidth per connection and direction (kbps)\n\n");
    let mut runs = Vec::new();
    for (&loss, &pps) in args
        .loss_pct
        .iter()
        .flat_map(|l| args.packets_per_s.iter().map(move |p| (l, p)))
    {
        if pps == 0 || !tumble_game::STEP_HZ.is_multiple_of(pps) {
            anyhow::bail!("--packets-per-s {pps} does not divide 90");
        }
        let config = SessionConfig {
            run: RunSettings {
                seconds: args.seconds,
                seed: args.seed,
                link: LinkConfig {
                    latency_ms: 50.0,
                    jitter_ms: 10.0,
                    loss_pct: loss,
                    duplicate_pct: 1.0,
                    ..SessionConfig::default().run.link
                },
            },
            send_every_steps: tumble_game::STEP_HZ / pps,
            players: 4,
            ..SessionConfig::default()
        };
        let mut drivers = seats
            .iter()
            .enumerate()
            .map(|(i, name)| make_driver(name, i as u8 + 1, args.seed.wrapping_add(i as u64)))
            .collect::<Result<Vec<_>>>()?;
        let report = run_session(config, world_maker(&args.scene)?, &mut drivers)?;
        let j = report.to_json();
        let figure = |k: &str| j[k].as_f64().map_or("—".to_string(), |v| format!("{v:.4}"));
        let _ = writeln!(
            md,
            "## {loss} % loss, {pps} packets a second, 100 ms round trip ±10 ms, 1 % duplicates, {} s\n\nBudget {} kbps \
             per connection and direction; worst connection mean {:.1} kbps (p95 of seconds {:.1}), demand with no \
             budget {:.1} (p95 of seconds {}); host up {:.1}. Avatars alone on the worst connection: {:.1} kbps. \
             Bit-identical at the end: {}; lost commits {}; {} grabs, {} throws, {} conflicts. Drawn against the truth: \
             visible jump max {} m (p99 {}), late visible jump max {} m (p99 {}), drawn error resting max {} m, moving p99 {} m; avatar delay p99 {} ms, \
             avatar error p99 {} m.\n",
            args.seconds,
            report.kbps_budget,
            report.kbps_per_connection_mean_max,
            report.kbps_per_connection_p95_max,
            report.kbps_demand_mean_max,
            j["kbps_demand_per_connection_p95_max"]
                .as_f64()
                .map_or("—".to_string(), |v| format!("{v:.1}")),
            report.host_kbps_up_mean,
            report.kbps_avatars_per_connection_mean_max,
            report.bit_identical_at_end,
            report.lost_commits,
            report.grabs,
            report.throws,
            report.conflicts,
            figure("visible_jump_m_max"),
            figure("visible_jump_m_p99"),
            figure("visible_jump_late_m_max"),
            figure("visible_jump_late_m_p99"),
            figure("drawn_error_m_max_resting"),
            figure("drawn_error_m_p99_moving"),
            figure("avatar_delay_ms_p99"),
            figure("avatar_error_m_p99"),
        );
        md +=
            "| from → to | cube state | avatars (held cubes in them) | rest of header | transport + IP/UDP | total |\n\
               |---|---|---|---|---|---|\n";
        for c in &report.connections {
            let _ = writeln!(
                md,
                "| {} → {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                c.from,
                c.to,
                c.cubes,
                c.avatars,
                c.header,
                c.rest,
                c.total()
            );
        }
        md += "\n";
        let connections: Vec<_> = report.connections.iter().map(|c| c.to_json()).collect();
        runs.push(json!({ "loss_pct": loss, "packets_per_s": pps, "report": j, "connections": connections }));
    }
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("session-bandwidth.md"), &md)?;
    eprint!("{md}");
    println!("{}", json!({ "runs": runs }));
    Ok(())
}
