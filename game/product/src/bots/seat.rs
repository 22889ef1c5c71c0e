//! Where each player stands: four seats on the sides of the play area, 6 m from the centre, facing it, and the
//! spots near each seat where a builder puts its towers (outside the ±4.25 m the shipped piles cover, so a tower
//! starts on clear ground). Plain functions of the player index: every machine computes the same seats.

use glam::{Quat, Vec3};

use crate::avatar::{HandSide, Pose};

/// Players, and so seats.
pub const SEATS: usize = 4;
/// Distance from the centre of the play area to where a player stands (m).
pub const SEAT_RADIUS_M: f32 = 6.0;
/// Distance from the centre to a builder's tower spots (m): a cube there spans 4.75..5.75, clear of the piles.
pub const BUILD_RADIUS_M: f32 = 5.25;
/// Tower spots per seat, side by side along the seat's right axis.
pub const BUILD_SPOTS: usize = 3;
/// Distance between neighbouring tower spots (m): a toppled tower of ten does not reach far into the next.
pub const BUILD_SPOT_SPACING_M: f32 = 2.0;
/// Distance from the centre (m) of the ground behind each seat where caught or taken cubes are put down, and how
/// far (m) to either side of the seat.
pub const PUT_ASIDE_RADIUS_M: f32 = 7.0;
pub const PUT_ASIDE_SPREAD_M: f32 = 1.5;
/// Standing head height (m).
pub const HEAD_HEIGHT_M: f32 = 1.7;
/// Resting hands: below the head, in front of the body, apart (m).
pub const HAND_DROP_M: f32 = 0.5;
pub const HAND_FORWARD_M: f32 = 0.3;
pub const HAND_SPREAD_M: f32 = 0.25;

/// `sin(45°)`: the half-angle terms of the seats' quarter turns, written out so no trig runs.
const S45: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// One player's place at the play area.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seat {
    /// On the ground (y = 0).
    pub position: Vec3,
    /// Horizontal unit vector towards the centre.
    pub forward: Vec3,
    /// Horizontal unit vector to the player's right.
    pub right: Vec3,
    /// Turns −z (a head's forward) to `forward`.
    pub rotation: Quat,
}

impl Seat {
    /// Player 1 on +z, then +x, −z and −x going round; indices outside 1..=4 wrap onto them.
    pub fn of(player: u8) -> Seat {
        let (forward, rotation) = match player.wrapping_sub(1) % SEATS as u8 {
            0 => (Vec3::NEG_Z, Quat::IDENTITY),
            1 => (Vec3::NEG_X, Quat::from_xyzw(0.0, S45, 0.0, S45)),
            2 => (Vec3::Z, Quat::from_xyzw(0.0, 1.0, 0.0, 0.0)),
            _ => (Vec3::X, Quat::from_xyzw(0.0, -S45, 0.0, S45)),
        };
        Seat {
            position: -forward * SEAT_RADIUS_M,
            forward,
            right: forward.cross(Vec3::Y),
            rotation,
        }
    }

    /// Standing at the seat, looking at the centre.
    pub fn head(&self) -> Pose {
        Pose::new(self.position + Vec3::Y * HEAD_HEIGHT_M, self.rotation)
    }

    /// Tower spot `k` (of [`BUILD_SPOTS`]) on the ground: the middle one first, then left, then right.
    pub fn build_spot(&self, k: usize) -> Vec3 {
        let side = match k % BUILD_SPOTS {
            0 => 0.0,
            1 => -1.0,
            _ => 1.0,
        };
        -self.forward * BUILD_RADIUS_M + self.right * (side * BUILD_SPOT_SPACING_M)
    }

    /// Behind the seat, `side` (−1..1) of the way to either side: clear of the piles and the tower spots.
    pub fn put_aside_spot(&self, side: f32) -> Vec3 {
        -self.forward * PUT_ASIDE_RADIUS_M + self.right * (side.clamp(-1.0, 1.0) * PUT_ASIDE_SPREAD_M)
    }
}

/// Where a resting hand is for a head at `head` looking along the horizontal `forward` (unit).
pub fn rest_hand(head: Vec3, forward: Vec3, side: HandSide) -> Vec3 {
    let right = forward.cross(Vec3::Y);
    let sign = match side {
        HandSide::Left => -1.0,
        HandSide::Right => 1.0,
    };
    head + forward * HAND_FORWARD_M + right * (sign * HAND_SPREAD_M) - Vec3::Y * HAND_DROP_M
}

/// Every seat's tower spots, so no player takes its building stock from anyone's tower.
pub fn all_build_spots() -> [Vec3; SEATS * BUILD_SPOTS] {
    let mut spots = [Vec3::ZERO; SEATS * BUILD_SPOTS];
    for (i, spot) in spots.iter_mut().enumerate() {
        *spot = Seat::of((i / BUILD_SPOTS) as u8 + 1).build_spot(i % BUILD_SPOTS);
    }
    spots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_face_the_centre_from_four_sides() {
        for player in 1..=4u8 {
            let seat = Seat::of(player);
            assert!((seat.position.length() - SEAT_RADIUS_M).abs() < 1e-5);
            assert!(seat.position.normalize().dot(seat.forward) < -0.999);
            let look = seat.rotation * Vec3::NEG_Z;
            assert!(look.distance(seat.forward) < 1e-5, "player {player}: {look}");
            assert!(seat.right.cross(seat.forward).distance(Vec3::Y) < 1e-5);
        }
        assert_eq!(Seat::of(5), Seat::of(1));
        let spots = all_build_spots();
        for (i, a) in spots.iter().enumerate() {
            assert!(
                a.x.abs().max(a.z.abs()) >= BUILD_RADIUS_M - 1e-5,
                "spot {a} inside the piles"
            );
            for b in &spots[i + 1..] {
                assert!(a.distance(*b) >= BUILD_SPOT_SPACING_M - 1e-5);
            }
        }
    }
}
