//! Requests at the limits: Node objects of 1.5 MiB (etcd's request size limit) and JSON nested
//! 10,000 levels deep, each with the verdict every artifact must give. Built as text, since
//! nesting that deep cannot go through a `serde_json::Value`. Shared by `tests/limits.rs` (the
//! waPC artifacts) and the `limit-cases` tool that feeds the JavaScript hosts' tests.

use serde_json::{json, Value};

use crate::examples::Expect::{self, Accepted, Mutated, Rejected};
use crate::repo_root;

/// etcd's default request size limit, the largest object the API server can store.
pub const MAX_OBJECT: usize = 1536 * 1024;
/// The nesting depth of the deep cases, in levels.
pub const DEEP: usize = 10_000;

/// One request at the limits, for one policy, with what each build must answer.
pub struct LimitCase {
    /// The case's name, as reports show it.
    pub name: String,
    /// The policy's name, as its artifacts are named.
    pub policy: &'static str,
    /// A bare AdmissionRequest.
    pub request: String,
    /// The policy settings, as JSON text.
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

/// The cases of one policy, in the order added.
struct Cases {
    policy: &'static str,
    cases: Vec<LimitCase>,
}

impl Cases {
    /// No cases yet of `policy`.
    fn new(policy: &'static str) -> Cases {
        Cases {
            policy,
            cases: Vec::new(),
        }
    }

