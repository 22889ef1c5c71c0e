//! Scene files: TOML under `assets/scenes/` (the format is documented in `assets/scenes/README.md`), turned
//! into a flat, deterministic list of [`BodyDesc`]s for a [`World`].
//!
//! Parsing has two passes. Serde (with `deny_unknown_fields`) turns the text into raw entries that keep the
//! source spans of every value whose meaning we check; then each entry is checked and expanded, in file order.
//! Scene files are written by hand, so every error names the file, the 1-based line and the key.

use std::ops::Range;
use std::path::Path;

use glam::Vec3;

use crate::physics::body::{
    MAX_DENSITY_KG_M3, MAX_FRICTION, MAX_HALF_EXTENT_M, MAX_POSITION_M, MIN_DENSITY_KG_M3, MIN_HALF_EXTENT_M,
};
use crate::physics::{BodyDesc, World, WorldConfig};

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

mod errors;
mod generators;

pub use errors::SceneError;
use errors::*;
use generators::*;

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

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
            ("cubes900.toml", 900),
            ("cubes90.toml", 90),
            ("topple900.toml", 901),
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
