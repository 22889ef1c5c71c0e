//! A player's avatar on the wire: the head, both hands (tracked flag, pose, grip, trigger) and, per hand, the cube
//! it holds (id, pose in the hand's frame, the claim's authority and ownership sequences). Held cubes travel here
//! and never as cube state; the holder is the avatar's player, so the stamp's authority index is not sent.
//!
//! [`WireAvatar`] is the quantized form, integers only. Quantization is idempotent (`quantize(dequantize(q)) ==
//! q`): positions use power-of-two units, rotations are canonical smallest-three encodings as in
//! [`crate::sync::codec::quantize`], at fewer bits for the avatar's own poses. The sender refuses what it cannot
//! represent ([`WireAvatar::from_avatar`]: non-finite input, a pose outside the play space, a held cube too far
//! from its hand); the reader refuses anything a peer could get wrong ([`serialize_avatar`]).
//!
//! [`serialize_avatar`] writes and reads, through net's `Stream` (bit-packed or entropy-coded): absolute without a
//! baseline, else every field against the baseline (an earlier sample of the same player that the receiver is
//! known to hold; the caller chooses and names it). A pose field is "exact" (one flag), a small residual in one of
//! [`RESIDUAL_CLASS_MAX`]'s widths, or absolute again; grip and trigger are "same" or a new byte; the held cube is
//! "same" or sent whole (grabs are rare).

use std::f64::consts::SQRT_2;

use glam::{Quat, Vec3};
use thiserror::Error;
use tumble_net::{SerializeError, Stream};

use crate::avatar::{Avatar, Pose, HAND_COUNT};
use crate::sync::codec::cube_state::{serialize_cube_id, serialize_rotation, CubeStateError, MAX_CUBES};
use crate::sync::codec::entropy_stream::context;
use crate::sync::codec::quantize::{dequantize_rotation, quantize_rotation, QuantizedRotation, POSITION_UNITS_PER_M};
use crate::sync::codec::stamp::AuthorityStamp;

/// Avatar position resolution: 1/1024 m per unit (0.98 mm), so a position is within 0.49 mm of the tracked one.
pub const AVATAR_POSITION_UNITS_PER_M: f32 = 1024.0;
/// The play space: x and z in ±this (m; the positive end one unit short), 2^17 values per axis.
pub const PLAY_SPACE_HALF_WIDTH_M: f32 = 64.0;
/// The play space's lowest point (m): a floor below the scene's ground for players standing in a pit.
pub const PLAY_SPACE_FLOOR_M: f32 = -8.0;
/// The play space's highest point (m, one unit short): 64 m of height in 2^16 values.
pub const PLAY_SPACE_CEILING_M: f32 = 56.0;
/// Integer ranges of the three axes, x y z, in [`AVATAR_POSITION_UNITS_PER_M`] units.
const AXIS_RANGE: [(i32, i32); 3] = [
    axis_range(-PLAY_SPACE_HALF_WIDTH_M, PLAY_SPACE_HALF_WIDTH_M),
    axis_range(PLAY_SPACE_FLOOR_M, PLAY_SPACE_CEILING_M),
    axis_range(-PLAY_SPACE_HALF_WIDTH_M, PLAY_SPACE_HALF_WIDTH_M),
];

/// Bits per stored component of a head or hand rotation (smallest three, in ±[`AVATAR_ROTATION_COMPONENT_MAX`]).
/// 11 bits: rounding leaves at most 2.4e-3 rad (0.14°; measured 2.6e-3 over 200,000 rotations, ties included),
/// 0.7 mm at the far side of a cube held 0.3 m out; four bits fewer per component than a cube's, which residuals
/// pay for in every packet while hands turn.
pub const AVATAR_ROTATION_COMPONENT_BITS: u32 = 11;
/// ±this integer stands for ±1/√2.
pub const AVATAR_ROTATION_COMPONENT_MAX: i32 = (1 << (AVATAR_ROTATION_COMPONENT_BITS - 1)) - 1;
/// Integer units per unit of quaternion component (≈ 1447).
const AVATAR_ROTATION_UNITS: f64 = AVATAR_ROTATION_COMPONENT_MAX as f64 * SQRT_2;
/// Largest rotation error (rad) of [`quantize_avatar_rotation`]: `6·√3 / units`, the bound derived for cubes in
/// [`crate::sync::codec::quantize::ROTATION_MAX_ERROR_RAD`] (tie-breaking included), at this resolution.
pub const AVATAR_ROTATION_MAX_ERROR_RAD: f64 = 6.0 * 1.732_050_807_568_877_2 / AVATAR_ROTATION_UNITS;
/// A decoded rotation's rebuilt component must beat the others by this much (as for cubes).
const ROTATION_TIE_MARGIN: f64 = 1e-6;

/// A held cube's position in its hand's frame is bounded by ±this per axis (m, the positive end one unit short).
/// Grabs happen within reach (about 0.3 m); two metres leave room for long cubes held by an end.
pub const HELD_OFFSET_BOUND_M: f32 = 2.0;
/// A held cube's offset uses the cube state's own resolution (1/4096 m) and 15-bit rotation: it is sent once per
/// grab, and the cube's world pose is built from it.
pub const HELD_POSITION_UNITS_PER_M: f32 = POSITION_UNITS_PER_M;
const HELD_RANGE: (i32, i32) = (
    -(HELD_OFFSET_BOUND_M * HELD_POSITION_UNITS_PER_M) as i32,
    (HELD_OFFSET_BOUND_M * HELD_POSITION_UNITS_PER_M) as i32 - 1,
);

/// Grip and trigger: 0..=1 in steps of 1/255 (one byte).
pub const UNIT_STEPS: u32 = 255;

/// Residual widths, narrowest first: a pose field's three integers as differences from the baseline's, each in
/// ±`RESIDUAL_CLASS_MAX[c]` (5, 7 and 9 bits); wider goes absolute. In position units ±15 is 15 mm (a hand
/// drifting), ±63 is 62 mm (the head over a round trip), ±255 is 0.25 m (a hand at 2 m/s over 10 steps). In
/// rotation units ±255 is about 0.18 in a component, about 0.35 rad of turn.
pub const RESIDUAL_CLASS_MAX: [i32; 3] = [15, 63, 255];
/// The class after the residual ones: the field in full.
const ABSOLUTE_CLASS: u32 = RESIDUAL_CLASS_MAX.len() as u32;

/// A hand is plausible within this distance of its head (m): a VR arm's reach with margin. The desktop's mouse
/// hand reaches much farther ([`DESKTOP_HAND_REACH_M`]); the host picks the limit for the kind of player.
pub const VR_HAND_REACH_M: f32 = 1.5;
/// `engine::input`'s mouse hand goes up to 60 m along the cursor ray; a little margin on top.
pub const DESKTOP_HAND_REACH_M: f32 = 61.0;

/// `(min, max)` units of an axis from `lo` to `hi` metres, the top one unit short.
const fn axis_range(lo: f32, hi: f32) -> (i32, i32) {
    let units = AVATAR_POSITION_UNITS_PER_M;
    ((lo * units) as i32, (hi * units) as i32 - 1)
}

/// A head or hand rotation as smallest-three at [`AVATAR_ROTATION_COMPONENT_BITS`] bits per component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AvatarRotation {
    /// Index of the dropped component, x y z w = 0 1 2 3.
    pub largest: u8,
    /// The other three in x y z w order, each in ±[`AVATAR_ROTATION_COMPONENT_MAX`].
    pub smallest_three: [i16; 3],
}

impl AvatarRotation {
    pub const IDENTITY: AvatarRotation = AvatarRotation {
        largest: 3,
        smallest_three: [0; 3],
    };

    fn components(&self) -> [i32; 3] {
        self.smallest_three.map(i32::from)
    }
}

/// A head or hand pose: position in [`AVATAR_POSITION_UNITS_PER_M`] units within the play space, rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WirePose {
    pub position: [i32; 3],
    pub rotation: AvatarRotation,
}

impl Default for WirePose {
    fn default() -> Self {
        WirePose {
            position: [0; 3],
            rotation: AvatarRotation::IDENTITY,
        }
    }
}

/// A cube in a hand: which, where in the hand's frame, and the claim's sequences (the authority is the holder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WireHeld {
    pub cube: u32,
    /// Units of 1/[`HELD_POSITION_UNITS_PER_M`] m in the hand's frame, each within ±[`HELD_OFFSET_BOUND_M`].
    pub position: [i32; 3],
    /// The cube state's 15-bit smallest-three, relative to the hand.
    pub rotation: QuantizedRotation,
    pub authority_seq: u16,
    pub ownership_seq: u16,
}

/// One hand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WireHand {
    pub tracked: bool,
    pub pose: WirePose,
    /// 0..=[`UNIT_STEPS`] for 0..=1.
    pub grip: u8,
    pub trigger: u8,
    pub held: Option<WireHeld>,
}

/// A player's avatar as the wire carries it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WireAvatar {
    pub head: WirePose,
    pub hands: [WireHand; HAND_COUNT],
}

/// Which part of an avatar an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AvatarPart {
    Head,
    Hand(u8),
    /// The cube held in this hand.
    Held(u8),
}

