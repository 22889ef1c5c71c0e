//! Scene files (being written).
