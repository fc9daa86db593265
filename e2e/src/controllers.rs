//! Controllers that manage their own taints (docs/controllers.md), replayed with their real
//! identities and request forms against the default settings: each must get its own taint
//! changes through, and a stale writer must still not take them away.

use serde_json::{json, Value};

use crate::env::Env;
use crate::helpers::{
    annotation, check, dedicated, described, node, patch, stored_taints_are, taint, told,
};
use crate::kubectl::*;
use crate::labels::VARIANT_LABEL;

const OWNERS: &str = "taintguard.io/taint-owners";
const ONE_SHOT_RECORD: &str = "taintguard.io/removed-startup-taints";

/// The owner record stored on `node`, as `key:Effect` → username pairs; an owned taint whose
/// removal the record keeps is `removed by <username>`.
fn owners(node: &Value) -> Result<Vec<(String, String)>, String> {
    let Some(text) = annotation(node, OWNERS) else {
        return Ok(Vec::new());
    };
    let record: std::collections::BTreeMap<String, Value> =
        serde_json::from_str(text).map_err(|e| format!("owner record {text:?}: {e}"))?;
    record
        .into_iter()
        .map(|(entry, claim)| match (&claim, claim["owner"].as_str()) {
            (Value::String(owner), _) => Ok((entry, owner.clone())),
            (_, Some(owner)) if claim["removed"] == true => {
                Ok((entry, format!("removed by {owner}")))
            }
            _ => Err(format!("owner record {text:?}: entry {entry} is {claim}")),
        })
        .collect()
}

/// How [`owners`] names the standing removal of `owner`'s taint.
fn removed_by(owner: &str) -> String {
    format!("removed by {owner}")
}

fn owners_are(what: &str, node: &Value, want: &[(&str, &str)]) -> Result<(), String> {
    let got = owners(node)?;
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(t, o)| (t.to_string(), o.to_string()))
        .collect();
    check(got == want, || {
        format!("{what}: owner record stored {got:?}, expected {want:?}")
    })
}

fn not_warned(out: &Out, what: &str) -> Result<(), String> {
    check(!out.stderr.contains("taint-preservation"), || {
        format!("{what}: warned: {}", out.describe())
    })
}

fn json_patch(k: &Kubectl, who: Actor, name: &str, ops: &Value) -> Result<Out, String> {
    k.patch_node(who, name, NodePatch::json(&ops.to_string()))
}

/// The whole taint list a controller sends, and how.
struct TaintList<'a> {
    /// The patch type: `strategic` or `merge`.
    patch_type: &'a str,
    /// The taints the Node is to have.
    taints: &'a [Value],
}

/// A patch of the whole taint list that carries the resourceVersion of `read`, as controllers
/// using optimistic locking send it (`null` for an empty list).
fn list_patch(k: &Kubectl, who: Actor, read: &Value, list: TaintList) -> Result<Out, String> {
    let TaintList { patch_type, taints } = list;
    let list = if taints.is_empty() {
        Value::Null
    } else {
        Value::Array(taints.to_vec())
    };
    let body = json!({"metadata": {"resourceVersion": read["metadata"]["resourceVersion"]},
                      "spec": {"taints": list}});
    let name = read["metadata"]["name"].as_str().unwrap_or_default();
    k.patch_node(
        who,
        name,
        NodePatch {
            patch_type,
            body: &body.to_string(),
        },
    )
}

/// A kubelet registers `name` with `taints` (a CREATE), with the annotation a real kubelet
/// writes at registration (so the annotations exist, as on every real Node, before a JSON patch
/// adds one).
/// The kubelet's registration of node `name`, judged by the policy variant `variant`.
fn register(
    k: &Kubectl,
    name: &'static str,
    variant: &str,
    taints: &[Value],
) -> Result<(), String> {
    let mut registered = node(name, variant, taints);
    registered["metadata"]["annotations"] =
        json!({"volumes.kubernetes.io/controller-managed-attach-detach": "true"});
    k.ok(
        Some(kubelet(name)),
        &["create", "-f", "-"],
        Some(&registered.to_string()),
    )
    .map(drop)
}

fn kured_taint() -> Value {
    taint("weave.works/kured-node-reboot", "", "PreferNoSchedule")
}