    /// Adds the case `name`: `request` under empty settings, answered `expect` by the full
    /// policy and `expect_validating` by the validating half. What it gives back sets the rest.
    fn add(
        &mut self,
        name: impl Into<String>,
        request: String,
        [expect, expect_validating]: [Expect; 2],
    ) -> &mut LimitCase {
        self.cases.push(LimitCase {
            name: name.into(),
            policy: self.policy,
            request,
            settings: "{}".to_owned(),
            expect,
            expect_validating,
            mutation_too_deep: false,
        });
        self.cases.last_mut().expect("just pushed")
    }
}

const TP: &str = "taint-preservation";
const TI: &str = "toleration-injection";

/// Toleration-injection's rule matching what carries a `priorityClassName` of
/// `system-node-critical` anywhere (a `..` JSONPath query).
const CRITICAL: &str = r#"{"rules":[{"name":"critical","match":{"jsonPath":[{"path":"$..priorityClassName","in":["system-node-critical"]}]}, "tolerations":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","operator":"Exists","effect":"NoSchedule"}]}]}"#;

/// Every case, taint-preservation's first.
pub fn cases() -> Vec<LimitCase> {
    let incident = example(TP, "incident-1-stale-taint-patch");
    let flannel = example(TI, "flannel-v0.24.4-daemonset");
    let mut tp = Cases::new(TP);
    large_nodes(&mut tp, &incident);
    deep_nodes(&mut tp, &incident);
    at_serde_jsons_limit(&mut tp, &incident);
    tp.add(
        "10,000-deep settings",
        incident.to_string(),
        [Rejected, Rejected],
    )
    .settings = deepen(r#"{"permitted":"@DEEP@"}"#, DEEP);
    let mut ti = Cases::new(TI);
    wide_workloads(&mut ti, &flannel);
    deep_workloads(&mut ti, &flannel);
    tp.cases.extend(ti.cases);
    tp.cases
}

/// Nodes of etcd's limit: grown by images, or by protected taints removed, changed or reordered.
fn large_nodes(tp: &mut Cases, incident: &Value) {
    let mut big = incident.clone();
    pad_images(&mut big["object"], MAX_OBJECT);
    pad_images(&mut big["oldObject"], MAX_OBJECT);
    tp.add(
        "1.5 MiB Node, stale taint patch",
        big.to_string(),
        [Mutated, Rejected],
    );

    let taints = many_taints(MAX_OBJECT);
    let mut removed = incident.clone();
    removed["oldObject"]["spec"]["taints"] = json!(taints);
    tp.add(
        "1.5 MiB of protected taints, all removed",
        removed.to_string(),
        [Mutated, Rejected],
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
    tp.add(
        "1.5 MiB of protected taints, every other value changed",
        changed.to_string(),
        [Mutated, Rejected],
    );

    let mut reordered = removed.clone();
    reordered["object"]["spec"]["taints"] = json!(taints.iter().rev().collect::<Vec<_>>());
    tp.add(
        "1.5 MiB of protected taints, only reordered",
        reordered.to_string(),
        [Accepted, Accepted],
    );
}

/// The stale taint patch with 10,000 levels of nesting (or what policy-server cannot read) in
/// the Node, a taint or the request.
fn deep_nodes(tp: &mut Cases, incident: &Value) {
    // The policy never reads these fields, but the mutated object would carry them back, deeper
    // than engines read (the core's `policy::try_run`): a 400 naming the limit. The
    // validating half rejects the stale taint patch itself.
    let mut deep = incident.clone();
    deep["object"]["spec"]["x-deep"] = json!("@DEEP@");
    tp.add(
        "10,000-deep unknown field in the Node",
        deepen(&deep.to_string(), DEEP),
        [Rejected, Rejected],
    )
    .mutation_too_deep = true;

    let mut deep = incident.clone();
    deep["oldObject"]["spec"]["taints"][0]["x-deep"] = json!("@DEEP@");
    tp.add(
        "10,000-deep unknown field in a taint that is restored",
        deepen(&deep.to_string(), DEEP),
        [Rejected, Rejected],
    )
    .mutation_too_deep = true;

    let mut deep = incident.clone();
    deep["object"]["spec"]["taints"] = json!("@DEEP@");
    tp.add(
        "10,000-deep spec.taints",
        deepen(&deep.to_string(), DEEP),
        [Rejected, Rejected],
    );

    // What policy-server cannot read (it decodes every string of a request), in a member no
    // policy reads: refused as the engine refuses it.
    let mut unreadable = incident.clone();
    unreadable["object"]["metadata"]["x-half"] = json!("@HALF@");
    tp.add(
        "half a surrogate pair in an unread member",
        unreadable
            .to_string()
            .replace(r#""@HALF@""#, r#""a\ud800b""#),
        [Rejected, Rejected],
    );

    let mut deep = incident.clone();
    deep["x-deep"] = json!("@DEEP@");
    tp.add(
        "10,000-deep unknown request field",
        deepen(&deep.to_string(), DEEP),
        [Mutated, Rejected],
    );
}

/// At serde_json's limit: the object (or the request) nests `depth` levels in all, counted
/// as serde_json counts them (the object itself is level 1), through a field the policy never
/// reads. Only a mutated object past 127 levels is refused; anywhere else the policy's own
/// decision stands. `label-update-by-service-account` is accepted untouched.
fn at_serde_jsons_limit(tp: &mut Cases, incident: &Value) {
    let untouched = example(TP, "label-update-by-service-account");
    for depth in [127, 128, 129, 1000] {
        for (what, request, mutates) in [
            ("stale taint patch", incident, true),
            ("label update", &untouched, false),
        ] {
            for at in ["object", "request"] {
                let mut deep = request.clone();
                match at {
                    "object" => deep["object"]["x-deep"] = json!("@DEEP@"),
                    _ => deep["x-deep"] = json!("@DEEP@"),
                }
                let (expect, too_deep) = match (mutates, at, depth) {
                    (true, "object", 128..) => ([Rejected, Rejected], true),
                    (true, ..) => ([Mutated, Rejected], false),
                    (false, ..) => ([Accepted, Accepted], false),
                };
                tp.add(
                    format!("{what}, {at} {depth} deep"),
                    deepen(&deep.to_string(), depth - 1),
                    expect,
                )
                .mutation_too_deep = too_deep;
            }
        }
    }
}

/// 1.5 MiB of tolerations given alias twins or searched by a `..` query, and JSONPath filters
/// nested to the limit.
fn wide_workloads(ti: &mut Cases, flannel: &Value) {
    // Every toleration tolerates a control-plane taint value of its own, so each gets a master twin.
    let mut wide = flannel.clone();
    let per = r#"{"key":"node-role.kubernetes.io/control-plane","operator":"Equal","value":"v-000000","effect":"NoSchedule"},"#.len();
    let tolerations: Vec<Value> = (0..MAX_OBJECT / per)
        .map(|i| json!({"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": format!("v-{i:06}"), "effect": "NoSchedule"}))
        .collect();
    wide["object"]["spec"]["template"]["spec"]["tolerations"] = json!(tolerations);
    ti.add(
        "1.5 MiB of tolerations, each given an alias twin",
        wide.to_string(),
        [Mutated, Accepted],
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
    ti.add(
        "1.5 MiB of tolerations under a `..` JSONPath query",
        wide.to_string(),
        [Mutated, Accepted],
    )
    .settings = CRITICAL.to_owned();

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
    ti.add(
        "JSONPath filters nested to the limit over every node",
        flannel.to_string(),
        [Mutated, Accepted],
    )
    .settings = nested.to_string();
}

/// The DaemonSet and the settings nested deep: past serde_json's limit, or just inside it under
/// a `..` query.
fn deep_workloads(ti: &mut Cases, flannel: &Value) {
    let mut deep = flannel.clone();
    deep["object"]["spec"]["x-deep"] = json!("@DEEP@");
    let deep_flannel = deepen(&deep.to_string(), DEEP);
    // The validating half injects nothing, so it has no object to hand back.
    ti.add(
        "10,000-deep unknown field, rule without JSONPath",
        deep_flannel.clone(),
        [Rejected, Accepted],
    )
    .mutation_too_deep = true;
    ti.add(
        "10,000-deep unknown field, rule with JSONPath",
        deep_flannel,
        [Rejected, Rejected],
    )
    .settings = CRITICAL.to_owned();

    // Just inside serde_json's 128 levels: `..` reads all of it.
    let mut deep = flannel.clone();
    deep["object"]["x-deep"] = json!("@DEEP@");
    ti.add(
        "120-deep object under a `..` JSONPath query",
        deepen(&deep.to_string(), 120),
        [Mutated, Accepted],
    )
    .settings = CRITICAL.to_owned();

    ti.add(
        "10,000-deep settings",
        flannel.to_string(),
        [Rejected, Rejected],
    )
    .settings = deepen(r#"{"rules":"@DEEP@"}"#, DEEP);
}
