//! Grab, hold, release and throw: what a player's hands do to cubes, shared by the desktop view, VR and bots.
//! Every source turns its input into an [`Avatar`] (hand poses and grip values, see [`crate::avatar`]); once per
//! fixed step, before `World::step`, [`Interaction::update`] does the rest:
//!
//! - **select** ([`select`]): a hand with a ray (desktop mouse, VR aim) hovers the first cube along it; a hand
//!   without one hovers the nearest cube within [`InteractionConfig::reach_m`] of its grip pose;
//! - **grab** on the grip's rising edge through [`InteractionConfig::grab_grip`] (or within the catch window after
//!   it, so a squeeze just before a thrown cube arrives catches it); the cube turns kinematic and is attached at
//!   the offset it had from the hand, so it does not jump. A cube held by the other hand is taken from it;
//! - **hold**: each step the cube gets the kinematic target hand pose ∘ offset; the physics step carries it there,
//!   pushing the cubes in its way;
//! - **release** when the grip falls through [`InteractionConfig::release_grip`] (hysteresis, so a trembling
//!   trigger does not drop and re-grab): the cube turns dynamic again with the hand's velocity averaged over the
//!   last steps, plus the spin's contribution at the cube's centre (v + ω × r) and the hand's spin. Below the
//!   placing speeds it gets no velocity at all, so a cube put down on a stack stays where it was put.
//!
//! Per fixed step, from any input source (OpenXR, desktop, a [`script`]):
//!
//! ```text
//! let input = AvatarInput { head: Some(head_pose), hands: [left, right] };   // HandInput: tracked, pose (grip
//! avatar.update(&input, world.config().dt);                                  // pose), grip 0..1, ray (None: by
//! interaction.update(&mut world, &avatar)?;                                   // reach), runtime velocities
//! for e in interaction.events() { /* Grabbed → haptic pulse; Released → count */ }
//! world.step();
//! ```
//!
//! State for rendering (hovered and held cubes per hand) is in [`Interaction::hand`]; what happened this step (for
//! haptics and counters) in [`Interaction::events`]; held cubes for state sync (never sent as state: they travel
//! with the avatar) in [`Interaction::held_cubes`]. Nothing here allocates after [`Interaction::new`].

pub mod script;
pub mod select;

use glam::Vec3;
use tumble_engine::physics::{BodyId, BodyKind, BodyState, PhysicsError, World};

use crate::avatar::{Avatar, HandSide, HandState, Pose, HAND_COUNT};

/// Grip value at or above which an open hand closes (grabs).
pub const GRAB_GRIP: f32 = 0.7;
/// Grip value at or below which a closed hand opens (releases).
pub const RELEASE_GRIP: f32 = 0.3;
/// How far from a cube's surface a hand without a ray still reaches it (m).
pub const REACH_M: f32 = 0.1;
/// Steps after closing in which an empty hand still grabs a cube that comes within reach: 100 ms to catch.
pub const CATCH_WINDOW_STEPS: u32 = 9;
/// Releases slower than this (m/s, at the cube's centre) and turning slower than [`PLACE_SPIN_RAD_S`] place the
/// cube with no velocity: what is left at that speed is hand tremor, and it would nudge a placed cube.
pub const PLACE_SPEED_M_S: f32 = 0.05;
pub const PLACE_SPIN_RAD_S: f32 = 0.2;
/// Events one update can produce: per hand at most a release and a grab.
const MAX_EVENTS: usize = 2 * HAND_COUNT;

/// Thresholds of the interaction; [`InteractionConfig::default`] has the constants above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InteractionConfig {
    pub grab_grip: f32,
    pub release_grip: f32,
    pub reach_m: f32,
    pub catch_window_steps: u32,
    pub place_speed_m_s: f32,
    pub place_spin_rad_s: f32,
}

