//! The tipping sweep: bodies set just before and just past their balance point, run for a few seconds, and
//! judged by how far they moved. Every case past balance must fall, every case before it must stand — rest
//! detection may never freeze a body that its supports cannot hold. Shared by `tests/tests/tipping_sweep.rs` and
//! `make bench`'s `tipping-sweep` table.
//!
//! The families (1 m cubes, default density and friction):
//! - **edge**: one cube on one of its edges, turned 40°..50° about that edge (45° puts the centre of mass right
//!   above it). On an edge every angle but 45° is past balance to one side, so all of them must fall: below 45°
//!   back onto the face they came from, above it onto the other one. Exactly 45° is balanced in exact arithmetic
//!   and also in ours (the two contact points lie symmetrically under the centre of mass), but it is an unstable
//!   balance, so the sweep accepts either outcome there, as long as it is a clean one: standing within
//!   millimetres, or fallen flat. Under quantization a tilt below about 0.25° cannot start to move at all (the
//!   speed it gains in one step rounds to zero), which is why the sweep's finest steps are 0.5°.
//! - **overhang**: a cube on a support cube, pushed out by 40 %..60 % of its width; 50 % puts its centre of mass
//!   right above the support's edge (either outcome accepted there, as for 45°).
//! - **column**: 3 or 5 cubes, each offset sideways by `d` from the one below (a staircase). The bottom cube carries
//!   the other N − 1, whose centre of mass lies `d · N / 2` from it: the column stands for `d < 1 / N` and falls
//!   for `d > 1 / N`.
//! - **leaning**: the same staircase, taller — 4, 8, 12 and 16 cubes, 1 and 2 cm either side of the limit `1 / N`
//!   (see [`leaning_limit_m`]). Unlike the short columns these may not creep: below the limit they must stand
//!   within the standing distance.

use std::fmt::Write as _;

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyDesc, BodyId, World, WorldConfig};

use crate::quantize_all;

/// Steps per case: 6.7 s at 90 Hz. The slowest fall in the sweep (an edge 0.5° past balance) is over by 2 s.
pub const TIPPING_STEPS: u32 = 600;
/// A body that moved farther than this (m) or turned more than [`FELL_TURN_DEG`] fell.
pub const FELL_DISTANCE_M: f32 = 0.3;
pub const FELL_TURN_DEG: f32 = 20.0;
/// Every body within this distance (m) of where it started, turned less than [`STOOD_TURN_DEG`]: it stood.
pub const STOOD_DISTANCE_M: f32 = 0.003;
/// 0.3° moves a 1 m cube's corners about 3.7 mm.
pub const STOOD_TURN_DEG: f32 = 0.3;
/// A body that slid farther than standing allows but no farther than this (m), without turning more than
/// [`STOOD_TURN_DEG`], and came to rest, *crept*: the solver's friction is not fully converged in its few passes
/// and lets an offset column shear sideways by a centimetre or two before it holds (the same with rest detection
/// off). Tolerated for the columns only, and shown as such in the table.
pub const CREPT_DISTANCE_M: f32 = 0.03;

/// Which family a case belongs to (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Edge,
    Overhang,
    Column3,
    Column5,
    /// A tall leaning column (see [`leaning_case`]): the parameter is the offset per cube in cm.
    Leaning,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Edge => "edge",
            Family::Overhang => "overhang",
            Family::Column3 => "column3",
            Family::Column5 => "column5",
            Family::Leaning => "leaning",
        }
    }

    /// Columns of 3 and 5 may creep (see [`CREPT_DISTANCE_M`]); single cubes and leaning columns may not (a
    /// leaning column below its limit is held still by the shock pass, see `tests/leaning_columns.rs`).
    pub fn tolerates_creep(self) -> bool {
        matches!(self, Family::Column3 | Family::Column5)
    }

    /// What the case's parameter is.
    pub fn parameter_name(self) -> &'static str {
        match self {
            Family::Edge => "angle (°)",
            Family::Overhang => "overhang (% of width)",
            Family::Column3 | Family::Column5 => "offset per cube (% of width)",
            Family::Leaning => "offset per cube (cm)",
        }
    }
}

/// What physics says must happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Stands,
    Falls,
    /// Exactly at balance: either, as long as it is clean.
    Either,
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Stood,
    Fell,
    /// Slid a little and stopped (see [`CREPT_DISTANCE_M`]).
    Crept,
    /// Moved more than standing allows and less than a fall: frozen half-way, the failure the sweep is for.
    Neither,
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::Stands => "stands",
            Expect::Falls => "falls",
            Expect::Either => "either",
        }
    }

    /// Whether `verdict` is what physics says for a case of `family`.
    pub fn allows(self, verdict: Verdict, family: Family) -> bool {
        let creep = verdict == Verdict::Crept && family.tolerates_creep();
        match self {
            Expect::Stands => verdict == Verdict::Stood || creep,
            Expect::Falls => verdict == Verdict::Fell,
            Expect::Either => matches!(verdict, Verdict::Stood | Verdict::Fell) || creep,
        }
    }
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Stood => "stood",
            Verdict::Fell => "fell",
            Verdict::Crept => "crept",
            Verdict::Neither => "neither",
        }
    }
}

