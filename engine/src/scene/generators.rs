//! The scene file's structure as serde reads it (spans kept for errors) and the generators that turn its entries
//! (`tower`, `pyramid`, `grid`, `wall`, `cube`) into bodies, in file order.

use glam::{Quat, Vec3};
use serde::Deserialize;
use toml::Spanned;

use crate::physics::{BodyDesc, MAX_ANGULAR_SPEED_RAD_S, MAX_LINEAR_SPEED_M_S};

use super::errors::*;
use super::*;

// ---------------------------------------------------------------------------------------------------------
// Raw file structure. `toml::Spanned` keeps the byte range of each value we check after parsing.

pub(super) type V3 = Spanned<[f32; 3]>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScene {
    pub(super) name: Option<String>,
    pub(super) gravity: Option<V3>,
    pub(super) dt: Option<Spanned<f32>>,
    pub(super) defaults: Option<RawDefaults>,
    #[serde(default)]
    pub(super) tower: Vec<Spanned<RawTower>>,
    #[serde(default)]
    pub(super) pyramid: Vec<Spanned<RawPyramid>>,
    #[serde(default)]
    pub(super) grid: Vec<Spanned<RawGrid>>,
    #[serde(default)]
    pub(super) wall: Vec<Spanned<RawWall>>,
    #[serde(default)]
    pub(super) cube: Vec<Spanned<RawCube>>,
    pub(super) spawn: Option<RawSpawn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpawn {
    pub(super) position: V3,
    pub(super) facing: Option<V3>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(untagged, expecting = "a number or an array of 3 numbers")]
pub(super) enum HalfExtent {
    Cube(f32),
    Box([f32; 3]),
}

/// The horizontal axis a pyramid or wall runs along; it stands in the vertical plane through that axis.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Axis {
    X,
    Z,
}

impl Axis {
    pub(super) fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Z => 2,
        }
    }
}

/// Declares an entry table: its own keys plus the material keys every entry may override. Not
/// `#[serde(flatten)]`, which would silently disable `deny_unknown_fields` and lose spans.
macro_rules! entry_table {
    (struct $name:ident { $($field:ident: $ty:ty,)* }) => {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct $name {
            $($field: $ty,)*
            half_extent: Option<Spanned<HalfExtent>>,
            density: Option<Spanned<f32>>,
            friction: Option<Spanned<f32>>,
            restitution: Option<Spanned<f32>>,
        }
        impl $name {
            pub(super) fn material(&self) -> MaterialKeys<'_> {
                MaterialKeys {
                    half_extent: self.half_extent.as_ref(),
                    density: self.density.as_ref(),
                    friction: self.friction.as_ref(),
                    restitution: self.restitution.as_ref(),
                }
            }
        }
    };
}

entry_table!(
    struct RawDefaults {}
);
entry_table!(
    struct RawTower {
        base: V3,
        height: Spanned<u32>,
        gap: Option<Spanned<f32>>,
    }
);
entry_table!(
    struct RawPyramid {
        base: V3,
        count: Spanned<u32>,
        axis: Option<Axis>,
        gap: Option<Spanned<f32>>,
    }
);
entry_table!(
    struct RawGrid {
        origin: V3,
        count: Spanned<[u32; 3]>,
        spacing: Option<V3>,
    }
);
entry_table!(
    struct RawWall {
        base: V3,
        width: Spanned<u32>,
        height: Spanned<u32>,
        axis: Option<Axis>,
        gap: Option<Spanned<f32>>,
    }
);
entry_table!(
    struct RawCube {
        position: V3,
        rotation: Option<Spanned<[f32; 4]>>,
        linear_velocity: Option<V3>,
        angular_velocity: Option<V3>,
    }
);

pub(super) struct MaterialKeys<'a> {
    pub(super) half_extent: Option<&'a Spanned<HalfExtent>>,
    pub(super) density: Option<&'a Spanned<f32>>,
    pub(super) friction: Option<&'a Spanned<f32>>,
    pub(super) restitution: Option<&'a Spanned<f32>>,
}

/// The per-body values `[defaults]` sets and entries override.
#[derive(Clone, Copy, Debug)]
pub(super) struct Material {
    pub(super) half_extents: Vec3,
    pub(super) density: f32,
    pub(super) friction: f32,
    pub(super) restitution: f32,
}

