//! Property tests of the invariants in `testkit` over generated hostile requests, run by
//! `cargo test` (and so `./build.sh test`). Case counts stay moderate: the fuzz targets explore
//! the same space for as long as one lets them.

use arbitrary::Unstructured;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::{check_taint_preservation, check_toleration_injection, gen, valid_object, KINDS};
use taintguard::policy::{run, Half};
use toleration_injection::TolerationInjection;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Restore mode keeps every protected taint of oldObject unless the requester is permitted;
    /// a mutation touches only taints, spec.unschedulable and the owner annotation; unknown
    /// fields and key order survive; the policy's own output passes unchanged.
    #[test]
    fn taint_preservation_invariants(bytes in proptest::collection::vec(any::<u8>(), 64..2048)) {
        if let Ok(case) = gen::taint_preservation(&mut Unstructured::new(&bytes)) {
            if let Err(broken) = check_taint_preservation(&case.request, &case.settings) {
                return Err(TestCaseError::fail(format!("{broken}\n{case}")));
            }
        }
    }

    /// Injection only appends, never duplicates, changes nothing but the tolerations, and is
    /// idempotent.
    #[test]
    fn toleration_injection_invariants(bytes in proptest::collection::vec(any::<u8>(), 64..2048)) {
        if let Ok(case) = gen::toleration_injection(&mut Unstructured::new(&bytes)) {
            let namespace = case.namespace.as_deref();
            if let Err(broken) = check_toleration_injection(&case.request, &case.settings, namespace) {
                return Err(TestCaseError::fail(format!("{broken}\n{case}")));
            }
        }
    }
}

const GROUP: [&str; 3] = ["a.example/x", "b.example/x", "c.example/x"];

/// The tolerations (as values) a DaemonSet ends with when it starts with `toleration`.
fn after_aliasing(toleration: &Value) -> Vec<Value> {
    let object = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [], "tolerations": [toleration]}}}});
    let request = json!({"uid": "1", "kind": {"group": "apps", "version": "v1", "kind": "DaemonSet"},
        "namespace": "n", "operation": "CREATE", "userInfo": {"username": "alice"}, "object": object});
    let settings = json!({"aliases": {"groups": [GROUP]}});
    let verdict = run::<TolerationInjection>(
        &request.to_string(),
        &settings.to_string(),
        Half::Mutating,
        &taintguard::NoCluster("test"),
    );
    assert!(verdict.accepted(), "{verdict:?}");
    let original = object.to_string();
    let text = verdict.mutated_object().unwrap_or(&original);
    let value: Value = serde_json::from_str(text).unwrap();
    let mut list = value["spec"]["template"]["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .clone();
    list.sort_by_key(|t| t.to_string());
    list
}

proptest! {
    #![proptest_config(config(256))]

    /// Aliasing is symmetric: starting from any key of a group, with any operator, value,
    /// effect and seconds, a workload ends up tolerating the same set.
    #[test]
    fn aliasing_is_symmetric(
        from in 0..GROUP.len(),
        to in 0..GROUP.len(),
        exists in any::<bool>(),
        value in "[a-z]{0,2}",
        effect in prop::sample::select(vec!["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
        seconds in proptest::option::of(0i64..100),
    ) {
        let toleration = |key: &str| {
            let mut t = json!({"key": key, "operator": if exists { "Exists" } else { "Equal" }});
            if !exists && !value.is_empty() {
                t["value"] = json!(value);
            }
            if !effect.is_empty() {
                t["effect"] = json!(effect);
            }
            if let Some(s) = seconds {
                t["tolerationSeconds"] = json!(s);
            }
            t
        };
        let a = after_aliasing(&toleration(GROUP[from]));
        let b = after_aliasing(&toleration(GROUP[to]));
        prop_assert_eq!(a.len(), GROUP.len());
        prop_assert_eq!(a, b);
    }
}

/// Whether the request's object decodes as its kind's Kubernetes type.
fn decodes(request: &str) -> bool {
    let Ok(r) = serde_json::from_str::<Value>(request) else {
        return false;
    };
    let kind = r["kind"]["kind"].as_str().unwrap_or("");
    KINDS.contains(&kind) && valid_object(kind, &r["object"].to_string()).is_ok()
}

/// The generators reach every kind of verdict, so the properties above are not vacuous, and
/// mutate objects that decode, so that "a mutation keeps the object decodable" is not either.
#[test]
fn generated_cases_reach_every_verdict() {
    use taint_preservation::TaintPreservation;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut bytes = || {
        (0..1024)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (seed >> 56) as u8
            })
            .collect::<Vec<u8>>()
    };
    let mut seen = [[0u32; 4]; 2];
    for _ in 0..300 {
        let data = bytes();
        let cases = [
            gen::taint_preservation(&mut Unstructured::new(&data)).map(|case| {
                (
                    run::<TaintPreservation>(
                        &case.request,
                        &case.settings,
                        Half::Mutating,
                        &taintguard::NoCluster("test"),
                    ),
                    case.request,
                )
            }),
            gen::toleration_injection(&mut Unstructured::new(&data)).map(|case| {
                (
                    run::<TolerationInjection>(
                        &case.request,
                        &case.settings,
                        Half::Mutating,
                        &taintguard::NoCluster("test"),
                    ),
                    case.request,
                )
            }),
        ];
        for (policy, verdict) in cases.into_iter().enumerate() {
            let Ok((v, request)) = verdict else { continue };
            let kind = match (v.accepted(), v.mutated_object().is_some()) {
                (false, _) => 0,
                (true, true) => 1,
                (true, false) => 2,
            };
            seen[policy][kind] += 1;
            if kind == 1 && decodes(&request) {
                seen[policy][3] += 1;
            }
        }
    }
    for (policy, counts) in seen.iter().enumerate() {
        assert!(
            counts.iter().all(|c| *c >= 10),
            "policy {policy}: {counts:?} (rejected, mutated, accepted, mutated and decodes)"
        );
    }
}
