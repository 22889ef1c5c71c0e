//! The 2015 cube game: a player cube larger than the rest rolls over a field of small cubes, hovers on a spring
//! and blows them away, or pulls them into a ball round itself (katamari). Cubes it touches take its colour and
//! pass it on; they go grey again at rest. It is the world every network model of `tumble compare` plays.
//!
//! - [`input`]: `CubeInput`, one player's six keys for one step (all a step needs from a player).
//! - [`forces`]: what an input does to the world, as impulses through `World::apply_impulse`.
//! - [`colour`]: the per-cube colour array, driven by the world's contact report.
//! - [`bot`]: a seeded bot whose inputs depend on the seed and step only.
//!
//! [`CubeGame`] adds the player cubes to a scene's world and runs a step: inputs → forces → `World::step` →
//! colours. Same world, same inputs, same build → same bits ([`CubeGame::checksum`]).

pub mod bot;
pub mod colour;
pub mod forces;
pub mod input;

use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyDesc, BodyId, PhysicsError, World};

pub use bot::CubeBot;
pub use colour::Colours;
pub use input::CubeInput;

/// Players of one game (the lockstep slice has two).
pub const MAX_PLAYERS: usize = 4;
/// Half the player cube's edge (m): a 1.6 m cube among the scene's 1 m ones (the solver takes any box size).
pub const PLAYER_HALF_EXTENT_M: f32 = 0.8;
/// Player cube density (kg/m³): twice a field cube's, so it ploughs through them (8.2 kg against their 1 kg).
pub const PLAYER_DENSITY_KG_M3: f32 = 2.0;
/// How far outside the field's edge (its bodies' bounding box) each player starts (m, to the player's centre).
pub const SPAWN_MARGIN_M: f32 = 3.0;

/// The game state on top of the world: which bodies are the players', where each player faces, the colours.
#[derive(Clone, Debug)]
pub struct CubeGame {
    players: Vec<BodyId>,
    /// Each player's forward direction on the ground (unit): its view faces the field's centre.
    forward: Vec<Vec3>,
    colours: Colours,
}

impl CubeGame {
    /// Adds `players` player cubes to `world` (a scene's field), outside the field's edges facing in: player 1 on
    /// the −z side, player 2 on the +z side, 3 and 4 on −x and +x. Call it on every copy of the world alike.
    pub fn new(world: &mut World, players: usize) -> Result<Self, PhysicsError> {
        if !(1..=MAX_PLAYERS).contains(&players) {
            return Err(PhysicsError::OutOfRange {
                field: "players",
                value: players as f32,
                min: 1.0,
                max: MAX_PLAYERS as f32,
            });
        }
        let (min, max) = field_bounds(world)?;
        let centre = (min + max) * 0.5;
        let y = world.config().ground_height.unwrap_or(0.0) + PLAYER_HALF_EXTENT_M;
        let sides = [
            (Vec3::new(centre.x, y, min.z - SPAWN_MARGIN_M), Vec3::Z),
            (Vec3::new(centre.x, y, max.z + SPAWN_MARGIN_M), -Vec3::Z),
            (Vec3::new(min.x - SPAWN_MARGIN_M, y, centre.z), Vec3::X),
            (Vec3::new(max.x + SPAWN_MARGIN_M, y, centre.z), -Vec3::X),
        ];
        let mut ids = Vec::with_capacity(players);
        let mut forward = Vec::with_capacity(players);
        for &(position, facing) in &sides[..players] {
            ids.push(world.add_body(&BodyDesc {
                half_extents: Vec3::splat(PLAYER_HALF_EXTENT_M),
                density: PLAYER_DENSITY_KG_M3,
                position,
                rotation: Quat::IDENTITY,
                ..BodyDesc::default()
            })?);
            forward.push(facing);
        }
        let colours = Colours::new(world.body_count(), &ids);
        Ok(Self {
            players: ids,
            forward,
            colours,
        })
    }

    pub fn players(&self) -> &[BodyId] {
        &self.players
    }

    /// Player `p` + 1's facing on the ground (unit): the way its forward key rolls it.
    pub fn forward(&self, p: usize) -> Option<Vec3> {
        self.forward.get(p).copied()
    }

    /// Colour per body (0 grey, else the player number).
    pub fn colours(&self) -> &[u8] {
        self.colours.as_slice()
    }

    pub fn coloured_count(&self) -> usize {
        self.colours.coloured_count(&self.players)
    }

