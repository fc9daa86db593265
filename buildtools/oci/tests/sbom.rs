//! Each artifact's SBOM (`dist/<module>.spdx.json`, docs/release.md) lists exactly the crates
//! linked into its module: checked against the build's own account of what it compiled for the
//! module (`target/sbom/<target>/<policy>.jsonl`, the `--message-format=json` output of the cargo
//! run that built it alone, which `./build.sh` keeps), a source independent of the `cargo tree`
//! resolution the SBOM is made from.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}; run ./build.sh first", path.display()))
}

/// `(name, version)` of a cargo package id: `registry+…#serde@1.0.0`, `path+file:///…#name@0.1.0`
/// or `path+file:///…/name#0.1.0` (the name is the folder's).
fn package(id: &str) -> (String, String) {
    let (url, fragment) = id.rsplit_once('#').expect("a package id has a fragment");
    match fragment.split_once('@') {
        Some((name, version)) => (name.to_owned(), version.to_owned()),
        None => (
            url.rsplit('/').next().unwrap_or(url).to_owned(),
            fragment.to_owned(),
        ),
    }
}

/// The packages the build of `policy`'s module compiled for `target` (host units, build scripts
/// and proc-macros, are compiled into target/<profile>/, not target/<target>/).
fn compiled_for(target: &str, policy: &str) -> BTreeSet<(String, String)> {
    let log = read(
        &repo()
            .join("target/sbom")
            .join(target)
            .join(format!("{policy}.jsonl")),
    );
    let marker = format!("/{target}/");
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| {
            m["filenames"].as_array().is_some_and(|f| {
                f.iter()
                    .any(|f| f.as_str().is_some_and(|f| f.contains(&marker)))
            })
        })
        .map(|m| package(m["package_id"].as_str().expect("package_id")))
        .collect()
}

#[test]
fn each_sbom_lists_exactly_the_crates_linked() {
    let dist = repo().join("dist");
    // The policy folders, as build.sh's `policies` finds them: those with a metadata.yml.
    let policies =
        taintguard_wasm_metadata::metadata::policy_folders(&repo().join("policies")).unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dist).unwrap() {
        let path = entry.unwrap().path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        let Some(stem) = file.strip_suffix(".spdx.json") else {
            continue;
        };
        let (policy, target) = match stem.split_once('.') {
            Some((policy, "gatekeeper")) => (policy, "wasm32-unknown-unknown"),
            None => (stem, "wasm32-wasip1"),
            Some(_) => panic!("unexpected SBOM {file}"),
        };
        let document: Value = serde_json::from_str(&read(&path)).unwrap();
        assert_eq!(document["spdxVersion"], "SPDX-2.3", "{file}");
        let packages = document["packages"].as_array().unwrap();
        let listed: BTreeSet<(String, String)> = packages
            .iter()
            .filter(|p| p["SPDXID"] != "SPDXRef-Module")
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_owned(),
                    p["versionInfo"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        // Each module is built on its own: what that build compiled is what it links, and no
        // other policy's crate.
        let linked = compiled_for(target, policy);
        assert!(
            !linked
                .iter()
                .any(|(name, _)| name != policy && policies.contains(name)),
            "{file}: {linked:?}"
        );
        assert_eq!(listed, linked, "{file}");
        assert!(
            !listed.iter().any(|(name, _)| name == "serde_derive"),
            "{file}"
        );

        // The document hangs together: the module it describes is the artifact, and every
        // relationship names a package it declares.
        let module = packages
            .iter()
            .find(|p| p["SPDXID"] == "SPDXRef-Module")
            .unwrap();
        let wasm = std::fs::read(dist.join(format!("{stem}.wasm"))).unwrap();
        let digest = sha2_hex(&wasm);
        assert_eq!(
            module["checksums"][0]["checksumValue"],
            digest.as_str(),
            "{file}"
        );
        let ids: BTreeSet<&str> = packages
            .iter()
            .map(|p| p["SPDXID"].as_str().unwrap())
            .chain(["SPDXRef-DOCUMENT"])
            .collect();
        assert_eq!(ids.len(), packages.len() + 1, "{file}: SPDXIDs are unique");
        for relationship in document["relationships"].as_array().unwrap() {
            for end in ["spdxElementId", "relatedSpdxElement"] {
                let id = relationship[end].as_str().unwrap();
                assert!(ids.contains(id), "{file}: {id} is not declared");
            }
        }
        let contained = document["relationships"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["relationshipType"] == "CONTAINS")
            .count();
        assert_eq!(contained, listed.len(), "{file}");
        checked += 1;
    }
    assert_eq!(
        checked,
        2 * policies.len(),
        "an SBOM for each policy's two artifacts ({policies:?})"
    );
}

fn sha2_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn package_ids() {
    let cases = [
        (
            "registry+https://github.com/rust-lang/crates.io-index#serde@1.0.229",
            ("serde", "1.0.229"),
        ),
        (
            "path+file:///work/main#taintguard@0.1.0",
            ("taintguard", "0.1.0"),
        ),
        (
            "path+file:///work/main/policies/taint-preservation#0.1.0",
            ("taint-preservation", "0.1.0"),
        ),
    ];
    for (id, (name, version)) in cases {
        assert_eq!(package(id), (name.to_owned(), version.to_owned()), "{id}");
    }
}
