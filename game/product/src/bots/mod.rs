//! Seeded scripted players. A bot drives the game exactly as a hand does: once per 90 Hz step it looks at its
//! world ([`BotView`]) and returns an [`AvatarInput`] (head, two tracked hands with pose and grip); the caller then
//! runs `avatar.update(&input, dt)` and `interaction.update(&mut world, &avatar)` as for any player. Nothing here
//! touches the world, so a bot is a player like any other to the session, the authority rules and the sync.
//!
//! ```text
//! let input = bot.step(step, &BotView { world: &world, me: &interaction, others_holding, other_hands, active });
//! avatar.update(&input, dt);
//! interaction.update(&mut world, &avatar)?;
//! ```
//!
//! Each kind is a small state machine over shared tasks (rest → fetch (reach, squeeze) → place or throw → rest):
//!
//! - [`BotKind::Builder`] (`builder.rs`): towers of 5–10 cubes on its spots near its seat, cubes put down slowly;
//! - [`BotKind::Thrower`] (`thrower.rs`): throws cubes at the tallest stack at 6–12 m/s every few seconds;
//! - [`BotKind::Contender`] (`contender.rs`): conflicts on purpose: predicts from the other players' seen hands
//!   which cube each is heading for (`anticipate.rs`), gets there first and squeezes just before the seen hand
//!   arrives; also catches flying cubes and chases held ones;
//! - [`BotKind::Catcher`] (`catcher.rs`): catches flying cubes on their predicted path, passes them hand to hand,
//!   then places or throws them.
//!
//! A fifth kind, the hostile bot that forges packets, lives with the session (`game::session`): it attacks the
//! wire, not the hands. Shared pieces: `seat.rs` (where each player stands), `motion.rs` (hand speeds and paths),
//! `scan.rs` (what a bot looks for), `ballistic.rs` (free flight as the physics step integrates it),
//! `anticipate.rs` (where the other players' hands are going), `fetch.rs`
//! (reach and grab a cube), `place.rs` (carry and put down).
//!
//! A bot is deterministic: a seeded [`Rng`] makes its choices, and it reads only the world it is given, in body id
//! order. Nothing allocates after [`Bot::new`]. Hands move at most [`motion::HAND_SPEED_M_S`] except in a throw's
//! swing.

mod anticipate;
pub mod ballistic;
mod builder;
mod catcher;
pub mod conflict;
mod contender;
pub mod driver;
mod fetch;
pub mod motion;
mod place;
pub mod scan;
pub mod seat;
mod thrower;

use glam::Vec3;
use tumble_engine::physics::{BodyId, World};
use tumble_net::rng::Rng;

use crate::avatar::{AvatarInput, HandInput, HandSide, Pose, HAND_COUNT};
use crate::interaction::{Interaction, InteractionEvent};
pub use driver::{make_driver, BotDriver, Driver, ScriptDriver, DRIVER_NAMES};
use motion::{HandMotion, HAND_SPEED_M_S};
use seat::{all_build_spots, rest_hand, Seat, BUILD_SPOTS, HEAD_HEIGHT_M, SEATS};

/// A hand within this distance (m) of a cube's centre is about to grab it: going for that cube makes a conflict.
pub const CONTEST_RADIUS_M: f32 = 1.0;
/// Steps a bot ignores a cube it has just let go of (so a catcher does not chase its own throw): 1 s.
const OWN_RELEASE_IGNORE_STEPS: u64 = crate::STEP_HZ as u64;
/// Cubes a bot failed to grab that it leaves alone for a while.
const FAILED_MEMORY: usize = 4;
/// The head stands this far (m) behind the working hand, and this far above it when the hand is high.
const HEAD_BEHIND_HAND_M: f32 = 0.5;
const HEAD_ABOVE_HAND_M: f32 = 0.3;

/// What a bot does. (The hostile bot, which forges packets rather than moving hands, is the session's own kind.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BotKind {
    Builder,
    Thrower,
    Contender,
    Catcher,
}

