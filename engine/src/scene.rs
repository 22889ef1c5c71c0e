//! Scene files: TOML under `assets/scenes/` (the format is documented in `assets/scenes/README.md`), turned
//! into a flat, deterministic list of [`BodyDesc`]s for a [`World`].
//!
//! Parsing has two passes. Serde (with `deny_unknown_fields`) turns the text into raw entries that keep the
//! source spans of every value whose meaning we check; then each entry is checked and expanded, in file order.
//! Scene files are written by hand, so every error names the file, the 1-based line and the key.

use std::fmt::Display;
use std::ops::Range;
use std::path::Path;

use glam::{Quat, Vec3};
use serde::Deserialize;
use toml::Spanned;

use crate::physics::body::{
    MAX_DENSITY_KG_M3, MAX_FRICTION, MAX_HALF_EXTENT_M, MAX_POSITION_M, MIN_DENSITY_KG_M3, MIN_HALF_EXTENT_M,
};
use crate::physics::{BodyDesc, PhysicsError, World, WorldConfig, MAX_ANGULAR_SPEED_RAD_S, MAX_LINEAR_SPEED_M_S};

/// Most bodies one scene may make: more is surely a typo (a pyramid of 1000 is 500,500 cubes).
pub const MAX_SCENE_BODIES: usize = 100_000;
/// Longest fixed step a scene may ask for (s); the default is 1/90 s.
pub const MAX_DT_S: f32 = 0.1;
/// Strongest gravity a scene may ask for (m/s², about 100 g).
pub const MAX_GRAVITY_M_S2: f32 = 1000.0;
/// A rotation whose length is off by at most this fraction is normalised; a larger error is refused as a typo.
pub const ROTATION_LENGTH_TOLERANCE: f32 = 0.01;

/// A parsed scene: world settings and every body, ready for [`Scene::build_world`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    pub name: String,
    /// m/s².
    pub gravity: Vec3,
    /// Fixed step (s).
    pub dt: f32,
    /// Entries in file order, each generator expanded bottom row first.
    pub bodies: Vec<BodyDesc>,
    /// The file the scene came from, as given to [`parse_scene`]; used in error messages.
    pub file: String,
    /// Which entry made which bodies, so that a body the engine refuses can be traced to its line. May be
    /// empty for scenes built in code.
    pub entries: Vec<SceneEntry>,
    /// Where a player starts (`[spawn]`), if the file says; otherwise the game picks a spot in front of the cubes.
    pub spawn: Option<Spawn>,
}

/// A player's starting spot: standing at `position` (m, on the floor: its height is where the feet are), facing
/// the point `facing` (only its horizontal direction counts).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spawn {
    pub position: Vec3,
    pub facing: Vec3,
}

impl Spawn {
    /// The turn about +y (rad) that takes the player's forward, −z, towards `facing`.
    pub fn yaw_rad(&self) -> f32 {
        let d = self.facing - self.position;
        (-d.x).atan2(-d.z)
    }
}

/// One table of a scene file (`[[tower]]`, `[[cube]]`, …) and the bodies it made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SceneEntry {
    /// `"tower"`, `"pyramid"`, `"grid"`, `"wall"` or `"cube"`.
    pub kind: &'static str,
    /// 1-based among the entries of its kind, as a reader counts `[[kind]]` tables.
    pub ordinal: usize,
    /// 1-based line where the entry's table starts.
    pub line: usize,
    /// Indices into [`Scene::bodies`].
    pub bodies: Range<usize>,
}

impl Default for Scene {
    /// An empty scene with the engine's default gravity and step.
    fn default() -> Self {
        let config = WorldConfig::default();
        Scene {
            name: String::new(),
            gravity: config.gravity,
            dt: config.dt,
            bodies: Vec::new(),
            file: String::new(),
            entries: Vec::new(),
            spawn: None,
        }
    }
}

/// Why a scene could not be read, parsed or built.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    #[error("{file}: cannot read scene file: {source}")]
    Io { file: String, source: std::io::Error },
    /// Syntax errors, unknown keys, wrong types and bad values. `key` is `None` only for syntax errors
    /// that are not at a key.
    #[error("{file}:{line}: {}{message}", key_prefix(.key))]
    Invalid {
        file: String,
        line: usize,
        key: Option<String>,
        message: String,
    },
    #[error("{file}: the engine refused the world configuration: {source}")]
    Config { file: String, source: PhysicsError },
    #[error("{file}:{line}: {entry} (body {body}): the engine refused it: {source}")]
    Refused {
        file: String,
        line: usize,
        /// Like `[[tower]] #2`.
        entry: String,
        /// Index into [`Scene::bodies`].
        body: usize,
        source: PhysicsError,
    },
}

fn key_prefix(key: &Option<String>) -> String {
    key.as_ref().map_or_else(String::new, |k| format!("key `{k}`: "))
}

/// Reads and parses a scene file; errors name the path as given.
pub fn load_scene(path: &Path) -> Result<Scene, SceneError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
        file: file.clone(),
        source,
    })?;
    parse_scene(&text, &file)
}

