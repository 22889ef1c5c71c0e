//! `engine-speed`'s JSON has the fields its readers take, both phases included, on a run of a few steps (structure
//! only: no timing is judged here).

use std::process::Command;

use serde_json::Value;

#[test]
fn json_has_every_engine_both_phases_and_the_run() {
    let out = std::env::temp_dir().join(format!("tumble-engine-speed-test-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_engine-speed"))
        .args([
            "--steps",
            "6",
            "--rounds",
            "2",
            "--forming-steps",
            "3",
            "--steady-from",
            "3",
        ])
        .args(["--scene", "pyramid20", "--scene", "katamari900", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let rows: Value = serde_json::from_slice(&run.stdout).expect("stdout is JSON alone");
    let rows = rows.as_array().expect("an array, one object per scene");
    assert_eq!(rows.len(), 2);
    let jolt_built = cfg!(feature = "jolt");
    for row in rows {
        let scene = row["scene"].as_str().unwrap();
        let katamari = scene == "katamari900";
        for phase in ["forming", "steady"] {
            let p = &row["phases"][phase];
            assert!(p["tumble_ms_per_step"].as_f64().unwrap() > 0.0, "{scene} {phase}: {p}");
            let steps = if phase == "forming" { [1, 3] } else { [4, 6] };
            assert_eq!(p["steps"], serde_json::json!(steps), "{scene} {phase}");
            if katamari {
                assert!(p["best_peer"].is_null() && p["best_peer_over_tumble"].is_null(), "{p}");
                assert!(p["goal_holds"].is_null());
            } else {
                assert!(["rapier", "jolt"].contains(&p["best_peer"].as_str().unwrap()), "{p}");
                assert!(p["best_peer_over_tumble"].as_f64().unwrap() > 0.0);
                assert!(p["goal_holds"].is_boolean());
            }
        }
        let tumble = &row["tumble"];
        for key in ["ms_per_step", "ratio_to_tumble"] {
            assert!(tumble[key].as_f64().unwrap() > 0.0, "{scene}: {key}");
        }
        assert_eq!(tumble["same_bits"], true, "{scene}: a rerun gives the same bits");
        assert_eq!(tumble["checksum"].as_str().unwrap().len(), 16);
        assert!(
            tumble["phases"]["steady"]["ratio_to_tumble"].is_null(),
            "no ratio of Tumble to itself"
        );
        for peer in ["rapier", "rapier-budget"] {
            if katamari {
                assert!(row[peer].is_null(), "{scene}: {peer} is not run");
            } else {
                let e = &row[peer];
                assert!(e["phases"]["forming"]["ratio_to_tumble"].as_f64().unwrap() > 0.0, "{e}");
                assert!(e["phases"]["steady"]["ms_per_step"].as_f64().unwrap() > 0.0, "{e}");
                assert_eq!(e["bodies"], 210);
            }
        }
        assert_eq!(
            row["jolt_build"].is_null(),
            !jolt_built,
            "{scene}: the Jolt build is stated when built"
        );
        assert!(
            row.as_object().unwrap().contains_key("jolt"),
            "{scene}: jolt's figures or null"
        );
        if jolt_built && !katamari {
            let j = &row["jolt"];
            assert!(j["phases"]["steady"]["ratio_to_tumble"].as_f64().unwrap() > 0.0, "{j}");
            assert_eq!(j["bodies"], 210);
        } else {
            assert!(row["jolt"].is_null(), "{scene}: Jolt not run");
        }
        if katamari {
            assert!(row["goal_ratio"].is_null() && row["goal_holds"].is_null());
        } else {
            assert!(row["goal_ratio"].as_f64().unwrap() > 0.0);
        }
        let r = &row["run"];
        assert_eq!((r["steps"].as_u64(), r["rounds"].as_u64()), (Some(6), Some(2)));
        assert!(r["machine_before"].is_object() && r["machine_after"].is_object());
    }
    let md = std::fs::read_to_string(out.join("engine-speed.md")).unwrap();
    assert!(
        md.contains("| pyramid20 | tumble |") && md.contains("| katamari900 | rapier |"),
        "{md}"
    );
    assert!(
        md.contains(if jolt_built { "Jolt 5." } else { "Jolt: not built" }),
        "{md}"
    );
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_phase_the_run_does_not_reach_is_null() {
    let out = std::env::temp_dir().join(format!("tumble-engine-speed-short-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_engine-speed"))
        .args(["--steps", "2", "--rounds", "1", "--scene", "pyramid20", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let rows: Value = serde_json::from_slice(&run.stdout).unwrap();
    let steady = &rows[0]["phases"]["steady"];
    assert!(
        steady["steps"].is_null() && steady["tumble_ms_per_step"].is_null(),
        "{steady}"
    );
    assert!(rows[0]["phases"]["forming"]["tumble_ms_per_step"].as_f64().unwrap() > 0.0);
    assert!(rows[0]["tumble"]["phases"]["steady"]["ms_per_step"].is_null());
    std::fs::remove_dir_all(&out).ok();
}
