//! The incident cases through the package's exported functions, inside a real JavaScript engine:
//! the same suite runs in Node and in headless Chromium (build.sh sets the runner's environment).
//! Inputs and results cross the JS boundary exactly as they do for a package user: requests and
//! settings as JS objects made by `JSON.parse`, results read back with `Reflect`.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Error, Object, Reflect, JSON};
use taintguard_js::{evaluate, policies, validate_settings};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

macro_rules! example {
    ($policy:literal, $file:literal) => {
        include_str!(concat!("../../../policies/", $policy, "/examples/", $file))
    };
}

fn js(text: &str) -> JsValue {
    JSON::parse(text).expect("fixture is JSON")
}

fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &key.into()).expect("result is an object")
}

fn string(value: &JsValue, key: &str) -> String {
    get(value, key).as_string().unwrap_or_default()
}

/// `(op, path)` of each patch operation, and the operations' text for value checks.
fn patch_ops(verdict: &JsValue) -> Vec<(String, String, String)> {
    let patch = get(verdict, "patch");
    if patch.is_null() {
        return Vec::new();
    }
    Array::from(&patch)
        .iter()
        .map(|op| {
            let text = String::from(JSON::stringify(&op).unwrap());
            (string(&op, "op"), string(&op, "path"), text)
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Accepted; each patch operation `(op, path, text it contains)`.
    Mutated(&'static [(&'static str, &'static str, &'static str)]),
    /// Rejected with code 403 and a message containing this.
    Rejected(&'static str),
}

struct Case {
    name: &'static str,
    policy: &'static str,
    request: &'static str,
    settings: &'static str,
    expect: Expect,
}

const TP: &str = "taint-preservation";
const TI: &str = "toleration-injection";

/// The incidents the policies exist for (see each policy's README), with the webhook patch that
/// repairs each one, or the denial in `deny` mode.
fn cases() -> Vec<Case> {
    use Expect::*;
    let incident_1 = example!(
        "taint-preservation",
        "requests/incident-1-stale-taint-patch.json"
    );
    let incident_2 = example!(
        "taint-preservation",
        "requests/incident-2-uncordon-by-other-controller.json"
    );
    let incident_3 = example!(
        "taint-preservation",
        "requests/incident-3-readd-uninitialized.json"
    );
    let flannel = example!(
        "toleration-injection",
        "requests/flannel-v0.24.4-daemonset.json"
    );
    let tp_default = example!("taint-preservation", "settings/default.json");
    let tp_deny = example!("taint-preservation", "settings/deny.json");
    vec![
        Case {
            name: "1: a stale taint list written back restores the dropped taints",
            policy: TP,
            request: incident_1,
            settings: tp_default,
            expect: Mutated(&[
                ("add", "/spec/taints/2", "example.com/dedicated"),
                ("add", "/spec/taints/3", "nvidia.com/gpu"),
            ]),
        },
        Case {
            name: "1 in deny mode",
            policy: TP,
            request: incident_1,
            settings: tp_deny,
            expect: Rejected("may not remove protected tai"),
        },
        Case {
            name: "2: another controller's uncordon is turned back",
            policy: TP,
            request: incident_2,
            settings: tp_default,
            expect: Mutated(&[("replace", "/spec/unschedulable", "true")]),
        },
        Case {
            name: "2 in deny mode",
            policy: TP,
            request: incident_2,
            settings: tp_deny,
            expect: Rejected("may not uncordon"),
        },
        Case {
            name: "3: a re-added one-shot startup taint is stripped",
            policy: TP,
            request: incident_3,
            settings: tp_default,
            expect: Mutated(&[
                ("remove", "/spec/taints/1", ""),
                ("remove", "/spec/taints/1", ""),
            ]),
        },
        Case {
            name: "3 in deny mode",
            policy: TP,
            request: incident_3,
            settings: tp_deny,
            expect: Rejected("may not re-add one-shot"),
        },
        Case {
            name: "5: flannel tolerating only control-plane gets the master alias",
            policy: TI,
            request: flannel,
            settings: example!("toleration-injection", "settings/default.json"),
            expect: Mutated(&[(
                "add",
                "/spec/template/spec/tolerations/4",
                "node-role.kubernetes.io/master",
            )]),
        },
        Case {
            name: "a tenant pod may not tolerate a dedicated taint",
            policy: TI,
            request: example!(
                "toleration-injection",
                "requests/tenant-pod-tolerating-dedicated.json"
            ),
            settings: example!("toleration-injection", "settings/tenant-restriction.json"),
            expect: Rejected("may not tolerate"),
        },
    ]
}

#[wasm_bindgen_test]
fn incidents_get_their_verdicts_and_patches() {
    for case in cases() {
        let verdict = evaluate(case.policy, js(case.request), Some(js(case.settings)), None)
            .unwrap_or_else(|_| panic!("{}: evaluate threw", case.name));
        let accepted = get(&verdict, "accepted").as_bool();
        let ops = patch_ops(&verdict);
        match case.expect {
            Expect::Mutated(want) => {
                assert_eq!(accepted, Some(true), "{}", case.name);
                assert_eq!(string(&verdict, "patchType"), "JSONPatch", "{}", case.name);
                assert!(get(&verdict, "mutatedObject").is_object(), "{}", case.name);
                assert_eq!(ops.len(), want.len(), "{}: {ops:?}", case.name);
                for ((op, path, text), (want_op, want_path, contains)) in ops.iter().zip(want) {
                    assert_eq!(
                        (op.as_str(), path.as_str()),
                        (*want_op, *want_path),
                        "{}",
                        case.name
                    );
                    assert!(text.contains(contains), "{}: {text}", case.name);
                }
            }
            Expect::Rejected(contains) => {
                assert_eq!(accepted, Some(false), "{}", case.name);
                assert_eq!(get(&verdict, "code").as_f64(), Some(403.0), "{}", case.name);
                assert!(
                    string(&verdict, "message").contains(contains),
                    "{}",
                    case.name
                );
                assert!(ops.is_empty() && get(&verdict, "mutatedObject").is_null());
            }
        }
    }
}

/// JSON text and objects are the same input; an AdmissionReview and its bare request too.
#[wasm_bindgen_test]
fn text_objects_reviews_and_bare_requests_agree() {
    let case = &cases()[0];
    let review = js(case.request);
    let bare = get(&review, "request");
    let by_object = evaluate(TP, review, None, None).unwrap();
    let by_text = evaluate(TP, case.request.into(), Some("{}".into()), None).unwrap();
    let by_bare = evaluate(TP, bare, Some(Object::new().into()), None).unwrap();
    let text = |v: &JsValue| String::from(JSON::stringify(v).unwrap());
    assert_eq!(text(&by_object), text(&by_text));
    assert_eq!(text(&by_object), text(&by_bare));
}

/// `policies()` lists every policy, and its spelled-out defaults judge like `{}`.
#[wasm_bindgen_test]
fn default_settings_judge_like_empty_settings() {
    let list = Array::from(&policies().unwrap());
    let names: Vec<String> = list.iter().map(|p| string(&p, "name")).collect();
    assert_eq!(names, [TP, TI]);
    for case in cases() {
        let info = list
            .iter()
            .find(|p| string(p, "name") == case.policy)
            .unwrap();
        assert!(get(&info, "mutating").as_bool().unwrap());
        let defaults = get(&info, "defaultSettings");
        let valid = validate_settings(case.policy, Some(defaults.clone())).unwrap();
        assert_eq!(
            get(&valid, "valid").as_bool(),
            Some(true),
            "{}",
            case.policy
        );
        let with_defaults = evaluate(case.policy, js(case.request), Some(defaults), None).unwrap();
        let with_empty = evaluate(case.policy, js(case.request), None, None).unwrap();
        assert_eq!(
            String::from(JSON::stringify(&with_defaults).unwrap()),
            String::from(JSON::stringify(&with_empty).unwrap()),
            "{}",
            case.name
        );
    }
}

/// What the error thrown to JavaScript says.
fn thrown(result: Result<JsValue, JsError>) -> String {
    let error = result.expect_err("an exception");
    String::from(Error::from(JsValue::from(error)).message())
}

#[wasm_bindgen_test]
fn bad_input_throws_an_error_naming_the_field() {
    let request = example!(
        "taint-preservation",
        "requests/incident-1-stale-taint-patch.json"
    );
    let cases: [(&str, JsValue, Option<JsValue>, &str); 7] = [
        ("nope", js(request), None, "unknown policy \"nope\""),
        (
            TP,
            js(request),
            Some(js(r#"{"mode":"sometimes"}"#)),
            "settings field `mode`",
        ),
        (
            TP,
            js(request),
            Some(js(
                r#"{"protectedTaints":[{"key":"a","effects":["Sometimes"]}]}"#,
            )),
            "settings field `protectedTaints[0].effects[0]`",
        ),
        (
            TI,
            js(request),
            Some("{".into()),
            "settings: not valid JSON",
        ),
        (
            TP,
            JsValue::from(42),
            None,
            "request: expected an object or a JSON string",
        ),
        (
            TP,
            js(r#"{"kind":"AdmissionReview"}"#),
            None,
            "AdmissionReview has no `request`",
        ),
        (
            TP,
            js(r#"{"uid":"x","kind":{"kind":"Node"}}"#),
            None,
            "malformed admission request",
        ),
    ];
    for (policy, request, settings, want) in cases {
        let message = thrown(evaluate(policy, request, settings, None));
        assert!(message.contains(want), "{message:?} lacks {want:?}");
    }
}

#[wasm_bindgen_test]
fn validate_settings_answers_rather_than_throws() {
    let invalid = validate_settings(TI, Some(js(r#"{"rules":[{"name":"x"}]}"#))).unwrap();
    assert_eq!(get(&invalid, "valid").as_bool(), Some(false));
    assert!(string(&invalid, "message").contains("rules[0].tolerations"));
    let valid = validate_settings(
        TI,
        Some(example!("toleration-injection", "settings/hostpath-provisioner.json").into()),
    )
    .unwrap();
    assert_eq!(get(&valid, "valid").as_bool(), Some(true));
    assert!(thrown(validate_settings("nope", None)).contains("unknown policy"));
}

/// A Pod CREATE in namespace `namespace` tolerating `tolerations` (JSON), as a ReplicaSet's
/// controller sends it.
fn pod_create(namespace: &str, tolerations: &str) -> JsValue {
    js(&format!(
        r#"{{"uid": "u1", "kind": {{"group": "", "version": "v1", "kind": "Pod"}},
            "resource": {{"group": "", "version": "v1", "resource": "pods"}},
            "operation": "CREATE", "namespace": "{namespace}",
            "userInfo": {{"username": "system:serviceaccount:kube-system:replicaset-controller"}},
            "object": {{"apiVersion": "v1", "kind": "Pod",
                "metadata": {{"name": "web-1", "namespace": "{namespace}"}},
                "spec": {{"containers": [{{"name": "web", "image": "nginx:1.27"}}],
                          "tolerations": {tolerations}}}}}}}"#
    ))
}

/// The cluster's answers come from the caller, as a test suite's `cluster:`: a namespace's
/// PodTolerationRestriction annotations refuse and default, nodes' taints are injected, and a
/// question the caller did not answer is the refusal a cluster that cannot answer gives (500).
#[wasm_bindgen_test]
fn cluster_questions_are_answered_from_the_callers_cluster() {
    let ptr = js(r#"{"podTolerationRestriction": {"enabled": true}}"#);
    let cluster = js(r#"{"namespaces": [{"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "annotations": {
            "scheduler.alpha.kubernetes.io/defaultTolerations": "[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"team-a\",\"effect\":\"NoSchedule\"}]",
            "scheduler.alpha.kubernetes.io/tolerationsWhitelist": "[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"team-a\"}]"}}}]}"#);
    let team_b =
        r#"[{"key": "dedicated", "operator": "Equal", "value": "team-b", "effect": "NoSchedule"}]"#;
    let refused = evaluate(
        TI,
        pod_create("team-a", team_b),
        Some(ptr.clone()),
        Some(cluster.clone()),
    )
    .unwrap();
    assert_eq!(get(&refused, "code").as_f64(), Some(403.0));
    assert!(
        string(&refused, "message").contains("conflict with its namespace whitelist"),
        "{}",
        string(&refused, "message")
    );
    let defaulted = evaluate(
        TI,
        pod_create("team-a", "[]"),
        Some(ptr.clone()),
        Some(cluster.clone()),
    )
    .unwrap();
    assert_eq!(
        patch_ops(&defaulted)
            .iter()
            .map(|(op, path, _)| (op.as_str(), path.as_str()))
            .collect::<Vec<_>>(),
        [("add", "/spec/tolerations/0")],
        "{:?}",
        patch_ops(&defaulted)
    );
    assert!(patch_ops(&defaulted)[0].2.contains("team-a"));

    // A question the caller did not answer: a Namespace the cluster does not hold, or no
    // cluster at all.
    for given in [Some(cluster), None] {
        let missing = evaluate(TI, pod_create("team-z", "[]"), Some(ptr.clone()), given).unwrap();
        assert_eq!(get(&missing, "code").as_f64(), Some(500.0));
        assert!(
            string(&missing, "message").contains(r#"namespace "team-z" cannot be read"#),
            "{}",
            string(&missing, "message")
        );
    }

    // The nodes' taints, for a rule that tolerates them (flannel's DaemonSet, incident 5).
    let flannel = example!(
        "toleration-injection",
        "requests/flannel-v0.24.4-daemonset.json"
    );
    let rule = js(r#"{"rules": [{"name": "system-daemonsets",
        "match": {"kinds": ["DaemonSet"], "namespaces": ["kube-flannel"]},
        "nodeTaints": {"except": ["dedicated"]}}]}"#);
    let nodes = js(r#"{"nodes": [{"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-3", "labels": {"pool": "general"}},
        "spec": {"taints": [{"key": "example.com/maintenance", "value": "planned", "effect": "NoSchedule"},
                            {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}}]}"#);
    let injected = evaluate(TI, js(flannel), Some(rule), Some(nodes)).unwrap();
    let ops = patch_ops(&injected);
    assert!(
        ops.iter()
            .any(|(_, _, text)| text.contains("example.com/maintenance")),
        "{ops:?}"
    );
    assert!(
        !ops.iter()
            .any(|(_, _, text)| text.contains("\"dedicated\"")),
        "{ops:?}"
    );
}
