//! How high each body sits in its stack: 0 for bodies that rest on something that does not move this step (the
//! ground, a kinematic or resting body), n + 1 for bodies resting on a body at height n, found breadth-first over
//! touching contacts. The solver orders contacts from the ground up and, in its shock-propagation pass, holds the
//! lower body of each contact fixed, which is what lets a 30-cube column carry its weight without sagging.

use glam::Vec3;

use super::broadphase::GROUND;
use super::contact::Contact;

/// A fixed body whose contact normal is within 60° of vertical, above the moving one, presses on it from above.
const PRESSES_FROM_ABOVE_COS: f32 = 0.5;

/// The fixed body of the contact lies above the moving one. The normal points from a to b; the ground is always b
/// and never above.
pub fn presses_from_above(c: &Contact, fixed_is_b: bool, up: Vec3) -> bool {
    let towards_fixed = if fixed_is_b {
        c.manifold.normal
    } else {
        -c.manifold.normal
    };
    c.b != GROUND && towards_fixed.dot(up) > PRESSES_FROM_ABOVE_COS
}

/// Height of a body not connected to anything fixed (a cube in flight, or a pile in free fall).
pub const UNSUPPORTED: u32 = u32::MAX;

/// The levels and the scratch for the search, kept between steps so nothing is allocated once sized.
#[derive(Clone, Debug, Default)]
pub struct StackOrder {
    pub level: Vec<u32>,
    /// Adjacency between moving bodies in compressed rows: neighbours of i are `neighbours[offsets[i]..offsets[i+1]]`.
    offsets: Vec<u32>,
    cursor: Vec<u32>,
    neighbours: Vec<u32>,
    queue: Vec<u32>,
}

impl StackOrder {
    /// Makes room for `bodies` bodies and `contacts` contacts without allocating while stepping.
    pub fn reserve(&mut self, bodies: usize, contacts: usize) {
        for v in [&mut self.level, &mut self.offsets, &mut self.cursor, &mut self.queue] {
            v.reserve((bodies + 1).saturating_sub(v.len()));
        }
        self.neighbours
            .reserve((2 * contacts).saturating_sub(self.neighbours.len()));
    }

    /// `simulated[i]`: body i moves this step; whatever else a contact touches counts as fixed support — unless it
    /// presses from above (`up` is against gravity): a held cube set on a stack holds nothing up, and counting it
    /// as a base would order the column from both ends at once.
    pub fn compute(&mut self, contacts: &[Contact], simulated: &[bool], up: Vec3) {
        let n = simulated.len();
        let moves = |i: u32| i != GROUND && simulated[i as usize];
        self.level.clear();
        self.level.resize(n, UNSUPPORTED);
        self.queue.clear();
        self.offsets.clear();
        self.offsets.resize(n + 1, 0);
        for c in contacts.iter().filter(|c| c.touching()) {
            match (moves(c.a), moves(c.b)) {
                (true, true) => {
                    self.offsets[c.a as usize + 1] += 1;
                    self.offsets[c.b as usize + 1] += 1;
                }
                (true, false) if !presses_from_above(c, true, up) => self.add_root(c.a),
                (false, true) if !presses_from_above(c, false, up) => self.add_root(c.b),
                (true, false) | (false, true) => {}
                (false, false) => {}
            }
        }
        for i in 0..n {
            self.offsets[i + 1] += self.offsets[i];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.offsets[..n]);
        self.neighbours.clear();
        self.neighbours.resize(self.offsets[n] as usize, 0);
        for c in contacts.iter().filter(|c| c.touching() && moves(c.a) && moves(c.b)) {
            for (x, y) in [(c.a, c.b), (c.b, c.a)] {
                self.neighbours[self.cursor[x as usize] as usize] = y;
                self.cursor[x as usize] += 1;
            }
        }
        let mut head = 0;
        while head < self.queue.len() {
            let i = self.queue[head] as usize;
            head += 1;
            for k in self.offsets[i]..self.offsets[i + 1] {
                let j = self.neighbours[k as usize] as usize;
                if self.level[j] == UNSUPPORTED {
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
            a,
            b,
            manifold: m,
            updated: true,
            fresh: false,
            built: true,
            built_at: [glam::Vec3::ZERO; 2],
            built_separation: [0.0; 4],
        }
    }

    #[test]
    fn levels_count_up_from_the_ground_and_loose_bodies_are_unsupported() {
        let contacts = [touching(0, 1), touching(0, GROUND), touching(1, 2), touching(3, 4)];
        let mut order = StackOrder::default();
        order.compute(&contacts, &[true; 5], Vec3::Y);
        assert_eq!(order.level, vec![0, 1, 2, UNSUPPORTED, UNSUPPORTED]);
    }

    #[test]
    fn a_resting_body_is_support_too() {
        let contacts = [touching(0, 1), touching(1, 2)];
        let mut order = StackOrder::default();
        order.compute(&contacts, &[false, true, true], Vec3::Y);
        assert_eq!(order.level, vec![UNSUPPORTED, 0, 1]);
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
        order.compute(&contacts, &[true, false, true, false, true], Vec3::Y);
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
            a,
            b,
            manifold: m,
            updated: true,
            fresh: false,
            built: true,
            built_at: [Vec3::ZERO; 2],
            built_separation: [0.0; 4],
        }
    }
}
