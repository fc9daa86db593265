//! dist/<policy>.gatekeeper.wasm: the interface burrego (Kubewarden's gatekeeper/opa modes) and
//! the OPA SDKs need, checked statically with exact function signatures, which the JavaScript
//! tests cannot see; and the metadata derived from the policy's `metadata.yml`. Verdicts are
//! tested in the real SDK by `wasm-tests/js/opa` (run by `./build.sh test`); the checks
//! themselves are tested in `tools/wasm-metadata`.

use serde_json::Value;
use taintguard_wasm_metadata::{opa, section};
use wasm_tests::read_artifact;

const POLICIES: [&str; 2] = ["taint-preservation", "toleration-injection"];

#[test]
fn artifacts_meet_both_hosts_interface() {
    for policy in POLICIES {
        let wasm = read_artifact(&format!("{policy}.gatekeeper.wasm"));
        opa::check(&wasm).unwrap_or_else(|e| panic!("{policy}: {e}"));
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
fn gatekeeper_metadata_is_the_policy_metadata_without_mutation() {
    for policy in POLICIES {
        let read = |file: &str| section::read_json(&read_artifact(file)).unwrap().unwrap();
        let wapc = read(&format!("{policy}.wasm"));
        let gatekeeper = read(&format!("{policy}.gatekeeper.wasm"));
        assert_eq!(gatekeeper["executionMode"], "gatekeeper");
        assert_eq!(gatekeeper["mutating"], Value::Bool(false));
        assert_eq!(gatekeeper["protocolVersion"], "Unknown");
        for same in ["rules", "annotations", "backgroundAudit", "policyType"] {
            assert_eq!(gatekeeper[same], wapc[same], "{policy}: {same}");
        }
    }
}
