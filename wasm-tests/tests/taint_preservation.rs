//! dist/taint-preservation.wasm in the waPC host policy-server runs: a fresh instance per call.

use serde_json::{json, Value};
use taintguard_wasm_metadata::{section, wapc};
use wasm_tests::examples::{outcome, Expect};
use wasm_tests::kubewarden::{admission_request, admission_response, WapcPolicy};
use wasm_tests::{read_artifact, repo_root};

const ARTIFACT: &str = "taint-preservation.wasm";

fn policy() -> WapcPolicy {
    WapcPolicy::from_bytes(&read_artifact(ARTIFACT)).expect("module compiles")
}

fn example(name: &str) -> Value {
    let path = repo_root()
        .join("policies/taint-preservation/examples/requests")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The RFC 6902 patch policy-server would send, as (op, path) pairs.
fn patch_paths(request: &Value, response: &Value) -> Vec<(String, String)> {
    let review = admission_response(request, response);
    review
        .get("patch")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|op| {
            (
                op["op"].as_str().unwrap().to_owned(),
                op["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn incidents_and_overrides() {
    let policy = policy();
    struct Case {
        request: &'static str,
        settings: Value,
        expect: Expect,
        /// Exactly the patch operations expected: nothing else may change.
        patch: &'static [(&'static str, &'static str)],
        mentions: &'static [&'static str],
    }
    let cases = [
        Case {
            request: "incident-1-stale-taint-patch",
            settings: json!({}),
            expect: Expect::Mutated,
            patch: &[("add", "/spec/taints/2"), ("add", "/spec/taints/3")],
            mentions: &["example.com/dedicated=gpu:NoSchedule", "node-controller"],
        },
        Case {
            request: "incident-1-stale-taint-patch",
            settings: json!({"mode": "deny"}),
            expect: Expect::Rejected,
            patch: &[],
            mentions: &[
                "may not remove protected taint example.com/dedicated=gpu:NoSchedule",
                "`permitted`",
            ],
        },
        Case {
            request: "incident-3-readd-uninitialized",
            settings: json!({}),
            expect: Expect::Mutated,
            patch: &[("remove", "/spec/taints/1"), ("remove", "/spec/taints/1")],
            mentions: &[
                "node.cloudprovider.kubernetes.io/uninitialized",
                "karpenter",
            ],
        },
        Case {
            request: "incident-2-uncordon-by-other-controller",
            settings: json!({}),
            expect: Expect::Mutated,
            patch: &[("replace", "/spec/unschedulable")],
            mentions: &[
                "cordoned by \\\"alice@example.com\\\"",
                "nvidia-driver-manager",
            ],
        },
        Case {
            request: "incident-2-uncordon-by-other-controller",
            settings: json!({"permitted": {"serviceAccounts": ["gpu-operator/*"]}}),
            expect: Expect::Mutated,
            patch: &[("remove", "/metadata/annotations/taintguard.io~1cordoned-by")],
            mentions: &[],
        },
        Case {
            request: "admin-removes-protected-taint",
            settings: json!({}),
            expect: Expect::Accepted,
            patch: &[],
            mentions: &[],
        },
        Case {
            request: "admin-uncordons",
            settings: json!({}),
            expect: Expect::Accepted,
            patch: &[],
            mentions: &[],
        },
        Case {
            request: "label-update-by-service-account",
            settings: json!({"mode": "deny"}),
            expect: Expect::Accepted,
            patch: &[],
            mentions: &[],
        },
        Case {
            request: "person-cordons",
            settings: json!({}),
            expect: Expect::Mutated,
            patch: &[("add", "/metadata/annotations/taintguard.io~1cordoned-by")],
            mentions: &[],
        },
        Case {
            request: "incident-1-stale-taint-patch",
            settings: json!({"protectedTaints": [{"key": "example.com/*"}]}),
            expect: Expect::Mutated,
            patch: &[("add", "/spec/taints/2")],
            mentions: &[],
        },
    ];
    for case in cases {
        let request = example(case.request);
        let response = policy.validate(&request, &case.settings).unwrap();
        let name = format!("{} with {}", case.request, case.settings);
        assert_eq!(outcome(&response), case.expect, "{name}: {response}");
        let want: Vec<(String, String)> = case
            .patch
            .iter()
            .map(|(o, p)| (o.to_string(), p.to_string()))
            .collect();
        assert_eq!(patch_paths(&request, &response), want, "{name}");
        let text = response.to_string();
        for part in case.mentions {
            assert!(text.contains(part), "{name}: {part:?} not in {text}");
        }
        if case.expect == Expect::Rejected {
            assert_eq!(response["code"], 403, "{name}");
        }
    }
}

#[test]
fn restored_object_keeps_unknown_fields_and_restored_entries_verbatim() {
    let request = example("incident-1-stale-taint-patch");
    let response = policy().validate(&request, &json!({})).unwrap();
    let mutated = &response["mutated_object"];
    let object = &admission_request(&request)["object"];
    let old = &admission_request(&request)["oldObject"];
    // Everything but spec.taints is the incoming object.
    let mut without_taints = mutated.clone();
    without_taints["spec"]["taints"] = object["spec"]["taints"].clone();
    assert_eq!(&without_taints, object);
    assert_eq!(
        mutated["spec"]["sliceOfTheFuture"],
        json!({"kubernetes2031Field": [1, 2, 3]})
    );
    // The list is the controller's entries followed by the protected ones from oldObject.
    let taints = mutated["spec"]["taints"].as_array().unwrap();
    assert_eq!(
        &taints[..2],
        object["spec"]["taints"].as_array().unwrap().as_slice()
    );
    assert_eq!(
        &taints[2..],
        old["spec"]["taints"].as_array().unwrap().as_slice()
    );
}

#[test]
fn restore_is_idempotent() {
    let policy = policy();
    for name in [
        "incident-1-stale-taint-patch",
        "incident-2-uncordon-by-other-controller",
        "incident-3-readd-uninitialized",
    ] {
        let mut request = example(name);
        let response = policy.validate(&request, &json!({})).unwrap();
        request["request"]["object"] = response["mutated_object"].clone();
        let again = policy.validate(&request, &json!({})).unwrap();
        assert_eq!(outcome(&again), Expect::Accepted, "{name}: {again}");
    }
}

#[test]
fn settings_validation_names_the_field() {
    let policy = policy();
    let cases = [
        (json!({}), None),
        (
            json!({"mode": "deny", "permitted": {"serviceAccounts": ["karpenter/karpenter"]}}),
            None,
        ),
        (json!({"mode": "hard"}), Some("`mode`")),
        (
            json!({"protectedTaint": []}),
            Some("`protectedTaint`: unknown field"),
        ),
        (
            json!({"protectedTaints": [{"key": "example.com/[x"}]}),
            Some("`protectedTaints[0].key`"),
        ),
        (
            json!({"oneShotTaints": [{"key": "a", "effects": ["NoRun"]}]}),
            Some("`oneShotTaints[0].effects[0]`: unknown effect"),
        ),
        (
            json!({"permitted": {"users": ["alice", " "]}}),
            Some("`permitted.users[1]`: empty principal name"),
        ),
        (
            json!({"protectedTaints": [{"key": "a", "permitted": {"groups": [""]}}]}),
            Some("`protectedTaints[0].permitted.groups[0]`"),
        ),
        (
            json!({"cordon": {"ownerAnnotation": "-bad-"}}),
            Some("`cordon.ownerAnnotation`"),
        ),
    ];
    for (settings, error) in cases {
        let answer = policy.validate_settings(&settings).unwrap();
        match error {
            None => assert_eq!(answer, json!({"valid": true}), "{settings}"),
            Some(part) => {
                assert_eq!(answer["valid"], false, "{settings}");
                let message = answer["message"].as_str().unwrap();
                assert!(
                    message.contains(part),
                    "{settings}: {part:?} not in {message}"
                );
            }
        }
    }
}

#[test]
fn malformed_requests_are_rejected_not_trapped() {
    let policy = policy();
    let node = admission_request(&example("incident-1-stale-taint-patch"))["oldObject"].clone();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json".to_vec(), "malformed validation payload"),
        (br#"{"settings":{}}"#.to_vec(), "missing field `request`"),
        (json!({"request": {"kind": {"kind": "Node"}, "operation": "UPDATE"}, "settings": {}}).to_string().into_bytes(), "missing field `userInfo`"),
        (json!({"request": {"kind": {"kind": "Node"}, "operation": "UPDATE", "userInfo": {}, "object": node}, "settings": {}}).to_string().into_bytes(), "without oldObject"),
        (json!({"request": {"kind": {"kind": "Node"}, "operation": "UPDATE", "userInfo": {}, "object": {"spec": {"taints": "x"}}, "oldObject": node}, "settings": {}}).to_string().into_bytes(), "object.spec.taints"),
        (json!({"request": {"kind": {"kind": "Node"}, "operation": "UPDATE", "userInfo": {}}, "settings": {"mode": 3}}).to_string().into_bytes(), "`mode`: expected a string"),
        // The request and the envelope are read in one pass; when that pass fails they are read
        // apart, so that bad settings still win over a bad request.
        (json!({"request": {"kind": {"kind": "Node"}, "operation": "UPDATE"}, "settings": {"mode": 3}}).to_string().into_bytes(), "`mode`: expected a string"),
        (json!({"request": {"kind": {"kind": "Node"}, "operation": "UPDATE", "userInfo": {"username": 7}}}).to_string().into_bytes(), "(at `userInfo.username`)"),
    ];
    for (payload, part) in cases {
        let out = policy
            .call("validate", &payload)
            .expect("validate answers instead of failing");
        let response: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(response["accepted"], false, "{response}");
        assert_eq!(response["code"], 400, "{response}");
        let message = response["message"].as_str().unwrap();
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    let err = policy.call("no_such_operation", b"{}").unwrap_err();
    assert!(err.contains("No handler registered"), "{err}");
}

#[test]
fn protocol_version_and_embedded_metadata() {
    let bytes = read_artifact(ARTIFACT);
    let answer = WapcPolicy::from_bytes(&bytes)
        .unwrap()
        .call("protocol_version", b"")
        .unwrap();
    assert_eq!(answer, b"\"v1\"");
    wapc::check(&bytes).unwrap();
    let meta = section::read_json(&bytes)
        .unwrap()
        .expect("metadata section");
    assert_eq!(meta["protocolVersion"], "v1");
    assert_eq!(meta["executionMode"], "kubewarden-wapc");
    assert_eq!(meta["mutating"], true);
    assert_eq!(
        meta["rules"],
        json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["nodes"], "operations": ["CREATE", "UPDATE"]}])
    );
    let annotations = &meta["annotations"];
    for key in [
        "io.kubewarden.policy.title",
        "io.kubewarden.policy.version",
        "io.kubewarden.policy.description",
        "io.kubewarden.policy.source",
        "io.kubewarden.policy.license",
        "io.artifacthub.displayName",
        "io.artifacthub.resources",
        "io.artifacthub.keywords",
    ] {
        assert!(
            annotations[key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}"
        );
    }
    let readme =
        std::fs::read_to_string(repo_root().join("policies/taint-preservation/README.md")).unwrap();
    assert_eq!(annotations["io.kubewarden.policy.usage"], readme);
}
