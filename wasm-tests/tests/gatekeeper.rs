//! dist/<policy>.gatekeeper.wasm: the interface burrego (Kubewarden's gatekeeper/opa modes) and
//! the OPA SDKs need, checked statically with exact function signatures, which the JavaScript
//! tests cannot see; and the metadata derived from the policy's `metadata.yml`. Verdicts are
//! tested in the real SDK by `wasm-tests/js/opa` (run by `./build.sh test`).

use serde_json::Value;
use wasm_tests::{metadata, opa, read_artifact, repo_root};

const POLICIES: [&str; 2] = ["taint-preservation", "toleration-injection"];

#[test]
fn artifacts_meet_both_hosts_interface() {
    for policy in POLICIES {
        let wasm = read_artifact(&format!("{policy}.gatekeeper.wasm"));
        metadata::check_opa(&wasm).unwrap_or_else(|e| panic!("{policy}: {e}"));
        let abi = opa::read_abi(&wasm).unwrap();
        let (min, max, ..) = abi.imported_memory.unwrap();
        assert!(
            min <= opa::HOST_PAGES && max.is_none(),
            "{policy}: {min} {max:?}"
        );
        assert_eq!(abi.globals["opa_wasm_abi_version"].value, Some(1));
        assert_eq!(abi.globals["opa_wasm_abi_minor_version"].value, Some(2));
        let imports: Vec<&str> = abi.imports.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(imports, ["env.memory", "env.opa_abort"], "{policy}");
    }
}

#[test]
fn check_opa_refuses_what_a_host_cannot_load() {
    let finished = read_artifact("toleration-injection.gatekeeper.wasm");
    let linked = std::fs::read(
        repo_root().join("target/opa/wasm32-unknown-unknown/release/toleration_injection.wasm"),
    )
    .expect("./build.sh leaves the linked module in target/opa");
    // No policy's static data outgrows the hosts' 5 pages, so a module whose data does is made
    // by raising the linked module's memory minimum from 2 pages to 7.
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
            read_artifact("taint-preservation.wasm"),
            "cannot be satisfied by the OPA hosts",
        ),
        // Straight from the linker: address-valued ABI globals.
        ("unfinished module", linked.clone(), "opa_wasm_abi_version"),
        ("7 pages of static data", outgrown, "the hosts supply 5"),
        ("globals left as addresses", fitted, "opa_wasm_abi_version"),
    ];
    for (name, wasm, want) in cases {
        let error = metadata::check_opa(&wasm).expect_err(name);
        assert!(error.contains(want), "{name}: {error}");
    }
    // The artifact is the finished linked module plus the metadata section.
    assert!(finished.starts_with(&opa::finish(&linked).unwrap()));
}

#[test]
fn gatekeeper_metadata_is_the_policy_metadata_without_mutation() {
    for policy in POLICIES {
        let read = |file: &str| metadata::read(&read_artifact(file)).unwrap().unwrap();
        let wapc = read(&format!("{policy}.wasm"));
        let gatekeeper = read(&format!("{policy}.gatekeeper.wasm"));
        assert_eq!(gatekeeper["executionMode"], "gatekeeper");
        assert_eq!(gatekeeper["mutating"], Value::Bool(false));
        assert_eq!(gatekeeper["protocolVersion"], "Unknown");
        for same in ["rules", "annotations", "backgroundAudit", "policyType"] {
            assert_eq!(gatekeeper[same], wapc[same], "{policy}: {same}");
        }
    }
    let yml = "rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [CREATE]}]\nmutating: true\n";
    let meta = metadata::metadata_json(yml, "usage").unwrap();
    assert!(metadata::for_execution_mode(meta.clone(), "rego").is_err());
    let opa = metadata::for_execution_mode(meta, "opa").unwrap();
    assert_eq!(
        (&opa["executionMode"], &opa["mutating"]),
        (&Value::from("opa"), &Value::Bool(false))
    );
}
