//! Authority and ownership per cube, and the host as their arbiter.
//!
//! Every peer keeps an [`AuthorityTable`]: per cube an [`AuthorityStamp`] (authority index 0 = default, 1–4 = a
//! player; authority and ownership sequences, 16-bit, wrap-safe) and the player holding it (0 = nobody). The peer
//! with authority over a cube simulates it for everyone and sends its state; the others snap to what arrives.
//! Default cubes are the host's to simulate. The rules, in the order they apply:
//!
//! 1. **Grab** ([`AuthorityTable::grab`]): ownership sequence + 1, authority sequence + 1, authority = the grabber,
//!    holder = the grabber. A cube another player holds (as this peer knows it) cannot be grabbed: ownership is
//!    exclusive until release. Held cubes travel in the holder's avatar, never as cube state.
//! 2. **Release**: the holder is cleared; authority stays with the player, who now sends the thrown cube's state.
//! 3. **Touch** ([`AuthorityTable::spread_by_contact`]): after each step, an awake cube under the local player's
//!    authority (held or not: a held cube pushing a stack would otherwise be corrected by the host) takes authority
//!    over every default cube it touches, and those over the default cubes they touch, through the whole contact
//!    graph: authority sequence + 1 each. Another player's cube is taken by touch only when it was at rest here
//!    before the step (rule 3b): a resting cube is anyone's to move, and without this the mover's peer (and every
//!    peer that sees the hit before the claim) snaps the hit cube back to where its authority still has it resting,
//!    again and again until it hears of the hit — the jitter of a stack hit by a thrown cube. On the host, an awake
//!    default cube that hits another player's resting cube takes it back to default the same way (rule 3c). A cube
//!    at rest here is committed: a player's cube rests on a peer that is not its authority only once the
//!    authority's resting state arrived, so nothing is lost by taking it.
//!    **3d. Merge**: two players' moving piles that touch are each simulated by their own authority and corrected
//!    by the other's news, always late: a column whose top is one player's and whose base is another's was seen to
//!    creep for seconds and fall, never coming to rest. When another player's awake cube (held by nobody, pinned
//!    to nobody) has touched an awake cube of the local player's for [`MERGE_AFTER_STEPS`] in a row, and that
//!    player comes after the local one (by index, so only one side takes), the local player takes it, and with
//!    it every awake cube of that player's it touches, through the contact graph: authority sequence + 1 each,
//!    judged by the host as any touch.
//! 4. **Recency** ([`rules::compare_claims`]): the newer ownership sequence wins; with equal ownership, the newer
//!    authority sequence wins.
//! 5. **Host judgement** ([`rules::judge_claim`]): a guest's update (cube state, or a held cube in its avatar) is a
//!    claim. The host takes it when it is newer than its own stamp, or as recent with the same authority (the
//!    player's further updates under a claim already taken). A tie with another authority goes to the claim the
//!    host saw first. A cube held by another player is refused. Refused updates are counted, never applied and
//!    never relayed; the host then goes on sending its own view to that guest, which corrects it (rule 6).
//! 6. **Guest acceptance** ([`rules::guest_accepts`]): a guest takes the host's stamp and state when newer than its
//!    own, or as recent with another authority (the host broke a tie: its word is final); it ignores older news
//!    and echoes of its own claim. A guest that loses a cube it was holding lets go of it.
//! 7. **Forgery** ([`rules::judge_claim`]): a claim that names another authority than its sender, or runs a sequence
//!    further ahead than an honest player can in a round trip, is refused.
//! 8. **Return to default** ([`AuthorityTable::return_rested`], host only): a cube under a player's authority that
//!    is not held and has been at rest on the host for [`RETURN_TO_DEFAULT_STEPS`] returns to default: authority
//!    sequence + 1. For a guest's cube the host's copy rests only when the guest's resting state arrived, so this
//!    is also the host's confirmation that the final state is committed: until it arrives the guest keeps the
//!    cube's authority and keeps sending its last state (nothing is lost under any loss rate).
//! 9. **Leaving** ([`AuthorityTable::release_player`], host): a player who leaves or times out has every cube it had
//!    authority over or held returned to default (authority sequence + 1) and woken, and its slot freed.
//!
//! 10. **Pinned cubes** ([`AuthorityTable::pin`]): a body that is a player's own (the cube game's player cube) is
//!     pinned to that player on every peer from the start: its authority never changes by touch, push, return to
//!     default or grab, and the host refuses any other player's claim on it as it refuses a claim on a held cube.
//!     Unlike a held cube it travels as cube state. It is unpinned (and returned to default) when its player leaves.
//! 11. **Push** ([`AuthorityTable::claim_by_push`]): a cube the local player's forces push (the cube game's blow
//!     and pull, which reach cubes without touching them) is taken as by touch: a default cube, or another
//!     player's cube that was at rest, with authority sequence + 1.
//!
//! A change of authority never moves a cube by itself: the stamp changes, the state does not.

