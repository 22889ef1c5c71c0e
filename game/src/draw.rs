//! What the desktop view and VR both draw the same way: a cube's highlight flags from the interaction, and the
//! player's hands as small boxes in the player's colour.

use glam::Vec3;
use tumble_engine::physics::BodyId;
use tumble_engine::render::{CubeInstance, CUBE_HELD, CUBE_RESTING, CUBE_SELECTED, PLAYER_RGB};

use crate::avatar::{Avatar, HandSide};
use crate::interaction::Interaction;

/// Half extents of a drawn hand (m): a flat paddle.
pub const HAND_HALF_EXTENTS_M: Vec3 = Vec3::new(0.045, 0.025, 0.09);

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

/// Appends a box per tracked hand (our own head would fill the view from inside, so it is not drawn).
pub fn push_hand_boxes(avatar: &Avatar, out: &mut Vec<CubeInstance>) {
    for side in HandSide::BOTH {
        let hand = avatar.hand(side);
        if hand.tracked {
            out.push(CubeInstance {
                position: hand.pose.position,
                rotation: hand.pose.rotation,
                half_extents: HAND_HALF_EXTENTS_M,
                colour: PLAYER_RGB[0],
                flags: 0,
            });
        }
    }
}
