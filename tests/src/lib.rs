//! Cross-crate integration tests live in `tests/tests/`. This library only holds shared helpers for them.
