//! Reading the other players' hands: where each one is going, and which still cube it will take when. A bot keeps
//! every other player's hands as its peer plays them out (per player and hand, so it has their velocity) and, for
//! an empty hand on the move, follows its path ahead to the first cube it would stop over: a hand crossing at
//! cruise height stops over the first still cube under its course, a hand coming down (or in at a slant) takes the
//! first cube whose grip point lies on its line. A hand that has stopped over a cube is taking it now.
//!
//! What is seen is old: the hands are played out a jitter buffer's delay behind, and that delay is about what the
//! contender needs to squeeze before the seen hand arrives for both grabs to land within a round trip (the
//! contender's own file decides how much). Plain data in a fixed array, nothing allocated, no hash map.

use glam::Vec3;
use tumble_engine::physics::{BodyId, BodyState, World};

use super::fetch::GRIP_ABOVE_M;
use super::scan;
use super::seat::SEATS;
use super::SeenHand;
use crate::avatar::{HandSide, HAND_COUNT};

/// Hands that can be tracked: two for every seat.
pub const TRACKED_HANDS: usize = SEATS * HAND_COUNT;
/// Weight of the newest step's velocity in the smoothed one: played-out hands move in small, uneven steps (the
/// buffer's clock runs up to 10 % fast or slow, and holds when it runs dry).
const VELOCITY_SMOOTHING: f32 = 0.4;
/// A reaching hand is taken to move at least this fast (m/s, a brisk reach): a hand just setting out, whose
/// smoothed velocity is still picking up, would otherwise seem further off in time than it is.
const REACH_SPEED_M_S: f32 = super::motion::HAND_SPEED_M_S;
/// Slower than this (m/s), a hand has stopped.
pub const MOVING_SPEED_M_S: f32 = 0.5;
/// A hand whose horizontal speed is at least this share of its speed is crossing (at cruise height).
const CROSSING_SHARE: f32 = 0.9;
/// A cube whose grip point lies within this (m) of a hand's course is on it. Cube centres are at least 1 m apart,
/// so this tells neighbours apart with room for the interpolation's and quantization's error.
pub const COURSE_RADIUS_M: f32 = 0.3;
/// A grip point this far (m) behind the hand along its course still counts (it may just have passed over it).
const BEHIND_M: f32 = 0.2;
/// A hand moving back towards its player's head (horizontally, the cosine of the angle under this) is coming back
/// from a reach or a throw, not reaching.
const RETURNING_COSINE: f32 = -0.5;
/// A stopped hand this close (m) to a cube's grip point is taking that cube.
const STOPPED_OVER_M: f32 = 0.25;
/// A track not seen for this many steps is dropped (the player left, or its hand lost tracking).
const STALE_STEPS: u64 = 3;
/// Weight per step with which a player's centre of reaching follows a new aim: a reach seen for a second moves it
/// about 40 % of the way.
const REACH_CENTRE_WEIGHT: f32 = 0.006;
/// Before anyone has reached for anything, the centre of the play area at this height (m).
const REACH_CENTRE_START_Y_M: f32 = 1.5;

/// One seen hand: where it is, how fast it moves, whether it could take a cube.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandTrack {
    pub position: Vec3,
    /// Smoothed (m/s).
    pub velocity: Vec3,
    /// Its player's head.
    pub head: Vec3,
    /// Holds a cube (a hand carrying something is not reaching for another).
    pub holding: bool,
    seen_step: u64,
}

/// Where a tracked hand is going: the cube, the point over it where the hand will stop and squeeze, and how long
/// (s, in the seen hand's played-out time) until it gets there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aim {
    pub cube: BodyId,
    pub grip: Vec3,
    pub eta_s: f32,
}

/// Every other player's hands, indexed by [`track_index`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandTracks {
    tracks: [Option<HandTrack>; TRACKED_HANDS],
    /// Where each player has been reaching lately (grip points, smoothed; index = player − 1), and where all of
    /// them have: where to wait for the next reach.
    reach_centres: [Vec3; SEATS],
    reach_centre: Vec3,
}

impl Default for HandTracks {
    fn default() -> Self {
        Self::new()
    }
}

/// The slot of `player`'s (1..=4) `side` hand, if the player is in range.
pub fn track_index(player: u8, side: HandSide) -> Option<usize> {
    let p = usize::from(player).checked_sub(1)?;
    (p < SEATS).then_some(p * HAND_COUNT + side.index())
}

impl HandTracks {
    pub fn new() -> Self {
        Self {
            tracks: [None; TRACKED_HANDS],
            reach_centres: [Vec3::new(0.0, REACH_CENTRE_START_Y_M, 0.0); SEATS],
            reach_centre: Vec3::new(0.0, REACH_CENTRE_START_Y_M, 0.0),
        }
    }