/// Parses scene text; `file` is only used in error messages and as the default name.
pub fn parse_scene(text: &str, file: &str) -> Result<Scene, SceneError> {
    let src = Source { file, text };
    let raw: RawScene = toml::from_str(text).map_err(|e| src.toml_error(&e))?;

    let defaults = WorldConfig::default();
    let gravity = match &raw.gravity {
        None => defaults.gravity,
        Some(g) => {
            let v = vec3(&src, g, "gravity")?;
            if v.length() > MAX_GRAVITY_M_S2 {
                let msg = format!("{v} is stronger than {MAX_GRAVITY_M_S2} m/s²");
                return Err(src.error(g.span(), "gravity", msg));
            }
            v
        }
    };
    let dt = match &raw.dt {
        None => defaults.dt,
        Some(dt) => number(
            &src,
            dt,
            "dt",
            |x| x > 0.0 && x <= MAX_DT_S,
            &format!("in (0, {MAX_DT_S}] s"),
        )?,
    };
    let base = match &raw.defaults {
        None => Material::from(&BodyDesc::default()),
        Some(d) => material(&src, Material::from(&BodyDesc::default()), d.material())?,
    };

    // Each kind deserialises into its own list; the spans give back the order of the tables in the file.
    let mut order: Vec<_> = numbered("tower", raw.tower, RawEntry::Tower)
        .chain(numbered("pyramid", raw.pyramid, RawEntry::Pyramid))
        .chain(numbered("grid", raw.grid, RawEntry::Grid))
        .chain(numbered("wall", raw.wall, RawEntry::Wall))
        .chain(numbered("cube", raw.cube, RawEntry::Cube))
        .collect();
    order.sort_by_key(|(start, ..)| *start);

    let mut bodies = Vec::new();
    let mut entries = Vec::new();
    for (start, kind, ordinal, entry) in order {
        let first = bodies.len();
        let (anchor, anchor_key) = entry.expand(&src, base, &mut bodies)?;
        // Generators can place cubes far from their anchor: check every centre, not just the anchor.
        if let Some(b) = bodies[first..]
            .iter()
            .find(|b| b.position.abs().max_element() > MAX_POSITION_M)
        {
            let msg = format!("places a cube at {}, beyond ±{MAX_POSITION_M} m", b.position);
            return Err(src.error(anchor.span(), anchor_key, msg));
        }
        entries.push(SceneEntry {
            kind,
            ordinal,
            line: src.line(start),
            bodies: first..bodies.len(),
        });
    }

    let spawn = match &raw.spawn {
        None => None,
        Some(sp) => Some(spawn(&src, sp)?),
    };
    let name = raw.name.unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
    });
    Ok(Scene {
        name,
        gravity,
        dt,
        bodies,
        file: file.to_owned(),
        entries,
        spawn,
    })
}

/// `[spawn]`: a position within the world's bounds and a point to face that is somewhere else horizontally.
fn spawn(src: &Source, raw: &RawSpawn) -> Result<Spawn, SceneError> {
    let position = vec3(src, &raw.position, "spawn.position")?;
    if position.abs().max_element() > MAX_POSITION_M {
        let msg = format!("{position} is beyond ±{MAX_POSITION_M} m");
        return Err(src.error(raw.position.span(), "spawn.position", msg));
    }
    let facing = match &raw.facing {
        None => position - Vec3::Z,
        Some(f) => {
            let v = vec3(src, f, "spawn.facing")?;
            let flat = Vec3::new(v.x - position.x, 0.0, v.z - position.z);
            if !v.is_finite() || flat.length() < 1e-3 {
                let msg = format!("{v} is right above or below the spawn position: no direction to face");
                return Err(src.error(f.span(), "spawn.facing", msg));
            }
            v
        }
    };
    Ok(Spawn { position, facing })
}

impl Scene {
    /// `base` with this scene's gravity and step.
    pub fn world_config(&self, base: WorldConfig) -> WorldConfig {
        WorldConfig {
            gravity: self.gravity,
            dt: self.dt,
            ..base
        }
    }