/// kured (`pkg/taints`): a fresh GET, then a JSON patch without resourceVersion. On an empty
/// list it first tests the whole spec and creates the list; it removes its taint by index after
/// testing that the entry is `{key, effect}`.
fn kured_add(k: &Kubectl, name: &str) -> Result<Out, String> {
    let node = k.get("node", name, None)?;
    let mut ops = Vec::new();
    if node["spec"]["taints"].as_array().is_none_or(Vec::is_empty) {
        ops.push(json!({"op": "test", "path": "/spec", "value": node["spec"]}));
        ops.push(json!({"op": "add", "path": "/spec/taints", "value": []}));
    }
    ops.push(json!({"op": "add", "path": "/spec/taints/-", "value": kured_taint()}));
    json_patch(k, KURED, name, &Value::Array(ops))
}

fn kured_remove(k: &Kubectl, name: &str) -> Result<Out, String> {
    let node = k.get("node", name, None)?;
    let index = node["spec"]["taints"]
        .as_array()
        .and_then(|list| {
            list.iter()
                .position(|t| t["key"] == "weave.works/kured-node-reboot")
        })
        .ok_or("kured's taint is not on the node")?;
    let path = format!("/spec/taints/{index}");
    let ops = json!([{"op": "test", "path": path, "value": kured_taint()},
                     {"op": "remove", "path": path}]);
    json_patch(k, KURED, name, &ops)
}

pub fn kured(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctl-kured";
    register(k, name, "restore", &[])?;
    kured_and_a_person_taint(k, name)?;
    stale_patch_puts_both_back(k, name)?;
    // node-controller's cache as it is now, before kured's removal.
    let before_removal = k.get("node", name, None)?;
    kured_removes_its_taint(k, name)?;
    stale_re_add_is_stripped(k, name, &before_removal)?;
    kured_taints_again(k, name)
}

/// The taint node-controller's stale patch carries.
fn unreachable() -> Value {
    taint("node.kubernetes.io/unreachable", "", "NoSchedule")
}

/// The owner record after kured's removal: alice owns `dedicated`, and kured's taint is recorded
/// as removed by kured.
fn owners_after_removal(what: &str, stored: &Value) -> Result<(), String> {
    let removed = [
        ("example.com/dedicated:NoSchedule", ALICE.user.to_owned()),
        (
            "weave.works/kured-node-reboot:PreferNoSchedule",
            removed_by(KURED.user),
        ),
    ];
    let removed: Vec<(&str, &str)> = removed.iter().map(|(e, o)| (*e, o.as_str())).collect();
    owners_are(what, stored, &removed)
}

/// kured, waiting for the reboot lock, and a person both taint the node; each owns its taint.
fn kured_and_a_person_taint(k: &Kubectl, name: &str) -> Result<(), String> {
    // Waiting for the reboot lock, kured taints the node (the empty-list form of its patch).
    let out = kured_add(k, name)?;
    not_warned(&out, "kured's taint")?;
    // A person taints the node too.
    k.ok(
        Some(ALICE),
        &[
            "taint",
            "nodes",
            name,
            "example.com/dedicated=gpu:NoSchedule",
        ],
        None,
    )?;
    let stored = k.get("node", name, None)?;
    stored_taints_are(
        "after kured and alice",
        &stored,
        &[kured_taint(), dedicated()],
    )?;
    owners_are(
        "after kured and alice",
        &stored,
        &[
            ("example.com/dedicated:NoSchedule", ALICE.user),
            ("weave.works/kured-node-reboot:PreferNoSchedule", KURED.user),
        ],
    )
}

/// node-controller's stale whole-list patch, which drops both taints.
fn stale_patch_puts_both_back(k: &Kubectl, name: &str) -> Result<(), String> {
    // node-controller's stale whole-list patch drops both: both are put back, the record kept.
    let stale = [unreachable()];
    let out = k.patch_node(NODE_CONTROLLER, name, NodePatch::strategic(&patch(&stale)))?;
    told(
        &out,
        "may not remove protected taint weave.works/kured-node-reboot:PreferNoSchedule",
        "node-controller",
    )?;
    let stored = k.get("node", name, None)?;
    stored_taints_are(
        "after the stale patch",
        &stored,
        &[stale[0].clone(), kured_taint(), dedicated()],
    )?;
    check(owners(&stored)?.len() == 2, || {
        format!("after the stale patch: owner record {:?}", owners(&stored))
    })
}

