//! The policies the suite deploys, each as Kubewarden's controller deploys a
//! ClusterAdmissionPolicy (`policies`).
//!
//! Every policy starts from its `policies/<name>/cluster-admission-policy.yaml`. The suite
//! deploys variants of it side by side, as a user would deploy several ClusterAdmissionPolicies,
//! each selecting its objects by the label `e2e.taintguard.io/variant`: restore and deny mode and
//! the gatekeeper build of taint-preservation, the waPC and gatekeeper builds of
//! toleration-injection. The scenario modules that need a variant of their own give its settings
//! or policies (`context`, `pod_toleration_restriction`, `shapes`); this module imports them and
//! they never import it.

use std::path::Path;

use serde_json::{json, Value};

use crate::context::node_taints_settings;
use crate::labels::VARIANT_LABEL;
use crate::policies::{cluster_admission_policy, module_url, Deployed};

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

/// What one deployed variant of a policy's ClusterAdmissionPolicy changes of its manifest.
struct Variant<'a> {
    /// The ClusterAdmissionPolicy's name.
    name: &'a str,
    /// Whether the gatekeeper build of the module is deployed rather than the waPC one.
    gatekeeper: bool,
    /// The policy's settings.
    settings: Value,
    /// The objectSelector choosing the objects this variant judges.
    selector: Value,
}

/// One deployed variant of `policy`'s ClusterAdmissionPolicy.
fn variant(repo: &Path, policy: &str, v: Variant) -> Result<Deployed, String> {
    let manifest = format!("{policy}/cluster-admission-policy.yaml");
    from_manifest(repo, &manifest, v)
}

