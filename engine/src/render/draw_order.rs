//! The order cubes are drawn in: nearest first, so the depth test rejects the fragments of every box behind one
//! already drawn before they are shaded (drawn back to front, a pile twenty deep shades each pixel twenty times).
//! A counting sort on the distance along the view, in [`DEPTH_BUCKETS`] steps: two passes over the cubes, no
//! comparison, and no allocation once the buffers have grown to the largest frame. The order only makes drawing
//! cheaper — any order draws the same picture — so it is found again only when the view or the cubes have moved
//! enough to spoil it ([`DrawOrder::stale`]), not every frame.

use glam::Vec3;

use super::scene_data::CubeInstance;

/// Distance steps between the nearest and farthest cube: fine enough that cubes in one step rarely hide each other.
const DEPTH_BUCKETS: usize = 1024;
/// The eye moving this far (m) since the last sort sorts again.
const RESORT_EYE_MOVE_M: f32 = 0.25;
/// The view turning past this cosine (about 3°) since the last sort sorts again.
const RESORT_TURN_COS: f32 = 0.9986;
/// Frames in which cubes moved, since the last sort, that sort again.
const RESORT_MOVED_FRAMES: u64 = 15;

/// The draw order of a frame's cubes, and the buffers it is found with.
#[derive(Default)]
pub(crate) struct DrawOrder {
    keys: Vec<u16>,
    order: Vec<u32>,
    starts: Vec<u32>,
    /// What the order was found for: eye, forward, and the cubes' generation (`casters.rs`).
    sorted_for: Option<(Vec3, Vec3, u64)>,
    /// Counts the sorts (a frame slot whose copy of the order is older writes it again).
    pub version: u64,
}

impl DrawOrder {
    /// Room for `cubes` without growing.
    pub fn with_capacity(cubes: usize) -> DrawOrder {
        DrawOrder {
            keys: Vec::with_capacity(cubes),
            order: Vec::with_capacity(cubes),
            starts: vec![0; DEPTH_BUCKETS + 1],
            ..DrawOrder::default()
        }
    }

    /// Whether the order no longer fits: another number of cubes, the eye moved or turned, or the cubes have
    /// changed in [`RESORT_MOVED_FRAMES`] frames since it was found.
    pub fn stale(&self, cubes: usize, eye: Vec3, forward: Vec3, generation: u64) -> bool {
        match self.sorted_for {
            None => true,
            Some((e, f, g)) => {
                cubes != self.order.len()
                    || e.distance(eye) > RESORT_EYE_MOVE_M
                    || f.dot(forward) < RESORT_TURN_COS
                    || generation >= g + RESORT_MOVED_FRAMES
            }
        }
    }

    /// The order last found.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// Sorts again when [`DrawOrder::stale`]; returns the order.
    pub fn update(&mut self, cubes: &[CubeInstance], eye: Vec3, forward: Vec3, generation: u64) -> &[u32] {
        if self.stale(cubes.len(), eye, forward, generation) {
            self.sort(cubes, eye, forward);
            self.sorted_for = Some((eye, forward, generation));
            self.version += 1;
        }
        &self.order
    }

    /// The indices of `cubes`, nearest first along `forward` (a unit vector) from `eye`; equal steps keep their
    /// input order, so the same frame always draws the same way.
    pub fn sort(&mut self, cubes: &[CubeInstance], eye: Vec3, forward: Vec3) -> &[u32] {
        let (mut lo, mut hi) = (f32::MAX, f32::MIN);
        self.keys.clear();
        for c in cubes {
            let d = (c.position - eye).dot(forward);
            lo = lo.min(d);
            hi = hi.max(d);
        }
        let scale = if hi > lo {
            (DEPTH_BUCKETS - 1) as f32 / (hi - lo)
        } else {
            0.0
        };
        self.starts.clear();
        self.starts.resize(DEPTH_BUCKETS + 1, 0);
        for c in cubes {
            // NaN positions land in bucket 0 (`as` saturates); validation reports them elsewhere.
            let k = (((c.position - eye).dot(forward) - lo) * scale) as u16;
            self.keys.push(k);
            self.starts[usize::from(k) + 1] += 1;
        }
        for k in 0..DEPTH_BUCKETS {
            self.starts[k + 1] += self.starts[k];
        }
        self.order.clear();
        self.order.resize(cubes.len(), 0);
        for (i, &k) in self.keys.iter().enumerate() {
            let slot = &mut self.starts[usize::from(k)];
            self.order[*slot as usize] = i as u32;
            *slot += 1;
        }
        &self.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn cube_at(z: f32) -> CubeInstance {
        CubeInstance {
            position: Vec3::new(0.0, 0.5, z),
            rotation: Quat::IDENTITY,
            half_extents: Vec3::splat(0.5),
            colour: [1.0; 3],
            flags: 0,
        }
    }

    #[test]
    fn cubes_come_nearest_first_and_ties_keep_their_order() {
        let cubes: Vec<_> = [-3.0, 5.0, -10.0, 5.0, 0.0].into_iter().map(cube_at).collect();
        let mut order = DrawOrder::with_capacity(8);
        // Looking down -z from z = 8: the cube at z = 5 is nearest.
        let got = order.sort(&cubes, Vec3::new(0.0, 1.0, 8.0), Vec3::NEG_Z).to_vec();
        assert_eq!(got, vec![1, 3, 4, 0, 2]);
        let back = order.sort(&cubes, Vec3::new(0.0, 1.0, -20.0), Vec3::Z).to_vec();
        assert_eq!(back, vec![2, 0, 4, 1, 3]);
        assert!(order.sort(&[], Vec3::ZERO, Vec3::Z).is_empty());
    }

    #[test]
    fn the_order_is_found_again_only_when_the_view_or_the_cubes_have_moved_enough() {
        let cubes: Vec<_> = [-3.0, 5.0, 0.0].into_iter().map(cube_at).collect();
        let mut order = DrawOrder::with_capacity(4);
        let eye = Vec3::new(0.0, 1.0, 8.0);
        order.update(&cubes, eye, Vec3::NEG_Z, 0);
        assert_eq!((order.order(), order.version), (&[1u32, 2, 0][..], 1));
        order.update(&cubes, eye + Vec3::X * 0.1, Vec3::NEG_Z, 3);
        assert_eq!(order.version, 1, "a small step, a few moved frames: kept");
        for (eye, forward, generation, why) in [
            (eye + Vec3::X * 0.3, Vec3::NEG_Z, 0, "the eye moved"),
            (eye, Vec3::new(0.1, 0.0, -1.0).normalize(), 0, "the view turned"),
            (eye, Vec3::NEG_Z, RESORT_MOVED_FRAMES, "the cubes kept moving"),
        ] {
            let mut fresh = DrawOrder::with_capacity(4);
            fresh.update(&cubes, Vec3::new(0.0, 1.0, 8.0), Vec3::NEG_Z, 0);
            assert!(fresh.stale(cubes.len(), eye, forward, generation), "{why}");
        }
        assert!(order.stale(2, eye, Vec3::NEG_Z, 0), "another number of cubes");
    }
}
