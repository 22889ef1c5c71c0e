//! What the desktop view, VR and screenshots draw the same way: a cube's highlight flags from the interaction, its
//! colour from its authority (white, blue, red, green, yellow; held brighter), and the players' hands as
//! controllers (a handle, a tracking ring that lights up as the grip closes, a trigger) and heads (with a visor) in
//! each player's colour.

use glam::Vec3;
use tumble_engine::physics::BodyId;
use tumble_engine::render::{authority_rgb, CubeInstance, CUBE_HELD, CUBE_RESTING, CUBE_SELECTED, PLAYER_RGB};

use crate::authority::{AuthorityTable, NOBODY};
use crate::avatar::{Avatar, HandSide, Pose};
use crate::interaction::Interaction;
use crate::session::remote_avatars::RemoteAvatars;

/// Half extents of a drawn hand's handle (m), centred on the hand's (grip) pose, along its -z: what the fist holds.
pub const HAND_HALF_EXTENTS_M: Vec3 = Vec3::new(0.02, 0.024, 0.06);
/// The controller's tracking ring at the front of the handle (m, half extents; centre in the hand's frame): it
/// lights up as the grip closes, so a player sees a grab (theirs or another's) before the cube moves.
const RING_HALF_EXTENTS_M: Vec3 = Vec3::new(0.04, 0.014, 0.036);
const RING_OFFSET_M: Vec3 = Vec3::new(0.0, 0.012, -0.075);
/// The trigger under the front of the handle, where the index finger rests.
const TRIGGER_HALF_EXTENTS_M: Vec3 = Vec3::new(0.008, 0.014, 0.01);
const TRIGGER_OFFSET_M: Vec3 = Vec3::new(0.0, -0.034, -0.035);
/// Boxes per drawn hand: handle, ring, trigger.
pub const BOXES_PER_HAND: usize = 3;

/// Half extents of another player's drawn head (m): a box the size of a head, so a player sees where the others
/// stand, and a dark visor on its front (-z) showing where they look.
pub const HEAD_HALF_EXTENTS_M: Vec3 = Vec3::new(0.09, 0.11, 0.1);
const VISOR_HALF_EXTENTS_M: Vec3 = Vec3::new(0.085, 0.035, 0.02);
const VISOR_OFFSET_M: Vec3 = Vec3::new(0.0, 0.02, -0.1);
/// The visor's and the trigger's colour (linear RGB): near black.
const DARK_RGB: [f32; 3] = [0.03, 0.03, 0.035];

/// Boxes drawn per remote player: the head with its visor and two hands.
pub const BOXES_PER_REMOTE_PLAYER: usize = 2 + 2 * BOXES_PER_HAND;

/// Boxes drawn for avatars at most: our two hands, and the heads and hands of three other players.
pub const AVATAR_BOXES_MAX: usize = 2 * BOXES_PER_HAND + 3 * BOXES_PER_REMOTE_PLAYER;

/// What a networked peer's frame is drawn with besides its world: whose cube is whose, whose hands ours are, and the
/// other players as this peer plays them out.
#[derive(Clone, Copy)]
pub struct SessionDraw<'a> {
    pub table: &'a AuthorityTable,
    pub player: u8,
    pub remote: &'a RemoteAvatars,
}

/// A cube's flags: held wins over hovered (selected); resting adds its tint.
pub fn cube_flags(interaction: &Interaction, id: BodyId, at_rest: bool) -> u32 {
    let hand = if interaction.is_held(id) {
        CUBE_HELD
    } else if HandSide::BOTH.iter().any(|&s| interaction.hand(s).hovered == Some(id)) {
        CUBE_SELECTED
    } else {
        0
    };
    hand | if at_rest { CUBE_RESTING } else { 0 }
}

/// Appends a controller per tracked hand in player `player`'s colour (0, no session: player 1's); our own head would
/// fill the view from inside, so it is not drawn.
pub fn push_hand_boxes(avatar: &Avatar, player: u8, out: &mut Vec<CubeInstance>) {
    let colour = PLAYER_RGB[usize::from(player.clamp(1, 4)) - 1];
    for side in HandSide::BOTH {
        let hand = avatar.hand(side);
        if hand.tracked {
            push_controller(&hand.pose, hand.grip, colour, out);
        }
    }
}

/// A hand as a controller at its grip pose: the handle in the player's colour, the ring from a darker shade of it
/// (open hand) to near white (closed), the trigger dark.
fn push_controller(pose: &Pose, grip: f32, colour: [f32; 3], out: &mut Vec<CubeInstance>) {
    out.push(avatar_box(pose, HAND_HALF_EXTENTS_M, colour));
    let g = grip.clamp(0.0, 1.0);
    let ring = colour.map(|c| c * 0.55 * (1.0 - g) + 0.95 * g);
    out.push(avatar_box(&part(pose, RING_OFFSET_M), RING_HALF_EXTENTS_M, ring));
    out.push(avatar_box(
        &part(pose, TRIGGER_OFFSET_M),
        TRIGGER_HALF_EXTENTS_M,
        DARK_RGB,
    ));
}

