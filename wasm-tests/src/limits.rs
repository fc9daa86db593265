//! Requests at the limits: Node objects of 1.5 MiB (etcd's request size limit) and JSON nested
//! 10,000 levels deep, each with the verdict every artifact must give. Built as text, since
//! nesting that deep cannot go through a `serde_json::Value`. Shared by `tests/limits.rs` (the
//! waPC artifacts) and the `limit-cases` tool that feeds the JavaScript hosts' tests.

use serde_json::{json, Value};

use crate::examples::Expect;
use crate::repo_root;

/// etcd's default request size limit, the largest object the API server can store.
pub const MAX_OBJECT: usize = 1536 * 1024;
pub const DEEP: usize = 10_000;

pub struct LimitCase {
    pub name: String,
    pub policy: &'static str,
    /// A bare AdmissionRequest.
    pub request: String,
    pub settings: String,
    /// What the full policy (waPC, JavaScript) answers.
    pub expect: Expect,
    /// What the validating half (OPA, Gatekeeper) answers.
    pub expect_validating: Expect,
    /// The full policy's rejection (400) is of the object it would hand back mutated, nested
    /// past serde_json's 127 levels; the validating half hands nothing back, so it gives the
    /// policy's own decision instead of that 400.
    pub mutation_too_deep: bool,
}