/// Why an avatar could not be built, written or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum AvatarStateError {
    #[error(transparent)]
    Stream(#[from] SerializeError),
    #[error("cube id {id} names no cube (the scene has {cube_count})")]
    UnknownCube { id: u32, cube_count: u32 },
    #[error("cube count {0} outside 1..={MAX_CUBES}")]
    BadCubeCount(u32),
    #[error("{0:?}: rotation is not a canonical smallest-three encoding")]
    NonCanonicalRotation(AvatarPart),
    #[error("{0:?}: value outside its range")]
    OutOfRange(AvatarPart),
    #[error("{0:?}: not a finite pose with a unit rotation")]
    NotFinite(AvatarPart),
    #[error("{0:?}: outside the play space")]
    OutOfPlaySpace(AvatarPart),
    #[error("cube {0} is held in both hands")]
    HeldTwice(u32),
}

impl AvatarStateError {
    fn from_cube(e: CubeStateError, part: AvatarPart) -> Self {
        match e {
            CubeStateError::Stream(e) => AvatarStateError::Stream(e),
            CubeStateError::UnknownCube { id, cube_count } => AvatarStateError::UnknownCube { id, cube_count },
            CubeStateError::BadCubeCount(n) => AvatarStateError::BadCubeCount(n),
            CubeStateError::NonCanonicalRotation(_) => AvatarStateError::NonCanonicalRotation(part),
        }
    }
}

// ---- rotations: the construction of `quantize.rs`, at 11 bits ----

/// The indices other than `k`, in order.
fn others(k: usize) -> [usize; 3] {
    [0, 1, 2].map(|i| i + usize::from(i >= k))
}

fn sum_of_squares(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

/// Smallest-three by plain rounding in f64; `None` for a zero or non-finite quaternion.
fn encode_rotation_rounded(q: Quat) -> Option<AvatarRotation> {
    let v = q.to_array().map(f64::from);
    let len = sum_of_squares(&v).sqrt();
    if !(len.is_finite() && len > 0.0) {
        return None;
    }
    let largest = (1..4).fold(0, |best, i| if v[i].abs() > v[best].abs() { i } else { best });
    let scale = AVATAR_ROTATION_UNITS / len * v[largest].signum();
    let max = f64::from(AVATAR_ROTATION_COMPONENT_MAX);
    Some(AvatarRotation {
        largest: largest as u8,
        smallest_three: others(largest).map(|i| (v[i] * scale).round().clamp(-max, max) as i16),
    })
}

/// The unit quaternion an encoding stands for. Total: any index and integers (clamped) give one.
pub fn dequantize_avatar_rotation(r: &AvatarRotation) -> Quat {
    let k = usize::from(r.largest & 3);
    let max = AVATAR_ROTATION_COMPONENT_MAX as i16;
    let mut v = [0.0f64; 4];
    for (i, c) in others(k).into_iter().zip(r.smallest_three) {
        v[i] = f64::from(c.clamp(-max, max)) / AVATAR_ROTATION_UNITS;
    }
    v[k] = (1.0 - sum_of_squares(&v)).max(0.0).sqrt();
    let len = sum_of_squares(&v).sqrt();
    Quat::from_array(v.map(|x| (x / len) as f32))
}

/// True when `r` is what [`quantize_avatar_rotation`] returns for its own decode (so it re-encodes to itself).
pub fn is_canonical_avatar_rotation(r: &AvatarRotation) -> bool {
    let max = AVATAR_ROTATION_COMPONENT_MAX;
    if r.largest > 3 || r.components().iter().any(|c| c.abs() > max) {
        return false;
    }
    let q = dequantize_avatar_rotation(r);
    let v = q.to_array().map(f64::from);
    let k = usize::from(r.largest);
    others(k).iter().all(|&i| v[i].abs() + ROTATION_TIE_MARGIN <= v[k]) && encode_rotation_rounded(q) == Some(*r)
}

/// Smallest-three of `q` at avatar resolution, canonical by construction (near a tie the largest stored integer
/// steps towards zero until the encoding re-encodes to itself, as in `quantize::quantize_rotation`). `None` for a
/// zero or non-finite quaternion.
pub fn quantize_avatar_rotation(q: Quat) -> Option<AvatarRotation> {
    let mut r = encode_rotation_rounded(q)?;
    while !is_canonical_avatar_rotation(&r) {
        let c = &mut r.smallest_three;
        let j = (1..3).fold(0, |best, i| if c[i].abs() > c[best].abs() { i } else { best });
        c[j] -= c[j].signum();
    }
    Some(r)
}

// ---- from and to the game's types ----

/// `x · units` rounded, or `None` when not finite or outside `range`.
fn to_units(x: f32, units: f32, (min, max): (i32, i32)) -> Option<i32> {
    let r = (x * units).round();
    (r.is_finite() && r >= min as f32 && r <= max as f32).then_some(r as i32)
}

/// A rotation is accepted within 1 % of unit length, as `Pose::is_sane` does.
fn unit_rotation(q: Quat) -> bool {
    q.is_finite() && (q.length() - 1.0).abs() <= 0.01
}

/// 0..=1 to a byte (clamped; NaN is 0).
pub fn quantize_unit(x: f32) -> u8 {
    let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    (x * UNIT_STEPS as f32).round() as u8
}

pub fn dequantize_unit(q: u8) -> f32 {
    f32::from(q) / UNIT_STEPS as f32
}

impl WirePose {
    /// A world pose in the play space.
    pub fn from_pose(pose: &Pose, part: AvatarPart) -> Result<WirePose, AvatarStateError> {
        if !(pose.position.is_finite() && unit_rotation(pose.rotation)) {
            return Err(AvatarStateError::NotFinite(part));
        }
        let mut position = [0; 3];
        for (i, p) in position.iter_mut().enumerate() {
            *p = to_units(pose.position[i], AVATAR_POSITION_UNITS_PER_M, AXIS_RANGE[i])
                .ok_or(AvatarStateError::OutOfPlaySpace(part))?;
        }
        let rotation = quantize_avatar_rotation(pose.rotation).ok_or(AvatarStateError::NotFinite(part))?;
        Ok(WirePose { position, rotation })
    }

    pub fn to_pose(&self) -> Pose {
        let position = Vec3::from_array(self.position.map(|i| i as f32 / AVATAR_POSITION_UNITS_PER_M));
        Pose::new(position, dequantize_avatar_rotation(&self.rotation))
    }

    fn check(&self, part: AvatarPart) -> Result<(), AvatarStateError> {
        let in_space = self
            .position
            .iter()
            .zip(AXIS_RANGE)
            .all(|(p, (min, max))| (min..=max).contains(p));
        if !in_space {
            return Err(AvatarStateError::OutOfPlaySpace(part));
        }
        if !is_canonical_avatar_rotation(&self.rotation) {
            return Err(AvatarStateError::NonCanonicalRotation(part));
        }
        Ok(())
    }
}

impl WireHeld {
    /// `offset` is the cube's pose in the hand's frame (`interaction::Held::offset`); the stamp's sequences are
    /// kept, its authority index is the holder's and not sent.
    pub fn new(
        cube: u32,
        offset: &Pose,
        stamp: &AuthorityStamp,
        part: AvatarPart,
    ) -> Result<WireHeld, AvatarStateError> {
        if !(offset.position.is_finite() && unit_rotation(offset.rotation)) {
            return Err(AvatarStateError::NotFinite(part));
        }
        let mut position = [0; 3];
        for (i, p) in position.iter_mut().enumerate() {
            *p = to_units(offset.position[i], HELD_POSITION_UNITS_PER_M, HELD_RANGE)
                .ok_or(AvatarStateError::OutOfRange(part))?;
        }
        Ok(WireHeld {
            cube,
            position,
            rotation: quantize_rotation(offset.rotation),
            authority_seq: stamp.authority_seq,
            ownership_seq: stamp.ownership_seq,
        })
    }

    /// The cube's pose in the hand's frame.
    pub fn offset(&self) -> Pose {
        let position = Vec3::from_array(self.position.map(|i| i as f32 / HELD_POSITION_UNITS_PER_M));
        Pose::new(position, dequantize_rotation(&self.rotation))
    }

    /// The claim as the authority table keeps it, `player` (1–4) being the avatar's.
    pub fn stamp(&self, player: u8) -> AuthorityStamp {
        AuthorityStamp {
            authority: player,
            authority_seq: self.authority_seq,
            ownership_seq: self.ownership_seq,
        }
    }

    fn check(&self, cube_count: u32, part: AvatarPart) -> Result<(), AvatarStateError> {
        if self.cube >= cube_count {
            return Err(AvatarStateError::UnknownCube {
                id: self.cube,
                cube_count,
            });
        }
        let (min, max) = HELD_RANGE;
        if self.position.iter().any(|p| !(min..=max).contains(p)) {
            return Err(AvatarStateError::OutOfRange(part));
        }
        if quantize_rotation(dequantize_rotation(&self.rotation)) != self.rotation {
            return Err(AvatarStateError::NonCanonicalRotation(part));
        }
        Ok(())
    }
}

/// A held cube as the receiver uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeldPose {
    pub cube: u32,
    /// The cube's pose in the hand's frame.
    pub offset: Pose,
    pub authority_seq: u16,
    pub ownership_seq: u16,
}

/// A hand as the receiver draws it (dequantized, or interpolated by the playout buffer).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandPose {
    pub tracked: bool,
    pub pose: Pose,
    pub grip: f32,
    pub trigger: f32,
    pub held: Option<HeldPose>,
}

impl HandPose {
    /// The held cube and its world pose: the hand's pose composed with the offset, so the cube follows the hand.
    pub fn held_world_pose(&self) -> Option<(u32, Pose)> {
        self.held.map(|h| (h.cube, self.pose.compose(&h.offset)))
    }
}