/// What a bot sees each step: plain data the session already has.
#[derive(Clone, Copy, Debug)]
pub struct BotView<'a> {
    pub world: &'a World,
    /// This player's own interaction (what its hands hold, last step's events).
    pub me: &'a Interaction,
    /// Cube ids other players hold.
    pub others_holding: &'a [u32],
    /// Other players' hands, as this player's peer plays them out.
    pub other_hands: &'a [SeenHand],
    /// False: stop acting, put down what is held, open the hands and stand still (the session stops bots before
    /// the end so the world can rest).
    pub active: bool,
}

/// Another player's hand as seen from this player's peer (it came through packets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeenHand {
    /// 1..=4.
    pub player: u8,
    pub side: HandSide,
    pub position: Vec3,
    /// The player's head, as seen.
    pub head: Vec3,
    /// It holds a cube.
    pub holding: bool,
    /// Out in front of its player, not resting by the body: builders and throwers leave cubes near it alone.
    pub reaching: bool,
}

/// What a bot has done, for a harness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BotCounters {
    /// Squeezes meant to take a cube (fetches, catches, chases).
    pub grab_attempts: u32,
    /// Of those, squeezes on a cube another player held or had a hand within [`CONTEST_RADIUS_M`] of.
    pub contested_attempts: u32,
    /// Cubes that came into a hand (including hand-to-hand passes).
    pub grabs: u32,
    pub throws: u32,
    /// Grabs of a cube in flight.
    pub catches: u32,
    /// Cubes let go with no velocity.
    pub places: u32,
}

/// The last throw: what was aimed at and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThrowRecord {
    pub cube: BodyId,
    /// The point the cube's centre was aimed to pass through.
    pub target: Vec3,
    /// The swing's velocity, which the cube leaves with (m/s).
    pub velocity: Vec3,
    /// Steps from the release to the target.
    pub flight_steps: u32,
    /// The step whose update let go.
    pub release_step: u64,
}

/// What a bot is busy with: one task at a time, each a small state machine in its own file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Task {
    /// Hands at rest until the step.
    Rest {
        until: u64,
    },
    Fetch(fetch::Fetch),
    Place(place::Place),
    Throw(thrower::Throw),
    Catch(catcher::Catch),
    Pass(catcher::Pass),
    Chase(contender::Chase),
    Contest(contender::Contest),
    Camp(contender::Camp),
    Toss(contender::Toss),
    /// Inactive: hands open, standing still.
    Retire,
}

impl Task {
    /// The hands the task moves; the others rest.
    fn hands(&self) -> [bool; HAND_COUNT] {
        let one = |h: HandSide| {
            let mut used = [false; HAND_COUNT];
            used[h.index()] = true;
            used
        };
        match self {
            Task::Rest { .. } | Task::Retire => [false; HAND_COUNT],
            Task::Fetch(f) => one(f.hand),
            Task::Place(p) => one(p.hand),
            Task::Throw(t) => one(t.hand),
            Task::Catch(c) => one(c.hand),
            Task::Chase(c) => one(c.hand),
            Task::Contest(c) => one(c.hand),
            Task::Camp(c) => one(c.hand),
            Task::Toss(t) => one(t.hand),
            Task::Pass(_) => [true; HAND_COUNT],
        }
    }

    /// A throw's swing may move the hand faster than a reach.
    fn swings(&self) -> bool {
        matches!(self, Task::Throw(_) | Task::Toss(_))
    }

    fn cube(&self) -> Option<BodyId> {
        match self {
            Task::Fetch(f) => Some(f.cube),
            Task::Throw(t) => Some(t.cube),
            Task::Catch(c) => Some(c.cube),
            Task::Pass(p) => Some(p.cube),
            Task::Chase(c) => Some(c.cube),
            Task::Contest(c) => Some(c.cube),
            Task::Toss(t) => Some(t.cube),
            Task::Rest { .. } | Task::Place(_) | Task::Camp(_) | Task::Retire => None,
        }
    }
}

