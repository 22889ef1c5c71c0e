//! Issue 29: the mirror path — the desktop window beside the headset (`tumble_game::vr::mirror_window`, its events on a
//! thread of their own) and a frame's left eye blitted into its swapchain image and presented, as `tumble vr` does
//! every frame — allocates nothing on the frame's thread once its swapchain is made, whatever the window system
//! sends the window. In a real X window on an Xvfb of its own (installed by `make test`), with no headset;
//! `make test-vr` checks the same beside a real runtime.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use tumble_engine::render::{
    authority_rgb, submit_with_mirror, CubeInstance, FrameInput, Gpu, Mirror, Renderer, View, CUBE_RESTING,
};
use tumble_game::alloc_count::{thread_allocations, Counting};
use tumble_game::vr::mirror_window::MirrorWindow;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// An Xvfb on the first free display of :110..:129, stopped (and its log removed) when dropped. Its standard output,
/// where it said it was ready, stays open while it runs: a server that wrote there again would otherwise die of a
/// broken pipe.
struct Xvfb {
    child: Child,
    _said: BufReader<ChildStdout>,
    log: PathBuf,
}

/// How long a server may take to say it is ready (s): it takes well under a second; one that neither serves nor
/// exits in this time is reported with its log rather than left to the test run's hang guard.
const XVFB_READY_S: u64 = 60;

/// The first line `said` writes, or `None` at end of file or after [`XVFB_READY_S`]. The read runs on a thread of
/// its own, which gives the reader back with the line so that the pipe stays open.
fn first_line(mut said: BufReader<ChildStdout>) -> Option<(String, BufReader<ChildStdout>)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = said.read_line(&mut line);
        tx.send(read.is_ok_and(|bytes| bytes > 0).then_some((line, said))).ok();
    });
    rx.recv_timeout(Duration::from_secs(XVFB_READY_S)).ok().flatten()
}

