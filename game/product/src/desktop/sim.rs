//! The desktop view's simulation, free of any window: a scene's world, one player (avatar and interaction), the
//! fixed-step clock and the poses to draw. Frames feed it hand input and elapsed time; it takes the 90 Hz steps
//! due, blending the hands from the last frame's input to this one's across the steps a frame takes (so a throw at
//! 30 fps still leaves with the hand's real speed), and keeps the numbers the overlay shows.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tumble_engine::physics::{World, WorldConfig, WorldSnapshot};
use tumble_engine::scene::{load_scene, SceneError};

use crate::avatar::{blend_input, Avatar, AvatarInput};
use crate::fixed_step::{FixedStep, STEP_S};
use crate::interaction::{Interaction, InteractionEvent};
use crate::interpolate::PoseBuffer;

/// Counters and timings for the overlay.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimStats {
    pub steps: u64,
    /// Mean wall time of one step over the last frame's steps (ms).
    pub step_ms: f32,
    pub cubes: usize,
    pub resting: usize,
    pub awake: usize,
    pub grabs: u64,
    pub throws: u64,
}

/// Throws slower than this (m/s) count as putting down, not throwing.
const THROW_COUNT_SPEED_M_S: f32 = 1.0;

pub struct DesktopSim {
    pub scene_path: PathBuf,
    pub scene_name: String,
    pub world: World,
    initial: WorldSnapshot,
    pub avatar: Avatar,
    pub interaction: Interaction,
    pub poses: PoseBuffer,
    fixed: FixedStep,
    last_input: AvatarInput,
    pub paused: bool,
    pub stats: SimStats,
}

impl DesktopSim {
    /// Loads a scene; a bad file is the scene loader's error (naming file, line and key).
    pub fn load(path: &Path) -> Result<DesktopSim, SceneError> {
        let (name, world) = build(path)?;
        let mut poses = PoseBuffer::default();
        poses.reset(&world);
        let mut sim = DesktopSim {
            scene_path: path.to_path_buf(),
            scene_name: name,
            initial: world.snapshot(),
            world,
            avatar: Avatar::default(),
            interaction: Interaction::default(),
            poses,
            fixed: FixedStep::default(),
            last_input: AvatarInput::default(),
            paused: false,
            stats: SimStats::default(),
        };
        sim.count_bodies();
        Ok(sim)
    }

    /// Puts the scene back as it was loaded; hands let go of everything.
    pub fn reset(&mut self) {
        self.world.restore(&self.initial);
        self.interaction.reset();
        self.poses.reset(&self.world);
        self.fixed.clear();
        // Grabs and throws count for the whole session; the rest describes the world.
        self.stats = SimStats {
            grabs: self.stats.grabs,
            throws: self.stats.throws,
            ..SimStats::default()
        };
        self.count_bodies();
    }

    /// Switches to another scene file; on error nothing changes.
    pub fn switch_scene(&mut self, path: &Path) -> Result<(), SceneError> {
        let (name, world) = build(path)?;
        self.initial = world.snapshot();
        self.world = world;
        self.scene_path = path.to_path_buf();
        self.scene_name = name;
        self.reset();
        Ok(())
    }

    /// The centre and radius (m) of a sphere around every body in the simulation (for framing the camera).
    pub fn bounds(&self) -> (glam::Vec3, f32) {
        super::mode::bounds_of(&self.world)
    }

    /// Where the frame lies between the last two steps (for [`PoseBuffer::interpolated`]).
    pub fn alpha(&self) -> f32 {
        if self.paused {
            1.0
        } else {
            self.fixed.alpha()
        }
    }

    /// One frame: `frame_s` of wall time with this frame's hand input. Returns the steps taken.
    pub fn advance(&mut self, frame_s: f64, input: &AvatarInput) -> u32 {
        let steps = if self.paused { 0 } else { self.fixed.advance(frame_s) };
        self.run_steps(steps, input);
        steps
    }

    /// One step now, paused or not (the single-step key).
    pub fn single_step(&mut self, input: &AvatarInput) {
        self.run_steps(1, input);
    }

    fn run_steps(&mut self, steps: u32, input: &AvatarInput) {
        if steps == 0 {
            return;
        }
        let start = Instant::now();
        for k in 1..=steps {
            let blended = blend_input(&self.last_input, input, k as f32 / steps as f32);
            self.step_once(&blended);
        }
        self.last_input = *input;
        self.stats.step_ms = start.elapsed().as_secs_f32() * 1000.0 / steps as f32;
    }

