//! How high each body sits in its stack: 0 for bodies that rest on something that does not move this step (the
//! ground, a kinematic or resting body, or the ground about to be landed on: see `reaches_ground`), n + 1 for
//! bodies resting on a body at height n, found breadth-first over touching contacts. The solver orders contacts
//! from the ground up and, in its shock-propagation pass, holds the lower body of each contact fixed, which is
//! what lets a 30-cube column carry its weight without sagging.
//!
//! Only contacts that can hold a body up give levels and a lower body: a contact whose normal is near horizontal
//! (two columns standing side by side) carries no weight. Counted, it gave a cube a "support" one level lower in
//! the next column, through the corner where the columns' joints meet; the shock pass then pinned the cube to
//! that column's side with friction, and the columns, each solved as if it hung on the other, leaned 18 cm.
//! The same holds for a contact that touches only along the rim of a face ([`Manifold::rim`]): that corner is where
//! the columns' joints meet, and its normal may come out vertical. Side contacts give levels only to bodies that
//! nothing holds up from below (a cube wedged between two others).
//!
//! [`Manifold::rim`]: super::manifold::Manifold::rim

use glam::Vec3;

use super::broadphase::GROUND;
use super::contact::Contact;

/// A fixed body whose contact normal is within 60° of vertical, above the moving one, presses on it from above.
const PRESSES_FROM_ABOVE_COS: f32 = 0.5;
/// A contact whose normal is within 60° of vertical can hold a body up; a steeper one is a side contact.
const SUPPORTS_COS: f32 = 0.5;
/// Marks a side contact in the adjacency lists (body ids stay far below it).
const SIDE_BIT: u32 = 1 << 31;

/// The fixed body of the contact lies above the moving one. The normal points from a to b; the ground is always b
/// and never above.
#[inline]
pub fn presses_from_above(c: &Contact, fixed_is_b: bool, up: Vec3) -> bool {
    let towards_fixed = if fixed_is_b {
        c.manifold.normal
    } else {
        -c.manifold.normal
    };
    c.b != GROUND && towards_fixed.dot(up) > PRESSES_FROM_ABOVE_COS
}

/// One body of the contact can hold the other up: the normal is close enough to vertical, and the boxes meet on
/// a face, not only along the rim of one (where two columns' joints meet, a cube's edge touches the edge of the
/// cube one level down in the next column; the real support is the cube below).
#[inline]
pub fn can_support(c: &Contact, up: Vec3) -> bool {
    c.manifold.normal.dot(up).abs() >= SUPPORTS_COS && !c.manifold.rim
}

/// The other body of the contact is below body a (`for_a`) or body b, close enough under it to carry its weight:
/// the normal, which points from a to b, is within 60° of vertical and points away from the body. Rim contacts
/// count here: losing one may drop the body.
#[inline]
pub fn holds_up(c: &Contact, for_a: bool, up: Vec3) -> bool {
    let towards_other = if for_a { c.manifold.normal } else { -c.manifold.normal };
    towards_other.dot(up) <= -SUPPORTS_COS
}

/// The contact joins the stack: it touches, or it is a body about to land on the ground (a speculative ground
/// contact). Two cubes falling together onto the ground are then ordered ground up in the step they land;
/// otherwise the lower one stops and the upper one, solved first, sinks 5 cm into it. Speculative contacts between
/// boxes do not count: ordering by every near miss in a tumbling pile kept it from ever coming to rest.
fn reaches_ground(c: &Contact) -> bool {
    c.touching() || (c.b == GROUND && c.manifold.count > 0)
}

/// Everything the search reads of a contact besides its pair, as bits: whether it touches, has points, can
/// support, and has its body b or a pressing from above. Two steps with the same pairs, bits and moving bodies give
/// the same levels.
fn stack_bits(c: &Contact, up: Vec3) -> u8 {
    u8::from(c.touching())
        | u8::from(c.manifold.count > 0) << 1
        | u8::from(can_support(c, up)) << 2
        | u8::from(presses_from_above(c, true, up)) << 3
        | u8::from(presses_from_above(c, false, up)) << 4
}

/// Height of a body not connected to anything fixed (a cube in flight, or a pile in free fall).
pub const UNSUPPORTED: u32 = u32::MAX;