/// kured removes its own taint after the reboot.
fn kured_removes_its_taint(k: &Kubectl, name: &str) -> Result<(), String> {
    // After the reboot kured removes its own taint: it stands, and the record keeps the removal.
    let out = kured_remove(k, name)?;
    not_warned(&out, "kured's removal")?;
    let stored = k.get("node", name, None)?;
    stored_taints_are(
        "after kured's removal",
        &stored,
        &[unreachable(), dedicated()],
    )?;
    owners_after_removal("after kured's removal", &stored)
}

/// node-controller re-adds kured's taint from `before_removal`, its copy taken before kured's
/// removal.
fn stale_re_add_is_stripped(k: &Kubectl, name: &str, before_removal: &Value) -> Result<(), String> {
    // node-controller's strategic merge patch of the whole list, from its copy taken before
    // kured's removal, puts the taint back. kured never retries, so it is stripped, and the
    // record never names the stale writer.
    let body = json!({"spec": {"taints": before_removal["spec"]["taints"]}}).to_string();
    let out = k.patch_node(NODE_CONTROLLER, name, NodePatch::strategic(&body))?;
    told(
        &out,
        "may not re-add protected taint weave.works/kured-node-reboot:PreferNoSchedule, which its \
         owner \"system:serviceaccount:kube-system:kured\" removed; this policy's patch strips it",
        "node-controller's stale re-add",
    )?;
    let stored = k.get("node", name, None)?;
    stored_taints_are(
        "after the stale re-add",
        &stored,
        &[unreachable(), dedicated()],
    )?;
    owners_after_removal("after the stale re-add", &stored)
}

/// Another reboot: kured taints the node again and owns the taint again.
fn kured_taints_again(k: &Kubectl, name: &str) -> Result<(), String> {
    // Another reboot: kured adds it again (the non-empty-list form) and owns it again.
    kured_add(k, name)?;
    let stored = k.get("node", name, None)?;
    owners_are(
        "after kured's second taint",
        &stored,
        &[
            ("example.com/dedicated:NoSchedule", ALICE.user),
            ("weave.works/kured-node-reboot:PreferNoSchedule", KURED.user),
        ],
    )
}

/// nfd-master (`setTaints`) running as `nfd`: a fresh GET, a strategic merge patch of the whole
/// list carrying the resourceVersion read (`null` for an empty list), then a JSON patch of its
/// own annotation.
fn nfd_set_taints(k: &Kubectl, nfd: Actor, name: &str, taints: &[Value]) -> Result<Out, String> {
    let node = k.get("node", name, None)?;
    let out = list_patch(
        k,
        nfd,
        &node,
        TaintList {
            patch_type: "strategic",
            taints,
        },
    )?;
    let path = "/metadata/annotations/nfd.node.kubernetes.io~1taints";
    let had = annotation(&node, "nfd.node.kubernetes.io/taints").is_some();
    let op = match (had, taints.is_empty()) {
        (false, _) => json!({"op": "add", "path": path, "value": described(taints).join(",")}),
        (true, false) => {
            json!({"op": "replace", "path": path, "value": described(taints).join(",")})
        }
        (true, true) => json!({"op": "remove", "path": path}),
    };
    json_patch(k, nfd, name, &json!([op]))?;
    Ok(out)
}

pub fn node_feature_discovery(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctl-nfd";
    register(k, name, "restore", &[])?;
    nfd_passes(k, NFD_MASTER, name)
}

/// NFD's passes as `nfd` on node `name`: a NodeFeatureRule matches, its value changes, it stops
/// matching; each time the node's taints, NFD's record and the owner record agree.
fn nfd_passes(k: &Kubectl, nfd: Actor, name: &str) -> Result<(), String> {
    let gpu = |v: &str| taint("feature.node.kubernetes.io/gpu", v, "NoSchedule");
    let entry = "feature.node.kubernetes.io/gpu:NoSchedule";
    for (step, taints) in [
        ("a NodeFeatureRule matches", vec![gpu("a100")]),
        ("the rule's value changes in place", vec![gpu("h100")]),
        ("the rule stops matching", vec![]),
    ] {
        let out = nfd_set_taints(k, nfd, name, &taints)?;
        not_warned(&out, step)?;
        let stored = k.get("node", name, None)?;
        stored_taints_are(step, &stored, &taints)?;
        let nfd_record = annotation(&stored, "nfd.node.kubernetes.io/taints").unwrap_or("");
        check(nfd_record == described(&taints).join(","), || {
            format!("{step}: NFD's annotation {nfd_record:?} disagrees with the taints")
        })?;
        let removed = removed_by(nfd.user);
        let owned: &[(&str, &str)] = if taints.is_empty() {
            &[(entry, &removed)]
        } else {
            &[(entry, nfd.user)]
        };
        owners_are(step, &stored, owned)?;
    }
    Ok(())
}

