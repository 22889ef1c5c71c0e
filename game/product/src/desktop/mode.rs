//! What the desktop window shows: one world of its own ([`DesktopSim`]: reset, pause, scenes) or a networked game
//! ([`NetPlay`]: host, guest or local players; nothing pauses or resets a game others are in). The window asks
//! the same questions of both.
//!
//! A networked game runs on a thread of its own ([`NetRunner`]): the window reads it between
//! [`Mode::begin_read`] and [`Mode::end_read`], which hold its lock for the frame's reading — never while the frame
//! waits for the display — and only hands it the hands ([`Mode::advance`]).

use glam::Vec3;
use tumble_engine::physics::World;

use super::side_by_side::SideBySide;
use super::sim::{DesktopSim, SimStats};
use super::DesktopError;
use crate::avatar::{Avatar, AvatarInput};
use crate::cube_game::CubeInput;
use crate::draw::SessionDraw;
use crate::interaction::Interaction;
use crate::interpolate::PoseBuffer;
use crate::session::net_play::{NetPlay, NetPlayError};
use crate::session::net_runner::NetRunner;

pub enum Mode {
    /// Both boxed: the single world keeps kilobytes of fixed-size buffers inline, and the two differ in size.
    Single(Box<DesktopSim>),
    Net(Box<NetView>),
    /// Two machines of one game side by side (the test bench's `tumble compare --view`: the cube game over one
    /// network model). It has no hands: [`Mode::interaction`] and [`Mode::avatar`] are idle ones.
    SideBySide(Box<dyn SideBySide>),
}

/// A networked game as the window sees it: its runner, and while a frame reads it, the game's lock.
pub struct NetView {
    runner: NetRunner,
    reading: Option<parking_lot::ArcMutexGuard<parking_lot::RawMutex, NetPlay>>,
    /// Where the frame being read lies between the last two steps, by the real clock.
    alpha: f32,
    scene_name: String,
}

impl NetView {
    /// Starts `play` stepping on its own thread.
    pub fn start(play: NetPlay) -> Result<NetView, NetPlayError> {
        let scene_name = play.scene_name.clone();
        Ok(NetView {
            runner: NetRunner::start(play)?,
            reading: None,
            alpha: 1.0,
            scene_name,
        })
    }

    /// The game, while a frame reads it ([`Mode::begin_read`]).
    pub fn play(&self) -> &NetPlay {
        self.reading
            .as_deref()
            .expect("the window reads the game between Mode::begin_read and Mode::end_read")
    }

    pub fn play_mut(&mut self) -> &mut NetPlay {
        self.reading
            .as_deref_mut()
            .expect("the window reads the game between Mode::begin_read and Mode::end_read")
    }
}

/// The hands of a mode that has none (the cube game is played with keys).
static IDLE_INTERACTION: std::sync::LazyLock<Interaction> = std::sync::LazyLock::new(Interaction::default);
static IDLE_AVATAR: std::sync::LazyLock<Avatar> = std::sync::LazyLock::new(Avatar::default);

impl Mode {
    /// A networked game: takes its lock for this frame's reading (and the real clock's place between its steps).
    /// Nothing for the others.
    pub fn begin_read(&mut self) {
        if let Mode::Net(n) = self {
            if n.reading.is_none() {
                n.reading = Some(n.runner.lock_owned());
                n.alpha = n.runner.alpha();
            }
        }
    }

    /// Lets the networked game step again (before the frame waits for the display).
    pub fn end_read(&mut self) {
        if let Mode::Net(n) = self {
            n.reading = None;
        }
    }

    /// The world on screen (a networked game: the shown peer's).
    pub fn world(&self) -> &World {
        match self {
            Mode::Single(s) => &s.world,
            Mode::Net(n) => &n.play().shown().world,
            Mode::SideBySide(c) => c.field(),
        }
    }

    pub fn interaction(&self) -> &Interaction {
        match self {
            Mode::Single(s) => &s.interaction,
            Mode::Net(n) => &n.play().shown().interaction,
            Mode::SideBySide(_) => &IDLE_INTERACTION,
        }
    }

    pub fn avatar(&self) -> &Avatar {
        match self {
            Mode::Single(s) => &s.avatar,
            Mode::Net(n) => &n.play().shown().avatar,
            Mode::SideBySide(_) => &IDLE_AVATAR,
        }
    }

    pub fn poses(&self) -> &PoseBuffer {
        match self {
            Mode::Single(s) => &s.poses,
            Mode::Net(n) => &n.play().poses,
            Mode::SideBySide(c) => c.left_poses(),
        }
    }

    pub fn alpha(&self) -> f32 {
        match self {
            Mode::Single(s) => s.alpha(),
            Mode::Net(n) => n.alpha,
            Mode::SideBySide(c) => c.alpha(),
        }
    }

    pub fn stats(&self) -> SimStats {
        match self {
            Mode::Single(s) => s.stats,
            Mode::Net(n) => n.play().stats(),
            Mode::SideBySide(c) => c.stats(),
        }
    }

    pub fn scene_name(&self) -> &str {
        match self {
            Mode::Single(s) => &s.scene_name,
            Mode::Net(n) => &n.scene_name,
            Mode::SideBySide(c) => c.scene_name(),
        }
    }

    pub fn paused(&self) -> bool {
        matches!(self, Mode::Single(s) if s.paused)
    }

    /// The shown peer's authority table, player and remote avatars, for tints and the other players; `None` alone.
    pub fn session(&self) -> Option<SessionDraw<'_>> {
        match self {
            Mode::Single(_) | Mode::SideBySide(_) => None,
            Mode::Net(n) => {
                let peer = n.play().shown();
                Some(SessionDraw {
                    table: &peer.table,
                    player: peer.player(),
                    remote: peer.remote_avatars(),
                })
            }
        }
    }

    /// One frame's steps: the hands' `input`, or in the cube game the `keys` held. A networked game that fails
    /// (the host's scene differs, a socket error) returns the error.
    pub fn advance(&mut self, frame_s: f64, input: &AvatarInput, keys: CubeInput) -> Result<u32, DesktopError> {
        match self {
            Mode::Single(s) => Ok(s.advance(frame_s, input)),
            Mode::Net(n) => {
                // The game steps on its own clock: the window only hands it the hands. A game that stopped on an
                // error says so here.
                n.runner.publish_input(input);
                if n.runner.has_stopped() {
                    n.runner.stop()?;
                    return Err(DesktopError::Net(NetPlayError::Bad("the game stopped".into())));
                }
                let _ = frame_s;
                Ok(0)
            }
            Mode::SideBySide(c) => c.advance(frame_s, keys).map_err(DesktopError::Compare),
        }
    }

    /// The centre and radius of the scene (for framing the camera).
    pub fn bounds(&self) -> (Vec3, f32) {
        match self {
            Mode::Single(s) => s.bounds(),
            Mode::Net(n) => bounds_of(&n.play().shown().world),
            Mode::SideBySide(c) => bounds_of(c.field()),
        }
    }
}

/// The centre and radius (m) of a sphere around every body of `world`.
pub fn bounds_of(world: &World) -> (Vec3, f32) {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for id in world.body_ids() {
        if let (Ok(s), Ok(h)) = (world.state(id), world.half_extents(id)) {
            let r = Vec3::splat(h.length());
            (lo, hi) = (lo.min(s.position - r), hi.max(s.position + r));
        }
    }
    if lo.x > hi.x {
        return (Vec3::ZERO, 1.0);
    }
    ((lo + hi) * 0.5, (hi - lo).length() * 0.5)
}