/// Which body of contact `c` holds the other up, for the shock pass and the seeding: 1 body a, 2 body b, 0
/// neither. The ground or anything not moving this step holds up what it touches, unless it presses from above (a
/// held cube set on a stack holds nothing up); between two moving bodies, the one lower in the stack, through a
/// contact that can carry weight. Side contacts between moving bodies are solved with both bodies free.
#[inline]
pub fn lower_body(c: &Contact, level: &[u32], simulated: &[bool], up: Vec3) -> u8 {
    let a_simulated = simulated[c.a as usize];
    let b_simulated = c.b != GROUND && simulated[c.b as usize];
    let level_b = if c.b == GROUND { 0 } else { level[c.b as usize] };
    match level[c.a as usize].cmp(&level_b) {
        _ if !b_simulated && presses_from_above(c, true, up) => 1,
        _ if !b_simulated => 2,
        _ if !a_simulated && presses_from_above(c, false, up) => 2,
        _ if !a_simulated => 1,
        _ if !can_support(c, up) => 0,
        std::cmp::Ordering::Less => 1,
        std::cmp::Ordering::Greater => 2,
        std::cmp::Ordering::Equal => 0,
    }
}

/// The levels and the scratch for the search, kept between steps so nothing is allocated once sized.
#[derive(Clone, Debug, Default)]
pub struct StackOrder {
    /// Per body id: its height this step; [`UNSUPPORTED`] for every body not simulated this step.
    pub level: Vec<u32>,
    /// The bodies given a level by the last [`StackOrder::compute`], reset by the next.
    levelled: Vec<u32>,
    /// Per body id: its row in the adjacency (valid for the bodies simulated this step).
    row: Vec<u32>,
    /// Adjacency between moving bodies in compressed rows: neighbours of the body in row r are
    /// `neighbours[offsets[r]..offsets[r+1]]`, with [`SIDE_BIT`] set for a side contact.
    offsets: Vec<u32>,
    cursor: Vec<u32>,
    neighbours: Vec<u32>,
    queue: Vec<u32>,
    /// What the levels were last computed from (see [`StackOrder::compute`]): the contacts, what each one told
    /// the search ([`stack_bits`]), the moving bodies and the executed step (0: none).
    computed_ids: Vec<u32>,
    computed_bits: Vec<u8>,
    computed_bodies: Vec<u32>,
    computed_look: u64,
}

impl StackOrder {
    /// Makes room for `bodies` bodies and `contacts` contacts without allocating while stepping.
    pub fn reserve(&mut self, bodies: usize, contacts: usize) {
        self.level.resize(bodies, UNSUPPORTED);
        self.row.resize(bodies, 0);
        for v in [
            &mut self.levelled,
            &mut self.offsets,
            &mut self.cursor,
            &mut self.queue,
            &mut self.computed_bodies,
        ] {
            v.reserve((bodies + 1).saturating_sub(v.len()));
        }
        self.computed_ids
            .reserve(contacts.saturating_sub(self.computed_ids.len()));
        self.computed_bits
            .reserve(contacts.saturating_sub(self.computed_bits.len()));
        self.neighbours
            .reserve((2 * contacts).saturating_sub(self.neighbours.len()));
    }

    /// `bodies`: the bodies that move this step (`simulated[i]`, by id), ascending; `ids`: the contacts of this
    /// step (every contact of a moving body among them), in pair order. Whatever else a contact touches counts as
    /// fixed support — unless it presses from above (`up` is against gravity): a held cube set on a stack holds
    /// nothing up, and counting it as a base would order the column from both ends at once. Levels spread through
    /// contacts that can carry weight first; only then do side contacts reach the bodies still without a level.
    ///
    /// The levels are a function of the contacts' pairs, of what each contact tells the search ([`stack_bits`])
    /// and of the moving bodies (`up` is the world's, fixed): when none of these changed since the last executed
    /// step (`look` is this one), they are kept as they are (a pile that holds still, sleeping off).
    pub fn compute(
        &mut self,
        contacts: &[Contact],
        ids: &[u32],
        bodies: &[u32],
        simulated: &[bool],
        (up, look): (Vec3, u64),
    ) {
        if self.still_holds(contacts, ids, bodies, (up, look)) {
            self.computed_look = look;
            return;
        }
        self.computed_ids.clear();
        self.computed_ids.extend_from_slice(ids);
        self.computed_bits.clear();
        self.computed_bits
            .extend(ids.iter().map(|&k| stack_bits(&contacts[k as usize], up)));
        self.computed_bodies.clear();
        self.computed_bodies.extend_from_slice(bodies);
        if self.level.len() < simulated.len() {
            self.level.resize(simulated.len(), UNSUPPORTED);
            self.row.resize(simulated.len(), 0);
        }
        self.forget();
        self.levelled.extend_from_slice(bodies);
        for (r, &i) in bodies.iter().enumerate() {
            self.level[i as usize] = UNSUPPORTED;
            self.row[i as usize] = r as u32;
        }
        self.queue.clear();
        let side_links = self.build_adjacency(contacts, ids, bodies.len(), simulated, up);
        let side_roots = self.add_roots(contacts, ids, simulated, up, true);
        self.spread(false);
        // Most scenes have no side contact between moving bodies (a field of cubes): then there is no second round.
        if side_roots {
            self.add_roots(contacts, ids, simulated, up, false);
        }
        if side_links || side_roots {
            self.spread(true);
        }
        self.computed_look = look;
    }

