//! A seeded bot that plays the cube game: it rolls in straight runs of random length and direction, hovers and
//! pulls at intervals. Its inputs depend on the seed and the step count only, never on the world, so every network
//! model and every scene is driven by the very same input stream. It keeps near where it started by dead reckoning:
//! it counts the steps it held each direction and, once they add up to too far one way, heads back.

use tumble_net::rng::Rng;

use super::input::CubeInput;

/// A run lasts this many steps at least, and up to this many more (90 steps a second).
const RUN_MIN_STEPS: u32 = 45;
const RUN_EXTRA_STEPS: usize = 135;
/// The first run heads forward (into the field) for this long.
const FIRST_RUN_STEPS: u32 = 160;
/// Once the held directions add up to this many steps one way, the next run heads back.
const HOME_LIMIT_STEPS: i32 = 420;
/// Chance a run hovers, and that it pulls (percent).
const HOVER_PCT: f64 = 15.0;
const PULL_PCT: f64 = 30.0;
/// Chance a run holds no direction (percent).
const IDLE_PCT: f64 = 10.0;

#[derive(Clone, Debug)]
pub struct CubeBot {
    rng: Rng,
    input: CubeInput,
    run_left: u32,
    /// Steps held right minus left, forward minus back: where dead reckoning puts it.
    reckoned: (i32, i32),
    first: bool,
}

impl CubeBot {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed ^ 0x0C0B_EB07),
            input: CubeInput::NONE,
            run_left: 0,
            reckoned: (0, 0),
            first: true,
        }
    }

    /// The input for the next step.
    pub fn next_input(&mut self) -> CubeInput {
        if self.run_left == 0 {
            self.start_run();
        }
        self.run_left -= 1;
        let (x, y) = self.input.direction();
        self.reckoned.0 += x;
        self.reckoned.1 += y;
        self.input
    }

    fn start_run(&mut self) {
        if self.first {
            self.first = false;
            self.run_left = FIRST_RUN_STEPS;
            self.input = CubeInput::from_bits(CubeInput::FORWARD);
            return;
        }
        self.run_left = RUN_MIN_STEPS + self.rng.below(RUN_EXTRA_STEPS) as u32;
        let (rx, ry) = self.reckoned;
        let (x, y) = if rx.abs() > HOME_LIMIT_STEPS || ry.abs() > HOME_LIMIT_STEPS {
            (-rx.signum(), -ry.signum())
        } else if self.rng.chance_pct(IDLE_PCT) {
            (0, 0)
        } else {
            (self.rng.below(3) as i32 - 1, self.rng.below(3) as i32 - 1)
        };
        let mut input = CubeInput::NONE
            .with(CubeInput::RIGHT, x > 0)
            .with(CubeInput::LEFT, x < 0)
            .with(CubeInput::FORWARD, y > 0)
            .with(CubeInput::BACK, y < 0);
        input = input.with(CubeInput::HOVER, self.rng.chance_pct(HOVER_PCT));
        input = input.with(
            CubeInput::PULL,
            !input.has(CubeInput::HOVER) && self.rng.chance_pct(PULL_PCT),
        );
        self.input = input;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs_and_every_key_is_used() {
        let run = |seed| {
            let mut bot = CubeBot::new(seed);
            (0..9000).map(|_| bot.next_input()).collect::<Vec<_>>()
        };
        let a = run(3);
        assert_eq!(a, run(3));
        assert_ne!(a, run(4));
        for key in [1, 2, 4, 8, 16, 32] {
            assert!(a.iter().any(|i| i.has(key)), "key {key} never held");
        }
        let changes = a.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(changes < a.len() / 30, "inputs change rarely ({changes} changes)");
    }
}
