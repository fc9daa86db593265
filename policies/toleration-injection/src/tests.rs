use serde_json::{json, Value};

use super::*;
use crate::settings::AliasKey;
use crate::tolerated::{Tolerated, FEW};
use taintguard::policy::{read_settings, run, Half};
use taintguard::toleration::Operator;

const CP: &str = "node-role.kubernetes.io/control-plane";
const MASTER: &str = "node-role.kubernetes.io/master";

fn gvk(kind: &str) -> Value {
    let group = match kind {
        "Pod" | "ReplicationController" => "",
        "Job" | "CronJob" => "batch",
        _ => "apps",
    };
    json!({"group": group, "version": "v1", "kind": kind})
}

/// An object of `kind` whose pod spec has `tolerations` (omitted when `None`).
fn object(kind: &str, tolerations: Option<Value>) -> Value {
    let mut pod_spec =
        json!({"containers": [{"name": "c", "image": "busybox:1.28.4"}], "futureField": 1});
    if let Some(t) = tolerations {
        pod_spec["tolerations"] = t;
    }
    let spec = match kind {
        "Pod" => pod_spec,
        "CronJob" => {
            json!({"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": pod_spec}}}})
        }
        // A ReplicationController's selector is a plain label map, not a LabelSelector.
        "ReplicationController" => {
            json!({"selector": {"app": "x"}, "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec}})
        }
        _ => {
            json!({"selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec}})
        }
    };
    let api_version = match gvk(kind)["group"].as_str().unwrap() {
        "" => "v1".to_owned(),
        group => format!("{group}/v1"),
    };
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "kube-system", "labels": {"app": "x"}}, "spec": spec})
}

fn pod_spec_pointer(kind: &str) -> &'static str {
    match kind {
        "Pod" => "/spec",
        "CronJob" => "/spec/jobTemplate/spec/template/spec",
        _ => "/spec/template/spec",
    }
}

fn request(op: &str, user: &str, namespace: &str, object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap();
    json!({"uid": "u", "kind": gvk(kind), "resource": {"group": "", "version": "v1", "resource": "x"},
           "namespace": namespace, "operation": op,
           "userInfo": {"username": user, "groups": ["system:authenticated"]}, "object": object})
    .to_string()
}

/// A Pod UPDATE from `old` to `new`.
fn pod_update(user: &str, namespace: &str, old: &Value, new: &Value) -> String {
    let mut r: Value = serde_json::from_str(&request("UPDATE", user, namespace, new)).unwrap();
    r["oldObject"] = old.clone();
    r.to_string()
}

fn added(verdict: &Verdict, kind: &str, before: usize) -> Vec<Value> {
    let Some(text) = verdict.mutated_object() else {
        return Vec::new();
    };
    taintguard_testkit::assert_valid_object(kind, text);
    let v: Value = serde_json::from_str(text).unwrap();
    let list = v
        .pointer(&format!("{}/tolerations", pod_spec_pointer(kind)))
        .unwrap()
        .as_array()
        .unwrap();
    list[before..].to_vec()
}

fn hostpath_settings() -> Value {
    json!({"rules": [{
        "name": "hostpath-provisioner-helpers",
        "match": {"kinds": ["Pod"], "namespaces": ["kube-system"],
                  "principals": {"serviceAccounts": ["kube-system/microk8s-hostpath"]},
                  "labelSelector": {"matchExpressions": [{"key": "microk8s.hostpath.io/managed-by", "operator": "Exists"}]},
                  "names": ["hostpath-provisioner-*"]},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    }]})
}

fn helper_pod() -> Value {
    let mut pod = object("Pod", None);
    pod["metadata"] = json!({"generateName": "hostpath-provisioner-node1-", "namespace": "kube-system",
                             "labels": {"microk8s.hostpath.io/managed-by": "node1"}});
    pod
}

