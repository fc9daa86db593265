//! Reads each policy's `metadata.yml` with the reader the Kubewarden artifacts are built with
//! (buildtools/wasm-metadata), so that the package reports the very title, description and `mutating`
//! the artifacts carry. It runs on the build host: the module holds those three facts, neither
//! the file nor a YAML parser.
//!
//! Writes `$OUT_DIR/<policy folder>.rs`, one `registry::Facts` expression each, and
//! `$OUT_DIR/policies.rs`, the registry's table: one `entry!` per folder of `policies/` that
//! carries a `metadata.yml`, the policy type being the folder's name in CamelCase at the root of
//! the crate of that name (policies/README.md). A folder the package does not link as a
//! dependency fails the build, naming the line to add.

use std::path::{Path, PathBuf};

use taintguard_wasm_metadata::metadata::{policy_folders, Metadata};

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

/// The policy type a folder's crate exports: `taint-preservation` → `TaintPreservation`.
fn camel(folder: &str) -> String {
    folder
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The names of the `[dependencies]` of this package's Cargo.toml: `name.workspace = true`,
/// `name = { path = … }`.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let end = line.find(['.', '=', ' ']).unwrap_or(line.len());
            names.push(line[..end].to_owned());
        }
    }
    names
}

/// The registry's table, or the policy folders the package does not link.
fn table(folders: &[String], manifest: &Path) -> Result<String, String> {
    let text =
        std::fs::read_to_string(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let linked = dependencies(&text);
    let unlinked: Vec<String> = folders
        .iter()
        .filter(|folder| !linked.contains(folder))
        .map(|folder| {
            format!(
                "policies/{folder} is a policy folder (it has metadata.yml) that the npm package \
                 does not link: add `{folder}.workspace = true` under [dependencies] in \
                 abi/js/Cargo.toml, and `{folder} = {{ path = \"policies/{folder}\" }}` under \
                 [workspace.dependencies] in Cargo.toml (`./build.sh new-policy` writes both \
                 lines; policies/README.md)"
            )
        })
        .collect();
    if !unlinked.is_empty() {
        return Err(unlinked.join("\n"));
    }
    let mut out =
        String::from("// Written by abi/js/build.rs from the folders of policies/.\n&[\n");
    for folder in folders {
        out += &format!(
            "    entry!({}::{}, {folder:?}),\n",
            folder.replace('-', "_"),
            camel(folder)
        );
    }
    out += "]\n";
    Ok(out)
}

fn run() -> Result<(), String> {
    // Where cargo runs it from, not where it was compiled: a copy of the workspace (the policy
    // template test, policies/README.md) may run the script compiled for this one.
    let package = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").ok_or("cargo sets CARGO_MANIFEST_DIR")?,
    );
    let policies = package.join("../../policies");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    println!("cargo::rerun-if-changed={}", policies.display());
    let names = policy_folders(&policies)?;
    for name in &names {
        let path = policies.join(name).join("metadata.yml");
        println!("cargo::rerun-if-changed={}", path.display());
        let target = out.join(format!("{name}.rs"));
        std::fs::write(&target, facts(&path)?).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    let manifest = package.join("Cargo.toml");
    println!("cargo::rerun-if-changed={}", manifest.display());
    let target = out.join("policies.rs");
    std::fs::write(&target, table(&names, &manifest)?)
        .map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("taintguard-js build: {e}");
        std::process::exit(1);
    }
}