/// NFD as its Helm chart installs it with `--namespace nfd`, judged by the `nfd` variant, whose
/// settings are the README's worked example naming it in `controllerRecords`
/// (`examples/settings/nfd-in-namespace-nfd.json`): its passes go through as nfd-master's do
/// under the defaults; nfd-master's kustomize identity, which that entry does not name, may not
/// rewrite the record, and is told which entry would name it.
pub fn nfd_in_another_namespace(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctl-nfd-helm";
    register(k, name, "nfd", &[])?;
    nfd_passes(k, NFD_HELM_IN_NFD, name)?;
    let forged = json!({"metadata": {"annotations": {
        "nfd.node.kubernetes.io/taints": "example.com/dedicated=gpu:NoSchedule"}}});
    let out = k.patch_node(NFD_MASTER, name, NodePatch::merge(&forged.to_string()))?;
    told(
        &out,
        "may not rewrite the controller's taint record nfd.node.kubernetes.io/taints of node \
         ctl-nfd-helm (only the writers its controllerRecords entry names may: if the requester \
         is that controller, installed under another identity, add \
         \"node-feature-discovery/nfd-master\" to owner.serviceAccounts of the entry for \
         nfd.node.kubernetes.io/taints)",
        "an unnamed NFD's record write",
    )?;
    let stored = k.get("node", name, None)?;
    let record = annotation(&stored, "nfd.node.kubernetes.io/taints");
    check(record.is_none(), || {
        format!("NFD's record after an unnamed writer's write: {record:?}")
    })
}

/// Stores node `name` with NFD's taint `gpu`, NFD's record of it, and `dedicated`, without the
/// label that selects it for the policy, then labels it `restore`: the policy installed over a
/// node that already carried them, as far as this node can tell.
fn installed_over(k: &Kubectl, name: &str, gpu: &Value) -> Result<(), String> {
    let mut before = node(name, "restore", &[gpu.clone(), dedicated()]);
    before["metadata"]["labels"]
        .as_object_mut()
        .ok_or("a node has labels")?
        .remove(VARIANT_LABEL);
    before["metadata"]["annotations"] = json!({
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "nfd.node.kubernetes.io/taints": described(std::slice::from_ref(gpu)).join(","),
    });
    k.ok(None, &["create", "-f", "-"], Some(&before.to_string()))?;
    k.ok(
        None,
        &["label", "node", name, &format!("{VARIANT_LABEL}=restore")],
        None,
    )?;
    Ok(())
}

