//! The window and its event loop (winit 0.30 `ApplicationHandler`): each redraw is one frame — poll the gamepad,
//! apply the keys (reset, pause, single step, scene, overlays), move the camera, turn the input into hands, take the
//! physics steps due, fill the frame's view, build the overlay — and then asks for the next. Input reaches egui
//! first; what the overlay does not take drives the camera and the hands.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::{Vec2, Vec3};
use tumble_engine::input::winit::application::ApplicationHandler;
use tumble_engine::input::winit::dpi::LogicalSize;
use tumble_engine::input::winit::event::WindowEvent;
use tumble_engine::input::winit::event_loop::{ActiveEventLoop, ControlFlow};
use tumble_engine::input::winit::window::{Window, WindowId};
use tumble_engine::input::{Action, FlyCamera, Gamepads, InputState};
use tumble_engine::render::{DebugModes, FrameInput, OverlayFrame as RenderOverlay, Presenter, RenderError};
use tumble_engine::render::{DEFAULT_LIGHT_DIRECTION, MAX_CONTACT_MARKERS};

use super::cube_keys::CubeKeys;
use super::hands::DesktopHands;
use super::mode::Mode;
use super::network_panel::NetworkInfo;
use super::overlay::{self, FrameTimes, OverlayData, OverlayToggles};
use super::scenes::{list_scenes, step_scene};
use super::view::FrameView;
use super::DesktopError;
use tumble_engine::input::winit::keyboard::{KeyCode, PhysicalKey};

/// Shortest time between frames (s): at most 240 frames per second.
pub const MIN_FRAME_S: f64 = 1.0 / 240.0;

/// The overlay as the renderer's egui pass takes it: texture changes not yet uploaded, and this frame's meshes.
#[derive(Default)]
pub struct OverlayFrame {
    pub textures: egui::TexturesDelta,
    pub primitives: Vec<egui::ClippedPrimitive>,
    pub pixels_per_point: f32,
}

/// The desktop view's state between frames.
pub struct DesktopApp {
    pub mode: Mode,
    scenes: Vec<PathBuf>,
    input: InputState,
    camera: FlyCamera,
    hands: DesktopHands,
    gamepads: Gamepads,
    gamepad_connected: bool,
    /// GPU time of the last finished frame (ms).
    gpu_ms: Option<f32>,
    toggles: OverlayToggles,
    frames: FrameTimes,
    pub view: FrameView,
    pub overlay: OverlayFrame,
    egui: egui::Context,
    /// Declared before the window: fields drop in order, and the presenter's surface must go before its window.
    presenter: Option<Presenter>,
    window: Option<(Arc<Window>, egui_winit::State)>,
    last_frame: Option<Instant>,
    /// Exit after this many frames (for smoke tests under a virtual display).
    frames_left: Option<u64>,
    pub frames_shown: u64,
    scene_error: Option<String>,
    /// Set when the window could not be created; the caller reports it.
    pub window_error: Option<String>,
    /// Set when the renderer failed (no Vulkan, or a device error while running); the caller reports it.
    pub render_error: Option<RenderError>,
    /// Contact points to mark (F5), refilled each frame into capacity reserved once.
    contacts: Vec<Vec3>,
    /// A digit key pressed this frame (`tumble local`: take over that player's hands).
    take_over: Option<u8>,
    /// Set when the networked game or the cube game's run failed; the caller reports it.
    pub game_error: Option<DesktopError>,
    /// The cube game's keys held (a side-by-side view: `tumble compare --view`).
    cube_keys: CubeKeys,
}

/// The player a number key takes over (1–4), as the reference's loopback scene did.
pub fn player_for_key(key: KeyCode) -> Option<u8> {
    match key {
        KeyCode::Digit1 | KeyCode::Numpad1 => Some(1),
        KeyCode::Digit2 | KeyCode::Numpad2 => Some(2),
        KeyCode::Digit3 | KeyCode::Numpad3 => Some(3),
        KeyCode::Digit4 | KeyCode::Numpad4 => Some(4),
        _ => None,
    }
}