    /// A world configured by [`Scene::world_config`] holding every body; body `i` gets `BodyId(i)`.
    pub fn build_world(&self, base: WorldConfig) -> Result<World, SceneError> {
        let file = self.file.clone();
        let mut world = World::new(self.world_config(base)).map_err(|source| SceneError::Config {
            file: file.clone(),
            source,
        })?;
        for (body, desc) in self.bodies.iter().enumerate() {
            world.add_body(desc).map_err(|source| {
                let entry = self.entries.iter().find(|e| e.bodies.contains(&body));
                SceneError::Refused {
                    file: file.clone(),
                    line: entry.map_or(0, |e| e.line),
                    entry: entry.map_or_else(|| "body".to_owned(), |e| format!("[[{}]] #{}", e.kind, e.ordinal)),
                    body,
                    source,
                }
            })?;
        }
        Ok(world)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Raw file structure. `toml::Spanned` keeps the byte range of each value we check after parsing.

type V3 = Spanned<[f32; 3]>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScene {
    name: Option<String>,
    gravity: Option<V3>,
    dt: Option<Spanned<f32>>,
    defaults: Option<RawDefaults>,
    #[serde(default)]
    tower: Vec<Spanned<RawTower>>,
    #[serde(default)]
    pyramid: Vec<Spanned<RawPyramid>>,
    #[serde(default)]
    grid: Vec<Spanned<RawGrid>>,
    #[serde(default)]
    wall: Vec<Spanned<RawWall>>,
    #[serde(default)]
    cube: Vec<Spanned<RawCube>>,
    spawn: Option<RawSpawn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpawn {
    position: V3,
    facing: Option<V3>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(untagged, expecting = "a number or an array of 3 numbers")]
enum HalfExtent {
    Cube(f32),
    Box([f32; 3]),
}

/// The horizontal axis a pyramid or wall runs along; it stands in the vertical plane through that axis.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Axis {
    X,
    Z,
}

impl Axis {
    fn index(self) -> usize {
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
        struct $name {
            $($field: $ty,)*
            half_extent: Option<Spanned<HalfExtent>>,
            density: Option<Spanned<f32>>,
            friction: Option<Spanned<f32>>,
            restitution: Option<Spanned<f32>>,
        }
        impl $name {
            fn material(&self) -> MaterialKeys<'_> {
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

struct MaterialKeys<'a> {
    half_extent: Option<&'a Spanned<HalfExtent>>,
    density: Option<&'a Spanned<f32>>,
    friction: Option<&'a Spanned<f32>>,
    restitution: Option<&'a Spanned<f32>>,
}

/// The per-body values `[defaults]` sets and entries override.
#[derive(Clone, Copy, Debug)]
struct Material {
    half_extents: Vec3,
    density: f32,
    friction: f32,
    restitution: f32,
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
    fn body(&self, position: Vec3) -> BodyDesc {
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
enum RawEntry {
    Tower(RawTower),
    Pyramid(RawPyramid),
    Grid(RawGrid),
    Wall(RawWall),
    Cube(RawCube),
}

/// Tags the entries of one kind with their byte offset (to sort them into file order) and their 1-based
/// ordinal among their kind (for error messages).
fn numbered<T>(
    kind: &'static str,
    list: Vec<Spanned<T>>,
    wrap: fn(T) -> RawEntry,
) -> impl Iterator<Item = (usize, &'static str, usize, RawEntry)> {
    let tag = move |(i, e): (usize, Spanned<T>)| (e.span().start, kind, i + 1, wrap(e.into_inner()));
    list.into_iter().enumerate().map(tag)
}

/// What an entry's errors about placement point at: its anchor value and key.
type Anchor<'e> = (&'e V3, &'static str);

impl RawEntry {
    /// Checks the entry and appends its bodies.
    fn expand(&self, src: &Source, base: Material, out: &mut Vec<BodyDesc>) -> Result<Anchor<'_>, SceneError> {
        match self {
            RawEntry::Tower(t) => tower(src, t, material(src, base, t.material())?, out),
            RawEntry::Pyramid(p) => pyramid(src, p, material(src, base, p.material())?, out),
            RawEntry::Grid(g) => grid(src, g, material(src, base, g.material())?, out),
            RawEntry::Wall(w) => wall(src, w, material(src, base, w.material())?, out),
            RawEntry::Cube(c) => cube(src, c, material(src, base, c.material())?, out),
        }
    }
}

fn tower<'e>(src: &Source, t: &'e RawTower, m: Material, out: &mut Vec<BodyDesc>) -> Result<Anchor<'e>, SceneError> {
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

fn pyramid<'e>(
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

fn grid<'e>(src: &Source, g: &'e RawGrid, m: Material, out: &mut Vec<BodyDesc>) -> Result<Anchor<'e>, SceneError> {
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

fn wall<'e>(src: &Source, w: &'e RawWall, m: Material, out: &mut Vec<BodyDesc>) -> Result<Anchor<'e>, SceneError> {
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

fn cube<'e>(src: &Source, c: &'e RawCube, m: Material, out: &mut Vec<BodyDesc>) -> Result<Anchor<'e>, SceneError> {
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
fn row(centre: Vec3, axis: usize, n: u32, pitch: f32, mut f: impl FnMut(Vec3)) {
    let half_pitch = 0.5 * pitch;
    for i in 0..n {
        let mut p = centre;
        p[axis] += (2 * i64::from(i) - (i64::from(n) - 1)) as f32 * half_pitch;
        f(p);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Checks. Each names the key and points at its value's line.

/// The scene text and its name, for turning byte spans into `file:line` errors.
struct Source<'a> {
    file: &'a str,
    text: &'a str,
}

impl Source<'_> {
    /// 1-based line of a byte offset.
    fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1
    }

    fn error(&self, span: Range<usize>, key: &str, message: impl Display) -> SceneError {
        SceneError::Invalid {
            file: self.file.to_owned(),
            line: self.line(span.start),
            key: Some(key.to_owned()),
            message: message.to_string(),
        }
    }

