//! The desktop window that mirrors the headset's left eye (for the people watching), pumped from the VR frame loop:
//! the headset paces the loop, the window's events are taken without waiting once a frame. Closing the window
//! closes only the mirror; the game in the headset goes on. The Vulkan side is `tumble_engine::render::Mirror`.

use std::time::Duration;

use tumble_engine::input::winit::application::ApplicationHandler;
use tumble_engine::input::winit::dpi::PhysicalSize;
use tumble_engine::input::winit::event::WindowEvent;
use tumble_engine::input::winit::event_loop::{ActiveEventLoop, EventLoop};
use tumble_engine::input::winit::platform::pump_events::EventLoopExtPumpEvents;
use tumble_engine::input::winit::window::{Window, WindowId};
use tumble_engine::render::raw_window_handle::{HasDisplayHandle, HasWindowHandle, RawDisplayHandle, RawWindowHandle};

/// The mirror window's first size (pixels): a quarter of a 1080p screen's area.
const START_SIZE_PX: (u32, u32) = (960, 540);
/// Event pumps at start for the window to appear (each waits up to [`FIRST_PUMP_WAIT`]).
const FIRST_PUMPS: u32 = 20;
const FIRST_PUMP_WAIT: Duration = Duration::from_millis(10);

#[derive(Default)]
struct Events {
    window: Option<Window>,
    failed: Option<String>,
    closed: bool,
    /// The size from the last resize event not yet taken.
    resized: Option<(u32, u32)>,
}

impl ApplicationHandler for Events {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() || self.closed {
            return;
        }
        let attributes = Window::default_attributes()
            .with_title("Tumble — headset mirror (left eye)")
            .with_inner_size(PhysicalSize::new(START_SIZE_PX.0, START_SIZE_PX.1));
        match event_loop.create_window(attributes) {
            Ok(w) => self.window = Some(w),
            Err(e) => self.failed = Some(e.to_string()),
        }
    }

    fn window_event(&mut self, _: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested | WindowEvent::Destroyed => {
                self.closed = true;
                self.window = None;
            }
            WindowEvent::Resized(size) => self.resized = Some((size.width, size.height)),
            _ => {}
        }
    }
}

/// The mirror window and its event loop.
pub struct MirrorWindow {
    events: Events,
    event_loop: EventLoop<()>,
}

/// What one pump of the window's events found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MirrorEvents {
    /// The person closed the window: drop the mirror.
    pub closed: bool,
    /// The window's new size in pixels.
    pub resized: Option<(u32, u32)>,
}

impl MirrorWindow {
    /// Connects to the display, or says why not (no display, a window system winit cannot reach). The window
    /// itself appears with [`MirrorWindow::show`], once there is a headset session to mirror.
    pub fn connect() -> Result<MirrorWindow, String> {
        let event_loop = EventLoop::new().map_err(|e| e.to_string())?;
        Ok(MirrorWindow {
            events: Events::default(),
            event_loop,
        })
    }

    /// The instance extensions Vulkan needs to draw in a window of this display.
    pub fn vulkan_extensions(&self) -> Result<Vec<&'static std::ffi::CStr>, String> {
        let display = self.event_loop.display_handle().map_err(|e| e.to_string())?.as_raw();
        tumble_engine::render::window_extensions(display).map_err(|e| e.to_string())
    }

    /// Opens the window (the first event pumps create it), or says why not.
    pub fn show(&mut self) -> Result<(), String> {
        for _ in 0..FIRST_PUMPS {
            if self.events.window.is_some() {
                return Ok(());
            }
            self.event_loop.pump_app_events(Some(FIRST_PUMP_WAIT), &mut self.events);
            if let Some(e) = self.events.failed.take() {
                return Err(e);
            }
        }
        match self.events.window {
            Some(_) => Ok(()),
            None => Err("the window did not appear".into()),
        }
    }

    /// The window's raw handles and size in pixels, for `Mirror::new`.
    pub fn raw_handles(&self) -> Result<(RawDisplayHandle, RawWindowHandle, (u32, u32)), String> {
        let window = self.events.window.as_ref().ok_or("the mirror window is closed")?;
        let display = window.display_handle().map_err(|e| e.to_string())?.as_raw();
        let handle = window.window_handle().map_err(|e| e.to_string())?.as_raw();
        let size = window.inner_size();
        Ok((display, handle, (size.width, size.height)))
    }

    /// Takes the window's events without waiting.
    pub fn pump(&mut self) -> MirrorEvents {
        self.event_loop.pump_app_events(Some(Duration::ZERO), &mut self.events);
        MirrorEvents {
            closed: self.events.closed,
            resized: self.events.resized.take(),
        }
    }
}