impl DesktopApp {
    pub fn new(mut mode: Mode, frames: Option<u64>) -> DesktopApp {
        let scenes = match &mode {
            Mode::Single(sim) => list_scenes(&sim.scene_path.parent().map(PathBuf::from).unwrap_or_default()),
            Mode::Net(_) | Mode::SideBySide(_) => Vec::new(),
        };
        mode.begin_read();
        let (center, radius) = mode.bounds();
        mode.end_read();
        let side_by_side = matches!(mode, Mode::SideBySide(_));
        DesktopApp {
            scenes,
            mode,
            input: InputState::default(),
            camera: FlyCamera::framing(center, radius),
            hands: DesktopHands::default(),
            gamepads: Gamepads::new(),
            gamepad_connected: false,
            gpu_ms: None,
            // The cube game's own window says what matters there; F1 shows the frame times.
            toggles: OverlayToggles {
                stats: !side_by_side,
                ..OverlayToggles::default()
            },
            frames: FrameTimes::default(),
            view: FrameView::default(),
            overlay: OverlayFrame::default(),
            egui: egui::Context::default(),
            presenter: None,
            window: None,
            last_frame: None,
            frames_left: frames,
            frames_shown: 0,
            scene_error: None,
            window_error: None,
            render_error: None,
            contacts: Vec::with_capacity(MAX_CONTACT_MARKERS),
            take_over: None,
            game_error: None,
            cube_keys: CubeKeys::default(),
        }
    }

    /// The keys that act once per press. Reset, pause and scenes act on a world of our own only.
    fn apply_commands(&mut self, pad_pause: bool, pad_reset: bool) {
        let input = &self.input;
        let take_over = self.take_over.take();
        if let (Mode::Net(net), Some(player)) = (&mut self.mode, take_over) {
            let net = net.play_mut();
            if let Some(seat) = net.seat_of_player(player) {
                if net.take_over(seat) {
                    tracing::info!(player, "the hands drive another player");
                }
            }
        }
        if let (Mode::SideBySide(game), Some(player)) = (&mut self.mode, take_over) {
            if game.show_on_right(usize::from(player)) {
                tracing::info!(player, "the right side shows another player's machine");
            }
        }
        if let Mode::SideBySide(game) = &mut self.mode {
            if input.was_pressed(Action::Reset) || pad_reset {
                game.restart();
            }
        }
        if let Mode::Single(sim) = &mut self.mode {
            if input.was_pressed(Action::Reset) || pad_reset {
                sim.reset();
            }
            if input.presses(Action::Pause) % 2 == 1 || pad_pause {
                sim.paused = !sim.paused;
            }
        }
        self.toggles.stats ^= input.presses(Action::ToggleStats) % 2 == 1;
        self.toggles.help ^= input.presses(Action::ToggleHelp) % 2 == 1;
        self.toggles.stereo ^= input.presses(Action::ToggleStereo) % 2 == 1;
        self.toggles.resting ^= input.presses(Action::ToggleRestingDebug) % 2 == 1;
        self.toggles.contacts ^= input.presses(Action::ToggleContactsDebug) % 2 == 1;
        let delta =
            isize::from(input.was_pressed(Action::NextScene)) - isize::from(input.was_pressed(Action::PreviousScene));
        let Mode::Single(sim) = &mut self.mode else { return };
        if delta != 0 {
            if let Some(next) = step_scene(&self.scenes, &sim.scene_path, delta) {
                match sim.switch_scene(&next) {
                    Ok(()) => {
                        self.scene_error = None;
                        let (center, radius) = sim.bounds();
                        self.camera = FlyCamera::framing(center, radius);
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        self.scene_error = Some(e.to_string());
                    }
                }
            }
        }
    }

    fn frame(&mut self, event_loop: &ActiveEventLoop) {
        let Some((window, _)) = self.window.as_ref() else {
            return;
        };
        let window = window.clone();
        let now = Instant::now();
        let frame_s = self.last_frame.map_or(0.0, |t| (now - t).as_secs_f64());
        self.last_frame = Some(now);
        self.frames.push(frame_s as f32 * 1000.0);

        let pad = self.gamepads.poll();
        self.gamepad_connected = pad.connected;
        if self.input.was_pressed(Action::Quit) || crate::quit::requested() {
            event_loop.exit();
            return;
        }
        // A networked game is read under its lock from here to the draw; it steps on while the frame is shown.
        self.mode.begin_read();
        self.apply_commands(pad.pause_pressed, pad.reset_pressed);
        if matches!(self.mode, Mode::SideBySide(_)) {
            self.side_by_side_frame(event_loop, &window, frame_s, &pad);
            return;
        }
        self.camera.update(&self.input, frame_s as f32);
        let size = window.inner_size();
        let size = Vec2::new(size.width as f32, size.height as f32);
        let pointer_free = !self.egui.egui_wants_pointer_input();
        let hands = self.hands.avatar_input(
            &self.camera,
            &self.input,
            size,
            &pad,
            self.mode.world(),
            self.mode.interaction(),
            frame_s as f32,
            pointer_free,
        );
        if let Err(e) = self.mode.advance(frame_s, &hands, Default::default()) {
            self.mode.end_read();
            self.game_error = Some(e);
            event_loop.exit();
            return;
        }
        if let Mode::Single(sim) = &mut self.mode {
            if self.input.was_pressed(Action::SingleStep) || pad.step_pressed {
                sim.single_step(&hands);
            }
        }
        let mode = &self.mode;
        self.view.fill(
            mode.world(),
            mode.poses(),
            mode.alpha(),
            mode.avatar(),
            mode.interaction(),
            mode.session(),
        );
        let aspect = match self.presenter.as_mut() {
            Some(p) => {
                p.set_stereo_preview(self.toggles.stereo);
                let (w, h) = p.view_extent();
                w as f32 / h as f32
            }
            None => size.x / size.y.max(1.0),
        };
        self.view.set_camera(&self.camera, aspect, self.toggles.stereo);
        self.run_overlay(&window);
        self.gather_contacts();
        self.mode.end_read();
        self.present(event_loop);
        self.end_frame(event_loop);
    }

