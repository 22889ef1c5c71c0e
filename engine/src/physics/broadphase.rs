//! Which bodies may touch. Each body owns an enlarged box (its bounds grown by its motion this step, the
//! speculative distance and a fixed [`FAT_MARGIN_M`]), kept in a dynamic tree (`aabb_tree.rs`). Only bodies that
//! may have moved have their bounds checked, and a body that leaves its enlarged box gets a new one and looks up
//! its own new neighbours in the tree: the pairs of everything else stay as they were, so the cost follows the
//! bodies that move, not the size of the world. The pairs themselves live in the contact set (one contact per pair
//! of overlapping enlarged boxes, and one per box that reaches down to the ground); the world keeps them in step
//! (`World::update_broadphase`).

use glam::Vec3;

use super::aabb_tree::AabbTree;

/// Extra room around each body's bounds, so small motions don't change the pairs (metres).
pub const FAT_MARGIN_M: f32 = 0.1;
/// Pair partner that stands for the ground plane.
pub const GROUND: u32 = u32::MAX;
/// A body without a leaf in the tree.
const NO_LEAF: u32 = u32::MAX;

/// An axis-aligned box.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Aabb {
    /// A box that contains nothing and overlaps nothing.
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::splat(f32::INFINITY),
        max: Vec3::splat(f32::NEG_INFINITY),
    };

    pub fn contains(&self, other: &Aabb) -> bool {
        self.min.cmple(other.min).all() && self.max.cmpge(other.max).all()
    }

    pub fn overlaps(&self, other: &Aabb) -> bool {
        self.min.cmple(other.max).all() && self.max.cmpge(other.min).all()
    }

    pub fn grown(&self, by: f32) -> Aabb {
        Aabb {
            min: self.min - Vec3::splat(by),
            max: self.max + Vec3::splat(by),
        }
    }
}

/// The enlarged boxes, by body id, and the tree over them.
#[derive(Clone, Debug, Default)]
pub struct Broadphase {
    fat: Vec<Aabb>,
    leaf: Vec<u32>,
    tree: AabbTree,
}

impl Broadphase {
    /// Makes room for `bodies` bodies without allocating while stepping.
    pub fn reserve(&mut self, bodies: usize) {
        self.tree.reserve(bodies);
    }

    /// Adds room for one more body; it is placed the first time its bounds are given.
    pub fn add_body(&mut self) {
        // An empty box contains nothing, so the body's first bounds always leave it.
        self.fat.push(Aabb::EMPTY);
        self.leaf.push(NO_LEAF);
    }

    /// Body i's enlarged box (empty for a body out of the simulation).
    pub fn fat(&self, i: u32) -> &Aabb {
        &self.fat[i as usize]
    }

    /// Whether body i's enlarged box reaches down to the ground at height `ground`.
    pub fn reaches_ground(&self, i: u32, ground: Option<f32>) -> bool {
        ground.is_some_and(|g| self.fat[i as usize].min.y <= g)
    }

    /// `bounds` is body i's box for this step, or `None` for a body out of the simulation. Returns true when its
    /// enlarged box changed, so its pairs must be found anew.
    pub fn update(&mut self, i: u32, bounds: Option<Aabb>) -> bool {
        let fat = &mut self.fat[i as usize];
        let new = match bounds {
            Some(b) if !fat.contains(&b) => b.grown(FAT_MARGIN_M),
            // Taken out of the simulation: an empty box overlaps nothing.
            None if fat.min.x.is_finite() => Aabb::EMPTY,
            _ => return false,
        };
        *fat = new;
        let leaf = &mut self.leaf[i as usize];
        if *leaf != NO_LEAF {
            self.tree.remove(*leaf);
            *leaf = NO_LEAF;
        }
        if new.min.x.is_finite() {
            *leaf = self.tree.insert(i, new);
        }
        true
    }

    /// Appends to `out` every other body whose enlarged box overlaps body i's.
    pub fn query(&mut self, i: u32, out: &mut Vec<u32>) {
        let fat = self.fat[i as usize];
        if fat.min.x.is_finite() {
            let start = out.len();
            self.tree.query(&fat, out);
            if let Some(k) = out[start..].iter().position(|&j| j == i) {
                out.swap_remove(start + k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_box(c: Vec3) -> Option<Aabb> {
        Some(Aabb {
            min: c - Vec3::splat(0.5),
            max: c + Vec3::splat(0.5),
        })
    }

    fn neighbours(bp: &mut Broadphase, i: u32) -> Vec<u32> {
        let mut out = Vec::new();
        bp.query(i, &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn finds_touching_and_ground_pairs_only() {
        let mut bp = Broadphase::default();
        let centres = [
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.0, 1.5, 0.0),
            Vec3::new(5.0, 0.5, 0.0),
        ];
        for (i, &c) in centres.iter().enumerate() {
            bp.add_body();
            assert!(bp.update(i as u32, unit_box(c)));
        }
        assert_eq!(neighbours(&mut bp, 0), vec![1]);
        assert_eq!(neighbours(&mut bp, 2), Vec::<u32>::new());
        assert!(bp.reaches_ground(0, Some(0.0)) && !bp.reaches_ground(1, Some(0.0)));
        // Nothing moved out of its enlarged box: nothing to redo.
        assert!(!bp.update(0, unit_box(centres[0])));
    }

    #[test]
    fn moving_out_finds_new_neighbours_and_removed_bodies_drop_out() {
        let mut bp = Broadphase::default();
        bp.add_body();
        bp.add_body();
        bp.update(0, unit_box(Vec3::new(0.0, 0.5, 0.0)));
        bp.update(1, unit_box(Vec3::new(3.0, 0.5, 0.0)));
        assert!(neighbours(&mut bp, 0).is_empty());
        assert!(bp.update(1, unit_box(Vec3::new(1.0, 0.5, 0.0))));
        assert_eq!(neighbours(&mut bp, 1), vec![0]);
        assert!(bp.update(1, None));
        assert!(neighbours(&mut bp, 0).is_empty() && neighbours(&mut bp, 1).is_empty());
        assert!(!bp.update(1, None), "already out");
    }
}