pub mod rules;

use tumble_engine::physics::{BodyId, BodyKind, ContactReport, PhysicsError, World};

use crate::sync::codec::stamp::{AuthorityStamp, DEFAULT_AUTHORITY};

/// Steps a player's cube must rest on the host before it returns to default: 60 steps is two thirds of a second.
pub const RETURN_TO_DEFAULT_STEPS: u32 = 60;
/// No player holds the cube.
pub const NOBODY: u8 = 0;
/// Rule 3d: steps (one second at 90 Hz) two players' awake cubes may touch, each simulated by its own authority,
/// before the earlier player (by index) takes the other's moving pile.
pub const MERGE_AFTER_STEPS: u16 = 90;

/// One peer's view of every cube's authority and ownership. Flat arrays indexed by cube (body) id.
#[derive(Clone, Debug)]
pub struct AuthorityTable {
    /// The local player's authority index (1–4), or 0 for a headless host.
    me: u8,
    is_host: bool,
    stamps: Vec<AuthorityStamp>,
    holders: Vec<u8>,
    /// Consecutive steps at rest while under a player's authority (host: for rule 8).
    rest_steps: Vec<u32>,
    /// The player each cube is pinned to (rule 10), or [`NOBODY`].
    pinned: Vec<u8>,
    /// Rule 3d: consecutive steps another player's awake cube has touched an awake cube of the local player's.
    mixed_steps: Vec<u16>,
    /// Per step of [`AuthorityTable::spread_by_contact`], per cube: whether it touched an awake cube of the local
    /// player's this step while awake under a later player's authority, and the authority a cube taken by rule 3d
    /// this step had (0: none). Scratch, sized once.
    touched_mixed: Vec<bool>,
    merged_from: Vec<u8>,
}

impl AuthorityTable {
    pub fn new(cube_count: usize, me: u8, is_host: bool) -> Self {
        Self {
            me,
            is_host,
            stamps: vec![AuthorityStamp::DEFAULT; cube_count],
            holders: vec![NOBODY; cube_count],
            rest_steps: vec![0; cube_count],
            pinned: vec![NOBODY; cube_count],
            mixed_steps: vec![0; cube_count],
            touched_mixed: vec![false; cube_count],
            merged_from: vec![DEFAULT_AUTHORITY; cube_count],
        }
    }

    pub fn me(&self) -> u8 {
        self.me
    }

