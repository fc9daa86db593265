use serde_json::{json, Value};

use super::*;
use taintguard::policy::{read_settings, run, Half};

const ADMIN: (&str, &[&str]) = (
    "kubernetes-admin",
    &["system:masters", "system:authenticated"],
);
const ALICE: (&str, &[&str]) = ("alice@example.com", &["system:authenticated"]);
const NODE_CONTROLLER: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:node-controller",
    &["system:serviceaccounts", "system:authenticated"],
);
const KARPENTER: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:karpenter",
    &["system:serviceaccounts"],
);
const GPU_OPERATOR: (&str, &[&str]) = ("system:serviceaccount:gpu-operator:driver-manager", &[]);

const DEDICATED: &str = r#"{"key":"example.com/dedicated","value":"gpu","effect":"NoSchedule"}"#;
const NOT_READY_NS: &str = r#"{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}"#;
const NOT_READY_NE: &str = r#"{"key":"node.kubernetes.io/not-ready","effect":"NoExecute","timeAdded":"2025-04-10T08:00:00Z"}"#;
const UNINIT: &str = r#"{"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"}"#;
const UNREGISTERED: &str = r#"{"key":"karpenter.sh/unregistered","effect":"NoExecute"}"#;
const EBS_NOT_READY: &str = r#"{"key":"ebs.csi.aws.com/agent-not-ready","effect":"NoExecute"}"#;
const EBS_RECORD: &str = "ebs.csi.aws.com/agent-not-ready:NoExecute";
const EBS_CSI_NODE: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:ebs-csi-node-sa",
    &["system:serviceaccounts"],
);

/// `node` with the one-shot removal record set to `record`.
fn recorded(mut node: Value, record: &str) -> Value {
    node["metadata"]["annotations"]["taintguard.io/removed-startup-taints"] = json!(record);
    node
}

/// A Node shaped like a real one, with a field no Kubernetes version has.
fn node(taints: &[&str], unschedulable: Option<bool>, owner: Option<&str>, label: &str) -> Value {
    let taints: Vec<Value> = taints
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    let mut n = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-1", "labels": {"kubernetes.io/hostname": "worker-1", "team": label},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"podCIDR": "10.244.1.0/24", "taints": taints, "futureSpecField": {"x": [1, 2]}},
        "status": {"images": [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 321520}],
                   "conditions": [{"type": "Ready", "status": "True"}]},
        "fieldFromKubernetes2030": true,
    });
    if let Some(u) = unschedulable {
        n["spec"]["unschedulable"] = json!(u);
    }
    if let Some(o) = owner {
        n["metadata"]["annotations"]["taintguard.io/cordoned-by"] = json!(o);
    }
    n
}

fn request(op: &str, who: (&str, &[&str]), old: Option<&Value>, new: &Value) -> String {
    let mut r = json!({
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"},
        "name": "worker-1", "operation": op,
        "userInfo": {"username": who.0, "groups": who.1},
        "object": new,
    });
    if let Some(old) = old {
        r["oldObject"] = old.clone();
    }
    r.to_string()
}

enum Want {
    Untouched,
    Mutated(Value),
    Denied(&'static [&'static str]),
}

#[test]
fn taint_preservation_cases() {
    let dedicated_other = r#"{"key":"example.com/dedicated","value":"cpu","effect":"NoSchedule"}"#;
    let restore = json!({});
    let deny = json!({"mode": "deny"});
    let cases: Vec<(&str, Value, String, Want)> = vec![
        (
            "incident 1: node-controller's stale whole-list patch is undone",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED], None, None, "a")), &node(&[NOT_READY_NS, NOT_READY_NE], None, None, "a")),
            Want::Mutated(node(&[NOT_READY_NS, NOT_READY_NE, DEDICATED], None, None, "a")),
        ),
        (
            "incident 1 in deny mode",
            deny.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED], None, None, "a")), &node(&[NOT_READY_NS], None, None, "a")),
            Want::Denied(&["node-controller", "remove protected taint example.com/dedicated=gpu:NoSchedule", "permitted"]),
        ),
        (
            "a changed value of a protected taint is put back",
            restore.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[DEDICATED, NOT_READY_NS], None, None, "a")), &node(&[dedicated_other, NOT_READY_NS], None, None, "a")),
            Want::Mutated(node(&[DEDICATED, NOT_READY_NS], None, None, "a")),
        ),
        (
            "incident 3: Karpenter re-adding uninitialized is stripped",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&node(&[DEDICATED], None, None, "a")), &node(&[DEDICATED, UNINIT], None, None, "a")),
            Want::Mutated(node(&[DEDICATED], None, None, "a")),
        ),
        (
            "incident 3 in deny mode",
            deny.clone(),
            request("UPDATE", KARPENTER, Some(&node(&[], None, None, "a")), &node(&[UNINIT], None, None, "a")),
            Want::Denied(&["re-add one-shot startup taint node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule"]),
        ),
        (
            "one-shot taints are fine at CREATE",
            restore.clone(),
            request("CREATE", ("system:node:worker-1", &["system:nodes"]), None, &node(&[UNINIT], None, None, "a")),
            Want::Untouched,
        ),
        (
            "one-shot taint still present may stay",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&node(&[UNINIT], None, None, "a")), &node(&[UNINIT], None, None, "b")),
            Want::Untouched,
        ),
        (
            "Karpenter's registration UPDATE applies a startup taint: allowed, nothing recorded",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&node(&[UNREGISTERED, UNINIT], None, None, "a")), &node(&[UNINIT, EBS_NOT_READY], None, None, "a")),
            Want::Untouched,
        ),
        (
            "the CSI driver removes its startup taint: the removal is recorded",
            restore.clone(),
            request("UPDATE", EBS_CSI_NODE, Some(&node(&[DEDICATED, EBS_NOT_READY], None, None, "a")), &node(&[DEDICATED], None, None, "a")),
            Want::Mutated(recorded(node(&[DEDICATED], None, None, "a"), EBS_RECORD)),
        ),
        (
            "the removal is recorded in deny mode too",
            deny.clone(),
            request("UPDATE", EBS_CSI_NODE, Some(&node(&[EBS_NOT_READY], None, None, "a")), &node(&[], None, None, "a")),
            Want::Mutated(recorded(node(&[], None, None, "a"), EBS_RECORD)),
        ),
        (
            "a re-add after the recorded removal is stripped; the record stays",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&recorded(node(&[DEDICATED], None, None, "a"), EBS_RECORD)), &recorded(node(&[DEDICATED, EBS_NOT_READY], None, None, "a"), EBS_RECORD)),
            Want::Mutated(recorded(node(&[DEDICATED], None, None, "a"), EBS_RECORD)),
        ),
        (
            "a re-add after the recorded removal in deny mode",
            deny.clone(),
            request("UPDATE", KARPENTER, Some(&recorded(node(&[], None, None, "a"), EBS_RECORD)), &recorded(node(&[EBS_NOT_READY], None, None, "a"), EBS_RECORD)),
            Want::Denied(&["re-add one-shot startup taint ebs.csi.aws.com/agent-not-ready:NoExecute"]),
        ),
        (
            "a stale write that drops the record and re-adds the taint: both restored",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&recorded(node(&[], None, None, "a"), EBS_RECORD)), &node(&[EBS_NOT_READY], None, None, "a")),
            Want::Mutated(recorded(node(&[], None, None, "a"), EBS_RECORD)),
        ),
        (
            "a non-permitted requester may not clear the record",
            deny.clone(),
            request("UPDATE", KARPENTER, Some(&recorded(node(&[], None, None, "a"), EBS_RECORD)), &node(&[], None, None, "b")),
            Want::Denied(&["rewrite the one-shot taint removal record of node worker-1"]),
        ),
        (
            "an admin may clear the record, and re-add the taint",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&recorded(node(&[], None, None, "a"), EBS_RECORD)), &node(&[EBS_NOT_READY], None, None, "a")),
            Want::Untouched,
        ),
        (
            "a registration-only taint is stripped from an UPDATE without any record",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&node(&[EBS_NOT_READY], None, None, "a")), &node(&[EBS_NOT_READY, UNREGISTERED], None, None, "a")),
            Want::Mutated(node(&[EBS_NOT_READY], None, None, "a")),
        ),
        (
            "a custom one-shot taint marked registration-only",
            json!({"oneShotTaints": [{"key": "example.com/boot", "onlyAtRegistration": true}, "example.com/warmup"]}),
            request("UPDATE", KARPENTER, Some(&node(&[], None, None, "a")), &node(&[r#"{"key":"example.com/boot","effect":"NoSchedule"}"#, r#"{"key":"example.com/warmup","effect":"NoSchedule"}"#], None, None, "a")),
            Want::Mutated(node(&[r#"{"key":"example.com/warmup","effect":"NoSchedule"}"#], None, None, "a")),
        ),
        (
            "a background audit of a cordoned node (no requester) records no owner",
            restore.clone(),
            request("CREATE", ("", &[]), None, &node(&[DEDICATED], Some(true), None, "a")),
            Want::Untouched,
        ),
        (
            "incident 2: a non-owner's uncordon is undone",
            restore.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), Some("alice@example.com"), "a")), &node(&[], Some(false), Some("alice@example.com"), "a")),
            Want::Mutated(node(&[], Some(true), Some("alice@example.com"), "a")),
        ),
        (
            "an uncordon that drops the field is undone too",
            restore.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), None, "a")), &node(&[], None, None, "a")),
            Want::Mutated(node(&[], Some(true), None, "a")),
        ),
        (
            "incident 2 in deny mode names the owner",
            deny.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), Some("alice@example.com"), "a")), &node(&[], Some(false), Some("alice@example.com"), "a")),
            Want::Denied(&["uncordon node worker-1 (cordoned by \"alice@example.com\")"]),
        ),
        (
            "the owner may uncordon; the record goes",
            restore.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), Some(GPU_OPERATOR.0), "a")), &node(&[], Some(false), Some(GPU_OPERATOR.0), "a")),
            Want::Mutated(node(&[], Some(false), None, "a")),
        ),
        (
            "a cordon records its owner",
            restore.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], None, None, "a")), &node(&[], Some(true), None, "a")),
            Want::Mutated(node(&[], Some(true), Some(GPU_OPERATOR.0), "a")),
        ),
        (
            "a cordon records its owner in deny mode too",
            deny.clone(),
            request("UPDATE", ALICE, Some(&node(&[], None, None, "a")), &node(&[], Some(true), None, "a")),
            Want::Mutated(node(&[], Some(true), Some(ALICE.0), "a")),
        ),
        (
            "a non-permitted requester cannot forge the owner record",
            restore.clone(),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), Some("alice@example.com"), "a")), &node(&[], Some(true), Some(GPU_OPERATOR.0), "a")),
            Want::Mutated(node(&[], Some(true), Some("alice@example.com"), "a")),
        ),
        (
            "an admin may hand the cordon over",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&node(&[], Some(true), Some("alice@example.com"), "a")), &node(&[], Some(true), Some(GPU_OPERATOR.0), "a")),
            Want::Untouched,
        ),
        (
            "an admin's taint removal is accepted untouched",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&node(&[DEDICATED], None, None, "a")), &node(&[], None, None, "a")),
            Want::Untouched,
        ),
        (
            "a person's uncordon of a node cordoned before the policy: accepted",
            restore.clone(),
            request("UPDATE", ALICE, Some(&node(&[], Some(true), None, "a")), &node(&[], Some(false), None, "a")),
            Want::Untouched,
        ),
        (
            "a label-only update of a tainted node by a service account is untouched",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED], Some(true), Some("alice@example.com"), "a")), &node(&[DEDICATED], Some(true), Some("alice@example.com"), "b")),
            Want::Untouched,
        ),
        (
            "controller-owned taints may come and go",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED, NOT_READY_NS], None, None, "a")), &node(&[DEDICATED], None, None, "a")),
            Want::Untouched,
        ),
        (
            "a reorder only is untouched",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED, NOT_READY_NS], None, None, "a")), &node(&[NOT_READY_NS, DEDICATED], None, None, "a")),
            Want::Untouched,
        ),
        (
            "a per-rule permitted service account may remove its taint",
            json!({"protectedTaints": [{"key": "example.com/*", "permitted": {"serviceAccounts": ["gpu-operator/*"]}}]}),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[DEDICATED], None, None, "a")), &node(&[], None, None, "a")),
            Want::Untouched,
        ),
        (
            "an effect-scoped rule leaves other effects alone",
            json!({"protectedTaints": [{"key": "example.com/*", "effects": ["NoExecute"]}]}),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[DEDICATED], None, None, "a")), &node(&[], None, None, "a")),
            Want::Untouched,
        ),
        (
            "a globally permitted service account may uncordon",
            json!({"permitted": {"serviceAccounts": ["gpu-operator/driver-manager"]}}),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), Some("alice"), "a")), &node(&[], Some(false), Some("alice"), "a")),
            Want::Mutated(node(&[], Some(false), None, "a")),
        ),
        (
            "cordon ownership can be switched off",
            json!({"cordon": {"enabled": false}}),
            request("UPDATE", GPU_OPERATOR, Some(&node(&[], Some(true), None, "a")), &node(&[], Some(false), None, "a")),
            Want::Untouched,
        ),
        (
            "a username that looks like a group is not that group",
            restore.clone(),
            request("UPDATE", ("system:masters", &[]), Some(&node(&[DEDICATED], None, None, "a")), &node(&[], None, None, "a")),
            Want::Mutated(node(&[DEDICATED], None, None, "a")),
        ),
    ];
    run_cases(cases);
}