    /// One step: each player's input (`inputs[p]` for player p + 1; missing players idle) becomes impulses, the
    /// world steps, the colours follow the contacts.
    pub fn step(&mut self, world: &mut World, inputs: &[CubeInput]) -> Result<(), PhysicsError> {
        for (p, &id) in self.players.iter().enumerate() {
            let input = inputs.get(p).copied().unwrap_or_default();
            forces::apply_input(world, id, self.forward[p], input, &self.players, |_| true)?;
        }
        world.step();
        self.colours.update(world, &self.players)
    }

    /// The cubes other than the players' that player `p`'s (0-based) input would push this step, in id order,
    /// appended to `out`: what the authority model's peer claims before it pushes.
    pub fn pushed_by(
        &self,
        world: &World,
        p: usize,
        input: CubeInput,
        out: &mut Vec<BodyId>,
    ) -> Result<(), PhysicsError> {
        match self.players.get(p) {
            Some(&id) => forces::pushed_cubes(world, id, input, &self.players, out),
            None => Ok(()),
        }
    }

    /// Player `p`'s (0-based) forces alone, on its own cube and the other cubes `may_push` allows: the authority
    /// model, where each peer pushes with its own player's input only, and only what it simulates for everyone.
    pub fn push_one(
        &self,
        world: &mut World,
        p: usize,
        input: CubeInput,
        may_push: impl FnMut(BodyId) -> bool,
    ) -> Result<(), PhysicsError> {
        match self.players.get(p) {
            Some(&id) => forces::apply_input(world, id, self.forward[p], input, &self.players, may_push),
            None => Ok(()),
        }
    }

    /// The colours after a step someone else ran (the authority model's peers step their worlds themselves).
    pub fn update_colours(&mut self, world: &World) -> Result<(), PhysicsError> {
        self.colours.update(world, &self.players)
    }

    /// The world's checksum with the colours folded in (FNV-1a): equal checksums, identical games.
    pub fn checksum(&self, world: &World) -> u64 {
        let mut h = world.checksum();
        for &c in self.colours.as_slice() {
            h = (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3);
        }
        h
    }
}

