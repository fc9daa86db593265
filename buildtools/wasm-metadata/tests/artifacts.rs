//! The tool on the modules `./build.sh` links and shrinks with wasm-opt (both left in target/,
//! the latter as `<crate>.opt.wasm`) and the artifacts it made from them (dist/): run `./build.sh`
//! first.

use std::path::{Path, PathBuf};
use std::process::Command;

use taintguard_wasm_metadata::{asks, opa, section, wapc};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}; run ./build.sh first"))
}

const LINKED_OPA: &str = "target/opa/wasm32-unknown-unknown/release/toleration_injection.wasm";
/// What wasm-opt made of it: what `embed-metadata` is given.
const OPTIMISED_OPA: &str =
    "target/opa/wasm32-unknown-unknown/release/toleration_injection.opt.wasm";

#[test]
fn check_opa_refuses_what_a_host_cannot_load() {
    let finished = read("dist/toleration-injection.gatekeeper.wasm");
    let linked = read(LINKED_OPA);
    // No policy's static data outgrows the hosts' 5 pages any more (toleration-injection's did,
    // with the regex crate's Unicode tables), so one that does is made by raising the linked
    // module's memory minimum from 2 pages to 7.
    let import = b"\x03env\x06memory\x02\x00";
    let at = linked
        .windows(import.len() + 1)
        .position(|w| w.starts_with(import) && w[import.len()] == 2)
        .expect("the linked module imports env.memory with a 2-page minimum")
        + import.len();
    let mut outgrown = linked.clone();
    outgrown[at] = 7;
    let fitted = opa::fit_host_memory(&outgrown).unwrap();
    let (min, ..) = opa::read_abi(&fitted).unwrap().imported_memory.unwrap();
    assert!(min <= opa::HOST_PAGES, "{min}");
    let cases: [(&str, Vec<u8>, &str); 4] = [
        // The waPC build imports WASI and waPC and exports none of the OPA functions.
        (
            "waPC module",
            read("dist/taint-preservation.wasm"),
            "cannot be satisfied by the OPA hosts",
        ),
        // Straight from the linker: address-valued ABI globals.
        ("unfinished module", linked.clone(), "opa_wasm_abi_version"),
        ("7 pages of static data", outgrown, "the hosts supply 5"),
        ("globals left as addresses", fitted, "opa_wasm_abi_version"),
    ];
    for (name, wasm, want) in cases {
        let error = opa::check(&wasm).expect_err(name);
        assert!(error.contains(want), "{name}: {error}");
    }
    // The artifact is the finished optimised module plus the metadata section.
    assert!(finished.starts_with(&opa::finish(&read(OPTIMISED_OPA)).unwrap()));
}

#[test]
fn check_wapc_refuses_an_opa_module() {
    wapc::check(&read("dist/taint-preservation.wasm")).unwrap();
    let error = wapc::check(&read("dist/taint-preservation.gatekeeper.wasm")).unwrap_err();
    assert_eq!(error, "the module does not export `__guest_call`");
}

/// Runs the binary; its exit status, stderr and what it wrote to OUT_WASM.
fn embed_metadata(args: &[&str], name: &str) -> (bool, String, Option<Vec<u8>>) {
    let out = std::env::temp_dir().join(format!("embed-metadata-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let run = Command::new(env!("CARGO_BIN_EXE_embed-metadata"))
        .current_dir(repo(""))
        .args(args)
        .arg(&out)
        .output()
        .unwrap();
    let written = std::fs::read(&out).ok();
    let _ = std::fs::remove_file(&out);
    (
        run.status.success(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
        written,
    )
}

#[test]
fn rebuilds_the_artifacts_byte_for_byte() {
    for (mode, linked, artifact) in [
        (
            None,
            "target/wasm32-wasip1/release/toleration_injection.opt.wasm",
            "dist/toleration-injection.wasm",
        ),
        (
            Some("gatekeeper"),
            OPTIMISED_OPA,
            "dist/toleration-injection.gatekeeper.wasm",
        ),
    ] {
        let mut args = mode.map_or(vec![], |m| vec!["--execution-mode", m]);
        args.extend([
            "policies/toleration-injection/metadata.yml",
            "policies/toleration-injection/README.md",
            linked,
        ]);
        let (ok, stderr, written) = embed_metadata(&args, "same");
        assert!(ok, "{stderr}");
        assert!(written == Some(read(artifact)), "{artifact} differs");
    }
}

#[test]
fn errors_name_the_file_and_write_nothing() {
    let bad_yml = std::env::temp_dir().join(format!("metadata-{}.yml", std::process::id()));
    std::fs::write(&bad_yml, "rules: []\n").unwrap();
    let bad_yml = bad_yml.to_str().unwrap().to_owned();
    let wasip1 = "target/wasm32-wasip1/release/taint_preservation.wasm";
    let cases: [(Vec<&str>, String); 4] = [
        (
            vec![&bad_yml, "README.md", wasip1],
            format!("{bad_yml}: `mutating` is required"),
        ),
        (
            vec![
                "policies/taint-preservation/metadata.yml",
                "nope.md",
                wasip1,
            ],
            "nope.md: No such file".into(),
        ),
        (
            vec![
                "--execution-mode",
                "gatekeeper",
                "policies/taint-preservation/metadata.yml",
                "README.md",
                wasip1,
            ],
            format!("{wasip1}: the module does not export the global `opa_wasm_abi_version`"),
        ),
        (
            vec![
                "--execution-mode",
                "rego",
                "policies/taint-preservation/metadata.yml",
                "README.md",
                wasip1,
            ],
            "--execution-mode: unknown execution mode \"rego\"".into(),
        ),
    ];
    for (args, want) in cases {
        let (ok, stderr, written) = embed_metadata(&args, "bad");
        assert!(!ok && written.is_none(), "{args:?}");
        assert!(
            stderr.starts_with(&format!("embed-metadata: {want}")),
            "{stderr}"
        );
    }
    std::fs::remove_file(bad_yml).unwrap();
}

/// Every policy artifact carries its policy's declaration of what it reads, and its embedded
/// metadata grants exactly that: the adapters' section name is the one the build reads (were they
/// apart, the build would find no declaration and check nothing).
#[test]
fn every_policy_artifact_declares_what_it_reads() {
    let folders = taintguard_wasm_metadata::metadata::policy_folders(&repo("policies")).unwrap();
    assert!(!folders.is_empty());
    for policy in folders {
        for artifact in [
            format!("dist/{policy}.wasm"),
            format!("dist/{policy}.gatekeeper.wasm"),
        ] {
            let wasm = read(&artifact);
            let declared = asks::read(&wasm)
                .unwrap()
                .unwrap_or_else(|| panic!("{artifact} has no declaration of what it reads"));
            let mut meta = section::read_json(&wasm).unwrap().unwrap();
            let before = meta.clone();
            let stated = asks::Stated {
                resources: true,
                capabilities: meta.get("hostCapabilities").is_some(),
            };
            asks::reconcile(&mut meta, stated, &declared)
                .unwrap_or_else(|e| panic!("{artifact}: {e}"));
            assert_eq!(meta, before, "{artifact}");
        }
    }
}