/// Runs a table of (case, settings, request, what the policy must answer).
fn run_cases(cases: Vec<(&str, Value, String, Want)>) {
    for (name, settings, req, want) in cases {
        let verdict = run::<TaintPreservation>(
            &req,
            &settings.to_string(),
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        match want {
            Want::Untouched => {
                assert!(verdict.accepted(), "{name}: {verdict:?}");
                assert_eq!(verdict.mutated_object(), None, "{name}");
                assert!(
                    verdict.warnings.is_empty(),
                    "{name}: {:?}",
                    verdict.warnings
                );
            }
            Want::Mutated(expected) => {
                assert!(verdict.accepted(), "{name}: {verdict:?}");
                let text = verdict
                    .mutated_object()
                    .unwrap_or_else(|| panic!("{name}: not mutated"));
                taintguard_testkit::assert_valid_object("Node", text);
                let got: Value =
                    serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"));
                assert_eq!(got, expected, "{name}");
            }
            Want::Denied(parts) => {
                assert!(!verdict.accepted(), "{name}: {verdict:?}");
                assert_eq!(verdict.code(), Some(403), "{name}");
                let message = verdict.message().unwrap();
                for part in parts {
                    assert!(message.contains(part), "{name}: {part:?} not in {message}");
                }
            }
        }
    }
}

#[test]
fn mutation_keeps_text_outside_the_edit() {
    // Odd formatting and key order survive byte for byte everywhere but in the value the edit
    // replaces (json::Object splices the text).
    let old = r#"{"zeta":1,"metadata":{"name":"n"},"spec":{"taints":[{"key":"a.io/x","effect":"NoSchedule"}]}}"#;
    let new = r#"{ "zeta" : 1 , "metadata":{"name":"n"}, "spec" : { "b":[ ], "taints" : [ ] , "a": 2 } }"#;
    let req = format!(
        r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Node"}},"operation":"UPDATE","userInfo":{{"username":"system:serviceaccount:a:b"}},"object":{new},"oldObject":{old}}}"#
    );
    let verdict =
        run::<TaintPreservation>(&req, "{}", Half::Mutating, &taintguard::NoCluster("test"));
    assert_eq!(
        verdict.mutated_object(),
        Some(
            r#"{ "zeta" : 1 , "metadata":{"name":"n"}, "spec" : { "b":[ ], "taints" : [{"key":"a.io/x","effect":"NoSchedule"}] , "a": 2 } }"#
        )
    );
}

#[test]
fn missing_places_are_created() {
    let who = ("system:serviceaccount:a:b", &[][..]);
    let cases = [
        (
            json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key":"a.io/x","effect":"NoSchedule"}]}}),
            json!({"metadata": {"name": "n"}}),
            json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key":"a.io/x","effect":"NoSchedule"}]}}),
        ),
        (
            json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key":"a.io/x","effect":"NoSchedule"}]}}),
            json!({"metadata": {"name": "n"}, "spec": null}),
            json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key":"a.io/x","effect":"NoSchedule"}]}}),
        ),
        (
            json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key":"a.io/x","effect":"NoSchedule"}]}}),
            json!({"metadata": {"name": "n"}, "spec": {"taints": null}}),
            json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key":"a.io/x","effect":"NoSchedule"}]}}),
        ),
        (
            json!({"metadata": {"name": "n"}, "spec": {}}),
            json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}}),
            json!({"metadata": {"name": "n", "annotations": {"taintguard.io/cordoned-by": who.0}}, "spec": {"unschedulable": true}}),
        ),
        (
            json!({"spec": {}}),
            json!({"metadata": null, "spec": {"unschedulable": true}}),
            json!({"metadata": {"annotations": {"taintguard.io/cordoned-by": who.0}}, "spec": {"unschedulable": true}}),
        ),
        (
            json!({"spec": {}}),
            json!({"spec": {"unschedulable": true}}),
            json!({"spec": {"unschedulable": true}, "metadata": {"annotations": {"taintguard.io/cordoned-by": who.0}}}),
        ),
        (
            json!({"metadata": {"annotations": {"taintguard.io/cordoned-by": "alice"}}, "spec": {"unschedulable": true}}),
            json!({"metadata": {"annotations": null}}),
            json!({"metadata": {"annotations": {"taintguard.io/cordoned-by": "alice"}}, "spec": {"unschedulable": true}}),
        ),
    ];
    for (old, new, want) in cases {
        let verdict = run::<TaintPreservation>(
            &request("UPDATE", who, Some(&old), &new),
            "{}",
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        let text = verdict.mutated_object().expect("mutated");
        taintguard_testkit::assert_valid_object("Node", text);
        let got: Value = serde_json::from_str(text).unwrap();
        assert_eq!(got, want, "from {new}");
    }
}

