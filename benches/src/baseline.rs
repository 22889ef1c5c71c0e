//! `benches/baseline.json`: Tumble's numbers per scene from a run we accepted, and what counts as a regression.
//!
//! The file is a JSON object, scene name → [`BaselineEntry`]. `bench-report --write-baseline` rewrites the scenes it
//! ran. A run is compared only with an entry taken under the same conditions (steps, sleep, body count); otherwise
//! the comparison is skipped with a note, because displacement, drift and settle step depend on them.
//!
//! Timing is noisy on shared machines, so a slower run is only flagged ([`FindingKind::Slower`]); a less stable
//! one is a [`FindingKind::Stability`] regression, which makes `bench-report` exit non-zero.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::runner::RunResult;

/// A run this much slower than its baseline (ratio) is flagged.
pub const SLOWER_RATIO: f64 = 1.25;
/// Stability numbers may grow by this ratio plus an absolute allowance before they count as a regression…
pub const STABILITY_RATIO: f64 = 1.25;
/// …of this many metres for the largest displacement,
pub const DISPLACEMENT_ALLOWANCE_M: f64 = 0.01;
/// …this many metres for drift after settling and for penetration,
pub const DRIFT_ALLOWANCE_M: f64 = 0.002;
pub const PENETRATION_ALLOWANCE_M: f64 = 0.002;
/// …and this many steps for the settle step.
pub const SETTLE_ALLOWANCE_STEPS: f64 = 30.0;

/// One scene's accepted numbers (a subset of [`RunResult`] plus the conditions they were taken under).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineEntry {
    pub steps: u32,
    pub sleep: bool,
    pub bodies: usize,
    pub ms_per_step: f64,
    pub settle_step: Option<u32>,
    pub max_displacement_m: f64,
    pub max_drift_after_settle_m: Option<f64>,
    pub max_penetration_m: f64,
    /// Absent in baselines written before it was measured; such an entry is not judged on it.
    #[serde(default)]
    pub max_overlap_m: Option<f64>,
    /// Informational: any change to the engine changes it, so a different checksum is reported, never judged.
    pub checksum: String,
}

impl From<&RunResult> for BaselineEntry {
    fn from(r: &RunResult) -> Self {
        Self {
            steps: r.steps,
            sleep: r.sleep,
            bodies: r.bodies,
            ms_per_step: r.ms_per_step,
            settle_step: r.settle_step,
            max_displacement_m: r.max_displacement_m,
            max_drift_after_settle_m: r.max_drift_after_settle_m,
            max_penetration_m: r.max_penetration_m,
            max_overlap_m: Some(r.max_overlap_m),
            checksum: r.checksum.clone(),
        }
    }
}

pub type Baseline = BTreeMap<String, BaselineEntry>;

/// Reads a baseline file; a missing file is an empty baseline, a malformed one an error.
pub fn load(path: &Path) -> Result<Baseline> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("parsing baseline {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Baseline::new()),
        Err(e) => Err(e).with_context(|| format!("reading baseline {}", path.display())),
    }
}