#[test]
fn every_kind_gets_alias_twins_in_its_pod_spec() {
    // The kit's list of admitted kinds, not the policy's own, so a kind the policy dropped fails.
    for kind in taintguard_testkit::KINDS.iter().filter(|k| **k != "Node") {
        let kind = *kind;
        let obj = object(kind, Some(json!([{"key": CP, "effect": "NoSchedule"}])));
        let verdict = run::<TolerationInjection>(
            &request("CREATE", "alice", "kube-system", &obj),
            "{}",
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        assert!(verdict.accepted(), "{kind}");
        assert_eq!(
            added(&verdict, kind, 1),
            vec![json!({"key": MASTER, "operator": "Equal", "effect": "NoSchedule"})],
            "{kind}"
        );
        // Nothing but the appended toleration changed.
        let mut got: Value = serde_json::from_str(verdict.mutated_object().unwrap()).unwrap();
        got.pointer_mut(&format!("{}/tolerations", pod_spec_pointer(kind)))
            .unwrap()
            .as_array_mut()
            .unwrap()
            .pop();
        assert_eq!(got, obj, "{kind}");
        assert_eq!(verdict.warnings.len(), 1, "{kind}");
        // Named once: the policy names it as it writes it, and the core leaves it so.
        assert_eq!(
            verdict.warnings[0],
            format!(
                "toleration-injection: missing toleration {MASTER}:NoSchedule (alias of {CP}); \
                 this policy's patch adds it unless the policy runs in monitor mode"
            ),
            "{kind}"
        );
        assert_eq!(verdict.audit_annotations[0].0, "missing-tolerations");
    }
}

#[test]
fn injection_cases() {
    let none: &[Value] = &[];
    let cases: Vec<(&str, Value, String, &str, Vec<Value>)> = vec![
        (
            "CronJob tolerating only master gets the control-plane twin",
            json!({}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object(
                    "CronJob",
                    Some(json!([{"key": MASTER, "operator": "Exists", "effect": "NoSchedule"}])),
                ),
            ),
            "CronJob",
            vec![json!({"key": CP, "operator": "Exists", "effect": "NoSchedule"})],
        ),
        (
            "a pod tolerating everything is untouched",
            json!({}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object("Pod", Some(json!([{"operator": "Exists"}]))),
            ),
            "Pod",
            none.to_vec(),
        ),
        (
            "a pod with unrelated tolerations is untouched",
            json!({}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object(
                    "Pod",
                    Some(
                        json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]),
                    ),
                ),
            ),
            "Pod",
            none.to_vec(),
        ),
        (
            "both keys already tolerated: untouched",
            json!({}),
            request(
                "UPDATE",
                "alice",
                "ops",
                &object(
                    "DaemonSet",
                    Some(
                        json!([{"key": CP, "operator": "Exists"}, {"key": MASTER, "operator": "Exists"}]),
                    ),
                ),
            ),
            "DaemonSet",
            none.to_vec(),
        ),
        (
            "a twin covered by a broader toleration is not added",
            json!({}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object(
                    "Deployment",
                    Some(
                        json!([{"key": CP, "operator": "Exists"}, {"key": MASTER, "operator": "Exists"}, {"key": CP, "effect": "NoSchedule"}]),
                    ),
                ),
            ),
            "Deployment",
            none.to_vec(),
        ),
        (
            "aliases can be switched off",
            json!({"aliases": {"enabled": false}}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object(
                    "DaemonSet",
                    Some(json!([{"key": CP, "effect": "NoSchedule"}])),
                ),
            ),
            "DaemonSet",
            none.to_vec(),
        ),
        (
            "custom alias groups",
            json!({"aliases": {"groups": [["example.com/gpu", "nvidia.com/gpu", "amd.com/gpu"]]}}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object(
                    "Pod",
                    Some(json!([{"key": "nvidia.com/gpu", "operator": "Exists"}])),
                ),
            ),
            "Pod",
            vec![
                json!({"key": "example.com/gpu", "operator": "Exists"}),
                json!({"key": "amd.com/gpu", "operator": "Exists"}),
            ],
        ),
        (
            "the hostpath helper pod of the provisioner's service account gets its tolerations",
            hostpath_settings(),
            request(
                "CREATE",
                "system:serviceaccount:kube-system:microk8s-hostpath",
                "kube-system",
                &helper_pod(),
            ),
            "Pod",
            vec![json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})],
        ),
        (
            "the same pod from another service account does not",
            hostpath_settings(),
            request(
                "CREATE",
                "system:serviceaccount:kube-system:other",
                "kube-system",
                &helper_pod(),
            ),
            "Pod",
            none.to_vec(),
        ),
        (
            "the same pod in another namespace does not",
            hostpath_settings(),
            request(
                "CREATE",
                "system:serviceaccount:kube-system:microk8s-hostpath",
                "default",
                &helper_pod(),
            ),
            "Pod",
            none.to_vec(),
        ),
        (
            "a pod UPDATE gets no injection",
            json!({}),
            pod_update(
                "alice",
                "ops",
                &object("Pod", Some(json!([{"key": CP, "operator": "Exists"}]))),
                &object("Pod", Some(json!([{"key": CP, "operator": "Exists"}]))),
            ),
            "Pod",
            none.to_vec(),
        ),
        (
            "JSONPath conditions select critical DaemonSets; tolerations: null is replaced",
            json!({"rules": [{"name": "critical", "match": {"kinds": ["DaemonSet"],
                "jsonPath": [{"path": "$.spec.template.spec.containers[0].image", "matches": "busybox:*"}]},
                "tolerations": [{"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"}]}]}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object("DaemonSet", Some(Value::Null)),
            ),
            "DaemonSet",
            vec![
                json!({"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"}),
            ],
        ),
        (
            "injected tolerations get alias twins too",
            json!({"rules": [{"name": "cp", "tolerations": [{"key": CP, "operator": "Exists", "effect": "NoSchedule"}]}]}),
            request("CREATE", "alice", "ops", &object("Job", None)),
            "Job",
            vec![
                json!({"key": CP, "operator": "Exists", "effect": "NoSchedule"}),
                json!({"key": MASTER, "operator": "Exists", "effect": "NoSchedule"}),
            ],
        ),
        (
            "the twin of an every-effect toleration is not covered by a one-effect one",
            json!({}),
            request(
                "CREATE",
                "alice",
                "ops",
                &object(
                    "Deployment",
                    Some(
                        json!([{"key": CP, "effect": "NoSchedule"}, {"key": MASTER, "operator": "Exists"}]),
                    ),
                ),
            ),
            "Deployment",
            vec![json!({"key": CP, "operator": "Exists"})],
        ),
    ];
    for (name, settings, req, kind, want) in cases {
        let verdict = run::<TolerationInjection>(
            &req,
            &settings.to_string(),
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        assert!(verdict.accepted(), "{name}: {verdict:?}");
        let before: Value = serde_json::from_str::<Value>(&req).unwrap()["object"]
            .pointer(&format!("{}/tolerations", pod_spec_pointer(kind)))
            .and_then(Value::as_array)
            .map_or(Value::from(0), |a| Value::from(a.len()));
        assert_eq!(
            added(&verdict, kind, before.as_u64().unwrap() as usize),
            want,
            "{name}"
        );
        if want.is_empty() {
            assert_eq!(verdict, Verdict::accept(), "{name}");
        }
    }
}

/// Engines that cannot mutate get no object and no claim that anything was added: a warning per
/// matching rule says that nothing is injected, and a rule that does not match says nothing.
#[test]
fn the_validating_half_injects_nothing_and_says_so() {
    let settings = hostpath_settings().to_string();
    let helper = request(
        "CREATE",
        "system:serviceaccount:kube-system:microk8s-hostpath",
        "kube-system",
        &helper_pod(),
    );
    let mutating = run::<TolerationInjection>(
        &helper,
        &settings,
        Half::Mutating,
        &taintguard::NoCluster("test"),
    );
    assert!(mutating.mutated_object().is_some(), "{mutating:?}");
    let validating = run::<TolerationInjection>(
        &helper,
        &settings,
        Half::Validating,
        &taintguard::NoCluster("test"),
    );
    assert_eq!(
        validating,
        Verdict {
            warnings: vec![
                "toleration-injection: rule \"hostpath-provisioner-helpers\" matches, but this \
                 engine cannot mutate: no toleration is injected (the Kubewarden waPC build \
                 injects them)"
                    .to_owned()
            ],
            ..Verdict::accept()
        }
    );
    let other = request("CREATE", "mallory", "kube-system", &helper_pod());
    let validating = run::<TolerationInjection>(
        &other,
        &settings,
        Half::Validating,
        &taintguard::NoCluster("test"),
    );
    assert_eq!(validating, Verdict::accept());
}

#[test]
fn injection_is_idempotent() {
    let obj = object(
        "DaemonSet",
        Some(json!([{"key": CP, "effect": "NoSchedule"}])),
    );
    let first = run::<TolerationInjection>(
        &request("CREATE", "alice", "ops", &obj),
        "{}",
        Half::Mutating,
        &taintguard::NoCluster("test"),
    );
    let text = first.mutated_object().unwrap();
    taintguard_testkit::assert_valid_object("DaemonSet", text);
    let mutated: Value = serde_json::from_str(text).unwrap();
    let second = run::<TolerationInjection>(
        &request("UPDATE", "alice", "ops", &mutated),
        "{}",
        Half::Mutating,
        &taintguard::NoCluster("test"),
    );
    assert_eq!(second, Verdict::accept());
}

