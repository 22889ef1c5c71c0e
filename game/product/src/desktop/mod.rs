//! The desktop debug view (`tumble` with no subcommand): a window on the scene with a free camera, mouse and
//! gamepad hands driving [`crate::interaction`], fixed 90 Hz physics decoupled from the frame rate with
//! interpolated poses, and an egui overlay.
//!
//! - [`sim`]: the simulation side (world, player, fixed-step clock, stats), no window — tested headless;
//! - [`mode`]: one world or a networked game (`crate::session::net_play`), as the window asks;
//! - [`network_panel`]: the overlay's Network section (per connection graphs in rings sized once);
//! - the clock and the pose blending: `crate::fixed_step`, `crate::interpolate`;
//! - [`hands`]: keyboard, mouse and gamepad (via `engine::input`) → `AvatarInput`;
//! - [`view`]: the frame as plain data for the renderer; [`overlay`]: the egui panels;
//! - [`scenes`]: cycling through scene files; [`app`]: the winit event loop;
//! - [`side_by_side`]: what the window asks of a view of two machines (the test bench's `tumble compare --view`).

pub mod app;
pub mod cube_keys;
pub mod hands;
pub mod mode;
pub mod network_panel;
pub mod overlay;
pub mod play_cli;
pub mod scenes;
pub mod side_by_side;
pub mod sim;
pub mod view;

use std::path::PathBuf;

use tumble_engine::input::winit::event_loop::EventLoop;
use tumble_engine::render::RenderError;
use tumble_engine::scene::SceneError;

/// What `tumble` with no subcommand was asked.
#[derive(Clone, Debug, PartialEq)]
pub struct DesktopOptions {
    /// `None`: [`scenes::default_scene`].
    pub scene: Option<PathBuf>,
    /// Close after this many frames (smoke tests under a virtual display).
    pub frames: Option<u64>,
}

/// Why the desktop view did not run.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    /// No display to open a window on (exit code 2: unavailable here).
    #[error("{0}")]
    NoDisplay(String),
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// No Vulkan (exit 2, see `RenderError::is_unavailable`) or a device error.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A networked game could not start (bad address, full host, socket) or failed while running.
    #[error(transparent)]
    Net(#[from] crate::session::net_play::NetPlayError),
    /// A side-by-side view (`tumble compare --view`: the cube game over a network model) could not start (bad
    /// settings, scene) or failed while running.
    #[error(transparent)]
    Compare(anyhow::Error),
    /// A headless guest's host went away: its summary (with `host_gone`) is printed, and it exits non-zero.
    #[error("{}", .0["host_gone"].as_str().unwrap_or("the host is gone"))]
    HostGone(serde_json::Value),
}

/// True when a display server is named in the environment.
pub fn display_named() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Opens the window and runs until it is closed (or `frames` have been shown).
pub fn run(options: &DesktopOptions) -> Result<(), DesktopError> {
    let scene = options.scene.clone().unwrap_or_else(scenes::default_scene);
    run_with(options.frames, || {
        Ok(mode::Mode::Single(Box::new(sim::DesktopSim::load(&scene)?)))
    })
}

/// Opens the window on what `make` builds (called once the display is known to be there, so a game is not joined
/// only to find no window can show it) and runs until it is closed (or `frames` have been shown).
pub fn run_with(
    frames: Option<u64>,
    make: impl FnOnce() -> Result<mode::Mode, DesktopError>,
) -> Result<(), DesktopError> {
    if !display_named() {
        return Err(DesktopError::NoDisplay(
            "neither DISPLAY nor WAYLAND_DISPLAY is set".into(),
        ));
    }
    // Connecting to the display first: a named display that cannot be reached is "no display", whatever the scene.
    let event_loop = EventLoop::new().map_err(|e| DesktopError::NoDisplay(e.to_string()))?;
    let mut app = app::DesktopApp::new(make()?, frames);
    event_loop
        .run_app(&mut app)
        .map_err(|e| DesktopError::NoDisplay(e.to_string()))?;
    if let Some(e) = app.window_error.take() {
        return Err(DesktopError::NoDisplay(format!("no window could be opened: {e}")));
    }
    if let Some(e) = app.render_error.take() {
        return Err(DesktopError::Render(e));
    }
    if let Some(e) = app.game_error.take() {
        return Err(e);
    }
    app.mode.begin_read();
    let stats = app.mode.stats();
    app.mode.end_read();
    tracing::info!(
        frames = app.frames_shown,
        steps = stats.steps,
        grabs = stats.grabs,
        throws = stats.throws,
        scene = %app.mode.scene_name(),
        "desktop view closed"
    );
    Ok(())
}
