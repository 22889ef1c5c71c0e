//! Which bodies may touch. Each body owns an enlarged box (its bounds grown by its motion this step, the
//! speculative distance and a fixed [`FAT_MARGIN_M`]); pairs are found by sort and sweep over those boxes along the
//! axis where bodies are most spread out. The pair list is rebuilt only when some body leaves its enlarged box, so a
//! settled pile costs one containment test per body per step.

use glam::Vec3;

/// Extra room around each body's bounds, so small motions don't rebuild the pair list (metres).
pub const FAT_MARGIN_M: f32 = 0.1;
/// Pair partner that stands for the ground plane.
pub const GROUND: u32 = u32::MAX;

/// An axis-aligned box.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Aabb {
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

/// Candidate pairs `(a, b)` with `a < b` (the ground is `GROUND`, after every body), sorted.
#[derive(Clone, Debug, Default)]
pub struct Broadphase {
    fat: Vec<Aabb>,
    order: Vec<u32>,
    pairs: Vec<(u32, u32)>,
}

impl Broadphase {
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }

    /// Makes room for `pairs` pairs without allocating while stepping.
    pub fn reserve(&mut self, pairs: usize) {
        self.pairs.reserve(pairs.saturating_sub(self.pairs.len()));
    }

    /// Adds room for one more body; it is placed on the next [`update`](Self::update).
    pub fn add_body(&mut self) {
        // An empty box that contains nothing forces a rebuild when the body is first seen.
        self.fat.push(Aabb {
            min: Vec3::splat(f32::INFINITY),
            max: Vec3::splat(f32::NEG_INFINITY),
        });
        self.order.push(self.fat.len() as u32 - 1);
    }

    /// `bounds[i]` is body i's box for this step, or `None` for a body out of the simulation. Returns true when the
    /// pair list was rebuilt. `ground` is the ground plane's height, if there is one.
    pub fn update(&mut self, bounds: &[Option<Aabb>], ground: Option<f32>) -> bool {
        let mut rebuild = false;
        for (fat, b) in self.fat.iter_mut().zip(bounds) {
            match b {
                Some(b) if !fat.contains(b) => {
                    *fat = b.grown(FAT_MARGIN_M);
                    rebuild = true;
                }
                None if fat.min.x.is_finite() => {
                    // Taken out of the simulation: an empty box overlaps nothing.
                    *fat = Aabb {
                        min: Vec3::splat(f32::INFINITY),
                        max: Vec3::splat(f32::NEG_INFINITY),
                    };
                    rebuild = true;
                }
                _ => {}
            }
        }
        if rebuild {
            self.rebuild(ground);
        }
        rebuild
    }

    fn rebuild(&mut self, ground: Option<f32>) {
        let axis = self.sweep_axis();
        let fat = &self.fat;
        self.order.sort_unstable_by(|&i, &j| {
            fat[i as usize].min[axis]
                .total_cmp(&fat[j as usize].min[axis])
                .then(i.cmp(&j))
        });
        self.pairs.clear();
        for (k, &i) in self.order.iter().enumerate() {
            let a = &fat[i as usize];
            if !a.min.x.is_finite() {
                continue;
            }
            if ground.is_some_and(|g| a.min.y <= g) {
                self.pairs.push((i, GROUND));
            }
            for &j in &self.order[k + 1..] {
                let b = &fat[j as usize];
                if b.min[axis] > a.max[axis] {
                    break;
                }
                if a.overlaps(b) {
                    self.pairs.push((i.min(j), i.max(j)));
                }
            }
        }
        self.pairs.sort_unstable();
    }

    /// The axis along which the boxes' centres vary most, so the sweep meets the fewest candidates.
    fn sweep_axis(&self) -> usize {
        let (mut sum, mut sum2, mut n) = (Vec3::ZERO, Vec3::ZERO, 0.0f32);
        for b in self.fat.iter().filter(|b| b.min.x.is_finite()) {
            let c = (b.min + b.max) * 0.5;
            sum += c;
            sum2 += c * c;
            n += 1.0;
        }
        if n == 0.0 {
            return 0;
        }
        let var = sum2 / n - (sum / n) * (sum / n);
        if var.x >= var.y && var.x >= var.z {
            0
        } else if var.y >= var.z {
            1
        } else {
            2
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

    #[test]
    fn finds_touching_and_ground_pairs_only() {
        let mut bp = Broadphase::default();
        let centres = [
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.0, 1.5, 0.0),
            Vec3::new(5.0, 0.5, 0.0),
        ];
        for _ in centres {
            bp.add_body();
        }
        let bounds: Vec<_> = centres.iter().map(|&c| unit_box(c)).collect();
        assert!(bp.update(&bounds, Some(0.0)));
        assert_eq!(bp.pairs(), &[(0, 1), (0, GROUND), (2, GROUND)]);
        // Nothing moved out of its enlarged box: no rebuild.
        assert!(!bp.update(&bounds, Some(0.0)));
    }

    #[test]
    fn moving_out_rebuilds_and_removed_bodies_drop_out() {
        let mut bp = Broadphase::default();
        bp.add_body();
        bp.add_body();
        let mut bounds = vec![unit_box(Vec3::new(0.0, 0.5, 0.0)), unit_box(Vec3::new(3.0, 0.5, 0.0))];
        bp.update(&bounds, None);
        assert!(bp.pairs().is_empty());
        bounds[1] = unit_box(Vec3::new(1.0, 0.5, 0.0));
        assert!(bp.update(&bounds, None));
        assert_eq!(bp.pairs(), &[(0, 1)]);
        bounds[1] = None;
        assert!(bp.update(&bounds, None));
        assert!(bp.pairs().is_empty());
    }
}