pub fn save(path: &Path, baseline: &Baseline) -> Result<()> {
    let text = serde_json::to_string_pretty(baseline)? + "\n";
    std::fs::write(path, text).with_context(|| format!("writing baseline {}", path.display()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Timing: flagged, never fatal.
    Slower,
    /// Stability got worse: fatal for `bench-report`.
    Stability,
    /// Not compared (no entry, or different conditions), or a notable non-regression (checksum changed).
    Note,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub scene: String,
    pub kind: FindingKind,
    pub message: String,
}

fn worse(new: f64, old: f64, allowance: f64) -> bool {
    new > old * STABILITY_RATIO + allowance
}

/// Compares one Tumble run with its baseline entry (if any) and says what changed for the worse.
pub fn compare(run: &RunResult, entry: Option<&BaselineEntry>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push = |kind, message: String| {
        out.push(Finding {
            scene: run.scene.clone(),
            kind,
            message,
        })
    };
    let Some(base) = entry else {
        push(FindingKind::Note, "no baseline entry".into());
        return out;
    };
    if run.quantize || base.steps != run.steps || base.sleep != run.sleep || base.bodies != run.bodies {
        push(
            FindingKind::Note,
            format!(
                "not compared: baseline is {} steps, sleep {}, {} bodies; this run {} steps, sleep {}, {} bodies{}",
                base.steps,
                base.sleep,
                base.bodies,
                run.steps,
                run.sleep,
                run.bodies,
                if run.quantize { ", quantized" } else { "" }
            ),
        );
        return out;
    }
    if base.ms_per_step > 0.0 && run.ms_per_step > base.ms_per_step * SLOWER_RATIO {
        push(
            FindingKind::Slower,
            format!(
                "{:.4} ms/step vs baseline {:.4} (+{:.0} %)",
                run.ms_per_step,
                base.ms_per_step,
                (run.ms_per_step / base.ms_per_step - 1.0) * 100.0
            ),
        );
    }
    if worse(
        run.max_displacement_m,
        base.max_displacement_m,
        DISPLACEMENT_ALLOWANCE_M,
    ) {
        push(
            FindingKind::Stability,
            format!(
                "max displacement {:.4} m vs baseline {:.4} m",
                run.max_displacement_m, base.max_displacement_m
            ),
        );
    }
    if worse(run.max_penetration_m, base.max_penetration_m, PENETRATION_ALLOWANCE_M) {
        push(
            FindingKind::Stability,
            format!(
                "max penetration {:.4} m vs baseline {:.4} m",
                run.max_penetration_m, base.max_penetration_m
            ),
        );
    }
    if let Some(old) = base.max_overlap_m {
        if worse(run.max_overlap_m, old, PENETRATION_ALLOWANCE_M) {
            push(
                FindingKind::Stability,
                format!("max overlap {:.4} m vs baseline {:.4} m", run.max_overlap_m, old),
            );
        }
    }
    match (base.settle_step, run.settle_step) {
        (Some(old), None) => push(
            FindingKind::Stability,
            format!("never settles (baseline settled at step {old})"),
        ),
        (Some(old), Some(new)) if worse(f64::from(new), f64::from(old), SETTLE_ALLOWANCE_STEPS) => push(
            FindingKind::Stability,
            format!("settles at step {new} vs baseline {old}"),
        ),
        _ => {}
    }
    if let (Some(old), Some(new)) = (base.max_drift_after_settle_m, run.max_drift_after_settle_m) {
        if worse(new, old, DRIFT_ALLOWANCE_M) {
            push(
                FindingKind::Stability,
                format!("drift after settling {new:.4} m vs baseline {old:.4} m"),
            );
        }
    }
    if base.checksum != run.checksum {
        push(
            FindingKind::Note,
            format!("checksum {} (baseline {})", run.checksum, base.checksum),
        );
    }
    out
}

/// Same inputs, same build, same bits: a rerun of a scene that ends in another state than the first run is a
/// [`FindingKind::Stability`] regression (fatal for `bench-report`), whatever the baseline says.
pub fn compare_rerun(first: &RunResult, rerun: &RunResult) -> Option<Finding> {
    (first.checksum != rerun.checksum).then(|| Finding {
        scene: first.scene.clone(),
        kind: FindingKind::Stability,
        message: format!(
            "not deterministic: a rerun ended in state {} (first run {})",
            rerun.checksum, first.checksum
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::EngineKind;

    fn run() -> RunResult {
        RunResult {
            scene: "tower30".into(),
            engine: EngineKind::Tumble,
            steps: 600,
            bodies: 30,
            quantize: false,
            sleep: true,
            ms_per_step: 0.1,
            ms_total: 60.0,
            settle_step: Some(200),
            max_displacement_m: 0.02,
            max_drift_after_settle_m: Some(0.0),
            max_penetration_m: 0.003,
            max_overlap_m: 0.003,
            checksum: "00000000000000aa".into(),
        }
    }

    fn kinds(f: &[Finding]) -> Vec<FindingKind> {
        f.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn same_numbers_are_no_regression() {
        let r = run();
        assert!(compare(&r, Some(&BaselineEntry::from(&r))).is_empty());
        assert_eq!(kinds(&compare(&r, None)), [FindingKind::Note]);
    }

    #[test]
    fn slower_is_flagged_and_instability_is_a_regression() {
        let base = BaselineEntry::from(&run());
        let mut r = run();
        r.ms_per_step = 0.2;
        assert_eq!(kinds(&compare(&r, Some(&base))), [FindingKind::Slower]);
        let mut r = run();
        r.max_displacement_m = 0.5;
        r.settle_step = None;
        assert_eq!(
            kinds(&compare(&r, Some(&base))),
            [FindingKind::Stability, FindingKind::Stability]
        );
        // Small changes within the allowance are not regressions.
        let mut r = run();
        r.max_penetration_m = 0.004;
        r.max_overlap_m = 0.004;
        r.settle_step = Some(240);
        assert!(compare(&r, Some(&base)).is_empty());
        // Overlap is judged like penetration, but not against a baseline written before it was measured.
        let mut r = run();
        r.max_overlap_m = 0.02;
        assert_eq!(kinds(&compare(&r, Some(&base))), [FindingKind::Stability]);
        let old = BaselineEntry {
            max_overlap_m: None,
            ..base
        };
        assert!(compare(&r, Some(&old)).is_empty());
    }

    #[test]
    fn a_rerun_in_another_state_is_a_regression() {
        let first = run();
        assert_eq!(compare_rerun(&first, &run()), None);
        let mut rerun = run();
        rerun.checksum = "00000000000000ab".into();
        // Only the state counts: a rerun may be slower.
        rerun.ms_per_step = 0.3;
        let f = compare_rerun(&first, &rerun).expect("a different state");
        assert_eq!(f.kind, FindingKind::Stability);
        assert!(f.message.contains("00000000000000ab"), "{}", f.message);
    }

    #[test]
    fn different_conditions_are_not_compared() {
        let base = BaselineEntry::from(&run());
        let mut r = run();
        r.steps = 100;
        r.max_displacement_m = 9.0;
        assert_eq!(kinds(&compare(&r, Some(&base))), [FindingKind::Note]);
    }

    #[test]
    fn baseline_round_trips_through_json() {
        let mut b = Baseline::new();
        b.insert("tower30".into(), BaselineEntry::from(&run()));
        let text = serde_json::to_string(&b).unwrap();
        let back: Baseline = serde_json::from_str(&text).unwrap();
        assert_eq!(back, b);
    }
}