#[test]
fn restrictions() {
    let settings = json!({
        "rules": [{"name": "gpu-helpers", "match": {"namespaces": ["kube-system"]},
                   "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}],
        "restrictions": [{"name": "dedicated-nodes", "taints": ["dedicated", {"key": "nvidia.com/*", "effects": ["NoSchedule"]}],
                          "allowedNamespaces": ["gpu-*"], "allowedPrincipals": {"groups": ["system:masters"]}}]
    });
    let cases: Vec<(&str, Value, &str, &str, Option<&str>)> = vec![
        (
            "tenant tolerating a dedicated taint",
            json!([{"key": "dedicated", "operator": "Exists"}]),
            "tenant-a",
            "alice",
            Some("dedicated:* (Exists)"),
        ),
        (
            "tenant tolerating everything",
            json!([{"operator": "Exists"}]),
            "tenant-a",
            "alice",
            Some("restriction \"dedicated-nodes\""),
        ),
        (
            "glob-selected key",
            json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
            "tenant-a",
            "alice",
            Some("nvidia.com/gpu"),
        ),
        (
            "effect outside the selector",
            json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]),
            "tenant-a",
            "alice",
            None,
        ),
        (
            "allowed namespace",
            json!([{"operator": "Exists"}]),
            "gpu-team",
            "alice",
            None,
        ),
        (
            "allowed principal",
            json!([{"operator": "Exists"}]),
            "tenant-a",
            "admin",
            None,
        ),
        (
            "unrelated toleration",
            json!([{"key": "example.com/other", "operator": "Exists"}]),
            "tenant-a",
            "alice",
            None,
        ),
        (
            "what the policy injects is not denied",
            json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
            "kube-system",
            "alice",
            None,
        ),
    ];
    for (name, tolerations, namespace, user, denied) in cases {
        let mut obj = object("Deployment", Some(tolerations));
        obj["metadata"]["namespace"] = json!(namespace);
        let mut req: Value =
            serde_json::from_str(&request("CREATE", user, namespace, &obj)).unwrap();
        if user == "admin" {
            req["userInfo"]["groups"] = json!(["system:masters"]);
        }
        for half in [Half::Mutating, Half::Validating] {
            let verdict = run::<TolerationInjection>(
                &req.to_string(),
                &settings.to_string(),
                half,
                &taintguard::NoCluster("test"),
            );
            match denied {
                Some(part) => {
                    assert!(!verdict.accepted(), "{name}");
                    assert_eq!(verdict.code(), Some(403));
                    let message = verdict.message().unwrap();
                    assert!(message.contains(part), "{name}: {part:?} not in {message}");
                    assert!(
                        message.contains(&format!("Deployment {namespace}/x")),
                        "{message}"
                    );
                }
                None => assert!(verdict.accepted(), "{name}: {verdict:?}"),
            }
        }
    }
}

/// A Pod UPDATE may add tolerations (Kubernetes' pod update validation), and the scheduler and
/// the taint manager honour them: restrictions judge what it adds, and nothing else.
#[test]
fn pod_updates_are_judged_on_the_tolerations_they_add() {
    let settings = json!({
        "rules": [{"name": "everyone-tolerates-cp", "tolerations": [{"key": CP, "operator": "Exists", "effect": "NoSchedule"}]}],
        "restrictions": [{"name": "dedicated-nodes", "taints": ["dedicated"],
                          "allowedNamespaces": ["gpu-*"], "allowedPrincipals": {"groups": ["system:masters"]}}]
    })
    .to_string();
    let gpu =
        json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"});
    let gpu_for = |seconds: i64| json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute", "tolerationSeconds": seconds});
    let other = json!({"key": "example.com/other", "operator": "Exists"});
    let pod = |namespace: &str, tolerations: Value| {
        let mut p = object("Pod", Some(tolerations));
        p["metadata"]["namespace"] = json!(namespace);
        p
    };
    // (case, requester, namespace, tolerations before, after, what a denial names)
    type Case<'a> = (&'a str, &'a str, &'a str, Value, Value, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "a tenant adds a restricted toleration to a clean pod",
            "alice",
            "tenant-a",
            json!([]),
            json!([gpu]),
            Some("(requested by \"alice\") may not add a toleration of dedicated=gpu:NoSchedule"),
        ),
        (
            "a tenant adds a toleration of every taint",
            "alice",
            "tenant-a",
            json!([other]),
            json!([other, {"operator": "Exists"}]),
            Some("*:* (Exists)"),
        ),
        (
            "a toleration the pod already had stays allowed",
            "alice",
            "tenant-a",
            json!([gpu]),
            json!([gpu]),
            None,
        ),
        (
            "its tolerationSeconds may change",
            "alice",
            "tenant-a",
            json!([gpu_for(60)]),
            json!([gpu_for(3600)]),
            None,
        ),
        (
            "an unrelated addition beside it is fine",
            "alice",
            "tenant-a",
            json!([gpu]),
            json!([gpu, other]),
            None,
        ),
        (
            "an allowed namespace may add it",
            "alice",
            "gpu-team",
            json!([]),
            json!([gpu]),
            None,
        ),
        (
            "an allowed principal may add it",
            "admin",
            "tenant-a",
            json!([]),
            json!([gpu]),
            None,
        ),
    ];
    for (name, user, namespace, before, after, denied) in cases {
        let mut req: Value = serde_json::from_str(&pod_update(
            user,
            namespace,
            &pod(namespace, before),
            &pod(namespace, after),
        ))
        .unwrap();
        if user == "admin" {
            req["userInfo"]["groups"] = json!(["system:masters"]);
        }
        for half in [Half::Mutating, Half::Validating] {
            let verdict = run::<TolerationInjection>(
                &req.to_string(),
                &settings,
                half,
                &taintguard::NoCluster("test"),
            );
            match denied {
                Some(part) => {
                    assert_eq!(verdict.code(), Some(403), "{name}: {verdict:?}");
                    let message = verdict.message().unwrap();
                    assert!(message.contains(part), "{name}: {part:?} not in {message}");
                    assert!(message.contains(&format!("Pod {namespace}/x")), "{message}");
                }
                // Nothing is injected into a Pod UPDATE, and no rule warns about it.
                None => assert_eq!(verdict, Verdict::accept(), "{name}"),
            }
        }
    }
    let mut without_old: Value = serde_json::from_str(&request(
        "UPDATE",
        "alice",
        "tenant-a",
        &pod("tenant-a", json!([gpu])),
    ))
    .unwrap();
    without_old.as_object_mut().unwrap().remove("oldObject");
    let verdict = run::<TolerationInjection>(
        &without_old.to_string(),
        &settings,
        Half::Mutating,
        &taintguard::NoCluster("test"),
    );
    assert_eq!(verdict.code(), Some(400), "{verdict:?}");
    assert!(verdict.message().unwrap().contains("without oldObject"));
}

