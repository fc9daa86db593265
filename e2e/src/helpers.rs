//! What every scenario builds and checks: objects built with the Kubernetes API's own types,
//! what to read from stored objects, and checks that say what was stored against what was
//! expected. Scenarios import these, never each other.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use taintguard_testkit::k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use taintguard_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::env::Env;
use crate::kubectl::{Actor, Out};
use crate::labels::VARIANT_LABEL;

// Well-formed objects are built with the Kubernetes API's own types, and compared as JSON.

pub(crate) fn to_json<T: serde::Serialize>(object: T) -> Value {
    serde_json::to_value(object).expect("Kubernetes objects serialise")
}

pub(crate) fn taint(key: &str, value: &str, effect: &str) -> Value {
    to_json(Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.into()),
        effect: effect.into(),
        time_added: None,
    })
}

pub(crate) fn dedicated() -> Value {
    taint("example.com/dedicated", "gpu", "NoSchedule")
}
pub(crate) fn not_ready(effect: &str) -> Value {
    taint("node.kubernetes.io/not-ready", "", effect)
}
pub(crate) fn uninitialized() -> Value {
    taint(
        "node.cloudprovider.kubernetes.io/uninitialized",
        "true",
        "NoSchedule",
    )
}
pub(crate) fn unregistered() -> Value {
    taint("karpenter.sh/unregistered", "", "NoExecute")
}
pub(crate) fn ebs_not_ready() -> Value {
    taint("ebs.csi.aws.com/agent-not-ready", "", "NoExecute")
}

pub(crate) fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

pub(crate) fn node(name: &str, variant: &str, taints: &[Value]) -> Value {
    let taints = taints
        .iter()
        .map(|t| serde_json::from_value::<Taint>(t.clone()).expect("a taint"))
        .collect();
    to_json(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labels(&[(VARIANT_LABEL, variant), ("kubernetes.io/hostname", name)]),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: Some(taints),
            ..NodeSpec::default()
        }),
        ..Node::default()
    })
}

/// A CNI agent's DaemonSet in kube-system, selected by the `nodes` variant: the workload the
/// node-taints rule gives tolerations to, which other scenarios relabel for their own variants.
pub(crate) fn cni_daemonset(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
           "metadata": {"name": name, "namespace": "kube-system", "labels": {VARIANT_LABEL: "nodes"}},
           "spec": {"selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "agent", "image": "registry.example/cni:1.0"}]}}}})
}

/// `key=value:Effect` of each stored taint, in order.
pub(crate) fn taints(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .map(|list| list.iter().map(describe_taint).collect())
        .unwrap_or_default()
}

pub(crate) fn describe_taint(t: &Value) -> String {
    let value = t["value"].as_str().unwrap_or("");
    let key = t["key"].as_str().unwrap_or("");
    let effect = t["effect"].as_str().unwrap_or("");
    if value.is_empty() {
        format!("{key}:{effect}")
    } else {
        format!("{key}={value}:{effect}")
    }
}

pub(crate) fn described(list: &[Value]) -> Vec<String> {
    list.iter().map(describe_taint).collect()
}

pub(crate) fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["annotations"][key].as_str()
}

pub(crate) fn cordoned(node: &Value) -> bool {
    node["spec"]["unschedulable"].as_bool() == Some(true)
}

/// The keys of an object's tolerations, `*` for an empty key.
pub(crate) fn toleration_keys(pod_spec: &Value) -> Vec<String> {
    pod_spec["tolerations"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|t| {
                    t["key"]
                        .as_str()
                        .filter(|k| !k.is_empty())
                        .unwrap_or("*")
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `got` as a set equals `want` as a set, or what is stored versus expected.
pub(crate) fn same_set(what: &str, got: &[String], want: &[String]) -> Result<(), String> {
    let mut g = got.to_vec();
    let mut w = want.to_vec();
    g.sort();
    w.sort();
    if g == w {
        Ok(())
    } else {
        Err(format!("{what}: stored {got:?}, expected {want:?}"))
    }
}

/// The node's stored taints are `want`, in any order.
pub(crate) fn stored_taints_are(what: &str, node: &Value, want: &[Value]) -> Result<(), String> {
    same_set(what, &taints(node), &described(want))
}

pub(crate) fn check(holds: bool, explain: impl FnOnce() -> String) -> Result<(), String> {
    if holds {
        Ok(())
    } else {
        Err(explain())
    }
}

pub(crate) fn told(out: &Out, text: &str, what: &str) -> Result<(), String> {
    check(
        out.stderr.contains(text) || out.stdout.contains(text),
        || {
            format!(
                "{what}: the client was not told {text:?}; it got {}",
                out.describe()
            )
        },
    )
}

pub(crate) fn refused(out: &Out, text: &str, what: &str) -> Result<(), String> {
    check(!out.ok, || {
        format!("{what}: accepted, expected a refusal; {}", out.describe())
    })?;
    told(out, text, what)
}

pub(crate) fn patch(taints: &[Value]) -> String {
    json!({"spec": {"taints": taints}}).to_string()
}

/// A Node UPDATE as an actor sends it.
pub(crate) struct Update<'a> {
    /// Who writes.
    pub who: Actor,
    /// The stored Node.
    pub old: &'a Value,
    /// The Node written over it.
    pub new: &'a Value,
}

/// policy-server's answer (the AdmissionResponse) to the Node UPDATE review the API server
/// should send to policy `id` when `who` writes `new` over the stored `old`. This kube-apiserver
/// hands validating webhooks `oldObject == object` on UPDATEs (docs/e2e.md), so the validating
/// deployments are shown UPDATEs this way.
pub(crate) fn update_answer(env: &Env, id: &str, update: Update) -> Result<Value, String> {
    let Update { who, old, new } = update;
    let gvk = json!({"group": "", "version": "v1", "kind": "Node"});
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "e2e-update", "kind": gvk, "requestKind": gvk,
        "resource": {"group": "", "version": "v1", "resource": "nodes"},
        "name": old["metadata"]["name"], "operation": "UPDATE",
        "userInfo": {"username": who.user, "groups": who.groups},
        "object": new, "oldObject": old, "dryRun": false,
    }});
    let answer = env
        .cluster
        .post_to_policy_server(&format!("/validate/{id}"), &review.to_string())?;
    let answer: Value = serde_json::from_str(&answer).map_err(|e| format!("{e}: {answer}"))?;
    Ok(answer["response"].clone())
}