impl From<&BodyDesc> for Material {
    fn from(d: &BodyDesc) -> Self {
        Material {
            half_extents: d.half_extents,
            density: d.density,
            friction: d.friction,
            restitution: d.restitution,
        }
    }
}

impl Material {
    pub(super) fn body(&self, position: Vec3) -> BodyDesc {
        BodyDesc {
            half_extents: self.half_extents,
            density: self.density,
            friction: self.friction,
            restitution: self.restitution,
            position,
            ..BodyDesc::default()
        }
    }
}

/// One table of any kind.
pub(super) enum RawEntry {
    Tower(RawTower),
    Pyramid(RawPyramid),
    Grid(RawGrid),
    Wall(RawWall),
    Cube(RawCube),
}

/// Tags the entries of one kind with their byte offset (to sort them into file order) and their 1-based
/// ordinal among their kind (for error messages).
pub(super) fn numbered<T>(
    kind: &'static str,
    list: Vec<Spanned<T>>,
    wrap: fn(T) -> RawEntry,
) -> impl Iterator<Item = (usize, &'static str, usize, RawEntry)> {
    let tag = move |(i, e): (usize, Spanned<T>)| (e.span().start, kind, i + 1, wrap(e.into_inner()));
    list.into_iter().enumerate().map(tag)
}

/// What an entry's errors about placement point at: its anchor value and key.
pub(super) type Anchor<'e> = (&'e V3, &'static str);

impl RawEntry {
    /// Checks the entry and appends its bodies.
    pub(super) fn expand(
        &self,
        src: &Source,
        base: Material,
        out: &mut Vec<BodyDesc>,
    ) -> Result<Anchor<'_>, SceneError> {
        match self {
            RawEntry::Tower(t) => tower(src, t, material(src, base, t.material())?, out),
            RawEntry::Pyramid(p) => pyramid(src, p, material(src, base, p.material())?, out),
            RawEntry::Grid(g) => grid(src, g, material(src, base, g.material())?, out),
            RawEntry::Wall(w) => wall(src, w, material(src, base, w.material())?, out),
            RawEntry::Cube(c) => cube(src, c, material(src, base, c.material())?, out),
        }
    }
}

pub(super) fn tower<'e>(
    src: &Source,
    t: &'e RawTower,
    m: Material,
    out: &mut Vec<BodyDesc>,
) -> Result<Anchor<'e>, SceneError> {
    let base = vec3(src, &t.base, "base")?;
    let n = count(src, &t.height, "height")?;
    reserve(src, &t.height, "height", out.len(), n.into())?;
    let gap = gap(src, t.gap.as_ref())?;
    for k in 0..n {
        // Odd multiples of the half extent keep unit cubes on exact multiples of 0.5 m.
        let y = m.half_extents.y * (2 * k + 1) as f32 + gap * k as f32;
        out.push(m.body(base + Vec3::Y * y));
    }
    Ok((&t.base, "base"))
}

pub(super) fn pyramid<'e>(
    src: &Source,
    p: &'e RawPyramid,
    m: Material,
    out: &mut Vec<BodyDesc>,
) -> Result<Anchor<'e>, SceneError> {
    let base = vec3(src, &p.base, "base")?;
    let n = count(src, &p.count, "count")?;
    reserve(src, &p.count, "count", out.len(), u64::from(n) * (u64::from(n) + 1) / 2)?;
    let axis = p.axis.unwrap_or(Axis::X).index();
    let pitch = 2.0 * m.half_extents[axis] + gap(src, p.gap.as_ref())?;
    for r in 0..n {
        // Each row is centred like the one below with one cube fewer, so it sits offset by half a cube.
        let centre = base + Vec3::Y * (m.half_extents.y * (2 * r + 1) as f32);
        row(centre, axis, n - r, pitch, |p| out.push(m.body(p)));
    }
    Ok((&p.base, "base"))
}

