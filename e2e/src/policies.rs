//! A ClusterAdmissionPolicy or ClusterAdmissionPolicyGroup as Kubewarden's controller deploys
//! it: an entry of policy-server's `policies.yml` and one webhook configuration each
//! (docs/e2e.md). Kept apart from `deploy`, which chooses what the suite deploys, so that the
//! scenario modules that declare policies of their own (`shapes`) build them without importing
//! `deploy`, which imports them.

use std::path::Path;

use base64::Engine;
use serde_json::{json, Value};

/// The namespace Kubewarden runs in; its controller keeps every cluster-wide webhook out of it.
const KUBEWARDEN_NAMESPACE: &str = "kubewarden";

/// A deployed policy: its id, whether its webhook mutates, its spec and its policies.yml entry.
pub struct Deployed {
    /// `clusterwide-<name>` (`clusterwide-group-<name>` for a policy group): the policy id in
    /// policies.yml and the URL path.
    pub id: String,
    pub mutating: bool,
    /// The resource's spec: the webhook's rules, selectors and policies.
    pub spec: Value,
    /// Its policies.yml entry, as the controller writes it.
    pub entry: Value,
}

/// A ClusterAdmissionPolicy named `name` with `spec`, and the policies.yml entry the controller
/// writes for it: module, settings, mutation, mode, context-aware resources, every host
/// capability, and `message` and `timeoutEvalSeconds` when the spec has them.
pub fn cluster_admission_policy(name: &str, spec: Value) -> Deployed {
    let mut entry = json!({
        "module": spec["module"],
        "settings": spec["settings"],
        "allowedToMutate": spec["mutating"].as_bool().unwrap_or(false),
        "policyMode": spec["mode"].as_str().unwrap_or("protect"),
        "contextAwareResources": spec.get("contextAwareResources").cloned().unwrap_or(json!([])),
        "hostCapabilities": ["*"],
    });
    for optional in ["message", "timeoutEvalSeconds"] {
        if let Some(value) = spec.get(optional) {
            entry[optional] = value.clone();
        }
    }
    Deployed {
        id: format!("clusterwide-{name}"),
        mutating: spec["mutating"].as_bool().unwrap_or(false),
        spec,
        entry,
    }
}

/// A ClusterAdmissionPolicyGroup named `name` (`spec.policies`, `spec.expression`,
/// `spec.message`, `spec.rules`, ...) and its policies.yml entry: each member's module,
/// settings, context-aware resources and timeout, with every host capability; never mutating.
pub fn cluster_admission_policy_group(name: &str, spec: Value) -> Deployed {
    let members: serde_json::Map<String, Value> = spec["policies"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(member, policy)| {
            let mut entry = json!({
                "module": policy["module"],
                "settings": policy.get("settings").cloned().unwrap_or(json!({})),
                "contextAwareResources": policy.get("contextAwareResources").cloned().unwrap_or(json!([])),
                "hostCapabilities": ["*"],
            });
            if let Some(timeout) = policy.get("timeoutEvalSeconds") {
                entry["timeoutEvalSeconds"] = timeout.clone();
            }
            (member.clone(), entry)
        })
        .collect();
    let entry = json!({
        "policyMode": spec["mode"].as_str().unwrap_or("protect"),
        "expression": spec["expression"],
        "message": spec["message"],
        "policies": members,
    });
    Deployed {
        id: format!("clusterwide-group-{name}"),
        mutating: false,
        spec,
        entry,
    }
}

/// `dist/<artifact>` as policy-server's module URL.
pub fn module_url(repo: &Path, artifact: &str) -> String {
    format!("file://{}", repo.join("dist").join(artifact).display())
}

/// policy-server's `policies.yml` (JSON is YAML). As Kubewarden's controller writes it for a
/// ClusterAdmissionPolicy: its `contextAwareResources`, and every host capability granted.
pub fn policies_yml(deployed: &[Deployed]) -> String {
    let entries: serde_json::Map<String, Value> = deployed
        .iter()
        .map(|d| (d.id.clone(), d.entry.clone()))
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
    let mut webhook = json!({
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
    });
    // Kubewarden 1.35 has no such field and leaves it unset (`Never`); the suite sets it to show
    // what it would change (docs/deployment.md).
    if let Some(reinvocation) = spec.get("reinvocationPolicy") {
        webhook["reinvocationPolicy"] = reinvocation.clone();
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": d.id, "labels": {"e2e.taintguard.io/suite": "true"}},
        "webhooks": [webhook]
    })
}
