//! Kubewarden's deployment shapes and what each does to these policies (docs/deployment.md):
//! a ClusterAdmissionPolicyGroup, `mutating: false` with the waPC build, `spec.message`,
//! `timeoutEvalSeconds` on the worst case of the README's failure-semantics table, and
//! `reinvocationPolicy` when another mutating webhook edits a pod template after
//! toleration-injection. Each is deployed as Kubewarden's controller deploys it (policies.yml
//! entry and webhook), on the objects labelled with its own variant.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::env::Env;
use crate::helpers::*;
use crate::kubectl::*;
use crate::labels::VARIANT_LABEL;
use crate::policies::{
    cluster_admission_policy, cluster_admission_policy_group, module_url, Deployed,
};
use taintguard_control_plane::cluster::wait_for;

/// The variants this module deploys; the suite's other toleration-injection policies leave
/// their objects alone.
pub const VARIANTS: [&str; 7] = [
    "group",
    "group-records",
    "nonmutating",
    "message",
    "timeout",
    "reinvoke",
    "reinvoke-never",
];

pub const GROUP_MESSAGE: &str = "taint and cordon changes on this pool need a permitted principal";
pub const CUSTOM_MESSAGE: &str = "this node's taints are managed by the platform team";

/// taint-preservation's settings for a policy group: deny, and no records, because a member's
/// mutation counts as a refusal there.
pub fn group_settings() -> Value {
    json!({"mode": "deny", "cordon": {"enabled": false}, "taintOwners": {"enabled": false},
           "oneShotTaints": []})
}

fn nodes_rule() -> Value {
    json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["nodes"],
            "operations": ["CREATE", "UPDATE"]}])
}

fn daemonsets_rule() -> Value {
    json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["daemonsets"],
            "operations": ["CREATE", "UPDATE"]}])
}

fn selecting(variants: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": VARIANT_LABEL, "operator": "In", "values": variants}]})
}

pub fn deployments(repo: &Path) -> Vec<Deployed> {
    let tp = module_url(repo, "taint-preservation.wasm");
    let ti = module_url(repo, "toleration-injection.wasm");
    let taint_preservation = |variant: &str, mutating: bool, settings: Value| {
        json!({"module": tp, "settings": settings, "mutating": mutating, "rules": nodes_rule(),
               "objectSelector": selecting(&[variant])})
    };
    let mut message = taint_preservation("message", true, json!({"mode": "deny"}));
    message["message"] = json!(CUSTOM_MESSAGE);
    let mut timeout = taint_preservation("timeout", true, json!({}));
    timeout["timeoutEvalSeconds"] = json!(2);
    let toleration_injection = |variants: &[&str], settings: Value, reinvocation: &str| {
        json!({"module": ti, "settings": settings, "mutating": true, "rules": daemonsets_rule(),
               "objectSelector": selecting(variants), "reinvocationPolicy": reinvocation})
    };
    // Another tool's webhook that adds the legacy master toleration to DaemonSets, without its
    // control-plane twin. Webhook configurations run in name order: this one after ours.
    let other_tool = json!({"aliases": {"enabled": false}, "rules": [{"name": "other-tool",
        "match": {"kinds": ["DaemonSet"]},
        "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Exists",
                         "effect": "NoSchedule"}]}]});
    vec![
        cluster_admission_policy_group(
            "taint-guard",
            json!({"rules": nodes_rule(), "objectSelector": selecting(&["group"]),
                   "expression": "deny()", "message": GROUP_MESSAGE,
                   "policies": {"deny": {"module": tp, "settings": group_settings()}}}),
        ),
        cluster_admission_policy_group(
            "taint-records",
            json!({"rules": nodes_rule(), "objectSelector": selecting(&["group-records"]),
                   "expression": "restore()", "message": GROUP_MESSAGE,
                   "policies": {"restore": {"module": tp, "settings": {}}}}),
        ),
        cluster_admission_policy(
            "taint-preservation-nonmutating",
            taint_preservation("nonmutating", false, json!({})),
        ),
        cluster_admission_policy("taint-preservation-message", message),
        cluster_admission_policy("taint-preservation-timeout", timeout),
        cluster_admission_policy(
            "toleration-injection-reinvoke",
            toleration_injection(&["reinvoke"], json!({}), "IfNeeded"),
        ),
        cluster_admission_policy(
            "toleration-injection-never",
            toleration_injection(&["reinvoke-never"], json!({}), "Never"),
        ),
        cluster_admission_policy(
            "zz-other-tool",
            toleration_injection(&["reinvoke", "reinvoke-never"], other_tool, "Never"),
        ),
    ]
}