/// Kubewarden's background audit sends a stored object as a CREATE with an empty `userInfo` and
/// `resource.resource` set to the kind: the object is reported whoever created it, and the
/// message says so instead of blaming "an anonymous requester".
#[test]
fn a_background_audit_reports_restricted_tolerations_whoever_created_the_pod() {
    let settings = json!({"restrictions": [{"name": "dedicated-nodes", "taints": ["dedicated"],
                                            "allowedNamespaces": ["gpu-*"],
                                            "allowedPrincipals": {"serviceAccounts": ["kube-system/*"]}}]})
    .to_string();
    let audit = |namespace: &str| {
        let mut pod = object(
            "Pod",
            Some(json!([{"key": "dedicated", "operator": "Exists"}])),
        );
        pod["metadata"]["namespace"] = json!(namespace);
        json!({"uid": "stored-uid", "kind": gvk("Pod"), "requestKind": gvk("Pod"),
               "resource": {"group": "", "version": "v1", "resource": "Pod"},
               "name": "x", "namespace": namespace, "operation": "CREATE", "userInfo": {},
               "object": pod})
        .to_string()
    };
    for half in [Half::Mutating, Half::Validating] {
        let verdict = run::<TolerationInjection>(
            &audit("tenant-a"),
            &settings,
            half,
            &taintguard::NoCluster("test"),
        );
        assert_eq!(verdict.code(), Some(403), "{verdict:?}");
        let message = verdict.message().unwrap();
        for part in [
            "Pod tenant-a/x tolerates dedicated:* (Exists)",
            "background audit",
            "allowances by principal do not apply",
        ] {
            assert!(message.contains(part), "{part:?} not in {message}");
        }
        assert!(!message.contains("anonymous"), "{message}");
        let allowed = run::<TolerationInjection>(
            &audit("gpu-team"),
            &settings,
            half,
            &taintguard::NoCluster("test"),
        );
        assert_eq!(allowed, Verdict::accept());
    }
}

/// Kubewarden's adapter takes `{}` for every default without reading it: the two agree. The
/// default alias group is built without the keys' check: each passes it.
#[test]
fn empty_settings_are_the_defaults() {
    let read: Settings = taintguard::settings::read("{}").unwrap();
    assert_eq!(read, Settings::default());
    let defaults = settings::Aliases::default();
    for key in defaults.groups.iter().flat_map(|group| group.iter()) {
        let checked = AliasKey::try_from(key.as_str().to_owned());
        assert_eq!(checked.as_ref(), Ok(key));
    }
}

/// A settings toleration is written as a pod spec writes one: `null` is absent, and absent
/// members are empty.
#[test]
fn settings_tolerations_read_null_as_absent() {
    let read = |toleration: Value| {
        let settings = json!({"rules": [{"name": "r", "tolerations": [toleration]}]});
        taintguard::settings::parse::<Settings>(&settings.to_string()).unwrap()
    };
    let nulls = json!({"key": null, "operator": "Exists", "value": null, "effect": null,
                       "tolerationSeconds": null});
    assert_eq!(read(nulls), read(json!({"operator": "Exists"})));
    let defaulted = read(json!({"key": "a", "operator": null, "value": "v"}));
    assert_eq!(
        defaulted,
        read(json!({"key": "a", "operator": "Equal", "value": "v"}))
    );
}

#[test]
fn settings_errors_name_the_field() {
    let rule = |tolerations: Value| json!({"rules": [{"name": "r", "tolerations": tolerations}]});
    let cases = [
        (
            rule(json!([{"key": "a", "operator": "Contains"}])),
            "`rules[0].tolerations[0].operator`: unknown operator",
        ),
        (
            rule(json!([{"key": "a", "effect": "NoRun"}])),
            "`rules[0].tolerations[0].effect`: unknown effect",
        ),
        (
            rule(json!([{"key": "a", "operator": "Exists", "value": "v"}])),
            "`rules[0].tolerations[0].value`: operator \"Exists\" takes no value",
        ),
        (
            rule(json!([{"value": "v"}])),
            "`rules[0].tolerations[0].key`: an empty key requires operator \"Exists\"",
        ),
        (
            rule(json!([{"key": "a", "tolerationSeconds": 5}])),
            "requires effect \"NoExecute\"",
        ),
        (
            rule(json!([])),
            "`rules[0].tolerations`: rule \"r\" adds no tolerations",
        ),
        (
            json!({"podTolerationRestriction": {"namespaceReads": "live"}}),
            "`podTolerationRestriction.namespaceReads`: unknown freshness \"live\"; expected \"cached\" or \"fresh\"",
        ),
        (json!({"rules": [{"name": "r"}]}), "`rules[0].tolerations`"),
        (
            json!({"rules": [{"name": "r", "nodeTaints": {"taints": [{"key": "a", "effects": ["Never"]}]}}]}),
            "`rules[0].nodeTaints.taints[0].effects[0]`: unknown effect",
        ),
        (
            json!({"rules": [{"name": "r", "nodeTaints": {"nodeSelector": {"matchLabels": {"a": 1}}}}]}),
            "`rules[0].nodeTaints.nodeSelector.matchLabels.a`",
        ),
        (
            json!({"rules": [{"name": "r", "nodeTaints": {"except": ["a b"]}}]}),
            "`rules[0].nodeTaints.except[0]`",
        ),
        (
            json!({"rules": [{"name": "r", "nodeTaints": {"nodes": {}}}]}),
            "`rules[0].nodeTaints.nodes`: unknown field",
        ),
        (
            json!({"rules": [{"tolerations": [{"operator": "Exists"}]}]}),
            "`rules[0].name`: every rule needs a name",
        ),
        (
            json!({"rules": [{"name": "r", "tolerations": [{"operator": "Exists"}]}, {"name": "r", "tolerations": [{"operator": "Exists"}]}]}),
            "`rules[1].name`: duplicate rule name \"r\"",
        ),
        (
            json!({"rules": [{"name": "r", "match": {"jsonPath": [{"path": "$$"}]}, "tolerations": [{"operator": "Exists"}]}]}),
            "`rules[0].match.jsonPath[0].path`: invalid JSONPath",
        ),
        (
            json!({"rules": [{"name": "r", "match": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "tolerations": [{"operator": "Exists"}]}]}),
            "`rules[0].match.labelSelector.matchExpressions[0].operator`",
        ),
        (
            json!({"rules": [{"name": "r", "match": {"kinds": ["Service"]}, "tolerations": [{"operator": "Exists"}]}]}),
            "`rules[0].match.kinds[0]`: unknown kind \"Service\"",
        ),
        (
            json!({"rules": [{"name": "r", "match": {"namespace": ["a"]}, "tolerations": [{"operator": "Exists"}]}]}),
            "`rules[0].match.namespace`: unknown field",
        ),
        (
            json!({"aliases": {"groups": [["a"]]}}),
            "`aliases.groups[0]`: an alias group needs at least two keys",
        ),
        (
            json!({"aliases": {"groups": [["a", "b*"]]}}),
            "`aliases.groups[0][1]`: alias keys are plain taint keys, not globs",
        ),
        (
            json!({"aliases": {"groups": [["a", ""]]}}),
            "`aliases.groups[0][1]`: alias keys are plain taint keys, not globs",
        ),
        (
            json!({"aliases": {"groups": [["a b", "c"]]}}),
            "`aliases.groups[0][0]`: \"a b\" is not a taint key glob: ' ' cannot occur in a taint key",
        ),
        (
            json!({"aliases": {"groups": [["a", 3]]}}),
            "`aliases.groups[0][1]`: expected a string, found a number",
        ),
        (
            json!({"aliases": {"groups": [["a", "b"], ["b", "c"]]}}),
            "`aliases.groups[1][0]`: \"b\" is already in an alias group",
        ),
        (
            json!({"restrictions": [{"name": "x", "taints": []}]}),
            "`restrictions[0].taints`",
        ),
        (
            json!({"restrictions": [{"name": "x", "taints": ["a"], "allowedPrincipals": {"serviceAccounts": ["nope"]}}]}),
            "`restrictions[0].allowedPrincipals.serviceAccounts[0]`",
        ),
        (
            rule(json!([["a", "Exists"]])),
            "`rules[0].tolerations[0]`: expected an object, found an array",
        ),
        (
            rule(json!([{"key": "a", "tolerationSecond": 5}])),
            "`rules[0].tolerations[0].tolerationSecond`: unknown field",
        ),
    ];
    for (settings, want) in cases {
        let err = read_settings::<TolerationInjection>(&settings.to_string())
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{settings}: {want:?} not in {err}");
    }
    read_settings::<TolerationInjection>(&hostpath_settings().to_string()).unwrap();
}