#[test]
fn bad_input_is_rejected_with_the_field() {
    let good_old = node(&[DEDICATED], None, None, "a");
    let cases: Vec<(String, &str)> = vec![
        ("not json".to_owned(), "malformed admission request"),
        (r#"{"kind":{"kind":"Node"},"operation":"UPDATE","userInfo":{},"object":{"spec":{"taints":{}}},"oldObject":{}}"#.to_owned(), "object.spec.taints"),
        (r#"{"kind":{"kind":"Node"},"operation":"UPDATE","userInfo":{},"object":{}}"#.to_owned(), "without oldObject"),
        (request("UPDATE", ALICE, Some(&good_old), &json!("a string")), "invalid type: string \"a string\", expected an object (at `object`)"),
        (request("UPDATE", ALICE, Some(&json!({"spec": {"taints": [{"key": 1}]}})), &good_old), "oldObject.spec.taints"),
    ];
    for (req, want) in cases {
        let verdict =
            run::<TaintPreservation>(&req, "{}", Half::Mutating, &taintguard::NoCluster("test"));
        assert!(!verdict.accepted());
        assert_eq!(verdict.code(), Some(400));
        let message = verdict.message().unwrap();
        assert!(message.contains(want), "{want:?} not in {message}");
    }
}

#[test]
fn other_requests_pass() {
    let n = node(&[], None, None, "a");
    let mut pod = serde_json::from_str::<Value>(&request("CREATE", ALICE, None, &n)).unwrap();
    pod["kind"]["kind"] = json!("Pod");
    let mut status = serde_json::from_str::<Value>(&request(
        "UPDATE",
        KARPENTER,
        Some(&node(&[DEDICATED], None, None, "a")),
        &n,
    ))
    .unwrap();
    status["subResource"] = json!("status");
    let mut delete =
        serde_json::from_str::<Value>(&request("DELETE", KARPENTER, Some(&n), &n)).unwrap();
    delete.as_object_mut().unwrap().remove("object");
    for req in [pod, status, delete] {
        let verdict = run::<TaintPreservation>(
            &req.to_string(),
            "{}",
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        assert_eq!(verdict, Verdict::accept(), "{req}");
    }
}

/// Kubewarden's adapter takes `{}` for every default without reading it: the two agree.
#[test]
fn empty_settings_are_the_defaults() {
    let read: Settings = taintguard::settings::read("{}").unwrap();
    assert_eq!(read, Settings::default());
}

#[test]
fn settings_errors_name_the_field() {
    let cases = [
        (json!({"mode": "fix"}), "`mode`: unknown mode \"fix\""),
        (
            json!({"rbac": {"enabled": true, "apiGroup": ""}}),
            "`rbac.apiGroup`: the core API group (\"\") is refused",
        ),
        (
            json!({"rbac": {"untaintVerb": "Untaint"}}),
            "`rbac.untaintVerb`: \"Untaint\" is not an RBAC name",
        ),
        (
            json!({"rbac": {"resource": "nodes.taintguard.io"}}),
            "`rbac.resource`: \"nodes.taintguard.io\" is not an RBAC name",
        ),
        (json!({"rbac": {"enabled": "yes"}}), "`rbac.enabled`"),
        (json!({"rbac": {"group": "x"}}), "`rbac.group`: unknown field"),
        (json!({"modes": "deny"}), "`modes`: unknown field"),
        (
            json!({"protectedTaints": [{"key": "[a"}]}),
            "`protectedTaints[0].key`",
        ),
        (
            json!({"protectedTaints": [{"key": "a b"}]}),
            "`protectedTaints[0].key`: \"a b\" is not a taint key glob",
        ),
        (
            json!({"protectedTaints": [{"key": "a", "effects": ["NoSchedule", "Sometimes"]}]}),
            "`protectedTaints[0].effects[1]`: unknown effect \"Sometimes\"",
        ),
        (
            json!({"protectedTaints": [{"effects": []}]}),
            "`protectedTaints[0].key`: required field is missing",
        ),
        (
            json!({"protectedTaints": [{"key": "a", "permitted": {"users": [""]}}]}),
            "`protectedTaints[0].permitted.users[0]`: empty principal name",
        ),
        (
            json!({"permitted": {"serviceAccounts": ["karpenter"]}}),
            "`permitted.serviceAccounts[0]`: \"karpenter\" is not `namespace/name`",
        ),
        (
            json!({"permitted": {"groups": "system:masters"}}),
            "`permitted.groups`: expected an array, found a string",
        ),
        (
            json!({"oneShotTaints": [7]}),
            "`oneShotTaints[0]`: expected an object, found a number",
        ),
        (
            json!({"cordon": {"ownerAnnotation": "Bad Key"}}),
            "`cordon.ownerAnnotation`",
        ),
        (
            json!({"oneShotTaints": [{"key": "a", "onlyAtRegistration": "yes"}]}),
            "`oneShotTaints[0].onlyAtRegistration`: expected a boolean",
        ),
        (
            json!({"oneShotTaints": [{"key": "a", "registrationOnly": true}]}),
            "`oneShotTaints[0].registrationOnly`: unknown field",
        ),
        (
            json!({"oneShotRecordAnnotation": "no spaces allowed"}),
            "`oneShotRecordAnnotation`: \"no spaces allowed\" is not a valid annotation key",
        ),
        (
            json!({"oneShotRecordAnnotation": "taintguard.io/cordoned-by"}),
            "`oneShotRecordAnnotation`: \"taintguard.io/cordoned-by\" is also `cordon.ownerAnnotation`",
        ),
        (
            json!({"taintOwners": {"annotation": "taintguard.io/cordoned-by"}}),
            "`taintOwners.annotation`: \"taintguard.io/cordoned-by\" is also `cordon.ownerAnnotation`",
        ),
        (
            json!({"taintOwners": {"annotation": "Bad Key"}}),
            "`taintOwners.annotation`: \"Bad Key\" is not a valid annotation key",
        ),
        (
            json!({"taintOwners": {"enabled": "yes"}}),
            "`taintOwners.enabled`: expected a boolean",
        ),
        (
            json!({"controllerRecords": [{"annotation": "example.com/owned", "format": "csv", "owner": {"people": true}}]}),
            "`controllerRecords[0].format`: unknown format \"csv\"; expected \"taints\" or \"keys\"",
        ),
        (
            json!({"controllerRecords": [{"annotation": "example.com/owned", "owner": {"people": true}}]}),
            "`controllerRecords[0].format`: required field is missing",
        ),
        (
            json!({"controllerRecords": [{"annotation": "taintguard.io/taint-owners", "format": "taints", "owner": {"users": ["a"]}}]}),
            "`controllerRecords[0].annotation`: \"taintguard.io/taint-owners\" is the policy's own `taintOwners.annotation`",
        ),
        (
            json!({"controllerRecords": [
                {"annotation": "example.com/owned", "format": "taints", "owner": {"users": ["a"]}},
                {"annotation": "example.com/owned", "format": "keys", "owner": {"users": ["b"]}}]}),
            "`controllerRecords[1].annotation`: \"example.com/owned\" is listed twice",
        ),
        (
            json!({"oneShotTaints": [{"key": "*/agent-not-ready", "except": ["node.cilium.io/agent not ready"]}]}),
            "`oneShotTaints[0].except[0]`: \"node.cilium.io/agent not ready\" is not a taint key glob",
        ),
        (
            json!({"recordSeal": {"keys": [{"id": "k1", "secret": "c2hvcnQ="}]}}),
            "`recordSeal.keys[0].secret`: the secret is 5 bytes; a seal key needs at least 32",
        ),
        (
            json!({"recordSeal": {"keys": [{"id": "k1", "secret": "not base64!"}]}}),
            "`recordSeal.keys[0].secret`: the secret is not base64",
        ),
        (
            json!({"recordSeal": {"keys": [{"id": "k 1", "secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}]}}),
            "`recordSeal.keys[0].id`: \"k 1\" is not a key id",
        ),
        (
            json!({"recordSeal": {"keys": [
                {"id": "k1", "secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
                {"id": "k1", "secret": "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="}]}}),
            "`recordSeal.keys[1].id`: \"k1\" is listed twice",
        ),
        (
            json!({"recordSeal": {"annotation": "taintguard.io/taint-owners", "keys": [{"id": "k1", "secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}]}}),
            "`recordSeal.annotation`: \"taintguard.io/taint-owners\" is one of the records the seal covers",
        ),
        (
            json!({"recordSeal": {"keys": [{"id": "k1", "secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}], "unsealed": "trust"}}),
            "`recordSeal.unsealed`: unknown unsealed \"trust\"; expected \"count\" or \"refuse\"",
        ),
        (json!([1]), "expected an object"),
        (
            json!({"cordon": [true, "example.com/owner"]}),
            "`cordon`: expected an object, found an array",
        ),
    ];
    for (settings, want) in cases {
        let err = read_settings::<TaintPreservation>(&settings.to_string())
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{settings}: {want:?} not in {err}");
    }
    // Which of the two would the user mean?
    let twice = r#"{"mode": "deny", "mode": "restore"}"#;
    assert_eq!(
        read_settings::<TaintPreservation>(twice)
            .unwrap_err()
            .to_string(),
        "settings field `mode`: field given twice"
    );
    for good in [
        json!({}),
        json!(null),
        json!({"mode": "deny", "oneShotTaints": ["example.com/boot"], "permitted": {"people": false}}),
        json!({"oneShotTaints": [{"key": "example.com/boot", "effects": ["NoSchedule"], "onlyAtRegistration": true}],
               "oneShotRecordAnnotation": "example.com/startup-taints-removed"}),
        json!({"oneShotRecordAnnotation": "taintguard.io/cordoned-by", "cordon": {"enabled": false}}),
        json!({"taintOwners": {"enabled": false, "annotation": "taintguard.io/cordoned-by"}}),
    ] {
        read_settings::<TaintPreservation>(&good.to_string()).unwrap();
    }
}

#[test]
fn validating_half_reports_what_restore_would_repair() {
    let cases = [
        (
            request(
                "UPDATE",
                NODE_CONTROLLER,
                Some(&node(&[DEDICATED], None, None, "a")),
                &node(&[], None, None, "a"),
            ),
            false,
        ),
        (
            request(
                "UPDATE",
                GPU_OPERATOR,
                Some(&node(&[], Some(true), Some("alice"), "a")),
                &node(&[], Some(false), Some("alice"), "a"),
            ),
            false,
        ),
        // A new cordon is fine; only the mutating half can record its owner.
        (
            request(
                "UPDATE",
                GPU_OPERATOR,
                Some(&node(&[], None, None, "a")),
                &node(&[], Some(true), None, "a"),
            ),
            true,
        ),
        (
            request(
                "UPDATE",
                ADMIN,
                Some(&node(&[DEDICATED], None, None, "a")),
                &node(&[], None, None, "a"),
            ),
            true,
        ),
    ];
    for (req, accepted) in cases {
        let verdict = run::<TaintPreservation>(
            &req,
            "{}",
            taintguard::policy::Half::Validating,
            &taintguard::NoCluster("test"),
        );
        assert_eq!(verdict.accepted(), accepted, "{verdict:?}");
        assert_eq!(verdict.mutated_object(), None);
    }
}

/// The gatekeeper build records no cordon owner, so every cordon it sees is unrecorded. The
/// components that cordon and uncordon their own nodes, each in its real request's shape
/// (docs/controllers.md): refused with `{}` settings, through when `cordon.unrecordedPermitted`
/// names them; a recorded owner still binds them.
#[test]
fn gatekeeper_build_and_controllers_cordons() {
    const TO_BE_DELETED: &str =
        r#"{"key":"ToBeDeletedByClusterAutoscaler","value":"1767225600","effect":"NoSchedule"}"#;
    const CLUSTER_AUTOSCALER: (&str, &[&str]) =
        ("system:serviceaccount:kube-system:cluster-autoscaler", &[]);
    const SYSTEM_UPGRADE: (&str, &[&str]) =
        ("system:serviceaccount:system-upgrade:system-upgrade", &[]);
    const NODE_MAINTENANCE: (&str, &[&str]) = (
        "system:serviceaccount:node-maintenance-operator-system:node-maintenance-operator-controller-manager",
        &[],
    );
    let controllers = json!({"cordon": {"unrecordedPermitted": {"serviceAccounts": [
        "kube-system/cluster-autoscaler", "kube-system/kured", "system-upgrade/system-upgrade",
        "node-maintenance-operator-system/node-maintenance-operator-controller-manager"]}}});
    let anyone = json!({"cordon": {"unrecordedPermitted": {"people": true, "users": ["*"]}}});
    let cordoned = |taints: &[&str], owner: Option<&str>| node(taints, Some(true), owner, "a");
    let lifted = |taints: &[&str], label: &str| node(taints, None, None, label);
    // cluster-autoscaler's aborted scale-down: one PUT removes its taint and the cordon.
    let ca_abort = request(
        "UPDATE",
        CLUSTER_AUTOSCALER,
        Some(&cordoned(&[TO_BE_DELETED], None)),
        &lifted(&[], "a"),
    );
    // kured and node-maintenance-operator: kubectl's drain helper, a strategic merge patch
    // `{"spec":{"unschedulable":null}}`.
    let kured = request(
        "UPDATE",
        KURED,
        Some(&cordoned(&[], None)),
        &lifted(&[], "a"),
    );
    let nmo = request(
        "UPDATE",
        NODE_MAINTENANCE,
        Some(&cordoned(&[], None)),
        &lifted(&[], "a"),
    );
    // system-upgrade-controller: a PUT from its cache with the plan's label and the uncordon.
    let suc = request(
        "UPDATE",
        SYSTEM_UPGRADE,
        Some(&cordoned(&[], None)),
        &lifted(&[], "plan-hash"),
    );
    // (case, settings, request, accepted)
    let cases: Vec<(&str, Value, String, bool)> = vec![
        (
            "cluster-autoscaler's aborted scale-down, {} settings",
            json!({}),
            ca_abort.clone(),
            false,
        ),
        (
            "cluster-autoscaler's aborted scale-down, listed",
            controllers.clone(),
            ca_abort,
            true,
        ),
        ("kured, {} settings", json!({}), kured.clone(), false),
        ("kured, listed", controllers.clone(), kured.clone(), true),
        ("kured, anyone may", anyone.clone(), kured, true),
        (
            "system-upgrade-controller, {} settings",
            json!({}),
            suc.clone(),
            false,
        ),
        (
            "system-upgrade-controller, listed",
            controllers.clone(),
            suc,
            true,
        ),
        (
            "node-maintenance-operator, {} settings",
            json!({}),
            nmo.clone(),
            false,
        ),
        (
            "node-maintenance-operator, listed",
            controllers.clone(),
            nmo,
            true,
        ),
        (
            "a listed controller may not lift a recorded person's cordon (incident 2)",
            controllers.clone(),
            request(
                "UPDATE",
                CLUSTER_AUTOSCALER,
                Some(&cordoned(&[TO_BE_DELETED], Some(ALICE.0))),
                &node(&[], None, Some(ALICE.0), "a"),
            ),
            false,
        ),
        (
            "another controller, not listed, is refused",
            controllers,
            request(
                "UPDATE",
                GPU_OPERATOR,
                Some(&cordoned(&[], None)),
                &lifted(&[], "a"),
            ),
            false,
        ),
        (
            "a person lifts an unrecorded cordon: permitted by default",
            json!({}),
            request(
                "UPDATE",
                ALICE,
                Some(&cordoned(&[], None)),
                &lifted(&[], "a"),
            ),
            true,
        ),
    ];
    for (name, settings, req, accepted) in cases {
        for half in [Half::Validating, Half::Mutating] {
            let verdict = run::<TaintPreservation>(
                &req,
                &settings.to_string(),
                half,
                &taintguard::NoCluster("test"),
            );
            // The waPC build answers a refusal by keeping the node cordoned.
            let through = match half {
                Half::Validating => verdict.accepted(),
                Half::Mutating => verdict.warnings.is_empty(),
            };
            assert_eq!(through, accepted, "{name} ({half:?}): {verdict:?}");
        }
    }
}

/// Restores, strips and refusals leave audit annotations naming what was attempted, the
/// policy's answer and who tried, so the API server's audit log answers "who changed this node".
#[test]
fn audit_annotations_name_what_was_attempted_and_who_tried() {
    let alice_cordon = node(&[], Some(true), Some("alice@example.com"), "a");
    // (case, settings, request, the audit annotations wanted)
    type Case<'a> = (&'a str, Value, String, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case> = vec![
        (
            "incident 1 restored",
            json!({}),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED], None, None, "a")), &node(&[NOT_READY_NS], None, None, "a")),
            vec![
                ("protected-taints", "remove protected taint example.com/dedicated=gpu:NoSchedule"),
                ("answer", "restore: a patch that keeps the protected state (monitor mode drops it)"),
                ("requested-by", NODE_CONTROLLER.0),
            ],
        ),
        (
            "incident 2 restored",
            json!({}),
            request("UPDATE", GPU_OPERATOR, Some(&alice_cordon), &node(&[], Some(false), Some("alice@example.com"), "a")),
            vec![
                ("cordon", "uncordon node worker-1 (cordoned by \"alice@example.com\")"),
                ("answer", "restore: a patch that keeps the protected state (monitor mode drops it)"),
                ("requested-by", GPU_OPERATOR.0),
            ],
        ),
        (
            "incident 3 stripped",
            json!({}),
            request("UPDATE", KARPENTER, Some(&node(&[], None, None, "a")), &node(&[UNINIT], None, None, "a")),
            vec![
                ("one-shot-taints", "re-add one-shot startup taint node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule"),
                ("answer", "restore: a patch that keeps the protected state (monitor mode drops it)"),
                ("requested-by", KARPENTER.0),
            ],
        ),
        (
            "a record kept and a removal recorded",
            json!({}),
            request("UPDATE", EBS_CSI_NODE, Some(&node(&[EBS_NOT_READY], Some(true), Some("alice@example.com"), "a")), &node(&[], Some(true), None, "a")),
            vec![
                ("records", "rewrite the cordon owner record of node worker-1 (cordoned by \"alice@example.com\")"),
                ("answer", "restore: a patch that keeps the protected state (monitor mode drops it)"),
                ("removed-one-shot-taints", "ebs.csi.aws.com/agent-not-ready:NoExecute"),
                ("requested-by", EBS_CSI_NODE.0),
            ],
        ),
        (
            "a refusal",
            json!({"mode": "deny"}),
            request("UPDATE", NODE_CONTROLLER, Some(&node(&[DEDICATED], None, None, "a")), &node(&[], None, None, "a")),
            vec![
                ("protected-taints", "remove protected taint example.com/dedicated=gpu:NoSchedule"),
                ("answer", "deny: rejected with code 403 (monitor mode lets the request through)"),
                ("requested-by", NODE_CONTROLLER.0),
            ],
        ),
        (
            "nothing restored, nothing to say",
            json!({}),
            request("UPDATE", ADMIN, Some(&node(&[DEDICATED], None, None, "a")), &node(&[], None, None, "a")),
            vec![],
        ),
    ];
    for (name, settings, req, want) in cases {
        let verdict = run::<TaintPreservation>(
            &req,
            &settings.to_string(),
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        let got: Vec<(&str, &str)> = verdict
            .audit_annotations
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// RBAC as a way in (docs/context.md): asked only when the settings lists do not permit what the
/// request does, once per verb needed, about the node by name; a grant lets that part through,
/// a refusal or a failed question leaves the lists' judgement, which says why.
#[test]
fn rbac_permits_what_the_lists_do_not() {
    use taintguard::cluster::recorded::Recorded;
    use taintguard::cluster::ClusterError;

    let taints = |t: &[&str]| node(t, None, None, "a");
    let cordoned = node(&[DEDICATED], Some(true), Some(ALICE.0), "a");
    let uncordoned = node(&[], Some(false), Some(ALICE.0), "a");
    let sa = GPU_OPERATOR.0;
    let on = json!({"rbac": {"enabled": true}});
    let deny = json!({"mode": "deny", "rbac": {"enabled": true}});
    let failed = || Some(ClusterError::Failed("connection refused".into()));
    let ask_untaint = format!("can_i {sa} untaint taintguard.io nodes/worker-1");
    let ask_uncordon = format!("can_i {sa} uncordon taintguard.io nodes/worker-1");

    struct Case<'a> {
        label: &'a str,
        settings: Value,
        who: (&'a str, &'a [&'a str]),
        old: Value,
        new: Value,
        grants: Vec<(&'static str, &'static str)>,
        can_i_error: Option<ClusterError>,
        asked: Vec<String>,
        /// `None`: accepted unchanged; `Some(true)`: mutated; `Some(false)`: rejected.
        outcome: Option<bool>,
        says: &'a [&'a str],
    }
    let cases = [
        Case {
            label: "disabled: never asked",
            settings: json!({}),
            who: GPU_OPERATOR,
            old: taints(&[DEDICATED]),
            new: taints(&[]),
            grants: vec![(sa, "untaint")],
            can_i_error: None,
            asked: vec![],
            outcome: Some(true),
            says: &["may not remove protected taint", "this policy's patch puts it back"],
        },
        Case {
            label: "granted untaint: the removal stands",
            settings: on.clone(),
            who: GPU_OPERATOR,
            old: taints(&[DEDICATED]),
            new: taints(&[]),
            grants: vec![(sa, "untaint")],
            can_i_error: None,
            asked: vec![ask_untaint.clone()],
            outcome: None,
            says: &["may untaint nodes/worker-1 in API group \"taintguard.io\" by RBAC"],
        },
        Case {
            label: "not granted: restored as before",
            settings: on.clone(),
            who: GPU_OPERATOR,
            old: taints(&[DEDICATED]),
            new: taints(&[]),
            grants: vec![(sa, "uncordon")],
            can_i_error: None,
            asked: vec![ask_untaint.clone()],
            outcome: Some(true),
            says: &["may not remove protected taint", "this policy's patch puts it back"],
        },
        Case {
            label: "the question fails: restored, and the warning says why",
            settings: on.clone(),
            who: GPU_OPERATOR,
            old: taints(&[DEDICATED]),
            new: taints(&[]),
            grants: vec![(sa, "untaint")],
            can_i_error: failed(),
            asked: vec![ask_untaint.clone()],
            outcome: Some(true),
            says: &[
                "this policy's patch puts it back",
                "RBAC could not be asked",
                "connection refused",
            ],
        },
        Case {
            label: "listed principals are never asked",
            settings: on.clone(),
            who: ALICE,
            old: taints(&[DEDICATED]),
            new: taints(&[]),
            grants: vec![],
            can_i_error: None,
            asked: vec![],
            outcome: None,
            says: &[],
        },
        Case {
            // Accepted, with the owner record the lifted cordon leaves behind removed.
            label: "deny mode, granted uncordon: accepted",
            settings: deny.clone(),
            who: GPU_OPERATOR,
            old: cordoned.clone(),
            new: node(&[DEDICATED], Some(false), Some(ALICE.0), "a"),
            grants: vec![(sa, "uncordon")],
            can_i_error: None,
            asked: vec![ask_uncordon.clone()],
            outcome: Some(true),
            says: &["may uncordon nodes/worker-1"],
        },
        Case {
            label: "deny mode, not granted: the message names the grant",
            settings: deny.clone(),
            who: GPU_OPERATOR,
            old: cordoned.clone(),
            new: node(&[DEDICATED], Some(false), Some(ALICE.0), "a"),
            grants: vec![],
            can_i_error: None,
            asked: vec![ask_uncordon.clone()],
            outcome: Some(false),
            says: &[
                "or grant the requester by RBAC: uncordon nodes/worker-1 in API group \"taintguard.io\"",
            ],
        },
        Case {
            label: "both needed, only untaint granted: the cordon stays",
            settings: on.clone(),
            who: GPU_OPERATOR,
            old: cordoned.clone(),
            new: uncordoned.clone(),
            grants: vec![(sa, "untaint")],
            can_i_error: None,
            asked: vec![ask_untaint.clone(), ask_uncordon.clone()],
            outcome: Some(true),
            says: &["this policy's patch keeps the node cordoned", "may untaint"],
        },
        Case {
            label: "verbs, group and resource come from the settings",
            settings: json!({"rbac": {"enabled": true, "apiGroup": "ops.example.com",
                                       "resource": "nodetaints", "untaintVerb": "remove"}}),
            who: GPU_OPERATOR,
            old: taints(&[DEDICATED]),
            new: taints(&[]),
            grants: vec![(sa, "remove")],
            can_i_error: None,
            asked: vec![format!("can_i {sa} remove ops.example.com nodetaints/worker-1")],
            outcome: None,
            says: &["may remove nodetaints/worker-1 in API group \"ops.example.com\" by RBAC"],
        },
    ];
    for case in cases {
        let cluster = Recorded {
            grants: case.grants,
            can_i_error: case.can_i_error,
            ..Recorded::default()
        };
        let req = request("UPDATE", case.who, Some(&case.old), &case.new);
        let verdict =
            run::<TaintPreservation>(&req, &case.settings.to_string(), Half::Mutating, &cluster);
        let label = case.label;
        assert_eq!(*cluster.asked.borrow(), case.asked, "{label}");
        let outcome = match &verdict.decision {
            taintguard::Decision::Accept => None,
            taintguard::Decision::Mutate { .. } => Some(true),
            taintguard::Decision::Reject { .. } => Some(false),
        };
        assert_eq!(outcome, case.outcome, "{label}: {verdict:?}");
        let said = verdict.said();
        for fragment in case.says {
            assert!(
                said.contains(fragment),
                "{label}: {fragment:?} not in {said}"
            );
        }
        let by_rbac = verdict
            .audit_annotations
            .iter()
            .any(|(k, _)| k == "permitted-by-rbac");
        assert_eq!(by_rbac, said.contains("\" by RBAC"), "{label}: {verdict:?}");
    }
}

const KURED: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:kured",
    &[
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
    ],
);
const NFD_MASTER: (&str, &[&str]) = (
    "system:serviceaccount:node-feature-discovery:nfd-master",
    &["system:serviceaccounts"],
);
const READINESS_CONTROLLER: (&str, &[&str]) = (
    "system:serviceaccount:nrr-system:nrr-controller-manager",
    &["system:serviceaccounts"],
);
const FSX_CSI_NODE: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:fsx-csi-node-sa",
    &["system:serviceaccounts"],
);
const CILIUM_OPERATOR: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:cilium-operator",
    &["system:serviceaccounts"],
);
const KUBELET: (&str, &[&str]) = ("system:node:worker-1", &["system:nodes"]);
const BOB: (&str, &[&str]) = ("bob@example.com", &["system:authenticated"]);

const KURED_TAINT: &str = r#"{"key":"weave.works/kured-node-reboot","effect":"PreferNoSchedule"}"#;
const KURED_ENTRY: &str = "weave.works/kured-node-reboot:PreferNoSchedule";
const NFD_GPU: &str =
    r#"{"key":"feature.node.kubernetes.io/gpu","value":"a100","effect":"NoSchedule"}"#;
const NFD_GPU_H100: &str =
    r#"{"key":"feature.node.kubernetes.io/gpu","value":"h100","effect":"NoSchedule"}"#;
const NFD_ENTRY: &str = "feature.node.kubernetes.io/gpu:NoSchedule";

/// `node` with annotation `key` set to `value`.
fn annotated(mut node: Value, key: &str, value: &str) -> Value {
    node["metadata"]["annotations"][key] = json!(value);
    node
}

/// `node` with node-feature-discovery's record of its taints.
fn nfd_lists(node: Value, taints: &str) -> Value {
    annotated(node, "nfd.node.kubernetes.io/taints", taints)
}

/// `node` with Talos' record of the taint keys it owns.
fn talos_lists(node: Value, keys: &str) -> Value {
    annotated(node, "talos.dev/owned-taints", keys)
}

/// `node` with the record of kured's standing removal of its taint.
fn kured_removed(node: Value) -> Value {
    owners_record(node, &[], &[(KURED_ENTRY, KURED.0)])
}
const DEDICATED_ENTRY: &str = "example.com/dedicated:NoSchedule";
const FSX_NOT_READY: &str = r#"{"key":"fsx.csi.aws.com/agent-not-ready","effect":"NoExecute"}"#;
const READINESS: &str = r#"{"key":"readiness.k8s.io/network-ready","effect":"NoSchedule"}"#;
const CILIUM_NOT_READY: &str = r#"{"key":"node.cilium.io/agent-not-ready","effect":"NoSchedule"}"#;
const ISTIO_NOT_READY: &str = r#"{"key":"cni.istio.io/not-ready","effect":"NoSchedule"}"#;

/// `node` with the taint owner record holding `entries` (`key:Effect`, owner), as the policy
/// writes it: a JSON object, keys sorted.
fn owned(node: Value, entries: &[(&str, &str)]) -> Value {
    owners_record(node, entries, &[])
}

/// `node` with the taint owner record holding the live `entries` and the owners' standing
/// `removals` (`key:Effect`, owner), as the policy writes them.
fn owners_record(mut node: Value, entries: &[(&str, &str)], removals: &[(&str, &str)]) -> Value {
    let mut record: std::collections::BTreeMap<&str, Value> =
        entries.iter().map(|(e, o)| (*e, json!(o))).collect();
    record.extend(
        removals
            .iter()
            .map(|(e, o)| (*e, json!({"owner": o, "removed": true}))),
    );
    node["metadata"]["annotations"]["taintguard.io/taint-owners"] =
        json!(serde_json::to_string(&record).unwrap());
    node
}

/// Taint ownership (docs/controllers.md) and the readiness defaults: the adder of a protected
/// taint may remove it or change its value; everyone else is judged as before; the record
/// follows the taint and only the policy (or a permitted principal) edits it.
#[test]
fn ownership_and_readiness_cases() {
    let n = |taints: &[&str]| node(taints, None, None, "a");
    let restore = json!({});
    let deny = json!({"mode": "deny"});
    let kured_owns = [(KURED_ENTRY, KURED.0)];
    let nfd_owns = [(NFD_ENTRY, NFD_MASTER.0)];
    let cases: Vec<(&str, Value, String, Want)> = vec![
        (
            "kured adds its taint: the record names it",
            restore.clone(),
            request("UPDATE", KURED, Some(&n(&[DEDICATED])), &n(&[DEDICATED, KURED_TAINT])),
            Want::Mutated(owned(n(&[DEDICATED, KURED_TAINT]), &kured_owns)),
        ),
        (
            "kured adds its taint in deny mode: the record is written too",
            deny.clone(),
            request("UPDATE", KURED, Some(&n(&[])), &n(&[KURED_TAINT])),
            Want::Mutated(owned(n(&[KURED_TAINT]), &kured_owns)),
        ),
        (
            "kured removes its own taint: accepted, the record keeps the removal",
            restore.clone(),
            request("UPDATE", KURED, Some(&owned(n(&[DEDICATED, KURED_TAINT]), &kured_owns)), &owned(n(&[DEDICATED]), &kured_owns)),
            Want::Mutated(kured_removed(n(&[DEDICATED]))),
        ),
        (
            "kured removes its own taint in deny mode",
            deny.clone(),
            request("UPDATE", KURED, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[]), &kured_owns)),
            Want::Mutated(kured_removed(n(&[]))),
        ),
        (
            "node-controller's stale whole-list patch drops an owned taint: restored, record kept",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[NOT_READY_NS]), &kured_owns)),
            Want::Mutated(owned(n(&[NOT_READY_NS, KURED_TAINT]), &kured_owns)),
        ),
        (
            "the stale patch in deny mode",
            deny.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[]), &kured_owns)),
            Want::Denied(&["remove protected taint weave.works/kured-node-reboot:PreferNoSchedule"]),
        ),
        (
            "a stale whole-object write with old annotations drops an owned taint: both come back",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &n(&[])),
            Want::Mutated(owned(n(&[KURED_TAINT]), &kured_owns)),
        ),
        (
            "another service account removes kured's taint: restored",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[]), &kured_owns)),
            Want::Mutated(owned(n(&[KURED_TAINT]), &kured_owns)),
        ),
        (
            "NFD changes the value of its own taint in place: accepted, record kept",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&owned(n(&[NFD_GPU]), &nfd_owns)), &owned(n(&[NFD_GPU_H100]), &nfd_owns)),
            Want::Untouched,
        ),
        (
            "kured changes the value of NFD's taint: the old value is kept",
            restore.clone(),
            request("UPDATE", KURED, Some(&owned(n(&[NFD_GPU]), &nfd_owns)), &owned(n(&[NFD_GPU_H100]), &nfd_owns)),
            Want::Mutated(owned(n(&[NFD_GPU]), &nfd_owns)),
        ),
        (
            "NFD removes its taint with a strategic merge patch of the list: the removal is kept",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&owned(n(&[DEDICATED, NFD_GPU]), &nfd_owns)), &owned(n(&[DEDICATED]), &nfd_owns)),
            Want::Mutated(owners_record(n(&[DEDICATED]), &[], &nfd_owns)),
        ),
        (
            "a tampered record claiming a person's taint is undone, and the claim grants nothing",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&n(&[DEDICATED])), &owned(n(&[]), &[(DEDICATED_ENTRY, NODE_CONTROLLER.0)])),
            Want::Mutated(n(&[DEDICATED])),
        ),
        (
            "a tampered record in deny mode",
            deny.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, NODE_CONTROLLER.0)])),
            Want::Denied(&["rewrite the taint owner record of node worker-1"]),
        ),
        (
            "a permitted principal may edit the record",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, NFD_MASTER.0)])),
            Want::Untouched,
        ),
        (
            "a person's taint is theirs: kured may not remove it",
            json!({"permitted": {"people": false}}),
            request("UPDATE", KURED, Some(&owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, ALICE.0)])), &owned(n(&[]), &[(DEDICATED_ENTRY, ALICE.0)])),
            Want::Mutated(owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, ALICE.0)])),
        ),
        (
            "nor another person, when people are not permitted",
            json!({"permitted": {"people": false}}),
            request("UPDATE", BOB, Some(&owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, ALICE.0)])), &owned(n(&[]), &[(DEDICATED_ENTRY, ALICE.0)])),
            Want::Mutated(owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, ALICE.0)])),
        ),
        (
            "but its owner may",
            json!({"permitted": {"people": false}}),
            request("UPDATE", ALICE, Some(&owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, ALICE.0)])), &owned(n(&[]), &[(DEDICATED_ENTRY, ALICE.0)])),
            Want::Mutated(owners_record(n(&[]), &[], &[(DEDICATED_ENTRY, ALICE.0)])),
        ),
        (
            "a permitted principal removes kured's taint: kured keeps the right to add it back",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[]), &kured_owns)),
            Want::Mutated(kured_removed(n(&[]))),
        ),
        (
            "after kured's removal, the node controller's stale whole-list patch puts it back: stripped",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&kured_removed(n(&[DEDICATED]))), &kured_removed(n(&[DEDICATED, NOT_READY_NS, KURED_TAINT]))),
            Want::Mutated(kured_removed(n(&[DEDICATED, NOT_READY_NS]))),
        ),
        (
            "the stale re-add in deny mode",
            deny.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&kured_removed(n(&[]))), &kured_removed(n(&[KURED_TAINT]))),
            Want::Denied(&["re-add protected taint weave.works/kured-node-reboot:PreferNoSchedule, which its owner \"system:serviceaccount:kube-system:kured\" removed"]),
        ),
        (
            "a stale whole-object write with the live record of before: the taint is stripped, the removal kept",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&kured_removed(n(&[]))), &owned(n(&[KURED_TAINT]), &kured_owns)),
            Want::Mutated(kured_removed(n(&[]))),
        ),
        (
            "kured adds its taint again on its next reboot: the owner's own re-add stands",
            restore.clone(),
            request("UPDATE", KURED, Some(&kured_removed(n(&[DEDICATED]))), &kured_removed(n(&[DEDICATED, KURED_TAINT]))),
            Want::Mutated(owned(n(&[DEDICATED, KURED_TAINT]), &kured_owns)),
        ),
        (
            "a person re-adds it by hand, even where people are not permitted: deliberate, and theirs",
            json!({"permitted": {"people": false}}),
            request("UPDATE", BOB, Some(&kured_removed(n(&[]))), &kured_removed(n(&[KURED_TAINT]))),
            Want::Mutated(owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, BOB.0)])),
        ),
        (
            "a service account the rule permits re-adds it: it stands, in its name",
            json!({"protectedTaints": [{"key": "weave.works/*", "permitted": {"serviceAccounts": ["node-feature-discovery/nfd-master"]}}]}),
            request("UPDATE", NFD_MASTER, Some(&kured_removed(n(&[]))), &kured_removed(n(&[KURED_TAINT]))),
            Want::Mutated(owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, NFD_MASTER.0)])),
        ),
        (
            "a globally permitted principal re-adds it",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&kured_removed(n(&[]))), &kured_removed(n(&[KURED_TAINT]))),
            Want::Mutated(owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, ADMIN.0)])),
        ),
        (
            "the same key with another effect is another taint: its addition stands",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&kured_removed(n(&[]))), &kured_removed(n(&[r#"{"key":"weave.works/kured-node-reboot","effect":"NoSchedule"}"#]))),
            Want::Mutated(owners_record(n(&[r#"{"key":"weave.works/kured-node-reboot","effect":"NoSchedule"}"#]), &[("weave.works/kured-node-reboot:NoSchedule", NODE_CONTROLLER.0)], &kured_owns)),
        ),
        (
            "a removal slipped back in monitor mode: its owner may still remove it, and the removal stays",
            restore.clone(),
            request("UPDATE", KURED, Some(&kured_removed(n(&[KURED_TAINT]))), &kured_removed(n(&[]))),
            Want::Untouched,
        ),
        (
            "a re-add by another writer re-creates the record in its name",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&n(&[])), &n(&[KURED_TAINT])),
            Want::Mutated(owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, NFD_MASTER.0)])),
        ),
        (
            "a taint from before the policy has no owner: kured's removal is restored",
            restore.clone(),
            request("UPDATE", KURED, Some(&n(&[KURED_TAINT])), &n(&[])),
            Want::Mutated(n(&[KURED_TAINT])),
        ),
        (
            "a CREATE records its requester as the owner of the protected taints",
            restore.clone(),
            request("CREATE", KUBELET, None, &n(&[DEDICATED, NOT_READY_NS])),
            Want::Mutated(owned(n(&[DEDICATED, NOT_READY_NS]), &[(DEDICATED_ENTRY, KUBELET.0)])),
        ),
        (
            "a CREATE without a requester (the audit scanner) records nothing",
            restore.clone(),
            request("CREATE", ("", &[]), None, &n(&[DEDICATED])),
            Want::Untouched,
        ),
        (
            "the audit scanner's review of a stored Node keeps the record it carries",
            restore.clone(),
            request("CREATE", ("", &[]), None, &kured_removed(owned(n(&[DEDICATED, KURED_TAINT]), &[(DEDICATED_ENTRY, ALICE.0)]))),
            Want::Untouched,
        ),
        (
            "a CREATE by a requester that carries a record it may not write: the record goes",
            restore.clone(),
            request("CREATE", KUBELET, None, &owned(n(&[]), &[(DEDICATED_ENTRY, KUBELET.0)])),
            Want::Mutated(n(&[])),
        ),
        (
            "ownership disabled: nothing is recorded",
            json!({"taintOwners": {"enabled": false}}),
            request("UPDATE", KURED, Some(&n(&[])), &n(&[KURED_TAINT])),
            Want::Untouched,
        ),
        (
            "ownership disabled: a record grants nothing",
            json!({"taintOwners": {"enabled": false}}),
            request("UPDATE", KURED, Some(&owned(n(&[KURED_TAINT]), &kured_owns)), &owned(n(&[]), &kured_owns)),
            Want::Mutated(owned(n(&[KURED_TAINT]), &kured_owns)),
        ),
        (
            "a taint from before the install that NFD's record lists: nfd-master's removal stands, kept in its name",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[DEDICATED, NFD_GPU]), "feature.node.kubernetes.io/gpu=a100:NoSchedule")), &nfd_lists(n(&[DEDICATED]), "feature.node.kubernetes.io/gpu=a100:NoSchedule")),
            Want::Mutated(owners_record(nfd_lists(n(&[DEDICATED]), "feature.node.kubernetes.io/gpu=a100:NoSchedule"), &[], &nfd_owns)),
        ),
        (
            "the rule matches again: nfd-master's re-add after its own removal stands",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&owners_record(n(&[DEDICATED]), &[], &nfd_owns)), &owners_record(n(&[DEDICATED, NFD_GPU_H100]), &[], &nfd_owns)),
            Want::Mutated(owned(n(&[DEDICATED, NFD_GPU_H100]), &nfd_owns)),
        ),
        (
            "nfd-master removes a taint a person added that its record lists: put back, the person keeps it",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(owned(n(&[NFD_GPU]), &[(NFD_ENTRY, ALICE.0)]), "feature.node.kubernetes.io/gpu:NoSchedule")), &nfd_lists(owned(n(&[]), &[(NFD_ENTRY, ALICE.0)]), "feature.node.kubernetes.io/gpu:NoSchedule")),
            Want::Mutated(nfd_lists(owned(n(&[NFD_GPU]), &[(NFD_ENTRY, ALICE.0)]), "feature.node.kubernetes.io/gpu:NoSchedule")),
        ),
        (
            "then nfd-master's JSON patch of its record drops the taint from it",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[DEDICATED]), "feature.node.kubernetes.io/gpu=a100:NoSchedule")), &n(&[DEDICATED])),
            Want::Untouched,
        ),
        (
            "NFD's record in deny mode: nfd-master's removal stands",
            deny.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoSchedule")), &nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoSchedule")),
            Want::Mutated(owners_record(nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoSchedule"), &[], &nfd_owns)),
        ),
        (
            "NFD's record gives nothing to another writer: the node controller's stale drop is restored",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoSchedule")), &nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoSchedule")),
            Want::Mutated(nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoSchedule")),
        ),
        (
            "a record of another effect gives nothing",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoExecute")), &nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoExecute")),
            Want::Mutated(nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoExecute")),
        ),
        (
            "a forged controller record is undone, and grants nothing",
            restore.clone(),
            request("UPDATE", KURED, Some(&n(&[DEDICATED])), &nfd_lists(n(&[]), "example.com/dedicated:NoSchedule")),
            Want::Mutated(n(&[DEDICATED])),
        ),
        (
            "a forged controller record in deny mode",
            deny.clone(),
            request("UPDATE", KURED, Some(&n(&[DEDICATED])), &nfd_lists(n(&[DEDICATED]), "example.com/dedicated:NoSchedule")),
            Want::Denied(&["rewrite the controller's taint record nfd.node.kubernetes.io/taints of node worker-1"]),
        ),
        (
            "a stale whole-object write that carries an older controller record: the stored one is kept",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&nfd_lists(n(&[]), "")), &nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoSchedule")),
            Want::Mutated(nfd_lists(n(&[]), "")),
        ),
        (
            "a permitted principal may edit a controller's record",
            restore.clone(),
            request("UPDATE", ADMIN, Some(&n(&[])), &nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoSchedule")),
            Want::Untouched,
        ),
        (
            "Talos' record lists keys: every effect of the key belongs to its writer",
            json!({"permitted": {"people": false, "groups": []}}),
            request("UPDATE", ("admin", &["system:masters"]), Some(&talos_lists(n(&[NFD_GPU, DEDICATED]), r#"["example.com/dedicated","feature.node.kubernetes.io/gpu"]"#)), &talos_lists(n(&[]), r#"["example.com/dedicated","feature.node.kubernetes.io/gpu"]"#)),
            Want::Mutated(owners_record(talos_lists(n(&[]), r#"["example.com/dedicated","feature.node.kubernetes.io/gpu"]"#), &[], &[(DEDICATED_ENTRY, "admin"), (NFD_ENTRY, "admin")])),
        ),
        (
            "a record's writer is configurable",
            json!({"controllerRecords": [{"annotation": "example.com/owned-taints", "format": "keys", "owner": {"serviceAccounts": ["kube-system/kured"]}}]}),
            request("UPDATE", KURED, Some(&annotated(n(&[DEDICATED]), "example.com/owned-taints", r#"["example.com/dedicated"]"#)), &annotated(n(&[]), "example.com/owned-taints", r#"["example.com/dedicated"]"#)),
            Want::Mutated(owners_record(annotated(n(&[]), "example.com/owned-taints", r#"["example.com/dedicated"]"#), &[], &[(DEDICATED_ENTRY, KURED.0)])),
        ),
        (
            "with the records left out of the settings, NFD's record grants nothing",
            json!({"controllerRecords": []}),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoSchedule")), &nfd_lists(n(&[]), "feature.node.kubernetes.io/gpu:NoSchedule")),
            Want::Mutated(nfd_lists(n(&[NFD_GPU]), "feature.node.kubernetes.io/gpu:NoSchedule")),
        ),
        (
            "controllers' own taints are not recorded",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&n(&[])), &n(&[NOT_READY_NS, READINESS, FSX_NOT_READY])),
            Want::Untouched,
        ),
        (
            "the FSx node plugin removes agent-not-ready: accepted, the removal recorded",
            restore.clone(),
            request("UPDATE", FSX_CSI_NODE, Some(&n(&[FSX_NOT_READY, DEDICATED])), &n(&[DEDICATED])),
            Want::Mutated(recorded(n(&[DEDICATED]), "fsx.csi.aws.com/agent-not-ready:NoExecute")),
        ),
        (
            "a stale re-add of the FSx taint after its recorded removal is stripped",
            restore.clone(),
            request("UPDATE", KARPENTER, Some(&recorded(n(&[DEDICATED]), "fsx.csi.aws.com/agent-not-ready:NoExecute")), &recorded(n(&[FSX_NOT_READY, DEDICATED]), "fsx.csi.aws.com/agent-not-ready:NoExecute")),
            Want::Mutated(recorded(n(&[DEDICATED]), "fsx.csi.aws.com/agent-not-ready:NoExecute")),
        ),
        (
            "the Node Readiness Controller removes its taint",
            restore.clone(),
            request("UPDATE", READINESS_CONTROLLER, Some(&n(&[READINESS, DEDICATED])), &n(&[DEDICATED])),
            Want::Untouched,
        ),
        (
            "and, in continuous mode, adds it back",
            restore.clone(),
            request("UPDATE", READINESS_CONTROLLER, Some(&n(&[DEDICATED])), &n(&[READINESS, DEDICATED])),
            Want::Untouched,
        ),
        (
            "Cilium's agent-not-ready is not one-shot: its operator re-taints a node whose agent is not ready",
            restore.clone(),
            request("UPDATE", CILIUM_OPERATOR, Some(&recorded(n(&[]), "ebs.csi.aws.com/agent-not-ready:NoExecute")), &recorded(n(&[CILIUM_NOT_READY]), "ebs.csi.aws.com/agent-not-ready:NoExecute")),
            Want::Untouched,
        ),
        (
            "a CNI agent's -not-ready taint is not protected",
            restore.clone(),
            request("UPDATE", ("system:serviceaccount:istio-system:istiod", &[]), Some(&n(&[ISTIO_NOT_READY])), &n(&[])),
            Want::Untouched,
        ),
    ];
    run_cases(cases);
}

/// What the policy says in restore mode is true in Kubewarden's monitor mode too, where
/// policy-server drops the patch and passes warnings and audit annotations on.
#[test]
fn warnings_say_what_the_patch_does() {
    let req = request(
        "UPDATE",
        NODE_CONTROLLER,
        Some(&node(&[DEDICATED], None, None, "a")),
        &node(&[], None, None, "a"),
    );
    let verdict =
        run::<TaintPreservation>(&req, "{}", Half::Mutating, &taintguard::NoCluster("test"));
    assert_eq!(
        verdict.warnings,
        [format!(
            "taint-preservation: {:?} may not remove protected taint \
             example.com/dedicated=gpu:NoSchedule; this policy's patch puts it back unless the \
             policy runs in monitor mode",
            NODE_CONTROLLER.0
        )]
    );
    // One write that uncordons and rewrites the cordon owner record: both attempts are named.
    let req = request(
        "UPDATE",
        GPU_OPERATOR,
        Some(&node(&[], Some(true), Some("alice"), "a")),
        &node(&[], Some(false), Some(GPU_OPERATOR.0), "a"),
    );
    let verdict =
        run::<TaintPreservation>(&req, "{}", Half::Mutating, &taintguard::NoCluster("test"));
    let attempts: Vec<&str> = verdict
        .warnings
        .iter()
        .map(|w| w.split(" may not ").nth(1).unwrap_or(w))
        .collect();
    assert_eq!(
        attempts,
        [
            "uncordon node worker-1 (cordoned by \"alice\"); this policy's patch keeps the node \
             cordoned unless the policy runs in monitor mode",
            "rewrite the cordon owner record of node worker-1 (cordoned by \"alice\"); this \
             policy's patch keeps the record as the policy keeps it unless the policy runs in \
             monitor mode"
        ]
    );
}

/// A full owner record cannot name the adder of a new taint: the warning says who may still
/// remove or change it, which is also the adder where its own controller record lists the taint.
#[test]
fn a_full_record_says_who_may_still_change_the_taint() {
    // Standing removals (kept whatever the node carries) of some 120 bytes each, to just past
    // the record's 64 KiB.
    let filler: Vec<(String, &str)> = (0..600)
        .map(|i| {
            (
                format!("example.com/filler-{i:04}:NoSchedule"),
                NFD_MASTER.0,
            )
        })
        .collect();
    let entries: Vec<(&str, &str)> = filler.iter().map(|(e, o)| (e.as_str(), *o)).collect();
    let full = |taints: &[&str]| owners_record(node(taints, None, None, "a"), &[], &entries);
    // (what the request adds, NFD's record, what the warning says may remove or change it)
    let cases = [
        (NFD_GPU, None, "only permitted principals may"),
        (
            NFD_GPU,
            Some("feature.node.kubernetes.io/gpu=a100:NoSchedule"),
            "the writers of the controller record that lists it, and permitted principals, may",
        ),
    ];
    for (added, record, who) in cases {
        let with_record = |n: Value| record.map_or(n.clone(), |r| nfd_lists(n, r));
        let req = request(
            "UPDATE",
            NFD_MASTER,
            Some(&with_record(full(&[DEDICATED]))),
            &with_record(full(&[DEDICATED, added])),
        );
        let verdict =
            run::<TaintPreservation>(&req, "{}", Half::Mutating, &taintguard::NoCluster("test"));
        let warning = verdict.warnings.iter().find(|w| w.contains("is full"));
        assert!(
            warning.is_some_and(|w| w.contains(who)),
            "{record:?}: {:?}",
            verdict.warnings
        );
    }
}

/// NFD's record, its claims bounded to feature taints.
const NFD_BOUNDED_TO_FEATURES: &str = r#"{"annotation": "nfd.node.kubernetes.io/taints", "format": "taints",
    "owner": {"serviceAccounts": ["node-feature-discovery/nfd-master"]}, "keys": ["feature.node.kubernetes.io/*"]}"#;

const UNREACHABLE_NS: &str = r#"{"key":"node.kubernetes.io/unreachable","effect":"NoSchedule"}"#;

const NODE_PROBLEM_DETECTOR: (&str, &[&str]) = (
    "system:serviceaccount:kube-system:node-problem-detector",
    &["system:serviceaccounts"],
);

/// A write of `nodes/status`: the API server stores its metadata and keeps the stored spec.
fn status_request(who: (&str, &[&str]), old: &Value, new: &Value) -> String {
    let mut r: Value = serde_json::from_str(&request("UPDATE", who, Some(old), new)).unwrap();
    r["subResource"] = json!("status");
    r["resource"]["resource"] = json!("nodes");
    r.to_string()
}

/// `node` with a changed condition, as kubelet's and node-problem-detector's status writes make.
fn condition(mut node: Value, kind: &str, status: &str) -> Value {
    node["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": kind, "status": status}));
    node
}

/// The records' trust boundary (docs/records.md): a write of `nodes/status` is judged on the
/// records it changes, and only on them; one that changes none is left alone whatever it
/// carries. A controller's record grants the taints its writer added and those nobody is
/// recorded to own, never another principal's.
#[test]
fn status_writes_and_controller_records_grant_nothing_unjudged() {
    let n = |taints: &[&str]| node(taints, None, None, "a");
    let restore = json!({});
    let deny = json!({"mode": "deny"});
    let npd = NODE_PROBLEM_DETECTOR;
    let alice_owns_gpu = [(NFD_ENTRY, ALICE.0)];
    let nfd_bounded: Value = serde_json::from_str(&format!(
        r#"{{"controllerRecords": [{NFD_BOUNDED_TO_FEATURES}]}}"#
    ))
    .unwrap();
    let cases: Vec<(&str, Value, String, Want)> = vec![
        (
            "kubelet's status update: no record changes, left alone",
            restore.clone(),
            status_request(KUBELET, &n(&[DEDICATED]), &condition(n(&[DEDICATED]), "Ready", "False")),
            Want::Untouched,
        ),
        (
            "node-problem-detector's condition patch in deny mode: left alone",
            deny.clone(),
            status_request(npd, &owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, KURED.0)]), &condition(owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, KURED.0)]), "KernelDeadlock", "True")),
            Want::Untouched,
        ),
        (
            "a status write carrying a stale spec, records unchanged: left alone (the spec is not stored)",
            restore.clone(),
            status_request(NODE_CONTROLLER, &n(&[DEDICATED]), &n(&[])),
            Want::Untouched,
        ),
        (
            "a forged owner entry through nodes/status is undone",
            restore.clone(),
            status_request(npd, &n(&[DEDICATED]), &owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, npd.0)])),
            Want::Mutated(n(&[DEDICATED])),
        ),
        (
            "a forged owner entry beside a stale spec: only the record is put back",
            restore.clone(),
            status_request(npd, &n(&[DEDICATED]), &owned(n(&[]), &[(DEDICATED_ENTRY, npd.0)])),
            Want::Mutated(n(&[])),
        ),
        (
            "a forged removal entry through nodes/status is undone",
            restore.clone(),
            status_request(npd, &owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, KURED.0)]), &kured_removed(n(&[KURED_TAINT]))),
            Want::Mutated(owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, KURED.0)])),
        ),
        (
            "a forged cordon owner through nodes/status is undone",
            restore.clone(),
            status_request(npd, &node(&[], Some(true), Some(ALICE.0), "a"), &node(&[], Some(true), Some(npd.0), "a")),
            Want::Mutated(node(&[], Some(true), Some(ALICE.0), "a")),
        ),
        (
            "a forged one-shot removal record through nodes/status is undone",
            restore.clone(),
            status_request(npd, &n(&[]), &recorded(n(&[]), EBS_RECORD)),
            Want::Mutated(n(&[])),
        ),
        (
            "a forged controller record through nodes/status is undone",
            restore.clone(),
            status_request(npd, &n(&[DEDICATED]), &nfd_lists(n(&[DEDICATED]), DEDICATED_ENTRY)),
            Want::Mutated(n(&[DEDICATED])),
        ),
        (
            "a forged owner entry through nodes/status in deny mode is refused",
            deny.clone(),
            status_request(npd, &n(&[DEDICATED]), &owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, npd.0)])),
            Want::Denied(&["node-problem-detector", "may not rewrite the taint owner record of node worker-1"]),
        ),
        (
            "a permitted principal may edit a record through nodes/status",
            restore.clone(),
            status_request(ADMIN, &n(&[DEDICATED]), &owned(n(&[DEDICATED]), &[(DEDICATED_ENTRY, ALICE.0)])),
            Want::Untouched,
        ),
        (
            "a controller's own record written through nodes/status by its writer stands",
            restore.clone(),
            status_request(NFD_MASTER, &n(&[NFD_GPU]), &nfd_lists(n(&[NFD_GPU]), NFD_ENTRY)),
            Want::Untouched,
        ),
        (
            "the node lifecycle controller's swap is left alone: its taints are not judged",
            restore.clone(),
            request("UPDATE", NODE_CONTROLLER, Some(&n(&[DEDICATED, UNREACHABLE_NS])), &n(&[DEDICATED, NOT_READY_NS])),
            Want::Untouched,
        ),
        (
            "settings that protect its taints take the short cut away: the same swap is judged",
            json!({"unprotectedTaints": []}),
            request("UPDATE", NODE_CONTROLLER, Some(&n(&[DEDICATED, UNREACHABLE_NS])), &n(&[DEDICATED, NOT_READY_NS])),
            // Restored, and node-controller recorded as the adder of the now protected not-ready.
            Want::Mutated(owned(n(&[DEDICATED, NOT_READY_NS, UNREACHABLE_NS]), &[("node.kubernetes.io/not-ready:NoSchedule", NODE_CONTROLLER.0)])),
        ),
        (
            "nfd-master removes a person's taint its record lists: put back, the person stays its owner",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(owned(n(&[NFD_GPU, DEDICATED]), &alice_owns_gpu), NFD_ENTRY)), &nfd_lists(owned(n(&[DEDICATED]), &alice_owns_gpu), NFD_ENTRY)),
            Want::Mutated(nfd_lists(owned(n(&[DEDICATED, NFD_GPU]), &alice_owns_gpu), NFD_ENTRY)),
        ),
        (
            "nfd-master changes a person's taint its record lists, in deny mode: refused",
            deny.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(owned(n(&[NFD_GPU]), &alice_owns_gpu), NFD_ENTRY)), &nfd_lists(owned(n(&[NFD_GPU_H100]), &alice_owns_gpu), NFD_ENTRY)),
            Want::Denied(&["nfd-master", "change protected taint feature.node.kubernetes.io/gpu"]),
        ),
        (
            "nfd-master removes its own taint its record lists: stands, the removal kept in its name",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(owned(n(&[NFD_GPU]), &[(NFD_ENTRY, NFD_MASTER.0)]), NFD_ENTRY)), &nfd_lists(owned(n(&[]), &[(NFD_ENTRY, NFD_MASTER.0)]), NFD_ENTRY)),
            Want::Mutated(nfd_lists(owners_record(n(&[]), &[], &[(NFD_ENTRY, NFD_MASTER.0)]), NFD_ENTRY)),
        ),
        (
            "nfd-master removes a taint from before the install its record lists: stands, as before",
            restore.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[NFD_GPU]), NFD_ENTRY)), &nfd_lists(n(&[]), NFD_ENTRY)),
            Want::Mutated(nfd_lists(owners_record(n(&[]), &[], &[(NFD_ENTRY, NFD_MASTER.0)]), NFD_ENTRY)),
        ),
        (
            "a record bounded to feature keys: nfd-master's removal of a listed feature taint stands",
            nfd_bounded.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[NFD_GPU]), NFD_ENTRY)), &nfd_lists(n(&[]), NFD_ENTRY)),
            Want::Mutated(nfd_lists(owners_record(n(&[]), &[], &[(NFD_ENTRY, NFD_MASTER.0)]), NFD_ENTRY)),
        ),
        (
            "a record bounded to feature keys: a listed taint outside them is put back",
            nfd_bounded.clone(),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[DEDICATED]), DEDICATED_ENTRY)), &nfd_lists(n(&[]), DEDICATED_ENTRY)),
            Want::Mutated(nfd_lists(n(&[DEDICATED]), DEDICATED_ENTRY)),
        ),
    ];
    run_cases(cases);
}