/// NFD started against a node whose feature taint, and NFD's own record of it, were there
/// before the policy was installed: the policy never saw the taint added, and NFD's record
/// (`nfd.node.kubernetes.io/taints`) names its writer. The node is created without the label
/// that selects it for the policy, then labelled: the install, as far as this node can tell.
pub fn nfd_before_the_install(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctl-nfd-preinstall";
    let gpu = taint("feature.node.kubernetes.io/gpu", "a100", "NoSchedule");
    installed_over(k, name, &gpu)?;
    let stored = k.get("node", name, None)?;
    owners_are("after the install", &stored, &[])?;
    // The NodeFeatureRule no longer matches: nfd-master's pass (`setTaints`) drops its taint
    // from the list, keeping the others, then its record's entry, the record's last.
    let read = k.get("node", name, None)?;
    let out = list_patch(
        k,
        NFD_MASTER,
        &read,
        TaintList {
            patch_type: "strategic",
            taints: &[dedicated()],
        },
    )?;
    not_warned(
        &out,
        "nfd-master's removal of a taint from before the install",
    )?;
    let path = "/metadata/annotations/nfd.node.kubernetes.io~1taints";
    let out = json_patch(
        k,
        NFD_MASTER,
        name,
        &json!([{"op": "remove", "path": path}]),
    )?;
    not_warned(&out, "nfd-master's record update")?;
    let stored = k.get("node", name, None)?;
    stored_taints_are("after nfd-master's pass", &stored, &[dedicated()])?;
    let nfd_record = annotation(&stored, "nfd.node.kubernetes.io/taints");
    check(nfd_record.is_none(), || {
        format!("NFD's annotation {nfd_record:?} disagrees with the taints")
    })?;
    let removed = removed_by(NFD_MASTER.user);
    owners_are(
        "after nfd-master's pass",
        &stored,
        &[("feature.node.kubernetes.io/gpu:NoSchedule", &removed)],
    )?;
    // Another writer's change of NFD's record is undone.
    let forged = json!({"metadata": {"annotations": {
        "nfd.node.kubernetes.io/taints": "example.com/dedicated=gpu:NoSchedule"}}});
    let out = k.patch_node(KURED, name, NodePatch::merge(&forged.to_string()))?;
    told(
        &out,
        "may not rewrite the controller's taint record nfd.node.kubernetes.io/taints",
        "a forged NFD record",
    )?;
    let stored = k.get("node", name, None)?;
    check(
        annotation(&stored, "nfd.node.kubernetes.io/taints").is_none(),
        || {
            format!(
                "NFD's record after the forgery: {:?}",
                annotation(&stored, "nfd.node.kubernetes.io/taints")
            )
        },
    )
}

/// The FSx for Lustre node plugin (`removeNotReadyTaint`): a fresh GET, then a JSON patch that
/// tests the whole list as read and replaces it with the rest (`null` when nothing is left).
pub fn csi_agent_not_ready(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctl-fsx";
    let not_ready = taint("fsx.csi.aws.com/agent-not-ready", "", "NoExecute");
    register(k, name, "restore", std::slice::from_ref(&not_ready))?;
    let node = k.get("node", name, None)?;
    let ops = json!([{"op": "test", "path": "/spec/taints", "value": node["spec"]["taints"]},
                     {"op": "replace", "path": "/spec/taints", "value": null}]);
    let out = json_patch(k, FSX_CSI_NODE, name, &ops)?;
    not_warned(&out, "the node plugin's removal")?;
    let stored = k.get("node", name, None)?;
    stored_taints_are("after the node plugin's removal", &stored, &[])?;
    check(
        annotation(&stored, ONE_SHOT_RECORD) == Some("fsx.csi.aws.com/agent-not-ready:NoExecute"),
        || format!("removal record: {:?}", annotation(&stored, ONE_SHOT_RECORD)),
    )?;
    // A provisioner racing from its copy from before the removal writes the startup taint back.
    let out = k.patch_node(KARPENTER, name, NodePatch::merge(&patch(&[not_ready])))?;
    told(
        &out,
        "may not re-add one-shot startup taint fsx.csi.aws.com/agent-not-ready:NoExecute; this \
         policy's patch strips it",
        "the provisioner",
    )?;
    stored_taints_are("after the stale re-add", &k.get("node", name, None)?, &[])
}

/// The Node Readiness Controller: a JSON merge patch of the whole list with the resourceVersion
/// of its cached copy (controller-runtime's optimistic lock). Continuous mode re-adds the taint
/// when a condition regresses.
pub fn node_readiness_controller(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctl-readiness";
    let gate = taint("readiness.k8s.io/network-ready", "", "NoSchedule");
    register(k, name, "restore", &[gate.clone(), dedicated()])?;
    for (step, taints) in [
        ("the condition is met", vec![dedicated()]),
        ("the condition regresses", vec![dedicated(), gate.clone()]),
    ] {
        let cached = k.get("node", name, None)?;
        let out = list_patch(
            k,
            READINESS_CONTROLLER,
            &cached,
            TaintList {
                patch_type: "merge",
                taints: &taints,
            },
        )?;
        not_warned(&out, step)?;
        let stored = k.get("node", name, None)?;
        stored_taints_are(step, &stored, &taints)?;
        // The readiness taint is no protected taint: only the kubelet's `dedicated` is owned.
        owners_are(
            step,
            &stored,
            &[(
                "example.com/dedicated:NoSchedule",
                "system:node:ctl-readiness",
            )],
        )?;
    }
    Ok(())
}
