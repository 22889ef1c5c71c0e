//! With the `jolt` feature, reads the manifest `oxijolt-sys` writes beside the Jolt it built
//! (`oxijolt-sys-manifest.txt` under `DEP_JOLTC_ROOT`), so every report can say which Jolt ran and how it was built:
//! `TUMBLE_JOLT_VERSION` (its `jolt_version`), `TUMBLE_JOLT_SWITCHES` (the build switches it records) and
//! `TUMBLE_OXIJOLT_SYS_VERSION` (the crate's version, from Cargo's lock file). Without the feature it does nothing.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_JOLTC_ROOT");
    let Ok(root) = std::env::var("DEP_JOLTC_ROOT") else {
        return;
    };
    let manifest = Path::new(&root).join("oxijolt-sys-manifest.txt");
    println!("cargo:rerun-if-changed={}", manifest.display());
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        println!(
            "cargo:warning=could not read {}: the reports will say the Jolt version is unknown",
            manifest.display()
        );
        return;
    };
    let mut switches = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key {
            "jolt_version" => println!("cargo:rustc-env=TUMBLE_JOLT_VERSION={value}"),
            "double_precision" | "cross_platform_deterministic" | "asserts" | "profiler" | "debug_renderer" => {
                switches.push(format!("{key}={value}"))
            }
            _ => {}
        }
    }
    println!("cargo:rustc-env=TUMBLE_JOLT_SWITCHES={}", switches.join(", "));
    // The crate's version: the lock file of the workspace this builds in.
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    if let Ok(lock) = std::fs::read_to_string(&lock) {
        let mut lines = lock.lines();
        while let Some(line) = lines.next() {
            if line == "name = \"oxijolt-sys\"" {
                if let Some(v) = lines.next().and_then(|l| l.strip_prefix("version = \"")) {
                    println!("cargo:rustc-env=TUMBLE_OXIJOLT_SYS_VERSION={}", v.trim_end_matches('"'));
                }
            }
        }
    }
}