/// An avatar as the receiver draws it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AvatarPoses {
    pub head: Pose,
    pub hands: [HandPose; HAND_COUNT],
}

impl WireAvatar {
    /// The avatar as the wire carries it. `held[i]` is hand `i`'s cube: id, its pose in the hand's frame
    /// (`interaction::Held::offset`) and its stamp. Refuses non-finite poses, poses outside the play space and held
    /// offsets beyond [`HELD_OFFSET_BOUND_M`]; grips are clamped. `Avatar` has no trigger yet: it is sent as 0.
    pub fn from_avatar(
        avatar: &Avatar,
        held: [Option<(u32, Pose, AuthorityStamp)>; HAND_COUNT],
    ) -> Result<WireAvatar, AvatarStateError> {
        let mut out = WireAvatar {
            head: WirePose::from_pose(&avatar.head, AvatarPart::Head)?,
            ..WireAvatar::default()
        };
        for (i, (hand, held)) in avatar.hands.iter().zip(held).enumerate() {
            let part = AvatarPart::Hand(i as u8);
            out.hands[i] = WireHand {
                tracked: hand.tracked,
                pose: WirePose::from_pose(&hand.pose, part)?,
                grip: quantize_unit(hand.grip),
                trigger: 0,
                held: held
                    .map(|(cube, offset, stamp)| WireHeld::new(cube, &offset, &stamp, AvatarPart::Held(i as u8)))
                    .transpose()?,
            };
        }
        if let [Some(a), Some(b)] = out.hands.map(|h| h.held) {
            if a.cube == b.cube {
                return Err(AvatarStateError::HeldTwice(a.cube));
            }
        }
        Ok(out)
    }

    /// Dequantized poses, grips and held cubes.
    pub fn to_poses(&self) -> AvatarPoses {
        AvatarPoses {
            head: self.head.to_pose(),
            hands: self.hands.map(|h| HandPose {
                tracked: h.tracked,
                pose: h.pose.to_pose(),
                grip: dequantize_unit(h.grip),
                trigger: dequantize_unit(h.trigger),
                held: h.held.map(|c| HeldPose {
                    cube: c.cube,
                    offset: c.offset(),
                    authority_seq: c.authority_seq,
                    ownership_seq: c.ownership_seq,
                }),
            }),
        }
    }

    /// Everything a reader checks: poses in the play space with canonical rotations, held cubes that exist, within
    /// range, canonical and not the same cube in both hands.
    pub fn validate(&self, cube_count: u32) -> Result<(), AvatarStateError> {
        if cube_count == 0 || cube_count > MAX_CUBES {
            return Err(AvatarStateError::BadCubeCount(cube_count));
        }
        self.head.check(AvatarPart::Head)?;
        for (i, hand) in self.hands.iter().enumerate() {
            hand.pose.check(AvatarPart::Hand(i as u8))?;
            if let Some(held) = &hand.held {
                held.check(cube_count, AvatarPart::Held(i as u8))?;
            }
        }
        if let [Some(a), Some(b)] = self.hands.map(|h| h.held) {
            if a.cube == b.cube {
                return Err(AvatarStateError::HeldTwice(a.cube));
            }
        }
        Ok(())
    }

    /// What the host checks before relaying: every tracked hand within `max_hand_reach_m` of the head
    /// ([`VR_HAND_REACH_M`] or [`DESKTOP_HAND_REACH_M`]), and every held cube's world position inside the play
    /// space. (Values off the wire are already in the play space and finite.)
    pub fn is_plausible(&self, max_hand_reach_m: f32) -> bool {
        let poses = self.to_poses();
        poses.hands.iter().all(|hand| {
            let near = !hand.tracked || hand.pose.position.distance(poses.head.position) <= max_hand_reach_m;
            let cube_inside = hand
                .held_world_pose()
                .is_none_or(|(_, pose)| in_play_space(pose.position));
            near && cube_inside
        })
    }
}

/// True when `p` (m) lies in the play space.
pub fn in_play_space(p: Vec3) -> bool {
    (0..3).all(|i| to_units(p[i], AVATAR_POSITION_UNITS_PER_M, AXIS_RANGE[i]).is_some())
}

/// A reference predicted from two samples the receiver holds, for [`serialize_avatar`] to code against instead of
/// one baseline: `newer`'s poses carried on `ahead_steps` at the pace they moved from `older` (`gap_steps` before
/// `newer`), in integers (positions) and the quantizer's own f64 arithmetic (rotations), so both ends compute the
/// same bits. Tracking, grips and held cubes are `newer`'s. Measured on hands at 1.5 m/s (see the tests), with
/// `older` two steps before `newer`: 116 entropy-coded bits per avatar against a 10-step-old pair instead of 155,
/// 86 instead of 140 at 5 steps. The caller must name both samples to the receiver.
pub fn predict_avatar(newer: &WireAvatar, older: &WireAvatar, gap_steps: u32, ahead_steps: u32) -> WireAvatar {
    let mut out = *newer;
    let gap = i64::from(gap_steps.max(1));
    let ahead = i64::from(ahead_steps);
    let carry = |n: i32, o: i32, (min, max): (i32, i32)| -> i32 {
        let d = (i64::from(n) - i64::from(o)) * ahead;
        let step = (d + d.signum() * (gap / 2)) / gap;
        (i64::from(n) + step).clamp(i64::from(min), i64::from(max)) as i32
    };
    let predict_pose = |n: &WirePose, o: &WirePose| -> WirePose {
        let mut position = n.position;
        for (i, p) in position.iter_mut().enumerate() {
            *p = carry(n.position[i], o.position[i], AXIS_RANGE[i]);
        }
        let mut rotation = n.rotation;
        if n.rotation.largest == o.rotation.largest {
            let max = AVATAR_ROTATION_COMPONENT_MAX;
            let (nc, oc) = (n.rotation.components(), o.rotation.components());
            let moved = AvatarRotation {
                largest: n.rotation.largest,
                smallest_three: [0, 1, 2].map(|i| carry(nc[i], oc[i], (-max, max)) as i16),
            };
            rotation = quantize_avatar_rotation(dequantize_avatar_rotation(&moved)).unwrap_or(n.rotation);
        }
        WirePose { position, rotation }
    };
    out.head = predict_pose(&newer.head, &older.head);
    for (hand, o) in out.hands.iter_mut().zip(&older.hands) {
        hand.pose = predict_pose(&hand.pose, &o.pose);
    }
    out
}

/// The most steps before a sample that its trail carries: a packet every third step (30 a second) leaves two
/// between samples.
pub const TRAIL_STEPS: usize = 2;
/// Parts of an avatar a trail point places: the head and the hands.
pub const TRAIL_PARTS: usize = 1 + HAND_COUNT;
/// A trail goes only where the straight path between a sender's samples misses a point between them by more than
/// this (avatar position units: 3 mm); within it, the receiver's curve through the samples does as well.
pub const TRAIL_TOLERANCE_UNITS: i32 = 3;

/// Where an avatar's head and hands were at the steps just before its sample's own: the receiver plays its hands
/// along them instead of along a curve guessed through samples a few steps apart (a sender that sends fewer
/// packets than it steps). `points[k]` is `k + 1` steps before the sample; only the first `len` are carried.
///
/// `previous` is where they were at the sender's previous sample, `previous_back` steps before this one, sent
/// again: a relayed avatar crosses two links, and at 25 % loss on each 44 % of its samples never arrive; with its
/// position in the next sample a lost one leaves a gap of one interval, not two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AvatarTrail {
    pub len: u8,
    /// Head, left hand, right hand, in avatar position units.
    pub points: [[[i32; 3]; TRAIL_PARTS]; TRAIL_STEPS],
    pub previous: Option<[[i32; 3]; TRAIL_PARTS]>,
    /// 2..=[`MAX_PREVIOUS_BACK_STEPS`] when `previous` is carried, else 0.
    pub previous_back: u8,
}

/// The farthest back a trail names the previous sample (steps): a packet every eighth step.
pub const MAX_PREVIOUS_BACK_STEPS: u32 = 8;

/// An avatar's head and hand positions, in trail order.
pub fn trail_positions(avatar: &WireAvatar) -> [[i32; 3]; TRAIL_PARTS] {
    [
        avatar.head.position,
        avatar.hands[0].pose.position,
        avatar.hands[1].pose.position,
    ]
}