    pub fn is_host(&self) -> bool {
        self.is_host
    }

    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }

    pub fn stamps(&self) -> &[AuthorityStamp] {
        &self.stamps
    }

    pub fn stamp(&self, cube: u32) -> AuthorityStamp {
        self.stamps[cube as usize]
    }

    pub fn holder(&self, cube: u32) -> u8 {
        self.holders[cube as usize]
    }

    /// The player `cube` is pinned to (rule 10), or [`NOBODY`].
    pub fn pinned_to(&self, cube: u32) -> u8 {
        self.pinned[cube as usize]
    }

    /// The player whose claim alone the host may take on `cube`, whatever the sequences say: its holder, else
    /// the player it is pinned to; [`NOBODY`] when anyone's may be taken.
    pub fn reserved_for(&self, cube: u32) -> u8 {
        match self.holders[cube as usize] {
            NOBODY => self.pinned[cube as usize],
            holder => holder,
        }
    }

    /// Rule 10: pins `cube` to `player` (1–4) with authority sequence 1. Every peer pins the same cubes before
    /// anything is sent, so their stamps agree from the start.
    pub fn pin(&mut self, cube: u32, player: u8) {
        let i = cube as usize;
        self.stamps[i] = AuthorityStamp {
            authority: player,
            authority_seq: 1,
            ownership_seq: 0,
        };
        self.holders[i] = NOBODY;
        self.rest_steps[i] = 0;
        self.pinned[i] = player;
    }

    /// True when this peer simulates the cube for everyone: it is under the local player's authority, or it is a
    /// default cube and this peer is the host.
    pub fn is_local_authority(&self, cube: u32) -> bool {
        let a = self.stamps[cube as usize].authority;
        (a != DEFAULT_AUTHORITY && a == self.me) || (a == DEFAULT_AUTHORITY && self.is_host)
    }

    /// Rule 1, as the grabbing peer applies it. Returns false (and changes nothing) when another player holds it.
    pub fn grab(&mut self, cube: u32) -> bool {
        let i = cube as usize;
        if ![NOBODY, self.me].contains(&self.reserved_for(cube)) {
            return false;
        }
        let s = &mut self.stamps[i];
        if self.holders[i] != self.me {
            s.ownership_seq = s.ownership_seq.wrapping_add(1);
            s.authority_seq = s.authority_seq.wrapping_add(1);
        }
        s.authority = self.me;
        self.holders[i] = self.me;
        self.rest_steps[i] = 0;
        true
    }

    /// Rule 2.
    pub fn release(&mut self, cube: u32) {
        if self.holders[cube as usize] == self.me {
            self.holders[cube as usize] = NOBODY;
        }
    }

    /// Takes the stamp and holder the host's judgement (or the host's news) settled on.
    pub fn set(&mut self, cube: u32, stamp: AuthorityStamp, holder: u8) {
        let i = cube as usize;
        if self.stamps[i] != stamp {
            self.rest_steps[i] = 0;
            self.mixed_steps[i] = 0;
        }
        self.stamps[i] = stamp;
        self.holders[i] = holder;
    }

    /// Sets only the holder (a remote avatar picked the cube up or let it go).
    pub fn set_holder(&mut self, cube: u32, holder: u8) {
        self.holders[cube as usize] = holder;
    }

    /// Rule 3 after a step: spreads the local authority from its awake cubes to the cubes they touch that are
    /// default, or another player's and were at rest before the step (`rested_before`, per cube), through the
    /// contact graph. Returns how many cubes were taken. `contacts` is the step's report.
    pub fn spread_by_contact(
        &mut self,
        world: &World,
        contacts: &[ContactReport],
        rested_before: &[bool],
    ) -> Result<u32, PhysicsError> {
        let mut taken = 0;
        self.count_mixed_contacts(world, contacts, rested_before)?;
        self.merged_from.fill(DEFAULT_AUTHORITY);
        // A pass per link of the longest chain; each pass is one sweep over the step's contacts.
        loop {
            let mut changed = false;
            for c in contacts {
                let Some(b) = c.b else { continue };
                for (from, to) in [(c.a, b), (b, c.a)] {
                    let by_touch = self.takes(world, from, to, rested_before)?;
                    let merged = match by_touch {
                        Some(_) => None,
                        None => self.merges(world, from, to)?,
                    };
                    if let Some(authority) = by_touch.or(merged) {
                        let s = &mut self.stamps[to.index()];
                        if by_touch.is_none() {
                            self.merged_from[to.index()] = s.authority;
                        }
                        s.authority = authority;
                        s.authority_seq = s.authority_seq.wrapping_add(1);
                        self.rest_steps[to.index()] = 0;
                        self.mixed_steps[to.index()] = 0;
                        taken += 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                return Ok(taken);
            }
        }
    }

    /// Rule 3d's count: per cube, the consecutive steps it has touched an awake cube of the local player's while
    /// itself awake under the authority of a player after the local one (by index), held by nobody and pinned to
    /// nobody.
    fn count_mixed_contacts(
        &mut self,
        world: &World,
        contacts: &[ContactReport],
        rested_before: &[bool],
    ) -> Result<(), PhysicsError> {
        self.touched_mixed.fill(false);
        if self.me == DEFAULT_AUTHORITY {
            return Ok(());
        }
        for c in contacts {
            let Some(b) = c.b else { continue };
            for (from, to) in [(c.a, b), (b, c.a)] {
                let (f, t) = (from.index(), to.index());
                if f >= self.stamps.len() || t >= self.stamps.len() {
                    continue;
                }
                let mixed = self.stamps[f].authority == self.me
                    && self.stamps[t].authority > self.me
                    && !rested_before.get(t).copied().unwrap_or(false)
                    && !world.state(from)?.at_rest
                    && self.mergeable(world, to)?;
                self.touched_mixed[t] |= mixed;
            }
        }
        for (steps, &touched) in self.mixed_steps.iter_mut().zip(&self.touched_mixed) {
            *steps = if touched { steps.saturating_add(1) } else { 0 };
        }
        Ok(())
    }

    /// Rule 3d: the authority `to` takes from touching `from` by merging: `to` has touched the local player's
    /// awake cubes for [`MERGE_AFTER_STEPS`] under a later player's authority, or `from` was merged this step and
    /// `to` is awake under the authority `from` had (the rest of that player's moving pile goes with it).
    fn merges(&self, world: &World, from: BodyId, to: BodyId) -> Result<Option<u8>, PhysicsError> {
        let (f, t) = (from.index(), to.index());
        if f >= self.stamps.len() || t >= self.stamps.len() || self.me == DEFAULT_AUTHORITY {
            return Ok(None);
        }
        let other = self.stamps[t].authority;
        let long_mixed = self.mixed_steps[t] >= MERGE_AFTER_STEPS;
        let same_pile = self.merged_from[f] != DEFAULT_AUTHORITY && self.merged_from[f] == other;
        let takes = self.stamps[f].authority == self.me && (long_mixed || same_pile) && self.mergeable(world, to)?;
        Ok(takes.then_some(self.me))
    }

    /// Whether cube `to` is one rule 3d may take: another player's (not default, not the local player's), held by
    /// nobody, pinned to nobody, dynamic and awake.
    fn mergeable(&self, world: &World, to: BodyId) -> Result<bool, PhysicsError> {
        let t = to.index();
        let other = self.stamps[t].authority;
        Ok(other != DEFAULT_AUTHORITY
            && other != self.me
            && self.holders[t] == NOBODY
            && self.pinned[t] == NOBODY
            && world.kind(to)? == BodyKind::Dynamic
            && !world.state(to)?.at_rest)
    }

    /// The authority `to` takes from touching `from`, if it takes one: `from` is awake and simulated here for
    /// everyone, `to` is a dynamic cube nobody holds, under another authority, and either default (taken by a
    /// player's cube) or another player's cube that rested here before the step.
    fn takes(
        &self,
        world: &World,
        from: BodyId,
        to: BodyId,
        rested_before: &[bool],
    ) -> Result<Option<u8>, PhysicsError> {
        let (f, t) = (from.index(), to.index());
        if f >= self.stamps.len() || t >= self.stamps.len() {
            return Ok(None);
        }
        let mover = self.stamps[f].authority;
        let takes = self.is_local_authority(f as u32)
            && self.may_take(t, mover, rested_before.get(t).copied().unwrap_or(false))
            && !world.state(from)?.at_rest
            && world.kind(to)? == BodyKind::Dynamic;
        Ok(takes.then_some(mover))
    }

    /// Whether authority `mover` may take cube `t` by touch or push (rules 3 and 11): nobody holds it, it is
    /// pinned to nobody, it is under another authority, and it is default (taken by a player) or another
    /// player's that was at rest (`was_at_rest`) and not simulated here.
    fn may_take(&self, t: usize, mover: u8, was_at_rest: bool) -> bool {
        let moved = self.stamps[t].authority;
        moved != mover
            && self.holders[t] == NOBODY
            && self.pinned[t] == NOBODY
            && if moved == DEFAULT_AUTHORITY {
                mover != DEFAULT_AUTHORITY
            } else {
                !self.is_local_authority(t as u32) && was_at_rest
            }
    }

    /// Rule 11: the local player's forces push `cube` (which was at rest before the push: `was_at_rest`). Takes it
    /// when rule 3 would have taken it by touch; true when it was taken.
    pub fn claim_by_push(&mut self, world: &World, cube: u32, was_at_rest: bool) -> Result<bool, PhysicsError> {
        let t = cube as usize;
        if t >= self.stamps.len()
            || self.me == DEFAULT_AUTHORITY
            || !self.may_take(t, self.me, was_at_rest)
            || world.kind(BodyId(cube))? != BodyKind::Dynamic
        {
            return Ok(false);
        }
        let s = &mut self.stamps[t];
        s.authority = self.me;
        s.authority_seq = s.authority_seq.wrapping_add(1);
        self.rest_steps[t] = 0;
        Ok(true)
    }

    /// Rule 8 (host only), after a step: counts rest under a player's authority and returns to default the cubes
    /// that rested long enough. Calls `returned(cube, previous_authority)` for each. Does nothing on a guest.
    pub fn return_rested(&mut self, world: &World, mut returned: impl FnMut(u32, u8)) -> Result<(), PhysicsError> {
        if !self.is_host {
            return Ok(());
        }
        for i in 0..self.stamps.len() {
            let id = BodyId(i as u32);
            let resting = !world.is_removed(id)? && world.state(id)?.at_rest;
            let player_owned =
                self.stamps[i].authority != DEFAULT_AUTHORITY && self.holders[i] == NOBODY && self.pinned[i] == NOBODY;
            self.rest_steps[i] = if resting && player_owned {
                self.rest_steps[i] + 1
            } else {
                0
            };
            if self.rest_steps[i] >= RETURN_TO_DEFAULT_STEPS {
                let s = &mut self.stamps[i];
                let previous = s.authority;
                s.authority = DEFAULT_AUTHORITY;
                s.authority_seq = s.authority_seq.wrapping_add(1);
                self.rest_steps[i] = 0;
                returned(i as u32, previous);
            }
        }
        Ok(())
    }

    /// Rule 9 (host): every cube `player` had authority over or held goes back to default. Calls `returned(cube)`
    /// for each, so the caller can wake it and make it dynamic.
    pub fn release_player(&mut self, player: u8, mut returned: impl FnMut(u32)) {
        for i in 0..self.stamps.len() {
            let held = self.holders[i] == player;
            if self.pinned[i] == player {
                self.pinned[i] = NOBODY;
            }
            if self.stamps[i].authority == player || held {
                if held {
                    self.holders[i] = NOBODY;
                }
                let s = &mut self.stamps[i];
                s.authority = DEFAULT_AUTHORITY;
                s.authority_seq = s.authority_seq.wrapping_add(1);
                self.rest_steps[i] = 0;
                returned(i as u32);
            }
        }
    }

    /// Cubes per authority index 0..=4.
    pub fn counts(&self) -> [u32; 5] {
        let mut n = [0u32; 5];
        for s in &self.stamps {
            n[usize::from(s.authority.min(4))] += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;
    use tumble_engine::physics::{BodyDesc, BodyState, WorldConfig};

    /// A report that cubes `a` and `b` touch.
    fn touching(a: u32, b: u32) -> ContactReport {
        ContactReport {
            a: BodyId(a),
            b: Some(BodyId(b)),
            normal: Vec3::X,
            max_normal_impulse: 1.0,
            approach_speed: 1.0,
        }
    }

    /// Three cubes in a row on the ground, touching, at rest.
    fn row() -> World {
        let mut world = World::new(WorldConfig::default()).unwrap();
        for x in 0..3 {
            let id = world
                .add_body(&BodyDesc {
                    position: Vec3::new(x as f32 * 1.0, 0.5, 0.0),
                    ..BodyDesc::default()
                })
                .unwrap();
            let s = world.state(id).unwrap();
            world.set_state(id, &BodyState { at_rest: true, ..s }).unwrap();
        }
        world
    }

    #[test]
    fn rule_1_a_grab_bumps_both_sequences_and_is_exclusive() {
        let mut t = AuthorityTable::new(2, 2, false);
        assert!(t.grab(0));
        assert_eq!(
            t.stamp(0),
            AuthorityStamp {
                authority: 2,
                authority_seq: 1,
                ownership_seq: 1
            }
        );
        assert_eq!(t.holder(0), 2);
        // Grabbing again with the other hand (a pass) is no new claim.
        assert!(t.grab(0));
        assert_eq!(t.stamp(0).ownership_seq, 1);
        // A cube another player holds cannot be grabbed.
        t.set(
            1,
            AuthorityStamp {
                authority: 3,
                authority_seq: 1,
                ownership_seq: 1,
            },
            3,
        );
        assert!(!t.grab(1));
        assert_eq!(t.stamp(1).authority, 3);
        // Rule 2: release keeps authority.
        t.release(0);
        assert_eq!((t.holder(0), t.stamp(0).authority), (NOBODY, 2));
    }

    #[test]
    fn rule_3_touch_spreads_through_the_contact_graph_to_default_and_resting_cubes() {
        let mut world = row();
        let mut t = AuthorityTable::new(3, 2, false);
        // Cube 0 is mine and awake; cube 1 touches it and cube 2 touches cube 1.
        t.set(
            0,
            AuthorityStamp {
                authority: 2,
                authority_seq: 1,
                ownership_seq: 0,
            },
            NOBODY,
        );
        let s = world.state(BodyId(0)).unwrap();
        world
            .set_state(
                BodyId(0),
                &BodyState {
                    at_rest: false,
                    linear_velocity: Vec3::X,
                    ..s
                },
            )
            .unwrap();
        // Listed so that one pass cannot reach cube 2 before cube 1 is taken, and cube 1 is awake only once hit.
        let contacts = [touching(1, 2), touching(0, 1)];
        let s1 = world.state(BodyId(1)).unwrap();
        world.set_state(BodyId(1), &BodyState { at_rest: false, ..s1 }).unwrap();
        assert_eq!(t.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 2);
        assert_eq!(
            t.stamp(1),
            AuthorityStamp {
                authority: 2,
                authority_seq: 1,
                ownership_seq: 0
            }
        );
        assert_eq!(t.stamp(2).authority, 2);
        // Another player's cube is not taken by touch.
        let mut t = AuthorityTable::new(3, 2, false);
        t.set(
            0,
            AuthorityStamp {
                authority: 2,
                authority_seq: 1,
                ownership_seq: 0,
            },
            NOBODY,
        );
        t.set(
            1,
            AuthorityStamp {
                authority: 3,
                authority_seq: 4,
                ownership_seq: 0,
            },
            NOBODY,
        );
        assert_eq!(t.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 0);
        assert_eq!(t.stamp(1).authority, 3);
        // Rule 3b: unless it rested here before the step; then it is taken, one authority sequence later.
        assert_eq!(
            t.spread_by_contact(&world, &contacts, &[false, true, false]).unwrap(),
            2
        );
        assert_eq!(
            t.stamp(1),
            AuthorityStamp {
                authority: 2,
                authority_seq: 5,
                ownership_seq: 0
            }
        );
        // Rule 3c: on the host an awake default cube takes a player's resting cube back to default.
        let mut host = AuthorityTable::new(3, 1, true);
        host.set(
            1,
            AuthorityStamp {
                authority: 3,
                authority_seq: 4,
                ownership_seq: 0,
            },
            NOBODY,
        );
        assert_eq!(
            host.spread_by_contact(&world, &contacts, &[false, true, false])
                .unwrap(),
            1
        );
        assert_eq!(host.stamp(1).authority, DEFAULT_AUTHORITY);
        assert_eq!(host.stamp(1).authority_seq, 5);
        // A resting cube of mine spreads nothing.
        let mut t = AuthorityTable::new(3, 2, false);
        t.set(
            2,
            AuthorityStamp {
                authority: 2,
                authority_seq: 1,
                ownership_seq: 0,
            },
            NOBODY,
        );
        world.set_state(BodyId(1), &BodyState { at_rest: true, ..s1 }).unwrap();
        let s2 = world.state(BodyId(2)).unwrap();
        world.set_state(BodyId(2), &BodyState { at_rest: true, ..s2 }).unwrap();
        assert_eq!(t.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 0);
    }

    #[test]
    fn rule_3d_two_players_moving_piles_that_keep_touching_become_the_earlier_players() {
        // Cube 0 is player 2's, cubes 1 and 2 player 3's; all awake, 0 touching 1 touching 2.
        let mut world = row();
        for c in 0..3 {
            let s = world.state(BodyId(c)).unwrap();
            world
                .set_state(
                    BodyId(c),
                    &BodyState {
                        at_rest: false,
                        linear_velocity: Vec3::X * 0.02,
                        ..s
                    },
                )
                .unwrap();
        }
        let contacts = [touching(1, 2), touching(0, 1)];
        let stamp = |authority, authority_seq| AuthorityStamp {
            authority,
            authority_seq,
            ownership_seq: 0,
        };
        let table = |me: u8| {
            let mut t = AuthorityTable::new(3, me, false);
            t.set(0, stamp(2, 1), NOBODY);
            t.set(1, stamp(3, 4), NOBODY);
            t.set(2, stamp(3, 6), NOBODY);
            t
        };
        let mut two = table(2);
        let mut three = table(3);
        for step in 1..MERGE_AFTER_STEPS {
            assert_eq!(
                two.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(),
                0,
                "step {step}"
            );
            assert_eq!(three.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 0);
        }
        // A second's touch: player 2 takes cube 1 and, through it, the rest of player 3's moving pile.
        assert_eq!(two.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 2);
        assert_eq!((two.stamp(1), two.stamp(2)), (stamp(2, 5), stamp(2, 7)));
        // Player 3 (after player 2) never takes: only one side does.
        for _ in 0..2 * MERGE_AFTER_STEPS {
            assert_eq!(three.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 0);
        }
        // A touch broken for a step starts the count over; a held cube is never taken.
        let mut two = table(2);
        for _ in 0..MERGE_AFTER_STEPS - 1 {
            two.spread_by_contact(&world, &contacts, &[false; 3]).unwrap();
        }
        two.spread_by_contact(&world, &[], &[false; 3]).unwrap();
        for _ in 0..MERGE_AFTER_STEPS - 1 {
            assert_eq!(two.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 0);
        }
        two.set_holder(1, 3);
        for _ in 0..2 * MERGE_AFTER_STEPS {
            assert_eq!(two.spread_by_contact(&world, &contacts, &[false; 3]).unwrap(), 0);
        }
        assert_eq!(two.stamp(1), stamp(3, 4));
        // Resting cubes are rule 3b's, not this rule's: a pile of player 3's at rest is taken at the first touch.
        let s1 = world.state(BodyId(1)).unwrap();
        world.set_state(BodyId(1), &BodyState { at_rest: true, ..s1 }).unwrap();
        let mut two = table(2);
        assert_eq!(
            two.spread_by_contact(&world, &contacts, &[false, true, false]).unwrap(),
            1
        );
        assert_eq!((two.stamp(1).authority, two.stamp(2).authority), (2, 3));
    }

    #[test]
    fn rule_10_a_pinned_cube_stays_its_players_whatever_touches_pushes_or_rests() {
        let mut world = row();
        let contacts = [ContactReport {
            a: BodyId(0),
            b: Some(BodyId(1)),
            normal: Vec3::X,
            max_normal_impulse: 1.0,
            approach_speed: 1.0,
        }];
        let s0 = world.state(BodyId(0)).unwrap();
        world.set_state(BodyId(0), &BodyState { at_rest: false, ..s0 }).unwrap();
        // Player 2's peer: cube 0 is its own, awake; cube 1 is pinned to player 3 and was at rest.
        let mut t = AuthorityTable::new(3, 2, false);
        t.pin(0, 2);
        t.pin(1, 3);
        let pinned3 = t.stamp(1);
        assert_eq!(
            t.spread_by_contact(&world, &contacts, &[false, true, false]).unwrap(),
            0
        );
        assert!(!t.claim_by_push(&world, 1, true).unwrap());
        assert!(!t.grab(1));
        assert_eq!(t.stamp(1), pinned3);
        assert_eq!(t.reserved_for(1), 3);
        // The host never returns a pinned cube to default, however long it rests.
        let mut host = AuthorityTable::new(3, 1, true);
        host.pin(2, 2);
        for _ in 0..RETURN_TO_DEFAULT_STEPS * 2 {
            host.return_rested(&world, |c, _| panic!("cube {c} returned")).unwrap();
        }
        assert_eq!(host.stamp(2).authority, 2);
        // Its player leaving unpins it and returns it to default.
        let mut released = Vec::new();
        host.release_player(2, |c| released.push(c));
        assert_eq!(
            (released, host.pinned_to(2), host.stamp(2).authority),
            (vec![2], NOBODY, DEFAULT_AUTHORITY)
        );
    }

    #[test]
    fn rule_11_a_push_takes_default_cubes_and_other_players_resting_ones_only() {
        let world = row();
        let mut t = AuthorityTable::new(3, 2, false);
        assert!(t.claim_by_push(&world, 0, false).unwrap());
        assert_eq!(t.stamp(0).authority, 2);
        assert_eq!(t.stamp(0).authority_seq, 1);
        // Already mine: nothing to take.
        assert!(!t.claim_by_push(&world, 0, false).unwrap());
        let theirs = AuthorityStamp {
            authority: 3,
            authority_seq: 4,
            ownership_seq: 0,
        };
        t.set(1, theirs, NOBODY);
        assert!(!t.claim_by_push(&world, 1, false).unwrap(), "moving: its authority's");
        assert!(t.claim_by_push(&world, 1, true).unwrap(), "resting: anyone's");
        assert_eq!(t.stamp(1).authority_seq, 5);
        t.set(2, theirs, 3);
        assert!(!t.claim_by_push(&world, 2, true).unwrap(), "held");
        // A headless host (no player) takes nothing.
        let mut host = AuthorityTable::new(3, DEFAULT_AUTHORITY, true);
        assert!(!host.claim_by_push(&world, 0, true).unwrap());
    }

    #[test]
    fn rule_8_the_host_returns_a_rested_unheld_cube_after_the_wait_and_only_then() {
        let world = row();
        let mut host = AuthorityTable::new(3, 1, true);
        let claim = AuthorityStamp {
            authority: 3,
            authority_seq: 7,
            ownership_seq: 2,
        };
        host.set(0, claim, NOBODY);
        host.set(1, claim, 3);
        let mut returned = Vec::new();
        for _ in 0..RETURN_TO_DEFAULT_STEPS - 1 {
            host.return_rested(&world, |c, _| returned.push(c)).unwrap();
        }
        assert!(returned.is_empty(), "not before {RETURN_TO_DEFAULT_STEPS} steps");
        host.return_rested(&world, |c, _| returned.push(c)).unwrap();
        assert_eq!(returned, vec![0], "the held cube stays");
        assert_eq!(
            host.stamp(0),
            AuthorityStamp {
                authority: 0,
                authority_seq: 8,
                ownership_seq: 2
            }
        );
        // A guest never returns cubes itself.
        let mut guest = AuthorityTable::new(3, 3, false);
        guest.set(0, claim, NOBODY);
        for _ in 0..2 * RETURN_TO_DEFAULT_STEPS {
            guest
                .return_rested(&world, |_, _| panic!("a guest returned a cube"))
                .unwrap();
        }
        assert_eq!(guest.stamp(0), claim);
    }

    #[test]
    fn rule_9_a_leaving_player_leaves_nothing_behind() {
        let mut host = AuthorityTable::new(3, 1, true);
        host.set(
            0,
            AuthorityStamp {
                authority: 3,
                authority_seq: 2,
                ownership_seq: 1,
            },
            3,
        );
        host.set(
            1,
            AuthorityStamp {
                authority: 3,
                authority_seq: 5,
                ownership_seq: 0,
            },
            NOBODY,
        );
        host.set(
            2,
            AuthorityStamp {
                authority: 2,
                authority_seq: 1,
                ownership_seq: 0,
            },
            NOBODY,
        );
        let mut returned = Vec::new();
        host.release_player(3, |c| returned.push(c));
        assert_eq!(returned, vec![0, 1]);
        assert_eq!(
            (host.stamp(0).authority, host.holder(0), host.stamp(0).authority_seq),
            (0, NOBODY, 3)
        );
        assert_eq!(host.stamp(2).authority, 2);
    }
}
