//! The 2015 demo's picture of interaction: a cube the player touches takes the player's colour, passes it on to
//! the cubes it touches, and goes back to grey once at rest. Driven by the world's contact report after each step;
//! one pass in report order (deterministic), so a colour spreads at most one contact per step through cubes that
//! touch in a chain.

use tumble_engine::physics::{BodyId, PhysicsError, World};

/// No player's colour.
pub const GREY: u8 = 0;

/// Colour per body: [`GREY`] or a player number (1 = the first player).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Colours {
    colour: Vec<u8>,
}

impl Colours {
    /// Every body grey except each player's cube, which is its player's colour.
    pub fn new(bodies: usize, players: &[BodyId]) -> Self {
        let mut colour = vec![GREY; bodies];
        for (p, id) in players.iter().enumerate() {
            colour[id.index()] = p as u8 + 1;
        }
        Self { colour }
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.colour
    }

    /// Spreads colours over this step's contacts, then greys the cubes at rest. A player's cube colours what it
    /// touches whatever colour that had; a coloured cube colours only grey ones (first touch keeps it).
    pub fn update(&mut self, world: &World, players: &[BodyId]) -> Result<(), PhysicsError> {
        for c in &world.report().contacts {
            let Some(b) = c.b else { continue };
            let (a, b) = (c.a.index(), b.index());
            self.spread(a, b, players);
            self.spread(b, a, players);
        }
        for i in 0..self.colour.len() {
            let id = BodyId(i as u32);
            if self.colour[i] != GREY && !players.contains(&id) {
                let gone = world.is_removed(id)?;
                if gone || world.state(id)?.at_rest {
                    self.colour[i] = GREY;
                }
            }
        }
        Ok(())
    }

    fn spread(&mut self, from: usize, to: usize, players: &[BodyId]) {
        let to_is_player = players.iter().any(|p| p.index() == to);
        if to_is_player || self.colour[from] == GREY {
            return;
        }
        let from_is_player = players.iter().any(|p| p.index() == from);
        if from_is_player || self.colour[to] == GREY {
            self.colour[to] = self.colour[from];
        }
    }

    /// Coloured cubes that are not players' (for reports and tests).
    pub fn coloured_count(&self, players: &[BodyId]) -> usize {
        (0..self.colour.len())
            .filter(|&i| self.colour[i] != GREY && !players.iter().any(|p| p.index() == i))
            .count()
    }
}