    fn step_once(&mut self, input: &AvatarInput) {
        self.avatar.update(input, STEP_S as f32);
        if let Err(e) = self.interaction.update(&mut self.world, &self.avatar) {
            // The world refused something the interaction asked (a bug, not the user's): say so, keep running.
            tracing::warn!("interaction refused by the world: {e}");
        }
        for event in self.interaction.events() {
            match event {
                InteractionEvent::Grabbed { .. } => self.stats.grabs += 1,
                InteractionEvent::Released { linear_velocity, .. } => {
                    self.stats.throws += u64::from(linear_velocity.length() >= THROW_COUNT_SPEED_M_S)
                }
            }
        }
        let report = self.world.step();
        self.stats.steps = report.step;
        self.stats.resting = report.resting_bodies;
        self.stats.awake = report.awake_bodies;
        self.poses.record(&self.world);
    }

    fn count_bodies(&mut self) {
        self.stats.cubes = self.world.body_count();
        self.stats.resting = (0..self.world.body_count() as u32)
            .filter(|&i| {
                self.world
                    .state(tumble_engine::physics::BodyId(i))
                    .is_ok_and(|s| s.at_rest)
            })
            .count();
    }
}

fn build(path: &Path) -> Result<(String, World), SceneError> {
    let scene = load_scene(path)?;
    let mut world = scene.build_world(WorldConfig::default())?;
    world.set_threads(tumble_engine::physics::default_threads());
    Ok((scene.name.clone(), world))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{HandInput, HandSide, Pose};
    use glam::{Quat, Vec3};

    fn table64() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/table64.toml")
    }

    fn hand_at(position: Vec3, grip: f32) -> AvatarInput {
        let mut input = AvatarInput::default();
        input.hands[HandSide::Right.index()] = HandInput {
            tracked: true,
            pose: Pose::new(position, Quat::IDENTITY),
            grip,
            ..HandInput::default()
        };
        input
    }

    #[test]
    fn frames_step_at_90_hz_and_pause_stops_them() {
        let mut sim = DesktopSim::load(&table64()).unwrap();
        assert_eq!(sim.stats.cubes, 64);
        let idle = AvatarInput::default();
        let steps: u32 = (0..60).map(|_| sim.advance(1.0 / 60.0, &idle)).sum();
        assert!((89..=90).contains(&steps), "{steps} steps in one second");
        sim.paused = true;
        assert_eq!(sim.advance(0.5, &idle), 0);
        sim.single_step(&idle);
        assert_eq!(sim.stats.steps, u64::from(steps) + 1);
    }

    #[test]
    fn a_throw_at_30_fps_leaves_at_the_hands_speed() {
        let mut sim = DesktopSim::load(&table64()).unwrap();
        // The lone cube at (-2, 0.5, 0): grab it from above and lift it at 30 fps.
        let mut at = Vec3::new(-2.0, 1.05, 0.0);
        for _ in 0..10 {
            sim.advance(1.0 / 30.0, &hand_at(at, 1.0));
        }
        assert_eq!(sim.interaction.held_cubes().count(), 1);
        // Above the pyramid beside it, so the swing flies free.
        for _ in 0..50 {
            at.y += 0.05;
            sim.advance(1.0 / 30.0, &hand_at(at, 1.0));
        }
        // Swing at 6 m/s along x, three frames (nine steps) per frame pair, letting go on the last frame.
        for k in 0..4 {
            at.x += 6.0 / 30.0;
            sim.advance(1.0 / 30.0, &hand_at(at, if k == 3 { 0.0 } else { 1.0 }));
        }
        assert_eq!(sim.stats.throws, 1);
        assert_eq!(sim.stats.grabs, 1);
        let cube = sim
            .world
            .body_ids()
            .find(|&id| sim.world.state(id).unwrap().linear_velocity.x > 3.0)
            .expect("a cube flies along x");
        let v = sim.world.state(cube).unwrap().linear_velocity;
        assert!((v.x - 6.0).abs() < 0.1, "{v}");
    }

    #[test]
    fn reset_restores_the_scene_and_a_bad_scene_changes_nothing() {
        let mut sim = DesktopSim::load(&table64()).unwrap();
        let start = sim.world.checksum();
        let at = Vec3::new(-2.0, 1.05, 0.0);
        for _ in 0..30 {
            sim.advance(1.0 / 60.0, &hand_at(at, 1.0));
        }
        assert_ne!(sim.world.checksum(), start);
        sim.reset();
        assert_eq!(sim.world.checksum(), start);
        assert_eq!(sim.interaction.held_cubes().count(), 0);
        assert!(sim.switch_scene(Path::new("/no/such/scene.toml")).is_err());
        assert_eq!(sim.scene_name, "table64");
        let tower = table64().with_file_name("tower30.toml");
        sim.switch_scene(&tower).unwrap();
        assert_eq!((sim.scene_name.as_str(), sim.stats.cubes), ("tower30", 30));
        let (center, radius) = sim.bounds();
        assert!((center.y - 15.0).abs() < 0.01 && radius > 15.0, "{center} {radius}");
    }
}
