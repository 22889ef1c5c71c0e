//! The desktop window that mirrors the headset's left eye (for the people watching). Its events are taken on a
//! thread of its own, which sleeps until the window system says something: the headset's frame loop never calls
//! into the window system, so it is never held by it, and allocates nothing for it. (winit's event loop, through
//! calloop, collects the ready sources into a new `Vec` every time the X connection has something to read — a few
//! times a minute under Xvfb with nothing happening, more when the window is moved or covered; pumped from the frame
//! loop, that showed up as the odd allocation in a "steady" frame.) The frame loop reads what the thread saw — a
//! new size, a close — from atomics, once a frame. Closing the window closes only the mirror; the game in the
//! headset goes on. The Vulkan side is `tumble_engine::render::Mirror`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tumble_engine::input::winit::application::ApplicationHandler;
use tumble_engine::input::winit::dpi::PhysicalSize;
use tumble_engine::input::winit::event::WindowEvent;
use tumble_engine::input::winit::event_loop::{ActiveEventLoop, EventLoop, EventLoopProxy};
use tumble_engine::input::winit::platform::pump_events::EventLoopExtPumpEvents;
use tumble_engine::input::winit::platform::x11::EventLoopBuilderExtX11;
use tumble_engine::input::winit::window::{Window, WindowId};
use tumble_engine::render::raw_window_handle::{HasDisplayHandle, HasWindowHandle, RawDisplayHandle, RawWindowHandle};

/// The mirror window's first size (pixels): a quarter of a 1080p screen's area.
const START_SIZE_PX: (u32, u32) = (960, 540);
/// How long to wait for the window to appear, and for the event thread to start.
const SHOW_WAIT: Duration = Duration::from_secs(2);

/// What the event thread tells the frame loop, without locks or allocation.
#[derive(Default)]
struct Shared {
    /// The person closed the window (it is hidden at once, and destroyed when the mirror is dropped).
    closed: AtomicBool,
    /// The window's size from the last resize not yet taken, as `width << 32 | height`; `NO_SIZE` when none.
    resized: AtomicU64,
}

const NO_SIZE: u64 = u64::MAX;

/// Requests from the frame loop to the event thread.
#[derive(Clone, Copy, Debug)]
enum Request {
    Show,
    Quit,
}

/// The raw handles of the window, sent back to the frame loop once it exists.
#[derive(Clone, Copy)]
struct Handles {
    display: RawDisplayHandle,
    window: RawWindowHandle,
    size: (u32, u32),
}

// SAFETY: raw handles are plain identifiers of the display connection and the window; the event thread keeps both
// alive until the `MirrorWindow` (which the Vulkan mirror must not outlive) is dropped. X11 and Wayland clients may
// use them from any thread (winit initialises Xlib for threads).
unsafe impl Send for Handles {}

/// What the event thread says back once it started, or when the window appeared.
enum Reply {
    Started(Result<RawDisplayHandle, String>),
    Shown(Result<Handles, String>),
}

// SAFETY: as for `Handles`.
unsafe impl Send for Reply {}

/// The event thread's state: the window and where it reports.
struct Events {
    shared: Arc<Shared>,
    replies: mpsc::Sender<Reply>,
    window: Option<Window>,
    quit: bool,
}

impl Events {
    fn show(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        let attributes = Window::default_attributes()
            .with_title("Tumble — headset mirror (left eye)")
            .with_inner_size(PhysicalSize::new(START_SIZE_PX.0, START_SIZE_PX.1));
        let shown = event_loop
            .create_window(attributes)
            .map_err(|e| e.to_string())
            .and_then(|w| {
                let display = w.display_handle().map_err(|e| e.to_string())?.as_raw();
                let window = w.window_handle().map_err(|e| e.to_string())?.as_raw();
                let size = w.inner_size();
                self.window = Some(w);
                Ok(Handles {
                    display,
                    window,
                    size: (size.width, size.height),
                })
            });
        self.replies.send(Reply::Shown(shown)).ok();
    }
}

impl ApplicationHandler<Request> for Events {
    fn resumed(&mut self, _: &ActiveEventLoop) {}

    fn user_event(&mut self, event_loop: &ActiveEventLoop, request: Request) {
        match request {
            Request::Show => self.show(event_loop),
            Request::Quit => self.quit = true,
        }
    }

    fn window_event(&mut self, _: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested | WindowEvent::Destroyed => {
                // Hidden, not destroyed: the frame loop may be presenting to it right now. It goes with the mirror.
                if let Some(w) = self.window.as_ref() {
                    w.set_visible(false);
                }
                self.shared.closed.store(true, Ordering::Release);
            }
            WindowEvent::Resized(size) => {
                let packed = (u64::from(size.width) << 32) | u64::from(size.height);
                self.shared.resized.store(packed, Ordering::Release);
            }
            _ => {}
        }
    }
}

