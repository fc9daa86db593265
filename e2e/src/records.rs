//! The records' trust boundary (docs/records.md): writes of `nodes/status` store `metadata`, so
//! each of taint-preservation's records is forged that way by node-problem-detector's service
//! account, which holds `nodes/status` patch on every Node in a real cluster. The guard deployed
//! from `cluster-admission-policy-status.yaml` must undo each forgery, so that the next write is
//! judged on the records the policy kept; kubelet's and node-problem-detector's own status
//! writes must go through unchanged, with policy-server up ([`status_writes_pass`]) and down
//! ([`status_writes_pass_while_down`]).

use std::time::Duration;

use serde_json::{json, Value};
use taintguard_control_plane::cluster::{wait_for, ApiRequest, Identity};

use crate::env::Env;
use crate::helpers::{annotation, check, cordoned, dedicated, node, stored_taints_are, taint};
use crate::kubectl::*;

const NAME: &str = "rec-1";
const OWNERS: &str = "taintguard.io/taint-owners";
const CORDON: &str = "taintguard.io/cordoned-by";
const NFD_RECORD: &str = "nfd.node.kubernetes.io/taints";

/// A patch of a Node's status subresource.
pub(crate) struct StatusPatch<'a> {
    /// The patch type, as in its content type: `merge` or `strategic-merge`.
    pub patch_type: &'a str,
    /// The patch document.
    pub body: &'a Value,
}

/// A patch of `node`'s status subresource as `who` sends it: the response's headers (the
/// policy's warnings among them) and the stored Node.
pub(crate) fn patch_status(
    env: &Env,
    who: Actor,
    node: &str,
    patch: StatusPatch,
) -> Result<(String, Value), String> {
    let StatusPatch { patch_type, body } = patch;
    let (headers, stored) = env.cluster.api_as(
        Identity {
            user: who.user,
            groups: who.groups,
        },
        &ApiRequest {
            method: "PATCH",
            path: &format!("/api/v1/nodes/{node}/status"),
            content_type: &format!("application/{patch_type}-patch+json"),
            body: &body.to_string(),
        },
    )?;
    let stored = serde_json::from_str(&stored).map_err(|e| format!("{e}: {stored}"))?;
    Ok((headers, stored))
}

/// node-problem-detector's forgery of `annotations` through `nodes/status`: each must come back
/// as stored before it, with a warning naming the record.
fn forge(env: &Env, record: &str, annotations: Value, named: &str) -> Result<(), String> {
    let before = env.kubectl.get("node", NAME, None)?;
    let body = json!({"metadata": {"annotations": annotations}});
    let (headers, stored) = patch_status(
        env,
        NODE_PROBLEM_DETECTOR,
        NAME,
        StatusPatch {
            patch_type: "merge",
            body: &body,
        },
    )?;
    for key in [OWNERS, CORDON, NFD_RECORD] {
        check(annotation(&stored, key) == annotation(&before, key), || {
            format!(
                "{record}: {key} stored {:?}, was {:?}",
                annotation(&stored, key),
                annotation(&before, key)
            )
        })?;
    }
    check(headers.contains(named), || {
        format!("{record}: no warning naming {named:?} in {headers}")
    })
}

/// The guard's webhook reaches the API server's informer after a moment: a dry-run forgery is
/// sent until it comes back undone.
fn wait_for_the_guard(env: &Env) -> Result<(), String> {
    let body = json!({"metadata": {"annotations": {CORDON: "probe"}}}).to_string();
    wait_for("the nodes/status guard", Duration::from_secs(60), || {
        env.cluster
            .api_as(
                Identity {
                    user: NODE_PROBLEM_DETECTOR.user,
                    groups: NODE_PROBLEM_DETECTOR.groups,
                },
                &ApiRequest {
                    method: "PATCH",
                    path: &format!("/api/v1/nodes/{NAME}/status?dryRun=All"),
                    content_type: "application/merge-patch+json",
                    body: &body,
                },
            )
            .is_ok_and(|(_, stored)| !stored.contains("\"probe\""))
    })
}

/// Each record forged through `nodes/status` grants nothing and strips nothing on the next
/// write: a forged owner entry does not let its forger remove the taint, a forged removal entry
/// does not strip kured's addition, a forged cordon owner does not let its forger uncordon, and
/// a forged NFD record does not give nfd-master a taint nobody owns.
pub fn status_forgeries(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    k.apply(&node(NAME, "restore", &[dedicated()]))?;
    k.ok(Some(ALICE), &["cordon", NAME], None)?;
    wait_for_the_guard(env)?;
    forged_owner_entry(env)?;
    forged_removal_entry(env)?;
    forged_cordon_owner(env)?;
    forged_nfd_record(env)
}