    /// Takes this step's seen hands: each known hand's velocity is the smoothed step from where it was.
    pub fn observe(&mut self, hands: &[SeenHand], step: u64, dt: f32) {
        for hand in hands {
            let Some(i) = track_index(hand.player, hand.side) else {
                continue;
            };
            let velocity = match self.tracks[i] {
                Some(t) if t.seen_step + 1 == step => {
                    let v = (hand.position - t.position) / dt;
                    t.velocity + (v - t.velocity) * VELOCITY_SMOOTHING
                }
                _ => Vec3::ZERO,
            };
            self.tracks[i] = Some(HandTrack {
                position: hand.position,
                velocity,
                head: hand.head,
                holding: hand.holding,
                seen_step: step,
            });
        }
        for slot in &mut self.tracks {
            if slot.is_some_and(|t| t.seen_step + STALE_STEPS < step) {
                *slot = None;
            }
        }
    }

    pub fn get(&self, index: usize) -> Option<&HandTrack> {
        self.tracks.get(index)?.as_ref()
    }

    /// The tracked hands, by index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &HandTrack)> {
        self.tracks
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
    }

    /// Where to wait for the next reach: where the first player with an empty hand setting out (moving, not on
    /// its way back) has been reaching lately, else where everyone has. A reach starts by rising over the piles,
    /// a second or more before its course shows which cube it is for: time to get near.
    pub fn wait_point(&self) -> Vec3 {
        let setting_out = self.iter().find(|(_, t)| {
            let speed = t.velocity.length();
            speed >= MOVING_SPEED_M_S && !t.holding && !is_returning(t, speed)
        });
        match setting_out {
            Some((i, _)) => self.reach_centres[i / HAND_COUNT],
            None => self.reach_centre,
        }
    }

    /// The hand at `index` is reaching for `grip`: its player's centre of reaching, and everyone's, drift towards it.
    pub fn note_reach(&mut self, index: usize, grip: Vec3) {
        if let Some(centre) = self.reach_centres.get_mut(index / HAND_COUNT) {
            *centre += (grip - *centre) * REACH_CENTRE_WEIGHT;
        }
        self.reach_centre += (grip - self.reach_centre) * REACH_CENTRE_WEIGHT;
    }
}

/// Where `track` is going: the first cube along its course that `accept` lets through (called only for cubes on
/// the course, so it may be costly). `None` for a hand that holds a cube or moves away from every cube.
pub fn predict(world: &World, track: &HandTrack, accept: impl Fn(BodyId, &BodyState) -> bool) -> Option<Aim> {
    let speed = track.velocity.length();
    if track.holding || is_returning(track, speed) {
        return None;
    }
    let mut best: Option<(Aim, f32)> = None;
    for id in world.body_ids() {
        let Some(s) = scan::dynamic(world, id) else { continue };
        let grip = grip_point(world, id, &s);
        let Some((along, eta_s)) = on_course(track, speed, grip) else {
            continue;
        };
        if best.is_some_and(|(_, b)| along >= b) || !accept(id, &s) {
            continue;
        }
        best = Some((Aim { cube: id, grip, eta_s }, along));
    }
    best.map(|(aim, _)| aim)
}

/// The hand moves back towards its player's head: it has done its reach.
fn is_returning(track: &HandTrack, speed: f32) -> bool {
    let flat = |v: Vec3| Vec3::new(v.x, 0.0, v.z);
    let out = flat(track.position - track.head).normalize_or_zero();
    speed >= MOVING_SPEED_M_S && flat(track.velocity).dot(out) < RETURNING_COSINE * speed
}

/// Where a hand stops to take a cube: just over its top.
pub fn grip_point(world: &World, id: BodyId, state: &BodyState) -> Vec3 {
    let top = scan::top_of(world, id, state);
    Vec3::new(state.position.x, top + GRIP_ABOVE_M, state.position.z)
}

