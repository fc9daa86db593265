//! The `matchConditions` of `cluster-admission-policy.yaml`, evaluated with cel-rust as
//! Kubernetes 1.28+ evaluates them before it calls the webhook (docs/availability.md). The
//! webhook fails closed (`Fail`), so an evaluation error is no hole; a request the policy would
//! refuse, patch, warn about or annotate that the conditions filter out is, and this test names
//! it. The corpus is the fuzz generator's requests, every bundled example request with every
//! bundled settings file, and the writes of a realistic stream, whose filtered share it prints.

use arbitrary::Unstructured;
use serde_json::{json, Value};

use taintguard::{read_settings, run, Half, NoCluster};
use taintguard_testkit::match_conditions::{
    acts, assert_no_bundled_hole, assert_ships_its_conditions, corpus, manifest, sent, Tally,
};
use toleration_injection::{Settings, TolerationInjection};

/// One request of the corpus: whether it is sent; `Err` names a hole.
fn judge_one(request: &Value, settings: &str) -> Result<Option<bool>, String> {
    let Ok(parsed) = read_settings::<TolerationInjection>(settings) else {
        return Ok(None);
    };
    let decision = sent(&parsed.match_conditions(), request);
    if decision == Some(false) {
        let text = request.to_string();
        for half in [Half::Mutating, Half::Validating] {
            let verdict = run::<TolerationInjection>(&text, settings, half, &NoCluster("test"));
            if acts(&verdict) {
                return Err(format!(
                    "a hole: {request} with settings {settings} is filtered out, but the policy answers {verdict:?}"
                ));
            }
        }
    }
    Ok(decision)
}

#[test]
fn the_manifest_ships_the_conditions_its_settings_generate() {
    assert_ships_its_conditions::<TolerationInjection>(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster-admission-policy.yaml"),
        Settings::match_conditions,
    );
}

/// The fuzz generator's hostile requests, with generated settings: no hole.
#[test]
fn no_generated_request_the_policy_acts_on_is_filtered_out() {
    let mut tally = Tally::default();
    for bytes in corpus(3000) {
        let Ok(case) =
            taintguard_testkit::gen::toleration_injection(&mut Unstructured::new(&bytes))
        else {
            continue;
        };
        let Ok(request) = serde_json::from_str::<Value>(&case.request) else {
            continue;
        };
        tally.count(judge_one(&request, &case.settings));
    }
    println!("generated requests: {tally}");
    assert!(tally.sent > 0, "the corpus exercises the conditions");
}

/// Every bundled example request, with every bundled settings file: no hole.
#[test]
fn no_bundled_example_the_policy_acts_on_is_filtered_out() {
    let judged =
        assert_no_bundled_hole(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), judge_one);
    assert!(judged > 20, "{judged}");
}

fn pod(tolerations: Value, finalizers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-abc", "namespace": "tenant-a", "finalizers": finalizers,
                     "labels": {"job-name": "job"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "tolerations": tolerations}})
}

fn request(kind: &str, operation: &str, old: Option<Value>, new: Value) -> Value {
    let group = if kind == "Deployment" { "apps" } else { "" };
    let mut r = json!({"uid": "1", "kind": {"group": group, "version": "v1", "kind": kind},
        "namespace": "tenant-a", "name": new["metadata"]["name"], "operation": operation,
        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller",
                     "groups": ["system:serviceaccounts"]},
        "object": new});
    if let Some(old) = old {
        r["oldObject"] = old;
    }
    r
}

/// Writes as a cluster sends them, weighted by how often, against the shipped settings and
/// against settings with a tenant restriction and with PodTolerationRestriction: no hole; the
/// share kept from the policy is printed for each.
#[test]
fn a_realistic_stream_of_pod_and_namespace_writes() {
    let toleration = json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]);
    let tracked = json!(["batch.kubernetes.io/job-tracking"]);
    let running = pod(toleration.clone(), tracked);
    let finished = pod(toleration.clone(), json!([]));
    let mut relabelled = running.clone();
    relabelled["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = json!("u");
    let mut widened = running.clone();
    widened["spec"]["tolerations"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "dedicated", "operator": "Exists"}));
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "tenant-a"}, "spec": {"finalizers": ["kubernetes"]}});
    let mut finalized = namespace.clone();
    finalized["spec"]["finalizers"] = json!([]);
    let mut whitelisted = namespace.clone();
    whitelisted["metadata"]["annotations"] =
        json!({"scheduler.alpha.kubernetes.io/tolerationsWhitelist": "[]"});
    // (weight, request)
    let stream: Vec<(u32, Value)> = vec![
        (
            30,
            request("Pod", "UPDATE", Some(running.clone()), finished),
        ),
        (
            20,
            request("Pod", "UPDATE", Some(running.clone()), relabelled),
        ),
        (20, request("Pod", "CREATE", None, running.clone())),
        (
            5,
            request("Namespace", "UPDATE", Some(namespace.clone()), finalized),
        ),
        (1, request("Pod", "UPDATE", Some(running), widened)),
        (
            1,
            request("Namespace", "UPDATE", Some(namespace), whitelisted),
        ),
    ];
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/cluster-admission-policy.yaml");
    let doc = manifest(std::path::Path::new(shipped));
    let restricted = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/settings/tenant-restriction.json"
    );
    for (name, settings) in [
        ("the shipped settings", doc["spec"]["settings"].to_string()),
        (
            "a tenant restriction",
            std::fs::read_to_string(restricted).unwrap(),
        ),
        (
            "PodTolerationRestriction",
            json!({"podTolerationRestriction": {"enabled": true}}).to_string(),
        ),
    ] {
        let (mut total, mut filtered) = (0, 0);
        for (weight, request) in &stream {
            let decision = judge_one(request, &settings).unwrap_or_else(|hole| panic!("{hole}"));
            total += weight;
            if decision == Some(false) {
                filtered += weight;
            }
        }
        println!(
            "{name}: {filtered} of {total} Pod and Namespace writes ({:.0}%) never reach the policy",
            100.0 * f64::from(filtered) / f64::from(total)
        );
    }
}