/// The smallest box holding every body's centre.
fn field_bounds(world: &World) -> Result<(Vec3, Vec3), PhysicsError> {
    let (mut min, mut max) = (Vec3::ZERO, Vec3::ZERO);
    for i in 0..world.body_count() as u32 {
        let p = world.state(BodyId(i))?.position;
        (min, max) = if i == 0 { (p, p) } else { (min.min(p), max.max(p)) };
    }
    Ok((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tumble_engine::physics::WorldConfig;
    use tumble_engine::scene::parse_scene;

    /// A small field: 6 × 6 cubes 2 m apart.
    pub(crate) fn small_field() -> World {
        let text =
            "name = \"field36\"\n[[grid]]\norigin = [-5.0, 0.5, -5.0]\ncount = [6, 1, 6]\nspacing = [2.0, 2.0, 2.0]\n";
        parse_scene(text, "field36.toml")
            .unwrap()
            .build_world(WorldConfig::default())
            .unwrap()
    }

    fn play(steps: usize, seed: u64) -> (World, CubeGame, usize) {
        let mut world = small_field();
        let mut game = CubeGame::new(&mut world, 2).unwrap();
        let mut bots = [CubeBot::new(seed), CubeBot::new(seed + 1)];
        let mut most_coloured = 0;
        for _ in 0..steps {
            let inputs = bots.each_mut().map(|b| b.next_input());
            game.step(&mut world, &inputs).unwrap();
            most_coloured = most_coloured.max(game.coloured_count());
        }
        (world, game, most_coloured)
    }

    #[test]
    fn players_start_outside_the_field_facing_in_and_are_larger() {
        let mut world = small_field();
        let game = CubeGame::new(&mut world, 2).unwrap();
        let [a, b] = [game.players()[0], game.players()[1]];
        assert_eq!(world.half_extents(a).unwrap(), Vec3::splat(PLAYER_HALF_EXTENT_M));
        assert!(world.state(a).unwrap().position.z < -5.0 && world.state(b).unwrap().position.z > 5.0);
        assert_eq!(game.colours()[a.index()], 1);
        assert_eq!(game.colours()[b.index()], 2);
        assert!(CubeGame::new(&mut world, 5).is_err());
    }

    #[test]
    fn rolling_forward_moves_the_player_into_the_field() {
        let mut world = small_field();
        let mut game = CubeGame::new(&mut world, 1).unwrap();
        let id = game.players()[0];
        let start = world.state(id).unwrap().position;
        let forward = CubeInput::from_bits(CubeInput::FORWARD);
        for _ in 0..90 {
            game.step(&mut world, &[forward]).unwrap();
        }
        let moved = world.state(id).unwrap().position - start;
        assert!(moved.z > 2.0, "rolled {moved}");
    }

    #[test]
    fn hovering_lifts_the_player_and_blows_cubes_away_and_pull_gathers_them() {
        let mut world = small_field();
        let mut game = CubeGame::new(&mut world, 1).unwrap();
        let id = game.players()[0];
        let forward = CubeInput::from_bits(CubeInput::FORWARD);
        for _ in 0..120 {
            game.step(&mut world, &[forward]).unwrap();
        }
        // The cubes within the blow's reach, and how far each is from the player across the ground.
        let centre = world.state(id).unwrap().position;
        let across = |p: Vec3| Vec3::new(p.x - centre.x, 0.0, p.z - centre.z).length();
        let reach: Vec<(BodyId, f32)> = (0..world.body_count() as u32)
            .map(BodyId)
            .filter(|&c| c != id)
            .map(|c| (c, across(world.state(c).unwrap().position)))
            .filter(|&(_, d)| d < forces::BLOW_RADIUS_M - 1.0)
            .collect();
        assert!(reach.len() >= 4, "only {} cubes in reach", reach.len());
        let hover = CubeInput::from_bits(CubeInput::HOVER);
        let mut highest = 0.0f32;
        for _ in 0..90 {
            game.step(&mut world, &[hover]).unwrap();
            highest = highest.max(world.state(id).unwrap().position.y);
        }
        assert!(highest > forces::HOVER_HEIGHT_M - 0.5, "hovered at {highest} m");
        // The blow pushed the cubes in reach away from where the player rose (not merely disturbed them).
        let pushed_away = reach
            .iter()
            .filter(|&&(c, before)| across(world.state(c).unwrap().position) > before + 0.25)
            .count();
        assert!(
            pushed_away * 2 >= reach.len(),
            "{pushed_away} of {} cubes in reach blown away",
            reach.len()
        );
        let pull = CubeInput::from_bits(CubeInput::PULL);
        for _ in 0..180 {
            game.step(&mut world, &[pull]).unwrap();
        }
        let centre = world.state(id).unwrap().position;
        let near = (0..world.body_count() as u32)
            .map(BodyId)
            .filter(|&c| c != id && world.state(c).unwrap().position.distance(centre) < 2.0)
            .count();
        assert!(near >= 2, "{near} cubes gathered round the player");
    }

    #[test]
    fn colours_spread_from_the_player_and_fade_at_rest() {
        let (world, game, most) = play(1800, 5);
        assert!(most >= 3, "at most {most} cubes were ever coloured");
        for i in 0..world.body_count() as u32 {
            let id = BodyId(i);
            if !game.players().contains(&id) && world.state(id).unwrap().at_rest {
                assert_eq!(
                    game.colours()[id.index()],
                    colour::GREY,
                    "cube {i} at rest and coloured"
                );
            }
        }
    }

    /// What `pushed_by` lists is exactly what `push_one` then pushes, blow and pull together; and what `may_push`
    /// refuses is not pushed.
    #[test]
    fn the_cubes_listed_as_pushed_are_the_cubes_the_input_pushes() {
        let mut world = small_field();
        let game = CubeGame::new(&mut world, 1).unwrap();
        let forward = CubeInput::from_bits(CubeInput::FORWARD);
        let mut g = game.clone();
        for _ in 0..150 {
            g.step(&mut world, &[forward]).unwrap();
        }
        let input = CubeInput::from_bits(CubeInput::HOVER | CubeInput::PULL);
        let mut listed = Vec::new();
        game.pushed_by(&world, 0, input, &mut listed).unwrap();
        assert!(listed.len() >= 2, "{listed:?}");
        let moved = |refused: Option<BodyId>| {
            let mut w = world.clone();
            let before: Vec<_> = (0..w.body_count() as u32)
                .map(|i| w.state(BodyId(i)).unwrap())
                .collect();
            game.push_one(&mut w, 0, input, |id| Some(id) != refused).unwrap();
            (0..w.body_count() as u32)
                .map(BodyId)
                .filter(|&id| id != game.players()[0])
                .filter(|&id| w.state(id).unwrap().linear_velocity != before[id.index()].linear_velocity)
                .collect::<Vec<_>>()
        };
        assert_eq!(moved(None), listed);
        let without_first = moved(Some(listed[0]));
        assert_eq!(without_first, listed[1..]);
    }

    #[test]
    fn the_same_inputs_give_the_same_bits() {
        let (wa, ga, _) = play(900, 9);
        let (wb, gb, _) = play(900, 9);
        assert_eq!(ga.checksum(&wa), gb.checksum(&wb));
        let (wc, gc, _) = play(900, 10);
        assert_ne!(ga.checksum(&wa), gc.checksum(&wc));
    }
}
