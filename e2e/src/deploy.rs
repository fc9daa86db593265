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
    /// `clusterwide-<name>` (`clusterwide-group-<name>` for a policy group): the policy id in
    /// policies.yml and the URL path.
    pub id: String,
    pub mutating: bool,
    /// The resource's spec: the webhook's rules, selectors and policies.
    pub spec: Value,
    /// Its policies.yml entry, as the controller writes it.
    pub entry: Value,
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
    spec["module"] = json!(module_url(repo, &artifact));
    spec["settings"] = settings;
    Ok(cluster_admission_policy(name, spec))
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
    // The waPC toleration-injection judges every workload but those of its other variants and
    // of the deployment shapes (crate::shapes), whose webhooks are the subject there.
    let mut not_ours = vec!["gatekeeper", "nodes", "ptr", "ptr-fresh", "ptr-gatekeeper"];
    not_ours.extend(crate::shapes::VARIANTS);
    let mut deployed = vec![
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
        // NFD installed in namespace nfd, named as the README's worked example names it.
        variant(
            repo,
            "taint-preservation",
            "taint-preservation-nfd",
            false,
            read_json(
                &repo.join(
                    "policies/taint-preservation/examples/settings/nfd-in-namespace-nfd.json",
                ),
            )?,
            variant_selector("In", &["nfd"]),
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
            variant_selector("NotIn", &not_ours),
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
        // PodTolerationRestriction with the reference API server's plugin configuration
        // (crate::pod_toleration_restriction).
        variant(
            repo,
            "toleration-injection",
            "toleration-injection-ptr",
            false,
            json!({"podTolerationRestriction": crate::pod_toleration_restriction::settings()}),
            variant_selector("In", &["ptr"]),
        )?,
        // The same in the gatekeeper build, which reads the Namespace from the inventory
        // policy-server's gatekeeper mode builds from the spec's contextAwareResources.
        variant(
            repo,
            "toleration-injection",
            "toleration-injection-ptr-gatekeeper",
            true,
            json!({"podTolerationRestriction": crate::pod_toleration_restriction::settings()}),
            variant_selector("In", &["ptr-gatekeeper"]),
        )?,
        // The same, with every Pod's Namespace read from the API server (`namespaceReads`).
        variant(
            repo,
            "toleration-injection",
            "toleration-injection-ptr-fresh",
            false,
            json!({"podTolerationRestriction": crate::pod_toleration_restriction::fresh_settings()}),
            variant_selector("In", &["ptr-fresh"]),
        )?,
    ];
    deployed.extend(crate::shapes::deployments(repo));
    Ok(deployed)
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