/// A stale whole-list patch by the node controller, dropping every taint (`dry`: a server-side
/// dry run, to learn whether the webhook is served without changing the node).
fn stale_patch(env: &Env, name: &str, dry: bool) -> Out {
    let body = patch(&[]);
    let mut args = vec![
        "patch", "node", name, "--type", "merge", "-p", &body, "-o", "json",
    ];
    if dry {
        args.push("--dry-run=server");
    }
    env.kubectl.run(Some(NODE_CONTROLLER), &args, None)
}

/// Stores `name` with `taints` through no policy (no variant label), then labels it `variant`
/// (an UPDATE that changes no taint): a CREATE carrying a protected taint writes an owner
/// record, which some shapes refuse.
fn unjudged_node(env: &Env, name: &str, variant: &str, taints: &[Value]) -> Result<(), String> {
    let mut object = node(name, variant, taints);
    if let Some(labels) = object["metadata"]["labels"].as_object_mut() {
        labels.remove(VARIANT_LABEL);
    }
    env.kubectl
        .ok(None, &["create", "-f", "-"], Some(&object.to_string()))?;
    let label = format!("{VARIANT_LABEL}={variant}");
    env.kubectl
        .ok(Some(ALICE), &["label", "node", name, &label], None)
        .map(|_| ())
}

/// A new webhook configuration reaches the API server's informer after a moment: retries `attempt`
/// until `shows` holds.
fn once_served(
    what: &str,
    mut attempt: impl FnMut() -> Out,
    shows: impl Fn(&Out) -> bool,
) -> Result<Out, String> {
    let mut last: Option<Out> = None;
    let waited = wait_for(what, Duration::from_secs(60), || {
        let out = attempt();
        let done = shows(&out);
        last = Some(out);
        done
    });
    if let Err(e) = waited {
        return Err(format!(
            "{e}: {}",
            last.map(|o| o.describe()).unwrap_or_default()
        ));
    }
    Ok(last.expect("attempted"))
}

