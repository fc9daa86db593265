//! The policies deployed as Kubewarden's controller deploys a ClusterAdmissionPolicy: an entry of
//! policy-server's `policies.yml` and one webhook configuration each (docs/e2e.md).
//!
//! Every policy starts from its `policies/<name>/cluster-admission-policy.yaml`. The suite
//! deploys variants of it side by side, as a user would deploy several ClusterAdmissionPolicies,
//! each selecting its objects by the label `e2e.taintguard.io/variant`: restore and deny mode and
//! the gatekeeper build of taint-preservation, the waPC and gatekeeper builds of
//! toleration-injection.

use std::path::Path;

use base64::Engine;
use serde_json::{json, Value};

pub const VARIANT_LABEL: &str = "e2e.taintguard.io/variant";

/// The namespace Kubewarden runs in; its controller keeps every cluster-wide webhook out of it.
const KUBEWARDEN_NAMESPACE: &str = "kubewarden";

pub struct Deployed {
    /// `clusterwide-<name>`: the policy id in policies.yml and the URL path.
    pub id: String,
    pub module: String,
    pub mutating: bool,
    pub settings: Value,
    /// The ClusterAdmissionPolicy's spec.
    pub spec: Value,
}

fn read_yaml(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn variant_selector(operator: &str, variants: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": VARIANT_LABEL, "operator": operator, "values": variants}]})
}

/// One deployed variant of `policy`'s ClusterAdmissionPolicy.
fn variant(
    repo: &Path,
    policy: &str,
    name: &str,
    gatekeeper: bool,
    settings: Value,
    selector: Value,
) -> Result<Deployed, String> {
    let doc = read_yaml(
        &repo
            .join("policies")
            .join(policy)
            .join("cluster-admission-policy.yaml"),
    )?;
    let mut spec = doc["spec"].clone();
    spec["objectSelector"] = selector;
    serve_kubernetes_1_20(&mut spec);
    let artifact = if gatekeeper {
        format!("{policy}.gatekeeper.wasm")
    } else {
        format!("{policy}.wasm")
    };
    let module = repo.join("dist").join(&artifact);
    if !module.is_file() {
        return Err(format!("dist/{artifact} is missing: run ./build.sh first"));
    }
    // Engines that cannot mutate are deployed as validating policies.
    let mutating = !gatekeeper && spec["mutating"].as_bool().unwrap_or(false);
    spec["mutating"] = json!(mutating);
    Ok(Deployed {
        id: format!("clusterwide-{name}"),
        module: format!("file://{}", module.display()),
        mutating,
        settings,
        spec,
    })
}

/// The suite's API server is Kubernetes 1.20, which serves CronJobs as batch/v1beta1 only. The
/// shipped rules name only the APIs current Kubernetes serves (docs/admission.md), so the suite
/// adds batch/v1beta1 beside every batch/v1 rule for CronJobs, as a user of a cluster before 1.21
/// would.
fn serve_kubernetes_1_20(spec: &mut Value) {
    let Some(rules) = spec["rules"].as_array_mut() else {
        return;
    };
    let names_cronjobs = |rule: &Value| {
        rule["apiGroups"] == json!(["batch"])
            && rule["resources"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("cronjobs")))
    };
    let legacy: Vec<Value> = rules
        .iter()
        .filter(|rule| names_cronjobs(rule))
        .map(|rule| {
            let mut legacy = rule.clone();
            legacy["apiVersions"] = json!(["v1beta1"]);
            legacy["resources"] = json!(["cronjobs"]);
            legacy
        })
        .collect();
    rules.extend(legacy);
}

