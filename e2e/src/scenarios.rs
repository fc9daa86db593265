//! The scenarios: the list the suite runs, and the incidents', the engines' and the failure
//! scenarios; each replays what real components do, with their identities and request forms,
//! and checks what is stored and what the client was told. The other scenario modules
//! (`controllers`, `context`, `shapes`) share `helpers`, never this module.

use std::time::Duration;

use serde_json::{json, Value};
use taintguard_testkit::k8s_openapi::api::core::v1::{Container, Pod, PodSpec, Toleration};
use taintguard_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::env::Env;
use crate::helpers::*;
use crate::kubectl::*;
use crate::labels::VARIANT_LABEL;
use crate::policies::{self, Deployed};
use taintguard_control_plane::cluster::{wait_for, ApiRequest};

pub struct Scenario {
    pub name: &'static str,
    pub run: fn(&mut Env) -> Result<(), String>,
}

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "incident 1: a stale whole-list taint patch keeps the user's taint (restore)",
        run: incident_1_restore,
    },
    Scenario {
        name: "incident 1 in deny mode: refused, and a retry after re-reading succeeds",
        run: incident_1_deny,
    },
    Scenario {
        name: "incident 2: a controller's uncordon of a person's cordon is undone",
        run: incident_2,
    },
    Scenario {
        name: "incident 3: Karpenter's registration, the startup taints' removal, a racing re-add",
        run: incident_3,
    },
    Scenario {
        name: "incident 4: the hostpath helper pod gets its tolerations, another SA's pod not",
        run: incident_4,
    },
    Scenario {
        name: "incident 5: flannel v0.24.4 applied gets the master twin; re-applying is a no-op",
        run: incident_5,
    },
    Scenario {
        name: "restrictions: a tenant's Pod CREATE, Pod UPDATE, Deployment and CronJob refused",
        run: restrictions,
    },
    Scenario {
        name: "gatekeeper builds: refusals where the waPC build restores, nothing mutated",
        run: gatekeeper,
    },
    Scenario {
        name: "audit endpoint: a stored Pod and a stored Node as the audit scanner sends them",
        run: audit_endpoint,
    },
    Scenario {
        name: "audit log: restores, strips and refusals leave their audit annotations",
        run: audit_log,
    },
    Scenario {
        name: "concurrency: stale patches race fresh updates; no protected taint lost or doubled",
        run: concurrency,
    },
    Scenario {
        name: "kwctl (burrego) runs the gatekeeper builds on every example as our OPA host does",
        run: kwctl_gatekeeper_parity,
    },
    Scenario {
        name: "RBAC: a break-glass ClusterRole lets one service account remove a protected taint",
        run: crate::context::rbac_permission,
    },
    Scenario {
        name:
            "node taints: a CNI DaemonSet tolerates what the pool's nodes carry, read per request",
        run: crate::context::node_taints,
    },
    Scenario {
        name: "kwctl run --allow-context-aware: node taints from the same API server",
        run: crate::context::kwctl_context_aware,
    },
    Scenario {
        name: "kwctl sessions: the API server's RBAC answers and the bundled sessions, replayed",
        run: crate::context::kwctl_rbac_sessions,
    },
    Scenario {
        name: "kwctl inspect and annotate: no warning; declared host capabilities are those called",
        run: crate::context::kwctl_declarations,
    },
    Scenario {
        name: "kwctl scaffold artifacthub writes the Artifact Hub packages ./build.sh writes",
        run: crate::context::kwctl_artifacthub,
    },
    Scenario {
        name: "kured: its own PreferNoSchedule taint added and removed; a stale patch keeps it",
        run: crate::controllers::kured,
    },
    Scenario {
        name: "node-feature-discovery: its taint added, its value changed, removed, as nfd-master",
        run: crate::controllers::node_feature_discovery,
    },
    Scenario {
        name: "node-feature-discovery against a feature taint from before the install",
        run: crate::controllers::nfd_before_the_install,
    },
    Scenario {
        name: "node-feature-discovery installed by Helm in namespace nfd, named in controllerRecords",
        run: crate::controllers::nfd_in_another_namespace,
    },
    Scenario {
        name: "CSI node plugin: agent-not-ready removed by FSx's plugin, a stale re-add stripped",
        run: crate::controllers::csi_agent_not_ready,
    },
    Scenario {
        name: "Node Readiness Controller: its readiness.k8s.io taint removed and added back",
        run: crate::controllers::node_readiness_controller,
    },
    Scenario {
        name: "policy group: deny mode without records refuses with the group's message",
        run: crate::shapes::policy_group,
    },
    Scenario {
        name: "mutating: false with the waPC build: every patch becomes policy-server's refusal",
        run: crate::shapes::non_mutating,
    },
    Scenario {
        name: "spec.message: the refusal says it, the policy's own message is a cause",
        run: crate::shapes::custom_message,
    },
    Scenario {
        name: "timeoutEvalSeconds 2: the worst Node (25,000 taints restored) answers in time",
        run: crate::shapes::timeout_worst_case,
    },
    Scenario {
        name: "reinvocationPolicy: a later webhook's master toleration gets its twin if IfNeeded",
        run: crate::shapes::reinvocation,
    },
    Scenario {
        name: "PodTolerationRestriction side by side: kube-apiserver 1.20's plugin and the policy",
        run: crate::pod_toleration_restriction::side_by_side,
    },
    Scenario {
        name: "PodTolerationRestriction: a tenant may not touch its namespace's annotations",
        run: crate::pod_toleration_restriction::annotation_guard,
    },
    Scenario {
        name: "PodTolerationRestriction: a narrowed whitelist applies within 5 s (cached), at once (fresh)",
        run: crate::pod_toleration_restriction::namespace_reads,
    },
    Scenario {
        name: "PodTolerationRestriction in the gatekeeper build: the Namespace from policy-server's inventory",
        run: crate::pod_toleration_restriction::gatekeeper_reads_the_inventory,
    },
    Scenario {
        name: "records: each record forged through nodes/status is undone and grants nothing",
        run: crate::records::status_forgeries,
    },
    Scenario {
        name: "records: kubelet's and node-problem-detector's status writes pass the guard untouched",
        run: crate::records::status_writes_pass,
    },
    Scenario {
        name: "hung policy-server: a Node write fails (Fail, two calls) or completes (Ignore) within its 2 s timeouts",
        run: crate::outage::hung_policy_server,
    },
    Scenario {
        name: "failure policy: with policy-server down Node writes fail, nodes/status passes",
        run: failure_policy,
    },
    Scenario {
        name: "outage: registration and the lifecycle swap refused (Fail) or stored (Ignore); the records after, what-if, the runbook",
        run: crate::outage::outage,
    },
    Scenario {
        name: "sealed records: an owner entry forged through nodes/status during the outage counts for nothing once policy-server is back",
        run: crate::sealed::after_outage,
    },
    Scenario {
        name: "the reads template: ConfigMaps listed through policy-server (waPC) and its gatekeeper inventory decide",
        run: crate::reads::config_maps_decide,
    },
];

