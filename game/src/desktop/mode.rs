//! What the desktop window shows: one world of its own ([`DesktopSim`]: reset, pause, scenes) or a networked game
//! ([`NetPlay`]: host, guest or local players; nothing pauses or resets a game others are in). The window asks
//! the same questions of both.

use glam::Vec3;
use tumble_engine::physics::World;

use super::compare_view::CompareView;
use super::interpolate::PoseBuffer;
use super::net_play::NetPlay;
use super::sim::{DesktopSim, SimStats};
use super::DesktopError;
use crate::avatar::{Avatar, AvatarInput};
use crate::cube_game::CubeInput;
use crate::draw::SessionDraw;
use crate::interaction::Interaction;

pub enum Mode {
    /// Both boxed: the single world keeps kilobytes of fixed-size buffers inline, and the two differ in size.
    Single(Box<DesktopSim>),
    Net(Box<NetPlay>),
    /// `tumble compare --view`: the cube game over one network model, the two machines side by side. It has no
    /// hands: [`Mode::interaction`] and [`Mode::avatar`] are idle ones.
    Compare(Box<CompareView>),
}

/// The hands of a mode that has none (the cube game is played with keys).
static IDLE_INTERACTION: std::sync::LazyLock<Interaction> = std::sync::LazyLock::new(Interaction::default);
static IDLE_AVATAR: std::sync::LazyLock<Avatar> = std::sync::LazyLock::new(Avatar::default);

impl Mode {
    /// The world on screen (a networked game: the shown peer's).
    pub fn world(&self) -> &World {
        match self {
            Mode::Single(s) => &s.world,
            Mode::Net(n) => &n.shown().world,
            Mode::Compare(c) => c.field(),
        }
    }

    pub fn interaction(&self) -> &Interaction {
        match self {
            Mode::Single(s) => &s.interaction,
            Mode::Net(n) => &n.shown().interaction,
            Mode::Compare(_) => &IDLE_INTERACTION,
        }
    }

    pub fn avatar(&self) -> &Avatar {
        match self {
            Mode::Single(s) => &s.avatar,
            Mode::Net(n) => &n.shown().avatar,
            Mode::Compare(_) => &IDLE_AVATAR,
        }
    }

    pub fn poses(&self) -> &PoseBuffer {
        match self {
            Mode::Single(s) => &s.poses,
            Mode::Net(n) => &n.poses,
            Mode::Compare(c) => &c.left.poses,
        }
    }

    pub fn alpha(&self) -> f32 {
        match self {
            Mode::Single(s) => s.alpha(),
            Mode::Net(n) => n.alpha(),
            Mode::Compare(c) => c.alpha(),
        }
    }

    pub fn stats(&self) -> SimStats {
        match self {
            Mode::Single(s) => s.stats,
            Mode::Net(n) => n.stats(),
            Mode::Compare(c) => SimStats {
                steps: c.steps,
                step_ms: c.step_ms,
                cubes: c.field().body_count(),
                ..SimStats::default()
            },
        }
    }

    pub fn scene_name(&self) -> &str {
        match self {
            Mode::Single(s) => &s.scene_name,
            Mode::Net(n) => &n.scene_name,
            Mode::Compare(c) => &c.scene_name,
        }
    }

    pub fn paused(&self) -> bool {
        matches!(self, Mode::Single(s) if s.paused)
    }

    /// The shown peer's authority table, player and remote avatars, for tints and the other players; `None` alone.
    pub fn session(&self) -> Option<SessionDraw<'_>> {
        match self {
            Mode::Single(_) | Mode::Compare(_) => None,
            Mode::Net(n) => {
                let peer = n.shown();
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
            Mode::Net(n) => Ok(n.advance(frame_s, input)?),
            Mode::Compare(c) => c.advance(frame_s, keys).map_err(DesktopError::Compare),
        }
    }

    /// The centre and radius of the scene (for framing the camera).
    pub fn bounds(&self) -> (Vec3, f32) {
        match self {
            Mode::Single(s) => s.bounds(),
            Mode::Net(n) => bounds_of(&n.shown().world),
            Mode::Compare(c) => bounds_of(c.field()),
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
