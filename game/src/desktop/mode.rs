//! What the desktop window shows: one world of its own ([`DesktopSim`]: reset, pause, scenes) or a networked game
//! ([`NetPlay`]: host, guest or local players; nothing pauses or resets a game others are in). The window asks
//! the same questions of both.

use glam::Vec3;
use tumble_engine::physics::World;

use super::interpolate::PoseBuffer;
use super::net_play::{NetPlay, NetPlayError};
use super::sim::{DesktopSim, SimStats};
use crate::avatar::{Avatar, AvatarInput};
use crate::draw::SessionDraw;
use crate::interaction::Interaction;

pub enum Mode {
    /// Both boxed: the single world keeps kilobytes of fixed-size buffers inline, and the two differ in size.
    Single(Box<DesktopSim>),
    Net(Box<NetPlay>),
}

impl Mode {
    /// The world on screen (a networked game: the shown peer's).
    pub fn world(&self) -> &World {
        match self {
            Mode::Single(s) => &s.world,
            Mode::Net(n) => &n.shown().world,
        }
    }

    pub fn interaction(&self) -> &Interaction {
        match self {
            Mode::Single(s) => &s.interaction,
            Mode::Net(n) => &n.shown().interaction,
        }
    }

    pub fn avatar(&self) -> &Avatar {
        match self {
            Mode::Single(s) => &s.avatar,
            Mode::Net(n) => &n.shown().avatar,
        }
    }

    pub fn poses(&self) -> &PoseBuffer {
        match self {
            Mode::Single(s) => &s.poses,
            Mode::Net(n) => &n.poses,
        }
    }

    pub fn alpha(&self) -> f32 {
        match self {
            Mode::Single(s) => s.alpha(),
            Mode::Net(n) => n.alpha(),
        }
    }

    pub fn stats(&self) -> SimStats {
        match self {
            Mode::Single(s) => s.stats,
            Mode::Net(n) => n.stats(),
        }
    }

    pub fn scene_name(&self) -> &str {
        match self {
            Mode::Single(s) => &s.scene_name,
            Mode::Net(n) => &n.scene_name,
        }
    }

    pub fn paused(&self) -> bool {
        matches!(self, Mode::Single(s) if s.paused)
    }

    /// The shown peer's authority table, player and remote avatars, for tints and the other players; `None` alone.
    pub fn session(&self) -> Option<SessionDraw<'_>> {
        match self {
            Mode::Single(_) => None,
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

    /// One frame's steps. A networked game that fails (the host's scene differs, a socket error) returns the error.
    pub fn advance(&mut self, frame_s: f64, input: &AvatarInput) -> Result<u32, NetPlayError> {
        match self {
            Mode::Single(s) => Ok(s.advance(frame_s, input)),
            Mode::Net(n) => n.advance(frame_s, input),
        }
    }

    /// The centre and radius of the scene (for framing the camera).
    pub fn bounds(&self) -> (Vec3, f32) {
        match self {
            Mode::Single(s) => s.bounds(),
            Mode::Net(n) => bounds_of(&n.shown().world),
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