    /// The contact points to mark (F5), from the world on screen.
    fn gather_contacts(&mut self) {
        self.contacts.clear();
        if self.toggles.contacts {
            self.mode
                .world()
                .contact_points(&mut self.contacts, MAX_CONTACT_MARKERS);
        }
    }

    fn end_frame(&mut self, event_loop: &ActiveEventLoop) {
        self.input.end_frame();
        self.frames_shown += 1;
        if let Some(left) = self.frames_left.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                event_loop.exit();
            }
        }
    }

    /// A frame of the cube game over a network model: the keys (or the gamepad) play the person's seat, the run
    /// takes the steps due, and the two machines are drawn side by side (the renderer's two views, one camera).
    fn side_by_side_frame(
        &mut self,
        event_loop: &ActiveEventLoop,
        window: &Window,
        frame_s: f64,
        pad: &tumble_engine::input::GamepadState,
    ) {
        let keys = if self.egui.egui_wants_keyboard_input() {
            Default::default()
        } else {
            self.cube_keys.input(pad)
        };
        if let Err(e) = self.mode.advance(frame_s, &Default::default(), keys) {
            self.game_error = Some(e);
            event_loop.exit();
            return;
        }
        let Mode::SideBySide(game) = &self.mode else {
            return;
        };
        game.fill(&mut self.view.cubes);
        let aspect = match self.presenter.as_mut() {
            Some(p) => {
                p.set_stereo_preview(true);
                let (w, h) = p.view_extent();
                w as f32 / h as f32
            }
            None => {
                let size = window.inner_size();
                size.width as f32 * 0.5 / size.height.max(1) as f32
            }
        };
        self.view.set_side_by_side(game.camera(), aspect);
        self.run_overlay(window);
        self.gather_contacts();
        self.present(event_loop);
        self.end_frame(event_loop);
    }

    /// Builds the overlay for this frame. Its shapes go to the renderer's egui pass.
    fn run_overlay(&mut self, window: &Window) {
        let Some((_, state)) = self.window.as_mut() else {
            return;
        };
        let raw = state.take_egui_input(window);
        let stats = self.mode.stats();
        let network = match &self.mode {
            Mode::Single(_) | Mode::SideBySide(_) => None,
            Mode::Net(n) => {
                let n = n.play();
                Some(NetworkInfo {
                    role: &n.role,
                    peer: n.shown(),
                    graphs: &n.seats[n.controlled()].graphs,
                    controlled: (n.seats.len() > 1).then(|| (n.shown().player(), n.seats.len())),
                })
            }
        };
        let notice = match &self.mode {
            Mode::Net(n) => n.play().notice(),
            _ => None,
        };
        let data = OverlayData {
            notice: notice.as_deref(),
            scene: self.mode.scene_name(),
            paused: self.mode.paused(),
            sim: &stats,
            frames: &self.frames,
            hands: self.hands.source.name(),
            held: self.mode.interaction().held_cubes().count(),
            gamepad_connected: self.gamepad_connected,
            gpu_ms: self.gpu_ms,
            error: self.scene_error.as_deref(),
            network,
        };
        let toggles = self.toggles;
        let side_by_side = match &self.mode {
            Mode::SideBySide(c) => Some(&**c),
            _ => None,
        };
        let mut restart = false;
        let output = self.egui.run_ui(raw, |ui| {
            overlay::draw(ui.ctx(), &data, &toggles);
            if let Some(game) = side_by_side {
                restart = game.panel(ui.ctx());
            }
        });
        if let (true, Mode::SideBySide(game)) = (restart, &mut self.mode) {
            game.restart();
        }
        state.handle_platform_output(window, output.platform_output);
        self.overlay.textures.append(output.textures_delta);
        self.overlay.pixels_per_point = output.pixels_per_point;
        self.overlay.primitives = self.egui.tessellate(output.shapes, output.pixels_per_point);
    }

    /// Draws the frame and the overlay. A renderer error ends the view (the caller reports it).
    fn present(&mut self, event_loop: &ActiveEventLoop) {
        let Some(presenter) = self.presenter.as_mut() else {
            self.overlay.textures.clear();
            return;
        };
        let input = FrameInput {
            views: &self.view.views,
            cubes: &self.view.cubes,
            avatars: &[],
            contacts: &self.contacts,
            light_direction: DEFAULT_LIGHT_DIRECTION,
            debug: DebugModes {
                resting: self.toggles.resting,
                contacts: self.toggles.contacts,
            },
        };
        let overlay = RenderOverlay {
            primitives: &self.overlay.primitives,
            textures_delta: &mut self.overlay.textures,
            pixels_per_point: self.overlay.pixels_per_point,
        };
        if let Err(e) = presenter.render(&input, Some(overlay)) {
            self.render_error = Some(e);
            event_loop.exit();
        }
        self.gpu_ms = presenter.gpu_time_ms();
    }
}