// ---------------------------------------------------------------------------------------------
// Setup

/// RBAC for every actor, the namespaces, and the webhooks; returns once every webhook answers.
pub fn prepare(env: &Env, deployed: &[Deployed]) -> Result<(), String> {
    let k = &env.kubectl;
    let mut subjects: Vec<Value> = ACTORS
        .iter()
        .map(|a| json!({"kind": "User", "name": a.user, "apiGroup": "rbac.authorization.k8s.io"}))
        .collect();
    subjects.push(
        json!({"kind": "Group", "name": "system:nodes", "apiGroup": "rbac.authorization.k8s.io"}),
    );
    // The actors' own grants are not under test; the policies judge identities, not RBAC.
    k.apply(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "e2e-actor"},
        "rules": [{"apiGroups": ["", "apps", "batch"], "resources": ["*"], "verbs": ["*"]}]
    }))?;
    k.apply(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "e2e-actors"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "e2e-actor"},
        "subjects": subjects
    }))?;
    for ns in ["tenant-a", "kube-flannel", "gpu-team"] {
        k.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    }
    let ca = std::fs::read(&env.cluster.webhook_ca).map_err(|e| e.to_string())?;
    for d in deployed {
        k.apply(&policies::webhook_configuration(
            d,
            env.cluster.policy_server_port,
            &ca,
        ))?;
    }
    wait_for_webhooks(env)
}

/// A webhook probe: the variant, who sends it, the kubectl arguments, its input, and what shows
/// the policy ran.
type Probe = (
    &'static str,
    Option<Actor>,
    Vec<String>,
    Option<String>,
    fn(&Out) -> bool,
);

/// Webhook configuration changes reach the API server's informer after a moment: probe each
/// policy with a dry-run request until its effect shows.
fn wait_for_webhooks(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    for (variant, who, args, input, shows) in webhook_probes() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut last = String::new();
        wait_for(
            &format!("the {variant} webhook"),
            Duration::from_secs(60),
            || {
                let out = k.run(who, &args, input.as_deref());
                last = out.describe();
                shows(&out)
            },
        )
        .map_err(|e| format!("{e}; the probe `kubectl {}` got {last}", args.join(" ")))?;
    }
    Ok(())
}

