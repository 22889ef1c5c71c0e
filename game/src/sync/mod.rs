//! State synchronisation (being written).
