//! The context-aware rules (docs/context.md) of the built waPC modules, in the waPC host
//! policy-server runs, with the `kubewarden/kubernetes/*` host calls answered from recorded
//! answers: what the modules ask, and what they do with answers, errors and empty lists.

use serde_json::{json, Value};
use taintguard_wasm_metadata::section;
use wasm_tests::kubewarden::{ClusterAnswers, WapcPolicy};
use wasm_tests::read_artifact;

fn policy(artifact: &str) -> WapcPolicy {
    WapcPolicy::from_bytes(&read_artifact(artifact)).expect("module compiles")
}

/// A list of Nodes as policy-server's `list_resources_all` answers it (a Kubernetes `List`).
fn node_list() -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "812"}, "items": [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "gpu-1", "labels": {"pool": "gpu"}},
         "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                             {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}},
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "edge-1", "labels": {}},
         "spec": {"taints": [{"key": "example.com/edge", "effect": "NoExecute"}]}}]})
}

fn daemonset(tolerations: Value) -> Value {
    json!({"uid": "d1", "kind": {"group": "apps", "version": "v1", "kind": "DaemonSet"},
           "resource": {"group": "apps", "version": "v1", "resource": "daemonsets"},
           "namespace": "kube-system", "operation": "CREATE",
           "userInfo": {"username": "system:serviceaccount:kube-system:helm", "groups": []},
           "object": {"apiVersion": "apps/v1", "kind": "DaemonSet",
                      "metadata": {"name": "flannel", "namespace": "kube-system"},
                      "spec": {"selector": {"matchLabels": {"app": "flannel"}},
                               "template": {"metadata": {"labels": {"app": "flannel"}},
                                            "spec": {"containers": [{"name": "c", "image": "flannel:1"}],
                                                     "tolerations": tolerations}}}}})
}

fn node_taints_rule(node_taints: Value) -> Value {
    json!({"rules": [{"name": "cni", "match": {"kinds": ["DaemonSet"], "namespaces": ["kube-system"]},
                      "nodeTaints": node_taints}]})
}

