//! One player's input for one step: six keys as bits, the whole of what a step needs from a player. Lockstep sends
//! exactly this; every other model will be driven by the same struct.

/// Bits of a [`CubeInput`] (left, right, forward, back, hover, pull).
pub const INPUT_BITS: u32 = 6;

/// The keys held during one step, in the player's own frame (forward = the way the player's view faces).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CubeInput(u8);

impl CubeInput {
    pub const LEFT: u8 = 1 << 0;
    pub const RIGHT: u8 = 1 << 1;
    pub const FORWARD: u8 = 1 << 2;
    pub const BACK: u8 = 1 << 3;
    /// Space: float on a spring above the ground and blow nearby cubes away.
    pub const HOVER: u8 = 1 << 4;
    /// Z: pull nearby cubes towards the player (katamari).
    pub const PULL: u8 = 1 << 5;
    const ALL: u8 = (1 << INPUT_BITS) - 1;

    pub const NONE: CubeInput = CubeInput(0);

    /// The input with these bits; bits above the six keys are dropped.
    pub const fn from_bits(bits: u8) -> Self {
        CubeInput(bits & Self::ALL)
    }

    pub const fn bits(self) -> u8 {
        self.0
    }

    pub const fn has(self, key: u8) -> bool {
        self.0 & key != 0
    }

    pub fn with(self, key: u8, held: bool) -> Self {
        Self::from_bits(if held { self.0 | key } else { self.0 & !key })
    }

    /// The roll direction in the player's frame: x = right, y = forward, each −1, 0 or 1 (opposite keys cancel).
    pub fn direction(self) -> (i32, i32) {
        let axis = |plus: u8, minus: u8| i32::from(self.has(plus)) - i32::from(self.has(minus));
        (axis(Self::RIGHT, Self::LEFT), axis(Self::FORWARD, Self::BACK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bits_and_opposite_keys_cancel() {
        let i = CubeInput::NONE
            .with(CubeInput::LEFT, true)
            .with(CubeInput::FORWARD, true);
        assert_eq!(i.direction(), (-1, 1));
        assert_eq!(i.with(CubeInput::RIGHT, true).direction(), (0, 1));
        assert_eq!(CubeInput::from_bits(0xff).bits(), 0x3f, "only six keys");
        assert!(!i.with(CubeInput::LEFT, false).has(CubeInput::LEFT));
    }
}