    /// toml's errors carry a span and a message but not the key, so the key is recovered from the message
    /// (unknown, missing or duplicate keys) or from the text at the span.
    fn toml_error(&self, e: &toml::de::Error) -> SceneError {
        let message = e.message().trim().replace('\n', "; ");
        let start = e.span().map_or(0, |s| s.start);
        let named = ["unknown field", "missing field", "duplicate key"]
            .iter()
            .any(|p| message.starts_with(p))
            .then(|| message.split('`').nth(1).map(str::to_owned))
            .flatten();
        SceneError::Invalid {
            file: self.file.to_owned(),
            line: self.line(start),
            key: named.or_else(|| key_near(self.text, start)),
            message,
        }
    }
}

/// The key a byte offset belongs to: the name of the table header on its line, a key starting right there,
/// or else the nearest `key =` before it (the offset is inside that key's value, which may span lines).
fn key_near(text: &str, offset: usize) -> Option<String> {
    let offset = (0..=offset.min(text.len())).rev().find(|&i| text.is_char_boundary(i))?;
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | '\'');
    let clean = |k: &str| Some(k.trim().trim_matches(|c| c == '"' || c == '\'').to_owned()).filter(|k| !k.is_empty());
    let line_rest = text[offset..].lines().next().unwrap_or("");
    let line = text[text[..offset].rfind('\n').map_or(0, |i| i + 1)..].trim_start();
    if line.starts_with('[') {
        return clean(line.trim_start_matches('[').split(']').next()?);
    }
    let key_len = line_rest.find(|c| !is_key_char(c)).unwrap_or(line_rest.len());
    if key_len > 0 && line_rest[key_len..].trim_start().starts_with('=') {
        return clean(&line_rest[..key_len]);
    }
    let before = text[..offset].rfind('=').map(|eq| text[..eq].trim_end())?;
    let key_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_key_char(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    clean(&before[key_start..])
}

/// A finite number that passes `ok`; `expected` completes "… is not …".
fn number(
    src: &Source,
    v: &Spanned<f32>,
    key: &str,
    ok: impl Fn(f32) -> bool,
    expected: &str,
) -> Result<f32, SceneError> {
    let x = *v.get_ref();
    if x.is_finite() && ok(x) {
        Ok(x)
    } else {
        Err(src.error(v.span(), key, format!("{x} is not {expected}")))
    }
}

fn vec3(src: &Source, v: &V3, key: &str) -> Result<Vec3, SceneError> {
    let a = *v.get_ref();
    if a.iter().all(|x| x.is_finite()) {
        Ok(Vec3::from_array(a))
    } else {
        Err(src.error(v.span(), key, format!("{a:?} is not finite (NaN or infinity)")))
    }
}

fn velocity(src: &Source, v: Option<&V3>, key: &str, max: f32, unit: &str) -> Result<Vec3, SceneError> {
    let Some(v) = v else { return Ok(Vec3::ZERO) };
    let x = vec3(src, v, key)?;
    if x.length() > max {
        return Err(src.error(
            v.span(),
            key,
            format!("{x} is faster than the engine's limit of {max} {unit}"),
        ));
    }
    Ok(x)
}

fn count(src: &Source, v: &Spanned<u32>, key: &str) -> Result<u32, SceneError> {
    match *v.get_ref() {
        0 => Err(src.error(v.span(), key, "must be at least 1")),
        n => Ok(n),
    }
}

/// Gap between neighbouring cubes (m): 0 (touching) unless given.
fn gap(src: &Source, v: Option<&Spanned<f32>>) -> Result<f32, SceneError> {
    v.map_or(Ok(0.0), |g| number(src, g, "gap", |x| x >= 0.0, "≥ 0 m"))
}

/// Refuses an entry that would take the scene past [`MAX_SCENE_BODIES`], before any of it is built.
fn reserve<T>(src: &Source, at: &Spanned<T>, key: &str, so_far: usize, adding: u64) -> Result<(), SceneError> {
    let total = (so_far as u64).saturating_add(adding);
    if total > MAX_SCENE_BODIES as u64 {
        let msg =
            format!("makes {adding} bodies, {total} in the scene so far, more than the limit of {MAX_SCENE_BODIES}");
        return Err(src.error(at.span(), key, msg));
    }
    Ok(())
}