/// One scripted player.
#[derive(Clone, Debug)]
pub struct Bot {
    kind: BotKind,
    player: u8,
    seat: Seat,
    rng: Rng,
    hands: [HandMotion; HAND_COUNT],
    head: Pose,
    task: Task,
    /// The step being played, the world's step length (s) and gravity (m/s²), as of the last [`Bot::step`].
    now: u64,
    dt: f32,
    gravity: Vec3,
    active: bool,
    counters: BotCounters,
    last_throw: Option<ThrowRecord>,
    /// The cube this bot last let go of, ignored until the step.
    own_release: Option<(BodyId, u64)>,
    failed: [Option<BodyId>; FAILED_MEMORY],
    failed_next: usize,
    /// Every seat's tower spots (nobody takes cubes from a tower).
    spots: [Vec3; SEATS * BUILD_SPOTS],
    build: builder::Build,
    /// The other players' hands as seen, with their velocities (kept by the contender only).
    tracks: anticipate::HandTracks,
}

impl Bot {
    /// A bot for `player` (1..=4; it stands at [`Seat::of`] that player) whose choices follow `seed`.
    pub fn new(kind: BotKind, player: u8, seed: u64) -> Bot {
        let seat = Seat::of(player);
        let head = seat.head();
        let hand = |side| HandMotion::at(rest_hand(head.position, seat.forward, side));
        let mut rng = Rng::new(seed);
        let build = builder::Build::new(&mut rng);
        Bot {
            kind,
            player,
            seat,
            rng,
            hands: [hand(HandSide::Left), hand(HandSide::Right)],
            head,
            task: Task::Rest { until: 0 },
            now: 0,
            dt: crate::STEP_S as f32,
            gravity: Vec3::new(0.0, -9.81, 0.0),
            active: true,
            counters: BotCounters::default(),
            last_throw: None,
            own_release: None,
            failed: [None; FAILED_MEMORY],
            failed_next: 0,
            spots: all_build_spots(),
            build,
            tracks: anticipate::HandTracks::new(),
        }
    }

    pub fn kind(&self) -> BotKind {
        self.kind
    }

    pub fn player(&self) -> u8 {
        self.player
    }

    pub fn seat(&self) -> &Seat {
        &self.seat
    }

    pub fn counters(&self) -> &BotCounters {
        &self.counters
    }

    pub fn last_throw(&self) -> Option<&ThrowRecord> {
        self.last_throw.as_ref()
    }

    /// The cube the bot is going for, carrying or throwing now, if any.
    pub fn target(&self) -> Option<BodyId> {
        self.task.cube()
    }

    /// True once the bot, told to stop, has put everything down and stands still with open hands.
    pub fn is_retired(&self) -> bool {
        self.task == Task::Retire && self.hands.iter().all(|h| h.grip == 0.0)
    }

    /// The tower spots of this bot's seat (on the ground).
    pub fn build_spots(&self) -> [Vec3; BUILD_SPOTS] {
        std::array::from_fn(|k| self.seat.build_spot(k))
    }

    /// One fixed step: what the hands and head do now. `step` counts the session's steps.
    pub fn step(&mut self, step: u64, view: &BotView) -> AvatarInput {
        self.now = step;
        self.dt = view.world.config().dt;
        self.gravity = view.world.config().gravity;
        self.count_events(view);
        if self.kind == BotKind::Contender {
            self.tracks.observe(view.other_hands, step, self.dt);
        }
        if view.active != self.active {
            self.active = view.active;
            self.task = if self.active {
                Task::Rest { until: step }
            } else {
                self.retire(view)
            };
        }
        let was = [self.hands[0].position, self.hands[1].position];
        let throwing_before = self.task.swings();
        self.task = self.run(view);
        self.rest_idle_hands();
        // A task that ends and hands over to the next within one step may move a hand twice; outside a throw's
        // swing no hand goes faster than a reach.
        if !throwing_before && !self.task.swings() {
            for (hand, from) in self.hands.iter_mut().zip(was) {
                hand.position = motion::step_towards(from, hand.position, HAND_SPEED_M_S * self.dt);
            }
        }
        self.move_head();
        self.input()
    }

