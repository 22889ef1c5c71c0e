//! Tumble's [`World`] as a [`Simulation`]: bodies added in scene order (so body index = [`BodyId`]), and the
//! quantize round trip that state sync applies to every body before every step; and [`KatamariSim`], the 2015
//! cube game's katamari ball rolling through a field (Tumble only: the push is the game's own code on `World`).

use anyhow::{Context, Result};
use glam::Vec3;
use tumble_engine::physics::{BodyDesc, BodyId, BodyState, World, WorldConfig};
use tumble_game::cube_game::{forces, CubeGame, CubeInput};
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

/// The 2015 cube game's katamari ball: one player cube (1.6 m, twice a field cube's density) added outside the
/// field's −z edge by [`CubeGame::new`], facing the field, and held on forward and pull every step, so it rolls
/// into the field pulling every cube within 4.5 m of it into a ball round itself. Its pushes (the game's
/// `forces::apply_input`, a scan of every cube) are given in `before_step`, outside the timed region; `step` is
/// `World::step` alone, as for every other scene.
pub struct KatamariSim {
    sim: TumbleSim,
    game: CubeGame,
}

/// What the player holds every step: roll forward, pull.
const KATAMARI_INPUT: CubeInput = CubeInput::from_bits(CubeInput::FORWARD | CubeInput::PULL);

impl KatamariSim {
    /// The field's world (e.g. cubes900's, from `Scene::build_world`), to which the player cube is added last.
    pub fn new(mut world: World) -> Result<Self> {
        let game = CubeGame::new(&mut world, 1).context("adding the player cube")?;
        Ok(Self {
            sim: TumbleSim::from_world(world),
            game,
        })
    }

    /// Cubes within the pull's reach of the player now (the ball and what it is about to take).
    pub fn cubes_in_reach(&self) -> Result<usize> {
        let world = self.sim.world();
        let player = self.game.players()[0];
        let centre = world.state(player)?.position;
        let mut n = 0;
        for id in world.body_ids() {
            if id != player && world.state(id)?.position.distance(centre) < forces::PULL_RADIUS_M {
                n += 1;
            }
        }
        Ok(n)
    }
}

impl Simulation for KatamariSim {
    fn body_count(&self) -> usize {
        self.sim.body_count()
    }

    fn state(&self, index: usize) -> Result<BodyState> {
        self.sim.state(index)
    }

    fn before_step(&mut self) -> Result<()> {
        let player = self.game.players()[0];
        let forward = self.game.forward(0).context("the player's facing")?;
        let players = [player];
        forces::apply_input(&mut self.sim.world, player, forward, KATAMARI_INPUT, &players, |_| true)
            .context("the player's pushes")
    }

    fn step(&mut self) {
        self.sim.step();
    }

    fn last_max_penetration(&self) -> f32 {
        self.sim.last_max_penetration()
    }

    fn all_at_rest(&self) -> bool {
        self.sim.all_at_rest()
    }

    fn half_extents(&self, index: usize) -> Result<Vec3> {
        self.sim.half_extents(index)
    }

    fn ground_height(&self) -> Option<f32> {
        self.sim.ground_height()
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

    #[test]
    fn the_katamari_ball_gathers_cubes() {
        // Three rows of cubes in the player's way, 2 m apart as in cubes900.
        let mut world = World::new(WorldConfig::default()).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let desc = BodyDesc {
                    position: Vec3::new(2.0 * i as f32 - 2.0, 0.5, 2.0 * j as f32 - 2.0),
                    ..BodyDesc::default()
                };
                world.add_body(&desc).unwrap();
            }
        }
        let mut sim = KatamariSim::new(world).unwrap();
        assert_eq!(sim.body_count(), 10, "nine cubes and the player");
        let before = sim.cubes_in_reach().unwrap();
        for _ in 0..120 {
            sim.before_step().unwrap();
            sim.step();
        }
        let after = sim.cubes_in_reach().unwrap();
        assert!(after > before, "the ball took cubes: {before} → {after}");
    }
}
