//! Sealed records (docs/records.md, "Sealed records") through the real API server, across a
//! policy-server outage: kured adds its taint to a Node of the sealed variant and to one of the
//! restore variant while policy-server serves ([`before_outage`]); with policy-server down,
//! node-problem-detector forges an owner entry naming itself on both through `nodes/status`,
//! which the guard's `Ignore` lets through ([`forge_while_down`]); with policy-server back, its
//! removal of kured's taint stands where the records are not sealed (the window
//! docs/records.md names) and is put back where they are, kured's entry with it ([`after_outage`]).

use serde_json::{json, Value};

use crate::env::Env;
use crate::helpers::{annotation, check, node, taint, taints};
use crate::kubectl::*;
use crate::records::{patch_status, StatusPatch};

/// The variant label of the Nodes the sealed variant judges.
pub const VARIANT: &str = "sealed";
const SEALED_NODE: &str = "seal-on";
const UNSEALED_NODE: &str = "seal-off";
const OWNERS: &str = "taintguard.io/taint-owners";
const SEAL: &str = "taintguard.io/records-seal";

/// The sealed variant's `recordSeal`: one key, and a Node without a seal counting for nothing.
pub fn record_seal() -> Value {
    json!({
        "keys": [{"id": "e2e-1", "secret": "ZTJlLXNlYWwta2V5LW9mLXRoaXJ0eS10d28tYnl0ZXM="}],
        "unsealed": "refuse",
    })
}

fn reboot() -> Value {
    taint("weave.works/kured-node-reboot", "", "PreferNoSchedule")
}

/// Whether `name`'s stored taints hold kured's, as `what` expects. Only kured's is compared:
/// the node lifecycle controller of the outage scenario taints these Nodes, which post no
/// status, `unreachable` meanwhile.
fn kured_taint_is(env: &Env, name: &str, what: &str, present: bool) -> Result<(), String> {
    let stored = taints(&env.kubectl.get("node", name, None)?);
    let has = stored
        .iter()
        .any(|t| t.starts_with("weave.works/kured-node-reboot:"));
    check(has == present, || {
        format!("{what}: kured's taint present: {has}, expected {present}: {stored:?}")
    })
}

/// policy-server serving: kured's JSON patch adding its taint to each Node; each then carries
/// kured's owner entry, and the sealed one a seal.
pub fn before_outage(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    let add = json!([{"op": "add", "path": "/spec/taints", "value": [reboot()]}]).to_string();
    for (name, variant) in [(SEALED_NODE, VARIANT), (UNSEALED_NODE, "restore")] {
        k.apply(&node(name, variant, &[]))?;
        k.patch_node(KURED, name, NodePatch::json(&add))?;
        let stored = k.get("node", name, None)?;
        check(
            annotation(&stored, OWNERS).is_some_and(|o| o.contains(KURED.user)),
            || format!("{name}: kured's entry not recorded: {}", stored["metadata"]),
        )?;
    }
    let sealed = k.get("node", SEALED_NODE, None)?;
    check(annotation(&sealed, SEAL).is_some(), || {
        format!("{SEALED_NODE}: no seal written: {}", sealed["metadata"])
    })
}

/// policy-server down: node-problem-detector's merge PATCH of `nodes/NAME/status` writing an
/// owner entry for kured's taint in its own name is stored on both Nodes.
pub fn forge_while_down(env: &Env) -> Result<(), String> {
    let npd = NODE_PROBLEM_DETECTOR.user;
    let forged = json!({"weave.works/kured-node-reboot:PreferNoSchedule": npd}).to_string();
    let body = json!({"metadata": {"annotations": {OWNERS: forged}}});
    for name in [SEALED_NODE, UNSEALED_NODE] {
        let (_, stored) = patch_status(
            env,
            NODE_PROBLEM_DETECTOR,
            name,
            StatusPatch {
                patch_type: "merge",
                body: &body,
            },
        )?;
        check(annotation(&stored, OWNERS) == Some(forged.as_str()), || {
            format!("{name}: the forgery was not stored while policy-server was down")
        })?;
    }
    Ok(())
}

/// policy-server back: node-problem-detector removes kured's taint from both Nodes. Unsealed,
/// its forged entry made it the owner and the removal stands; sealed, the entry counts for
/// nothing, the removal is put back with kured's entry and a warning saying why, and kured may
/// still remove its own taint.
pub fn after_outage(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let remove = NodePatch::merge(r#"{"spec":{"taints":null}}"#);
    k.patch_node(NODE_PROBLEM_DETECTOR, UNSEALED_NODE, remove)?;
    kured_taint_is(env, UNSEALED_NODE, "the forger's removal, unsealed", false)?;
    println!("#   unsealed: the record forged during the outage let node-problem-detector remove kured's taint");

    let out = k.patch_node(NODE_PROBLEM_DETECTOR, SEALED_NODE, remove)?;
    kured_taint_is(env, SEALED_NODE, "the forger's removal, sealed", true)?;
    let sealed = k.get("node", SEALED_NODE, None)?;
    check(
        annotation(&sealed, OWNERS)
            .is_some_and(|o| o.contains(KURED.user) && !o.contains("node-problem-detector")),
        || {
            format!(
                "the sealed owner entry was not put back: {}",
                sealed["metadata"]
            )
        },
    )?;
    check(out.stderr.contains("does not count"), || {
        format!("no warning names the unvouched record: {}", out.describe())
    })?;
    k.patch_node(KURED, SEALED_NODE, remove)?;
    kured_taint_is(env, SEALED_NODE, "kured's own removal, sealed", false)
}
