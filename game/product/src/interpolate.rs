//! Poses for drawing between physics steps: the poses after the previous and the last step, blended by the fixed
//! step's leftover fraction, so motion is smooth at any display rate. Buffers are sized once per world.

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyId, World};

/// Every body's pose after the previous step and after the last one, indexed by body id.
#[derive(Clone, Debug, Default)]
pub struct PoseBuffer {
    previous: Vec<(Vec3, Quat)>,
    current: Vec<(Vec3, Quat)>,
}

impl PoseBuffer {
    /// Both ends at the world's present poses (a new or reset world: nothing to blend from).
    pub fn reset(&mut self, world: &World) {
        self.current.clear();
        self.current.extend(world.body_ids().map(|id| pose(world, id)));
        self.previous.clone_from(&self.current);
    }

    /// Call after each step: the last poses become the previous ones.
    pub fn record(&mut self, world: &World) {
        if self.current.len() != world.body_count() {
            self.reset(world);
            return;
        }
        std::mem::swap(&mut self.previous, &mut self.current);
        for (slot, id) in self.current.iter_mut().zip(world.body_ids()) {
            *slot = pose(world, id);
        }
    }

    /// Both ends at `pose(i)` for bodies `0..n` (a networked view shows drawn poses, not the world's).
    pub fn fill_with(&mut self, n: usize, pose: impl Fn(usize) -> (Vec3, Quat)) {
        self.current.clear();
        self.current.extend((0..n).map(pose));
        self.previous.clone_from(&self.current);
    }

    /// Call after each step with `pose(i)` for bodies `0..n`: the last poses become the previous ones.
    pub fn record_with(&mut self, n: usize, pose: impl Fn(usize) -> (Vec3, Quat)) {
        if self.current.len() != n {
            self.fill_with(n, pose);
            return;
        }
        std::mem::swap(&mut self.previous, &mut self.current);
        for (i, slot) in self.current.iter_mut().enumerate() {
            *slot = pose(i);
        }
    }

    pub fn len(&self) -> usize {
        self.current.len()
    }

    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }

    /// Body `index`'s pose `alpha` (0..1) of the way from the previous step to the last.
    pub fn interpolated(&self, index: usize, alpha: f32) -> (Vec3, Quat) {
        let (p0, q0) = self.previous[index];
        let (p1, q1) = self.current[index];
        // Quat::lerp takes the short way round and normalises: right for the small turn of one step.
        (p0.lerp(p1, alpha), q0.lerp(q1, alpha))
    }
}

fn pose(world: &World, id: BodyId) -> (Vec3, Quat) {
    world
        .state(id)
        .map(|s| (s.position, s.rotation))
        .unwrap_or((Vec3::ZERO, Quat::IDENTITY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::{BodyDesc, WorldConfig};

    #[test]
    fn blends_between_the_last_two_steps() {
        let mut world = World::new(WorldConfig::default()).unwrap();
        world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 10.0, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        let mut poses = PoseBuffer::default();
        poses.reset(&world);
        assert_eq!(poses.interpolated(0, 0.7).0.y, 10.0);
        world.step();
        let y0 = world.state(BodyId(0)).unwrap().position.y;
        poses.record(&world);
        world.step();
        let y1 = world.state(BodyId(0)).unwrap().position.y;
        poses.record(&world);
        assert_eq!(poses.interpolated(0, 0.0).0.y, y0);
        assert_eq!(poses.interpolated(0, 1.0).0.y, y1);
        let mid = poses.interpolated(0, 0.5).0.y;
        assert!((mid - (y0 + y1) / 2.0).abs() < 1e-6);
    }
}
