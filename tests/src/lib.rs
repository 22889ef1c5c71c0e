//! Cross-crate integration tests live in `tests/tests/`. This library holds the helpers they share.

pub mod alloc;
pub mod tipping;

use std::path::PathBuf;

use glam::{Mat3, Vec3};
use tumble_engine::physics::box_plane::OrientedBox;
use tumble_engine::physics::{overlap, BodyId, World, WorldConfig};
use tumble_engine::scene::load_scene;
use tumble_game::sync::codec::quantize::quantize_body_state;

/// Path of a shipped scene file.
pub fn scene_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/scenes")
        .join(format!("{name}.toml"))
}

/// A shipped scene as a world, with rest detection on or off.
pub fn scene_world(name: &str, sleep: bool) -> World {
    let scene = load_scene(&scene_path(name)).expect("shipped scene loads");
    scene
        .build_world(WorldConfig {
            sleep,
            ..WorldConfig::default()
        })
        .expect("shipped scene builds")
}

pub fn positions(world: &World) -> Vec<Vec3> {
    world
        .body_ids()
        .map(|id| world.state(id).expect("valid id").position)
        .collect()
}

/// Deepest overlap (m) between any two bodies, or a body and the ground, as their poses stand now.
pub fn deepest_overlap(world: &World) -> f32 {
    let boxes: Vec<OrientedBox> = world
        .body_ids()
        .filter(|&id| !world.is_removed(id).expect("valid id"))
        .map(|id| {
            let s = world.state(id).expect("valid id");
            OrientedBox {
                center: s.position,
                axes: Mat3::from_quat(s.rotation),
                half: world.half_extents(id).expect("valid id"),
            }
        })
        .collect();
    overlap::deepest_overlap(&boxes, world.config().ground_height)
}

/// Largest distance between matching positions.
pub fn max_distance(a: &[Vec3], b: &[Vec3]) -> f32 {
    a.iter().zip(b).map(|(p, q)| p.distance(*q)).fold(0.0, f32::max)
}

/// What state sync does before every step: every body snapped to its quantized state.
pub fn quantize_all(world: &mut World) {
    for i in 0..world.body_count() as u32 {
        let id = BodyId(i);
        if world.is_removed(id).expect("valid id") {
            continue;
        }
        let q = quantize_body_state(&world.state(id).expect("valid id"));
        world.set_state(id, &q).expect("quantized states are valid");
    }
}
