//! A networked game on a clock of its own: [`NetRunner`] steps a [`NetPlay`] at the fixed 90 Hz on a thread, on
//! the real clock, and keeps its sockets drained between steps, whatever the window does. A frame loop only hands
//! it the player's hands ([`NetRunner::publish_input`]: each frame's input, with the time it was taken) and, to
//! draw, holds its lock for as long as it reads ([`NetRunner::lock`]): never while it waits for the display. So a
//! window minimised, a frame that takes a second or a loaded machine drawing two frames a second changes nothing
//! for the other players — the game, its sending and the host's relaying go on at their own rate — and the
//! window draws whatever the last steps left, interpolated by the real clock.
//!
//! Each step takes the hands at the step's own time, between the two frame inputs around it (the last one held
//! when frames stop coming: the hands stay where they were, a held cube stays held).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{ArcMutexGuard, Mutex, MutexGuard, RawMutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::avatar::blend_input;
use crate::avatar::AvatarInput;
use crate::fixed_step::STEP_S;
use crate::session::net_play::{NetPlay, NetPlayError};

/// How long the thread sleeps between looks at its sockets while no step is due.
const POLL_EVERY: Duration = Duration::from_micros(500);
/// Behind by more than this (a suspended machine), the runner drops the backlog rather than run it all at once.
const MAX_CATCH_UP_S: f64 = 1.0;

/// The hands of the last two frames, with when they were taken.
#[derive(Clone, Copy, Debug, Default)]
struct FrameInputs {
    previous: Option<(Instant, AvatarInput)>,
    last: Option<(Instant, AvatarInput)>,
}

impl FrameInputs {
    fn push(&mut self, at: Instant, input: AvatarInput) {
        self.previous = self.last;
        self.last = Some((at, input));
    }

    /// The hands at `t`: between the two frames around it, or the last frame's after it (held).
    fn at(&self, t: Instant) -> AvatarInput {
        match (self.previous, self.last) {
            (Some((t0, a)), Some((t1, b))) if t1 > t0 && t < t1 => {
                let f = t.saturating_duration_since(t0).as_secs_f64() / (t1 - t0).as_secs_f64();
                blend_input(&a, &b, f.clamp(0.0, 1.0) as f32)
            }
            (_, Some((_, b))) => b,
            _ => AvatarInput::default(),
        }
    }
}

/// What the thread and the frame loop share.
struct Shared {
    play: Arc<Mutex<NetPlay>>,
    inputs: Mutex<FrameInputs>,
    stop: AtomicBool,
    /// When the last step was taken (for interpolation by the real clock).
    last_step_at: Mutex<Option<Instant>>,
}

/// A [`NetPlay`] stepped on its own thread. Dropping it stops the thread, and the game says its goodbye.
pub struct NetRunner {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Result<(), NetPlayError>>>,
}