fn tolerations_of(response: &Value) -> Vec<Value> {
    response["mutated_object"]["spec"]["template"]["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn toleration_injection_tolerates_what_the_listed_nodes_carry() {
    let policy = policy("toleration-injection.wasm");
    let exists =
        |key: &str, effect: &str| json!({"key": key, "operator": "Exists", "effect": effect});
    struct Case {
        label: &'static str,
        node_taints: Value,
        answer: Option<Result<Value, String>>,
        /// The tolerations of the mutated object; `None`: refused with code 500.
        tolerations: Option<Vec<Value>>,
        says: &'static str,
    }
    let cases = [
        Case {
            label: "every taint, named with its node",
            node_taints: json!({"except": ["dedicated"]}),
            answer: Some(Ok(node_list())),
            tolerations: Some(vec![
                exists("nvidia.com/gpu", "NoSchedule"),
                exists("example.com/edge", "NoExecute"),
            ]),
            says: "node edge-1 carries it",
        },
        Case {
            label: "an empty list adds nothing",
            node_taints: json!({}),
            answer: Some(Ok(json!({"apiVersion": "v1", "kind": "List", "items": []}))),
            tolerations: Some(vec![]),
            says: "",
        },
        Case {
            label: "the host call fails",
            node_taints: json!({}),
            answer: Some(Err(
                "Get \"https://10.0.0.1/api/v1/nodes\": connection refused".into(),
            )),
            tolerations: None,
            says: "connection refused",
        },
        Case {
            label: "the capability is not granted",
            node_taints: json!({}),
            answer: None,
            tolerations: None,
            says:
                "has not been granted access to the 'kubernetes/list_resources_all' host capability",
        },
    ];
    for case in cases {
        let label = case.label;
        let answers = ClusterAnswers::answering(
            case.answer
                .into_iter()
                .map(|a| ("list_resources_all", a))
                .collect(),
        );
        let request = daemonset(json!([]));
        let response = policy
            .validate_with(&request, &node_taints_rule(case.node_taints), &answers)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let asked = answers.asked();
        assert_eq!(asked.len(), 1, "{label}: {asked:?}");
        assert_eq!(asked[0].0, "list_resources_all");
        assert_eq!(
            asked[0].1,
            json!({"api_version": "v1", "kind": "Node", "label_selector": null, "field_selector": null,
                   "field_masks": ["metadata.name", "metadata.labels", "spec.taints"]}),
            "{label}"
        );
        match case.tolerations {
            Some(want) => {
                assert_eq!(response["accepted"], true, "{label}: {response}");
                let got = tolerations_of(&response);
                if want.is_empty() {
                    assert!(
                        response.get("mutated_object").is_none(),
                        "{label}: {response}"
                    );
                } else {
                    // The control-plane alias twin (master) comes along, as for any toleration.
                    assert_eq!(got[..want.len()], want[..], "{label}: {response}");
                }
            }
            None => {
                assert_eq!(response["accepted"], false, "{label}: {response}");
                assert_eq!(response["code"], 500, "{label}: {response}");
            }
        }
        let said = format!("{} {}", response["message"], response["warnings"]);
        assert!(said.contains(case.says), "{label}: {said}");
    }
}

#[test]
fn toleration_injection_asks_with_the_rule_node_selector_and_only_when_a_rule_needs_it() {
    let policy = policy("toleration-injection.wasm");
    let answers = ClusterAnswers::answering(vec![("list_resources_all", Ok(node_list()))]);
    let selector = json!({"nodeSelector": {"matchLabels": {"pool": "gpu"},
                                            "matchExpressions": [{"key": "spot", "operator": "DoesNotExist"}]}});
    policy
        .validate_with(&daemonset(json!([])), &node_taints_rule(selector), &answers)
        .unwrap();
    assert_eq!(answers.asked()[0].1["label_selector"], "pool=gpu,!spot");

    // Static rules and rules that do not match make no host call.
    let answers = ClusterAnswers::default();
    let static_rule =
        json!({"rules": [{"name": "s", "tolerations": [{"key": "a", "operator": "Exists"}]}]});
    let response = policy
        .validate_with(&daemonset(json!([])), &static_rule, &answers)
        .unwrap();
    assert_eq!(response["accepted"], true);
    let mut deployment = daemonset(json!([]));
    deployment["kind"]["kind"] = json!("Deployment");
    deployment["object"]["kind"] = json!("Deployment");
    let response = policy
        .validate_with(&deployment, &node_taints_rule(json!({})), &answers)
        .unwrap();
    assert_eq!(response["accepted"], true);
    assert!(answers.asked().is_empty(), "{:?}", answers.asked());
}

/// A stale write by a service account the lists do not permit: the protected taint is restored
/// unless RBAC grants `untaint` on this node.
#[test]
fn taint_preservation_asks_rbac_when_the_lists_do_not_permit() {
    let policy = policy("taint-preservation.wasm");
    let taint = json!({"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"});
    let node = |taints: Value| {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"},
               "spec": {"taints": taints}})
    };
    let request = json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"}, "name": "worker-1",
        "operation": "UPDATE",
        "userInfo": {"username": "system:serviceaccount:ops:break-glass", "groups": ["system:serviceaccounts", "ops"]},
        "object": node(json!([])), "oldObject": node(json!([taint]))});
    let on = json!({"rbac": {"enabled": true}});
    let status = |allowed: bool| {
        Ok(
            json!({"allowed": allowed, "reason": "RBAC: allowed by ClusterRoleBinding \"break-glass\""}),
        )
    };
    /// label, settings, the recorded `can_i` answer, calls made, restored, what a warning says
    type Case<'a> = (
        &'a str,
        Value,
        Option<Result<Value, String>>,
        usize,
        bool,
        &'a str,
    );
    let cases: [Case; 5] = [
        (
            "granted",
            on.clone(),
            Some(status(true)),
            1,
            false,
            "may untaint nodes/worker-1",
        ),
        (
            "refused",
            on.clone(),
            Some(status(false)),
            1,
            true,
            "this policy's patch puts it back",
        ),
        (
            "the call fails",
            on.clone(),
            Some(Err(
                "subjectaccessreviews.authorization.k8s.io is forbidden".into(),
            )),
            1,
            true,
            "is forbidden",
        ),
        (
            "not granted the capability",
            on.clone(),
            None,
            1,
            true,
            "RBAC could not be asked",
        ),
        (
            "disabled",
            json!({}),
            Some(status(true)),
            0,
            true,
            "this policy's patch puts it back",
        ),
    ];
    for (label, settings, answer, calls, restored, says) in cases {
        let answers = ClusterAnswers::answering(answer.into_iter().map(|a| ("can_i", a)).collect());
        let response = policy.validate_with(&request, &settings, &answers).unwrap();
        assert_eq!(response["accepted"], true, "{label}: {response}");
        assert_eq!(
            response.get("mutated_object").is_some(),
            restored,
            "{label}: {response}"
        );
        let asked = answers.asked();
        assert_eq!(asked.len(), calls, "{label}: {asked:?}");
        if calls == 1 {
            assert_eq!(asked[0].0, "can_i");
            assert_eq!(
                asked[0].1,
                json!({"subject_access_review": {
                          "user": "system:serviceaccount:ops:break-glass",
                          "groups": ["system:serviceaccounts", "ops"],
                          "resource_attributes": {"verb": "untaint", "group": "taintguard.io",
                              "resource": "nodes", "name": "worker-1", "namespace": null,
                              "subresource": null, "version": null}},
                       "disable_cache": true}),
                "{label}"
            );
        }
        assert!(
            response["warnings"].to_string().contains(says),
            "{label}: {response}"
        );
    }
}

