//! The `matchConditions` the policy's manifests ship, evaluated with cel-rust as Kubernetes 1.28+
//! evaluates them before it calls a webhook (docs/availability.md). A condition that filters out
//! a request the policy would refuse, patch, warn about or annotate is a hole: this test names
//! it. The corpus is the fuzz generator's requests, every bundled example request, and the
//! Node writes of a realistic stream, whose filtered share it prints.

use arbitrary::Unstructured;
use serde_json::{json, Value};

use taint_preservation::{Settings, TaintPreservation};
use taintguard::{read_settings, run, Half, NoCluster};
use taintguard_testkit::match_conditions::{
    acts, assert_no_bundled_hole, assert_ships_its_conditions, corpus, sent, Tally,
};

/// One request of the corpus: a hole is a request the policy acts on that its webhook's
/// conditions filter out; `Err` names it.
fn judge_one(request: &Value, settings: &str) -> Result<Option<bool>, String> {
    let Ok(parsed) = read_settings::<TaintPreservation>(settings) else {
        return Ok(None);
    };
    let status = request["subResource"] == "status";
    let conditions = if status {
        parsed.status_match_conditions()
    } else {
        parsed.match_conditions()
    };
    let text = request.to_string();
    let verdicts = [Half::Mutating, Half::Validating]
        .map(|half| run::<TaintPreservation>(&text, settings, half, &NoCluster("test")));
    let decision = sent(&conditions, request);
    // The guard on nodes/status ships with Ignore: an error skips it. The main webhook ships
    // with Fail: an error refuses the request, which is no hole.
    let filtered = match decision {
        Some(sent) => !sent,
        None => status,
    };
    if filtered && verdicts.iter().any(acts) {
        return Err(format!(
            "a hole: {request} with settings {settings} is filtered out, but the policy answers {:?}",
            verdicts[0]
        ));
    }
    Ok(decision)
}

#[test]
fn the_manifests_ship_the_conditions_their_settings_generate() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_ships_its_conditions::<TaintPreservation>(
        &folder.join("cluster-admission-policy.yaml"),
        Settings::match_conditions,
    );
    assert_ships_its_conditions::<TaintPreservation>(
        &folder.join("cluster-admission-policy-status.yaml"),
        Settings::status_match_conditions,
    );
}

/// The fuzz generator's hostile requests, with generated settings: no hole.
#[test]
fn no_generated_request_the_policy_acts_on_is_filtered_out() {
    let mut tally = Tally::default();
    for bytes in corpus(3000) {
        let Ok(case) = taintguard_testkit::gen::taint_preservation(&mut Unstructured::new(&bytes))
        else {
            continue;
        };
        let Ok(mut request) = serde_json::from_str::<Value>(&case.request) else {
            continue;
        };
        // A typed object omits an empty map: the API server never shows `annotations: null`.
        for member in ["object", "oldObject"] {
            if let Some(metadata) = request[member]["metadata"].as_object_mut() {
                metadata.retain(|key, value| key != "annotations" || !value.is_null());
            }
        }
        // The API server evaluates conditions on typed objects: each has metadata (a name at
        // least), and an UPDATE has both. The generator's others are no request it sends.
        let stored_shape = |member: &str| {
            request
                .get(member)
                .is_none_or(|o| o["metadata"].is_object())
        };
        let update_without_old =
            request["operation"] == "UPDATE" && request.get("oldObject").is_none();
        if !stored_shape("object") || !stored_shape("oldObject") || update_without_old {
            continue;
        }
        tally.count(judge_one(&request, &case.settings));
    }
    println!("generated requests: {tally}");
    assert!(
        tally.sent > 0 && tally.filtered > 0,
        "the corpus exercises both outcomes"
    );
}

/// Every bundled example request, with every bundled settings file: no hole.
#[test]
fn no_bundled_example_the_policy_acts_on_is_filtered_out() {
    let judged =
        assert_no_bundled_hole(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), judge_one);
    assert!(judged > 20, "{judged}");
}