impl NetRunner {
    /// Starts stepping `play` now. Call it on the thread that will read the game (the frame loop's).
    pub fn start(play: NetPlay) -> Result<NetRunner, NetPlayError> {
        park_once();
        let shared = Arc::new(Shared {
            play: Arc::new(Mutex::new(play)),
            inputs: Mutex::new(FrameInputs::default()),
            stop: AtomicBool::new(false),
            last_step_at: Mutex::new(None),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("net-game".into())
            .spawn(move || run(&theirs))
            .map_err(|e| NetPlayError::Bad(format!("the game's thread: {e}")))?;
        Ok(NetRunner {
            shared,
            thread: Some(thread),
        })
    }

    /// The hands of this frame, taken now.
    pub fn publish_input(&self, input: &AvatarInput) {
        lock(&self.shared.inputs).push(Instant::now(), *input);
    }

    /// The game, to read (or change) between steps. Hold it only as long as the reading takes.
    pub fn lock(&self) -> MutexGuard<'_, NetPlay> {
        self.shared.play.lock()
    }

    /// [`NetRunner::lock`] as a guard of its own (no borrow of the runner), for a window that reads through a
    /// frame.
    pub fn lock_owned(&self) -> ArcMutexGuard<RawMutex, NetPlay> {
        self.shared.play.lock_arc()
    }

    /// How far the real clock is past the last step, in steps (0..1): where to draw between the last two.
    pub fn alpha(&self) -> f32 {
        self.alpha_ahead(Duration::ZERO)
    }

    /// [`NetRunner::alpha`] for a frame shown `lead` from now (a headset's predicted display time).
    pub fn alpha_ahead(&self, lead: Duration) -> f32 {
        lock(&self.shared.last_step_at).map_or(1.0, |t| {
            ((t.elapsed() + lead).as_secs_f64() / STEP_S).clamp(0.0, 1.0) as f32
        })
    }

    /// Whether the game's thread has stopped (an error, which [`NetRunner::stop`] returns).
    pub fn has_stopped(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the thread; its error, if it stopped on one.
    pub fn stop(&mut self) -> Result<(), NetPlayError> {
        self.shared.stop.store(true, Ordering::Release);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(NetPlayError::Bad("the game's thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for NetRunner {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::warn!("the game stopped: {e}");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock()
}

/// Parks the calling thread once, for a microsecond. The first time a thread waits on a parking_lot lock, it sets up
/// the thread's parking data and may grow the library's table of them: allocations, which must happen here, at the
/// start, not in the middle of a frame the first time the game's lock is contended.
fn park_once() {
    let lock = Mutex::new(());
    let woken = parking_lot::Condvar::new();
    let mut guard = lock.lock();
    let _ = woken.wait_for(&mut guard, Duration::from_micros(1));
}

/// The thread: a step every 1/90 s of the real clock, the sockets polled in between.
fn run(shared: &Shared) -> Result<(), NetPlayError> {
    park_once();
    let mut start = Instant::now();
    let mut step = 0u64;
    while !shared.stop.load(Ordering::Acquire) {
        let due = start + Duration::from_secs_f64(step as f64 * STEP_S);
        let now = Instant::now();
        if now < due {
            shared.play.lock().poll()?;
            std::thread::sleep(POLL_EVERY.min(due - now));
            continue;
        }
        if (now - due).as_secs_f64() > MAX_CATCH_UP_S {
            tracing::warn!(
                behind_s = (now - due).as_secs_f64(),
                "the game fell behind the clock; skipping ahead"
            );
            start = now - Duration::from_secs_f64(step as f64 * STEP_S);
        }
        let input = lock(&shared.inputs).at(due);
        shared.play.lock().step_once(Some(&input))?;
        *lock(&shared.last_step_at) = Some(Instant::now());
        step += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{HandInput, Pose};
    use crate::session::net_play::{HostOptions, JoinOptions, PLAY_KBPS_BUDGET};
    use glam::{Quat, Vec3};

    fn table64() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/table64.toml")
    }

    /// A guest on UDP playing headless for `seconds` in a thread of its own: its seconds stalled and whether its
    /// host went away.
    fn guest_of(code: &str, seconds: f64) -> std::thread::JoinHandle<(f64, bool)> {
        let options = JoinOptions {
            scene: table64(),
            host: tumble_net::join_code::parse_target(code).unwrap(),
            kbps_budget: PLAY_KBPS_BUDGET,
            pretend_version: None,
        };
        std::thread::spawn(move || {
            let mut guest = NetPlay::join(&options).unwrap();
            let gone = guest.run_headless(Some(seconds)).is_err();
            (guest.shown().stats.seconds_stalled, gone)
        })
    }

    /// Issue 30, item 5: a host whose frame loop stops for 6 s (longer than the transport's 5 s timeout) keeps its
    /// guest playing: the game steps and sends on its own thread; the guest never sees the host stand still. The
    /// control is the game stepped by the frame loop itself, as it was: the same stop stalls the guest (or times it
    /// out).
    #[test]
    fn a_host_whose_frame_loop_stops_keeps_its_guest_playing() {
        for threaded in [true, false] {
            let host = NetPlay::host(&HostOptions {
                scene: table64(),
                port: 0,
                bots: 0,
                playing: true,
                kbps_budget: PLAY_KBPS_BUDGET,
                open: false,
                public_addr: Some("127.0.0.1:0".parse().unwrap()),
                port_mapping: false,
                port_mapping_lifetime: crate::session::net_play::PORT_MAPPING_LIFETIME,
            })
            .unwrap();
            let code = host.join_code.clone().expect("a join code");
            let guest = guest_of(&code, 10.0);
            let frames = |s: f64, mut frame: Box<dyn FnMut() + '_>| {
                let until = Instant::now() + Duration::from_secs_f64(s);
                while Instant::now() < until {
                    frame();
                    std::thread::sleep(Duration::from_millis(11));
                }
            };
            let idle = AvatarInput::default();
            let (stepped_while_stopped, stalled, gone) = if threaded {
                let runner = NetRunner::start(host).unwrap();
                frames(1.5, Box::new(|| runner.publish_input(&idle)));
                let before = runner.lock().step_count();
                std::thread::sleep(Duration::from_secs(6));
                let after = runner.lock().step_count();
                frames(1.0, Box::new(|| runner.publish_input(&idle)));
                let (stalled, gone) = guest.join().unwrap();
                (after > before, stalled, gone)
            } else {
                let mut host = host;
                let mut last = Instant::now();
                let mut frame = || {
                    let now = Instant::now();
                    host.advance((now - last).as_secs_f64(), &idle).unwrap();
                    last = now;
                };
                frames(1.5, Box::new(&mut frame));
                std::thread::sleep(Duration::from_secs(6));
                frames(1.0, Box::new(&mut frame));
                let (stalled, gone) = guest.join().unwrap();
                (false, stalled, gone)
            };
            eprintln!("threaded {threaded}: stalled {stalled:.2} s, host gone {gone}");
            if threaded {
                assert!(
                    stepped_while_stopped,
                    "the host's game stepped while its frame loop stood"
                );
                assert_eq!(stalled, 0.0, "the guest never saw the host stand still");
                assert!(!gone, "the guest kept its host");
            } else {
                assert!(gone || stalled > 1.0, "the control: stalled {stalled}, gone {gone}");
            }
        }
    }

    #[test]
    fn a_step_takes_the_hands_between_the_frames_around_it() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(20);
        let hand = |x: f32| {
            let mut input = AvatarInput::default();
            input.hands[1] = HandInput {
                tracked: true,
                pose: Pose::new(Vec3::new(x, 1.0, 0.0), Quat::IDENTITY),
                ..HandInput::default()
            };
            input
        };
        let mut inputs = FrameInputs::default();
        assert_eq!(inputs.at(t0), AvatarInput::default(), "no frame yet: no hands");
        inputs.push(t0, hand(0.0));
        inputs.push(t1, hand(1.0));
        let mid = inputs.at(t0 + Duration::from_millis(5));
        assert!((mid.hands[1].pose.position.x - 0.25).abs() < 1e-5);
        let after = inputs.at(t1 + Duration::from_secs(10));
        assert_eq!(
            after.hands[1].pose.position.x, 1.0,
            "frames stopped: the last hands held"
        );
    }
}