impl AvatarTrail {
    /// The trail of a sample at `now` whose sender was at `path[k]` `k + 1` steps before it (`None` where it has no
    /// pose for that step) and sent its previous sample `interval` steps before: the points between the two, or
    /// none when the straight path from the previous sample's positions to `now`'s passes within
    /// [`TRAIL_TOLERANCE_UNITS`] of each of them (or a point is missing); and the previous sample's positions again
    /// whenever the path reaches back to them.
    pub fn between(
        now: &[[i32; 3]; TRAIL_PARTS],
        path: &[Option<[[i32; 3]; TRAIL_PARTS]>],
        interval: u32,
    ) -> AvatarTrail {
        let n = (interval as usize).saturating_sub(1).min(TRAIL_STEPS);
        let (Some(points), Some(Some(from))) = (path.get(..n), path.get(n)) else {
            return AvatarTrail::default();
        };
        // The previous sample, when the path reaches back to it.
        let again = if interval >= 2 && interval as usize == n + 1 {
            AvatarTrail {
                previous: Some(*from),
                previous_back: interval as u8,
                ..AvatarTrail::default()
            }
        } else {
            AvatarTrail::default()
        };
        let span = (n + 1) as i64;
        let mut carried = [[[0; 3]; TRAIL_PARTS]; TRAIL_STEPS];
        let mut misses = false;
        for (k, point) in points.iter().enumerate() {
            let Some(point) = point else { return again };
            // Steps after the previous sample: n − k of n + 1.
            let t = (n - k) as i64;
            for part in 0..TRAIL_PARTS {
                for axis in 0..3 {
                    let (a, b) = (i64::from(from[part][axis]), i64::from(now[part][axis]));
                    let straight = a + (b - a) * t / span;
                    misses |= (i64::from(point[part][axis]) - straight).abs() > i64::from(TRAIL_TOLERANCE_UNITS);
                }
            }
            carried[k] = *point;
        }
        if misses {
            AvatarTrail {
                len: n as u8,
                points: carried,
                ..again
            }
        } else {
            again
        }
    }

    /// The trail without the previous sample (a sender that does not send it again).
    pub fn without_previous(self) -> AvatarTrail {
        AvatarTrail {
            previous: None,
            previous_back: 0,
            ..self
        }
    }
}

/// A trail, written or read, after the avatar it belongs to: a flag (one bit when there is none), its length, then
/// each point's positions, the first against the avatar's own and each later one against the straight line through
/// the two after it (a hand's motion over one step changes little from the next).
pub fn serialize_trail<S: Stream>(
    s: &mut S,
    trail: &mut AvatarTrail,
    avatar: &WireAvatar,
) -> Result<(), AvatarStateError> {
    let mut any = trail.len > 0;
    s.set_context(context::AVATAR_FLAG);
    s.serialize_bool(&mut any)?;
    let mut len = u32::from(trail.len.max(1)) - 1;
    if any {
        s.serialize_uint(&mut len, TRAIL_STEPS as u32 - 1)?;
        len += 1;
    } else {
        len = 0;
    }
    trail.len = len as u8;
    let now = trail_positions(avatar);
    for k in 0..TRAIL_STEPS {
        if k >= len as usize {
            trail.points[k] = [[0; 3]; TRAIL_PARTS];
            continue;
        }
        for part in 0..TRAIL_PARTS {
            let reference = chain_reference(&trail.points, &now, k, part);
            let (kind, which) = trail_part(part);
            serialize_position(s, &mut trail.points[k][part], Some(&reference), kind, which)?;
        }
    }
    // The previous sample: against the line through the last two points (the trail's end), else the sample's own.
    let mut again = trail.previous.is_some();
    s.set_context(context::AVATAR_FLAG);
    s.serialize_bool(&mut again)?;
    if !again {
        trail.previous = None;
        trail.previous_back = 0;
        return Ok(());
    }
    let mut back = u32::from(trail.previous_back.max(2)) - 2;
    s.serialize_uint(&mut back, MAX_PREVIOUS_BACK_STEPS - 2)?;
    trail.previous_back = (back + 2) as u8;
    let mut previous = trail.previous.unwrap_or_default();
    for (part, position) in previous.iter_mut().enumerate() {
        let reference = chain_reference(&trail.points, &now, len as usize, part);
        let (kind, which) = trail_part(part);
        serialize_position(s, position, Some(&reference), kind, which)?;
    }
    trail.previous = Some(previous);
    Ok(())
}

/// What the `k`-th point of a trail (0: one step before the sample) is coded against, for `part`: the sample's own
/// position for the first, then the line through the two points after it carried one step on.
fn chain_reference(
    points: &[[[i32; 3]; TRAIL_PARTS]; TRAIL_STEPS],
    now: &[[i32; 3]; TRAIL_PARTS],
    k: usize,
    part: usize,
) -> [i32; 3] {
    match k {
        0 => now[part],
        1 => carry_on(points[0][part], now[part]),
        _ => carry_on(points[k - 1][part], points[k - 2][part]),
    }
}

/// The entropy model and the error's name of a trail part (0: the head, 1 and 2: the hands).
fn trail_part(part: usize) -> (PoseKind, AvatarPart) {
    match part {
        0 => (PoseKind::Head, AvatarPart::Head),
        h => (PoseKind::Hand, AvatarPart::Hand(h as u8 - 1)),
    }
}

/// The point one step past `a` on the line from `b` through `a` (`2a − b`), inside the play space.
fn carry_on(a: [i32; 3], b: [i32; 3]) -> [i32; 3] {
    std::array::from_fn(|i| {
        let (min, max) = AXIS_RANGE[i];
        (2 * i64::from(a[i]) - i64::from(b[i])).clamp(i64::from(min), i64::from(max)) as i32
    })
}

// ---- the wire ----

/// Head and hand fields have their own models in the entropy coder: heads move less.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PoseKind {
    Head,
    Hand,
}

/// The class of three residuals: the first width that holds them all, else [`ABSOLUTE_CLASS`].
fn residual_class(value: &[i32; 3], reference: &[i32; 3]) -> u32 {
    let largest = value
        .iter()
        .zip(reference)
        .map(|(v, r)| (i64::from(*v) - i64::from(*r)).abs())
        .max()
        .unwrap_or(0);
    RESIDUAL_CLASS_MAX
        .iter()
        .position(|&m| largest <= i64::from(m))
        .map_or(ABSOLUTE_CLASS, |c| c as u32)
}

/// Three integers, each in its `ranges` entry, in full.
fn serialize_absolute<S: Stream>(
    s: &mut S,
    value: &mut [i32; 3],
    ranges: &[(i32, i32); 3],
) -> Result<(), SerializeError> {
    s.set_context(context::AVATAR_VALUE);
    value
        .iter_mut()
        .zip(ranges)
        .try_for_each(|(v, &(min, max))| s.serialize_int(v, min, max))
}

/// Three residuals against `reference` in ±`max` each, the sums checked against `ranges` on read.
fn serialize_residual<S: Stream>(
    s: &mut S,
    value: &mut [i32; 3],
    reference: &[i32; 3],
    max: i32,
    ranges: &[(i32, i32); 3],
    part: AvatarPart,
) -> Result<(), AvatarStateError> {
    for ((v, r), (min_value, max_value)) in value.iter_mut().zip(reference).zip(ranges) {
        let mut d = v.wrapping_sub(*r);
        s.serialize_int(&mut d, -max, max)?;
        let sum = i64::from(*r) + i64::from(d);
        if !(i64::from(*min_value)..=i64::from(*max_value)).contains(&sum) {
            return Err(AvatarStateError::OutOfRange(part));
        }
        *v = sum as i32;
    }
    Ok(())
}

/// A position against the baseline's: "exact", a residual class and residuals, or in full (also with no
/// baseline).
fn serialize_position<S: Stream>(
    s: &mut S,
    position: &mut [i32; 3],
    reference: Option<&[i32; 3]>,
    kind: PoseKind,
    part: AvatarPart,
) -> Result<(), AvatarStateError> {
    let Some(reference) = reference else {
        return Ok(serialize_absolute(s, position, &AXIS_RANGE)?);
    };
    let mut exact = position == reference;
    s.set_context(context::AVATAR_EXACT);
    s.serialize_bool(&mut exact)?;
    if exact {
        *position = *reference;
        return Ok(());
    }
    let mut class = residual_class(position, reference);
    s.set_context(context::AVATAR_CLASS);
    s.serialize_uint(&mut class, ABSOLUTE_CLASS)?;
    if class == ABSOLUTE_CLASS {
        return Ok(serialize_absolute(s, position, &AXIS_RANGE)?);
    }
    let values = match kind {
        PoseKind::Head => context::AVATAR_HEAD_POSITION,
        PoseKind::Hand => context::AVATAR_HAND_POSITION,
    };
    s.set_context(values);
    let max = RESIDUAL_CLASS_MAX[class as usize];
    serialize_residual(s, position, reference, max, &AXIS_RANGE, part)
}

/// Rotation components' range.
const COMPONENT_RANGES: [(i32, i32); 3] = [(-AVATAR_ROTATION_COMPONENT_MAX, AVATAR_ROTATION_COMPONENT_MAX); 3];

/// A rotation against the baseline's: "exact", a residual class and residuals of the three components (same
/// dropped component only), or in full. Reads must be canonical.
fn serialize_avatar_rotation<S: Stream>(
    s: &mut S,
    rotation: &mut AvatarRotation,
    reference: Option<&AvatarRotation>,
    kind: PoseKind,
    part: AvatarPart,
) -> Result<(), AvatarStateError> {
    let mut class = ABSOLUTE_CLASS;
    if let Some(reference) = reference {
        let mut exact = rotation == reference;
        s.set_context(context::AVATAR_EXACT);
        s.serialize_bool(&mut exact)?;
        if exact {
            *rotation = *reference;
            return Ok(());
        }
        if rotation.largest == reference.largest {
            class = residual_class(&rotation.components(), &reference.components());
        }
        s.set_context(context::AVATAR_CLASS);
        s.serialize_uint(&mut class, ABSOLUTE_CLASS)?;
    }
    let mut components = rotation.components();
    match reference.filter(|_| class != ABSOLUTE_CLASS) {
        Some(reference) => {
            let values = match kind {
                PoseKind::Head => context::AVATAR_HEAD_ROTATION,
                PoseKind::Hand => context::AVATAR_HAND_ROTATION,
            };
            s.set_context(values);
            let max = RESIDUAL_CLASS_MAX[class as usize];
            serialize_residual(
                s,
                &mut components,
                &reference.components(),
                max,
                &COMPONENT_RANGES,
                part,
            )?;
            rotation.largest = reference.largest;
        }
        None => {
            let mut largest = u32::from(rotation.largest);
            s.set_context(context::AVATAR_VALUE);
            s.serialize_bits(&mut largest, 2)?;
            serialize_absolute(s, &mut components, &COMPONENT_RANGES)?;
            rotation.largest = largest as u8;
        }
    }
    // In ±AVATAR_ROTATION_COMPONENT_MAX by the ranges above, so the casts are exact.
    rotation.smallest_three = components.map(|c| c as i16);
    if S::IS_READING && !is_canonical_avatar_rotation(rotation) {
        return Err(AvatarStateError::NonCanonicalRotation(part));
    }
    Ok(())
}

