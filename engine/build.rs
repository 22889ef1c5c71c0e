//! Compiles the WGSL shaders in `shaders/` to SPIR-V with naga (pure Rust, no system tool) when the `render`
//! feature is on. Each entry point becomes `$OUT_DIR/<entry>.spv`, included by `engine/src/render/shaders.rs`.

fn main() {
    #[cfg(feature = "render")]
    shaders::compile_all();
}

#[cfg(feature = "render")]
mod shaders {
    use std::path::{Path, PathBuf};

    /// (file in `shaders/`, entry points compiled from it).
    const SHADERS: &[(&str, &[&str])] = &[(
        "scene.wgsl",
        &["vs_box", "fs_box", "vs_ground", "fs_ground", "vs_shadow"],
    )];

    pub fn compile_all() {
        let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
            .join("..")
            .join("shaders");
        let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
        for (file, entries) in SHADERS {
            let path = root.join(file);
            println!("cargo:rerun-if-changed={}", path.display());
            let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for entry in *entries {
                let words = compile(&path, &source, entry);
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                std::fs::write(out.join(format!("{entry}.spv")), bytes).unwrap();
            }
        }
    }

    /// A build-time failure here is our own shader's bug: panicking prints naga's diagnostic in the build log.
    fn compile(path: &Path, source: &str, entry: &str) -> Vec<u32> {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string_with_path(source, path.display().to_string())));
        // Early depth tests forced on the fragment shaders that neither discard nor write depth (lavapipe tests depth
        // after shading in a multisampled pass otherwise).
        let caps = naga::valid::Capabilities::MULTIVIEW | naga::valid::Capabilities::EARLY_DEPTH_TEST;
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string_with_path(source, &path.display().to_string())));
        let stage = if entry.starts_with("vs_") {
            naga::ShaderStage::Vertex
        } else {
            naga::ShaderStage::Fragment
        };
        let options = naga::back::spv::Options {
            // SPIR-V 1.3 is what every Vulkan 1.1 device accepts.
            lang_version: (1, 3),
            flags: naga::back::spv::WriterFlags::empty(),
            ..Default::default()
        };
        let pipeline = naga::back::spv::PipelineOptions {
            shader_stage: stage,
            entry_point: entry.to_string(),
        };
        naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
            .unwrap_or_else(|e| panic!("{}: entry {entry}: {e}", path.display()))
    }
}
