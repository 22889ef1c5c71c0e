//! A dynamic bounding-volume tree over the bodies' enlarged boxes (Box2D's `b2DynamicTree`, without rotations):
//! leaves are bodies, each inner node bounds its two children. A box that moves is taken out and put back in
//! O(depth), and a query visits only the branches its box overlaps, so finding one moving body's neighbours costs
//! nothing per resting body. Every operation depends only on the order of the calls, which the world makes in
//! body-id order: the tree, and so everything found in it, is the same on every run.

use super::broadphase::Aabb;
use super::contact::clone_with_capacity;

/// No node.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    aabb: Aabb,
    parent: u32,
    /// Both `NONE` for a leaf.
    children: [u32; 2],
    /// The body of a leaf.
    body: u32,
}

#[derive(Debug)]
pub struct AabbTree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    stack: Vec<u32>,
}

impl Clone for AabbTree {
    fn clone(&self) -> Self {
        AabbTree {
            nodes: clone_with_capacity(&self.nodes),
            free: clone_with_capacity(&self.free),
            root: self.root,
            stack: clone_with_capacity(&self.stack),
        }
    }
}

impl Default for AabbTree {
    fn default() -> Self {
        AabbTree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NONE,
            stack: Vec::new(),
        }
    }
}

/// Surface area of a box: what the insertion heuristic minimises.
fn area(b: &Aabb) -> f32 {
    let d = b.max - b.min;
    2.0 * (d.x * d.y + d.y * d.z + d.z * d.x)
}

fn union(a: &Aabb, b: &Aabb) -> Aabb {
    Aabb {
        min: a.min.min(b.min),
        max: a.max.max(b.max),
    }
}

impl AabbTree {
    /// Makes room for `leaves` leaves without allocating while stepping.
    pub fn reserve(&mut self, leaves: usize) {
        let nodes = 2 * leaves;
        self.nodes.reserve(nodes.saturating_sub(self.nodes.len()));
        self.free.reserve(nodes.saturating_sub(self.free.len()));
        self.stack.reserve(nodes.saturating_sub(self.stack.len()));
    }

    fn is_leaf(&self, n: u32) -> bool {
        self.nodes[n as usize].children[0] == NONE
    }

    fn allocate(&mut self, node: Node) -> u32 {
        match self.free.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() as u32 - 1
            }
        }
    }

    /// Adds a leaf for `body` with box `aabb` (finite); returns the leaf's node.
    pub fn insert(&mut self, body: u32, aabb: Aabb) -> u32 {
        let leaf = self.allocate(Node {
            aabb,
            parent: NONE,
            children: [NONE; 2],
            body,
        });
        if self.root == NONE {
            self.root = leaf;
            return leaf;
        }
        let sibling = self.best_sibling(&aabb);
        let old_parent = self.nodes[sibling as usize].parent;
        let parent = self.allocate(Node {
            aabb: union(&aabb, &self.nodes[sibling as usize].aabb),
            parent: old_parent,
            children: [sibling, leaf],
            body: NONE,
        });
        self.nodes[sibling as usize].parent = parent;
        self.nodes[leaf as usize].parent = parent;
        if old_parent == NONE {
            self.root = parent;
        } else {
            let p = &mut self.nodes[old_parent as usize];
            let k = usize::from(p.children[1] == sibling);
            p.children[k] = parent;
        }
        self.refit(old_parent);
        leaf
    }

    /// The node the new box should pair with: down from the root, stopping where pairing costs less (in added
    /// surface area) than descending into either child (Box2D v2's insertion heuristic).
    fn best_sibling(&self, aabb: &Aabb) -> u32 {
        let mut index = self.root;
        while !self.is_leaf(index) {
            let node = &self.nodes[index as usize];
            let combined = area(&union(&node.aabb, aabb));
            let cost = 2.0 * combined;
            let inheritance = 2.0 * (combined - area(&node.aabb));
            let child_cost = |c: u32| {
                let child = &self.nodes[c as usize].aabb;
                let grown = area(&union(child, aabb));
                let own = if self.is_leaf(c) { grown } else { grown - area(child) };
                own + inheritance
            };
            let [c1, c2] = node.children;
            let (cost1, cost2) = (child_cost(c1), child_cost(c2));
            if cost < cost1 && cost < cost2 {
                break;
            }
            index = if cost1 <= cost2 { c1 } else { c2 };
        }
        index
    }

    /// Recomputes the boxes from `n` up to the root.
    fn refit(&mut self, mut n: u32) {
        while n != NONE {
            let [c1, c2] = self.nodes[n as usize].children;
            self.nodes[n as usize].aabb = union(&self.nodes[c1 as usize].aabb, &self.nodes[c2 as usize].aabb);
            n = self.nodes[n as usize].parent;
        }
    }

    /// Takes leaf `leaf` out of the tree.
    pub fn remove(&mut self, leaf: u32) {
        self.free.push(leaf);
        if leaf == self.root {
            self.root = NONE;
            return;
        }
        let parent = self.nodes[leaf as usize].parent;
        let p = self.nodes[parent as usize];
        let sibling = if p.children[0] == leaf {
            p.children[1]
        } else {
            p.children[0]
        };
        self.free.push(parent);
        self.nodes[sibling as usize].parent = p.parent;
        if p.parent == NONE {
            self.root = sibling;
        } else {
            let g = &mut self.nodes[p.parent as usize];
            let k = usize::from(g.children[1] == parent);
            g.children[k] = sibling;
            self.refit(p.parent);
        }
    }

    /// Appends to `out` the body of every leaf whose box overlaps `aabb`.
    pub fn query(&mut self, aabb: &Aabb, out: &mut Vec<u32>) {
        if self.root == NONE {
            return;
        }
        self.stack.clear();
        self.stack.push(self.root);
        while let Some(n) = self.stack.pop() {
            let node = &self.nodes[n as usize];
            if !node.aabb.overlaps(aabb) {
                continue;
            }
            if node.children[0] == NONE {
                out.push(node.body);
            } else {
                self.stack.extend_from_slice(&node.children);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn unit_box(c: Vec3) -> Aabb {
        Aabb {
            min: c - Vec3::splat(0.5),
            max: c + Vec3::splat(0.5),
        }
    }

    #[test]
    fn finds_exactly_the_overlapping_leaves_after_moves_and_removals() {
        let mut tree = AabbTree::default();
        let mut leaves = Vec::new();
        let mut boxes = Vec::new();
        for k in 0..50u32 {
            let b = unit_box(Vec3::new((k % 7) as f32 * 0.9, (k / 7) as f32 * 0.9, 0.0));
            leaves.push(tree.insert(k, b));
            boxes.push(Some(b));
        }
        for k in (0..50).step_by(3) {
            tree.remove(leaves[k]);
            boxes[k] = None;
        }
        for k in (1..50).step_by(5) {
            if boxes[k].is_some() {
                tree.remove(leaves[k]);
                let b = unit_box(Vec3::new(k as f32 * 0.3, 2.0, 0.4));
                leaves[k] = tree.insert(k as u32, b);
                boxes[k] = Some(b);
            }
        }
        for probe in [unit_box(Vec3::new(2.0, 2.0, 0.0)), unit_box(Vec3::new(9.0, 9.0, 9.0))] {
            let mut found = Vec::new();
            tree.query(&probe, &mut found);
            found.sort_unstable();
            let expected: Vec<u32> = (0..50u32)
                .filter(|&k| boxes[k as usize].is_some_and(|b| b.overlaps(&probe)))
                .collect();
            assert_eq!(found, expected);
        }
    }
}