/// One deployed variant of the ClusterAdmissionPolicy `policies/<manifest>` for the module
/// named by the manifest's folder.
fn from_manifest(repo: &Path, manifest: &str, v: Variant) -> Result<Deployed, String> {
    let Variant {
        name,
        gatekeeper,
        settings,
        selector,
    } = v;
    let doc = read_yaml(&repo.join("policies").join(manifest))?;
    let policy = manifest.split('/').next().unwrap_or_default();
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

/// taint-preservation as shipped (its manifest's spec and settings), selecting `variant`, named
/// `taint-preservation-<variant>`: what the outage scenarios vary the failure settings of.
pub fn taint_preservation_variant(repo: &Path, variant_name: &str) -> Result<Deployed, String> {
    let manifest =
        read_yaml(&repo.join("policies/taint-preservation/cluster-admission-policy.yaml"))?;
    variant(
        repo,
        "taint-preservation",
        Variant {
            name: &format!("taint-preservation-{variant_name}"),
            gatekeeper: false,
            settings: manifest["spec"]["settings"].clone(),
            selector: variant_selector("In", &[variant_name]),
        },
    )
}

/// Every policy the suite deploys: the variants of taint-preservation, then those of
/// toleration-injection, the Ignore variant of the outage scenario, the deployment shapes and the
/// `reads` template's policy.
pub fn deployments(repo: &Path) -> Result<Vec<Deployed>, String> {
    let tp = read_yaml(&repo.join("policies/taint-preservation/cluster-admission-policy.yaml"))?;
    let tp_settings = tp["spec"]["settings"].clone();
    let ti_settings = toleration_injection_settings(repo)?;
    let mut deployed = taint_preservation_deployments(repo, tp_settings)?;
    deployed.extend(toleration_injection_deployments(repo, ti_settings)?);
    // The same with `failurePolicy: Ignore`, for the outage scenario (docs/availability.md).
    let mut ignore = taint_preservation_variant(repo, "ignore")?;
    ignore.spec["failurePolicy"] = json!("Ignore");
    deployed.push(ignore);
    deployed.extend(crate::shapes::deployments(repo));
    // A policy made from the `reads` template, in both modes (crate::reads).
    deployed.extend(crate::reads::deployments(repo)?);
    Ok(deployed)
}

/// toleration-injection's settings as deployed: the shipped hostpath-provisioner rule, with the
/// example tenant restriction.
fn toleration_injection_settings(repo: &Path) -> Result<Value, String> {
    // The shipped hostpath-provisioner rule, with the example tenant restriction.
    let ti = read_yaml(&repo.join("policies/toleration-injection/cluster-admission-policy.yaml"))?;
    let mut ti_settings = ti["spec"]["settings"].clone();
    let restriction = read_json(
        &repo.join("policies/toleration-injection/examples/settings/tenant-restriction.json"),
    )?;
    ti_settings["restrictions"] = restriction["restrictions"].clone();
    Ok(ti_settings)
}

/// The variants of taint-preservation, `tp_settings` being its shipped settings: restore mode
/// with its nodes/status guard, deny mode, RBAC, NFD and the gatekeeper build.
fn taint_preservation_deployments(
    repo: &Path,
    tp_settings: Value,
) -> Result<Vec<Deployed>, String> {
    let mut deployed = restore_deployments(repo, &tp_settings)?;
    deployed.extend([
        variant(
            repo,
            "taint-preservation",
            Variant {
                name: "taint-preservation-deny",
                gatekeeper: false,
                settings: json!({"mode": "deny"}),
                selector: variant_selector("In", &["deny"]),
            },
        )?,
        // RBAC as a way in (docs/context.md): the policy asks SubjectAccessReviews.
        variant(
            repo,
            "taint-preservation",
            Variant {
                name: "taint-preservation-rbac",
                gatekeeper: false,
                settings: json!({"rbac": {"enabled": true}}),
                selector: variant_selector("In", &["rbac"]),
            },
        )?,
        // NFD installed in namespace nfd, named as the README's worked example names it.
        variant(
            repo,
            "taint-preservation",
            Variant {
                name: "taint-preservation-nfd",
                gatekeeper: false,
                settings: read_json(&repo.join(
                    "policies/taint-preservation/examples/settings/nfd-in-namespace-nfd.json",
                ))?,
                selector: variant_selector("In", &["nfd"]),
            },
        )?,
        variant(
            repo,
            "taint-preservation",
            Variant {
                name: "taint-preservation-gatekeeper",
                gatekeeper: true,
                settings: tp_settings,
                selector: variant_selector("In", &["gatekeeper"]),
            },
        )?,
    ]);
    Ok(deployed)
}

/// taint-preservation in restore mode with `tp_settings`, its shipped settings, and the
/// records' guard on nodes/status beside it; and the same with sealed records (crate::sealed).
fn restore_deployments(repo: &Path, tp_settings: &Value) -> Result<Vec<Deployed>, String> {
    let mut deployed = guarded(repo, "", tp_settings, "restore")?;
    let mut sealed = tp_settings.clone();
    sealed["recordSeal"] = crate::sealed::record_seal();
    deployed.extend(guarded(repo, "-sealed", &sealed, crate::sealed::VARIANT)?);
    Ok(deployed)
}

/// taint-preservation with `settings`, named `taint-preservation<suffix>`, and the records'
/// guard on nodes/status beside it with the same settings (docs/records.md), both selecting
/// `variant`. Kubernetes 1.20 has no matchConditions, so every status write of those nodes
/// reaches the guard, as on any cluster before 1.28.
fn guarded(
    repo: &Path,
    suffix: &str,
    settings: &Value,
    variant_name: &str,
) -> Result<Vec<Deployed>, String> {
    Ok(vec![
        variant(
            repo,
            "taint-preservation",
            Variant {
                name: &format!("taint-preservation{suffix}"),
                gatekeeper: false,
                settings: settings.clone(),
                selector: variant_selector("In", &[variant_name]),
            },
        )?,
        from_manifest(
            repo,
            "taint-preservation/cluster-admission-policy-status.yaml",
            Variant {
                name: &format!("taint-preservation-status{suffix}"),
                gatekeeper: false,
                settings: settings.clone(),
                selector: variant_selector("In", &[variant_name]),
            },
        )?,
    ])
}

/// The variants of toleration-injection, `ti_settings` being its settings as deployed: waPC,
/// from the nodes' taints, gatekeeper and PodTolerationRestriction.
fn toleration_injection_deployments(
    repo: &Path,
    ti_settings: Value,
) -> Result<Vec<Deployed>, String> {
    // The waPC toleration-injection judges every workload but those of its other variants and
    // of the deployment shapes (crate::shapes), whose webhooks are the subject there.
    let mut not_ours = vec!["gatekeeper", "nodes", "ptr", "ptr-fresh", "ptr-gatekeeper"];
    not_ours.extend(crate::shapes::VARIANTS);
    let mut deployed = vec![
        variant(
            repo,
            "toleration-injection",
            Variant {
                name: "toleration-injection",
                gatekeeper: false,
                settings: ti_settings.clone(),
                selector: variant_selector("NotIn", &not_ours),
            },
        )?,
        // Tolerations from the nodes' taints (docs/context.md): the policy lists Nodes.
        variant(
            repo,
            "toleration-injection",
            Variant {
                name: "toleration-injection-nodes",
                gatekeeper: false,
                settings: node_taints_settings(),
                selector: variant_selector("In", &["nodes"]),
            },
        )?,
        variant(
            repo,
            "toleration-injection",
            Variant {
                name: "toleration-injection-gatekeeper",
                gatekeeper: true,
                settings: ti_settings,
                selector: variant_selector("In", &["gatekeeper"]),
            },
        )?,
    ];
    deployed.extend(pod_toleration_restriction_deployments(repo)?);
    Ok(deployed)
}

/// The PodTolerationRestriction variants of toleration-injection: waPC, gatekeeper, and waPC
/// reading every Pod's Namespace.
fn pod_toleration_restriction_deployments(repo: &Path) -> Result<Vec<Deployed>, String> {
    Ok(vec![
        // PodTolerationRestriction with the reference API server's plugin configuration
        // (crate::pod_toleration_restriction).
        variant(
            repo,
            "toleration-injection",
            Variant {
                name: "toleration-injection-ptr",
                gatekeeper: false,
                settings: json!({"podTolerationRestriction": crate::pod_toleration_restriction::settings()}),
                selector: variant_selector("In", &["ptr"]),
            },
        )?,
        // The same in the gatekeeper build, which reads the Namespace from the inventory
        // policy-server's gatekeeper mode builds from the spec's contextAwareResources.
        variant(
            repo,
            "toleration-injection",
            Variant {
                name: "toleration-injection-ptr-gatekeeper",
                gatekeeper: true,
                settings: json!({"podTolerationRestriction": crate::pod_toleration_restriction::settings()}),
                selector: variant_selector("In", &["ptr-gatekeeper"]),
            },
        )?,
        // The same, with every Pod's Namespace read from the API server (`namespaceReads`).
        variant(
            repo,
            "toleration-injection",
            Variant {
                name: "toleration-injection-ptr-fresh",
                gatekeeper: false,
                settings: json!({"podTolerationRestriction": crate::pod_toleration_restriction::fresh_settings()}),
                selector: variant_selector("In", &["ptr-fresh"]),
            },
        )?,
    ])
}
