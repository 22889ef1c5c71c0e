//! The layout's arrows (ARCHITECTURE.md, "Crates"): the product depends on neither the network models nor the test
//! bench; the models do not depend on the bench; no model imports another (what they share is `inputs`). A change
//! that points an arrow the wrong way fails here, with the file and line that does it.

use std::path::{Path, PathBuf};

/// The workspace root (this crate is `tests/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The crates of ours a manifest depends on (normal, dev and build dependencies alike): the `tumble*` names.
fn our_dependencies(manifest: &str) -> Vec<String> {
    let value: toml::Value = manifest.parse().expect("a manifest that parses");
    let mut names = Vec::new();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(deps) = value.get(table).and_then(|t| t.as_table()) {
            names.extend(deps.keys().filter(|k| k.starts_with("tumble")).cloned());
        }
    }
    names
}

/// The lines of Rust `source` (outside comments) that name any of `forbidden`, as "line: text".
fn code_lines_naming(source: &str, forbidden: &[&str]) -> Vec<String> {
    source
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("//").next().unwrap_or("");
            forbidden.iter().any(|f| code.contains(f))
        })
        .map(|(i, line)| format!("{}: {}", i + 1, line.trim()))
        .collect()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Files under `dir` whose code names any of `forbidden`, with the lines.
fn violations(dir: &Path, forbidden: &[&str]) -> Vec<String> {
    rust_files(dir)
        .into_iter()
        .flat_map(|file| {
            let source = std::fs::read_to_string(&file).unwrap();
            code_lines_naming(&source, forbidden)
                .into_iter()
                .map(move |l| format!("{}:{l}", file.display()))
        })
        .collect()
}

const MODELS: [&str; 3] = ["lockstep", "snapshots", "predict"];

/// What a model's code may not name: the other models, by any path.
fn other_models(model: &str) -> Vec<String> {
    MODELS
        .iter()
        .filter(|&&m| m != model)
        .flat_map(|m| {
            [
                format!("crate::{m}"),
                format!("super::super::{m}"),
                format!("tumble_models::{m}"),
            ]
        })
        .collect()
}

#[test]
fn the_product_depends_on_neither_the_models_nor_the_bench() {
    let manifest = std::fs::read_to_string(root().join("game/product/Cargo.toml")).unwrap();
    let ours = our_dependencies(&manifest);
    assert_eq!(
        ours,
        ["tumble-engine", "tumble-net"],
        "tumble-game may depend on engine and net only"
    );
    let named = violations(
        &root().join("game/product/src"),
        &["tumble_models", "tumble_harness", "tumble::"],
    );
    assert!(
        named.is_empty(),
        "the product names the models or the bench:\n{}",
        named.join("\n")
    );
}

#[test]
fn the_models_depend_on_the_product_only_and_never_on_each_other() {
    let manifest = std::fs::read_to_string(root().join("game/models/Cargo.toml")).unwrap();
    let ours = our_dependencies(&manifest);
    assert!(
        ours.iter()
            .all(|d| ["tumble-game", "tumble-engine", "tumble-net"].contains(&d.as_str())),
        "tumble-models may depend on the product, engine and net only: {ours:?}"
    );
    let named = violations(&root().join("game/models/src"), &["tumble_harness"]);
    assert!(named.is_empty(), "a model names the bench:\n{}", named.join("\n"));
    for model in MODELS {
        let forbidden = other_models(model);
        let forbidden: Vec<&str> = forbidden.iter().map(String::as_str).collect();
        let named = violations(&root().join("game/models/src").join(model), &forbidden);
        assert!(named.is_empty(), "{model} imports another model:\n{}", named.join("\n"));
    }
    // What they share is not a model's either.
    let all: Vec<String> = MODELS.iter().map(|m| format!("crate::{m}")).collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let named = violations(&root().join("game/models/src/inputs"), &all);
    assert!(
        named.is_empty(),
        "the shared inputs import a model:\n{}",
        named.join("\n")
    );
}

/// The checks themselves can fail: an arrow pointed the wrong way on purpose is caught.
#[test]
fn a_wrong_arrow_is_caught() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\ntumble-engine = { path = \"e\" }\n\
                    tumble-harness = { path = \"h\" }\nglam = \"0.30\"\n";
    assert_eq!(our_dependencies(manifest), ["tumble-engine", "tumble-harness"]);
    let source =
        "//! Unlike [`crate::lockstep`], this is fine in a comment.\nuse crate::lockstep::peer::LockstepPeer;\n\
                  let x = 1; // crate::lockstep here too is a comment\n";
    let forbidden = other_models("snapshots");
    let forbidden: Vec<&str> = forbidden.iter().map(String::as_str).collect();
    assert_eq!(
        code_lines_naming(source, &forbidden),
        ["2: use crate::lockstep::peer::LockstepPeer;"]
    );
    assert!(code_lines_naming(source, &["crate::snapshots"]).is_empty());
}