impl ApplicationHandler for DesktopApp {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        let attributes = Window::default_attributes()
            .with_title(format!("Tumble — {}", self.mode.scene_name()))
            .with_inner_size(LogicalSize::new(1280.0, 720.0));
        match event_loop.create_window(attributes) {
            Ok(window) => {
                let window = Arc::new(window);
                let state = egui_winit::State::new(
                    self.egui.clone(),
                    egui::ViewportId::ROOT,
                    &window,
                    Some(window.scale_factor() as f32),
                    None,
                    None,
                );
                let size = window.inner_size();
                // SAFETY: the window is kept in `self.window`, which drops after `self.presenter` (field order).
                match unsafe { Presenter::new(&*window, size.width, size.height) } {
                    Ok(p) => {
                        tracing::info!(gpu = %p.gpu().info.name, "renderer ready");
                        self.presenter = Some(p);
                    }
                    Err(e) => {
                        self.render_error = Some(e);
                        event_loop.exit();
                        return;
                    }
                }
                event_loop.set_control_flow(ControlFlow::Poll);
                tracing::info!(scene = %self.mode.scene_name(), "desktop view open");
                self.window = Some((window, state));
            }
            Err(e) => {
                self.window_error = Some(e.to_string());
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let Some((window, state)) = self.window.as_mut() else {
            return;
        };
        let consumed = state.on_window_event(window, &event).consumed;
        // Releases always reach the input state, so a button let go over the overlay does not stick.
        let is_release = matches!(
            &event,
            WindowEvent::MouseInput { state: s, .. } | WindowEvent::KeyboardInput { event: tumble_engine::input::winit::event::KeyEvent { state: s, .. }, .. }
                if *s == tumble_engine::input::winit::event::ElementState::Released
        );
        // Keys are ours unless a text field has focus (egui claims Tab for focus moves otherwise).
        let key_for_us = matches!(event, WindowEvent::KeyboardInput { .. }) && !self.egui.egui_wants_keyboard_input();
        if !consumed || key_for_us || is_release || matches!(event, WindowEvent::CursorMoved { .. }) {
            self.input.handle_window_event(&event);
            if let WindowEvent::KeyboardInput { event: key, .. } = &event {
                if let (PhysicalKey::Code(code), true, false) = (key.physical_key, key.state.is_pressed(), key.repeat) {
                    self.take_over = player_for_key(code).or(self.take_over);
                }
                if let PhysicalKey::Code(code) = key.physical_key {
                    self.cube_keys.key(code, key.state.is_pressed());
                }
            }
        }
        if matches!(event, WindowEvent::Focused(false)) {
            self.cube_keys.release_all();
        }
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(p) = self.presenter.as_mut() {
                    p.resize(size.width, size.height);
                }
            }
            WindowEvent::RedrawRequested => self.frame(event_loop),
            _ => {}
        }
    }

    /// Asks for the next frame, but no sooner than [`MIN_FRAME_S`] after the last (vsync usually paces frames
    /// more slowly; this keeps a window that presents nothing, or presents without vsync, from spinning a core).
    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        if crate::quit::requested() {
            event_loop.exit();
            return;
        }
        let Some((window, _)) = self.window.as_ref() else {
            return;
        };
        let next = self
            .last_frame
            .map_or_else(Instant::now, |t| t + Duration::from_secs_f64(MIN_FRAME_S));
        if Instant::now() >= next {
            event_loop.set_control_flow(ControlFlow::Poll);
            window.request_redraw();
        } else {
            event_loop.set_control_flow(ControlFlow::WaitUntil(next));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_keys_name_players_one_to_four() {
        assert_eq!(player_for_key(KeyCode::Digit1), Some(1));
        assert_eq!(player_for_key(KeyCode::Numpad4), Some(4));
        assert_eq!(player_for_key(KeyCode::Digit5), None);
        assert_eq!(player_for_key(KeyCode::KeyW), None);
    }
}