/// A part of an avatar `offset` (m) from `pose`'s origin, in its frame.
fn part(pose: &Pose, offset: Vec3) -> Pose {
    Pose::new(pose.position + pose.rotation * offset, pose.rotation)
}

/// Appends the other players' heads and tracked hands, as this peer plays them out of their jitter buffers (not as
/// those players have them: a peer knows the others only through packets), each in its player's colour. `me`'s
/// own slot is skipped: its hands come from [`push_hand_boxes`].
pub fn push_remote_avatar_boxes(remote: &RemoteAvatars, me: u8, out: &mut Vec<CubeInstance>) {
    for player in 1..=PLAYER_RGB.len() as u8 {
        let Some(poses) = remote.played(player).filter(|_| player != me) else {
            continue;
        };
        let colour = PLAYER_RGB[usize::from(player) - 1];
        out.push(avatar_box(&poses.head, HEAD_HALF_EXTENTS_M, colour));
        out.push(avatar_box(
            &part(&poses.head, VISOR_OFFSET_M),
            VISOR_HALF_EXTENTS_M,
            DARK_RGB,
        ));
        for hand in poses.hands.iter().filter(|h| h.tracked) {
            push_controller(&hand.pose, hand.grip, colour, out);
        }
    }
}

/// A head or hand drawn as a plain box at `pose`.
fn avatar_box(pose: &Pose, half_extents: Vec3, colour: [f32; 3]) -> CubeInstance {
    CubeInstance {
        position: pose.position,
        rotation: pose.rotation,
        half_extents,
        colour,
        flags: 0,
    }
}

/// How much brighter a held cube is drawn than its authority colour (the renderer's held highlight comes on top).
pub const HELD_BRIGHTNESS: f32 = 1.4;

/// A cube's colour by authority: 0 white (no player), 1 blue, 2 red, 3 green, 4 yellow; held cubes brighter.
pub fn authority_tint(authority: u8, held: bool) -> [f32; 3] {
    let rgb = authority_rgb(authority);
    if held {
        rgb.map(|c| (c * HELD_BRIGHTNESS).min(1.0))
    } else {
        rgb
    }
}

/// A cube's flags in a session: the renderer's held highlight mixes the colour towards amber and would hide whose
/// cube it is, so there a held cube is only brighter ([`authority_tint`]); hover stays.
pub fn session_flags(flags: u32) -> u32 {
    flags & !CUBE_HELD
}

/// Cube `cube`'s tint and held flag as `table` has it (`None`, a world with no session: white, not held).
pub fn table_tint(table: Option<&AuthorityTable>, cube: u32) -> ([f32; 3], bool) {
    match table {
        Some(t) if (cube as usize) < t.len() => {
            let held = t.holder(cube) != NOBODY;
            (authority_tint(t.stamp(cube).authority, held), held)
        }
        _ => (authority_tint(0, false), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::render::AUTHORITY_NONE_RGB;

    #[test]
    fn authority_tints_are_white_blue_red_green_yellow_and_held_is_brighter() {
        assert_eq!(authority_tint(0, false), AUTHORITY_NONE_RGB);
        assert_eq!(
            authority_tint(9, false),
            AUTHORITY_NONE_RGB,
            "an index past 4 is drawn as none"
        );
        let dominant = |rgb: [f32; 3]| (0..3).max_by(|&a, &b| rgb[a].total_cmp(&rgb[b])).unwrap();
        assert_eq!(dominant(authority_tint(1, false)), 2, "player 1 blue");
        assert_eq!(dominant(authority_tint(2, false)), 0, "player 2 red");
        assert_eq!(dominant(authority_tint(3, false)), 1, "player 3 green");
        let yellow = authority_tint(4, false);
        assert!(
            yellow[0] > 2.0 * yellow[2] && yellow[1] > 2.0 * yellow[2],
            "player 4 yellow: {yellow:?}"
        );
        for a in 0..=4 {
            let (plain, held) = (authority_tint(a, false), authority_tint(a, true));
            assert!(held.iter().zip(&plain).all(|(h, p)| h >= p && *h <= 1.0), "{a}");
            assert!(held.iter().sum::<f32>() > plain.iter().sum::<f32>() + 0.1, "{a}");
        }
    }

    #[test]
    fn the_table_decides_the_tint() {
        let mut table = AuthorityTable::new(3, 2, false);
        assert!(table.grab(1));
        assert_eq!(table_tint(Some(&table), 0), (authority_tint(0, false), false));
        assert_eq!(table_tint(Some(&table), 1), (authority_tint(2, true), true));
        assert_eq!(table_tint(Some(&table), 7), (authority_tint(0, false), false));
        assert_eq!(table_tint(None, 1), (authority_tint(0, false), false));
    }
}
