//! The `matchConditions` of `cluster-admission-policy-status.yaml`, evaluated with cel-rust as
//! Kubernetes 1.28+ evaluates them before it calls the webhook (docs/records.md): a condition
//! that filters out a status write the policy would act on is a hole, and this test names it.

use serde_json::{json, Value};

use taint_preservation::{Settings, TaintPreservation};
use taintguard::{run, Half, NoCluster};

fn shipped_conditions() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/cluster-admission-policy-status.yaml"
    );
    let doc: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let conditions = doc["spec"]["matchConditions"]
        .as_array()
        .expect("matchConditions");
    conditions
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().to_owned();
            (name, c["expression"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Whether every condition holds for `request`, as the API server decides whether to call.
fn sent(conditions: &[(String, String)], request: &Value) -> bool {
    conditions.iter().all(|(name, expression)| {
        let program = cel::Program::compile(expression)
            .unwrap_or_else(|e| panic!("matchCondition {name} does not compile: {e}"));
        let mut context = cel::Context::default();
        for variable in ["object", "oldObject", "request"] {
            let value = if variable == "request" {
                request.clone()
            } else {
                request[variable].clone()
            };
            context.add_variable(variable, value).unwrap();
        }
        match program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => holds,
            other => panic!("matchCondition {name} on {request}: {other:?}"),
        }
    })
}

fn node(annotations: Value, taints: Value, conditions: Value) -> Value {
    let mut node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1"}},
        "spec": {"taints": taints}, "status": {"conditions": conditions}});
    if !annotations.is_null() {
        node["metadata"]["annotations"] = annotations;
    }
    node
}

fn status_write(user: &str, old: Value, new: Value) -> Value {
    json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"}, "subResource": "status",
        "name": "worker-1", "operation": "UPDATE",
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "object": new, "oldObject": old})
}

#[test]
fn the_conditions_name_exactly_the_default_records() {
    let conditions = shipped_conditions();
    let expression = &conditions[0].1;
    let settings = Settings::default();
    let keys = settings.record_annotations();
    for key in &keys {
        assert!(
            expression.contains(&format!("'{key}'")),
            "{key} is not compared"
        );
    }
    assert_eq!(
        expression.matches("', '").count() + 1,
        keys.len(),
        "{expression}"
    );
}

/// Every status write the policy acts on (a patch, a refusal, a warning) passes the conditions;
/// the writes kubelet and node-problem-detector make never do.
#[test]
fn no_status_write_the_policy_acts_on_is_filtered_out() {
    let conditions = shipped_conditions();
    let dedicated = json!([{"key": "example.com/dedicated", "effect": "NoSchedule"}]);
    let ready = json!([{"type": "Ready", "status": "True"}]);
    let not_ready = json!([{"type": "Ready", "status": "False"}]);
    let plain = json!({"node.alpha.kubernetes.io/ttl": "0"});
    let with = |key: &str, value: &str| {
        let mut a = plain.clone();
        a[key] = json!(value);
        a
    };
    let npd = "system:serviceaccount:kube-system:node-problem-detector";
    let forged_owner = with(
        "taintguard.io/taint-owners",
        r#"{"example.com/dedicated:NoSchedule":"x"}"#,
    );
    // (name, writer, old annotations, new annotations, new taints, whether the policy must see it)
    let cases: Vec<(&str, &str, Value, Value, Value, bool)> = vec![
        (
            "kubelet's condition",
            "system:node:worker-1",
            plain.clone(),
            plain.clone(),
            dedicated.clone(),
            false,
        ),
        (
            "a Node without annotations",
            "system:node:worker-1",
            Value::Null,
            Value::Null,
            dedicated.clone(),
            false,
        ),
        (
            "a status write with a stale spec",
            npd,
            plain.clone(),
            plain.clone(),
            json!([]),
            false,
        ),
        (
            "a forged owner entry",
            npd,
            plain.clone(),
            forged_owner.clone(),
            dedicated.clone(),
            true,
        ),
        (
            "a forged owner entry on a Node without annotations",
            npd,
            Value::Null,
            forged_owner.clone(),
            dedicated.clone(),
            true,
        ),
        (
            "an owner record deleted",
            npd,
            forged_owner.clone(),
            plain.clone(),
            dedicated.clone(),
            true,
        ),
        (
            "an owner record emptied",
            npd,
            forged_owner,
            with("taintguard.io/taint-owners", ""),
            dedicated.clone(),
            true,
        ),
        (
            "a forged cordon owner",
            npd,
            with("taintguard.io/cordoned-by", "alice"),
            with("taintguard.io/cordoned-by", npd),
            dedicated.clone(),
            true,
        ),
        (
            "a forged one-shot record",
            npd,
            plain.clone(),
            with(
                "taintguard.io/removed-startup-taints",
                "ebs.csi.aws.com/agent-not-ready:NoExecute",
            ),
            dedicated.clone(),
            true,
        ),
        (
            "a forged NFD record",
            npd,
            plain.clone(),
            with(
                "nfd.node.kubernetes.io/taints",
                "example.com/dedicated:NoSchedule",
            ),
            dedicated.clone(),
            true,
        ),
        (
            "a forged Cluster API record",
            npd,
            plain.clone(),
            with(
                "cluster.x-k8s.io/taints-from-machine",
                "example.com/dedicated:NoSchedule",
            ),
            dedicated.clone(),
            true,
        ),
        (
            "a forged Talos record",
            npd,
            plain.clone(),
            with("talos.dev/owned-taints", r#"["example.com/dedicated"]"#),
            dedicated.clone(),
            true,
        ),
        (
            "another annotation changed",
            npd,
            plain.clone(),
            with("example.com/other", "x"),
            dedicated.clone(),
            false,
        ),
    ];
    for (name, user, old_annotations, new_annotations, new_taints, acts) in cases {
        let old = node(old_annotations, dedicated.clone(), ready.clone());
        let new = node(new_annotations, new_taints, not_ready.clone());
        let request = status_write(user, old, new);
        for settings in [json!({}), json!({"mode": "deny"})] {
            let verdict = run::<TaintPreservation>(
                &request.to_string(),
                &settings.to_string(),
                Half::Mutating,
                &NoCluster("test"),
            );
            let acted = !verdict.accepted()
                || verdict.mutated_object().is_some()
                || !verdict.warnings.is_empty();
            assert_eq!(acted, acts, "{name} {settings}: {verdict:?}");
            assert!(
                !acted || sent(&conditions, &request),
                "a hole: {name} is filtered out"
            );
        }
        assert_eq!(sent(&conditions, &request), acts, "{name}: sent");
    }
}