pub(super) fn grid<'e>(
    src: &Source,
    g: &'e RawGrid,
    m: Material,
    out: &mut Vec<BodyDesc>,
) -> Result<Anchor<'e>, SceneError> {
    let origin = vec3(src, &g.origin, "origin")?;
    let n = *g.count.get_ref();
    if n.contains(&0) {
        return Err(src.error(
            g.count.span(),
            "count",
            format!("{n:?} must be at least 1 on every axis"),
        ));
    }
    reserve(
        src,
        &g.count,
        "count",
        out.len(),
        n.iter().fold(1, |t: u64, &c| t.saturating_mul(c.into())),
    )?;
    let size = 2.0 * m.half_extents;
    let spacing = match &g.spacing {
        None => size,
        Some(s) => {
            let v = vec3(src, s, "spacing")?;
            if (0..3).any(|a| n[a] > 1 && v[a] < size[a]) {
                let msg = format!("{v} is less than the cube size {size}: cubes would overlap");
                return Err(src.error(s.span(), "spacing", msg));
            }
            v
        }
    };
    for j in 0..n[1] {
        for k in 0..n[2] {
            for i in 0..n[0] {
                out.push(m.body(origin + Vec3::new(i as f32, j as f32, k as f32) * spacing));
            }
        }
    }
    Ok((&g.origin, "origin"))
}

pub(super) fn wall<'e>(
    src: &Source,
    w: &'e RawWall,
    m: Material,
    out: &mut Vec<BodyDesc>,
) -> Result<Anchor<'e>, SceneError> {
    let base = vec3(src, &w.base, "base")?;
    let width = count(src, &w.width, "width")?;
    let height = count(src, &w.height, "height")?;
    if height > 1 && width < 2 {
        let msg = "a wall of more than one row needs width ≥ 2 (offset rows have width − 1 cubes)";
        return Err(src.error(w.width.span(), "width", msg));
    }
    let total = u64::from(height.div_ceil(2)) * u64::from(width) + u64::from(height / 2) * u64::from(width - 1);
    reserve(src, &w.height, "height", out.len(), total)?;
    let axis = w.axis.unwrap_or(Axis::X).index();
    let pitch = 2.0 * m.half_extents[axis] + gap(src, w.gap.as_ref())?;
    for r in 0..height {
        // Odd rows have one brick fewer, centred, so that each of their bricks bridges a joint below.
        let centre = base + Vec3::Y * (m.half_extents.y * (2 * r + 1) as f32);
        row(centre, axis, width - r % 2, pitch, |p| out.push(m.body(p)));
    }
    Ok((&w.base, "base"))
}

pub(super) fn cube<'e>(
    src: &Source,
    c: &'e RawCube,
    m: Material,
    out: &mut Vec<BodyDesc>,
) -> Result<Anchor<'e>, SceneError> {
    let position = vec3(src, &c.position, "position")?;
    reserve(src, &c.position, "position", out.len(), 1)?;
    let rotation = match &c.rotation {
        None => Quat::IDENTITY,
        Some(r) => {
            let q = Quat::from_array(*r.get_ref());
            let len = q.length();
            if !(len.is_finite() && (len - 1.0).abs() <= ROTATION_LENGTH_TOLERANCE) {
                let tolerance = ROTATION_LENGTH_TOLERANCE;
                let msg = format!("{q} has length {len}, not 1 ± {tolerance}: not a rotation [x, y, z, w]");
                return Err(src.error(r.span(), "rotation", msg));
            }
            q / len
        }
    };
    let linear = velocity(
        src,
        c.linear_velocity.as_ref(),
        "linear_velocity",
        MAX_LINEAR_SPEED_M_S,
        "m/s",
    )?;
    let angular = velocity(
        src,
        c.angular_velocity.as_ref(),
        "angular_velocity",
        MAX_ANGULAR_SPEED_RAD_S,
        "rad/s",
    )?;
    out.push(BodyDesc {
        rotation,
        linear_velocity: linear,
        angular_velocity: angular,
        ..m.body(position)
    });
    Ok((&c.position, "position"))
}

/// Calls `f` with the centres of `n` cubes in a row along `axis`, centred on `centre`, `pitch` apart. Each
/// offset is an integer times half the pitch, so unit cubes land exactly on multiples of 0.5 m.
pub(super) fn row(centre: Vec3, axis: usize, n: u32, pitch: f32, mut f: impl FnMut(Vec3)) {
    let half_pitch = 0.5 * pitch;
    for i in 0..n {
        let mut p = centre;
        p[axis] += (2 * i64::from(i) - (i64::from(n) - 1)) as f32 * half_pitch;
        f(p);
    }
}
