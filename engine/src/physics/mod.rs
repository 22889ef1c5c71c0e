//! Tumble's rigid-body engine: oriented boxes on a ground plane, at a fixed step.
//!
//! One file per idea, in the order a step runs them:
//! - [`body`]: bodies as plain data and the limits their values are checked against.
//! - [`awake_set`]: the bodies a step looks at; everything else rests untouched and costs a step nothing.
//! - [`broadphase`]: which bodies are near each other (enlarged boxes in the dynamic tree of [`aabb_tree`]; a body
//!   that leaves its box finds its own new neighbours).
//! - [`box_plane`], [`box_box`]: contact manifolds (≤ 4 points with feature ids) for one pair; [`manifold`] holds the
//!   shared types and the 4-point reduction.
//! - [`contact`]: the persistent contacts, in slots linked into each body's list, warm-start matching by feature id, and the per-step contact report.
//! - [`island`]: bodies joined by touching contacts; whole islands wake and go to rest together.
//! - [`stack_order`]: how high each body sits in its stack, so the solver can work from the ground up.
//! - [`contact_solver`]: sequential impulses with warm starting, friction, restitution and capped push-out.
//! - [`solver_lanes`]: groups of constraints that share no body, solved side by side with the same result as one
//!   at a time.
//! - [`workers`], [`parallel`]: the threads a step shares its work with ([`World::set_threads`]), and how its
//!   loops split over them with the bits of one thread: independent items in chunks, the solver's passes group
//!   by group, each after the groups before it on its bodies.
//! - [`rest`]: our rest detection, a window of the last 16 poses and velocities per body: still means not moving,
//!   not fast and not accelerating.
//! - [`world`]: the [`World`] that owns all of it, its configuration and the step pipeline.
//! - [`overlap`]: how deep bodies overlap, from their poses alone (a check for tests and benches, not a step).
//!
//! Everything is deterministic: no hash maps, sorts on unique keys only, and the threads change only who computes
//! what, never from what. The same scene and inputs on the same build give bit-identical state, on any number of
//! threads.

pub mod aabb_tree;
pub mod awake_set;
pub mod body;
pub mod box_box;
pub mod box_plane;
pub mod broadphase;
pub mod contact;
pub mod contact_solver;
pub mod island;
pub mod manifold;
pub mod overlap;
pub mod parallel;
pub mod rest;
pub mod solver_lanes;
pub mod stack_order;
pub mod workers;
pub mod world;

pub use body::{BodyDesc, BodyId, BodyKind, BodyState, MAX_ANGULAR_SPEED_RAD_S, MAX_LINEAR_SPEED_M_S};
pub use contact::ContactReport;
pub use workers::default_threads;
pub use world::{StepReport, World, WorldConfig, WorldSnapshot};

/// What the engine refuses, and why. Nothing refused ever reaches the solver.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PhysicsError {
    #[error("{field} is not finite (NaN or infinity)")]
    NotFinite { field: &'static str },
    #[error("{field} = {value} is outside {min}..={max}")]
    OutOfRange {
        field: &'static str,
        value: f32,
        min: f32,
        max: f32,
    },
    #[error("no body with id {0}")]
    UnknownBody(u32),
    #[error("body {0} is not kinematic")]
    NotKinematic(u32),
    #[error("body {0} has no mass (a kinematic body created without a density) and cannot become dynamic")]
    Massless(u32),
    #[error("invalid world configuration: {0}")]
    InvalidConfig(&'static str),
}