    fn run(&mut self, view: &BotView) -> Task {
        match self.task {
            Task::Rest { until } => self.rest(view, until),
            Task::Fetch(f) => fetch::step(self, view, f),
            Task::Place(p) => place::step(self, view, p),
            Task::Throw(t) => thrower::step(self, view, t),
            Task::Catch(c) => catcher::step_catch(self, view, c),
            Task::Pass(p) => catcher::step_pass(self, view, p),
            Task::Chase(c) => contender::step(self, view, c),
            Task::Contest(c) => contender::step_contest(self, view, c),
            Task::Camp(c) => contender::step_camp(self, view, c),
            Task::Toss(t) => contender::step_toss(self, view, t),
            Task::Retire => Task::Retire,
        }
    }

    /// Counts what last step's interaction did, under the task that made it happen.
    fn count_events(&mut self, view: &BotView) {
        for event in view.me.events() {
            match *event {
                InteractionEvent::Grabbed { from_other_hand, .. } => {
                    self.counters.grabs += 1;
                    if matches!(self.task, Task::Catch(_)) && !from_other_hand {
                        self.counters.catches += 1;
                    }
                }
                InteractionEvent::Released {
                    body, linear_velocity, ..
                } => {
                    self.own_release = Some((body, self.now + OWN_RELEASE_IGNORE_STEPS));
                    if let Task::Throw(t) = self.task {
                        self.counters.throws += 1;
                        self.last_throw = Some(t.record(body, self.now.saturating_sub(1)));
                    } else if linear_velocity != Vec3::ZERO && matches!(self.task, Task::Toss(_)) {
                        self.counters.throws += 1;
                    } else if linear_velocity == Vec3::ZERO && matches!(self.task, Task::Place(_)) {
                        self.counters.places += 1;
                    }
                }
            }
        }
    }

    /// Resting: a catcher watches for cubes in flight; when the rest is over, the kind decides. A contender does
    /// not rest: its hand waits where the others reach (a rest would take it back to its seat, out of reach).
    fn rest(&mut self, view: &BotView, until: u64) -> Task {
        if self.kind == BotKind::Contender {
            return self.next_task(view);
        }
        if self.kind == BotKind::Catcher && self.holding(view).is_none() {
            if let Some(catch) = catcher::plan(self, view) {
                return Task::Catch(catch);
            }
        }
        if self.now >= until {
            self.next_task(view)
        } else {
            Task::Rest { until }
        }
    }

    /// What to do next, with free hands (or with a cube still in one, which is dealt with first).
    fn next_task(&mut self, view: &BotView) -> Task {
        if let Some(hand) = self.holding(view) {
            return if self.active {
                self.after_grab(view, hand)
            } else {
                self.retire(view)
            };
        }
        if !self.active {
            return Task::Retire;
        }
        match self.kind {
            BotKind::Builder => builder::next(self, view),
            BotKind::Thrower => thrower::next(self, view),
            BotKind::Contender => contender::next(self, view),
            BotKind::Catcher => catcher::next(self, view),
        }
    }

    /// A cube came into `hand`: the kind decides what becomes of it.
    fn after_grab(&mut self, view: &BotView, hand: HandSide) -> Task {
        if !self.active {
            return self.retire(view);
        }
        match self.kind {
            BotKind::Builder => builder::after_grab(self, view, hand),
            BotKind::Thrower => thrower::after_grab(self, view, hand),
            BotKind::Contender => contender::after_grab(self, view, hand),
            BotKind::Catcher => catcher::after_grab(self, view, hand),
        }
    }

    /// Told to stop: put down what is held right where it is, else stand still.
    fn retire(&mut self, view: &BotView) -> Task {
        match self.holding(view) {
            Some(hand) => {
                let here = self.hands[hand.index()].position;
                place::start_within(self, view, hand, here, place::RETIRE_PLACE_STEPS)
            }
            None => Task::Retire,
        }
    }

