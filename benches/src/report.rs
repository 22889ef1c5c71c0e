//! The `bench-report` table: every scene on both engines, as Markdown (`report.md`) and as JSON rows.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::baseline::{Finding, FindingKind};
use crate::runner::{EngineKind, RunResult};

/// One (scene, engine) run: its result, or why it has none.
#[derive(Clone, Debug)]
pub struct ReportRow {
    pub scene: String,
    pub engine: EngineKind,
    pub outcome: Result<RunResult, String>,
}

/// Tumble's ms/step over Rapier's for `scene` (below 1: Tumble is faster), when both ran.
pub fn speed_ratio(rows: &[ReportRow], scene: &str) -> Option<f64> {
    let ms = |engine| {
        rows.iter()
            .find(|r| r.scene == scene && r.engine == engine)
            .and_then(|r| r.outcome.as_ref().ok())
            .map(|r| r.ms_per_step)
    };
    match (ms(EngineKind::Tumble), ms(EngineKind::Rapier)) {
        (Some(t), Some(r)) if r > 0.0 => Some(t / r),
        _ => None,
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "—".to_string(), |v| v.to_string())
}

fn metres(v: f64) -> String {
    format!("{v:.4}")
}

fn verdict(findings: &[Finding], scene: &str) -> String {
    let mine: Vec<&Finding> = findings.iter().filter(|f| f.scene == scene).collect();
    let flagged: Vec<String> = mine
        .iter()
        .filter(|f| f.kind != FindingKind::Note)
        .map(|f| match f.kind {
            FindingKind::Stability => format!("**REGRESSION**: {}", f.message),
            _ => format!("slower: {}", f.message),
        })
        .collect();
    if !flagged.is_empty() {
        flagged.join("; ")
    } else if mine
        .iter()
        .any(|f| f.message.starts_with("no baseline") || f.message.starts_with("not compared"))
    {
        "not compared".into()
    } else {
        "ok".into()
    }
}

/// The Markdown report. `header` lines (conditions of the run) go above the table.
pub fn markdown(rows: &[ReportRow], findings: &[Finding], header: &[String]) -> String {
    let mut s = String::from("# Tumble physics bench report\n\n");
    for line in header {
        let _ = writeln!(s, "{line}  ");
    }
    s.push_str(
        "\n| scene | engine | bodies | ms/step | Tumble/Rapier | settle step | max displacement (m) | \
         drift after settle (m) | max penetration (m) | max overlap (m) | checksum | vs baseline |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
    );
    for row in rows {
        match &row.outcome {
            Ok(r) => {
                let (ratio, vs) = if row.engine == EngineKind::Tumble {
                    (
                        speed_ratio(rows, &row.scene).map_or("—".into(), |x| format!("{x:.2}×")),
                        verdict(findings, &row.scene),
                    )
                } else {
                    (String::new(), String::new())
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.4} | {} | {} | {} | {} | {} | {} | `{}` | {} |",
                    r.scene,
                    r.engine,
                    r.bodies,
                    r.ms_per_step,
                    ratio,
                    opt(r.settle_step),
                    metres(r.max_displacement_m),
                    opt(r.max_drift_after_settle_m.map(metres)),
                    metres(r.max_penetration_m),
                    metres(r.max_overlap_m),
                    r.checksum,
                    vs
                );
            }
            Err(e) => {
                let e = e.replace('|', "\\|").replace('\n', " ");
                let _ = writeln!(
                    s,
                    "| {} | {} | | | | | | | | | | **FAILED**: {e} |",
                    row.scene, row.engine
                );
            }
        }
    }
    let notes: Vec<&Finding> = findings.iter().collect();
    if !notes.is_empty() {
        s.push_str("\n## Against `benches/baseline.json` (Tumble)\n\n");
        for f in notes {
            let tag = match f.kind {
                FindingKind::Stability => "REGRESSION (stability)",
                FindingKind::Slower => "slower (timing, flagged only)",
                FindingKind::Note => "note",
            };
            let _ = writeln!(s, "- {}: {tag}: {}", f.scene, f.message);
        }
    }
    s.push_str("\n![ms per step, both engines](ms_per_step.png)\n");
    s
}

/// The rows as JSON: each a [`RunResult`] object plus `tumble_over_rapier` (on Tumble rows) and `findings`; a
/// failed run is `{scene, engine, error}`.
pub fn json_rows(rows: &[ReportRow], findings: &[Finding]) -> Value {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut v = match &row.outcome {
            Ok(r) => serde_json::to_value(r).unwrap_or(Value::Null),
            Err(e) => json!({ "scene": row.scene, "engine": row.engine, "error": e }),
        };
        if let Some(obj) = v.as_object_mut() {
            if row.engine == EngineKind::Tumble {
                obj.insert("tumble_over_rapier".into(), json!(speed_ratio(rows, &row.scene)));
                let mine: Vec<&Finding> = findings.iter().filter(|f| f.scene == row.scene).collect();
                obj.insert("findings".into(), json!(mine));
            }
        }
        out.push(v);
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(engine: EngineKind, ms: f64) -> RunResult {
        RunResult {
            scene: "pyramid20".into(),
            engine,
            steps: 10,
            bodies: 210,
            quantize: false,
            sleep: true,
            ms_per_step: ms,
            ms_total: ms * 10.0,
            settle_step: None,
            max_displacement_m: 0.1,
            max_drift_after_settle_m: None,
            max_penetration_m: 0.0,
            max_overlap_m: 0.0,
            checksum: "0123456789abcdef".into(),
        }
    }

    #[test]
    fn table_has_a_row_per_run_and_the_ratio() {
        let rows = vec![
            ReportRow {
                scene: "pyramid20".into(),
                engine: EngineKind::Tumble,
                outcome: Ok(result(EngineKind::Tumble, 1.0)),
            },
            ReportRow {
                scene: "pyramid20".into(),
                engine: EngineKind::Rapier,
                outcome: Ok(result(EngineKind::Rapier, 2.0)),
            },
            ReportRow {
                scene: "smash".into(),
                engine: EngineKind::Tumble,
                outcome: Err("boom | bang".into()),
            },
        ];
        assert_eq!(speed_ratio(&rows, "pyramid20"), Some(0.5));
        assert_eq!(speed_ratio(&rows, "smash"), None);
        let md = markdown(&rows, &[], &["Steps: 10".into()]);
        assert!(md.contains("| pyramid20 | tumble | 210 | 1.0000 | 0.50× |"), "{md}");
        assert!(md.contains("| pyramid20 | rapier | 210 | 2.0000 |"), "{md}");
        assert!(md.contains("**FAILED**: boom \\| bang"), "{md}");
        let table_lines = md.lines().filter(|l| l.starts_with("| ")).count();
        assert_eq!(table_lines, 4, "header and three rows");
        let json = json_rows(&rows, &[]);
        let arr = json.as_array().unwrap();
        assert_eq!(arr.len(), 3);
        assert_eq!(arr[0]["tumble_over_rapier"], 0.5);
        assert_eq!(arr[1]["engine"], "rapier");
        assert_eq!(arr[2]["error"], "boom | bang");
    }
}
