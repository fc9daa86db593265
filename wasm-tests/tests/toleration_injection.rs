//! dist/toleration-injection.wasm in the waPC host policy-server runs: a fresh instance per call.

use serde_json::{json, Value};
use taintguard_wasm_metadata::{section, wapc};
use wasm_tests::examples::{outcome, Expect};
use wasm_tests::kubewarden::{admission_request, admission_response, WapcPolicy};
use wasm_tests::{read_artifact, repo_root};

const ARTIFACT: &str = "toleration-injection.wasm";
const CP: &str = "node-role.kubernetes.io/control-plane";
const MASTER: &str = "node-role.kubernetes.io/master";

fn policy() -> WapcPolicy {
    WapcPolicy::from_bytes(&read_artifact(ARTIFACT)).expect("module compiles")
}

fn example_dir() -> std::path::PathBuf {
    repo_root().join("policies/toleration-injection/examples")
}

fn request(name: &str) -> Value {
    let path = example_dir().join("requests").join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn settings(name: &str) -> Value {
    let path = example_dir().join("settings").join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The JSONPatch policy-server would send.
fn patch(request: &Value, response: &Value) -> Vec<Value> {
    admission_response(request, response)
        .get("patch")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn issue_cases_give_exactly_the_expected_patch() {
    let policy = policy();
    let cases: Vec<(&str, &str, Vec<Value>)> = vec![
        (
            "flannel-v0.24.4-daemonset",
            "default",
            vec![
                json!({"op": "add", "path": "/spec/template/spec/tolerations/4",
                        "value": {"key": MASTER, "operator": "Equal", "effect": "NoSchedule"}}),
            ],
        ),
        (
            "cronjob-tolerating-master",
            "default",
            vec![
                json!({"op": "add", "path": "/spec/jobTemplate/spec/template/spec/tolerations/1",
                        "value": {"key": CP, "operator": "Exists", "effect": "NoSchedule"}}),
            ],
        ),
        ("pod-tolerating-everything", "default", vec![]),
        ("pod-with-unrelated-tolerations", "default", vec![]),
        (
            "hostpath-helper-pod",
            "hostpath-provisioner",
            ["nvidia.com/gpu", "dedicated", CP, MASTER]
                .iter()
                .enumerate()
                .map(|(i, key)| {
                    json!({"op": "add", "path": format!("/spec/tolerations/{}", 2 + i),
                           "value": {"key": key, "operator": "Exists", "effect": "NoSchedule"}})
                })
                .collect(),
        ),
        (
            "hostpath-helper-pod-other-service-account",
            "hostpath-provisioner",
            vec![],
        ),
        (
            "hostpath-helper-pod-other-namespace",
            "hostpath-provisioner",
            vec![],
        ),
        (
            "critical-deployment-update",
            "critical-daemonsets",
            vec![
                json!({"op": "add", "path": "/spec/template/spec/tolerations",
                        "value": [{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"}]}),
            ],
        ),
    ];
    for (name, settings_name, want) in cases {
        let req = request(name);
        let response = policy.validate(&req, &settings(settings_name)).unwrap();
        assert_eq!(response["accepted"], true, "{name}: {response}");
        assert_eq!(patch(&req, &response), want, "{name} [{settings_name}]");
        let warnings = response
            .get("warnings")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        assert_eq!(
            warnings,
            want_warnings(&want),
            "{name}: one warning per added toleration"
        );
    }
}

fn want_warnings(patch: &[Value]) -> usize {
    patch
        .iter()
        .map(|op| op["value"].as_array().map_or(1, Vec::len))
        .sum()
}

#[test]
fn every_workload_kind_through_the_host() {
    let policy = policy();
    let kinds = [
        ("", "Pod", "/spec"),
        ("", "ReplicationController", "/spec/template/spec"),
        ("apps", "Deployment", "/spec/template/spec"),
        ("apps", "DaemonSet", "/spec/template/spec"),
        ("apps", "StatefulSet", "/spec/template/spec"),
        ("apps", "ReplicaSet", "/spec/template/spec"),
        ("batch", "Job", "/spec/template/spec"),
        ("batch", "CronJob", "/spec/jobTemplate/spec/template/spec"),
    ];
    for (group, kind, pointer) in kinds {
        let api_version = match group {
            "" => "v1".to_owned(),
            group => format!("{group}/v1"),
        };
        let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ops"}});
        let pod_spec = json!({"containers": [{"name": "c", "image": "i"}], "tolerations": [{"key": MASTER, "operator": "Exists"}]});
        let mut cursor = &mut object;
        let steps: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
        for (i, step) in steps.iter().enumerate() {
            cursor[*step] = if i + 1 == steps.len() {
                pod_spec.clone()
            } else {
                json!({})
            };
            cursor = &mut cursor[*step];
        }
        let req = json!({"uid": "u", "kind": {"group": group, "version": "v1", "kind": kind},
                         "resource": {"group": group, "version": "v1", "resource": "x"}, "namespace": "ops",
                         "operation": "CREATE", "userInfo": {"username": "alice"}, "object": object});
        let response = policy.validate(&req, &json!({})).unwrap();
        assert_eq!(
            patch(&req, &response),
            vec![
                json!({"op": "add", "path": format!("{pointer}/tolerations/1"), "value": {"key": CP, "operator": "Exists"}})
            ],
            "{kind}"
        );
        // The mutated object is the input plus that entry, nothing else.
        let mut mutated = response["mutated_object"].clone();
        mutated
            .pointer_mut(&format!("{pointer}/tolerations"))
            .unwrap()
            .as_array_mut()
            .unwrap()
            .pop();
        assert_eq!(mutated, admission_request(&req)["object"], "{kind}");
    }
}

#[test]
fn restrictions_deny_with_a_message_and_code() {
    let policy = policy();
    for (name, part) in [
        (
            "tenant-pod-tolerating-dedicated",
            "dedicated=gpu:NoSchedule",
        ),
        ("tenant-pod-tolerating-everything", "*:* (Exists)"),
    ] {
        let response = policy
            .validate(&request(name), &settings("tenant-restriction"))
            .unwrap();
        assert_eq!(outcome(&response), Expect::Rejected, "{name}");
        assert_eq!(response["code"], 403);
        let message = response["message"].as_str().unwrap();
        assert!(
            message.contains(part) && message.contains("dedicated-nodes"),
            "{message}"
        );
    }
}

#[test]
fn mutation_is_idempotent_through_the_host() {
    let policy = policy();
    for (name, settings_name) in [
        ("flannel-v0.24.4-daemonset", "critical-daemonsets"),
        ("hostpath-helper-pod", "hostpath-provisioner"),
    ] {
        let mut req = request(name);
        let first = policy.validate(&req, &settings(settings_name)).unwrap();
        req["request"]["object"] = first["mutated_object"].clone();
        let second = policy.validate(&req, &settings(settings_name)).unwrap();
        assert_eq!(outcome(&second), Expect::Accepted, "{name}: {second}");
    }
}

#[test]
fn bad_settings_are_refused_with_the_field() {
    let policy = policy();
    let cases = [
        (
            json!({"rules": [{"name": "r", "tolerations": [{"key": "a", "operator": "In"}]}]}),
            "`rules[0].tolerations[0].operator`",
        ),
        (
            json!({"rules": [{"name": "r", "match": {"jsonPath": [{"path": "$["}]}, "tolerations": [{"operator": "Exists"}]}]}),
            "invalid JSONPath",
        ),
        (
            json!({"rules": [{"name": "r", "tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]}]}),
            "takes no value",
        ),
        (
            json!({"rules": [{"name": "r", "tolerations": []}]}),
            "adds no tolerations",
        ),
        (
            json!({"rules": [{"name": "a", "tolerations": [{"operator": "Exists"}]}, {"name": "a", "tolerations": [{"operator": "Exists"}]}]}),
            "duplicate rule name",
        ),
        (
            json!({"rules": [{"name": "r", "match": {"labelSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}}, "tolerations": [{"operator": "Exists"}]}]}),
            "needs values",
        ),
        (
            json!({"rules": [{"name": "r", "tolerations": [{"key": "a", "effect": "Never"}]}]}),
            "unknown effect",
        ),
        (json!({"unknown": true}), "`unknown`: unknown field"),
    ];
    for (bad, part) in cases {
        let answer = policy.validate_settings(&bad).unwrap();
        assert_eq!(answer["valid"], false, "{bad}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    for name in [
        "default",
        "hostpath-provisioner",
        "critical-daemonsets",
        "tenant-restriction",
    ] {
        assert_eq!(
            policy.validate_settings(&settings(name)).unwrap(),
            json!({"valid": true}),
            "{name}"
        );
    }
}

#[test]
fn malformed_requests_are_rejected_not_trapped() {
    let policy = policy();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"request": {"kind": {"group": "apps", "kind": "Deployment"}, "operation": "CREATE", "userInfo": {}}, "settings": {}}),
            "no object",
        ),
        (
            json!({"request": {"kind": {"kind": "Pod"}, "operation": "CREATE", "userInfo": {}, "object": {"spec": {"tolerations": [1]}}}, "settings": {}}),
            "object.spec.tolerations",
        ),
        (
            json!({"request": {"kind": {"kind": "Pod"}, "userInfo": {}}, "settings": {}}),
            "missing field `operation`",
        ),
    ];
    for (payload, part) in cases {
        let out = policy
            .call("validate", payload.to_string().as_bytes())
            .expect("an answer, not a trap");
        let response: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(response["accepted"], false);
        assert_eq!(response["code"], 400);
        assert!(
            response["message"].as_str().unwrap().contains(part),
            "{response}"
        );
    }
}

#[test]
fn embedded_metadata() {
    let bytes = read_artifact(ARTIFACT);
    wapc::check(&bytes).unwrap();
    let meta = section::read_json(&bytes)
        .unwrap()
        .expect("metadata section");
    assert_eq!(meta["protocolVersion"], "v1");
    assert_eq!(meta["mutating"], true);
    let resources: Vec<&str> = meta["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            r["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
        })
        .collect();
    assert_eq!(
        resources,
        [
            "pods",
            "replicationcontrollers",
            "deployments",
            "daemonsets",
            "statefulsets",
            "replicasets",
            "jobs",
            "cronjobs",
            // podTolerationRestriction.guardAnnotations: annotations are written through the
            // object and its two subresources.
            "namespaces",
            "namespaces/status",
            "namespaces/finalize"
        ]
    );
    assert_eq!(
        meta["rules"][0]["operations"],
        json!(["CREATE", "UPDATE"]),
        "a Pod UPDATE may add tolerations: restrictions judge them"
    );
    let answer = WapcPolicy::from_bytes(&bytes)
        .unwrap()
        .call("protocol_version", b"")
        .unwrap();
    assert_eq!(answer, b"\"v1\"");
}
