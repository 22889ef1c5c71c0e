//! `tumble vr --scripted-grab`: grabs driven by a scripted grip where the controllers cannot squeeze.
//!
//! Monado's simulated "simple" controllers hold still in front of the headset (left at (-0.2, 1.3, -0.5), right at
//! (0.2, 1.3, -0.5) in STAGE) and never press their only button, select/click, which is what our squeeze is bound
//! to on that profile. So in this mode the hand *poses* stay the runtime's tracked poses, and a scripted *grip*
//! value (taken as the larger of it and the real squeeze) closes and opens the hands on a fixed cycle. The play
//! space is placed so that both hands hover just above the top cube of the pile nearest the world origin, and the
//! cycle makes the right hand grab it, the left hand take it over (a hand-to-hand pass), and both let go (a slow
//! release: the cube is placed back and stays). Everything else — selection, grab, hold, pass, release — is
//! `game::interaction` exactly as the desktop view and bots run it.

use glam::Vec3;
use tumble_engine::physics::{BodyId, BodyKind, World};

use crate::avatar::HAND_COUNT;

/// How the grip was driven, for the JSON report.
pub const GRAB_DRIVER_SCRIPTED: &str =
    "scripted grip on the runtime's tracked hand poses (the simulated simple controllers cannot squeeze)";
pub const GRAB_DRIVER_CONTROLLERS: &str = "controller squeeze (select/click on the simple controller)";

/// One cycle of the script (steps): 4 s at 90 Hz.
pub const CYCLE_STEPS: u32 = 360;
/// Within a cycle: the right hand is closed in [RIGHT_CLOSE, RIGHT_OPEN), the left in [LEFT_CLOSE, LEFT_OPEN).
/// The left closes while the right holds (it takes the cube over), then the right opens (holding nothing), then
/// the left opens (placing the cube).
const RIGHT_CLOSE: u32 = 60;
const LEFT_CLOSE: u32 = 150;
const RIGHT_OPEN: u32 = 200;
const LEFT_OPEN: u32 = 270;
/// How far above the top face the hands hover (m): inside the interaction's reach.
pub const HOVER_ABOVE_TOP_M: f32 = 0.05;

/// The scripted grips at `step` (steps since the script started), left first.
pub fn scripted_grips(step: u32) -> [f32; HAND_COUNT] {
    let s = step % CYCLE_STEPS;
    let closed = |from: u32, to: u32| if (from..to).contains(&s) { 1.0 } else { 0.0 };
    [closed(LEFT_CLOSE, LEFT_OPEN), closed(RIGHT_CLOSE, RIGHT_OPEN)]
}

/// The top cube of the pile nearest the world origin (horizontally): what the scripted hands reach for.
pub fn target_cube(world: &World) -> Option<BodyId> {
    let mut candidates = (0..world.body_count() as u32)
        .map(BodyId)
        .filter(|&id| world.kind(id).is_ok_and(|k| k == BodyKind::Dynamic))
        .filter_map(|id| world.state(id).ok().map(|s| (id, s.position)));
    let first = candidates.next()?;
    let horizontal = |p: Vec3| p.x.hypot(p.z);
    // Nearest pile first (to the centimetre), then the highest cube in it.
    let better = |a: (BodyId, Vec3), b: (BodyId, Vec3)| {
        let (da, db) = (horizontal(a.1), horizontal(b.1));
        if (da - db).abs() > 0.01 {
            da < db
        } else {
            a.1.y > b.1.y
        }
    };
    Some(
        candidates
            .fold(first, |best, c| if better(c, best) { c } else { best })
            .0,
    )
}

/// Where the play space's origin goes in the world so that the hands' midpoint (in play space) hovers
/// [`HOVER_ABOVE_TOP_M`] above the middle of `cube`'s top face.
pub fn play_space_origin_for(world: &World, cube: BodyId, hands_midpoint: Vec3) -> Option<Vec3> {
    let state = world.state(cube).ok()?;
    let half = world.half_extents(cube).ok()?;
    let above_top = state.position + Vec3::new(0.0, half.y + HOVER_ABOVE_TOP_M, 0.0);
    Some(above_top - hands_midpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_grabs_passes_and_releases() {
        // (step, left, right)
        let expect = [
            (0, 0.0, 0.0),
            (RIGHT_CLOSE, 0.0, 1.0),
            (LEFT_CLOSE, 1.0, 1.0),
            (RIGHT_OPEN, 1.0, 0.0),
            (LEFT_OPEN, 0.0, 0.0),
            (CYCLE_STEPS + RIGHT_CLOSE, 0.0, 1.0),
        ];
        for (step, left, right) in expect {
            assert_eq!(scripted_grips(step), [left, right], "step {step}");
        }
    }
}
