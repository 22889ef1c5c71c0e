//! Windowed smoke run of `engine::render::Presenter`: opens a window, draws a pile of cubes with an egui overlay,
//! resizes the window, toggles the stereo preview, minimises, and prints one JSON line of what happened. The
//! desktop view proper (camera, interaction) is the game's; this only exercises the presenter.
//!
//! `cargo run -p tumble-engine --features render --example present -- [FRAMES]` (needs a display; under Xvfb:
//! `xvfb-run -a cargo run ...`).

use std::time::Instant;

use glam::{Quat, Vec3};
use tumble_engine::render::{
    authority_rgb, Avatar, CubeInstance, DebugModes, FrameInput, FrameStatus, OverlayFrame, Pose, Presenter, View,
    CUBE_HELD, CUBE_SELECTED, DEFAULT_LIGHT_DIRECTION,
};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::{Window, WindowId};

struct App {
    frames_wanted: u32,
    window: Option<Window>,
    presenter: Option<Presenter>,
    egui: egui::Context,
    cubes: Vec<CubeInstance>,
    presented: u32,
    rebuilt: u32,
    minimised: u32,
    frame: u32,
    started: Option<Instant>,
    error: Option<String>,
    gpu_ms: Option<f32>,
}

impl App {
    fn draw(&mut self) {
        let (Some(window), Some(presenter)) = (self.window.as_ref(), self.presenter.as_mut()) else {
            return;
        };
        self.frame += 1;
        // Script: stereo preview on from frame 20, a resize at 40, minimised (0 × 0) at 60..65.
        presenter.set_stereo_preview(self.frame >= 20);
        if self.frame == 40 {
            let _ = window.request_inner_size(PhysicalSize::new(800, 400));
            presenter.resize(800, 400);
        }
        if self.frame == 60 {
            presenter.resize(0, 0);
        }
        if self.frame == 65 {
            let size = window.inner_size();
            presenter.resize(size.width, size.height);
        }
        let (w, h) = presenter.view_extent();
        let aspect = w as f32 / h as f32;
        let t = self.frame as f32 * 0.02;
        let eye = Vec3::new(9.0 * t.cos(), 6.0, 9.0 * t.sin());
        let stereo = View::stereo_pair(eye, Vec3::new(0.0, 1.0, 0.0), 1.0, aspect, 0.064);
        let mono = [View::look_at(eye, Vec3::new(0.0, 1.0, 0.0), 1.0, aspect)];
        let views: &[View] = if presenter.stereo_preview() { &stereo } else { &mono };
        let hand = |x: f32| Pose {
            position: Vec3::new(x, 1.2, 3.0),
            rotation: Quat::IDENTITY,
        };
        let avatars = [Avatar {
            head: Pose {
                position: Vec3::new(0.0, 1.7, 3.5),
                rotation: Quat::IDENTITY,
            },
            hands: [hand(-0.3), hand(0.3)],
            colour: authority_rgb(1),
        }];
        let contacts = [Vec3::new(0.5, 0.0, 0.5), Vec3::new(-0.5, 0.0, 0.5)];
        let input = FrameInput {
            views,
            cubes: &self.cubes,
            avatars: &avatars,
            contacts: &contacts,
            light_direction: DEFAULT_LIGHT_DIRECTION,
            debug: DebugModes {
                resting: true,
                contacts: true,
            },
        };
        let raw = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(w as f32, h as f32),
            )),
            ..Default::default()
        };
        let frame = self.frame;
        let gpu_ms = presenter.gpu_time_ms();
        let output = self.egui.run_ui(raw, |ui| {
            ui.label(format!("frame {frame}"));
            ui.label(format!("GPU {:.2} ms", gpu_ms.unwrap_or(0.0)));
        });
        let primitives = self.egui.tessellate(output.shapes, output.pixels_per_point);
        let mut textures_delta = output.textures_delta;
        let overlay = OverlayFrame {
            primitives: &primitives,
            textures_delta: &mut textures_delta,
            pixels_per_point: output.pixels_per_point,
        };
        match presenter.render(&input, Some(overlay)) {
            Ok(FrameStatus::Presented) => self.presented += 1,
            Ok(FrameStatus::Rebuilt) => self.rebuilt += 1,
            Ok(FrameStatus::Minimised) => self.minimised += 1,
            Err(e) => self.error = Some(e.to_string()),
        }
        self.gpu_ms = presenter.gpu_time_ms();
        window.request_redraw();
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        let attrs = Window::default_attributes()
            .with_title("tumble present")
            .with_inner_size(PhysicalSize::new(640, 360));
        let window = match event_loop.create_window(attrs) {
            Ok(w) => w,
            Err(e) => {
                self.error = Some(e.to_string());
                event_loop.exit();
                return;
            }
        };
        let size = window.inner_size();
        // SAFETY: the presenter is dropped (in `exiting`) before the window.
        match unsafe { Presenter::new(&window, size.width, size.height) } {
            Ok(p) => self.presenter = Some(p),
            Err(e) => {
                self.error = Some(e.to_string());
                event_loop.exit();
            }
        }
        self.started = Some(Instant::now());
        window.request_redraw();
        self.window = Some(window);
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(p) = self.presenter.as_mut() {
                    p.resize(size.width, size.height);
                }
            }
            WindowEvent::RedrawRequested => {
                self.draw();
                if self.frame >= self.frames_wanted || self.error.is_some() {
                    event_loop.exit();
                }
            }
            _ => {}
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        self.presenter = None;
    }
}

fn main() {
    let frames_wanted = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(120);
    let mut cubes = Vec::new();
    for i in 0..100u32 {
        let (x, z, y) = (
            (i % 10) as f32 - 4.5,
            ((i / 10) % 5) as f32 - 2.0,
            (i / 50) as f32 + 0.5,
        );
        cubes.push(CubeInstance {
            position: Vec3::new(x * 1.1, y, z * 1.1),
            rotation: Quat::IDENTITY,
            half_extents: Vec3::splat(0.5),
            colour: authority_rgb((i % 5) as u8),
            flags: match i % 7 {
                0 => CUBE_SELECTED,
                1 => CUBE_HELD,
                _ => 0,
            },
        });
    }
    let event_loop = match EventLoop::new() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("present: no display: {e}");
            std::process::exit(2);
        }
    };
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App {
        frames_wanted,
        window: None,
        presenter: None,
        egui: egui::Context::default(),
        cubes,
        presented: 0,
        rebuilt: 0,
        minimised: 0,
        frame: 0,
        started: None,
        error: None,
        gpu_ms: None,
    };
    if let Err(e) = event_loop.run_app(&mut app) {
        eprintln!("present: event loop: {e}");
        std::process::exit(1);
    }
    let seconds = app.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
    println!(
        "{{\"frames\":{},\"presented\":{},\"rebuilt\":{},\"minimised\":{},\"seconds\":{seconds:.3},\"gpu_ms\":{},\"error\":{:?}}}",
        app.frame,
        app.presented,
        app.rebuilt,
        app.minimised,
        app.gpu_ms.unwrap_or(-1.0),
        app.error.unwrap_or_default()
    );
}