/// Whether display `n` is taken: its lock file names a process that is still running (a server killed without
/// the chance to clean up leaves its lock behind, and Xvfb itself takes over such a stale one).
fn display_taken(n: u32) -> bool {
    std::fs::read_to_string(format!("/tmp/.X{n}-lock"))
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

impl Xvfb {
    /// Starts the server and returns once it says it serves clients. Its socket file appears before that (the
    /// server makes it first, then sets up its screen and keyboard); a CI run's window, made once the socket was
    /// there, lost its connection at its first request ("Failed to query XInput extension"), for a cause not pinned
    /// down. `-displayfd` has the server write its display number when it is ready, and `-noreset` keeps it from
    /// resetting (which drops every connection) when a client goes away. A number another server takes between the
    /// check and the start makes this one exit with nothing written: the next number is tried.
    fn start() -> (Xvfb, String) {
        let log = std::env::temp_dir().join(format!("tumble-mirror-xvfb-{}.log", std::process::id()));
        let mut tried = Vec::new();
        for n in (110..130).filter(|&n| !display_taken(n)) {
            // A stale server's lock and socket go first.
            std::fs::remove_file(format!("/tmp/.X{n}-lock")).ok();
            std::fs::remove_file(format!("/tmp/.X11-unix/X{n}")).ok();
            let stderr = std::fs::File::create(&log).expect("the Xvfb log file");
            let mut child = Command::new("Xvfb")
                .args([
                    format!(":{n}").as_str(),
                    "-screen",
                    "0",
                    "800x600x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                    "-displayfd",
                    "1",
                ])
                .stdout(Stdio::piped())
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("Xvfb (package xvfb, which `make test` installs): {e}"));
            let said = BufReader::new(child.stdout.take().expect("piped"));
            // Waits until the server is ready (a line), has exited (end of file) or has taken too long.
            match first_line(said) {
                Some((ready, said)) if ready.trim() == n.to_string() => {
                    let xvfb = Xvfb {
                        child,
                        _said: said,
                        log,
                    };
                    return (xvfb, format!(":{n}"));
                }
                ready => tried.push(format!(
                    ":{n} ({})",
                    if ready.is_some() { "another line" } else { "no line" }
                )),
            }
            child.kill().ok();
            child.wait().ok();
        }
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        std::fs::remove_file(&log).ok();
        panic!("no Xvfb started within {XVFB_READY_S} s on {tried:?}; the last one said:\n{said}");
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM lets the server remove its lock file; SIGKILL only if it does not stop.
        std::fs::remove_file(&self.log).ok();
        let terminated = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        let since = Instant::now();
        while terminated && since.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

#[test]
fn mirrored_frames_do_not_allocate_once_the_swapchain_is_made() {
    let (_xvfb, display) = Xvfb::start();
    // The only test in this binary: nothing else reads the environment meanwhile.
    std::env::set_var("DISPLAY", &display);
    std::env::remove_var("WAYLAND_DISPLAY");
    let cubes: Vec<CubeInstance> = (0..200)
        .map(|i| CubeInstance {
            position: Vec3::new(
                (i % 20) as f32 * 1.1 - 11.0,
                0.5 + (i / 100) as f32,
                ((i / 20) % 5) as f32 * 1.1,
            ),
            rotation: Quat::from_rotation_y(i as f32 * 0.1),
            half_extents: Vec3::splat(0.5),
            colour: authority_rgb((i % 5) as u8),
            flags: if i % 3 == 0 { CUBE_RESTING } else { 0 },
        })
        .collect();
    let views = View::stereo_pair(Vec3::new(0.0, 8.0, 20.0), Vec3::ZERO, 1.0, 4.0 / 3.0, 0.064);
    let input = FrameInput::new(&views, &cubes);

    let mut window = MirrorWindow::connect().unwrap_or_else(|e| panic!("the mirror window on {display}: {e}"));
    let extensions = window.vulkan_extensions().expect("surface extensions");
    let gpu = Gpu::for_window_extensions(&extensions).unwrap_or_else(|e| panic!("{e}"));
    window.show().expect("the window appears");
    let (raw_display, raw_window, (width, height)) = window.raw_handles().expect("handles");
    let mut renderer = Renderer::new(&gpu, 160, 120, 2).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: the window outlives the mirror (dropped first, below).
    let mut mirror =
        unsafe { Mirror::new(&gpu, raw_display, raw_window, width, height) }.unwrap_or_else(|e| panic!("{e}"));
    let frame = |renderer: &mut Renderer, mirror: &mut Mirror, window: &mut MirrorWindow| {
        // What `tumble vr` does each frame: read the window's news (atomics), then draw and submit.
        let news = window.pump();
        if let Some((w, h)) = news.resized {
            mirror.resize(w, h);
        }
        assert!(!news.closed);
        let cmd = renderer.begin_frame(&input).expect("a frame");
        submit_with_mirror(renderer, cmd, Some(mirror)).expect("submitted and shown");
    };
    for _ in 0..4 {
        frame(&mut renderer, &mut mirror, &mut window);
    }
    assert_eq!(mirror.builds, 1, "the swapchain was made once, on the first frame");
    let (shown_before, before) = (mirror.presented, thread_allocations());
    for _ in 0..60 {
        frame(&mut renderer, &mut mirror, &mut window);
    }
    let allocations = thread_allocations() - before;
    assert_eq!(allocations, 0, "{allocations} allocations in 60 mirrored frames");
    assert!(mirror.presented > shown_before, "frames reached the window");
    assert_eq!(mirror.builds, 1, "no swapchain made while nothing changed");

    // The count is live on this thread, so the zero above is a measurement: a resize makes a new swapchain, one-off
    // work that allocates (`tumble vr` leaves such a frame out of its steady count, and reports the builds).
    let before = thread_allocations();
    mirror.resize(200, 100);
    frame(&mut renderer, &mut mirror, &mut window);
    assert_eq!(mirror.builds, 2, "a new swapchain for the new size");
    assert!(
        thread_allocations() > before,
        "the counter sees the rebuild's allocations"
    );
    drop(mirror);
    drop(window);
    let messages = tumble_engine::render::validation_messages();
    assert_eq!(messages, 0, "the Vulkan validation layers reported {messages} messages");
}