#[test]
fn malformed_objects_are_rejected() {
    // Each message names where the object went wrong: the request's reader for a member it
    // reads as an object, the workload's view for what it reads in them (a key written twice
    // only in the text, where serde_json's `Value` keeps one).
    // The kind, its damage as a `Value`, a replacement in the text, and the message's words.
    type Case = (
        &'static str,
        fn(&mut Value),
        (&'static str, &'static str),
        &'static str,
    );
    let cases: [Case; 5] = [
        (
            "Deployment",
            |o| o["spec"]["template"]["spec"]["tolerations"] = json!({"key": "a"}),
            ("", ""),
            "object.spec.template.spec.tolerations: invalid type: map",
        ),
        (
            "Deployment",
            |o| o["spec"]["template"] = json!(7),
            ("", ""),
            "expected an object (at `object.spec.template`)",
        ),
        (
            "Pod",
            |o| o["metadata"]["labels"] = json!({"a": 1}),
            ("", ""),
            "object.metadata.labels: invalid type: integer `1`",
        ),
        (
            "CronJob",
            |_| {},
            (r#""jobTemplate":{"#, r#""jobTemplate":{"spec":{},"#),
            "object.spec.jobTemplate: duplicate field `spec`",
        ),
        (
            "Deployment",
            |_| {},
            (
                r#""futureField":1"#,
                r#""futureField":1,"tolerations":[],"tolerations":[]"#,
            ),
            "object.spec.template.spec: duplicate field `tolerations`",
        ),
    ];
    for (kind, damage, (text, twice), want) in cases {
        let mut obj = object(kind, None);
        damage(&mut obj);
        let request = request("CREATE", "alice", "ops", &obj).replacen(text, twice, 1);
        let verdict = run::<TolerationInjection>(
            &request,
            "{}",
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        assert_eq!(verdict.code(), Some(400), "{kind}");
        let message = verdict.message().unwrap();
        assert!(message.contains(want), "{kind}: {want:?} not in {message}");
    }
}

/// Found by the validate_structured fuzz target: aliasing handed a tenant the twin of its own
/// toleration for a restricted key (tolerating the unrestricted `control-plane` got it
/// `master`), and the policy then denied its own output. Restrictions bound aliasing: restricted
/// twins of the workload's own tolerations are not added; twins of injected ones still are.
#[test]
fn aliasing_does_not_bypass_restrictions() {
    let restriction =
        json!([{"name": "masters", "taints": [MASTER], "allowedNamespaces": ["kube-system"]}]);
    let rule = json!([{"name": "cp", "match": {"namespaces": ["kube-system"]},
                       "tolerations": [{"key": CP, "operator": "Exists", "effect": "NoSchedule"}]}]);
    let tolerates_cp = json!([{"key": CP, "operator": "Exists", "effect": "NoSchedule"}]);
    let cases: Vec<(&str, Value, &str, Vec<&str>)> = vec![
        (
            "tenant tolerating control-plane: no master twin",
            json!({"restrictions": restriction}),
            "tenant-a",
            vec![],
        ),
        (
            "allowed namespace: twin added",
            json!({"restrictions": restriction}),
            "kube-system",
            vec![MASTER],
        ),
        (
            "no restriction: twin added",
            json!({}),
            "tenant-a",
            vec![MASTER],
        ),
        (
            "twin of an injected toleration stays the policy's own work",
            json!({"restrictions": [{"name": "masters", "taints": [MASTER]}], "rules": rule}),
            "kube-system",
            vec![MASTER],
        ),
    ];
    for (name, settings, namespace, want) in cases {
        let mut obj = object("DaemonSet", Some(tolerates_cp.clone()));
        obj["metadata"]["namespace"] = json!(namespace);
        let req = request("CREATE", "alice", namespace, &obj);
        let verdict = run::<TolerationInjection>(
            &req,
            &settings.to_string(),
            Half::Mutating,
            &taintguard::NoCluster("test"),
        );
        assert!(verdict.accepted(), "{name}: {verdict:?}");
        let keys: Vec<String> = added(&verdict, "DaemonSet", 1)
            .iter()
            .map(|t| t["key"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(keys, want, "{name}");
        if let Some(mutated) = verdict.mutated_object() {
            let again = run::<TolerationInjection>(
                &taintguard_testkit::with_object(&req, mutated).unwrap(),
                &settings.to_string(),
                Half::Mutating,
                &taintguard::NoCluster("test"),
            );
            assert!(
                again.accepted() && again.mutated_object().is_none(),
                "{name}: {again:?}"
            );
        }
    }
}

/// An object nested deeper than serde_json's 128 levels passes the borrowed views (raw-value
/// capture is iterative and uncounted). Read as `null`, it would satisfy `exists: false` and get
/// injected tolerations; instead a rule with JSONPath conditions, which need the object parsed
/// into a `Value`, rejects it as malformed, whatever part its paths read. Rules without
/// conditions match as usual, but the mutating half cannot hand back an object that deep (no
/// engine could read it): it is refused naming that limit, while the validating half, which
/// returns no object, accepts.
#[test]
fn objects_too_deep_for_jsonpath_are_rejected_not_read_as_null() {
    let rule = |conditions: Value| {
        json!({"rules": [{"name": "no-selector", "match": {"jsonPath": conditions},
                          "tolerations": [{"key": "dedicated", "operator": "Exists"}]}]})
    };
    for depth in [129, 10_000] {
        let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let req = request("CREATE", "alice", "tenant-a", &object("Pod", None)).replacen(
            r#""futureField":1"#,
            &format!(r#""futureField":{deep}"#),
            1,
        );
        let cases = [
            (
                rule(json!([{"path": "$..nodeSelector", "exists": false}])),
                Some(400),
            ),
            (
                rule(json!([{"path": "$.spec.futureField..*", "exists": false}])),
                Some(400),
            ),
            // A path of member names reads only the members on its way, which the request's
            // pass read: the condition holds on what is there, and only the mutated object,
            // deep as the request, is refused.
            (
                rule(json!([{"path": "$.spec.nodeSelector", "exists": false}])),
                None,
            ),
            (rule(json!([])), None),
        ];
        for (settings, code) in cases {
            let verdict = run::<TolerationInjection>(
                &req,
                &settings.to_string(),
                Half::Mutating,
                &taintguard::NoCluster("test"),
            );
            assert!(!verdict.accepted(), "{depth}: {verdict:?}");
            assert_eq!(verdict.code(), Some(400));
            let message = verdict.message().unwrap();
            assert!(message.contains("recursion limit"), "{message}");
            let validating = run::<TolerationInjection>(
                &req,
                &settings.to_string(),
                Half::Validating,
                &taintguard::NoCluster("test"),
            );
            match code {
                Some(_) => {
                    assert!(!message.contains("mutated object"), "{message}");
                    assert_eq!(validating, verdict);
                }
                None => {
                    assert!(
                        message.contains("the mutated object would nest arrays and objects more than 127 levels deep"),
                        "{message}"
                    );
                    assert!(validating.accepted(), "{depth}: {validating:?}");
                    assert!(validating.mutated_object().is_none());
                }
            }
        }
    }
}

/// Tolerations from the taints nodes carry (docs/context.md): one list call per node selector,
/// every selected taint tolerated once with `Exists` and its effect, the warning naming a node
/// that carries it; restrictions withhold what they forbid; a list that cannot be had refuses
/// the request rather than admit it without what the rule promises.
#[test]
fn node_taint_rules_tolerate_what_nodes_carry() {
    use taintguard::cluster::recorded::Recorded;
    use taintguard::cluster::ClusterError;

    let nodes = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"metadata": {"name": "gpu-1", "labels": {"pool": "gpu"}},
         "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                             {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}},
        {"metadata": {"name": "edge-1"},
         "spec": {"taints": [{"key": "example.com/edge", "effect": "NoExecute"},
                             {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}},
        {"metadata": {"name": "plain-1"}, "spec": {}}]})
    .to_string();
    let rule = |node_taints: Value| {
        json!({"rules": [{"name": "system-daemonsets", "match": {"kinds": ["DaemonSet"], "namespaces": ["kube-system"]},
                          "nodeTaints": node_taints}]})
    };
    let exists =
        |key: &str, effect: &str| json!({"key": key, "operator": "Exists", "effect": effect});
    let ds = object("DaemonSet", None);
    let failed = || Err(ClusterError::Failed("the API server is unreachable".into()));

    struct Case<'a> {
        label: &'a str,
        settings: Value,
        object: Value,
        answer: Result<String, ClusterError>,
        asked: &'a [&'a str],
        /// The tolerations appended; `None`: rejected with code 500.
        added: Option<Vec<Value>>,
        says: &'a [&'a str],
    }
    let cases = [
        Case {
            label: "every taint of every node, each once",
            settings: rule(json!({})),
            object: ds.clone(),
            answer: Ok(nodes.clone()),
            asked: &["list v1/Node "],
            added: Some(vec![
                exists("nvidia.com/gpu", "NoSchedule"),
                exists("dedicated", "NoSchedule"),
                exists("example.com/edge", "NoExecute"),
            ]),
            says: &["nvidia.com/gpu:NoSchedule (Exists) (rule \"system-daemonsets\", node gpu-1 carries it)",
                    "node edge-1 carries it"],
        },
        Case {
            label: "effects selected, a key excepted",
            settings: rule(json!({"taints": [{"key": "*", "effects": ["NoSchedule"]}], "except": ["dedicated"]})),
            object: ds.clone(),
            answer: Ok(nodes.clone()),
            asked: &["list v1/Node "],
            added: Some(vec![exists("nvidia.com/gpu", "NoSchedule")]),
            says: &[],
        },
        Case {
            label: "the node selector is asked of the cluster",
            settings: rule(json!({"nodeSelector": {"matchLabels": {"pool": "gpu"}, "matchExpressions": [{"key": "retired", "operator": "DoesNotExist"}]}})),
            object: ds.clone(),
            answer: Ok(r#"{"items": []}"#.to_owned()),
            asked: &["list v1/Node pool=gpu,!retired"],
            added: Some(vec![]),
            says: &[],
        },
        Case {
            label: "what the workload already tolerates is not added again",
            settings: rule(json!({})),
            object: object("DaemonSet", Some(json!([{"operator": "Exists", "effect": "NoSchedule"}]))),
            answer: Ok(nodes.clone()),
            asked: &["list v1/Node "],
            added: Some(vec![exists("example.com/edge", "NoExecute")]),
            says: &[],
        },
        Case {
            label: "a restriction withholds what it forbids, and says so",
            settings: {
                let mut s = rule(json!({}));
                s["restrictions"] = json!([{"name": "ml-only", "taints": ["dedicated"], "allowedNamespaces": ["ml"]}]);
                s
            },
            object: ds.clone(),
            answer: Ok(nodes.clone()),
            asked: &["list v1/Node "],
            added: Some(vec![exists("nvidia.com/gpu", "NoSchedule"), exists("example.com/edge", "NoExecute")]),
            says: &["did not add toleration dedicated:NoSchedule (Exists) (restriction \"ml-only\" protects taints dedicated), which rule \"system-daemonsets\", node gpu-1 carries it"],
        },
        Case {
            label: "the list fails: refused, nothing injected",
            settings: rule(json!({})),
            object: ds.clone(),
            answer: failed(),
            asked: &["list v1/Node "],
            added: None,
            says: &["rule \"system-daemonsets\" tolerates the taints of every node, but asking the cluster failed: the API server is unreachable"],
        },
        Case {
            label: "an answer that is not a list: refused",
            settings: rule(json!({})),
            object: ds.clone(),
            answer: Ok("{}".to_owned()),
            asked: &["list v1/Node "],
            added: None,
            says: &["the list of v1/Node cannot be read"],
        },
        Case {
            label: "a rule that does not match never asks",
            settings: rule(json!({})),
            object: object("Deployment", None),
            answer: failed(),
            asked: &[],
            added: Some(vec![]),
            says: &[],
        },
    ];
    for case in cases {
        let cluster = Recorded {
            nodes: Some(case.answer),
            ..Recorded::default()
        };
        let label = case.label;
        let kind = case.object["kind"].as_str().unwrap().to_owned();
        let req = request("CREATE", "alice", "kube-system", &case.object);
        let verdict =
            run::<TolerationInjection>(&req, &case.settings.to_string(), Half::Mutating, &cluster);
        assert_eq!(*cluster.asked.borrow(), case.asked, "{label}");
        match case.added {
            Some(want) => {
                assert!(verdict.accepted(), "{label}: {verdict:?}");
                let before = case
                    .object
                    .pointer(&format!("{}/tolerations", pod_spec_pointer(&kind)))
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                assert_eq!(added(&verdict, &kind, before), want, "{label}");
            }
            None => {
                assert_eq!(verdict.code(), Some(500), "{label}: {verdict:?}");
                assert!(verdict.mutated_object().is_none(), "{label}");
            }
        }
        let said = verdict.said();
        for fragment in case.says {
            assert!(
                said.contains(fragment),
                "{label}: {fragment:?} not in {said}"
            );
        }
    }

    // Two rules with the same node selector share one list call.
    let cluster = Recorded {
        nodes: Some(Ok(nodes.clone())),
        ..Recorded::default()
    };
    let mut two = rule(json!({"except": ["dedicated"]}));
    two["rules"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "second", "nodeTaints": {"taints": ["dedicated"]}}));
    let req = request("CREATE", "alice", "kube-system", &ds);
    let verdict = run::<TolerationInjection>(&req, &two.to_string(), Half::Mutating, &cluster);
    assert_eq!(*cluster.asked.borrow(), ["list v1/Node "]);
    assert_eq!(added(&verdict, "DaemonSet", 0).len(), 3, "{verdict:?}");

    // The validating half injects nothing: it reads the nodes the engine holds (an inventory)
    // and says what the waPC build would add; where the engine holds none, only that the rule
    // injects nothing here.
    let cluster = Recorded {
        nodes: Some(Ok(nodes.clone())),
        ..Recorded::default()
    };
    let req = request("CREATE", "alice", "kube-system", &ds);
    let settings = rule(json!({"except": ["dedicated"]})).to_string();
    let verdict = run::<TolerationInjection>(&req, &settings, Half::Validating, &cluster);
    assert_eq!(*cluster.asked.borrow(), ["list v1/Node "]);
    assert!(
        verdict.accepted() && verdict.mutated_object().is_none(),
        "{verdict:?}"
    );
    let said = verdict.said();
    assert!(
        said.contains("this engine cannot mutate: the workload lacks toleration")
            && !said.contains("lacks toleration dedicated"),
        "{said}"
    );
    let none = taintguard::NoCluster("this engine replicates no objects");
    let verdict = run::<TolerationInjection>(&req, &settings, Half::Validating, &none);
    assert!(verdict.accepted(), "{verdict:?}");
    assert!(
        !verdict.said().contains("lacks toleration"),
        "{}",
        verdict.said()
    );
}