pub fn deployments(repo: &Path) -> Result<Vec<Deployed>, String> {
    let tp = read_yaml(&repo.join("policies/taint-preservation/cluster-admission-policy.yaml"))?;
    let tp_settings = tp["spec"]["settings"].clone();
    // The shipped hostpath-provisioner rule, with the example tenant restriction.
    let ti = read_yaml(&repo.join("policies/toleration-injection/cluster-admission-policy.yaml"))?;
    let mut ti_settings = ti["spec"]["settings"].clone();
    let restriction = read_json(
        &repo.join("policies/toleration-injection/examples/settings/tenant-restriction.json"),
    )?;
    ti_settings["restrictions"] = restriction["restrictions"].clone();
    Ok(vec![
        variant(
            repo,
            "taint-preservation",
            "taint-preservation",
            false,
            tp_settings.clone(),
            variant_selector("In", &["restore"]),
        )?,
        variant(
            repo,
            "taint-preservation",
            "taint-preservation-deny",
            false,
            json!({"mode": "deny"}),
            variant_selector("In", &["deny"]),
        )?,
        // RBAC as a way in (docs/context.md): the policy asks SubjectAccessReviews.
        variant(
            repo,
            "taint-preservation",
            "taint-preservation-rbac",
            false,
            json!({"rbac": {"enabled": true}}),
            variant_selector("In", &["rbac"]),
        )?,
        variant(
            repo,
            "taint-preservation",
            "taint-preservation-gatekeeper",
            true,
            tp_settings,
            variant_selector("In", &["gatekeeper"]),
        )?,
        variant(
            repo,
            "toleration-injection",
            "toleration-injection",
            false,
            ti_settings.clone(),
            variant_selector("NotIn", &["gatekeeper", "nodes"]),
        )?,
        // Tolerations from the nodes' taints (docs/context.md): the policy lists Nodes.
        variant(
            repo,
            "toleration-injection",
            "toleration-injection-nodes",
            false,
            node_taints_settings(),
            variant_selector("In", &["nodes"]),
        )?,
        variant(
            repo,
            "toleration-injection",
            "toleration-injection-gatekeeper",
            true,
            ti_settings,
            variant_selector("In", &["gatekeeper"]),
        )?,
    ])
}

/// The label of the Nodes whose taints the `nodes` variant tolerates.
pub const POOL_LABEL: &str = "e2e.taintguard.io/pool";

/// DaemonSets in kube-system tolerate every taint the pool's nodes carry, except `dedicated`.
pub fn node_taints_settings() -> Value {
    json!({"rules": [{
        "name": "system-daemonsets",
        "match": {"kinds": ["DaemonSet"], "namespaces": ["kube-system"]},
        "nodeTaints": {"nodeSelector": {"matchLabels": {POOL_LABEL: "context"}}, "except": ["dedicated"]}
    }]})
}

/// policy-server's `policies.yml` (JSON is YAML). As Kubewarden's controller writes it for a
/// ClusterAdmissionPolicy: its `contextAwareResources`, and every host capability granted.
pub fn policies_yml(deployed: &[Deployed]) -> String {
    let entries: serde_json::Map<String, Value> = deployed
        .iter()
        .map(|d| {
            (
                d.id.clone(),
                json!({
                    "module": d.module,
                    "settings": d.settings,
                    "allowedToMutate": d.mutating,
                    "policyMode": d.spec["mode"].as_str().unwrap_or("protect"),
                    "contextAwareResources": d.spec.get("contextAwareResources").cloned().unwrap_or(json!([])),
                    "hostCapabilities": ["*"],
                }),
            )
        })
        .collect();
    Value::Object(entries).to_string()
}

/// The webhook configuration Kubewarden's controller makes for a ClusterAdmissionPolicy.
pub fn webhook_configuration(d: &Deployed, policy_server_port: u16, ca_pem: &[u8]) -> Value {
    let spec = &d.spec;
    let mut namespace_expressions = vec![json!({
        "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [KUBEWARDEN_NAMESPACE]
    })];
    if let Some(own) = spec["namespaceSelector"]["matchExpressions"].as_array() {
        namespace_expressions.extend(own.iter().cloned());
    }
    let or = |value: &Value, default: Value| {
        if value.is_null() {
            default
        } else {
            value.clone()
        }
    };
    let kind = if d.mutating {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": d.id, "labels": {"e2e.taintguard.io/suite": "true"}},
        "webhooks": [{
            "name": format!("{}.kubewarden.admission", d.id),
            "clientConfig": {
                "url": format!("https://127.0.0.1:{policy_server_port}/validate/{}", d.id),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "rules": spec["rules"],
            "failurePolicy": or(&spec["failurePolicy"], json!("Fail")),
            "matchPolicy": or(&spec["matchPolicy"], json!("Equivalent")),
            "namespaceSelector": {"matchExpressions": namespace_expressions},
            "objectSelector": or(&spec["objectSelector"], json!({})),
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": or(&spec["timeoutSeconds"], json!(10)),
        }]
    })
}
