//! Tumble's [`World`] as a [`Simulation`]: bodies added in scene order (so body index = [`BodyId`]), and the
//! quantize round trip that state sync applies to every body before every step.

use anyhow::{Context, Result};
use glam::Vec3;
use tumble_engine::physics::{BodyDesc, BodyId, BodyState, World, WorldConfig};
use tumble_game::sync::codec::quantize::{dequantize_state, quantize_state};

use crate::runner::Simulation;

pub struct TumbleSim {
    world: World,
}

impl TumbleSim {
    pub fn new(config: WorldConfig, bodies: &[BodyDesc]) -> Result<Self> {
        let mut world = World::new(config).context("creating the Tumble world")?;
        for (i, desc) in bodies.iter().enumerate() {
            let id = world.add_body(desc).with_context(|| format!("adding body {i}"))?;
            debug_assert_eq!(id.index(), i, "ids are dense, in insertion order");
        }
        Ok(Self { world })
    }

    /// Wraps a world already holding its bodies (e.g. from `Scene::build_world`).
    pub fn from_world(world: World) -> Self {
        Self { world }
    }

    pub fn world(&self) -> &World {
        &self.world
    }
}

fn id(index: usize) -> BodyId {
    BodyId(index as u32)
}

impl Simulation for TumbleSim {
    fn body_count(&self) -> usize {
        self.world.body_count()
    }

    fn state(&self, index: usize) -> Result<BodyState> {
        self.world
            .state(id(index))
            .with_context(|| format!("reading body {index}"))
    }

    fn step(&mut self) {
        self.world.step();
    }

    fn last_max_penetration(&self) -> f32 {
        self.world.report().max_penetration
    }

    fn all_at_rest(&self) -> bool {
        self.world.all_at_rest()
    }

    fn half_extents(&self, index: usize) -> Result<Vec3> {
        self.world
            .half_extents(id(index))
            .with_context(|| format!("reading body {index}"))
    }

    fn ground_height(&self) -> Option<f32> {
        self.world.config().ground_height
    }

    /// Every body's state through the wire format and back, written back with `set_state`: exactly what a peer
    /// applying state sync does before each step.
    fn quantize_all(&mut self) -> Result<()> {
        for i in 0..self.world.body_count() {
            let state = self.world.state(id(i)).with_context(|| format!("reading body {i}"))?;
            let round_trip = dequantize_state(&quantize_state(&state));
            self.world
                .set_state(id(i), &round_trip)
                .with_context(|| format!("writing body {i}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{run_bodies, EngineKind, RunOptions};

    #[test]
    fn runs_a_cube_with_and_without_the_quantize_round_trip() {
        let cube = BodyDesc {
            position: Vec3::new(0.0, 1.5, 0.0),
            ..BodyDesc::default()
        };
        for quantize in [false, true] {
            let opts = RunOptions {
                engine: EngineKind::Tumble,
                steps: 200,
                quantize,
                sleep: true,
            };
            let r = run_bodies("one_cube", WorldConfig::default(), &[cube], &opts).unwrap();
            assert_eq!((r.engine, r.bodies, r.quantize), (EngineKind::Tumble, 1, quantize));
            assert!(
                (r.max_displacement_m - 1.0).abs() < 0.05,
                "fell about 1 m: {}",
                r.max_displacement_m
            );
        }
    }
}