/// A forged owner entry naming node-problem-detector does not let it remove the taint.
fn forged_owner_entry(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    let npd = NODE_PROBLEM_DETECTOR.user;
    let owner = json!({"example.com/dedicated:NoSchedule": npd}).to_string();
    forge(
        env,
        "an owner entry",
        json!({OWNERS: owner}),
        "may not rewrite the taint owner record",
    )?;
    k.patch_node(
        NODE_PROBLEM_DETECTOR,
        NAME,
        NodePatch::merge(r#"{"spec":{"taints":null}}"#),
    )?;
    let stored = k.get("node", NAME, None)?;
    stored_taints_are("the forger's removal", &stored, &[dedicated()])
}

/// A forged removal entry for kured's taint does not strip kured's addition of it.
fn forged_removal_entry(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    let removal = json!({"weave.works/kured-node-reboot:PreferNoSchedule": {"owner": ALICE.user, "removed": true}});
    forge(
        env,
        "a removal entry",
        json!({OWNERS: removal.to_string()}),
        "may not rewrite the taint owner record",
    )?;
    let add = json!([{"op": "add", "path": "/spec/taints/-", "value": reboot_taint()}]);
    k.patch_node(KURED, NAME, NodePatch::json(&add.to_string()))?;
    let stored = k.get("node", NAME, None)?;
    stored_taints_are("kured's addition", &stored, &[dedicated(), reboot_taint()])
}

/// A forged cordon owner naming node-problem-detector does not let it uncordon.
fn forged_cordon_owner(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    let npd = NODE_PROBLEM_DETECTOR.user;
    forge(
        env,
        "a cordon owner",
        json!({CORDON: npd}),
        "may not rewrite the cordon owner record",
    )?;
    k.ok(Some(NODE_PROBLEM_DETECTOR), &["uncordon", NAME], None)?;
    check(cordoned(&k.get("node", NAME, None)?), || {
        "the forger's uncordon was stored".to_owned()
    })
}

/// A forged NFD record does not give nfd-master a taint nobody owns.
fn forged_nfd_record(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    // A taint nobody is recorded to own, as one from before the install: the admin, whom the
    // settings permit, drops the owner record.
    let drop_owners = json!({"metadata": {"annotations": {OWNERS: null}}}).to_string();
    k.ok(
        None,
        &["patch", "node", NAME, "--type", "merge", "-p", &drop_owners],
        None,
    )?;
    forge(
        env,
        "NFD's record",
        json!({NFD_RECORD: "example.com/dedicated=gpu:NoSchedule"}),
        "may not rewrite the controller's taint record",
    )?;
    let read = k.get("node", NAME, None)?;
    let body = json!({"metadata": {"resourceVersion": read["metadata"]["resourceVersion"]},
                      "spec": {"taints": [reboot_taint()]}});
    k.patch_node(NFD_MASTER, NAME, NodePatch::strategic(&body.to_string()))?;
    let stored = k.get("node", NAME, None)?;
    stored_taints_are(
        "nfd-master's removal",
        &stored,
        &[dedicated(), reboot_taint()],
    )
}

fn reboot_taint() -> Value {
    taint("weave.works/kured-node-reboot", "", "PreferNoSchedule")
}

/// kubelet's status update and node-problem-detector's condition patch, as each sends it (a
/// strategic merge patch of `status`): stored as sent, with no warning.
fn status_writes(env: &Env, node: &str) -> Result<(), String> {
    let kubelet_patch = json!({"status": {
        "$setElementOrder/conditions": [{"type": "Ready"}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "lastHeartbeatTime": "2026-11-29T09:00:00Z"}]}});
    let npd_patch = json!({"status": {"conditions": [{"type": "KernelDeadlock", "status": "False",
        "reason": "KernelHasNoDeadlock", "lastHeartbeatTime": "2026-11-29T09:00:00Z"}]}});
    let kubelet = kubelet(Box::leak(node.to_owned().into_boxed_str()));
    for (who, body, condition) in [
        (kubelet, kubelet_patch, "Ready"),
        (NODE_PROBLEM_DETECTOR, npd_patch, "KernelDeadlock"),
    ] {
        let (headers, stored) = patch_status(
            env,
            who,
            node,
            StatusPatch {
                patch_type: "strategic-merge",
                body: &body,
            },
        )?;
        check(!headers.contains("taint-preservation"), || {
            format!("{}'s status write was warned: {headers}", who.user)
        })?;
        let conditions = stored["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        check(conditions.iter().any(|c| c["type"] == condition), || {
            format!(
                "{}'s condition {condition} not stored: {conditions:?}",
                who.user
            )
        })?;
    }
    Ok(())
}

/// kubelet's and node-problem-detector's status writes go through the guard untouched.
pub fn status_writes_pass(env: &mut Env) -> Result<(), String> {
    status_writes(env, NAME)
}

/// With policy-server down, the same writes go through: the guard's `failurePolicy: Ignore`.
pub fn status_writes_pass_while_down(env: &Env, node: &str) -> Result<(), String> {
    status_writes(env, node)
}
