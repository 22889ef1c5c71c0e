//! The game: the composition of the engine and the network (being written).
pub mod sync;