    /// Whether the levels computed in the last executed step still hold: the same contacts in the same order,
    /// each telling the search what it told it then, and the same moving bodies.
    fn still_holds(&self, contacts: &[Contact], ids: &[u32], bodies: &[u32], (up, look): (Vec3, u64)) -> bool {
        self.computed_look != 0
            && self.computed_look + 1 == look
            && ids == self.computed_ids.as_slice()
            && bodies == self.computed_bodies.as_slice()
            && ids
                .iter()
                .zip(&self.computed_bits)
                .all(|(&k, &bits)| stack_bits(&contacts[k as usize], up) == bits)
    }

    /// Puts every level back to [`UNSUPPORTED`], touching only the bodies the last [`StackOrder::compute`] levelled.
    pub fn forget(&mut self) {
        for &i in &self.levelled {
            self.level[i as usize] = UNSUPPORTED;
        }
        self.levelled.clear();
    }

    /// Bodies touching something fixed through a contact that can (`supporting`) or cannot carry weight. Returns
    /// whether a contact of the other kind would have given a root.
    fn add_roots(&mut self, contacts: &[Contact], ids: &[u32], simulated: &[bool], up: Vec3, supporting: bool) -> bool {
        let moves = |i: u32| i != GROUND && simulated[i as usize];
        let mut other_kind = false;
        for c in ids.iter().map(|&k| &contacts[k as usize]).filter(|c| reaches_ground(c)) {
            let root = match (moves(c.a), moves(c.b)) {
                (true, false) if !presses_from_above(c, true, up) => c.a,
                (false, true) if !presses_from_above(c, false, up) => c.b,
                _ => continue,
            };
            if can_support(c, up) == supporting {
                self.add_root(root);
            } else {
                other_kind = true;
            }
        }
        other_kind
    }

    /// Compressed adjacency between the `rows` moving bodies over touching contacts; returns whether any is a side
    /// contact.
    fn build_adjacency(
        &mut self,
        contacts: &[Contact],
        ids: &[u32],
        rows: usize,
        simulated: &[bool],
        up: Vec3,
    ) -> bool {
        let both_move =
            |c: &&Contact| c.touching() && c.b != GROUND && simulated[c.a as usize] && simulated[c.b as usize];
        self.offsets.clear();
        self.offsets.resize(rows + 1, 0);
        for c in ids.iter().map(|&k| &contacts[k as usize]).filter(both_move) {
            self.offsets[self.row[c.a as usize] as usize + 1] += 1;
            self.offsets[self.row[c.b as usize] as usize + 1] += 1;
        }
        for r in 0..rows {
            self.offsets[r + 1] += self.offsets[r];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.offsets[..rows]);
        self.neighbours.clear();
        self.neighbours.resize(self.offsets[rows] as usize, 0);
        let mut any_side = false;
        for c in ids.iter().map(|&k| &contacts[k as usize]).filter(both_move) {
            let side = if can_support(c, up) { 0 } else { SIDE_BIT };
            any_side |= side != 0;
            for (x, y) in [(c.a, c.b), (c.b, c.a)] {
                let r = self.row[x as usize] as usize;
                self.neighbours[self.cursor[r] as usize] = y | side;
                self.cursor[r] += 1;
            }
        }
        any_side
    }

    /// Breadth-first from every body queued so far (the whole queue again: the second round starts from the
    /// bodies the first one reached), giving unreached neighbours the next level; side contacts only with `sides`.
    fn spread(&mut self, sides: bool) {
        let mut head = 0;
        while head < self.queue.len() {
            let i = self.queue[head] as usize;
            head += 1;
            let r = self.row[i] as usize;
            for k in self.offsets[r]..self.offsets[r + 1] {
                let entry = self.neighbours[k as usize];
                let j = (entry & !SIDE_BIT) as usize;
                if (sides || entry & SIDE_BIT == 0) && self.level[j] == UNSUPPORTED {
                    self.level[j] = self.level[i] + 1;
                    self.queue.push(j as u32);
                }
            }
        }
    }

    fn add_root(&mut self, i: u32) {
        if self.level[i as usize] != 0 {
            self.level[i as usize] = 0;
            self.queue.push(i);
        }
    }