/// One scene of the sweep.
#[derive(Clone, Debug)]
pub struct TippingCase {
    pub family: Family,
    /// Angle in degrees (edge) or a percentage of the cube's width (overhang, column).
    pub parameter: f32,
    pub expect: Expect,
    pub bodies: Vec<BodyDesc>,
}

/// How one case ran.
#[derive(Clone, Copy, Debug)]
pub struct TippingOutcome {
    pub verdict: Verdict,
    /// Farthest any body moved from its start (m).
    pub distance_m: f32,
    /// Most any body turned from its start (degrees).
    pub turn_deg: f32,
    /// First step after which every body rested, if any.
    pub rested_at: Option<u32>,
}

fn cube_at(position: Vec3, rotation: Quat) -> BodyDesc {
    BodyDesc {
        position,
        rotation,
        ..BodyDesc::default()
    }
}

fn expect_around(value: f32, balance: f32) -> Expect {
    match value.total_cmp(&balance) {
        std::cmp::Ordering::Less => Expect::Stands,
        std::cmp::Ordering::Equal => Expect::Either,
        std::cmp::Ordering::Greater => Expect::Falls,
    }
}

/// A 1 m cube turned `deg` about z, resting on its lowest edge.
pub fn edge_case(deg: f32) -> TippingCase {
    let a = deg.to_radians();
    let height = 0.5 * (a.cos() + a.sin());
    TippingCase {
        family: Family::Edge,
        parameter: deg,
        expect: if deg == 45.0 { Expect::Either } else { Expect::Falls },
        bodies: vec![cube_at(Vec3::new(0.0, height, 0.0), Quat::from_rotation_z(a))],
    }
}

/// A cube on a support cube, pushed out along x by `percent` of its width.
pub fn overhang_case(percent: f32) -> TippingCase {
    TippingCase {
        family: Family::Overhang,
        parameter: percent,
        expect: expect_around(percent, 50.0),
        bodies: vec![
            cube_at(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY),
            cube_at(Vec3::new(percent / 100.0, 1.5, 0.0), Quat::IDENTITY),
        ],
    }
}

/// `cubes` cubes, each offset along x by `percent` of a width from the one below.
pub fn column_case(cubes: u32, percent: f32) -> TippingCase {
    let step = percent / 100.0;
    TippingCase {
        family: if cubes == 3 { Family::Column3 } else { Family::Column5 },
        parameter: percent,
        expect: expect_around(percent, 100.0 / cubes as f32),
        bodies: (0..cubes)
            .map(|k| cube_at(Vec3::new(k as f32 * step, 0.5 + k as f32, 0.0), Quat::IDENTITY))
            .collect(),
    }
}

/// The offset per cube (m) at which a leaning column of `cubes` 1 m cubes stops standing.
///
/// Cube k (from 0 at the bottom) sits at x = k·d. The cubes above cube j are j+1..n−1; their centre of mass is at
/// x = d·(j + 1 + n − 1)/2 = d·(n + j)/2, which is d·(n − j)/2 beyond cube j's own centre. They stand while that is
/// inside cube j's top face, whose far edge is half a width (0.5 m) from its centre: d·(n − j)/2 < 1/2, that is
/// d < 1/(n − j). The bottom cube's top (j = 0) is the weakest face: d < 1/n. The whole column on the ground
/// (centre of mass d·(n − 1)/2 from the bottom cube) asks less, d < 1/(n − 1). At d = 1/n − δ the weakest face
/// keeps a margin of n·δ/2 (12 cubes at 7 cm: 8 cm).
pub fn leaning_limit_m(cubes: u32) -> f32 {
    1.0 / cubes as f32
}

/// `cubes` cubes, each set `offset_m` further along x than the one below: stands below [`leaning_limit_m`].
pub fn leaning_case(cubes: u32, offset_m: f32) -> TippingCase {
    TippingCase {
        family: Family::Leaning,
        parameter: offset_m * 100.0,
        expect: expect_around(offset_m, leaning_limit_m(cubes)),
        bodies: (0..cubes)
            .map(|k| cube_at(Vec3::new(k as f32 * offset_m, 0.5 + k as f32, 0.0), Quat::IDENTITY))
            .collect(),
    }
}

