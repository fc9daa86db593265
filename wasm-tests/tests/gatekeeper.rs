//! dist/<policy>.gatekeeper.wasm: the interface burrego (Kubewarden's gatekeeper/opa modes) and
//! the OPA SDKs need, checked statically with exact function signatures, which the JavaScript
//! tests cannot see; and the metadata derived from the policy's `metadata.yml`. Verdicts are
//! tested in the real SDK by `wasm-tests/js/opa` (run by `./build.sh test`); the checks
//! themselves are tested in `buildtools/wasm-metadata`.

use serde_json::Value;
use taintguard_wasm_metadata::{opa, section};
use wasm_tests::{policies, read_artifact};

#[test]
fn artifacts_meet_both_hosts_interface() {
    for policy in policies() {
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
    for policy in policies() {
        let read = |file: &str| section::read_json(&read_artifact(file)).unwrap().unwrap();
        let wapc = read(&format!("{policy}.wasm"));
        let gatekeeper = read(&format!("{policy}.gatekeeper.wasm"));
        assert_eq!(gatekeeper["executionMode"], "gatekeeper");
        assert_eq!(gatekeeper["mutating"], Value::Bool(false));
        assert_eq!(gatekeeper["protocolVersion"], "Unknown");
        for same in ["rules", "backgroundAudit", "policyType"] {
            assert_eq!(gatekeeper[same], wapc[same], "{policy}: {same}");
        }
        // Its own package (docs/release.md): the identity annotations carry the mode, every
        // other annotation is the waPC build's.
        let identity = [
            ("io.kubewarden.policy.title", format!("{policy}-gatekeeper")),
            (
                "io.kubewarden.policy.ociUrl",
                format!("ghcr.io/taintguard/policies/{policy}-gatekeeper"),
            ),
            (
                "com.github.release.tag",
                format!("{policy}-gatekeeper/v0.1.0"),
            ),
        ];
        let mut rest = (
            gatekeeper["annotations"].clone(),
            wapc["annotations"].clone(),
        );
        for (key, want) in &identity {
            assert_eq!(
                gatekeeper["annotations"][key],
                want.as_str(),
                "{policy}: {key}"
            );
            rest.0.as_object_mut().unwrap().remove(*key);
            rest.1.as_object_mut().unwrap().remove(*key);
        }
        let display = "io.artifacthub.displayName";
        assert_eq!(
            gatekeeper["annotations"][display],
            format!(
                "{} (Gatekeeper)",
                wapc["annotations"][display].as_str().unwrap()
            )
            .as_str()
        );
        rest.0.as_object_mut().unwrap().remove(display);
        rest.1.as_object_mut().unwrap().remove(display);
        assert_eq!(rest.0, rest.1, "{policy}: the other annotations");
    }
}