/// If `grip` is on the hand's course: how far along it (m, for ordering) and the time to get there (s).
fn on_course(track: &HandTrack, speed: f32, grip: Vec3) -> Option<(f32, f32)> {
    let rel = grip - track.position;
    if speed < MOVING_SPEED_M_S {
        return (rel.length() <= STOPPED_OVER_M).then_some((0.0, 0.0));
    }
    let flat_v = Vec3::new(track.velocity.x, 0.0, track.velocity.z);
    if flat_v.length() >= CROSSING_SHARE * speed {
        // Crossing over the piles: the hand stops over the cube, then comes down to it.
        let dir = flat_v.normalize();
        let flat_rel = Vec3::new(rel.x, 0.0, rel.z);
        let along = flat_rel.dot(dir);
        let lateral = (flat_rel - dir * along).length();
        let below = -rel.y;
        if along < -BEHIND_M || lateral > COURSE_RADIUS_M || below < -COURSE_RADIUS_M {
            return None;
        }
        return Some((along, (along.max(0.0) + below.max(0.0)) / speed.max(REACH_SPEED_M_S)));
    }
    let dir = track.velocity / speed;
    let along = rel.dot(dir);
    let lateral = (rel - dir * along).length();
    if along < -BEHIND_M || lateral > COURSE_RADIUS_M {
        return None;
    }
    Some((along, along.max(0.0) / speed.max(REACH_SPEED_M_S)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bots::scan::world_with;

    fn seen(position: Vec3) -> SeenHand {
        SeenHand {
            player: 2,
            side: HandSide::Right,
            position,
            head: Vec3::new(10.0, 1.7, 0.0),
            holding: false,
            reaching: true,
        }
    }

    /// Feeds a hand moving at `velocity` from `from` for `steps` steps; returns its track.
    fn track_of(from: Vec3, velocity: Vec3, steps: u64) -> HandTrack {
        let dt = crate::STEP_S as f32;
        let mut tracks = HandTracks::new();
        for k in 0..steps {
            tracks.observe(&[seen(from + velocity * (k as f32 * dt))], k, dt);
        }
        *tracks.get(track_index(2, HandSide::Right).unwrap()).unwrap()
    }

    #[test]
    fn a_crossing_hand_aims_at_the_first_cube_under_its_course() {
        // Three cubes in a row along x and one off the course; the hand crosses at 3 m high towards −x.
        let world = world_with(&[
            Vec3::new(3.0, 0.5, 0.0),
            Vec3::new(1.0, 0.5, 0.0),
            Vec3::new(-1.0, 0.5, 0.0),
            Vec3::new(1.0, 0.5, 1.25),
        ]);
        let track = track_of(Vec3::new(5.0, 3.0, 0.05), Vec3::new(-3.0, 0.0, 0.0), 20);
        assert!((track.velocity.x + 3.0).abs() < 0.05, "{:?}", track.velocity);
        let aim = predict(&world, &track, |_, _| true).unwrap();
        assert_eq!(aim.cube, BodyId(0));
        // Across to x = 3, then down from 3 m to the grip point at 1.05 m, at 3 m/s.
        let expected = ((track.position.x - 3.0) + (3.0 - 1.05)) / 3.0;
        assert!((aim.eta_s - expected).abs() < 0.02, "{} vs {expected}", aim.eta_s);
        // The first cube refused (someone's tower, say), the next one on the course.
        let aim = predict(&world, &track, |id, _| id != BodyId(0)).unwrap();
        assert_eq!(aim.cube, BodyId(1));
    }

    #[test]
    fn a_descending_hand_aims_at_the_cube_below_and_a_stopped_one_at_the_cube_under_it() {
        let world = world_with(&[Vec3::new(0.0, 0.5, 0.0), Vec3::new(1.25, 0.5, 0.0)]);
        let down = track_of(Vec3::new(1.25, 3.0, 0.0), Vec3::new(0.0, -3.0, 0.0), 10);
        let aim = predict(&world, &down, |_, _| true).unwrap();
        assert_eq!(aim.cube, BodyId(1));
        assert!((aim.eta_s - (down.position.y - 1.05) / 3.0).abs() < 0.02);
        let stopped = track_of(Vec3::new(0.05, 1.1, 0.0), Vec3::ZERO, 10);
        let aim = predict(&world, &stopped, |_, _| true).unwrap();
        assert_eq!((aim.cube, aim.eta_s), (BodyId(0), 0.0));
        // Going up, away from both: nothing.
        let up = track_of(Vec3::new(3.0, 1.5, 0.0), Vec3::new(0.0, 3.0, 0.0), 10);
        assert_eq!(predict(&world, &up, |_, _| true), None);
        let mut holding = stopped;
        holding.holding = true;
        assert_eq!(predict(&world, &holding, |_, _| true), None);
    }

    #[test]
    fn a_hand_coming_back_towards_its_head_is_not_reaching() {
        // The same crossing as above, but the head is ahead of the hand: the hand is on its way back.
        let world = world_with(&[Vec3::new(3.0, 0.5, 0.0)]);
        let dt = crate::STEP_S as f32;
        let mut tracks = HandTracks::new();
        for k in 0..20u64 {
            let mut hand = seen(Vec3::new(5.0 - 3.0 * k as f32 * dt, 3.0, 0.0));
            hand.head = Vec3::new(-1.0, 3.2, 0.0);
            tracks.observe(&[hand], k, dt);
        }
        let track = *tracks.get(track_index(2, HandSide::Right).unwrap()).unwrap();
        assert_eq!(predict(&world, &track, |_, _| true), None);
        let mut outward = track;
        outward.head = Vec3::new(10.0, 3.2, 0.0);
        assert_eq!(predict(&world, &outward, |_, _| true).map(|a| a.cube), Some(BodyId(0)));
    }

    #[test]
    fn tracks_go_stale_and_slots_are_per_player_and_hand() {
        assert_eq!(track_index(1, HandSide::Left), Some(0));
        assert_eq!(track_index(4, HandSide::Right), Some(7));
        assert_eq!(track_index(0, HandSide::Left), None);
        assert_eq!(track_index(5, HandSide::Left), None);
        let mut tracks = HandTracks::new();
        tracks.observe(&[seen(Vec3::ZERO)], 10, crate::STEP_S as f32);
        assert_eq!(tracks.iter().count(), 1);
        tracks.observe(&[], 10 + STALE_STEPS, crate::STEP_S as f32);
        assert_eq!(tracks.iter().count(), 1);
        tracks.observe(&[], 11 + STALE_STEPS, crate::STEP_S as f32);
        assert_eq!(tracks.iter().count(), 0);
    }
}