/// The warnings say which record was refused, and whose taint a controller's record listed.
#[test]
fn refused_records_are_named() {
    let n = |taints: &[&str]| node(taints, None, None, "a");
    let alice_owns_gpu = [(NFD_ENTRY, ALICE.0)];
    let seal = seal_settings(&format!("[{SEAL_K1}]"), "refuse", "restore").to_string();
    let unsealed_forgery = owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, NODE_PROBLEM_DETECTOR.0)]);
    // (name, settings, request, a warning holds)
    let cases: &[(&str, &str, String, &str)] = &[
        (
            "a record the seal does not vouch for",
            &seal,
            request("UPDATE", NODE_PROBLEM_DETECTOR, Some(&unsealed_forgery), &with_taints(unsealed_forgery.clone(), &[])),
            "the record taintguard.io/taint-owners on node worker-1 does not count: the node carries no \
             seal (taintguard.io/records-seal) and recordSeal.unsealed is \"refuse\"; it counts as no \
             record, and the patch removes it",
        ),
        (
            "a status write's forged record",
            "{}",
            status_request(NODE_PROBLEM_DETECTOR, &n(&[DEDICATED]), &nfd_lists(n(&[DEDICATED]), DEDICATED_ENTRY)),
            "may not rewrite the controller's taint record nfd.node.kubernetes.io/taints of node worker-1",
        ),
        (
            "a controller record listing a person's taint",
            "{}",
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(owned(n(&[NFD_GPU]), &alice_owns_gpu), NFD_ENTRY)), &nfd_lists(owned(n(&[]), &alice_owns_gpu), NFD_ENTRY)),
            "the controller record nfd.node.kubernetes.io/taints lists feature.node.kubernetes.io/gpu=a100:NoSchedule, but the taint owner record names \"alice@example.com\" its owner",
        ),
        (
            "a controller record listing a taint outside its keys",
            &format!(r#"{{"controllerRecords": [{NFD_BOUNDED_TO_FEATURES}]}}"#),
            request("UPDATE", NFD_MASTER, Some(&nfd_lists(n(&[DEDICATED]), DEDICATED_ENTRY)), &nfd_lists(n(&[]), DEDICATED_ENTRY)),
            "the controller record nfd.node.kubernetes.io/taints lists example.com/dedicated=gpu:NoSchedule, but its controllerRecords entry claims only keys feature.node.kubernetes.io/*: the record grants",
        ),
        (
            "a username with glob characters is suggested escaped, matching only itself",
            r#"{"permitted": {"people": false}}"#,
            request("UPDATE", ("ci[bot]*", &[]), Some(&n(&[DEDICATED])), &nfd_lists(n(&[DEDICATED]), DEDICATED_ENTRY)),
            r#"add "ci\\[bot]\\*" to owner.users"#,
        ),
    ];
    for (name, settings, req, want) in cases {
        let verdict = run::<TaintPreservation>(
            req,
            settings,
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        assert!(
            verdict.warnings.iter().any(|w| w.contains(want)),
            "{name}: {want:?} not in {:?}",
            verdict.warnings
        );
    }
}