fn material(src: &Source, base: Material, keys: MaterialKeys) -> Result<Material, SceneError> {
    let mut m = base;
    if let Some(h) = keys.half_extent {
        let v = match *h.get_ref() {
            HalfExtent::Cube(s) => Vec3::splat(s),
            HalfExtent::Box(a) => Vec3::from_array(a),
        };
        if !v
            .to_array()
            .iter()
            .all(|x| (MIN_HALF_EXTENT_M..=MAX_HALF_EXTENT_M).contains(x))
        {
            let msg = format!("{v} is outside {MIN_HALF_EXTENT_M}..={MAX_HALF_EXTENT_M} m");
            return Err(src.error(h.span(), "half_extent", msg));
        }
        m.half_extents = v;
    }
    if let Some(d) = keys.density {
        let expected = format!("in {MIN_DENSITY_KG_M3}..={MAX_DENSITY_KG_M3} kg/m³");
        let in_range = |x: f32| (MIN_DENSITY_KG_M3..=MAX_DENSITY_KG_M3).contains(&x);
        m.density = number(src, d, "density", in_range, &expected)?;
    }
    if let Some(f) = keys.friction {
        m.friction = number(
            src,
            f,
            "friction",
            |x| (0.0..=MAX_FRICTION).contains(&x),
            &format!("in 0..={MAX_FRICTION}"),
        )?;
    }
    if let Some(r) = keys.restitution {
        m.restitution = number(src, r, "restitution", |x| (0.0..=1.0).contains(&x), "in 0..=1")?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/scenes/");

    fn parse(text: &str) -> Scene {
        parse_scene(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn shipped(name: &str) -> Scene {
        load_scene(&Path::new(SCENES).join(name)).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The error message for `text` parsed as `bad.toml`.
    fn error(text: &str) -> String {
        parse_scene(text, "bad.toml").expect_err("should not parse").to_string()
    }

    fn positions(s: &Scene) -> Vec<[f32; 3]> {
        s.bodies.iter().map(|b| b.position.to_array()).collect()
    }

    #[test]
    fn tower_stacks_cubes_exactly_touching() {
        let s = parse("[[tower]]\nbase = [1.0, 0.0, -2.0]\nheight = 30\n");
        assert_eq!(s.bodies.len(), 30);
        for (k, b) in s.bodies.iter().enumerate() {
            assert_eq!(b.position, Vec3::new(1.0, 0.5 + k as f32, -2.0));
            assert_eq!(b.half_extents, Vec3::splat(0.5));
        }
        assert_eq!(s.bodies[29].position.y, 29.5);
        let gapped = parse("[[tower]]\nbase = [0, 1, 0]\nheight = 3\ngap = 0.5\nhalf_extent = 0.25\n");
        assert_eq!(
            positions(&gapped),
            [[0.0, 1.25, 0.0], [0.0, 2.25, 0.0], [0.0, 3.25, 0.0]]
        );
    }

    #[test]
    fn pyramid_rows_shrink_by_one_and_shift_by_half_a_cube() {
        let s = parse("[[pyramid]]\nbase = [0, 0, 0]\ncount = 20\naxis = \"x\"\n");
        assert_eq!(s.bodies.len(), 210);
        assert_eq!(s.bodies[0].position, Vec3::new(-9.5, 0.5, 0.0));
        assert_eq!(s.bodies[19].position, Vec3::new(9.5, 0.5, 0.0));
        assert_eq!(s.bodies[20].position, Vec3::new(-9.0, 1.5, 0.0)); // second row, half a cube in
        assert_eq!(s.bodies[209].position, Vec3::new(0.0, 19.5, 0.0)); // the apex
        let small = parse("[[pyramid]]\nbase = [1, 0, 2]\ncount = 3\naxis = \"z\"\ngap = 0.5\n");
        let expected = [
            [1.0, 0.5, 0.5],
            [1.0, 0.5, 2.0],
            [1.0, 0.5, 3.5],
            [1.0, 1.5, 1.25],
            [1.0, 1.5, 2.75],
            [1.0, 2.5, 2.0],
        ];
        assert_eq!(positions(&small), expected);
    }

    #[test]
    fn grid_starts_at_origin_bottom_layer_first() {
        let s = parse("[[grid]]\norigin = [-1, 0.5, 0]\ncount = [3, 2, 2]\nspacing = [2, 1, 3]\n");
        assert_eq!(s.bodies.len(), 12);
        assert_eq!(s.bodies[0].position, Vec3::new(-1.0, 0.5, 0.0));
        assert_eq!(s.bodies[2].position, Vec3::new(3.0, 0.5, 0.0));
        assert_eq!(s.bodies[3].position, Vec3::new(-1.0, 0.5, 3.0));
        assert_eq!(s.bodies[6].position, Vec3::new(-1.0, 1.5, 0.0));
        // Without spacing the cubes touch.
        let touching = parse("[[grid]]\norigin = [0, 0.5, 0]\ncount = [2, 1, 1]\n");
        assert_eq!(positions(&touching), [[0.0, 0.5, 0.0], [1.0, 0.5, 0.0]]);
    }

    #[test]
    fn wall_offset_rows_have_one_brick_fewer() {
        let s = parse("[[wall]]\nbase = [0, 0, 5]\nwidth = 4\nheight = 3\naxis = \"x\"\n");
        let expected = [
            [-1.5, 0.5, 5.0],
            [-0.5, 0.5, 5.0],
            [0.5, 0.5, 5.0],
            [1.5, 0.5, 5.0],
            [-1.0, 1.5, 5.0],
            [0.0, 1.5, 5.0],
            [1.0, 1.5, 5.0],
            [-1.5, 2.5, 5.0],
            [-0.5, 2.5, 5.0],
            [0.5, 2.5, 5.0],
            [1.5, 2.5, 5.0],
        ];
        assert_eq!(positions(&s), expected);
        let along_z = parse("[[wall]]\nbase = [0, 0, 0]\nwidth = 2\nheight = 2\naxis = \"z\"\n");
        assert_eq!(
            positions(&along_z),
            [[0.0, 0.5, -0.5], [0.0, 0.5, 0.5], [0.0, 1.5, 0.0]]
        );
    }

    #[test]
    fn cube_takes_pose_velocities_and_box_extents() {
        let s = parse(
            "[[cube]]\nposition = [1, 2, 3]\nrotation = [0, 0.7072, 0, 0.7072]\nlinear_velocity = [20, 0, 0]\n\
             angular_velocity = [0, 1, 0]\nhalf_extent = [0.5, 0.25, 1.0]\n",
        );
        let b = s.bodies[0];
        assert_eq!(b.position, Vec3::new(1.0, 2.0, 3.0));
        assert!((b.rotation.length() - 1.0).abs() < 1e-6, "rotation is normalised");
        assert_eq!(b.linear_velocity, Vec3::new(20.0, 0.0, 0.0));
        assert_eq!(b.angular_velocity, Vec3::Y);
        assert_eq!(b.half_extents, Vec3::new(0.5, 0.25, 1.0));
        let plain = parse("[[cube]]\nposition = [0, 0.5, 0]\n");
        assert_eq!(
            plain.bodies[0],
            BodyDesc {
                position: Vec3::new(0.0, 0.5, 0.0),
                ..BodyDesc::default()
            }
        );
    }

    #[test]
    fn defaults_apply_and_entries_override_them() {
        let s = parse(
            "[defaults]\nhalf_extent = 0.25\ndensity = 2.0\nfriction = 0.3\nrestitution = 0.1\n\n\
             [[tower]]\nbase = [0, 0, 0]\nheight = 2\n\n\
             [[cube]]\nposition = [5, 0.5, 0]\nhalf_extent = 0.5\nfriction = 0.9\n",
        );
        let (t, c) = (s.bodies[0], s.bodies[2]);
        assert_eq!(
            (t.half_extents, t.density, t.friction, t.restitution),
            (Vec3::splat(0.25), 2.0, 0.3, 0.1)
        );
        assert_eq!(s.bodies[1].position.y, 0.75);
        assert_eq!(
            (c.half_extents, c.density, c.friction, c.restitution),
            (Vec3::splat(0.5), 2.0, 0.9, 0.1)
        );
    }

    #[test]
    fn world_settings_default_and_override() {
        let s = parse_scene("[[cube]]\nposition = [0, 0.5, 0]\n", "dir/plain.toml").unwrap();
        assert_eq!(
            (s.name.as_str(), s.gravity, s.dt),
            ("plain", Vec3::new(0.0, -9.81, 0.0), 1.0 / 90.0)
        );
        let s = parse("name = \"moon\"\ngravity = [0, -1.62, 0]\ndt = 0.01\n");
        assert_eq!(
            (s.name.as_str(), s.gravity, s.dt),
            ("moon", Vec3::new(0.0, -1.62, 0.0), 0.01)
        );
        let config = s.world_config(WorldConfig {
            velocity_iterations: 3,
            ..WorldConfig::default()
        });
        assert_eq!(
            (config.gravity, config.dt, config.velocity_iterations),
            (s.gravity, 0.01, 3)
        );
    }

    #[test]
    fn entries_keep_file_order_across_kinds() {
        let s = parse(
            "[[cube]]\nposition = [9, 0.5, 0]\n\n[[tower]]\nbase = [0, 0, 0]\nheight = 2\n\n\
             [[cube]]\nposition = [-9, 0.5, 0]\n",
        );
        assert_eq!(
            positions(&s),
            [[9.0, 0.5, 0.0], [0.0, 0.5, 0.0], [0.0, 1.5, 0.0], [-9.0, 0.5, 0.0]]
        );
        let kinds: Vec<_> = s
            .entries
            .iter()
            .map(|e| (e.kind, e.ordinal, e.line, e.bodies.clone()))
            .collect();
        assert_eq!(
            kinds,
            [("cube", 1, 1, 0..1), ("tower", 1, 4, 1..3), ("cube", 2, 8, 3..4)]
        );
    }

    /// `[spawn]`: where the player stands and what it faces; the yaw turns −z (forward) towards that point.
    #[test]
    fn a_scene_may_name_a_spawn_point() {
        assert_eq!(parse("[[cube]]\nposition = [0, 0.5, 0]\n").spawn, None);
        let s = parse("[spawn]\nposition = [0, 0, 3]\nfacing = [0, 1, 0]\n")
            .spawn
            .unwrap();
        assert_eq!(s.position, Vec3::new(0.0, 0.0, 3.0));
        assert!(s.yaw_rad().abs() < 1e-6, "facing −z already: {}", s.yaw_rad());
        // Facing +x from the origin: a quarter turn to the right (negative about +y), which takes −z to +x.
        let s = parse("[spawn]\nposition = [0, 0, 0]\nfacing = [5, 0, 0]\n")
            .spawn
            .unwrap();
        let forward = glam::Quat::from_rotation_y(s.yaw_rad()) * Vec3::NEG_Z;
        assert!(forward.distance(Vec3::X) < 1e-5, "{forward}");
        // No facing: forward stays −z.
        let s = parse("[spawn]\nposition = [1, 0, 1]\n").spawn.unwrap();
        assert!(s.yaw_rad().abs() < 1e-6);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let cases = [
            // Unknown key.
            (
                "name = \"t\"\n[[tower]]\nbase = [0, 0, 0]\nheigth = 3\n",
                "bad.toml:4: key `heigth`: unknown field",
            ),
            ("colour = \"red\"\n", "bad.toml:1: key `colour`: unknown field"),
            (
                "[spawn]\nposition = [0, 0, 3]\nfacing = [0, 2, 3]\n",
                "bad.toml:3: key `spawn.facing`: ",
            ),
            (
                "[spawn]\nposition = [0, 0, 99999]\n",
                "bad.toml:2: key `spawn.position`: ",
            ),
            (
                "[spawn]\nfacing = [0, 0, 0]\n",
                "bad.toml:1: key `position`: missing field",
            ),
            ("[defaults]\nmass = 2\n", "bad.toml:2: key `mass`"),
            (
                "# é\ntower = [{ base = [0, 0, 0], heigth = 3 }]\n",
                "bad.toml:2: key `heigth`",
            ),
            // Wrong types.
            (
                "[[tower]]\nbase = [0, 0, 0]\nheight = \"tall\"\n",
                "bad.toml:3: key `height`: invalid type",
            ),
            (
                "[[grid]]\norigin = [0, 0.5, 0]\ncount = [2, 2]\n",
                "bad.toml:3: key `count`",
            ),
            (
                "[[cube]]  # é\nposition = [\n  0,\n  \"up\",\n  0,\n]\n",
                "bad.toml:4: key `position`: invalid type",
            ),
            (
                "[[cube]]\nposition = [0, 0.5, 0]\nrotation = [0, 0, 1]\n",
                "bad.toml:3: key `rotation`",
            ),
            (
                "[[cube]]\nposition = [0, 0.5, 0]\nhalf_extent = \"big\"\n",
                "bad.toml:3: key `half_extent`: a number or an array of 3 numbers",
            ),
            ("[[tower]]\nheight = 3\n", "bad.toml:1: key `base`: missing field"),
            // Bad values.
            (
                "[[cube]]\nposition = [0, nan, 0]\n",
                "bad.toml:2: key `position`: [0.0, NaN, 0.0] is not finite",
            ),
            (
                "[[cube]]\nposition = [0, 0.5, 0]\ndensity = nan\n",
                "bad.toml:3: key `density`: NaN is not",
            ),
            (
                "[[tower]]\nbase = [0, 0, 0]\nheight = 0\n",
                "bad.toml:3: key `height`: must be at least 1",
            ),
            ("[[tower]]\nbase = [0, 0, 0]\nheight = -2\n", "bad.toml:3: key `height`"),
            (
                "[[grid]]\norigin = [0, 0.5, 0]\ncount = [2, 0, 2]\n",
                "bad.toml:3: key `count`: [2, 0, 2] must be at least 1",
            ),
            (
                "[[grid]]\norigin = [0, 0.5, 0]\ncount = [2, 1, 1]\nspacing = [0.5, 1, 1]\n",
                "bad.toml:4: key `spacing`",
            ),
            (
                "[[tower]]\nbase = [0, 0, 0]\nheight = 2\nhalf_extent = 20\n",
                "bad.toml:4: key `half_extent`: [20, 20, 20] is outside",
            ),
            (
                "[[cube]]\nposition = [0, 0.5, 0]\nhalf_extent = [0.5, 0.001, 0.5]\n",
                "bad.toml:3: key `half_extent`",
            ),
            ("dt = 0.5\n", "bad.toml:1: key `dt`: 0.5 is not in (0, 0.1] s"),
            ("dt = 0\n", "bad.toml:1: key `dt`"),
            ("gravity = [0, inf, 0]\n", "bad.toml:1: key `gravity`"),
            (
                "[[cube]]\nposition = [0, 0.5, 0]\nrotation = [0, 0, 0, 0.9]\n",
                "bad.toml:3: key `rotation`: [0, 0, 0, 0.9] has length 0.9, not 1 ± 0.01",
            ),
            (
                "[[cube]]\nposition = [0, 0.5, 0]\nlinear_velocity = [80, 0, 0]\n",
                "bad.toml:3: key `linear_velocity`",
            ),
            (
                "[[cube]]\nposition = [5000, 0.5, 0]\n",
                "bad.toml:2: key `position`: places a cube",
            ),
            (
                "[[pyramid]]\nbase = [0, 0, 0]\ncount = 3\ngap = -0.1\n",
                "bad.toml:4: key `gap`",
            ),
            (
                "[[wall]]\nbase = [0, 0, 0]\nwidth = 1\nheight = 2\n",
                "bad.toml:3: key `width`",
            ),
            // Bad axis.
            (
                "[[pyramid]]\nbase = [0, 0, 0]\ncount = 3\naxis = \"y\"\n",
                "bad.toml:4: key `axis`: unknown variant `y`",
            ),
            // Too many bodies, alone or together.
            (
                "[[pyramid]]\nbase = [0, 0, 0]\ncount = 1000\n",
                "bad.toml:3: key `count`: makes 500500 bodies",
            ),
            (
                "[[grid]]\norigin = [0, 0.5, 0]\ncount = [100, 100, 11]\n",
                "bad.toml:3: key `count`: makes 110000",
            ),
            (
                "[[grid]]\norigin = [0, 0.5, 0]\ncount = [100, 100, 9]\n[[tower]]\nbase = [0, 0, -5]\nheight = 10001\n",
                "bad.toml:6: key `height`: makes 10001 bodies, 100001 in the scene",
            ),
        ];
        for (text, expected) in cases {
            let message = error(text);
            assert!(
                message.contains(expected),
                "for\n{text}\nexpected `{expected}` in\n{message}"
            );
        }
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let cases = [
            (
                "name = \"t\"\n[[tower]\nbase = [0, 0, 0]\n",
                "bad.toml:2: key `tower`: invalid table header",
            ),
            ("name = \"t\"\ndt = \n", "bad.toml:2: key `dt`: invalid string"),
            ("name = \"t\"\nname = \"u\"\n", "bad.toml:2: key `name`: duplicate key"),
        ];
        for (text, expected) in cases {
            let message = error(text);
            assert!(message.starts_with(expected), "expected `{expected}` in\n{message}");
        }
    }

    #[test]
    fn missing_file_names_the_path() {
        let message = load_scene(Path::new("no/such/scene.toml")).unwrap_err().to_string();
        assert!(message.starts_with("no/such/scene.toml: cannot read"), "{message}");
    }

    /// Opposite faces may touch (that is how stacks start) but no two boxes may overlap, judged on the
    /// axis-aligned bounds of each (rotated) box, which is conservative.
    fn assert_no_overlap(s: &Scene) {
        let bounds: Vec<(Vec3, Vec3)> = s
            .bodies
            .iter()
            .map(|b| {
                let m = glam::Mat3::from_quat(b.rotation);
                let r = m.x_axis.abs() * b.half_extents.x
                    + m.y_axis.abs() * b.half_extents.y
                    + m.z_axis.abs() * b.half_extents.z;
                (b.position - r, b.position + r)
            })
            .collect();
        let mut order: Vec<usize> = (0..bounds.len()).collect();
        order.sort_by(|&a, &b| bounds[a].0.x.total_cmp(&bounds[b].0.x));
        for (n, &i) in order.iter().enumerate() {
            assert!(bounds[i].0.y >= -1e-6, "{}: body {i} starts below the ground", s.name);
            for &j in order[n + 1..]
                .iter()
                .take_while(|&&j| bounds[j].0.x < bounds[i].1.x - 1e-6)
            {
                let overlap = (bounds[i].1.min(bounds[j].1) - bounds[i].0.max(bounds[j].0)).min_element();
                assert!(overlap <= 1e-6, "{}: bodies {i} and {j} overlap by {overlap} m", s.name);
            }
        }
    }

    #[test]
    fn shipped_scenes_parse_and_start_apart() {
        let expected = [
            ("tower30.toml", 30),
            ("pyramid20.toml", 210),
            ("table64.toml", 64),
            ("field900.toml", 901),
            ("smash.toml", 31),
            ("large_pyramid.toml", 5050),
            ("towers2x25.toml", 50),
            ("towers2x2x20.toml", 80),
            ("tower_wall.toml", 115),
            ("pyramid_hit.toml", 211),
        ];
        for (file, bodies) in expected {
            let s = shipped(file);
            assert_eq!(s.bodies.len(), bodies, "{file}");
            assert_eq!(s.name, file.trim_end_matches(".toml"));
            assert_no_overlap(&s);
        }
        assert_eq!(shipped("tower30.toml").bodies[29].position, Vec3::new(0.0, 29.5, 0.0));
        let table = shipped("table64.toml");
        assert!(table
            .bodies
            .iter()
            .all(|b| b.position.x.abs() <= 4.5 && b.position.z.abs() <= 4.5));
        assert!(table.bodies.iter().filter(|b| b.rotation != Quat::IDENTITY).count() >= 2);
        assert!(
            table.bodies.iter().any(|b| b.position.y > 3.0),
            "some piles are stacked"
        );
        let field = shipped("field900.toml");
        let thrown = field.bodies[900];
        assert_eq!(thrown.linear_velocity.length(), 20.0);
        assert!(
            field.bodies[..900].iter().any(|b| b.position.z == thrown.position.z),
            "aimed along a row"
        );
    }

    #[test]
    fn build_world_adds_every_body() {
        let s = shipped("smash.toml");
        let world = s.build_world(WorldConfig::default()).unwrap();
        assert_eq!(world.body_count(), 31);
        assert_eq!(world.config().dt, s.dt);
    }

    #[test]
    fn build_world_names_the_entry_of_a_refused_body() {
        let mut s = parse("[[tower]]\nbase = [0, 0, 0]\nheight = 2\n\n[[cube]]\nposition = [0, 5, 0]\n");
        s.bodies[2].position.x = f32::NAN; // Only the engine sees this: the parser would have refused it.
        let message = s.build_world(WorldConfig::default()).unwrap_err().to_string();
        assert!(
            message.starts_with("test.toml:5: [[cube]] #1 (body 2): the engine refused it"),
            "{message}"
        );
    }
}