/// The event thread: makes the event loop, says whether it could, then sleeps in it until asked to quit.
fn event_thread(shared: Arc<Shared>, replies: mpsc::Sender<Reply>, proxies: mpsc::Sender<EventLoopProxy<Request>>) {
    let mut builder = EventLoop::<Request>::with_user_event();
    // Not the main thread: winit allows that on X11 and Wayland when asked (the flag is one for both).
    EventLoopBuilderExtX11::with_any_thread(&mut builder, true);
    let mut event_loop = match builder.build() {
        Ok(l) => l,
        Err(e) => {
            replies.send(Reply::Started(Err(e.to_string()))).ok();
            return;
        }
    };
    let display = event_loop
        .display_handle()
        .map(|d| d.as_raw())
        .map_err(|e| e.to_string());
    proxies.send(event_loop.create_proxy()).ok();
    replies.send(Reply::Started(display)).ok();
    let mut events = Events {
        shared,
        replies,
        window: None,
        quit: false,
    };
    while !events.quit {
        // Waits for the window system (or a request); no timeout, no polling.
        event_loop.pump_app_events(None, &mut events);
    }
}

/// The mirror window, its event thread and what the thread reports.
pub struct MirrorWindow {
    shared: Arc<Shared>,
    proxy: EventLoopProxy<Request>,
    replies: mpsc::Receiver<Reply>,
    display: RawDisplayHandle,
    handles: Option<Handles>,
    thread: Option<JoinHandle<()>>,
}

/// What the window's event thread saw since the last look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MirrorEvents {
    /// The person closed the window: drop the mirror.
    pub closed: bool,
    /// The window's new size in pixels.
    pub resized: Option<(u32, u32)>,
}

impl MirrorWindow {
    /// Connects to the display on the window's own thread, or says why not (no display, a window system winit
    /// cannot reach). The window itself appears with [`MirrorWindow::show`], once there is a headset session to
    /// mirror.
    pub fn connect() -> Result<MirrorWindow, String> {
        let shared = Arc::new(Shared {
            closed: AtomicBool::new(false),
            resized: AtomicU64::new(NO_SIZE),
        });
        let (reply_tx, replies) = mpsc::channel();
        let (proxy_tx, proxy_rx) = mpsc::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mirror-window".into())
            .spawn(move || event_thread(thread_shared, reply_tx, proxy_tx))
            .map_err(|e| format!("the mirror window's thread: {e}"))?;
        let display = match replies.recv_timeout(SHOW_WAIT) {
            Ok(Reply::Started(Ok(d))) => d,
            Ok(Reply::Started(Err(e))) => return Err(e),
            _ => return Err("the mirror window's event loop did not start".into()),
        };
        let proxy = proxy_rx
            .recv_timeout(SHOW_WAIT)
            .map_err(|_| "the mirror window's event loop did not start".to_owned())?;
        Ok(MirrorWindow {
            shared,
            proxy,
            replies,
            display,
            handles: None,
            thread: Some(thread),
        })
    }

    /// The instance extensions Vulkan needs to draw in a window of this display.
    pub fn vulkan_extensions(&self) -> Result<Vec<&'static std::ffi::CStr>, String> {
        tumble_engine::render::window_extensions(self.display).map_err(|e| e.to_string())
    }

    /// Opens the window, or says why not.
    pub fn show(&mut self) -> Result<(), String> {
        if self.handles.is_some() {
            return Ok(());
        }
        self.proxy
            .send_event(Request::Show)
            .map_err(|_| "the mirror window's event loop is gone".to_owned())?;
        match self.replies.recv_timeout(SHOW_WAIT) {
            Ok(Reply::Shown(Ok(h))) => {
                self.handles = Some(h);
                Ok(())
            }
            Ok(Reply::Shown(Err(e))) => Err(e),
            _ => Err("the window did not appear".into()),
        }
    }

    /// The window's raw handles and size in pixels, for `Mirror::new`.
    pub fn raw_handles(&self) -> Result<(RawDisplayHandle, RawWindowHandle, (u32, u32)), String> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err("the mirror window is closed".into());
        }
        let h = self.handles.ok_or("the mirror window is not shown")?;
        Ok((h.display, h.window, h.size))
    }

    /// What happened to the window since the last call: two atomic reads, no call into the window system.
    pub fn pump(&mut self) -> MirrorEvents {
        let resized = self.shared.resized.swap(NO_SIZE, Ordering::AcqRel);
        MirrorEvents {
            closed: self.shared.closed.load(Ordering::Acquire),
            resized: (resized != NO_SIZE).then_some(((resized >> 32) as u32, resized as u32)),
        }
    }
}

impl Drop for MirrorWindow {
    /// Ends the event thread, which drops the window (the Vulkan mirror, which draws into it, went first).
    fn drop(&mut self) {
        if self.proxy.send_event(Request::Quit).is_ok() {
            if let Some(t) = self.thread.take() {
                t.join().ok();
            }
        }
    }
}