/// One probe for each deployed variant the suite waits for, in the order they are waited for.
fn webhook_probes() -> Vec<Probe> {
    let mut probes: Vec<Probe> = Vec::new();
    for variant in ["restore", "deny", "rbac"] {
        let mut probe = node(&format!("probe-{variant}"), variant, &[]);
        probe["spec"]["unschedulable"] = json!(true);
        probes.push((
            variant,
            None,
            ["create", "--dry-run=server", "-o", "json", "-f", "-"]
                .map(String::from)
                .to_vec(),
            Some(probe.to_string()),
            |out| out.ok && out.stdout.contains("taintguard.io/cordoned-by"),
        ));
    }
    // A Node CREATE is never refused by the gatekeeper build of taint-preservation; the
    // toleration-injection probes below show the validating webhooks are in place.
    for variant in ["wapc", "gatekeeper"] {
        let pod = tenant_pod("probe", variant, &[dedicated_toleration()]).to_string();
        probes.push((
            variant,
            Some(TENANT),
            ["create", "--dry-run=server", "-f", "-"]
                .map(String::from)
                .to_vec(),
            Some(pod),
            |out| !out.ok && out.stderr.contains("toleration-injection"),
        ));
    }
    // The node-taints variant adds the master twin of a control-plane toleration, as every
    // toleration-injection policy does by default.
    let mut daemonset = cni_daemonset("probe-nodes");
    daemonset["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]);
    probes.push((
        "nodes",
        None,
        ["create", "--dry-run=server", "-o", "json", "-f", "-"]
            .map(String::from)
            .to_vec(),
        Some(daemonset.to_string()),
        |out| out.ok && out.stdout.contains("node-role.kubernetes.io/master"),
    ));
    probes
}

// ---------------------------------------------------------------------------------------------
// taint-preservation

fn incident_1_restore(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    k.apply(&node("inc1-restore", "restore", &[]))?;
    // A person taints the node (kubectl sends the whole new list).
    k.ok(
        Some(ALICE),
        &[
            "taint",
            "nodes",
            "inc1-restore",
            "example.com/dedicated=gpu:NoSchedule",
        ],
        None,
    )?;
    // The node-lifecycle-controller's patch: the whole list, computed from a stale copy.
    let stale = [not_ready("NoSchedule"), not_ready("NoExecute")];
    let out = k.ok(
        Some(NODE_CONTROLLER),
        &["patch", "node", "inc1-restore", "-p", &patch(&stale)],
        None,
    )?;
    told(
        &out,
        "may not remove protected taint example.com/dedicated=gpu:NoSchedule; this policy's patch puts it back",
        "the controller",
    )?;
    let stored = k.get("node", "inc1-restore", None)?;
    let mut want = described(&stale);
    want.push(describe_taint(&dedicated()));
    same_set("taints", &taints(&stored), &want)
}

fn incident_1_deny(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    k.apply(&node("inc1-deny", "deny", &[dedicated()]))?;
    let stale = [not_ready("NoSchedule")];
    let out = k.run(
        Some(NODE_CONTROLLER),
        &["patch", "node", "inc1-deny", "-p", &patch(&stale)],
        None,
    );
    refused(
        &out,
        "may not remove protected taint example.com/dedicated=gpu:NoSchedule",
        "the stale patch",
    )?;
    let stored = k.get("node", "inc1-deny", None)?;
    stored_taints_are("taints after the refusal", &stored, &[dedicated()])?;
    // As fixed controllers do: re-read, recompute from the fresh copy, patch with its version.
    let mut fresh: Vec<Value> = stored["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    fresh.push(not_ready("NoSchedule"));
    let retry = json!({"metadata": {"resourceVersion": stored["metadata"]["resourceVersion"]},
                       "spec": {"taints": fresh}});
    k.ok(
        Some(NODE_CONTROLLER),
        &["patch", "node", "inc1-deny", "-p", &retry.to_string()],
        None,
    )?;
    let stored = k.get("node", "inc1-deny", None)?;
    stored_taints_are(
        "taints after the retry",
        &stored,
        &[dedicated(), not_ready("NoSchedule")],
    )
}

fn incident_2(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    k.apply(&node("inc2", "restore", &[]))?;
    k.ok(Some(ALICE), &["cordon", "inc2"], None)?;
    let stored = k.get("node", "inc2", None)?;
    check(cordoned(&stored), || {
        "alice's cordon was not stored".to_owned()
    })?;
    check(
        annotation(&stored, "taintguard.io/cordoned-by") == Some(ALICE.user),
        || {
            format!(
                "owner record: stored {:?}, expected {:?}",
                annotation(&stored, "taintguard.io/cordoned-by"),
                ALICE.user
            )
        },
    )?;
    let out = k.ok(Some(GPU_OPERATOR), &["uncordon", "inc2"], None)?;
    told(
        &out,
        "may not uncordon node inc2 (cordoned by \"alice@example.com\"); this policy's patch keeps the node cordoned",
        "the GPU operator",
    )?;
    let stored = k.get("node", "inc2", None)?;
    check(cordoned(&stored), || {
        "the GPU operator's uncordon was stored".to_owned()
    })?;
    k.ok(Some(ALICE), &["uncordon", "inc2"], None)?;
    let stored = k.get("node", "inc2", None)?;
    check(!cordoned(&stored), || {
        "the owner's uncordon was not stored".to_owned()
    })?;
    check(
        annotation(&stored, "taintguard.io/cordoned-by").is_none(),
        || "the owner record stayed after the owner's uncordon".to_owned(),
    )?;
    // An admin may lift anyone's cordon.
    k.ok(Some(ALICE), &["cordon", "inc2"], None)?;
    k.ok(None, &["uncordon", "inc2"], None)?;
    let stored = k.get("node", "inc2", None)?;
    check(
        !cordoned(&stored) && annotation(&stored, "taintguard.io/cordoned-by").is_none(),
        || {
            format!(
                "after the admin's uncordon: unschedulable {:?}, record {:?}",
                stored["spec"]["unschedulable"],
                annotation(&stored, "taintguard.io/cordoned-by")
            )
        },
    )
}

/// Incident 3: Karpenter registers the node, the cloud controller and the CSI node plugin remove
/// the startup taints, and Karpenter's racing copy puts them back.
fn incident_3(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    // The kubelet registers the node with Karpenter's and the cloud provider's startup taints.
    let registered = node("inc3", "restore", &[unregistered(), uninitialized()]);
    k.ok(
        Some(kubelet("inc3")),
        &["create", "-f", "-"],
        Some(&registered.to_string()),
    )?;
    karpenter_registers(k)?;
    startup_taints_removed(k)?;
    racing_re_add_stripped(k)
}

/// Karpenter registers node inc3, unwarned: it swaps `unregistered` for the NodePool's startup
/// taint and taint.
fn karpenter_registers(k: &Kubectl) -> Result<(), String> {
    // Karpenter's registration: GET, then UPDATE with the resourceVersion it read, removing
    // `unregistered` and applying the NodePool's startup taint and taint.
    let mut copy = k.get("node", "inc3", None)?;
    copy["spec"]["taints"] = json!([uninitialized(), ebs_not_ready(), dedicated()]);
    let out = k.ok(
        Some(KARPENTER),
        &["replace", "-f", "-"],
        Some(&copy.to_string()),
    )?;
    check(!out.stderr.contains("taint-preservation"), || {
        format!("registration warned: {}", out.describe())
    })?;
    let stored = k.get("node", "inc3", None)?;
    stored_taints_are(
        "taints after registration",
        &stored,
        &[uninitialized(), ebs_not_ready(), dedicated()],
    )
}

/// The cloud controller and the CSI node plugin remove their startup taints; the plugin's is
/// recorded as removed.
fn startup_taints_removed(k: &Kubectl) -> Result<(), String> {
    const RECORD: &str = "taintguard.io/removed-startup-taints";
    // The cloud controller removes `uninitialized` (JSON merge patch: the list replaced).
    k.ok(
        Some(CLOUD_NODE_CONTROLLER),
        &[
            "patch",
            "node",
            "inc3",
            "--type",
            "merge",
            "-p",
            &patch(&[ebs_not_ready(), dedicated()]),
        ],
        None,
    )?;
    // The CSI node plugin removes its taint with a JSON patch.
    let remove = json!([{"op": "test", "path": "/spec/taints/0/key", "value": "ebs.csi.aws.com/agent-not-ready"},
                        {"op": "remove", "path": "/spec/taints/0"}]);
    k.ok(
        Some(EBS_CSI_NODE),
        &[
            "patch",
            "node",
            "inc3",
            "--type",
            "json",
            "-p",
            &remove.to_string(),
        ],
        None,
    )?;
    let stored = k.get("node", "inc3", None)?;
    stored_taints_are(
        "taints after the startup taints' removal",
        &stored,
        &[dedicated()],
    )?;
    check(
        annotation(&stored, RECORD) == Some("ebs.csi.aws.com/agent-not-ready:NoExecute"),
        || format!("removal record: stored {:?}", annotation(&stored, RECORD)),
    )
}

/// Karpenter < 1.5 re-adds both startup taints from a stale copy: both are stripped.
fn racing_re_add_stripped(k: &Kubectl) -> Result<(), String> {
    // Karpenter < 1.5 races with a copy from before the removals: both startup taints come back.
    let out = k.ok(
        Some(KARPENTER),
        &[
            "patch",
            "node",
            "inc3",
            "--type",
            "merge",
            "-p",
            &patch(&[uninitialized(), ebs_not_ready(), dedicated()]),
        ],
        None,
    )?;
    told(&out, "may not re-add one-shot startup taint node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule; this policy's patch strips it", "Karpenter")?;
    told(
        &out,
        "may not re-add one-shot startup taint ebs.csi.aws.com/agent-not-ready:NoExecute; this policy's patch strips it",
        "Karpenter",
    )?;
    let stored = k.get("node", "inc3", None)?;
    stored_taints_are("taints after the racing re-add", &stored, &[dedicated()])
}

// ---------------------------------------------------------------------------------------------
// toleration-injection

fn dedicated_toleration() -> Value {
    to_json(Toleration {
        key: Some("dedicated".into()),
        operator: Some("Equal".into()),
        value: Some("gpu".into()),
        effect: Some("NoSchedule".into()),
        toleration_seconds: None,
    })
}

fn tenant_pod(name: &str, variant: &str, tolerations: &[Value]) -> Value {
    let tolerations = tolerations
        .iter()
        .map(|t| serde_json::from_value::<Toleration>(t.clone()).expect("a toleration"))
        .collect();
    to_json(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("tenant-a".into()),
            labels: labels(&[(VARIANT_LABEL, variant), ("app", "web")]),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".into(),
                image: Some("nginx:1.25".into()),
                ..Container::default()
            }],
            tolerations: Some(tolerations),
            ..PodSpec::default()
        }),
        ..Pod::default()
    })
}