    /// Every contact given, every body flagged in `simulated`: for tests.
    #[cfg(test)]
    fn compute_all(&mut self, contacts: &[Contact], simulated: &[bool], up: Vec3) {
        let ids: Vec<u32> = (0..contacts.len() as u32).collect();
        let bodies: Vec<u32> = (0..simulated.len() as u32).filter(|&i| simulated[i as usize]).collect();
        self.compute(contacts, &ids, &bodies, simulated, (up, 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physics::manifold::Manifold;

    fn touching(a: u32, b: u32) -> Contact {
        let mut m = Manifold {
            count: 1,
            ..Manifold::default()
        };
        m.points[0].separation = 0.0;
        Contact {
            manifold: m,
            updated: true,
            fresh: false,
            built: true,
            ..Contact::new(a, b)
        }
    }

    #[test]
    fn levels_count_up_from_the_ground_and_loose_bodies_are_unsupported() {
        let contacts = [touching(0, 1), touching(0, GROUND), touching(1, 2), touching(3, 4)];
        let mut order = StackOrder::default();
        order.compute_all(&contacts, &[true; 5], Vec3::Y);
        assert_eq!(order.level, vec![0, 1, 2, UNSUPPORTED, UNSUPPORTED]);
    }

    #[test]
    fn a_resting_body_is_support_too() {
        let contacts = [touching(0, 1), touching(1, 2)];
        let mut order = StackOrder::default();
        order.compute_all(&contacts, &[false, true, true], Vec3::Y);
        assert_eq!(order.level, vec![UNSUPPORTED, 0, 1]);
    }
}

#[cfg(test)]
mod side_tests {
    use super::tests_support::touching_with_normal;
    use super::*;

    #[test]
    fn side_and_rim_contacts_give_no_level_while_a_support_exists() {
        // Two columns of two side by side: 0 under 1, 2 under 3; 1 touches 2 at the joint (rim), 1 and 3 side to side.
        let mut rim = touching_with_normal(1, 2, -Vec3::Y);
        rim.manifold.rim = true;
        let contacts = [
            touching_with_normal(0, GROUND, -Vec3::Y),
            touching_with_normal(0, 1, Vec3::Y),
            touching_with_normal(0, 2, Vec3::X),
            rim,
            touching_with_normal(1, 3, Vec3::X),
            touching_with_normal(2, GROUND, -Vec3::Y),
            touching_with_normal(2, 3, Vec3::Y),
            // Body 4 is wedged: it touches only the side of body 3.
            touching_with_normal(3, 4, Vec3::X),
        ];
        let mut order = StackOrder::default();
        order.compute_all(&contacts, &[true; 5], Vec3::Y);
        assert_eq!(order.level, vec![0, 1, 0, 1, 2]);
        let lower = |k: usize| lower_body(&contacts[k], &order.level, &[true; 5], Vec3::Y);
        assert_eq!(lower(1), 1, "0 holds 1 up");
        assert_eq!(
            (lower(2), lower(3), lower(4)),
            (0, 0, 0),
            "side and rim contacts hold nothing up"
        );
        assert_eq!(lower(5), 2, "the ground holds 2 up");
    }
}

#[cfg(test)]
mod pressing_tests {
    use super::tests_support::touching_with_normal;
    use super::*;

    #[test]
    fn a_fixed_body_pressing_from_above_is_no_base() {
        // Body 0 stands on the ground; body 1 (fixed: a held cube) presses on it from above; body 2 leans on a
        // fixed body 3 from the side. Normals point from a to b.
        let contacts = [
            touching_with_normal(0, GROUND, -Vec3::Y),
            touching_with_normal(0, 1, Vec3::Y),
            touching_with_normal(2, 3, Vec3::X),
            touching_with_normal(1, 4, -Vec3::Y),
        ];
        let mut order = StackOrder::default();
        order.compute_all(&contacts, &[true, false, true, false, true], Vec3::Y);
        assert_eq!(order.level[0], 0, "held up by the ground");
        assert_eq!(order.level[2], 0, "a fixed body beside still holds");
        assert_eq!(
            order.level[4], UNSUPPORTED,
            "body 4 hangs under the fixed body 1 (a is fixed, above)"
        );
        assert!(presses_from_above(&contacts[1], true, Vec3::Y));
        assert!(!presses_from_above(&contacts[0], true, Vec3::Y));
        assert!(presses_from_above(&contacts[3], false, Vec3::Y));
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;
    use crate::physics::manifold::Manifold;

    pub fn touching_with_normal(a: u32, b: u32, normal: Vec3) -> Contact {
        let mut m = Manifold {
            count: 1,
            normal,
            ..Manifold::default()
        };
        m.points[0].separation = 0.0;
        Contact {
            manifold: m,
            updated: true,
            fresh: false,
            built: true,
            ..Contact::new(a, b)
        }
    }
}
