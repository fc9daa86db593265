//! An SPDX 2.3 SBOM per artifact: the crates linked into its module (docs/release.md).
//!
//! The crate graph is cargo's own resolution for the build that made the module: `cargo tree`
//! with the build's target and packages, normal dependencies only, proc-macros and what only
//! they use cut off (they run in the compiler and are not linked), `--locked --offline` (the
//! build before it fetched every package of that graph). The
//! registry's SBOM generators were measured on this workspace and none gives that set:
//! `cargo-sbom` has no target filter and lists 27 packages for a 17-crate module,
//! `cargo-cyclonedx` writes no SPDX and lists proc-macros, and every generator that reads
//! `cargo metadata` unifies features across the workspace and lists crates no policy links
//! (indexmap, hashbrown). Licences come from the same `cargo tree`, checksums from `Cargo.lock`.
//! Rust's standard library, also linked, is not a crate of the graph and is not listed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::artifact::Artifact;
use crate::layout::sha256;
use taintguard_wasm_metadata::metadata::VERSION_ANNOTATION;

/// The Rust target each execution mode's modules are built for (build.sh).
pub fn target_of(execution_mode: &str) -> Result<&'static str, String> {
    match execution_mode {
        "kubewarden-wapc" => Ok("wasm32-wasip1"),
        "gatekeeper" | "opa" => Ok("wasm32-unknown-unknown"),
        other => Err(format!(
            "no build target is known for execution mode {other:?}"
        )),
    }
}

/// One linked crate: `name` at `version`, and the crates it links directly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Crate {
    pub name: String,
    pub version: String,
    /// The workspace path of a local crate; `None` for a registry crate.
    pub path: Option<String>,
    /// The SPDX expression its manifest declares, if any.
    pub license: Option<String>,
}

pub struct Graph {
    pub crates: BTreeSet<Crate>,
    pub edges: BTreeSet<(Crate, Crate)>,
}