fn helper_pod(variant: &str) -> Value {
    to_json(Pod {
        metadata: ObjectMeta {
            generate_name: Some("hostpath-provisioner-node1-".into()),
            namespace: Some("kube-system".into()),
            labels: labels(&[
                ("microk8s.hostpath.io/managed-by", "node1"),
                (VARIANT_LABEL, variant),
            ]),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            node_selector: labels(&[("kubernetes.io/hostname", "node1")]),
            containers: vec![Container {
                name: "hostpath-provisioner".into(),
                image: Some("busybox:1.28.4".into()),
                command: Some(
                    ["mkdir", "-m", "0777", "-p", "/data/pv"]
                        .map(String::from)
                        .to_vec(),
                ),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    })
}

/// Creates `pod` as `who`; the stored pod.
fn create_pod(env: &Env, who: Option<Actor>, pod: &Value) -> Result<Value, String> {
    let out = env.kubectl.ok(
        who,
        &["create", "-o", "json", "-f", "-"],
        Some(&pod.to_string()),
    )?;
    let created: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
    let name = created["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let ns = created["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    env.kubectl.get("pod", &name, Some(&ns))
}

const HOSTPATH_KEYS: [&str; 4] = [
    "nvidia.com/gpu",
    "dedicated",
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

fn incident_4(env: &mut Env) -> Result<(), String> {
    let stored = create_pod(env, Some(HOSTPATH_PROVISIONER), &helper_pod("wapc"))?;
    let keys = toleration_keys(&stored["spec"]);
    for key in HOSTPATH_KEYS {
        check(keys.iter().any(|k| k == key), || {
            format!("helper pod: stored tolerations {keys:?} lack {key}")
        })?;
    }
    let other = create_pod(env, Some(OTHER_PROVISIONER), &helper_pod("wapc"))?;
    let keys = toleration_keys(&other["spec"]);
    check(
        !keys.iter().any(|k| HOSTPATH_KEYS.contains(&k.as_str())),
        || format!("another service account's pod got tolerations: {keys:?}"),
    )
}

fn incident_5(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let path = env
        .repo
        .join("policies/toleration-injection/examples/requests/flannel-v0.24.4-daemonset.json");
    let review: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let mut manifest = review["request"]["object"].clone();
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
    ] {
        manifest["metadata"]
            .as_object_mut()
            .map(|m| m.remove(field));
    }
    manifest.as_object_mut().map(|m| m.remove("status"));
    // The example carries a field of a future Kubernetes, to prove mutations keep unknown fields;
    // flannel's manifest has no such field, and kubectl 1.20 refuses it.
    manifest["spec"]["template"]["spec"]
        .as_object_mut()
        .map(|m| m.remove("schedulingGates2030"));
    let text = manifest.to_string();
    k.ok(None, &["apply", "-f", "-"], Some(&text))?;
    let stored = k.get("daemonset", "kube-flannel-ds", Some("kube-flannel"))?;
    let keys = toleration_keys(&stored["spec"]["template"]["spec"]);
    let masters = keys
        .iter()
        .filter(|k| *k == "node-role.kubernetes.io/master")
        .count();
    check(masters == 1, || {
        format!("stored tolerations {keys:?}: expected one master twin, found {masters}")
    })?;
    let again = k.ok(None, &["apply", "-f", "-"], Some(&text))?;
    let restored = k.get("daemonset", "kube-flannel-ds", Some("kube-flannel"))?;
    // kubectl's three-way merge sends the toleration list it was given (the list has no merge
    // key), the policy completes it again, and the API server finds nothing to write: the
    // stored object keeps its resourceVersion, so no controller sees a change and nothing loops.
    check(
        restored["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
            && restored["spec"]["template"]["spec"]["tolerations"]
                == stored["spec"]["template"]["spec"]["tolerations"],
        || {
            format!(
                "re-applying wrote the DaemonSet: resourceVersion {} -> {}, tolerations {:?} -> {:?}",
                stored["metadata"]["resourceVersion"],
                restored["metadata"]["resourceVersion"],
                stored["spec"]["template"]["spec"]["tolerations"],
                restored["spec"]["template"]["spec"]["tolerations"]
            )
        },
    )?;
    told(&again, "daemonset.apps/kube-flannel-ds", "kubectl apply")
}

/// A tenant's pod tolerating a restricted taint is refused at CREATE.
fn tenant_pod_refused(env: &Env, name: &str, variant: &str) -> Result<(), String> {
    let pod = tenant_pod(name, variant, &[dedicated_toleration()]).to_string();
    let out = env
        .kubectl
        .run(Some(TENANT), &["create", "-f", "-"], Some(&pod));
    refused(
        &out,
        "may not tolerate dedicated=gpu:NoSchedule",
        &format!("the tenant's Pod CREATE ({variant})"),
    )
}

fn restrictions(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    tenant_pod_refused(env, "greedy", "wapc")?;
    create_pod(env, Some(TENANT), &tenant_pod("web", "wapc", &[]))?;
    let add =
        json!([{"op": "add", "path": "/spec/tolerations/-", "value": dedicated_toleration()}]);
    let out = k.run(
        Some(TENANT),
        &[
            "patch",
            "pod",
            "web",
            "-n",
            "tenant-a",
            "--type",
            "json",
            "-p",
            &add.to_string(),
        ],
        None,
    );
    refused(
        &out,
        "may not add a toleration of dedicated=gpu:NoSchedule",
        "the tenant's Pod UPDATE",
    )?;
    let stored = k.get("pod", "web", Some("tenant-a"))?;
    let keys = toleration_keys(&stored["spec"]);
    check(!keys.iter().any(|k| k == "dedicated"), || {
        format!("the refused toleration was stored: {keys:?}")
    })?;
    let template = |restart: &str| {
        json!({"metadata": {"labels": {"app": "greedy"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.28.4"}], "restartPolicy": restart,
                 "tolerations": [dedicated_toleration()]}})
    };
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "greedy", "namespace": "tenant-a"},
        "spec": {"selector": {"matchLabels": {"app": "greedy"}}, "template": template("Always")}});
    // Kubernetes 1.20 serves CronJobs as batch/v1beta1 only.
    let cronjob = json!({"apiVersion": "batch/v1beta1", "kind": "CronJob",
        "metadata": {"name": "greedy", "namespace": "tenant-a"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template("OnFailure")}}}});
    for (what, object) in [("Deployment", deployment), ("CronJob", cronjob)] {
        let out = k.run(
            Some(TENANT),
            &["create", "-f", "-"],
            Some(&object.to_string()),
        );
        refused(
            &out,
            "may not tolerate dedicated=gpu:NoSchedule",
            &format!("the tenant's {what}"),
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Engines, audit, failure

fn gatekeeper(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    k.apply(&node("gk-node", "gatekeeper", &[dedicated()]))?;
    // Through the API server: nothing is ever mutated, and what a CREATE may not do is refused.
    k.ok(Some(ALICE), &["cordon", "gk-node"], None)?;
    let cordoned_node = k.get("node", "gk-node", None)?;
    check(
        cordoned(&cordoned_node)
            && annotation(&cordoned_node, "taintguard.io/cordoned-by").is_none(),
        || {
            format!(
                "a gatekeeper build mutated the cordon: annotations {}",
                cordoned_node["metadata"]["annotations"]
            )
        },
    )?;
    let helper = create_pod(env, Some(HOSTPATH_PROVISIONER), &helper_pod("gatekeeper"))?;
    let keys = toleration_keys(&helper["spec"]);
    check(
        !keys.iter().any(|k| HOSTPATH_KEYS.contains(&k.as_str())),
        || format!("a gatekeeper build injected tolerations: {keys:?}"),
    )?;
    tenant_pod_refused(env, "greedy-gk", "gatekeeper")?;
    // The UPDATEs go to policy-server's webhook endpoint directly: the kube-apiserver 1.20.2
    // built here hands validating webhooks an `oldObject` equal to `object` (docs/e2e.md), so
    // through it no validating webhook can see what an UPDATE changed.
    let mut stale = cordoned_node.clone();
    stale["spec"]["taints"] = json!([not_ready("NoSchedule")]);
    let mut uncordoned = cordoned_node.clone();
    uncordoned["spec"]
        .as_object_mut()
        .map(|s| s.remove("unschedulable"));
    for (who, new, text) in [
        (
            NODE_CONTROLLER,
            &stale,
            "may not remove protected taint example.com/dedicated=gpu:NoSchedule",
        ),
        (GPU_OPERATOR, &uncordoned, "may not uncordon node gk-node"),
    ] {
        let response = &update_answer(
            env,
            "clusterwide-taint-preservation-gatekeeper",
            Update {
                who,
                old: &cordoned_node,
                new,
            },
        )?;
        check(
            response["allowed"] == json!(false)
                && response["status"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(text))
                && response["patch"].is_null(),
            || {
                format!(
                    "{}'s UPDATE: expected a refusal naming {text:?}, got {response}",
                    who.user
                )
            },
        )?;
    }
    Ok(())
}

/// The AdmissionReview Kubewarden's audit scanner sends for a stored object.
fn audit_review(object: &Value, kind: &str) -> Value {
    let gvk = json!({"group": "", "version": "v1", "kind": kind});
    let mut request = json!({
        "uid": object["metadata"]["uid"], "kind": gvk, "requestKind": gvk,
        "resource": {"group": "", "version": "v1", "resource": kind},
        "name": object["metadata"]["name"], "operation": "CREATE", "userInfo": {},
        "object": object, "dryRun": false,
    });
    if let Some(ns) = object["metadata"]["namespace"].as_str() {
        request["namespace"] = json!(ns);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn audit_endpoint(env: &mut Env) -> Result<(), String> {
    // An allowed principal (the admin, in system:masters) may run a pod on dedicated nodes from
    // tenant-a; the audit cannot know who created it and reports it (policy README).
    let pod = create_pod(
        env,
        None,
        &tenant_pod("admins-gpu-job", "wapc", &[dedicated_toleration()]),
    )?;
    let answer = env.cluster.post_to_policy_server(
        "/audit/clusterwide-toleration-injection",
        &audit_review(&pod, "Pod").to_string(),
    )?;
    let answer: Value = serde_json::from_str(&answer).map_err(|e| format!("{e}: {answer}"))?;
    let response = &answer["response"];
    let message = response["status"]["message"].as_str().unwrap_or_default();
    check(
        response["allowed"] == json!(false)
            && message.contains("Pod tenant-a/admins-gpu-job tolerates dedicated=gpu:NoSchedule")
            && message.contains("background audit"),
        || format!("audit of the stored pod answered {response}"),
    )?;
    // A stored, cordoned Node without an owner record: nothing to judge, nothing proposed.
    let node = env.kubectl.get("node", "gk-node", None)?;
    let answer = env.cluster.post_to_policy_server(
        "/audit/clusterwide-taint-preservation",
        &audit_review(&node, "Node").to_string(),
    )?;
    let answer: Value = serde_json::from_str(&answer).map_err(|e| format!("{e}: {answer}"))?;
    let response = &answer["response"];
    check(
        response["allowed"] == json!(true) && response["patch"].is_null(),
        || format!("audit of the stored node answered {response}"),
    )
}

fn audit_log(env: &mut Env) -> Result<(), String> {
    let log =
        std::fs::read_to_string(&env.cluster.audit_log).map_err(|e| format!("audit log: {e}"))?;
    let events: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let wanted = [
        (
            "inc1-restore",
            "clusterwide-taint-preservation.kubewarden.admission/protected-taints",
            "example.com/dedicated=gpu:NoSchedule",
        ),
        (
            "inc1-restore",
            "clusterwide-taint-preservation.kubewarden.admission/requested-by",
            NODE_CONTROLLER.user,
        ),
        (
            "inc1-deny",
            "clusterwide-taint-preservation-deny.kubewarden.admission/protected-taints",
            "remove protected taint example.com/dedicated=gpu:NoSchedule",
        ),
        (
            "inc2",
            "clusterwide-taint-preservation.kubewarden.admission/cordon",
            "cordoned by \"alice@example.com\"",
        ),
        (
            "inc2",
            "clusterwide-taint-preservation.kubewarden.admission/requested-by",
            GPU_OPERATOR.user,
        ),
        (
            "inc3",
            "clusterwide-taint-preservation.kubewarden.admission/removed-one-shot-taints",
            "ebs.csi.aws.com/agent-not-ready:NoExecute",
        ),
        (
            "inc3",
            "clusterwide-taint-preservation.kubewarden.admission/one-shot-taints",
            "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule",
        ),
        (
            "",
            "clusterwide-toleration-injection.kubewarden.admission/missing-tolerations",
            "nvidia.com/gpu:NoSchedule (Exists) (rule \"hostpath-provisioner-helpers\")",
        ),
    ];
    for (object, key, text) in wanted {
        let found = events.iter().any(|e| {
            (object.is_empty() || e["objectRef"]["name"] == json!(object))
                && e["annotations"][key]
                    .as_str()
                    .is_some_and(|v| v.contains(text))
        });
        check(found, || {
            format!("no audit event for {object:?} has annotation {key} containing {text:?}")
        })?;
    }
    Ok(())
}

fn concurrency(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let team = taint("example.com/team", "a", "NoSchedule");
    k.apply(&node("race", "restore", &[team]))?;
    let stale = patch(&[not_ready("NoSchedule")]);
    let errors: Vec<String> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for i in 0..3 {
            // A person adds a taint the way controller-runtime clients update: GET, change,
            // UPDATE with the resourceVersion read, and on a 409 Conflict read again.
            handles.push(s.spawn(move || -> Result<(), String> {
                let mine = taint(&format!("example.com/t{i}"), "", "NoSchedule");
                for _ in 0..30 {
                    let mut copy = k.get("node", "race", None)?;
                    copy["spec"]["taints"]
                        .as_array_mut()
                        .ok_or("no taints")?
                        .push(mine.clone());
                    let out = k.run(
                        Some(ALICE),
                        &["replace", "-f", "-"],
                        Some(&copy.to_string()),
                    );
                    if out.ok {
                        return Ok(());
                    }
                    if !out.stderr.contains("the object has been modified") {
                        return Err(format!("update t{i}: {}", out.describe()));
                    }
                }
                Err(format!("update t{i}: still conflicting after 30 tries"))
            }));
            // The stale controller patches the whole list from its old copy, with no version.
            let stale = stale.clone();
            handles.push(s.spawn(move || -> Result<(), String> {
                for _ in 0..4 {
                    k.ok(
                        Some(NODE_CONTROLLER),
                        &["patch", "node", "race", "-p", &stale],
                        None,
                    )?;
                }
                Ok(())
            }));
        }
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap_or(Err("panicked".into())).err())
            .collect()
    });
    check(errors.is_empty(), || errors.join("; "))?;
    let stored = taints(&k.get("node", "race", None)?);
    let want = [
        "example.com/team=a:NoSchedule",
        "example.com/t0:NoSchedule",
        "example.com/t1:NoSchedule",
        "example.com/t2:NoSchedule",
        "node.kubernetes.io/not-ready:NoSchedule",
    ];
    same_set("taints after the race", &stored, &want.map(str::to_owned))
}

/// Every example request with every example settings file through `kwctl run -e gatekeeper`
/// (Kubewarden's own OPA engine, burrego), against the deny-mode verdicts of the waPC build that
/// the OPA host tests (`wasm-tests/js/opa`) hold every OPA call sequence to.
fn kwctl_gatekeeper_parity(env: &mut Env) -> Result<(), String> {
    let kwctl = crate::kwctl::find(env)?;
    let verdicts_bin = env.repo.join("target/debug/wapc-verdicts");
    let out = std::process::Command::new(&verdicts_bin)
        .output()
        .map_err(|e| format!("{}: {e}; run ./build.sh first", verdicts_bin.display()))?;
    let cases: Vec<Value> =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("wapc-verdicts: {e}"))?;
    let dir = env.cluster.file("kwctl");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let jobs: Vec<(usize, &Value)> = cases.iter().enumerate().collect();
    let differences: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(2).max(1))
            .map(|chunk| {
                let paths = KwctlPaths {
                    kwctl: &kwctl,
                    dir: &dir,
                    repo: &env.repo,
                };
                s.spawn(move || {
                    let mut differences = Vec::new();
                    for (i, case) in chunk {
                        if let Err(e) = kwctl_case(paths, *i, case) {
                            differences.push(e);
                        }
                    }
                    differences
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    check(differences.is_empty(), || {
        format!(
            "{} of {} differ:\n{}",
            differences.len(),
            cases.len(),
            differences.join("\n")
        )
    })
}

/// Where a kwctl replay of the OPA host's verdicts runs.
#[derive(Clone, Copy)]
struct KwctlPaths<'a> {
    /// The kwctl binary.
    kwctl: &'a std::path::Path,
    /// The folder the AdmissionReview files are written to.
    dir: &'a std::path::Path,
    /// The repository, whose dist/ holds the modules.
    repo: &'a std::path::Path,
}

/// Case `i` of the OPA host's verdicts run through kwctl: an error when kwctl's verdict differs.
fn kwctl_case(paths: KwctlPaths, i: usize, case: &Value) -> Result<(), String> {
    let KwctlPaths { kwctl, dir, repo } = paths;
    let name = format!(
        "{} {} [{}]",
        case["policy"].as_str().unwrap_or(""),
        case["request"],
        case["settings"]
    );
    let request = dir.join(format!("request-{i}.json"));
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": case["review"]});
    std::fs::write(&request, review.to_string()).map_err(|e| e.to_string())?;
    let module = repo.join("dist").join(format!(
        "{}.gatekeeper.wasm",
        case["policy"].as_str().unwrap_or("")
    ));
    let answer = crate::kwctl::run(
        kwctl,
        crate::kwctl::Run {
            flags: &["-e", "gatekeeper"],
            kubeconfig: None,
            module: &module,
            request: &request,
            settings: &case["parameters"],
        },
    )
    .map_err(|e| format!("{name}: {e}"))?;
    let want_allowed = case["accepted"].as_bool().unwrap_or(false);
    let got_allowed = answer["allowed"].as_bool().unwrap_or(false);
    let got_message = answer["status"]["message"].as_str().unwrap_or("");
    let want_message = case["message"].as_str().unwrap_or("");
    if got_allowed != want_allowed || (!want_allowed && got_message != want_message) {
        return Err(format!("{name}: kwctl allowed={got_allowed} {got_message:?}; the OPA host allowed={want_allowed} {want_message:?}"));
    }
    Ok(())
}

fn failure_policy(env: &mut Env) -> Result<(), String> {
    // The outage scenario's Nodes, created while policy-server serves: one the shipped `Fail`
    // webhook judges, one its `Ignore` variant does (crate::outage).
    for (name, variant) in [("nlc-fail", "restore"), ("nlc-ignore", "ignore")] {
        env.kubectl.apply(&node(name, variant, &[]))?;
    }
    // The sealed-records scenario's Nodes, with kured's taint recorded (crate::sealed).
    crate::sealed::before_outage(env)?;
    env.cluster.stop_policy_server();
    let k = &env.kubectl;
    let out = k.run(
        None,
        &["label", "node", "inc2", "e2e.taintguard.io/touched=yes"],
        None,
    );
    refused(
        &out,
        "failed calling webhook",
        "a Node write with policy-server down",
    )?;
    let status =
        json!({"status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}).to_string();
    env.cluster
        .api(&ApiRequest {
            method: "PATCH",
            path: "/api/v1/nodes/inc2/status",
            content_type: "application/merge-patch+json",
            body: &status,
        })
        .map_err(|e| format!("a nodes/status write with policy-server down failed: {e}"))?;
    let stored = k.get("node", "inc2", None)?;
    check(stored["status"]["capacity"]["pods"] == json!("110"), || {
        format!("status not stored: {}", stored["status"])
    })?;
    crate::records::status_writes_pass_while_down(env, "inc2")?;
    crate::sealed::forge_while_down(env)
}