fn serialize_pose<S: Stream>(
    s: &mut S,
    pose: &mut WirePose,
    reference: Option<&WirePose>,
    kind: PoseKind,
    part: AvatarPart,
) -> Result<(), AvatarStateError> {
    serialize_position(s, &mut pose.position, reference.map(|r| &r.position), kind, part)?;
    serialize_avatar_rotation(s, &mut pose.rotation, reference.map(|r| &r.rotation), kind, part)
}

/// Grip or trigger: "same as the baseline's", else the byte.
fn serialize_unit<S: Stream>(s: &mut S, value: &mut u8, reference: Option<u8>) -> Result<(), SerializeError> {
    if let Some(reference) = reference {
        let mut same = *value == reference;
        s.set_context(context::AVATAR_FLAG);
        s.serialize_bool(&mut same)?;
        if same {
            *value = reference;
            return Ok(());
        }
    }
    s.set_context(context::AVATAR_VALUE);
    s.serialize_u8(value)
}

/// The held cube: "same as the baseline's", else a presence flag and the whole of it.
fn serialize_held<S: Stream>(
    s: &mut S,
    held: &mut Option<WireHeld>,
    reference: Option<&Option<WireHeld>>,
    cube_count: u32,
    part: AvatarPart,
) -> Result<(), AvatarStateError> {
    s.set_context(context::AVATAR_FLAG);
    if let Some(reference) = reference {
        let mut same = held == reference;
        s.serialize_bool(&mut same)?;
        if same {
            *held = *reference;
            return Ok(());
        }
    }
    let mut present = held.is_some();
    s.serialize_bool(&mut present)?;
    if !present {
        *held = None;
        return Ok(());
    }
    let mut h = held.unwrap_or_default();
    let cube = |e| AvatarStateError::from_cube(e, part);
    serialize_cube_id(s, &mut h.cube, cube_count).map_err(cube)?;
    serialize_absolute(s, &mut h.position, &[HELD_RANGE; 3])?;
    serialize_rotation(s, &mut h.rotation).map_err(cube)?;
    s.set_context(context::AVATAR_VALUE);
    s.serialize_u16(&mut h.authority_seq)?;
    s.serialize_u16(&mut h.ownership_seq)?;
    *held = Some(h);
    Ok(())
}

fn serialize_hand<S: Stream>(
    s: &mut S,
    hand: &mut WireHand,
    reference: Option<&WireHand>,
    cube_count: u32,
    index: u8,
) -> Result<(), AvatarStateError> {
    s.set_context(context::AVATAR_FLAG);
    s.serialize_bool(&mut hand.tracked)?;
    let part = AvatarPart::Hand(index);
    serialize_pose(s, &mut hand.pose, reference.map(|r| &r.pose), PoseKind::Hand, part)?;
    serialize_unit(s, &mut hand.grip, reference.map(|r| r.grip))?;
    serialize_unit(s, &mut hand.trigger, reference.map(|r| r.trigger))?;
    let part = AvatarPart::Held(index);
    serialize_held(s, &mut hand.held, reference.map(|r| &r.held), cube_count, part)
}

