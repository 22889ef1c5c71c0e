//! `tumble session`: the JSON report's contract, the multi-process mode's plumbing, and the flags that must be
//! refused politely.

use std::process::{Command, Output};

use serde_json::Value;

fn tumble(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tumble"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run tumble")
}

fn json(o: &Output) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{}", String::from_utf8_lossy(&o.stderr)))
}

/// Every field the issue names, spelled as it spells them.
const FIELDS: [&str; 48] = [
    "players",
    "grabs",
    "throws",
    "conflicts",
    "conflict_resolve_ms_max",
    "authority_changes",
    "handover_pop_m_p99",
    "handover_pop_m_max",
    "corrections",
    "correction_max_m",
    "kbps_per_connection_mean_max",
    "kbps_per_connection_p95_max",
    "host_kbps_up_mean",
    "bit_identical_at_end",
    "max_divergence_m_at_end",
    "remote_rest_jitter_m",
    "lost_commits",
    "seconds_to_converge",
    "rejected_updates",
    "peers_at_end",
    "kbps_budget",
    "kbps_demand_mean_max",
    "seconds_to_release_quit",
    "seconds_to_notice_host_gone",
    "drawn_error_m_p50",
    "drawn_error_m_p99",
    "drawn_error_m_max",
    "drawn_error_m_p50_resting",
    "drawn_error_m_p99_resting",
    "drawn_error_m_max_resting",
    "drawn_error_m_p50_moving",
    "drawn_error_m_p99_moving",
    "drawn_error_m_max_moving",
    "visible_jump_m_max",
    "visible_jump_m_p99",
    "visible_jump_late_m_max",
    "visible_jump_late_m_p99",
    "visible_jump_late_window_steps",
    "visible_jumps_over_1cm",
    "visible_jumps_over_1cm_late",
    "corrections_over_1cm",
    "corrections_over_10cm",
    "avatar_delay_ms_p50",
    "avatar_delay_ms_p99",
    "avatar_error_m_p99",
    "avatar_error_m_max",
    "kbps_demand_per_connection_mean_max",
    "kbps_demand_per_connection_p95_max",
];

#[test]
fn a_conflict_test_in_one_process_reports_every_field_and_one_owner_per_conflict() {
    let o = tumble(&[
        "session",
        "--players",
        "3",
        "--conflict-test",
        "--seconds",
        "12",
        "--latency-ms",
        "50",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = json(&o);
    for f in FIELDS {
        assert!(j.get(f).is_some(), "{f} missing from {j}");
    }
    assert_eq!(j["players"], 3);
    assert_eq!(j["peers_at_end"], 3);
    assert!(j["conflicts"].as_u64().unwrap() >= 1, "{j}");
    // The conflict's loser had its claim overridden by the host's word: a correction.
    assert!(j["corrections"].as_u64().unwrap() >= 1, "{j}");
    assert!(j["conflict_resolve_ms_max"].as_f64().unwrap() <= 200.0, "{j}");
    assert_eq!(j["bit_identical_at_end"], true, "{j}");
}

#[test]
fn separate_processes_over_udp_join_play_and_report() {
    // Real sockets and the real clock: timing varies with the machine's load, so only the plumbing is checked
    // (three processes joined, grabs happened and were judged, a report came back from each).
    let o = tumble(&[
        "session",
        "--players",
        "3",
        "--conflict-test",
        "--seconds",
        "12",
        "--latency-ms",
        "20",
        "--processes",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = json(&o);
    assert_eq!(j["peers_at_end"], 3, "{j}");
    assert!(j["grabs"].as_u64().unwrap() >= 2, "{j}");
    assert!(j["kbps_per_connection_mean_max"].as_f64().unwrap() > 0.0, "{j}");
    // What every process drew was traced and measured against the truth across processes.
    for figure in [
        "drawn_error_m_p99",
        "drawn_error_m_max_resting",
        "visible_jump_m_max",
        "avatar_delay_ms_p99",
    ] {
        assert!(j[figure].is_number(), "{figure}: {j}");
    }
    // Every process's connections come back by part: the host's two, each guest's to the host and its direct link
    // to the other guest (over UDP between the guest processes), each carrying cubes or avatars and the transport's
    // headers.
    let connections = j["connections"].as_array().unwrap();
    assert_eq!(connections.len(), 6, "{j}");
    for c in connections {
        let part = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k}: {j}"));
        assert!(part("rest") > 0.0 && part("cubes") + part("avatars") > 0.0, "{j}");
    }
    // The host process's judgement comes back too: it took claims from the two contending guests.
    let accepted = &j["accepted_claims_by_player"];
    assert!(accepted[1].as_u64().unwrap() + accepted[2].as_u64().unwrap() > 0, "{j}");
}

/// Issue 30: the host quits mid-game, each player in its own process. Every guest learns it from the goodbye, says
/// so in its report and exits non-zero (the parent takes that exit as expected); the report says when each knew,
/// and leaves out what would compare a world with the host's (`null`). Real sockets and the real clock: only the
/// plumbing is checked here (the in-process tests hold the times to their lines on a simulated clock).
#[test]
fn separate_processes_report_the_host_leaving() {
    let o = tumble(&[
        "session",
        "--players",
        "3",
        "--bots",
        "idle,idle,idle",
        "--seconds",
        "8",
        "--latency-ms",
        "20",
        "--quit-player",
        "1",
        "--quit-at-s",
        "3",
        "--processes",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = json(&o);
    let noticed = j["seconds_to_notice_host_gone"].as_array().expect("per guest");
    assert_eq!(noticed.len(), 2, "{j}");
    assert!(noticed.iter().all(|s| s.as_f64().is_some()), "{j}");
    assert_eq!(j["bit_identical_at_end"], Value::Null, "{j}");
    assert_eq!(j["seconds_to_release_quit"], Value::Null, "{j}");
}

#[test]
fn bad_session_flags_are_refused_with_a_message() {
    for (args, says) in [
        (vec!["session", "--players", "5"], "--players must be 1 to 4"),
        (vec!["session", "--bots", "dancer"], "unknown bot 'dancer'"),
        (vec!["session", "--players", "2", "--conflict-test"], "two guests"),
        (
            vec!["session", "--players", "3", "--kill-player", "4", "--kill-at-s", "2"],
            "--kill-player must name a player, 1 to 3",
        ),
        (
            vec!["session", "--quit-player", "2", "--quit-at-s", "99"],
            "--quit-player's time must be within",
        ),
        (vec!["session", "--kbps-budget", "0"], "--kbps-budget 0"),
        (vec!["session", "--scene", "/nonexistent.toml"], "nonexistent"),
    ] {
        let o = tumble(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

/// The default pace is 30 packets a second under the default 64 kbps; a budget too small for that runs at the most
/// packets a second it leaves room for (16 kbps: 18), and says so; asked for a pace, it keeps it.
#[test]
fn a_small_budget_runs_at_the_pace_it_has_room_for() {
    let session = |more: &[&'static str]| [&["session", "--players", "2", "--seconds", "1"][..], more].concat();
    for (args, pace) in [
        (session(&["--kbps-budget", "16"]), 18),
        (session(&[]), 30),
        (session(&["--kbps-budget", "128", "--packets-per-s", "90"]), 90),
        (session(&["--kbps-budget", "64", "--packets-per-s", "30"]), 30),
    ] {
        let o = tumble(&args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let j = json(&o);
        assert_eq!(j["packets_per_s"], pace, "{args:?}: {j}");
    }
}