impl Default for InteractionConfig {
    fn default() -> Self {
        Self {
            grab_grip: GRAB_GRIP,
            release_grip: RELEASE_GRIP,
            reach_m: REACH_M,
            catch_window_steps: CATCH_WINDOW_STEPS,
            place_speed_m_s: PLACE_SPEED_M_S,
            place_spin_rad_s: PLACE_SPIN_RAD_S,
        }
    }
}

/// A cube in a hand, and where it sits in the hand's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Held {
    pub body: BodyId,
    pub offset: Pose,
}

/// One hand's interaction state, for rendering (highlight hovered and held cubes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HandInteraction {
    /// The cube this hand would grab now (none while it holds one).
    pub hovered: Option<BodyId>,
    pub held: Option<Held>,
    /// The grip is closed (past the grab threshold and not yet back under the release threshold).
    pub closed: bool,
    /// Steps since the grip closed (saturating).
    steps_closed: u32,
}

/// What happened in one update, in order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InteractionEvent {
    /// `from_other_hand`: taken from the player's other hand (which gets no `Released`).
    Grabbed {
        hand: HandSide,
        body: BodyId,
        from_other_hand: bool,
    },
    /// Let go: the cube is dynamic again with these velocities (zero when placed). Also sent, with zero
    /// velocities, when a held cube leaves the simulation (fell below the floor) or is made dynamic by someone else.
    Released {
        hand: HandSide,
        body: BodyId,
        linear_velocity: Vec3,
        angular_velocity: Vec3,
    },
}

/// Both hands of one player acting on a world.
#[derive(Clone, Debug)]
pub struct Interaction {
    config: InteractionConfig,
    hands: [HandInteraction; HAND_COUNT],
    events: Vec<InteractionEvent>,
}

impl Default for Interaction {
    fn default() -> Self {
        Self::new(InteractionConfig::default())
    }
}

impl Interaction {
    pub fn new(config: InteractionConfig) -> Interaction {
        Interaction {
            config,
            hands: [HandInteraction::default(); HAND_COUNT],
            events: Vec::with_capacity(MAX_EVENTS),
        }
    }

    pub fn config(&self) -> &InteractionConfig {
        &self.config
    }

    pub fn hand(&self, side: HandSide) -> &HandInteraction {
        &self.hands[side.index()]
    }

    /// What the last [`Interaction::update`] did.
    pub fn events(&self) -> &[InteractionEvent] {
        &self.events
    }