/// One avatar, written or read: in full when `baseline` is `None`, else against it (the reader must pass the very
/// sample the writer coded against; naming it is the caller's business). `cube_count` bounds held cube ids. A
/// writer refuses an avatar that fails [`WireAvatar::validate`]; a reader refuses anything out of range, a
/// non-canonical rotation, an unknown or doubly held cube. On a read error `avatar` may hold partial values.
pub fn serialize_avatar<S: Stream>(
    s: &mut S,
    avatar: &mut WireAvatar,
    baseline: Option<&WireAvatar>,
    cube_count: u32,
) -> Result<(), AvatarStateError> {
    if S::IS_WRITING {
        avatar.validate(cube_count)?;
    } else if cube_count == 0 || cube_count > MAX_CUBES {
        return Err(AvatarStateError::BadCubeCount(cube_count));
    }
    serialize_pose(
        s,
        &mut avatar.head,
        baseline.map(|b| &b.head),
        PoseKind::Head,
        AvatarPart::Head,
    )?;
    for (i, hand) in avatar.hands.iter_mut().enumerate() {
        serialize_hand(s, hand, baseline.map(|b| &b.hands[i]), cube_count, i as u8)?;
    }
    if S::IS_READING {
        // Ranges and rotations were checked field by field; this adds the doubly held cube.
        avatar.validate(cube_count)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::entropy_stream::{EntropyReadStream, EntropyWriteStream};
    use tumble_net::rng::Rng;
    use tumble_net::{ReadStream, WriteStream};

    const CUBES: u32 = 64;

    fn write_packed(avatar: &WireAvatar, baseline: Option<&WireAvatar>) -> (Vec<u8>, usize) {
        let mut buf = [0u8; 128];
        let mut w = WriteStream::new(&mut buf);
        serialize_avatar(&mut w, &mut { *avatar }, baseline, CUBES).unwrap();
        let bits = w.bits_processed();
        let n = w.finish().unwrap();
        (buf[..n].to_vec(), bits)
    }

    fn read_packed(bytes: &[u8], baseline: Option<&WireAvatar>) -> Result<WireAvatar, AvatarStateError> {
        let mut r = ReadStream::new(bytes);
        let mut out = WireAvatar::default();
        serialize_avatar(&mut r, &mut out, baseline, CUBES)?;
        r.finish()?;
        Ok(out)
    }

    /// Avatars written into one fresh entropy-coded stream, each against its baseline; the stream's bytes.
    fn write_entropy(avatars: &[(WireAvatar, Option<WireAvatar>)]) -> Vec<u8> {
        let mut buf = [0u8; 512];
        let mut w = EntropyWriteStream::new(&mut buf);
        for (a, b) in avatars {
            serialize_avatar(&mut w, &mut { *a }, b.as_ref(), CUBES).unwrap();
        }
        let n = w.finish().unwrap();
        buf[..n].to_vec()
    }

    fn read_entropy(bytes: &[u8], baselines: &[Option<WireAvatar>]) -> Result<Vec<WireAvatar>, AvatarStateError> {
        let mut r = EntropyReadStream::new(bytes);
        let mut out = Vec::new();
        for b in baselines {
            let mut a = WireAvatar::default();
            serialize_avatar(&mut r, &mut a, b.as_ref(), CUBES)?;
            out.push(a);
        }
        Ok(out)
    }

    fn unit_quat(rng: &mut Rng) -> Quat {
        let v = [0; 4].map(|_| rng.range_f64(-1.0, 1.0) as f32);
        let q = Quat::from_array(v);
        if q.length() < 0.1 {
            Quat::IDENTITY
        } else {
            q.normalize()
        }
    }

    fn random_pose(rng: &mut Rng) -> Pose {
        let p = Vec3::new(
            rng.range_f64(-63.9, 63.9) as f32,
            rng.range_f64(-7.9, 55.9) as f32,
            rng.range_f64(-63.9, 63.9) as f32,
        );
        Pose::new(p, unit_quat(rng))
    }

    fn random_avatar(rng: &mut Rng) -> WireAvatar {
        let mut avatar = Avatar {
            head: random_pose(rng),
            ..Avatar::default()
        };
        for hand in &mut avatar.hands {
            hand.tracked = rng.below(4) != 0;
            hand.pose = random_pose(rng);
            hand.grip = rng.next_f64() as f32;
        }
        let first = rng.below(CUBES as usize) as u32;
        let held = [0, 1].map(|i| {
            (rng.below(2) == 0).then(|| {
                let mut p = [0.0f32; 3];
                p.iter_mut().for_each(|x| *x = rng.range_f64(-1.99, 1.99) as f32);
                let offset = Pose::new(Vec3::from_array(p), unit_quat(rng));
                let stamp = AuthorityStamp {
                    authority: 1,
                    authority_seq: rng.next_u32() as u16,
                    ownership_seq: rng.next_u32() as u16,
                };
                ((first + i) % CUBES, offset, stamp)
            })
        });
        let mut wire = WireAvatar::from_avatar(&avatar, held).unwrap();
        wire.hands[1].trigger = rng.next_u32() as u8;
        wire
    }

    /// `avatar` moved by a little, a lot or not at all, field by field, so every residual class shows up.
    fn nudged(rng: &mut Rng, avatar: &WireAvatar) -> WireAvatar {
        let mut out = *avatar;
        let nudge_pose = |rng: &mut Rng, pose: &mut WirePose| {
            let reach = [0, 10, 60, 250, 3000][rng.below(5)];
            for (i, p) in pose.position.iter_mut().enumerate() {
                let (min, max) = AXIS_RANGE[i];
                *p = (*p + rng.below(2 * reach + 1) as i32 - reach as i32).clamp(min, max);
            }
            if rng.below(3) != 0 {
                let q = dequantize_avatar_rotation(&pose.rotation);
                let turn =
                    Quat::from_scaled_axis(Vec3::new(1.0, 2.0, -0.5).normalize() * rng.range_f64(0.0, 0.3) as f32);
                pose.rotation = quantize_avatar_rotation(turn * q).unwrap();
            }
        };
        nudge_pose(rng, &mut out.head);
        for hand in &mut out.hands {
            nudge_pose(rng, &mut hand.pose);
            if rng.below(4) == 0 {
                hand.grip = rng.next_u32() as u8;
            }
            if rng.below(8) == 0 {
                hand.held = None;
            }
        }
        out
    }

    #[test]
    fn quantization_is_idempotent_and_within_its_error_bounds() {
        let mut rng = Rng::new(1);
        let mut worst_rotation = 0.0f64;
        let mut worst_position = 0.0f32;
        for k in 0..200_000 {
            let mut pose = random_pose(&mut rng);
            if k % 2 == 0 {
                // Near ties: two to four components equal in magnitude give or take a little.
                let mut v = pose.rotation.to_array();
                let big = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
                for _ in 0..1 + rng.below(3) {
                    let eps = [0.0, 1e-3, 1e-5, 1e-7][rng.below(4)];
                    v[rng.below(4)] = big * (1.0 + eps) * if rng.below(2) == 0 { 1.0 } else { -1.0 };
                }
                pose.rotation = Quat::from_array(v).normalize();
            }
            let wire = WirePose::from_pose(&pose, AvatarPart::Head).unwrap();
            assert!(is_canonical_avatar_rotation(&wire.rotation), "{pose:?}");
            let back = wire.to_pose();
            assert_eq!(WirePose::from_pose(&back, AvatarPart::Head), Ok(wire), "{pose:?}");
            let angle = f64::from(back.rotation.dot(pose.rotation).abs().min(1.0)).acos() * 2.0;
            worst_rotation = worst_rotation.max(angle);
            worst_position = worst_position.max((back.position - pose.position).abs().max_element());
        }
        eprintln!(
            "avatar quantization: worst rotation error {worst_rotation:.3e} rad, position {worst_position:.3e} m"
        );
        // acos near 1 in f32 is coarse: a little slack on the bound.
        assert!(
            worst_rotation <= AVATAR_ROTATION_MAX_ERROR_RAD + 2e-4,
            "{worst_rotation}"
        );
        assert!(
            worst_position <= 0.5 / AVATAR_POSITION_UNITS_PER_M + 1e-5,
            "{worst_position}"
        );
        for q in 0..=255u8 {
            assert_eq!(quantize_unit(dequantize_unit(q)), q);
        }
        assert_eq!(quantize_unit(f32::NAN), 0);
        assert_eq!(quantize_unit(7.0), 255);
    }

    #[test]
    fn from_avatar_refuses_what_it_cannot_carry() {
        let mut avatar = Avatar::default();
        avatar.head.position = Vec3::new(0.0, 1.7, 0.0);
        assert!(WireAvatar::from_avatar(&avatar, [None, None]).is_ok());
        type Spoil = fn(&mut Avatar);
        let cases: [(Spoil, AvatarStateError); 5] = [
            (
                |a| a.head.position.x = f32::NAN,
                AvatarStateError::NotFinite(AvatarPart::Head),
            ),
            (
                |a| a.hands[1].pose.position.y = f32::INFINITY,
                AvatarStateError::NotFinite(AvatarPart::Hand(1)),
            ),
            (
                |a| a.hands[0].pose.rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
                AvatarStateError::NotFinite(AvatarPart::Hand(0)),
            ),
            (
                |a| a.head.position.x = 64.0,
                AvatarStateError::OutOfPlaySpace(AvatarPart::Head),
            ),
            (
                |a| a.hands[0].pose.position.y = -8.01,
                AvatarStateError::OutOfPlaySpace(AvatarPart::Hand(0)),
            ),
        ];
        for (k, (spoil, err)) in cases.into_iter().enumerate() {
            let mut bad = avatar;
            spoil(&mut bad);
            assert_eq!(WireAvatar::from_avatar(&bad, [None, None]), Err(err), "case {k}");
        }
        let stamp = AuthorityStamp::DEFAULT;
        let far = Pose::new(Vec3::new(0.0, 0.0, 2.0), Quat::IDENTITY);
        assert_eq!(
            WireAvatar::from_avatar(&avatar, [None, Some((3, far, stamp))]),
            Err(AvatarStateError::OutOfRange(AvatarPart::Held(1)))
        );
        let near = Pose::new(Vec3::new(0.0, 0.0, -1.999), Quat::IDENTITY);
        let nan = Pose::new(Vec3::NAN, Quat::IDENTITY);
        assert_eq!(
            WireAvatar::from_avatar(&avatar, [Some((3, nan, stamp)), None]),
            Err(AvatarStateError::NotFinite(AvatarPart::Held(0)))
        );
        assert_eq!(
            WireAvatar::from_avatar(&avatar, [Some((3, near, stamp)), Some((3, near, stamp))]),
            Err(AvatarStateError::HeldTwice(3))
        );
        // A held cube named in the avatar but not in the scene: the writer refuses it too.
        let wire = WireAvatar::from_avatar(&avatar, [Some((70, near, stamp)), None]).unwrap();
        let mut buf = [0u8; 128];
        assert_eq!(
            serialize_avatar(&mut WriteStream::new(&mut buf), &mut { wire }, None, CUBES),
            Err(AvatarStateError::UnknownCube {
                id: 70,
                cube_count: CUBES
            })
        );
    }

    #[test]
    fn avatars_round_trip_absolute_and_against_a_baseline_in_both_codings() {
        let mut rng = Rng::new(2);
        for _ in 0..2000 {
            let base = random_avatar(&mut rng);
            let next = if rng.below(4) == 0 {
                random_avatar(&mut rng)
            } else {
                nudged(&mut rng, &base)
            };
            for baseline in [None, Some(base)] {
                let (bytes, _) = write_packed(&next, baseline.as_ref());
                assert_eq!(read_packed(&bytes, baseline.as_ref()), Ok(next));
            }
            let batch = [(base, None), (next, Some(base)), (base, Some(next))];
            let bytes = write_entropy(&batch);
            let baselines = batch.map(|(_, b)| b);
            assert_eq!(read_entropy(&bytes, &baselines), Ok(batch.map(|(a, _)| a).to_vec()));
        }
    }

    /// A trail of `len` points near `avatar`'s positions (random steps of up to `reach` units), anywhere in the play
    /// space when `reach` is large.
    fn random_trail(rng: &mut Rng, avatar: &WireAvatar, len: u8, reach: i32) -> AvatarTrail {
        let mut trail = AvatarTrail {
            len,
            ..AvatarTrail::default()
        };
        let now = trail_positions(avatar);
        let near = |rng: &mut Rng| -> [[i32; 3]; TRAIL_PARTS] {
            std::array::from_fn(|part| {
                std::array::from_fn(|i| {
                    let (min, max) = AXIS_RANGE[i];
                    (now[part][i] + rng.below(2 * reach as usize + 1) as i32 - reach).clamp(min, max)
                })
            })
        };
        for point in trail.points.iter_mut().take(usize::from(len)) {
            *point = near(rng);
        }
        if rng.below(2) == 0 {
            trail.previous = Some(near(rng));
            trail.previous_back = 2 + rng.below(MAX_PREVIOUS_BACK_STEPS as usize - 1) as u8;
        }
        trail
    }

    #[test]
    fn trails_round_trip_in_both_codings_and_reads_refuse_a_point_outside_the_play_space() {
        let mut rng = Rng::new(11);
        for _ in 0..2000 {
            let avatar = random_avatar(&mut rng);
            let len = rng.below(TRAIL_STEPS + 1) as u8;
            let reach = [3, 40, 300, 200_000][rng.below(4)];
            let trail = random_trail(&mut rng, &avatar, len, reach);
            let mut buf = [0u8; 128];
            let mut w = WriteStream::new(&mut buf);
            serialize_trail(&mut w, &mut { trail }, &avatar).unwrap();
            let n = w.finish().unwrap();
            let mut read = AvatarTrail::default();
            serialize_trail(&mut ReadStream::new(&buf[..n]), &mut read, &avatar).unwrap();
            assert_eq!(read, trail);
            let mut w = EntropyWriteStream::new(&mut buf);
            serialize_trail(&mut w, &mut { trail }, &avatar).unwrap();
            let n = w.finish().unwrap();
            let mut read = AvatarTrail::default();
            serialize_trail(&mut EntropyReadStream::new(&buf[..n]), &mut read, &avatar).unwrap();
            assert_eq!(read, trail);
        }
        // A residual that takes a point past the play space's edge is refused, not clamped.
        let mut avatar = WireAvatar::default();
        avatar.head.position[0] = AXIS_RANGE[0].1;
        let mut trail = AvatarTrail {
            len: 1,
            ..AvatarTrail::default()
        };
        trail.points[0][0] = [AXIS_RANGE[0].1 - 10, 0, 0];
        let mut buf = [0u8; 64];
        let mut w = WriteStream::new(&mut buf);
        serialize_trail(&mut w, &mut { trail }, &avatar).unwrap();
        let n = w.finish().unwrap();
        // Read against an avatar 20 units further along: the same residual now lands outside.
        let mut further = avatar;
        further.head.position[0] = AXIS_RANGE[0].1 + 20;
        let read = serialize_trail(&mut ReadStream::new(&buf[..n]), &mut AvatarTrail::default(), &further);
        assert!(
            matches!(read, Err(AvatarStateError::OutOfRange(AvatarPart::Head))),
            "{read:?}"
        );
    }

    #[test]
    fn a_trail_goes_only_where_the_straight_path_misses_a_step_between_samples() {
        let at = |x: i32| [[x, 1000, 0], [x + 300, 900, 0], [x - 300, 900, 0]];
        // Samples three steps apart (30 a second): path[k] is k + 1 steps back, path[2] the previous sample.
        let straight = [Some(at(20)), Some(at(10)), Some(at(0))];
        assert_eq!(AvatarTrail::between(&at(30), &straight, 3).len, 0);
        // The hand swings 4 units off the line at one step between: both steps go.
        let mut bent = straight;
        bent[0].as_mut().unwrap()[2][1] += TRAIL_TOLERANCE_UNITS + 1;
        let trail = AvatarTrail::between(&at(30), &bent, 3);
        assert_eq!(trail.len, 2);
        assert_eq!(trail.points[..2], [bent[0].unwrap(), bent[1].unwrap()]);
        // Within the tolerance, or a step missing, or a packet every step: none.
        let mut slight = straight;
        slight[1].as_mut().unwrap()[0][2] += TRAIL_TOLERANCE_UNITS;
        assert_eq!(AvatarTrail::between(&at(30), &slight, 3).len, 0);
        assert_eq!(AvatarTrail::between(&at(30), &[bent[0], None, bent[2]], 3).len, 0);
        assert_eq!(AvatarTrail::between(&at(30), &bent, 1), AvatarTrail::default());
        // The previous sample goes again whenever the path reaches it, straight or not (the sender drops it on a
        // clean link: `without_previous`).
        for path in [straight, bent, [bent[0], None, bent[2]]] {
            let trail = AvatarTrail::between(&at(30), &path, 3);
            assert_eq!((trail.previous, trail.previous_back), (Some(at(0)), 3));
            assert_eq!(trail.without_previous().previous, None);
        }
        // Every other step (45 a second): one step between, the previous sample two back.
        let trail = AvatarTrail::between(&at(30), &[bent[0], Some(at(0))], 2);
        assert_eq!((trail.len, trail.points[0]), (1, bent[0].unwrap()));
        assert_eq!((trail.previous, trail.previous_back), (Some(at(0)), 2));
    }

    #[test]
    fn predicted_references_are_valid_avatars_that_round_trip() {
        let mut rng = Rng::new(6);
        for _ in 0..2000 {
            let older = random_avatar(&mut rng);
            let newer = nudged(&mut rng, &older);
            let reference = predict_avatar(&newer, &older, 1 + rng.below(5) as u32, rng.below(12) as u32);
            assert_eq!(reference.validate(CUBES), Ok(()));
            let now = nudged(&mut rng, &newer);
            let (bytes, _) = write_packed(&now, Some(&reference));
            assert_eq!(read_packed(&bytes, Some(&reference)), Ok(now));
        }
        // Still: the prediction is the sample itself.
        let still = moving(0, 1.0, 0.0);
        assert_eq!(predict_avatar(&still, &still, 2, 10), still);
    }

    #[test]
    fn the_world_pose_of_a_held_cube_follows_the_hand() {
        let mut avatar = Avatar::default();
        avatar.hands[0].pose = Pose::new(Vec3::new(0.3, 1.2, -0.4), Quat::from_rotation_y(0.8));
        let cube = Pose::new(Vec3::new(0.35, 1.1, -0.6), Quat::from_rotation_x(0.3));
        let offset = avatar.hands[0].pose.relative(&cube);
        let stamp = AuthorityStamp {
            authority: 2,
            authority_seq: 5,
            ownership_seq: 9,
        };
        let wire = WireAvatar::from_avatar(&avatar, [Some((7, offset, stamp)), None]).unwrap();
        let poses = wire.to_poses();
        let (id, world) = poses.hands[0].held_world_pose().unwrap();
        assert_eq!(id, 7);
        // Hand position 0.5 mm, hand rotation 2.4e-3 rad over a 0.23 m lever, offset 0.1 mm.
        assert!(world.position.distance(cube.position) < 1.2e-3, "{world:?}");
        assert!(world.rotation.dot(cube.rotation).abs() > 1.0 - 1e-5);
        assert_eq!(wire.hands[0].held.unwrap().stamp(2), stamp);
        assert!(wire.is_plausible(VR_HAND_REACH_M));
        // A hand 3 m from the head is not a VR player's; a desktop mouse hand may be.
        avatar.hands[1].tracked = true;
        avatar.hands[1].pose.position = Vec3::new(0.0, 0.0, -3.0);
        let far = WireAvatar::from_avatar(&avatar, [None, None]).unwrap();
        assert!(!far.is_plausible(VR_HAND_REACH_M));
        assert!(far.is_plausible(DESKTOP_HAND_REACH_M));
        // A cube held 1.9 m out of a hand at the edge of the play space would be outside it.
        avatar.hands[0].pose.position = Vec3::new(63.5, 1.0, 0.0);
        let out = Pose::new(Vec3::new(1.9, 0.0, 0.0), Quat::IDENTITY);
        let edge = WireAvatar::from_avatar(&avatar, [Some((1, out, stamp)), None]).unwrap();
        assert!(!edge.is_plausible(DESKTOP_HAND_REACH_M));
    }

    /// Writes raw fields with the bit packer, for forged packets.
    fn forged(fields: &[(u32, u32)]) -> Vec<u8> {
        let mut buf = [0u8; 128];
        let mut w = WriteStream::new(&mut buf);
        for &(v, bits) in fields {
            w.serialize_bits(&mut { v }, bits).unwrap();
        }
        let n = w.finish().unwrap();
        buf[..n].to_vec()
    }

    #[test]
    fn reads_refuse_what_a_peer_could_get_wrong() {
        let base = WireAvatar::default();
        // Head position x = 0 (offset 65536 in 17 bits), y = 0 (offset 8192 in 16), z = 0; rotation index 3 and
        // three components at +1023 (offset 2046 in 11 bits): squares sum past one, not canonical.
        let head = [
            (65536, 17),
            (8192, 16),
            (65536, 17),
            (3, 2),
            (2046, 11),
            (2046, 11),
            (2046, 11),
        ];
        assert_eq!(
            read_packed(&forged(&head), None),
            Err(AvatarStateError::NonCanonicalRotation(AvatarPart::Head))
        );
        // Against a baseline at the bottom of the play space: head position "not exact", class 0 (±15), a
        // residual of -15 on y takes it below the floor.
        let mut low = base;
        low.head.position[1] = AXIS_RANGE[1].0 + 3;
        let below = [(0, 1), (0, 2), (15, 5), (0, 5), (15, 5)];
        assert_eq!(
            read_packed(&forged(&below), Some(&low)),
            Err(AvatarStateError::OutOfRange(AvatarPart::Head))
        );
        // A held cube id past the scene's: from a valid encoding with cube 63 held, patch the id to 64 by reading
        // with 63 cubes.
        let mut avatar = base;
        avatar.hands[1].held = Some(WireHeld {
            cube: 62,
            ..WireHeld::default()
        });
        avatar.hands[1].held.as_mut().unwrap().rotation = QuantizedRotation::IDENTITY;
        let (bytes, _) = write_packed(&avatar, Some(&base));
        let mut r = ReadStream::new(&bytes);
        assert_eq!(
            serialize_avatar(&mut r, &mut WireAvatar::default(), Some(&base), 62),
            Err(AvatarStateError::UnknownCube { id: 62, cube_count: 62 })
        );
        // The same cube in both hands: a baseline holding it in both (which no writer makes) and "same as the
        // baseline" everywhere. Bits: head position and rotation exact; per hand tracked (0), then exact, exact,
        // grip, trigger and held "same".
        let mut twice = avatar;
        twice.hands[0].held = twice.hands[1].held;
        assert_eq!(twice.validate(CUBES), Err(AvatarStateError::HeldTwice(62)));
        let hand = [(0, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1)];
        let all_same: Vec<(u32, u32)> = [(1, 1), (1, 1)].into_iter().chain(hand).chain(hand).collect();
        assert_eq!(
            read_packed(&forged(&all_same), Some(&twice)),
            Err(AvatarStateError::HeldTwice(62))
        );
        assert_eq!(read_packed(&forged(&all_same), Some(&base)), Ok(base));
        // A bad cube count, and every truncation of a full avatar.
        let mut r = ReadStream::new(&bytes);
        assert_eq!(
            serialize_avatar(&mut r, &mut WireAvatar::default(), None, 0),
            Err(AvatarStateError::BadCubeCount(0))
        );
        let mut rng = Rng::new(3);
        let full = random_avatar(&mut rng);
        let (bytes, _) = write_packed(&full, None);
        for len in 0..bytes.len() {
            assert!(read_packed(&bytes[..len], None).is_err(), "{len} bytes");
        }
    }

    /// A VR player at step `step`: the head swaying (about 0.3 m/s, 1 rad/s at most), both hands on smooth loops
    /// of 0.3 m radius at `speed` m/s (centripetal acceleration speed²/0.3 m: 7.5 m/s² at 1.5 m/s) with the wrists
    /// turning at up to 1.8 rad/s, grip held. `phase` (s) sets players apart.
    fn moving(step: u32, speed: f32, phase: f32) -> WireAvatar {
        let t = step as f32 * crate::STEP_S as f32 + phase;
        let mut avatar = Avatar::default();
        let sway = Vec3::new((1.7 * t).sin(), 0.2 * (2.3 * t).sin(), (1.3 * t).cos()) * 0.15;
        avatar.head = Pose::new(
            Vec3::new(0.5, 1.7, -1.0) + sway,
            Quat::from_rotation_y(0.8 * (1.2 * t).sin()),
        );
        let w = speed / 0.3;
        for (i, hand) in avatar.hands.iter_mut().enumerate() {
            let side = if i == 0 { -1.0 } else { 1.0 };
            let a = w * t + i as f32;
            let centre = avatar.head.position + Vec3::new(0.3 * side, -0.4, -0.35);
            hand.pose = Pose::new(
                centre + 0.3 * Vec3::new(a.cos(), 0.6 * a.sin(), 0.8 * a.sin()),
                Quat::from_euler(
                    glam::EulerRot::YXZ,
                    0.6 * (2.5 * t).sin(),
                    0.4 * (1.9 * t).cos(),
                    0.3 * side,
                ),
            );
            hand.tracked = true;
            hand.grip = 0.9;
        }
        WireAvatar::from_avatar(&avatar, [None, None]).unwrap()
    }

    /// Mean bits per avatar over 9 s of motion against baselines `age` steps old: bit-packed, one avatar alone in
    /// a fresh entropy-coded stream (finished, so whole bytes), and four players' avatars in one stream.
    fn mean_bits(speed: f32, age: u32) -> (f64, f64, f64) {
        let (mut packed, mut alone, mut four) = (0usize, 0usize, 0usize);
        let steps = 810;
        for step in age..age + steps {
            let (now, base) = (moving(step, speed, 0.0), moving(step - age, speed, 0.0));
            packed += write_packed(&now, Some(&base)).1;
            alone += write_entropy(&[(now, Some(base))]).len() * 8;
            let players: Vec<_> = (0..4)
                .map(|p| {
                    let phase = 3.1 * p as f32;
                    (moving(step, speed, phase), Some(moving(step - age, speed, phase)))
                })
                .collect();
            four += write_entropy(&players).len() * 8;
        }
        let n = steps as f64;
        (packed as f64 / n, alone as f64 / n, four as f64 / (4.0 * n))
    }

    /// [`mean_bits`] against [`predict_avatar`]'s reference from the samples `age` and `age + gap` steps old.
    fn predicted_bits(speed: f32, age: u32, gap: u32) -> (f64, f64) {
        let (mut packed, mut four) = (0usize, 0usize);
        let steps = 810;
        let reference = |step: u32, phase: f32| {
            let newer = moving(step - age, speed, phase);
            let older = moving(step - age - gap, speed, phase);
            predict_avatar(&newer, &older, gap, age)
        };
        for step in age + gap..age + gap + steps {
            let now = moving(step, speed, 0.0);
            packed += write_packed(&now, Some(&reference(step, 0.0))).1;
            let players: Vec<_> = (0..4)
                .map(|p| {
                    let phase = 3.1 * p as f32;
                    (moving(step, speed, phase), Some(reference(step, phase)))
                })
                .collect();
            four += write_entropy(&players).len() * 8;
        }
        let n = steps as f64;
        (packed as f64 / n, four as f64 / (4.0 * n))
    }

    #[test]
    fn bits_per_avatar_absolute_still_and_moving() {
        // Absolute: head 17 + 16 + 17 + 2 + 3·11 = 85; a hand 1 + 85 + 8 + 8 + 1 = 103.
        let still = moving(0, 1.5, 0.0);
        assert_eq!(write_packed(&still, None).1, 85 + 2 * 103);
        // Held cubes add a flag's worth each, sent whole when they change: 6 + 3·14 + 47 + 32 bits.
        let mut holding = still;
        holding.hands[0].held = Some(WireHeld {
            cube: 5,
            ..WireHeld::default()
        });
        assert_eq!(write_packed(&holding, Some(&still)).1, 14 + 1 + 6 + 42 + 47 + 32);
        // Not moving: one flag per field.
        assert_eq!(write_packed(&still, Some(&still)).1, 2 + 2 * 6);
        let fresh = write_entropy(&[(still, Some(still))]).len() * 8;
        eprintln!(
            "avatar bits: absolute {} packed, {} entropy; still {} packed, {fresh} entropy",
            85 + 2 * 103,
            write_entropy(&[(still, None)]).len() * 8,
            14
        );
        eprintln!("avatar bits moving (mean per avatar): speed m/s, baseline age: packed / entropy alone / entropy 4 per stream");
        let mut table = Vec::new();
        for speed in [1.0, 1.5, 2.0] {
            for age in [1, 5, 10] {
                let (packed, alone, four) = mean_bits(speed, age);
                eprintln!("  {speed:.1} m/s, age {age:2}: {packed:6.1} / {alone:6.1} / {four:6.1}");
                table.push((speed, age, packed, four));
            }
        }
        eprintln!("against a prediction from the baseline and a sample 2 / 5 steps before it (packed, entropy 4):");
        for age in [1, 5, 10] {
            for gap in [2, 5] {
                let (packed, four) = predicted_bits(1.5, age, gap);
                eprintln!("  1.5 m/s, age {age:2}, gap {gap}: {packed:6.1} / {four:6.1}");
                let plain = table.iter().find(|r| r.0 == 1.5 && r.1 == age).unwrap();
                assert!(four < 0.9 * plain.3, "age {age} gap {gap}: {four} vs {}", plain.3);
            }
        }
        // Residuals grow with speed and age, and stay well under the absolute encoding.
        for w in table.windows(2).filter(|w| w[0].0 == w[1].0) {
            assert!(w[1].2 > w[0].2, "{w:?}");
        }
        assert!(table.iter().all(|r| r.2 < 0.7 * 291.0), "{table:?}");
    }

    /// Valid encodings to mutate: absolute and against a baseline, bit-packed and entropy-coded.
    fn seeds(rng: &mut Rng) -> Vec<(Vec<u8>, bool, bool)> {
        let mut out = Vec::new();
        for _ in 0..64 {
            let base = random_avatar(rng);
            let next = nudged(rng, &base);
            out.push((write_packed(&next, None).0, false, false));
            out.push((write_packed(&next, Some(&base)).0, true, false));
            out.push((write_entropy(&[(next, None)]), false, true));
            out.push((write_entropy(&[(next, Some(base))]), true, true));
        }
        out
    }

    /// What a fuzzed read must give when it succeeds: a valid avatar that re-quantizes to itself.
    fn assert_canonical(a: &WireAvatar) {
        assert_eq!(a.validate(CUBES), Ok(()));
        let poses = a.to_poses();
        assert_eq!(WirePose::from_pose(&poses.head, AvatarPart::Head), Ok(a.head));
        for (hand, pose) in a.hands.iter().zip(&poses.hands) {
            assert_eq!(WirePose::from_pose(&pose.pose, AvatarPart::Hand(0)), Ok(hand.pose));
            if let (Some(h), Some(p)) = (hand.held, pose.held) {
                let stamp = h.stamp(1);
                assert_eq!(WireHeld::new(h.cube, &p.offset, &stamp, AvatarPart::Held(0)), Ok(h));
            }
        }
    }

    #[test]
    fn a_million_random_and_mutated_inputs_never_panic() {
        let mut rng = Rng::new(4);
        let seeds = seeds(&mut rng);
        let baseline = {
            let mut r = Rng::new(5);
            let _ = random_avatar(&mut r);
            random_avatar(&mut r)
        };
        let (mut accepted, mut total) = (0usize, 0usize);
        let mut bytes = [0u8; 96];
        for i in 0..1_000_000u32 {
            let len = if i % 2 == 0 {
                // Random bytes of any length up to the buffer.
                let len = rng.below(bytes.len() + 1);
                bytes[..len].iter_mut().for_each(|b| *b = rng.next_u32() as u8);
                len
            } else {
                // A valid encoding with a few bits flipped, cut short or run long.
                let (seed, _, _) = &seeds[rng.below(seeds.len())];
                let len = (seed.len() as isize + rng.below(5) as isize - 2).clamp(0, bytes.len() as isize) as usize;
                bytes[..len].fill(0);
                let n = len.min(seed.len());
                bytes[..n].copy_from_slice(&seed[..n]);
                for _ in 0..1 + rng.below(3) {
                    if len > 0 {
                        bytes[rng.below(len)] ^= 1 << rng.below(8);
                    }
                }
                len
            };
            let input = &bytes[..len];
            let base = (i % 3 == 0).then_some(&baseline);
            let read = if i % 4 < 2 {
                read_packed(input, base)
            } else {
                let mut r = EntropyReadStream::new(input);
                let mut a = WireAvatar::default();
                serialize_avatar(&mut r, &mut a, base, CUBES).map(|()| a)
            };
            total += 1;
            if let Ok(a) = read {
                accepted += 1;
                assert_canonical(&a);
            }
        }
        eprintln!("avatar fuzz: {accepted} of {total} inputs read as valid avatars, the rest refused");
        assert!(accepted > 0);
    }
}
