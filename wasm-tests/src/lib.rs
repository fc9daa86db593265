//! Host-side support for running the built policy modules the way the real engines do, shared by
//! the integration tests in `tests/` and the tools in `src/bin/`.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod examples;
pub use taintguard_host::wapc as kubewarden;
pub mod limits;
pub mod probe;

use std::path::PathBuf;

/// The repository root (this crate lives in `wasm-tests/`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("wasm-tests has a parent")
        .to_path_buf()
}

/// The policies: the folders of `policies/` that carry a `metadata.yml`, as build.sh's
/// `policies` finds them, sorted. Each has its artifacts in `dist/` once `./build.sh` ran.
pub fn policies() -> Vec<String> {
    taintguard_wasm_metadata::metadata::policy_folders(&repo_root().join("policies"))
        .expect("policies/ is readable")
}

/// `dist/<file>`, where `./build.sh` writes the built artifacts.
pub fn dist(file: &str) -> PathBuf {
    repo_root().join("dist").join(file)
}

/// Reads a built artifact, with a message saying how to make it when it is missing.
pub fn read_artifact(file: &str) -> Vec<u8> {
    let path = dist(file);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; run ./build.sh first", path.display()))
}
