//! Shared code for the benches.