/// Leaning columns of 4, 8, 12 and 16 cubes, 2 cm and 1 cm either side of their limit.
pub fn leaning_cases() -> Vec<TippingCase> {
    let mut cases = Vec::new();
    for cubes in [4, 8, 12, 16] {
        let limit = leaning_limit_m(cubes);
        for margin in [-0.02, -0.01, 0.01, 0.02] {
            cases.push(leaning_case(cubes, limit + margin));
        }
    }
    cases
}

/// Every case of the sweep, in table order.
pub fn tipping_cases() -> Vec<TippingCase> {
    let mut cases: Vec<TippingCase> = (0..=20).map(|k| edge_case(40.0 + 0.5 * k as f32)).collect();
    cases.extend((40..=60).map(|p| overhang_case(p as f32)));
    cases.extend([5.0, 25.0, 30.0, 32.0, 35.0, 37.0, 40.0].map(|p| column_case(3, p)));
    cases.extend([5.0, 15.0, 18.0, 19.0, 21.0, 22.0, 25.0].map(|p| column_case(5, p)));
    cases.extend(leaning_cases());
    cases
}

/// Runs one case for [`TIPPING_STEPS`] steps, quantizing every body before every step as state sync does if asked.
pub fn run_tipping_case(case: &TippingCase, quantized: bool) -> TippingOutcome {
    let mut world = World::new(WorldConfig::default()).expect("default config is valid");
    for desc in &case.bodies {
        world.add_body(desc).expect("sweep bodies are valid");
    }
    let mut rested_at = None;
    for step in 1..=TIPPING_STEPS {
        if quantized {
            quantize_all(&mut world);
        }
        world.step();
        if rested_at.is_none() && world.all_at_rest() {
            rested_at = Some(step);
        }
    }
    let (mut distance_m, mut turn_deg) = (0.0f32, 0.0f32);
    for (k, desc) in case.bodies.iter().enumerate() {
        let s = world.state(BodyId(k as u32)).expect("valid id");
        distance_m = distance_m.max(s.position.distance(desc.position));
        turn_deg = turn_deg.max(s.rotation.angle_between(desc.rotation).to_degrees());
    }
    let verdict = if distance_m > FELL_DISTANCE_M || turn_deg > FELL_TURN_DEG {
        Verdict::Fell
    } else if distance_m <= STOOD_DISTANCE_M && turn_deg <= STOOD_TURN_DEG {
        Verdict::Stood
    } else if distance_m <= CREPT_DISTANCE_M && turn_deg <= STOOD_TURN_DEG && rested_at.is_some() {
        Verdict::Crept
    } else {
        Verdict::Neither
    };
    TippingOutcome {
        verdict,
        distance_m,
        turn_deg,
        rested_at,
    }
}

/// One row of the sweep's table: a case run free and quantized.
#[derive(Clone, Debug)]
pub struct TippingRow {
    pub case: TippingCase,
    pub free: TippingOutcome,
    pub quantized: TippingOutcome,
}

impl TippingRow {
    pub fn passed(&self) -> bool {
        let (expect, family) = (self.case.expect, self.case.family);
        expect.allows(self.free.verdict, family) && expect.allows(self.quantized.verdict, family)
    }
}

/// Runs every case both ways.
pub fn run_tipping_sweep() -> Vec<TippingRow> {
    tipping_cases()
        .into_iter()
        .map(|case| TippingRow {
            free: run_tipping_case(&case, false),
            quantized: run_tipping_case(&case, true),
            case,
        })
        .collect()
}

fn outcome_cells(o: &TippingOutcome) -> String {
    let rested = o.rested_at.map_or_else(|| "—".to_owned(), |s| s.to_string());
    format!(
        "{} | {:.4} | {:.1} | {rested}",
        o.verdict.name(),
        o.distance_m,
        o.turn_deg
    )
}

/// The sweep as a Markdown table, one row per case.
pub fn tipping_markdown(rows: &[TippingRow]) -> String {
    let mut md = String::from(
        "| case | parameter | expected | free | moved (m) | turned (°) | rested at step | quantized | moved (m) | \
         turned (°) | rested at step | pass |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {}{} | {} = {} | {} | {} | {} | {} |",
            r.case.family.name(),
            // A leaning column's height is no part of its parameter: say it beside the family.
            if r.case.family == Family::Leaning {
                format!(" ({} cubes)", r.case.bodies.len())
            } else {
                String::new()
            },
            r.case.family.parameter_name(),
            r.case.parameter,
            r.case.expect.name(),
            outcome_cells(&r.free),
            outcome_cells(&r.quantized),
            if r.passed() { "yes" } else { "**NO**" }
        );
    }
    md
}