fn cargo(workspace: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(workspace)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`cargo {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("`cargo {}`: {e}", args.join(" ")))
}

/// `cargo tree` of `packages` built together for `target`, each with its `wasm` feature (the
/// engine exports, as `./build.sh` builds the modules): one tree per package, each line
/// `<depth><name> v<version>[ (<path>)]|<licence>`, for [`parse_tree`].
///
/// # Errors
///
/// cargo's own, when it cannot resolve the graph offline from the lock file.
pub fn tree(workspace: &Path, target: &str, packages: &[String]) -> Result<String, String> {
    let mut args = vec![
        "tree",
        "--locked",
        "--offline",
        "--no-dedupe",
        "--target",
        target,
        "-e",
        "normal,no-proc-macro",
        "--prefix",
        "depth",
        "-f",
        "{p}|{l}",
    ];
    let features: Vec<String> = packages.iter().map(|p| format!("{p}/wasm")).collect();
    for (package, feature) in packages.iter().zip(&features) {
        args.extend(["-p", package.as_str(), "--features", feature.as_str()]);
    }
    cargo(workspace, &args)
}

/// The crates linked into `root`'s module: its tree in [`tree`]'s output.
///
/// # Errors
///
/// Output this reader does not understand, or no tree rooted at `root`.
pub fn parse_tree(tree: &str, root: &str) -> Result<Graph, String> {
    let mut graph = Graph {
        crates: BTreeSet::new(),
        edges: BTreeSet::new(),
    };
    let mut in_root = false;
    let mut stack: Vec<Crate> = Vec::new();
    for line in tree.lines().filter(|l| !l.trim().is_empty()) {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        let depth: usize = line[..digits]
            .parse()
            .map_err(|_| format!("cargo tree line without a depth: {line:?}"))?;
        let (rest, license) = line[digits..]
            .split_once('|')
            .unwrap_or((&line[digits..], ""));
        let (name, rest) = rest
            .split_once(" v")
            .ok_or_else(|| format!("cargo tree line without a version: {line:?}"))?;
        let (version, path) = match rest.split_once(" (") {
            Some((version, path)) => (version, Some(path.trim_end_matches(')').to_owned())),
            None => (rest, None),
        };
        if depth == 0 {
            in_root = name == root;
        }
        if !in_root {
            continue;
        }
        let krate = Crate {
            name: name.to_owned(),
            version: version.to_owned(),
            path,
            license: Some(license.trim().to_owned()).filter(|l| !l.is_empty()),
        };
        stack.truncate(depth);
        if let Some(parent) = stack.last() {
            graph.edges.insert((parent.clone(), krate.clone()));
        }
        graph.crates.insert(krate.clone());
        stack.push(krate);
    }
    if graph.crates.is_empty() {
        return Err(format!("cargo tree printed no tree for package {root}"));
    }
    Ok(graph)
}

/// `(name, version)` → sha256 of the registry crates in `Cargo.lock`.
pub type Checksums = BTreeMap<(String, String), String>;

/// The checksums of `workspace`'s `Cargo.lock`.
///
/// # Errors
///
/// The lock file cannot be read or is not TOML.
pub fn lock_checksums(workspace: &Path) -> Result<Checksums, String> {
    let path = workspace.join("Cargo.lock");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lock: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut checksums = BTreeMap::new();
    let packages = lock.get("package").and_then(toml::Value::as_array);
    for package in packages.into_iter().flatten() {
        let field = |key: &str| package.get(key).and_then(toml::Value::as_str);
        if let (Some(name), Some(version), Some(checksum)) =
            (field("name"), field("version"), field("checksum"))
        {
            checksums.insert((name.to_owned(), version.to_owned()), checksum.to_owned());
        }
    }
    Ok(checksums)
}

/// SPDX identifiers allow letters, digits, `.` and `-`.
fn spdx_id(krate: &Crate) -> String {
    let raw = format!("{}-{}", krate.name, krate.version);
    let id: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("SPDXRef-Crate-{id}")
}

/// What a module links and for which build: the crate graph `cargo tree` gave for `target`.
pub struct Linked<'a> {
    /// The Rust target the module was built for ([`target_of`]).
    pub target: &'a str,
    /// The crates linked into the module and their dependencies ([`parse_tree`]).
    pub graph: &'a Graph,
}

/// The SPDX 2.3 JSON document for `artifact`, whose module links `linked.graph`, the registry
/// crates' checksums from `checksums`; a crate without a declared licence is NOASSERTION.
pub fn document(
    artifact: &Artifact,
    linked: &Linked<'_>,
    checksums: &Checksums,
    created: &str,
) -> Value {
    let meta = &artifact.metadata;
    let version = meta.annotation(VERSION_ANNOTATION).unwrap_or("0.0.0");
    let module_sha = sha256(&artifact.bytes);
    let module_hex = module_sha.trim_start_matches("sha256:");
    let source = meta
        .annotation("io.kubewarden.policy.source")
        .unwrap_or("https://github.com/taintguard/taintguard");
    let mut packages = vec![module_package(artifact, linked.target, version, module_hex)];
    let mut relationships = vec![json!({
        "spdxElementId": "SPDXRef-DOCUMENT",
        "relationshipType": "DESCRIBES",
        "relatedSpdxElement": "SPDXRef-Module",
    })];
    for krate in &linked.graph.crates {
        packages.push(crate_package(krate, checksums, source));
        relationships.push(json!({
            "spdxElementId": "SPDXRef-Module",
            "relationshipType": "CONTAINS",
            "relatedSpdxElement": spdx_id(krate),
        }));
    }
    for (from, to) in &linked.graph.edges {
        relationships.push(json!({
            "spdxElementId": spdx_id(from),
            "relationshipType": "DEPENDS_ON",
            "relatedSpdxElement": spdx_id(to),
        }));
    }
    json!({
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": format!("{}-{version}", artifact.name),
        // Unique per module: the module's digest names it.
        "documentNamespace": format!("{source}/spdx/{}-{version}-{module_hex}", artifact.name),
        "creationInfo": {
            "created": created,
            "creators": [format!("Tool: taintguard-oci-{}", env!("CARGO_PKG_VERSION"))],
            "comment": "The crates linked into the module: cargo's resolution for its build \
                        target, normal dependencies, proc-macros excluded (docs/release.md).",
        },
        "packages": packages,
        "relationships": relationships,
    })
}

/// The SPDX package of the module itself (`SPDXRef-Module`, the document's subject): the
/// artifact `version` built for `target`, its checksum `module_hex`, and where it is pulled from.
fn module_package(artifact: &Artifact, target: &str, version: &str, module_hex: &str) -> Value {
    let meta = &artifact.metadata;
    json!({
        "SPDXID": "SPDXRef-Module",
        "name": artifact.name,
        "versionInfo": version,
        "packageFileName": artifact.path.file_name().map(|n| n.to_string_lossy().into_owned()),
        "downloadLocation": meta.annotation("io.kubewarden.policy.ociUrl")
            .map_or("NOASSERTION".to_owned(), |url| format!("{url}:v{version}")),
        "filesAnalyzed": false,
        "checksums": [{"algorithm": "SHA256", "checksumValue": module_hex}],
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": meta.annotation("io.kubewarden.policy.license").unwrap_or("NOASSERTION"),
        "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "APPLICATION",
        "comment": format!("The {} WebAssembly module ({}), built for {target}.",
                           artifact.name, meta.execution_mode),
    })
}

/// The SPDX package of one linked crate: a registry crate (one `checksums` knows) with its
/// crates.io download, checksum and purl; any other is this repository's, downloaded from
/// `source`.
fn crate_package(krate: &Crate, checksums: &Checksums, source: &str) -> Value {
    let key = (krate.name.clone(), krate.version.clone());
    let mut package = json!({
        "SPDXID": spdx_id(krate),
        "name": krate.name,
        "versionInfo": krate.version,
        "filesAnalyzed": false,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": krate.license.as_deref().unwrap_or("NOASSERTION"),
        "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "LIBRARY",
    });
    match (&krate.path, checksums.get(&key)) {
        (None, Some(checksum)) => {
            package["downloadLocation"] = json!(format!(
                "https://crates.io/api/v1/crates/{}/{}/download",
                krate.name, krate.version
            ));
            package["checksums"] = json!([{"algorithm": "SHA256", "checksumValue": checksum}]);
            package["externalRefs"] = json!([{
                "referenceCategory": "PACKAGE-MANAGER",
                "referenceType": "purl",
                "referenceLocator": format!("pkg:cargo/{}@{}", krate.name, krate.version),
            }]);
        }
        _ => {
            // A crate of this repository: its source is the repository at this release.
            package["downloadLocation"] = json!(format!("git+{source}"));
        }
    }
    package
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cargo_tree_output() {
        let tree = "0a v0.1.0 (/w/a)|MIT\n1core v0.1.0 (/w)|\n2serde v1.0.1|MIT OR Apache-2.0\n\
                    1serde v1.0.1|MIT OR Apache-2.0\n\n0b v0.1.0 (/w/b)|\n1only-b v2.0.0|\n";
        let graph = parse_tree(tree, "a").unwrap();
        let names: Vec<&str> = graph.crates.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "core", "serde"]);
        let edges: Vec<(&str, &str)> = graph
            .edges
            .iter()
            .map(|(f, t)| (f.name.as_str(), t.name.as_str()))
            .collect();
        assert_eq!(edges, [("a", "core"), ("a", "serde"), ("core", "serde")]);
        assert_eq!(
            graph.crates.iter().next().unwrap().path.as_deref(),
            Some("/w/a")
        );
        assert!(parse_tree(tree, "c").is_err());
        assert!(parse_tree("x v1\n", "x").is_err());
    }

    #[test]
    fn spdx_ids_are_spdx_identifiers() {
        let krate = Crate {
            name: "wapc_guest".into(),
            version: "1.2.0+build".into(),
            path: None,
            license: None,
        };
        assert_eq!(spdx_id(&krate), "SPDXRef-Crate-wapc-guest-1.2.0-build");
    }
}