    /// A rest of a random length between the bounds (s).
    fn rest_for(&mut self, min_s: f32, max_s: f32) -> Task {
        let s = self.rng.range_f64(min_s as f64, max_s as f64) as f32;
        Task::Rest {
            until: self.now + (s / self.dt).round() as u64,
        }
    }

    /// A hand that holds a cube (the right first).
    fn holding(&self, view: &BotView) -> Option<HandSide> {
        [HandSide::Right, HandSide::Left]
            .into_iter()
            .find(|&h| view.me.hand(h).held.is_some())
    }

    /// A hand that holds nothing, the right first.
    fn free_hand(&self, view: &BotView) -> Option<HandSide> {
        [HandSide::Right, HandSide::Left]
            .into_iter()
            .find(|&h| view.me.hand(h).held.is_none())
    }

    fn random_bool(&mut self) -> bool {
        self.rng.next_u64() & 1 == 1
    }

    /// A squeeze meant to take `cube`.
    fn count_attempt(&mut self, view: &BotView, cube: BodyId) {
        self.counters.grab_attempts += 1;
        if is_contested(view, cube) {
            self.counters.contested_attempts += 1;
        }
    }

    fn remember_failed(&mut self, cube: BodyId) {
        self.failed[self.failed_next] = Some(cube);
        self.failed_next = (self.failed_next + 1) % FAILED_MEMORY;
    }

    fn recently_failed(&self, cube: BodyId) -> bool {
        self.failed.contains(&Some(cube))
    }

    /// The cube this bot let go of in the last second.
    fn just_released(&self, cube: BodyId) -> bool {
        self.own_release.is_some_and(|(c, until)| c == cube && self.now < until)
    }

    /// Hands the task does not use go back to rest beside the body, open (a retired bot's stay where they are).
    fn rest_idle_hands(&mut self) {
        let used = self.task.hands();
        for side in HandSide::BOTH {
            let hand = &mut self.hands[side.index()];
            if used[side.index()] {
                continue;
            }
            hand.grip_towards(0.0);
            if self.task != Task::Retire {
                hand.approach(
                    rest_hand(self.head.position, self.seat.forward, side),
                    HAND_SPEED_M_S,
                    self.dt,
                );
            }
        }
    }

    /// The head walks behind the working hand (rising with it: a bot may stand on air), or back to the seat.
    fn move_head(&mut self) {
        if self.task == Task::Retire {
            return;
        }
        let used = self.task.hands();
        let working = HandSide::BOTH.into_iter().find(|h| used[h.index()]);
        let target = match working {
            Some(side) => {
                let hand = self.hands[side.index()].position - self.seat.forward * HEAD_BEHIND_HAND_M;
                Vec3::new(hand.x, (hand.y + HEAD_ABOVE_HAND_M).max(HEAD_HEIGHT_M), hand.z)
            }
            None => self.stand(),
        };
        self.head.position = motion::step_towards(self.head.position, target, HAND_SPEED_M_S * self.dt);
    }

    /// Where the head waits between tasks: at the seat, or for a catcher at the edge of the piles.
    fn stand(&self) -> Vec3 {
        let head = self.seat.head().position;
        match self.kind {
            BotKind::Catcher => head + self.seat.forward * catcher::CATCHER_STAND_IN_M,
            _ => head,
        }
    }

    fn input(&self) -> AvatarInput {
        let hand = |h: &HandMotion| HandInput {
            tracked: true,
            pose: Pose::new(h.position, h.rotation),
            grip: h.grip,
            ..HandInput::default()
        };
        AvatarInput {
            head: Some(self.head),
            hands: [hand(&self.hands[0]), hand(&self.hands[1])],
        }
    }
}

/// Another player holds `cube`, or has a hand near it.
fn is_contested(view: &BotView, cube: BodyId) -> bool {
    if view.others_holding.contains(&cube.0) {
        return true;
    }
    let Ok(state) = view.world.state(cube) else {
        return false;
    };
    view.other_hands
        .iter()
        .any(|h| h.reaching && h.position.distance(state.position) <= CONTEST_RADIUS_M)
}