const SEAL_K1: &str = r#"{"id": "k1", "secret": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}"#;
const SEAL_K2: &str = r#"{"id": "k2", "secret": "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="}"#;

/// Settings that seal the records with `keys` (a JSON list), a Node without a seal counting as
/// `unsealed` says, in `mode`.
fn seal_settings(keys: &str, unsealed: &str, mode: &str) -> Value {
    let keys: Value = serde_json::from_str(keys).unwrap();
    json!({"mode": mode, "recordSeal": {"keys": keys, "unsealed": unsealed}})
}

/// `node` with the seal `settings` write over the records it carries, for its name.
fn sealed(mut node: Value, settings: &Value) -> Value {
    let settings: crate::Settings = taintguard::settings::read(&settings.to_string()).unwrap();
    let seal = crate::stored::seal(&node.to_string(), &settings).unwrap();
    node["metadata"]["annotations"][settings.record_seal.annotation.as_str()] = json!(seal);
    node
}

/// `node` named `name`.
fn renamed(mut node: Value, name: &str) -> Value {
    node["metadata"]["name"] = json!(name);
    node
}

/// The seal (docs/records.md, "Sealed records"): a record written where the policy did not
/// judge it (a status write while the guard was skipped, any write while the policy server was
/// down) counts as the sealed copy, or as none, and the next judged write puts back what counts;
/// what the policy accepts it seals.
#[test]
fn sealed_records_count_only_as_the_policy_sealed_them() {
    let n = |taints: &[&str]| node(taints, None, None, "a");
    let k1 = &format!("[{SEAL_K1}]");
    let refuse = seal_settings(k1, "refuse", "restore");
    let count = seal_settings(k1, "count", "restore");
    let deny = seal_settings(k1, "refuse", "deny");
    let rotated = seal_settings(&format!("[{SEAL_K2}, {SEAL_K1}]"), "refuse", "restore");
    let only_k2 = seal_settings(&format!("[{SEAL_K2}]"), "refuse", "restore");
    let npd = NODE_PROBLEM_DETECTOR;
    let kured_owns = |taints: &[&str]| owned(n(taints), &[(KURED_ENTRY, KURED.0)]);
    // kured's sealed ownership, then node-problem-detector's entry forged over it, seal kept.
    let kured_sealed = sealed(kured_owns(&[KURED_TAINT]), &refuse);
    let forged_over = |node: Value| {
        let mut forged = owned(node, &[(KURED_ENTRY, npd.0)]);
        forged["metadata"]["annotations"]["taintguard.io/records-seal"] =
            kured_sealed["metadata"]["annotations"]["taintguard.io/records-seal"].clone();
        forged
    };
    let cases: Vec<(&str, Value, String, Want)> = vec![
        (
            "a forged entry over a sealed record: the forger's removal is put back, and so is the sealed owner",
            refuse.clone(),
            request("UPDATE", npd, Some(&forged_over(n(&[KURED_TAINT]))), &forged_over(n(&[]))),
            Want::Mutated(kured_sealed.clone()),
        ),
        (
            "the same in deny mode: refused",
            deny.clone(),
            request("UPDATE", npd, Some(&forged_over(n(&[KURED_TAINT]))), &forged_over(n(&[]))),
            Want::Denied(&["node-problem-detector", "may not remove protected taint weave.works/kured-node-reboot"]),
        ),
        (
            "a write that changes nothing judged is left alone, forged record and all (the short cut)",
            refuse.clone(),
            request("UPDATE", KUBELET, Some(&forged_over(n(&[KURED_TAINT]))), &forged_over(node(&[KURED_TAINT], None, None, "b"))),
            Want::Untouched,
        ),
        (
            "an owner entry forged on a node without a seal counts as none (unsealed: refuse): put back, removed",
            refuse.clone(),
            request("UPDATE", npd, Some(&owned(n(&[KURED_TAINT]), &[(KURED_ENTRY, npd.0)])), &owned(n(&[]), &[(KURED_ENTRY, npd.0)])),
            Want::Mutated(n(&[KURED_TAINT])),
        ),
        (
            "a seal under a key the settings no longer hold: no record counts, the owner's removal is put back",
            only_k2.clone(),
            request("UPDATE", KURED, Some(&kured_sealed), &with_taints(kured_sealed.clone(), &[])),
            Want::Mutated(sealed(n(&[KURED_TAINT]), &only_k2)),
        ),
        (
            "a rotated key: what the old key sealed counts, and the new key seals the owner's removal",
            rotated.clone(),
            request("UPDATE", KURED, Some(&kured_sealed), &with_taints(kured_sealed.clone(), &[])),
            Want::Mutated(sealed(kured_removed(n(&[])), &rotated)),
        ),
        (
            "a permitted principal's record edit stands, sealed",
            refuse.clone(),
            request("UPDATE", ADMIN, Some(&n(&[KURED_TAINT])), &kured_owns(&[KURED_TAINT])),
            Want::Mutated(kured_sealed.clone()),
        ),
        (
            "an entry forged through nodes/status is put back, as without a seal",
            refuse.clone(),
            status_request(npd, &kured_sealed, &forged_over(n(&[KURED_TAINT]))),
            Want::Mutated(kured_sealed.clone()),
        ),
        (
            "unsealed: count: records from before the seal count, and are sealed on the next judged write",
            count.clone(),
            request("UPDATE", KURED, Some(&kured_owns(&[KURED_TAINT])), &kured_owns(&[])),
            Want::Mutated(sealed(kured_removed(n(&[])), &count)),
        ),
        (
            "a record the settings named after the seal counts as unsealed (count): it stands, and is sealed",
            with_entry(&count),
            request("UPDATE", KURED, Some(&entry_lists(kured_sealed.clone())), &entry_lists(with_taints(kured_sealed.clone(), &[]))),
            Want::Mutated(sealed(entry_lists(kured_removed(n(&[]))), &with_entry(&count))),
        ),
        (
            "the same under refuse: it counts for nothing and is removed",
            with_entry(&refuse),
            request("UPDATE", KURED, Some(&entry_lists(kured_sealed.clone())), &entry_lists(with_taints(kured_sealed.clone(), &[]))),
            Want::Mutated(sealed(kured_removed(n(&[])), &with_entry(&refuse))),
        ),
        (
            "a seal copied from another node does not verify: the owner's removal is put back",
            refuse.clone(),
            request("UPDATE", KURED, Some(&renamed(kured_sealed.clone(), "worker-2")), &renamed(with_taints(kured_sealed.clone(), &[]), "worker-2")),
            Want::Mutated(sealed(renamed(n(&[KURED_TAINT]), "worker-2"), &refuse)),
        ),
    ];
    run_cases(cases);
    // What-if reads the records as they count: the sealed owner, not the forged one.
    let settings: crate::Settings = taintguard::settings::read(&refuse.to_string()).unwrap();
    let owners =
        crate::stored::taint_owners(&forged_over(n(&[KURED_TAINT])).to_string(), &settings);
    let owner = crate::stored::Owner::Recorded(KURED.0.to_owned());
    assert_eq!(owners.unwrap()[0].owner, owner);
}

/// `settings` with a controller record the seal of the default settings does not cover.
fn with_entry(settings: &Value) -> Value {
    let mut settings = settings.clone();
    let entry = json!({"annotation": "example.com/owned-taints", "format": "keys", "owner": {"users": ["admin"]}});
    settings["controllerRecords"] = json!([entry]);
    settings
}

/// `node` with the record of [`with_entry`]'s controller.
fn entry_lists(node: Value) -> Value {
    annotated(node, "example.com/owned-taints", r#"["example.com/pool"]"#)
}

/// `node` with `taints` in place of its own.
fn with_taints(mut node: Value, taints: &[&str]) -> Value {
    let taints: Vec<Value> = taints
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    node["spec"]["taints"] = json!(taints);
    node
}