/// Each module names in its metadata exactly the host capabilities it can call, and its data
/// holds the names of no others (kwctl finds a module's calls by those names there); the
/// gatekeeper modules call none and declare none, and read the resources they declare from the
/// inventory Kubewarden hands them.
#[test]
fn modules_declare_exactly_the_host_capabilities_they_call() {
    let operations = [
        "list_resources_all",
        "list_resources_by_namespace",
        "get_resource",
        "can_i",
    ];
    let cases = [
        // It reads no resource: `can_i` is granted by the host capability alone.
        (
            "taint-preservation.wasm",
            &["kubernetes/can_i"][..],
            &[][..],
        ),
        // Nodes for `nodeTaints` rules, a Pod's Namespace for `podTolerationRestriction`.
        (
            "toleration-injection.wasm",
            &["kubernetes/list_resources_all", "kubernetes/get_resource"][..],
            &[
                json!({"apiVersion": "v1", "kind": "Namespace"}),
                json!({"apiVersion": "v1", "kind": "Node"}),
            ][..],
        ),
        ("taint-preservation.gatekeeper.wasm", &[][..], &[][..]),
        // No host call; the same resources, which Kubewarden's gatekeeper mode hands it as its
        // inventory (docs/context.md).
        (
            "toleration-injection.gatekeeper.wasm",
            &[][..],
            &[
                json!({"apiVersion": "v1", "kind": "Namespace"}),
                json!({"apiVersion": "v1", "kind": "Node"}),
            ][..],
        ),
    ];
    for (artifact, declared, resources) in cases {
        let bytes = read_artifact(artifact);
        let metadata = section::read_json(&bytes)
            .unwrap()
            .expect("metadata section");
        let listed: Vec<String> = metadata
            .get("hostCapabilities")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(listed, declared, "{artifact}");
        assert_eq!(
            metadata["contextAwareResources"].as_array().unwrap()[..],
            resources[..],
            "{artifact}"
        );
        let data = data_segments(&bytes);
        for operation in operations {
            let carried = data
                .windows(operation.len())
                .any(|w| w == operation.as_bytes());
            let wanted = declared.contains(&format!("kubernetes/{operation}").as_str());
            assert_eq!(carried, wanted, "{artifact}: carries {operation:?}");
        }
    }
}

/// The bytes of a module's data segments, where kwctl looks for the names of the host calls a
/// module makes (the embedded README, which names them too, is a custom section).
fn data_segments(module: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let Ok(wasmparser::Payload::DataSection(reader)) = payload {
            for data in reader.into_iter().flatten() {
                out.extend_from_slice(data.data);
                out.push(0xff);
            }
        }
    }
    out
}

/// A kwctl session answers only the very request it recorded, in order, as `kwctl run
/// --replay-host-capabilities-interactions` does: the bundled session for worker-1 grants
/// worker-1, answers nothing for another node, and a session with no entry left answers nothing.
#[test]
fn kwctl_sessions_replay_only_what_they_recorded() {
    let policy = policy("taint-preservation.wasm");
    let examples = wasm_tests::repo_root().join("policies/taint-preservation/examples");
    let read = |path: &str| std::fs::read_to_string(examples.join(path)).unwrap();
    let request: Value =
        serde_json::from_str(&read("requests/incident-1-stale-taint-patch.json")).unwrap();
    let mut other_node = request.clone();
    for object in ["object", "oldObject"] {
        other_node["request"][object]["metadata"]["name"] = json!("worker-2");
    }
    other_node["request"]["name"] = json!("worker-2");
    let granted = read("sessions/untaint-granted.yml");
    let settings = json!({"rbac": {"enabled": true}});
    // (request, session, kept the taints, a warning mentions)
    let cases = [
        (&request, granted.as_str(), false, "by RBAC"),
        (
            &other_node,
            granted.as_str(),
            true,
            "Replay error: unexpected request",
        ),
        (
            &request,
            "[]",
            true,
            "the list of recorded responses is empty",
        ),
    ];
    for (request, session, kept, mentions) in cases {
        let answers = ClusterAnswers::replaying(session).unwrap();
        let response = policy.validate_with(request, &settings, &answers).unwrap();
        assert_eq!(response["accepted"], true, "{response}");
        assert_eq!(
            response["mutated_object"].is_object(),
            kept,
            "{mentions}: {response}"
        );
        assert!(
            response.to_string().contains(mentions),
            "{mentions}: {response}"
        );
    }
    let bad = [
        "not: a list",
        "- request: 'no tag'\n  response: {type: Success, payload: '{}'}",
    ];
    for session in bad {
        assert!(ClusterAnswers::replaying(session).is_err(), "{session}");
    }
}