/// `podTolerationRestriction` asks the cluster for the Pod's Namespace only when it is on, from
/// the engine's cache unless `namespaceReads` asks for fresh reads. The validating half reads it
/// where the engine holds it (an inventory) and says what it cannot add; where the engine holds
/// none, it refuses the Pod (500) as the mutating half does: never the cluster whitelist alone.
#[test]
fn the_namespace_is_read_only_where_it_can_be_and_is_needed() {
    use taintguard::cluster::recorded::Recorded;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
        "annotations": {"scheduler.alpha.kubernetes.io/defaultTolerations":
            r#"[{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"}]"#}}});
    let on = json!({"podTolerationRestriction": {"enabled": true,
        "whitelist": [{"key": "dedicated", "operator": "Exists"}]}});
    let pod = |tolerations: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"},
               "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": tolerations}})
    };
    let gpu = json!([{"key": "nvidia.com/gpu", "operator": "Exists"}]);
    let cases = [
        (
            "off",
            json!({}),
            Half::Mutating,
            pod(json!([])),
            vec![],
            "accepted",
        ),
        (
            "on",
            on.clone(),
            Half::Mutating,
            pod(json!([])),
            vec!["get v1/Namespace team-a cached"],
            "mutated",
        ),
        (
            "on, outside",
            on.clone(),
            Half::Mutating,
            pod(gpu.clone()),
            vec!["get v1/Namespace team-a cached"],
            "403",
        ),
        (
            "on, read fresh",
            json!({"podTolerationRestriction": {"enabled": true, "namespaceReads": "fresh",
                "whitelist": [{"key": "dedicated", "operator": "Exists"}]}}),
            Half::Mutating,
            pod(json!([])),
            vec!["get v1/Namespace team-a fresh"],
            "mutated",
        ),
        (
            "validating, outside",
            on.clone(),
            Half::Validating,
            pod(gpu.clone()),
            vec!["get v1/Namespace team-a cached"],
            "403",
        ),
        (
            "validating, inside",
            on.clone(),
            Half::Validating,
            pod(json!([{"key": "dedicated", "operator": "Exists"}])),
            vec!["get v1/Namespace team-a cached"],
            "accepted",
        ),
        (
            "validating, a default the waPC build adds",
            on.clone(),
            Half::Validating,
            pod(json!([])),
            vec!["get v1/Namespace team-a cached"],
            "lacks",
        ),
    ];
    for (label, settings, half, object, asked, want) in cases {
        let cluster = Recorded {
            namespaces: vec![("team-a", namespace.to_string())],
            ..Recorded::default()
        };
        let req = request("CREATE", "alice", "team-a", &object);
        let verdict = run::<TolerationInjection>(&req, &settings.to_string(), half, &cluster);
        assert_eq!(*cluster.asked.borrow(), asked, "{label}");
        let got = match (verdict.code(), verdict.mutated_object()) {
            (Some(code), _) => code.to_string(),
            (None, Some(_)) => "mutated".to_owned(),
            (None, None)
                if verdict.warnings.iter().any(|w| {
                    w.contains("cannot mutate: the Pod lacks dedicated=team-a:NoSchedule")
                }) =>
            {
                "lacks".to_owned()
            }
            (None, None) => "accepted".to_owned(),
        };
        assert_eq!(got, want, "{label}: {}", verdict.said());
    }
    // An engine that holds no Namespaces at all (a Gatekeeper-style inventory without the sync
    // of v1/Namespace, OPA mode, the JavaScript package without a cluster): refused, in either
    // half, whatever the cluster-wide whitelist would say, and the reason passed on.
    let none = taintguard::NoCluster("the inventory holds no v1 Namespace objects: sync it");
    for (half, tolerations) in [
        (Half::Validating, json!([])),
        (Half::Validating, gpu.clone()),
        (
            Half::Validating,
            json!([{"key": "dedicated", "operator": "Exists"}]),
        ),
        (
            Half::Mutating,
            json!([{"key": "dedicated", "operator": "Exists"}]),
        ),
    ] {
        let req = request("CREATE", "alice", "team-a", &pod(tolerations.clone()));
        let verdict = run::<TolerationInjection>(&req, &on.to_string(), half, &none);
        let label = format!("{half:?} {tolerations}: {}", verdict.said());
        assert_eq!(verdict.code(), Some(500), "{label}");
        let message = verdict.message().unwrap_or_default();
        for wanted in [
            "annotations of namespace \"team-a\" cannot be read",
            "the inventory holds no v1 Namespace objects: sync it",
            "refused rather than judged without them",
        ] {
            assert!(message.contains(wanted), "{wanted:?}: {label}");
        }
    }
}

