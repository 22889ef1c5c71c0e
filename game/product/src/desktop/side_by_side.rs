//! A view of two machines of one game, drawn side by side in one stereo frame and played with the cube game's keys.
//! The window shows it without knowing what runs it: the test bench's `tumble compare --view` (the 2015 network
//! models) is one, and the product depends on none of them.

use glam::Vec3;
use tumble_engine::physics::World;
use tumble_engine::render::CubeInstance;

use super::sim::SimStats;
use crate::cube_game::CubeInput;
use crate::interpolate::PoseBuffer;

/// What the window asks of a side-by-side view. It has no hands: the person plays with the cube game's keys.
pub trait SideBySide {
    fn scene_name(&self) -> &str;
    /// The field as every machine starts it (the bodies' sizes, the camera's framing).
    fn field(&self) -> &World;
    /// The left side's poses (the person's own machine), blended by [`SideBySide::alpha`].
    fn left_poses(&self) -> &PoseBuffer;
    /// Where the frame lies between the last two steps (0..1).
    fn alpha(&self) -> f32;
    fn stats(&self) -> SimStats;
    /// One frame's steps, the person playing `keys`; returns the steps taken. An error ends the window.
    fn advance(&mut self, frame_s: f64, keys: CubeInput) -> anyhow::Result<u32>;
    /// Shows player `player`'s machine (1–4) on the right; returns whether it changed.
    fn show_on_right(&mut self, player: usize) -> bool;
    /// Starts again with the settings its panel holds (the reset key, or the panel's button); a refusal is shown
    /// and the game goes on.
    fn restart(&mut self);
    /// Both sides' cubes for the frame, each flagged for its view.
    fn fill(&self, cubes: &mut Vec<CubeInstance>);
    /// The camera both sides share: (eye, target).
    fn camera(&self) -> (Vec3, Vec3);
    /// Draws its own overlay window (settings, figures); returns true when it asks for a restart.
    fn panel(&self, ctx: &egui::Context) -> bool;
}