fn node(taints: Value, unschedulable: bool, annotations: Value, ready: &str) -> Value {
    let mut node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1"},
                     "annotations": annotations},
        "spec": {"podCIDR": "10.244.1.0/24", "taints": taints},
        "status": {"conditions": [{"type": "Ready", "status": ready}]}});
    if unschedulable {
        node["spec"]["unschedulable"] = json!(true);
    }
    node
}

fn update(user: &str, sub_resource: Option<&str>, old: Value, new: Value) -> Value {
    let mut request = json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"},
        "name": "worker-1", "operation": "UPDATE",
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "object": new, "oldObject": old});
    if let Some(sub) = sub_resource {
        request["subResource"] = json!(sub);
    }
    request
}

/// Node writes as a cluster sends them, weighted by how often: the node lifecycle controller's
/// taint swaps, label and annotation writes, kubelet's and node-problem-detector's status
/// writes, and now and then a cordon, a person's taint, a stale whole-list patch and a forged
/// record. None the policy acts on is filtered out; the share filtered is printed.
#[test]
fn a_realistic_stream_mostly_never_reaches_the_policy() {
    let dedicated = json!({"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"});
    let unreachable = json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-29T09:00:00Z"}]);
    let owners =
        json!({"taintguard.io/taint-owners": "{\"example.com/dedicated:NoSchedule\":\"alice\"}"});
    let forged =
        json!({"taintguard.io/taint-owners": "{\"example.com/dedicated:NoSchedule\":\"npd\"}"});
    let with = |extra: &Value| {
        let mut list = vec![dedicated.clone()];
        list.extend(extra.as_array().into_iter().flatten().cloned());
        Value::Array(list)
    };
    let healthy = node(with(&json!([])), false, owners.clone(), "True");
    let lost = node(with(&unreachable), false, owners.clone(), "Unknown");
    let mut labelled = healthy.clone();
    labelled["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!("eu-west-1a");
    let controller = "system:serviceaccount:kube-system:node-controller";
    let npd = "system:serviceaccount:kube-system:node-problem-detector";
    // (weight, request, whether the policy must see it)
    let stream: Vec<(u32, Value, bool)> = vec![
        (
            40,
            update(
                "system:node:worker-1",
                Some("status"),
                healthy.clone(),
                node(with(&json!([])), false, owners.clone(), "False"),
            ),
            false,
        ),
        (
            20,
            update(
                npd,
                Some("status"),
                healthy.clone(),
                node(with(&json!([])), false, owners.clone(), "True"),
            ),
            false,
        ),
        (
            10,
            update(controller, None, healthy.clone(), lost.clone()),
            false,
        ),
        (
            10,
            update(controller, None, lost.clone(), healthy.clone()),
            false,
        ),
        (
            10,
            update(
                "system:serviceaccount:kube-system:cloud-node-manager",
                None,
                healthy.clone(),
                labelled,
            ),
            false,
        ),
        (
            3,
            update(
                "alice",
                None,
                healthy.clone(),
                node(with(&json!([])), true, owners.clone(), "True"),
            ),
            true,
        ),
        (
            3,
            update(
                "alice",
                None,
                healthy.clone(),
                node(
                    with(&json!([{"key": "example.com/maintenance", "effect": "NoSchedule"}])),
                    false,
                    owners.clone(),
                    "True",
                ),
            ),
            true,
        ),
        (
            2,
            update(
                controller,
                None,
                healthy.clone(),
                node(unreachable.clone(), false, owners.clone(), "Unknown"),
            ),
            true,
        ),
        (
            1,
            update(
                npd,
                Some("status"),
                healthy.clone(),
                node(with(&json!([])), false, forged, "True"),
            ),
            true,
        ),
    ];
    let (mut total, mut filtered) = (0, 0);
    for (weight, request, must_see) in &stream {
        let decision = judge_one(request, "{}").unwrap_or_else(|hole| panic!("{hole}"));
        assert_eq!(decision, Some(*must_see), "{request}");
        total += weight;
        if decision == Some(false) {
            filtered += weight;
        }
    }
    println!(
        "realistic stream: {filtered} of {total} Node writes ({:.0}%) never reach the policy",
        100.0 * f64::from(filtered) / f64::from(total)
    );
}