/// A path of member names is read member by member (`Subject::member_value`); it must select
/// what the same path selects in the whole object parsed into a `Value`. The `Value` route is
/// forced by a union of the last name with one no object has, which selects the same nodes.
#[test]
fn member_paths_select_what_the_whole_object_would() {
    let pod_specs = [
        r#""priorityClassName":"system-node-critical""#,
        r#""priorityClassName":"a","priorityClassName":"system-node-critical""#,
        r#""priorityClassName":"system-node-critical","priorityClassName":"a""#,
        r#""priorityClassName":null"#,
        r#""\u0070riorityClassName":"system-node-critical""#,
        r#""priorityClassName":{"x":"system-node-critical"}"#,
        r#""nodeSelector":{"a":"b","a":"system-x"}"#,
        r#""nodeSelector":["system-node-critical"]"#,
    ];
    let paths = [
        ("$.spec.template.spec", "priorityClassName"),
        ("$.spec.template.spec.priorityClassName", "x"),
        ("$.spec.template.spec", "nodeSelector"),
        ("$.spec.template.spec.nodeSelector", "a"),
        ("$.spec", "template"),
        ("$.spec.selector.matchLabels", "app"),
        ("$.spec.template.metadata.labels", "app"),
    ];
    let tests = [
        json!({"exists": true}),
        json!({"exists": false}),
        json!({"equals": "system-node-critical"}),
        json!({"matches": "system-*"}),
        json!({"in": ["b", "system-node-critical"]}),
    ];
    let verdict = |req: &str, path: String, test: &Value| {
        let mut condition = test.clone();
        condition["path"] = json!(path);
        let settings = json!({"rules": [{"name": "r", "match": {"jsonPath": [condition]},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}]}]});
        run::<TolerationInjection>(
            req,
            &settings.to_string(),
            Half::Mutating,
            &taintguard::NoCluster("test"),
        )
    };
    let mut held = 0;
    for pod_spec in pod_specs {
        let req = request(
            "CREATE",
            "alice",
            "kube-system",
            &object("Deployment", None),
        )
        .replacen(r#""futureField":1"#, pod_spec, 1);
        for (parent, name) in paths {
            for test in &tests {
                let members = verdict(&req, format!("{parent}.{name}"), test);
                let whole = verdict(&req, format!("{parent}['{name}','zz-none']"), test);
                assert_eq!(members, whole, "{pod_spec} {parent}.{name} {test}");
                held += usize::from(members.mutated_object().is_some());
            }
        }
    }
    // Both outcomes occur: the table tells the routes apart.
    assert!(held > 20 && held < 8 * 7 * 5 - 20, "{held}");
}

