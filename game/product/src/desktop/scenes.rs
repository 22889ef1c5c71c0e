//! The scene files the desktop view can cycle through: every `*.toml` beside the scene it started with, in name
//! order.

use std::path::{Path, PathBuf};

/// The default scene of `tumble` with no arguments, relative to the working directory (the repository root).
pub const DEFAULT_SCENE: &str = "assets/scenes/table64.toml";

/// [`DEFAULT_SCENE`] when the working directory has it, else the copy in the source tree this binary was built
/// from (so `tumble` also starts from another directory on the machine that built it).
pub fn default_scene() -> PathBuf {
    let relative = PathBuf::from(DEFAULT_SCENE);
    if relative.is_file() {
        return relative;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(DEFAULT_SCENE)
}

/// `*.toml` files in `dir`, sorted by name; an unreadable folder gives an empty list.
pub fn list_scenes(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut scenes: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
        .collect();
    scenes.sort();
    scenes
}

/// The scene `delta` places after `current` in `scenes` (wrapping; from the start when `current` is not listed).
pub fn step_scene(scenes: &[PathBuf], current: &Path, delta: isize) -> Option<PathBuf> {
    if scenes.is_empty() {
        return None;
    }
    let n = scenes.len() as isize;
    let at = scenes.iter().position(|p| same_file(p, current));
    let next = match at {
        Some(i) => (i as isize + delta).rem_euclid(n),
        None => 0,
    };
    Some(scenes[next as usize].clone())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes")
    }

    #[test]
    fn lists_the_shipped_scenes_in_order_and_cycles_through_them() {
        let scenes = list_scenes(&shipped());
        let names: Vec<_> = scenes
            .iter()
            .map(|p| p.file_stem().unwrap().to_str().unwrap())
            .collect();
        assert!(names.contains(&"table64") && names.contains(&"tower30"), "{names:?}");
        assert!(names.windows(2).all(|w| w[0] < w[1]));
        let table = shipped().join("table64.toml");
        let next = step_scene(&scenes, &table, 1).unwrap();
        assert_ne!(next, table);
        assert_eq!(
            step_scene(&scenes, &next, -1).unwrap(),
            scenes[names.iter().position(|&n| n == "table64").unwrap()]
        );
        assert_eq!(step_scene(&scenes, &scenes[0], -1).unwrap(), *scenes.last().unwrap());
        assert_eq!(step_scene(&[], &table, 1), None);
        assert!(list_scenes(Path::new("/no/such/folder")).is_empty());
        assert!(default_scene().is_file());
    }
}