    /// Cubes in this player's hands (for state sync: held cubes are never sent as state).
    pub fn held_cubes(&self) -> impl Iterator<Item = BodyId> + '_ {
        self.hands.iter().filter_map(|h| h.held.map(|held| held.body))
    }

    pub fn is_held(&self, body: BodyId) -> bool {
        self.held_cubes().any(|b| b == body)
    }

    /// Lets go of `body` without touching the world, when another player won it (the session sets its state and
    /// kind). Returns whether a hand held it. No event: nothing was released by this player.
    pub fn forget(&mut self, body: BodyId) -> bool {
        let mut held = false;
        for hand in &mut self.hands {
            if hand.held.is_some_and(|h| h.body == body) {
                hand.held = None;
                held = true;
            }
        }
        held
    }

    /// Forgets every hold without touching the world: for a world that was rebuilt (scene reset or load).
    pub fn reset(&mut self) {
        self.hands = [HandInteraction::default(); HAND_COUNT];
        self.events.clear();
    }

    /// One fixed step of interaction: call after [`Avatar::update`] and before `World::step`. Errors come only
    /// from the world refusing something (which would be a bug here); the hands are then left as they were.
    pub fn update(&mut self, world: &mut World, avatar: &Avatar) -> Result<(), PhysicsError> {
        self.events.clear();
        for side in HandSide::BOTH {
            self.update_hand(world, side, avatar.hand(side))?;
        }
        Ok(())
    }

    fn update_hand(&mut self, world: &mut World, side: HandSide, hand: &HandState) -> Result<(), PhysicsError> {
        self.drop_if_lost(world, side)?;
        let i = side.index();
        let (was_closed, grip) = (self.hands[i].closed, hand.grip);
        let closed = if was_closed {
            grip > self.config.release_grip
        } else {
            grip >= self.config.grab_grip
        };
        self.hands[i].closed = closed;
        if closed && !was_closed {
            self.hands[i].steps_closed = 0;
        }
        if !closed {
            if let Some(held) = self.hands[i].held {
                self.release(world, side, hand, held)?;
            }
        }
        self.hands[i].hovered = match self.hands[i].held {
            Some(_) => None,
            None => self.select(world, side, hand),
        };
        let catching = closed && self.hands[i].steps_closed <= self.config.catch_window_steps;
        if let (true, None, Some(body)) = (catching, self.hands[i].held, self.hands[i].hovered) {
            self.grab(world, side, hand, body)?;
        }
        if let Some(held) = self.hands[i].held {
            let target = hand.pose.compose(&held.offset);
            world.set_kinematic_target(held.body, target.position, target.rotation)?;
        }
        self.hands[i].steps_closed = self.hands[i].steps_closed.saturating_add(1);
        Ok(())
    }

    fn select(&self, world: &World, side: HandSide, hand: &HandState) -> Option<BodyId> {
        // The other hand's cube is selectable too (hand-to-hand passes); our own hand holds nothing here.
        let also = [self.hands[side.other().index()].held.map(|h| h.body)];
        let hit = match hand.ray {
            Some(ray) => select::raycast(world, &ray, &also),
            None if hand.tracked => select::nearest_within(world, hand.pose.position, self.config.reach_m, &also),
            None => None,
        };
        hit.map(|(body, _)| body)
    }

    fn grab(&mut self, world: &mut World, side: HandSide, hand: &HandState, body: BodyId) -> Result<(), PhysicsError> {
        let other = side.other().index();
        let from_other_hand = self.hands[other].held.is_some_and(|h| h.body == body);
        if !from_other_hand {
            world.set_kind(body, BodyKind::Kinematic)?;
        }
        let state = world.state(body)?;
        if from_other_hand {
            self.hands[other].held = None;
        }
        let offset = hand.pose.relative(&Pose::new(state.position, state.rotation));
        let i = side.index();
        self.hands[i].held = Some(Held { body, offset });
        self.hands[i].hovered = None;
        self.events.push(InteractionEvent::Grabbed {
            hand: side,
            body,
            from_other_hand,
        });
        Ok(())
    }

    fn release(&mut self, world: &mut World, side: HandSide, hand: &HandState, held: Held) -> Result<(), PhysicsError> {
        let state = world.state(held.body)?;
        let mut angular = hand.angular_velocity;
        let mut linear = hand.linear_velocity + angular.cross(state.position - hand.pose.position);
        if linear.length() < self.config.place_speed_m_s && angular.length() < self.config.place_spin_rad_s {
            (linear, angular) = (Vec3::ZERO, Vec3::ZERO);
        }
        world.set_kind(held.body, BodyKind::Dynamic)?;
        world.set_state(
            held.body,
            &BodyState {
                linear_velocity: linear,
                angular_velocity: angular,
                at_rest: false,
                ..state
            },
        )?;
        // The world clamps what it finds too fast; report what the cube really got.
        let thrown = world.state(held.body)?;
        self.hands[side.index()].held = None;
        self.events.push(InteractionEvent::Released {
            hand: side,
            body: held.body,
            linear_velocity: thrown.linear_velocity,
            angular_velocity: thrown.angular_velocity,
        });
        Ok(())
    }

    /// A held cube that fell out of the world, or that something else made dynamic, is no longer held.
    fn drop_if_lost(&mut self, world: &World, side: HandSide) -> Result<(), PhysicsError> {
        let Some(held) = self.hands[side.index()].held else {
            return Ok(());
        };
        if world.is_removed(held.body)? || world.kind(held.body)? != BodyKind::Kinematic {
            self.hands[side.index()].held = None;
            self.events.push(InteractionEvent::Released {
                hand: side,
                body: held.body,
                linear_velocity: Vec3::ZERO,
                angular_velocity: Vec3::ZERO,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