/// A refusal's message and its causes, as `field: message`.
fn refusal(response: &Value) -> Option<(String, Vec<String>)> {
    if response["allowed"] != false {
        return None;
    }
    let causes = response["status"]["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|cause| {
            format!(
                "{}: {}",
                cause["field"].as_str().unwrap_or("-"),
                cause["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    Some((
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        causes,
    ))
}

fn cordoned_copy(node: &Value) -> Value {
    let mut object = node.clone();
    object["spec"]["unschedulable"] = json!(true);
    object
}

fn without_taints(node: &Value) -> Value {
    let mut object = node.clone();
    object["spec"]["taints"] = json!([]);
    object
}

/// A ClusterAdmissionPolicyGroup: taint-preservation in deny mode without records refuses a
/// stale patch with the group's message, its own message a cause, and lets a cordon and a
/// tainted node's CREATE through. With the default settings, the owner record a CREATE or a cordon
/// writes is a mutation, which a group counts as a refusal.
pub fn policy_group(env: &mut Env) -> Result<(), String> {
    let stored = group_creates(env)?;
    group_updates(env, &stored)
}

/// Through the API server: a person's tainted node's CREATE, which this server hands validating
/// webhooks whole, refused under the group whose member writes records and stored under the
/// other; the stored Node.
fn group_creates(env: &Env) -> Result<Value, String> {
    let k = &env.kubectl;
    let tainted = |name: &str, variant: &str| node(name, variant, &[dedicated()]).to_string();
    // Through the API server: a CREATE, which this server hands validating webhooks whole.
    let records = tainted("shape-group-records", "group-records");
    let out = once_served(
        "the records group's webhook",
        || {
            k.run(
                Some(ALICE),
                &["create", "--dry-run=server", "-f", "-"],
                Some(&records),
            )
        },
        |o| !o.ok,
    )?;
    refused(
        &out,
        GROUP_MESSAGE,
        "a person's tainted node under a group whose member writes records",
    )?;
    let out = k.run(
        Some(ALICE),
        &["create", "-f", "-"],
        Some(&tainted("shape-group", "group")),
    );
    check(out.ok, || {
        format!(
            "a person's tainted node under the group: {}",
            out.describe()
        )
    })?;
    k.get("node", "shape-group", None)
}

/// UPDATEs of the `stored` Node, as the API server should send them (stored oldObject): the
/// group refuses a stale patch, lets a person's cordon through, and with records on counts the
/// cordon's owner record as a refusal.
fn group_updates(env: &Env, stored: &Value) -> Result<(), String> {
    let mut problems = Vec::new();
    let cases = [
        (
            "a stale patch",
            "clusterwide-group-taint-guard",
            NODE_CONTROLLER,
            without_taints(stored),
            Some("spec.policies.deny: taint-preservation: "),
        ),
        (
            "a person's cordon",
            "clusterwide-group-taint-guard",
            ALICE,
            cordoned_copy(stored),
            None,
        ),
        (
            "a person's cordon, records on",
            "clusterwide-group-taint-records",
            ALICE,
            cordoned_copy(stored),
            Some("spec.policies.restore: mutation is not allowed inside of policy group"),
        ),
    ];
    for (what, id, who, object, cause) in cases {
        let response = update_answer(
            env,
            id,
            Update {
                who,
                old: stored,
                new: &object,
            },
        )?;
        match (refusal(&response), cause) {
            (None, None) => {}
            (Some((message, causes)), Some(cause))
                if message == GROUP_MESSAGE && causes.iter().any(|c| c.starts_with(cause)) => {}
            _ => problems.push(format!("{what} under {id}: {response}")),
        }
    }
    check(problems.is_empty(), || problems.join("\n"))
}

/// `mutating: false` with the waPC build: policy-server refuses every request the policy would
/// patch, so a restore becomes a refusal in policy-server's words, and so do a tainted node's
/// CREATE and a person's cordon, whose owner records are patches.
pub fn non_mutating(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let attempted = "The policy attempted to mutate the request, but it is currently configured \
                     to not allow mutations";
    let tainted = node("shape-nonmutating", "nonmutating", &[dedicated()]).to_string();
    let out = once_served(
        "the non-mutating webhook",
        || {
            k.run(
                Some(ALICE),
                &["create", "--dry-run=server", "-f", "-"],
                Some(&tainted),
            )
        },
        |o| !o.ok,
    )?;
    refused(&out, attempted, "a person's tainted node, mutating: false")?;
    unjudged_node(env, "shape-nonmutating", "nonmutating", &[dedicated()])?;
    let stored = k.get("node", "shape-nonmutating", None)?;
    let mut problems = Vec::new();
    for (what, who, object) in [
        ("a stale patch", NODE_CONTROLLER, without_taints(&stored)),
        ("a person's cordon", ALICE, cordoned_copy(&stored)),
    ] {
        let response = update_answer(
            env,
            "clusterwide-taint-preservation-nonmutating",
            Update {
                who,
                old: &stored,
                new: &object,
            },
        )?;
        let refused_so = refusal(&response).is_some_and(|(message, _)| message.contains(attempted));
        if !refused_so || response.get("patch").is_some_and(|p| !p.is_null()) {
            problems.push(format!("{what}: {response}"));
        }
    }
    check(problems.is_empty(), || problems.join("\n"))
}

/// `spec.message`: a refusal says the resource's message; the policy's own is a cause.
pub fn custom_message(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    k.apply(&node("shape-message", "message", &[dedicated()]))?;
    once_served(
        "the message webhook",
        || stale_patch(env, "shape-message", true),
        |o| !o.ok,
    )?;
    let out = stale_patch(env, "shape-message", false);
    refused(&out, CUSTOM_MESSAGE, "a stale patch, spec.message")?;
    check(!out.stderr.contains("may not remove"), || {
        format!("the policy's message was shown: {}", out.describe())
    })?;
    // The policy's own message, a cause (kubectl prints only the status message).
    let stored = k.get("node", "shape-message", None)?;
    let response = update_answer(
        env,
        "clusterwide-taint-preservation-message",
        Update {
            who: NODE_CONTROLLER,
            old: &stored,
            new: &without_taints(&stored),
        },
    )?;
    check(
        refusal(&response).is_some_and(|(message, causes)| {
            message == CUSTOM_MESSAGE
                && causes.iter().any(|c| {
                    c.contains(
                        "may not remove protected taint example.com/dedicated=gpu:NoSchedule",
                    )
                })
        }),
        || format!("policy-server answered {response}"),
    )
}

/// The failure-semantics table's worst Node: 25,000 protected taints, all dropped by a stale
/// patch and all restored, inside `timeoutEvalSeconds: 2`, the least the CRD allows.
pub fn timeout_worst_case(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let taints: Vec<Value> = (0..25_000)
        .map(|i| json!({"key": format!("t{i}"), "effect": "NoSchedule"}))
        .collect();
    // Stored through no policy, so no owner is recorded for the 25,000 taints.
    unjudged_node(env, "shape-timeout", "timeout", &taints)?;
    // Served once a dry run of the stale patch comes back restored.
    once_served(
        "the timeout webhook",
        || {
            let out = stale_patch(env, "shape-timeout", true);
            Out {
                ok: out.ok && out.stdout.contains("\"t24999\""),
                ..out
            }
        },
        |o| o.ok,
    )?;
    let started = Instant::now();
    let out = stale_patch(env, "shape-timeout", false);
    let took = started.elapsed();
    check(out.ok, || {
        format!("the stale patch of 25,000 taints: {}", out.describe())
    })?;
    let stored = k.get("node", "shape-timeout", None)?;
    let kept = stored["spec"]["taints"].as_array().map_or(0, Vec::len);
    check(kept == 25_000, || {
        format!(
            "{kept} of 25,000 taints stored after the restore ({:.1} s)",
            took.as_secs_f64()
        )
    })?;
    println!(
        "      25,000 taints restored through the API server in {:.2} s",
        took.as_secs_f64()
    );
    Ok(())
}

/// Another mutating webhook that runs after toleration-injection adds the legacy master
/// toleration: with `reinvocationPolicy: IfNeeded` toleration-injection runs again and adds the
/// control-plane twin; with `Never` (all Kubewarden 1.35 sets) the DaemonSet keeps the master
/// toleration alone.
pub fn reinvocation(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let daemonset = |name: &str, variant: &str, tolerations: Value| {
        let mut ds = cni_daemonset(name);
        ds["metadata"]["labels"] = json!({VARIANT_LABEL: variant});
        ds["spec"]["template"]["spec"]["tolerations"] = tolerations;
        ds
    };
    let master = json!([{"key": "node-role.kubernetes.io/master", "operator": "Exists"}]);
    let keys_of = |out: &Out| -> Vec<String> {
        serde_json::from_str::<Value>(&out.stdout)
            .map(|ds| toleration_keys(&ds["spec"]["template"]["spec"]))
            .unwrap_or_default()
    };
    let twins = |keys: &[String]| {
        [
            "node-role.kubernetes.io/master",
            "node-role.kubernetes.io/control-plane",
        ]
        .iter()
        .all(|k| keys.iter().any(|key| key == k))
    };
    let cases = [
        ("shape-reinvoked", "reinvoke", true),
        ("shape-not-reinvoked", "reinvoke-never", false),
    ];
    for (name, variant, twin) in cases {
        // Both webhooks served: ours twins a master toleration, the other tool's adds one.
        let probe = daemonset("probe", variant, master.clone()).to_string();
        let bare = daemonset("probe", variant, json!([])).to_string();
        let dry_run = ["create", "--dry-run=server", "-o", "json", "-f", "-"];
        once_served(
            &format!("the {variant} webhooks"),
            || {
                let ours = k.run(None, &dry_run, Some(&probe));
                let other = k.run(None, &dry_run, Some(&bare));
                let other_served = keys_of(&other)
                    .iter()
                    .any(|key| key == "node-role.kubernetes.io/master");
                if twins(&keys_of(&ours)) && other_served {
                    ours
                } else {
                    Out {
                        ok: false,
                        stdout: ours.stdout,
                        stderr: other.stdout,
                    }
                }
            },
            |o| o.ok,
        )?;
        k.apply(&daemonset(name, variant, json!([])))?;
        let stored = k.get("daemonset", name, Some("kube-system"))?;
        let keys = toleration_keys(&stored["spec"]["template"]["spec"]);
        let mut want = vec!["node-role.kubernetes.io/master".to_owned()];
        if twin {
            want.push("node-role.kubernetes.io/control-plane".to_owned());
        }
        same_set(&format!("{name} ({variant})"), &keys, &want)?;
    }
    Ok(())
}
