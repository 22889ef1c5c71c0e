//! Predicting a remote cube forward: a state from another authority is as old as its trip here, so a cube applied as
//! it arrives runs that many steps behind its authority, and everything it does (a landing, a bounce) is drawn that
//! much late. A moving cube that touches nothing is carried forward by the state's age here, through the same
//! physics its authority runs (a world of that one cube and the ground, quantized before every step as every peer
//! quantizes), and stopped short of anything else it would meet: that meeting is simulated here, with the cubes it
//! meets, as before. A cube resting, held, driven by its player or touching another is applied as it came.
//!
//! The scratch world is made once and reused; it is made again only for a cube of another shape or surface (a
//! scene of one cube size never does). Nothing allocates per prediction.

use glam::{Mat3, Vec3};
use tumble_engine::physics::box_box::overlap_depth;
use tumble_engine::physics::box_plane::OrientedBox;
use tumble_engine::physics::{BodyDesc, BodyId, BodyKind, BodyState, PhysicsError, World};

use crate::sync::codec::quantize::quantize_body_state;

/// The most steps a state is carried forward (a third of a second): a state older than that is applied as it came.
pub const MAX_FORWARD_STEPS: usize = 30;

/// The prediction stops this far (m) short of another body (where that body is now): the meeting is for the full
/// world to simulate, with both. Any farther, and a cube flying just over a pile stops short of it every time and
/// is drawn a step or two behind (7 cm at 6 m/s).
const CLEARANCE_M: f32 = 0.01;

/// A scratch world of one cube and the ground, to carry remote cubes forward in.
pub struct ForwardPrediction {
    world: World,
    /// The shape and surface the scratch cube has: (half extents, mass, friction, restitution).
    shape: (Vec3, f32, f32, f32),
    /// The predicted states, step by step (index 0: the state as it came).
    path: [BodyState; MAX_FORWARD_STEPS + 1],
}

/// A placeholder state for the path before any prediction.
const NOWHERE: BodyState = BodyState {
    position: Vec3::ZERO,
    rotation: glam::Quat::IDENTITY,
    linear_velocity: Vec3::ZERO,
    angular_velocity: Vec3::ZERO,
    at_rest: true,
};

impl ForwardPrediction {
    /// A scratch world of `main`'s configuration (gravity, step, ground, solver settings), on one thread.
    pub fn new(main: &World) -> Result<Self, PhysicsError> {
        Ok(Self {
            world: World::new(*main.config())?,
            shape: (Vec3::ZERO, 0.0, 0.0, 0.0),
            path: [NOWHERE; MAX_FORWARD_STEPS + 1],
        })
    }

    /// The scratch cube takes body `id`'s shape and surface (remade only when they differ from the last cube's).
    fn take_shape_of(&mut self, main: &World, id: BodyId) -> Result<(), PhysicsError> {
        let half = main.half_extents(id)?;
        let mass = main.mass(id)?;
        let (friction, restitution) = main.material(id)?;
        let shape = (half, mass, friction, restitution);
        if shape == self.shape && self.world.body_count() == 1 {
            return Ok(());
        }
        let mut world = World::new(*main.config())?;
        world.add_body(&BodyDesc {
            kind: BodyKind::Dynamic,
            half_extents: half,
            density: mass / (8.0 * half.x * half.y * half.z),
            friction,
            restitution,
            ..BodyDesc::default()
        })?;
        self.world = world;
        self.shape = shape;
        Ok(())
    }

    /// Body `id` of `main` (a remote cube, dynamic and awake, touching no other body) with `state` from its
    /// authority `age` steps ago: the state it has now in its authority's world, as far as the cube alone with the
    /// ground says, stopped short of any other body of `main`. `None` when it would meet one at once (or `age` is
    /// 0 or past [`MAX_FORWARD_STEPS`]): then the state is applied as it came.
    pub fn carry_forward(
        &mut self,
        main: &World,
        id: BodyId,
        state: &BodyState,
        age: u32,
    ) -> Result<Option<BodyState>, PhysicsError> {
        let steps = age as usize;
        if steps == 0 || steps > MAX_FORWARD_STEPS {
            return Ok(None);
        }
        self.take_shape_of(main, id)?;
        let scratch = BodyId(0);
        self.path[0] = *state;
        let mut last = 0;
        for k in 1..=steps {
            // Quantized before every step, as every peer's world is (`Peer::quantize`).
            self.world.set_state(scratch, &quantize_body_state(&self.path[k - 1]))?;
            self.world.step();
            self.path[k] = self.world.state(scratch)?;
            last = k;
            if self.path[k].at_rest {
                break;
            }
        }
        let half = main.half_extents(id)?;
        let clear = self.steps_clear_of_others(main, id, half, last)?;
        if clear == 0 {
            return Ok(None);
        }
        // Awake still: a remote cube rests here when its authority says so.
        Ok(Some(quantize_body_state(&BodyState {
            at_rest: false,
            ..self.path[clear]
        })))
    }

    /// How many steps of the path (1..=`last`) the cube goes before it comes within [`CLEARANCE_M`] of another
    /// body of `main` (where they are now): `last` when it meets none.
    fn steps_clear_of_others(&self, main: &World, id: BodyId, half: Vec3, last: usize) -> Result<usize, PhysicsError> {
        let grown = half + Vec3::splat(CLEARANCE_M);
        let boxes = |k: usize| OrientedBox {
            center: self.path[k].position,
            axes: Mat3::from_quat(self.path[k].rotation),
            half: grown,
        };
        // The bounds the path sweeps: any body outside them is met nowhere on it.
        let reach = grown.length();
        let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for s in &self.path[..=last] {
            lo = lo.min(s.position - Vec3::splat(reach));
            hi = hi.max(s.position + Vec3::splat(reach));
        }
        let mut clear = last;
        for other in main.body_ids() {
            if other == id || main.is_removed(other)? {
                continue;
            }
            let s = main.state(other)?;
            let other_half = main.half_extents(other)?;
            let r = other_half.length();
            if (s.position + Vec3::splat(r)).cmplt(lo).any() || (s.position - Vec3::splat(r)).cmpgt(hi).any() {
                continue;
            }
            let theirs = OrientedBox {
                center: s.position,
                axes: Mat3::from_quat(s.rotation),
                half: other_half,
            };
            // The first step of the path that comes that close; the steps before it are clear.
            if let Some(k) = (0..=clear).find(|&k| overlap_depth(&boxes(k), &theirs) > 0.0) {
                if k == 0 {
                    return Ok(0);
                }
                clear = k - 1;
            }
        }
        Ok(clear)
    }
}