/// `Tolerated` answers as comparing with each held toleration does, whether it holds few
/// (compared in turn) or more than `FEW` (indexed), the index built before the first addition
/// or by one of them.
#[test]
fn tolerated_adds_what_nothing_held_covers() {
    let toleration = |key: String, operator, value: &str, effect: &str| Toleration {
        key: key.into(),
        operator,
        value: value.to_owned().into(),
        effect: effect.to_owned().into(),
        seconds: None,
    };
    // Each key twice in the additions, once covered by what came before; every third key held.
    let additions: Vec<Toleration<'static>> = (0..12)
        .flat_map(|k| {
            let key = format!("k{}", k % 8);
            [
                toleration(key.clone(), Operator::Equal, "v", "NoSchedule"),
                toleration(key, Operator::Exists, "", ["", "NoSchedule"][k % 2]),
            ]
        })
        .collect();
    for held in [0, 5, FEW - 3, FEW, FEW + 4] {
        let given: Vec<Toleration<'static>> = (0..held)
            .map(|k| {
                toleration(
                    format!("k{}", k * 3 % 10),
                    Operator::Exists,
                    "",
                    "NoSchedule",
                )
            })
            .collect();
        let mut tolerated = Tolerated::new([&given, &[]]);
        let mut expected: Vec<Toleration<'static>> = Vec::new();
        for t in &additions {
            let mut all = given.iter().chain(&expected);
            if !all.any(|held| held.covers(t)) {
                expected.push(t.clone());
            }
            tolerated.add(t.clone(), String::new);
        }
        let added: Vec<_> = tolerated.into_added().into_iter().map(|(t, _)| t).collect();
        assert_eq!(added, expected, "{held} held");
    }
}
