//! Reads each policy's `metadata.yml` with the reader the Kubewarden artifacts are built with
//! (buildtools/wasm-metadata), so that the package reports the very title, description and `mutating`
//! the artifacts carry. It runs on the build host: the module holds those three facts, neither
//! the file nor a YAML parser.
//!
//! Writes `$OUT_DIR/<policy folder>.rs`, one `registry::Facts` expression each.

use std::path::{Path, PathBuf};

use taintguard_wasm_metadata::metadata::Metadata;

const TITLE: &str = "io.kubewarden.policy.title";
const DESCRIPTION: &str = "io.kubewarden.policy.description";

fn facts(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = Metadata::from_yml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let annotation = |key| {
        meta.annotation(key)
            .ok_or_else(|| format!("{}: the annotation `{key}` is required", path.display()))
    };
    // `{:?}` of a str is a valid Rust string literal.
    Ok(format!(
        "crate::registry::Facts {{ title: {:?}, description: {:?}, mutating: {} }}\n",
        annotation(TITLE)?,
        annotation(DESCRIPTION)?,
        meta.mutating
    ))
}

fn run() -> Result<(), String> {
    let policies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    println!("cargo::rerun-if-changed={}", policies.display());
    let folders =
        std::fs::read_dir(&policies).map_err(|e| format!("{}: {e}", policies.display()))?;
    for folder in folders {
        let folder = folder
            .map_err(|e| format!("{}: {e}", policies.display()))?
            .path();
        let path = folder.join("metadata.yml");
        if !path.is_file() {
            continue;
        }
        println!("cargo::rerun-if-changed={}", path.display());
        let name = folder.file_name().ok_or("a policy folder has a name")?;
        let target = out.join(name).with_extension("rs");
        std::fs::write(&target, facts(&path)?).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("taintguard-js build: {e}");
        std::process::exit(1);
    }
}