/// `{"a":{"a":…1…}}`, `depth` objects deep.
pub fn nested(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

fn example(policy: &str, name: &str) -> Value {
    let path = repo_root()
        .join("policies")
        .join(policy)
        .join("examples/requests")
        .join(format!("{name}.json"));
    let review: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    review["request"].clone()
}

/// Grows `node.status.images` until the node's text is `size` bytes or a little more.
fn pad_images(node: &mut Value, size: usize) {
    let base = node.to_string().len();
    let entry = |i: usize| {
        json!({"names": [format!("registry.example.com/team/image-{i:06}@sha256:{:064x}", i),
                         format!("registry.example.com/team/image-{i:06}:v1.2.3")],
               "sizeBytes": 123_456_789})
    };
    let per = entry(0).to_string().len() + 1;
    let images: Vec<Value> = (0..(size.saturating_sub(base) / per + 1))
        .map(entry)
        .collect();
    node["status"]["images"] = Value::Array(images);
}

/// As many distinct protected taints as fill `size` bytes.
fn many_taints(size: usize) -> Vec<Value> {
    let taint = |i: usize| json!({"key": format!("example.com/t-{i:06}"), "value": "v", "effect": "NoSchedule"});
    let per = taint(0).to_string().len() + 1;
    (0..size / per).map(taint).collect()
}

/// Replaces the string `"@DEEP@"` in `text` with `depth` levels of nesting.
fn deepen(text: &str, depth: usize) -> String {
    assert!(text.contains("\"@DEEP@\""), "no placeholder");
    text.replacen("\"@DEEP@\"", &nested(depth), 1)
}

pub fn cases() -> Vec<LimitCase> {
    use Expect::{Accepted, Mutated, Rejected};
    let tp = "taint-preservation";
    let ti = "toleration-injection";
    let incident = example(tp, "incident-1-stale-taint-patch");
    let flannel = example(ti, "flannel-v0.24.4-daemonset");
    let critical = r#"{"rules":[{"name":"critical","match":{"jsonPath":[{"path":"$..priorityClassName","in":["system-node-critical"]}]}, "tolerations":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","operator":"Exists","effect":"NoSchedule"}]}]}"#;
    let mut cases = Vec::new();
    let mut add =
        |name: &str, policy, request: String, settings: &str, expect, expect_validating| {
            cases.push(LimitCase {
                name: name.to_owned(),
                policy,
                request,
                settings: settings.to_owned(),
                expect,
                expect_validating,
                mutation_too_deep: false,
            })
        };
    // The names of the cases whose mutated object would be too deep (set once all are added).
    let mut too_deep: Vec<String> = Vec::new();

    let mut big = incident.clone();
    pad_images(&mut big["object"], MAX_OBJECT);
    pad_images(&mut big["oldObject"], MAX_OBJECT);
    add(
        "1.5 MiB Node, stale taint patch",
        tp,
        big.to_string(),
        "{}",
        Mutated,
        Rejected,
    );

    let taints = many_taints(MAX_OBJECT);
    let mut removed = incident.clone();
    removed["oldObject"]["spec"]["taints"] = json!(taints);
    add(
        "1.5 MiB of protected taints, all removed",
        tp,
        removed.to_string(),
        "{}",
        Mutated,
        Rejected,
    );

    let mut changed = removed.clone();
    let mut half_changed = taints.clone();
    for (i, t) in half_changed
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
    {
        t["value"] = json!(format!("w{i}"));
    }
    changed["object"]["spec"]["taints"] = json!(half_changed);
    add(
        "1.5 MiB of protected taints, every other value changed",
        tp,
        changed.to_string(),
        "{}",
        Mutated,
        Rejected,
    );

    let mut reordered = removed.clone();
    reordered["object"]["spec"]["taints"] = json!(taints.iter().rev().collect::<Vec<_>>());
    add(
        "1.5 MiB of protected taints, only reordered",
        tp,
        reordered.to_string(),
        "{}",
        Accepted,
        Accepted,
    );

    // The policy never reads these fields, but the mutated object would carry them back, deeper
    // than engines read (the core's `policy::try_run`): a 400 naming the limit. The
    // validating half rejects the stale taint patch itself.
    let mut deep = incident.clone();
    deep["object"]["spec"]["x-deep"] = json!("@DEEP@");
    too_deep.push("10,000-deep unknown field in the Node".into());
    add(
        "10,000-deep unknown field in the Node",
        tp,
        deepen(&deep.to_string(), DEEP),
        "{}",
        Rejected,
        Rejected,
    );

    let mut deep = incident.clone();
    deep["oldObject"]["spec"]["taints"][0]["x-deep"] = json!("@DEEP@");
    too_deep.push("10,000-deep unknown field in a taint that is restored".into());
    add(
        "10,000-deep unknown field in a taint that is restored",
        tp,
        deepen(&deep.to_string(), DEEP),
        "{}",
        Rejected,
        Rejected,
    );

    let mut deep = incident.clone();
    deep["object"]["spec"]["taints"] = json!("@DEEP@");
    add(
        "10,000-deep spec.taints",
        tp,
        deepen(&deep.to_string(), DEEP),
        "{}",
        Rejected,
        Rejected,
    );

    // What policy-server cannot read (it decodes every string of a request), in a member no
    // policy reads: refused as the engine refuses it.
    let mut unreadable = incident.clone();
    unreadable["object"]["metadata"]["x-half"] = json!("@HALF@");
    add(
        "half a surrogate pair in an unread member",
        tp,
        unreadable
            .to_string()
            .replace(r#""@HALF@""#, r#""a\ud800b""#),
        "{}",
        Rejected,
        Rejected,
    );

    let mut deep = incident.clone();
    deep["x-deep"] = json!("@DEEP@");
    add(
        "10,000-deep unknown request field",
        tp,
        deepen(&deep.to_string(), DEEP),
        "{}",
        Mutated,
        Rejected,
    );

    // At serde_json's limit: the object (or the request) nests `depth` levels in all, counted
    // as serde_json counts them (the object itself is level 1), through a field the policy never
    // reads. Only a mutated object past 127 levels is refused; anywhere else the policy's own
    // decision stands. `label-update-by-service-account` is accepted untouched.
    let untouched = example(tp, "label-update-by-service-account");
    for depth in [127, 128, 129, 1000] {
        for (what, request, mutates) in [
            ("stale taint patch", &incident, true),
            ("label update", &untouched, false),
        ] {
            for at in ["object", "request"] {
                let mut deep = request.clone();
                match at {
                    "object" => deep["object"]["x-deep"] = json!("@DEEP@"),
                    _ => deep["x-deep"] = json!("@DEEP@"),
                }
                let name = format!("{what}, {at} {depth} deep");
                let (expect, expect_validating) = match (mutates, at, depth) {
                    (true, "object", 128..) => {
                        too_deep.push(name.clone());
                        (Rejected, Rejected)
                    }
                    (true, ..) => (Mutated, Rejected),
                    (false, ..) => (Accepted, Accepted),
                };
                add(
                    &name,
                    tp,
                    deepen(&deep.to_string(), depth - 1),
                    "{}",
                    expect,
                    expect_validating,
                );
            }
        }
    }

    add(
        "10,000-deep settings",
        tp,
        incident.to_string(),
        &deepen(r#"{"permitted":"@DEEP@"}"#, DEEP),
        Rejected,
        Rejected,
    );

    // Every toleration tolerates a control-plane taint value of its own, so each gets a master twin.
    let mut wide = flannel.clone();
    let per = r#"{"key":"node-role.kubernetes.io/control-plane","operator":"Equal","value":"v-000000","effect":"NoSchedule"},"#.len();
    let tolerations: Vec<Value> = (0..MAX_OBJECT / per)
        .map(|i| json!({"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": format!("v-{i:06}"), "effect": "NoSchedule"}))
        .collect();
    wide["object"]["spec"]["template"]["spec"]["tolerations"] = json!(tolerations);
    add(
        "1.5 MiB of tolerations, each given an alias twin",
        ti,
        wide.to_string(),
        "{}",
        Mutated,
        Accepted,
    );

    // `..` lists the whole object once: linear in its size.
    let mut wide = flannel.clone();
    let per =
        r#"{"key":"example.com/k","operator":"Equal","value":"v-000000","effect":"NoSchedule"},"#
            .len();
    let tolerations: Vec<Value> = (0..MAX_OBJECT / per)
        .map(|i| json!({"key": "example.com/k", "operator": "Equal", "value": format!("v-{i:06}"), "effect": "NoSchedule"}))
        .collect();
    wide["object"]["spec"]["template"]["spec"]["tolerations"] = json!(tolerations);
    add(
        "1.5 MiB of tolerations under a `..` JSONPath query",
        ti,
        wide.to_string(),
        critical,
        Mutated,
        Accepted,
    );

    // Filters nested as deep as settings may nest them (16), over every node: evaluation
    // recurses once per level, within the gatekeeper build's 64 KiB stack.
    let nested_filters = format!(
        "$..[?{}@.name{} || {}@.x{}]",
        "@[?".repeat(7),
        "]".repeat(7),
        "(".repeat(7),
        ")".repeat(7)
    );
    let nested = json!({"rules": [{"name": "nested", "match": {"jsonPath": [{"path": nested_filters}]},
        "tolerations": [{"key": "example.com/k", "operator": "Exists"}]}]});
    add(
        "JSONPath filters nested to the limit over every node",
        ti,
        flannel.to_string(),
        &nested.to_string(),
        Mutated,
        Accepted,
    );

    let mut deep = flannel.clone();
    deep["object"]["spec"]["x-deep"] = json!("@DEEP@");
    let deep_flannel = deepen(&deep.to_string(), DEEP);
    // The validating half injects nothing, so it has no object to hand back.
    too_deep.push("10,000-deep unknown field, rule without JSONPath".into());
    add(
        "10,000-deep unknown field, rule without JSONPath",
        ti,
        deep_flannel.clone(),
        "{}",
        Rejected,
        Accepted,
    );
    add(
        "10,000-deep unknown field, rule with JSONPath",
        ti,
        deep_flannel,
        critical,
        Rejected,
        Rejected,
    );

    // Just inside serde_json's 128 levels: `..` reads all of it.
    let mut deep = flannel.clone();
    deep["object"]["x-deep"] = json!("@DEEP@");
    add(
        "120-deep object under a `..` JSONPath query",
        ti,
        deepen(&deep.to_string(), 120),
        critical,
        Mutated,
        Accepted,
    );

    add(
        "10,000-deep settings",
        ti,
        flannel.to_string(),
        &deepen(r#"{"rules":"@DEEP@"}"#, DEEP),
        Rejected,
        Rejected,
    );
    for case in &mut cases {
        case.mutation_too_deep = too_deep.contains(&case.name);
    }
    assert_eq!(
        cases.iter().filter(|c| c.mutation_too_deep).count(),
        too_deep.len(),
        "a name in too_deep matches no case"
    );
    cases
}
