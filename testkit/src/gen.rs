//! Structurally valid admission requests and settings with hostile content, drawn from
//! `arbitrary` bytes: the fuzzer steers the bytes, the property tests draw them at random.
//!
//! Values come mostly from small pools of near-misses (a key with another case or a trailing
//! space, `system:masters` as a username, the same key with another effect) so that the
//! interesting comparisons happen often, with an arbitrary string now and then.

use arbitrary::{Result, Unstructured};
use serde_json::{json, Map, Value};

use taint_preservation::settings::{
    RecordFormat, DEFAULT_ONE_SHOT_RECORD_ANNOTATION, DEFAULT_TAINT_OWNERS_ANNOTATION,
};

const TAINT_KEYS: &[&str] = &[
    "example.com/dedicated",
    "Example.com/dedicated",
    "example.com/dedicated ",
    " example.com/dedicated",
    "nvidia.com/gpu",
    "dedicated",
    "node.kubernetes.io/not-ready",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "karpenter.sh/unregistered",
    "ebs.csi.aws.com/agent-not-ready",
    "node.cilium.io/agent-not-ready",
    "readiness.k8s.io/network-ready",
    "weave.works/kured-node-reboot",
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
    "",
    "ü/ß\"\\",
];
const EFFECTS: &[&str] = &[
    "NoSchedule",
    "PreferNoSchedule",
    "NoExecute",
    "",
    "noschedule",
];
const VALUES: &[&str] = &["", "gpu", "true", "a b"];
const USERS: &[&str] = &[
    "alice@example.com",
    "system:masters",
    "system:serviceaccount:kube-system:node-controller",
    "system:serviceaccount:gpu-operator:gpu-operator",
    "system:serviceaccount:alice:alice",
    "system:serviceaccount:broken",
    "system:node:worker-1",
    "system:kube-controller-manager",
    "kubernetes-admin",
    "admin",
    "system:serviceaccount:node-feature-discovery:nfd-master",
    "system:serviceaccount:node-feature-discovery:nfd-node-feature-discovery",
    "system:serviceaccount:nfd:nfd-node-feature-discovery",
    "",
];
const GROUPS: &[&str] = &[
    "system:masters",
    "system:nodes",
    "system:authenticated",
    "system:serviceaccounts",
    "oidc:platform-team",
];
const KEY_GLOBS: &[&str] = &[
    "*",
    "example.com/*",
    "nvidia.com/gpu",
    "node-role.kubernetes.io/*",
    "dedicated",
    "node.kubernetes.io/*",
    "*/dedicated",
    "[a-z]*",
];
const NAMESPACES: &[&str] = &["kube-system", "tenant-a", "gpu-1", "", "kube-flannel"];
const LABELS: &[(&str, &str)] = &[
    ("app", "web"),
    ("microk8s.hostpath.io/managed-by", "hostpath"),
    ("tier", "gpu"),
    ("team", "platform"),
];

/// A generated request with its settings and, for a Pod, the Namespace the cluster answers
/// with (`None`: the cluster cannot be asked), all JSON text.
pub struct Case {
    /// The AdmissionRequest.
    pub request: String,
    /// The settings of the policy under test.
    pub settings: String,
    /// The Pod's Namespace object, as the cluster answers it; `None`: the cluster cannot be asked.
    pub namespace: Option<String>,
}

/// The case as a failure shows it.
impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request: {}\nsettings: {}", self.request, self.settings)?;
        match &self.namespace {
            Some(namespace) => write!(f, "\nnamespace: {namespace}"),
            None => Ok(()),
        }
    }
}

fn pick<'a, T>(u: &mut Unstructured<'_>, pool: &'a [T]) -> Result<&'a T> {
    u.choose(pool)
}

/// A pool value most of the time, an arbitrary string otherwise.
fn string(u: &mut Unstructured<'_>, pool: &[&str]) -> Result<String> {
    if u.ratio(1, 8)? {
        Ok(u.arbitrary::<String>()?)
    } else {
        Ok(pick(u, pool)?.to_string())
    }
}

fn some<T>(
    u: &mut Unstructured<'_>,
    f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Option<T>> {
    if u.arbitrary()? {
        f(u).map(Some)
    } else {
        Ok(None)
    }
}

/// Fields the policies do not know, which must survive a mutation untouched.
fn unknown(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 => json!(null),
        1 => json!({"z": [1, {"y": "x"}], "a": 1.5}),
        2 => json!(u.arbitrary::<String>()?),
        _ => json!([[[{"deep": true}]]]),
    })
}

fn maybe_unknown(u: &mut Unstructured<'_>, object: &mut Map<String, Value>) -> Result<()> {
    if u.ratio(1, 4)? {
        object.insert("x-unknown".into(), unknown(u)?);
    }
    Ok(())
}

fn taint(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut t = Map::new();
    t.insert("key".into(), json!(string(u, TAINT_KEYS)?));
    if let Some(v) = some(u, |u| string(u, VALUES))? {
        t.insert("value".into(), json!(v));
    }
    t.insert("effect".into(), json!(string(u, EFFECTS)?));
    if u.ratio(1, 3)? {
        t.insert("timeAdded".into(), json!("2025-04-10T08:00:03Z"));
    }
    maybe_unknown(u, &mut t)?;
    Ok(Value::Object(t))
}

/// The new taints: the old ones edited the ways writers edit them.
fn edited_taints(u: &mut Unstructured<'_>, old: &[Value]) -> Result<Vec<Value>> {
    let mut new = old.to_vec();
    for _ in 0..u.int_in_range(0..=4)? {
        match u.int_in_range(0..=5)? {
            0 if !new.is_empty() => {
                let i = u.choose_index(new.len())?;
                new.remove(i);
            }
            1 if !new.is_empty() => {
                let i = u.choose_index(new.len())?;
                new[i]["value"] = json!(string(u, VALUES)?);
            }
            2 if new.len() > 1 => {
                let (i, j) = (u.choose_index(new.len())?, u.choose_index(new.len())?);
                new.swap(i, j);
            }
            3 if !new.is_empty() => {
                let i = u.choose_index(new.len())?;
                new.push(new[i].clone());
            }
            4 => new.clear(),
            _ => new.push(taint(u)?),
        }
    }
    Ok(new)
}

fn user_info(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut groups = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        groups.push(json!(string(u, GROUPS)?));
    }
    Ok(json!({"username": string(u, USERS)?, "groups": groups, "uid": "u-1"}))
}

/// `null`, absent, or `value`: the three ways a member can be missing or present.
fn place(
    u: &mut Unstructured<'_>,
    object: &mut Map<String, Value>,
    key: &str,
    value: Value,
) -> Result<()> {
    match u.int_in_range(0..=5)? {
        0 => {}
        1 => {
            object.insert(key.into(), Value::Null);
        }
        _ => {
            object.insert(key.into(), value);
        }
    }
    Ok(())
}

fn node(u: &mut Unstructured<'_>, taints: Vec<Value>, owner_key: &str) -> Result<Value> {
    let mut spec = Map::new();
    place(u, &mut spec, "taints", json!(taints))?;
    let cordoned = u.arbitrary::<bool>()?;
    place(u, &mut spec, "unschedulable", json!(cordoned))?;
    spec.insert("podCIDR".into(), json!("10.244.1.0/24"));
    maybe_unknown(u, &mut spec)?;
    let mut annotations = Map::new();
    if u.arbitrary()? {
        annotations.insert(owner_key.into(), json!(string(u, USERS)?));
    }
    // The one-shot removal record: well-formed, or anything a person may have typed into it.
    if u.arbitrary()? {
        let record = pick(
            u,
            &[
                "ebs.csi.aws.com/agent-not-ready:NoExecute",
                "example.com/dedicated:NoSchedule,",
                " , :,x",
            ],
        )?;
        annotations.insert(DEFAULT_ONE_SHOT_RECORD_ANNOTATION.into(), json!(record));
    }
    if u.arbitrary()? {
        annotations.insert(
            DEFAULT_TAINT_OWNERS_ANNOTATION.into(),
            json!(owner_record(u)?),
        );
    }
    for (annotation, format) in controller_records() {
        if u.ratio(1, 3)? {
            annotations.insert(annotation, json!(controller_record(u, format)?));
        }
    }
    annotations.insert("node.alpha.kubernetes.io/ttl".into(), json!("0"));
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!("worker-1"));
    place(u, &mut metadata, "annotations", Value::Object(annotations))?;
    maybe_unknown(u, &mut metadata)?;
    let mut object = Map::new();
    object.insert("apiVersion".into(), json!("v1"));
    object.insert("kind".into(), json!("Node"));
    place(u, &mut object, "metadata", Value::Object(metadata))?;
    place(u, &mut object, "spec", Value::Object(spec))?;
    object.insert("status".into(), json!({"capacity": {"cpu": "4"}}));
    Ok(Value::Object(object))
}

/// `new`'s annotations given `old`'s records (present or absent) where both have annotations.
pub(crate) fn keep_records(old: &Value, new: &mut Value) {
    let controllers = controller_records();
    let records = [
        DEFAULT_TAINT_OWNERS_ANNOTATION,
        DEFAULT_ONE_SHOT_RECORD_ANNOTATION,
    ]
    .into_iter()
    .chain(controllers.iter().map(|(key, _)| key.as_str()));
    keep_annotations(old, new, records);
}

/// `new`'s annotations `keys` as `old` holds them (present or absent) where both have
/// annotations.
pub(crate) fn keep_annotations<'k>(
    old: &Value,
    new: &mut Value,
    keys: impl IntoIterator<Item = &'k str>,
) {
    let (Some(old), Some(new)) = (
        old.pointer("/metadata/annotations")
            .and_then(Value::as_object),
        new.pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut),
    ) else {
        return;
    };
    for key in keys {
        match old.get(key) {
            Some(value) => new.insert(key.to_owned(), value.clone()),
            None => new.remove(key),
        };
    }
}

/// A forgery that looks valid: `node`'s owner record names `requester` the owner of every taint
/// the node carries, and its cordon owner record (`owner_key`) names `requester` too.
pub(crate) fn deed(node: &mut Value, requester: &str, owner_key: &str) {
    let entries: Map<String, Value> = (node.pointer("/spec/taints").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some((
                format!("{}:{}", t["key"].as_str()?, t["effect"].as_str()?),
                json!(requester),
            ))
        })
        .collect();
    let Some(metadata) = node.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(
            DEFAULT_TAINT_OWNERS_ANNOTATION.to_owned(),
            json!(Value::Object(entries).to_string()),
        );
        annotations.insert(owner_key.to_owned(), json!(requester));
    }
}

/// The controllers' records of their own taints, with how each lists them: taint-preservation's
/// default `controllerRecords`.
fn controller_records() -> Vec<(String, RecordFormat)> {
    let settings = taint_preservation::Settings::default();
    (settings.controller_records.iter())
        .map(|r| (r.annotation.as_str().to_owned(), r.format))
        .collect()
}

/// A controller's record: well-formed listing generated taints (which the Node may or may not
/// carry), or anything a forger or a broken writer puts there.
fn controller_record(u: &mut Unstructured<'_>, format: RecordFormat) -> Result<String> {
    let mut listed = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let key = string(u, TAINT_KEYS)?;
        listed.push(match format {
            RecordFormat::Keys => json!(key).to_string(),
            RecordFormat::Taints => match string(u, VALUES)?.as_str() {
                "" => format!("{key}:{}", pick(u, EFFECTS)?),
                value => format!("{key}={value}:{}", pick(u, EFFECTS)?),
            },
        });
    }
    Ok(match (u.int_in_range(0..=7)?, format) {
        (0, _) => pick(u, &["", ",", "::", "=:", "[", "[1]", "null", "{}", "a,,b:"])?.to_string(),
        (1, _) => u.arbitrary::<String>()?,
        (_, RecordFormat::Keys) => format!("[{}]", listed.join(",")),
        (_, RecordFormat::Taints) => listed.join(","),
    })
}

/// The taint owner record: live entries naming generated users, removal entries (kept by their
/// owner, or forged for another), malformed entries and values, and a record near the 64 KiB
/// the policy lets it grow to.
fn owner_record(u: &mut Unstructured<'_>) -> Result<String> {
    let mut record = Map::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let entry = format!("{}:{}", string(u, TAINT_KEYS)?, pick(u, EFFECTS)?);
        let owner = string(u, USERS)?;
        let claim = match u.int_in_range(0..=5)? {
            0 => json!({"owner": owner, "removed": true}),
            1 => json!({"owner": owner, "removed": u.arbitrary::<bool>()?, "by": "forger"}),
            2 => json!(pick(
                u,
                &[
                    json!(7),
                    json!(null),
                    json!([owner]),
                    json!({"removed": true})
                ]
            )?),
            _ => json!(owner),
        };
        record.insert(entry, claim);
    }
    if u.ratio(1, 16)? {
        // Filler entries up to about the size bound, under or just over it.
        let target = 64 * 1024 + u.int_in_range(0..=256)? - 128;
        let mut length = Value::Object(record.clone()).to_string().len();
        for i in 0.. {
            let entry = format!("example.com/filler-{i:05}:NoSchedule");
            // `"entry":"alice@example.com",`
            length += entry.len() + 23;
            if length > target {
                break;
            }
            record.insert(entry, json!("alice@example.com"));
        }
    }
    Ok(match u.int_in_range(0..=9)? {
        0 => pick(u, &["{not json", "[]", "null", "\"\"", "{} x"])?.to_string(),
        _ => Value::Object(record).to_string(),
    })
}

fn principal_list(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut list = Map::new();
    if let Some(p) = some(u, |u| u.arbitrary::<bool>())? {
        list.insert("people".into(), json!(p));
    }
    if u.arbitrary()? {
        list.insert(
            "users".into(),
            json!([pick(u, &["system:masters", "alice*", "system:node:*"])?]),
        );
    }
    if u.arbitrary()? {
        list.insert("groups".into(), json!([pick(u, GROUPS)?]));
    }
    if u.arbitrary()? {
        list.insert(
            "serviceAccounts".into(),
            json!([pick(
                u,
                &["gpu-operator/*", "kube-system/*", "alice/alice"]
            )?]),
        );
    }
    Ok(Value::Object(list))
}

/// The generated settings' seal key: 32 bytes, base64.
const SEAL_SECRET: &str = "ZnV6ei1zZWFsLWtleS1vZi10aGlydHktdHdvLWJ5dGU=";

fn taint_preservation_settings(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut s = Map::new();
    if let Some(mode) = some(u, |u| pick(u, &["restore", "deny"]).copied())? {
        s.insert("mode".into(), json!(mode));
    }
    if u.arbitrary()? {
        let mut rules = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            let mut rule = json!({"key": pick(u, KEY_GLOBS)?});
            if u.ratio(1, 3)? {
                rule["effects"] = json!([pick(u, &EFFECTS[..3])?]);
            }
            if u.ratio(1, 3)? {
                rule["permitted"] = principal_list(u)?;
            }
            rules.push(rule);
        }
        s.insert("protectedTaints".into(), json!(rules));
    }
    if u.ratio(1, 4)? {
        s.insert("unprotectedTaints".into(), json!([pick(u, KEY_GLOBS)?]));
    }
    if u.ratio(1, 4)? {
        let key = pick(u, KEY_GLOBS)?;
        let rule = if u.arbitrary()? {
            json!(key)
        } else {
            json!({"key": key, "onlyAtRegistration": u.arbitrary::<bool>()?})
        };
        s.insert("oneShotTaints".into(), json!([rule]));
    }
    if u.arbitrary()? {
        s.insert("permitted".into(), principal_list(u)?);
    }
    if u.ratio(1, 4)? {
        let unsealed = *pick(u, &["count", "refuse"])?;
        s.insert(
            "recordSeal".into(),
            json!({"keys": [{"id": "fuzz", "secret": SEAL_SECRET}], "unsealed": unsealed}),
        );
    }
    if u.ratio(1, 4)? {
        s.insert(
            "cordon".into(),
            json!({"enabled": u.arbitrary::<bool>()?, "ownerAnnotation": pick(u, &["taintguard.io/cordoned-by", "example.com/owner"])?}),
        );
    }
    Ok(Value::Object(s))
}

/// A taint-preservation case.
pub fn taint_preservation(u: &mut Unstructured<'_>) -> Result<Case> {
    let settings = taint_preservation_settings(u)?;
    let owner = settings
        .pointer("/cordon/ownerAnnotation")
        .and_then(Value::as_str)
        .unwrap_or("taintguard.io/cordoned-by")
        .to_owned();
    let mut old_taints = Vec::new();
    for _ in 0..u.int_in_range(0..=5)? {
        old_taints.push(taint(u)?);
    }
    let new_taints = edited_taints(u, &old_taints)?;
    let operation = *pick(u, &["UPDATE", "UPDATE", "UPDATE", "CREATE", "DELETE"])?;
    let mut request = Map::new();
    request.insert("uid".into(), json!("r-1"));
    request.insert(
        "kind".into(),
        json!({"group": "", "version": "v1", "kind": "Node"}),
    );
    if u.ratio(1, 6)? {
        request.insert("subResource".into(), json!("status"));
    }
    request.insert("name".into(), json!("worker-1"));
    request.insert("operation".into(), json!(operation));
    request.insert("userInfo".into(), user_info(u)?);
    let status = request.contains_key("subResource");
    let mut object = node(u, new_taints, &owner)?;
    if operation != "CREATE" && !u.ratio(1, 20)? {
        let old = node(u, old_taints, &owner)?;
        // Most writers leave the records as they read them; the rest write their own. A status
        // write is mostly a forgery: the stored Node with well-formed records of its own.
        // Where records are sealed, the stored Node mostly carries the seal over its records.
        let old = match settings.get("recordSeal") {
            Some(_) if u.ratio(3, 4)? => sealed(old, &settings),
            _ => old,
        };
        if status && u.arbitrary()? {
            let mut forged = old.clone();
            keep_records(&object, &mut forged);
            if u.arbitrary()? {
                let requester = request["userInfo"]["username"].as_str().unwrap_or_default();
                deed(&mut forged, requester, &owner);
            }
            object = forged;
        } else if u.arbitrary()? {
            keep_records(&old, &mut object);
        }
        request.insert("oldObject".into(), old);
    }
    request.insert("object".into(), object);
    Ok(Case {
        request: write(u, &Value::Object(request))?,
        settings: write(u, &settings)?,
        namespace: None,
    })
}

/// `node` with the seal `settings` write over its records, as the policy stores it.
fn sealed(mut node: Value, settings: &Value) -> Value {
    let Ok(settings) =
        taintguard::settings::read::<taint_preservation::Settings>(&settings.to_string())
    else {
        return node;
    };
    let Ok(Some(seal)) = taint_preservation::stored::seal(&node.to_string(), &settings) else {
        return node;
    };
    let key = settings.record_seal.annotation.as_str().to_owned();
    if let Some(annotations) =
        (node.pointer_mut("/metadata/annotations")).and_then(Value::as_object_mut)
    {
        annotations.insert(key, json!(seal));
    }
    node
}

fn toleration(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut t = Map::new();
    if let Some(key) = some(u, |u| string(u, TAINT_KEYS))? {
        t.insert("key".into(), json!(key));
    }
    if let Some(op) = some(u, |u| pick(u, &["Exists", "Equal", "exists"]).copied())? {
        t.insert("operator".into(), json!(op));
    }
    if let Some(v) = some(u, |u| string(u, VALUES))? {
        t.insert("value".into(), json!(v));
    }
    if let Some(e) = some(u, |u| string(u, EFFECTS))? {
        t.insert("effect".into(), json!(e));
    }
    if u.ratio(1, 5)? {
        t.insert("tolerationSeconds".into(), json!(u.int_in_range(0..=600)?));
    }
    Ok(Value::Object(t))
}

/// A toleration as settings accept it (the API server's rules hold).
fn settings_toleration(u: &mut Unstructured<'_>) -> Result<Value> {
    let key = *pick(
        u,
        &[
            "nvidia.com/gpu",
            "dedicated",
            "node-role.kubernetes.io/control-plane",
            "node-role.kubernetes.io/master",
            "",
        ],
    )?;
    let effect = *pick(u, EFFECTS.get(..4).unwrap_or(EFFECTS))?;
    let mut t = if key.is_empty() || u.arbitrary()? {
        json!({"key": key, "operator": "Exists"})
    } else {
        json!({"key": key, "operator": "Equal", "value": pick(u, &VALUES[..3])?})
    };
    if !effect.is_empty() {
        t["effect"] = json!(effect);
    }
    if effect == "NoExecute" && u.arbitrary()? {
        t["tolerationSeconds"] = json!(u.int_in_range(0..=600)?);
    }
    Ok(t)
}

fn toleration_injection_settings(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut s = Map::new();
    let mut rules = Vec::new();
    for i in 0..u.int_in_range(0..=3)? {
        rules.push(injection_rule(u, i)?);
    }
    s.insert("rules".into(), json!(rules));
    match u.int_in_range(0..=3)? {
        0 => {
            s.insert("aliases".into(), json!({"enabled": false}));
        }
        1 => {
            s.insert("aliases".into(), json!({"groups": [["dedicated", "example.com/dedicated", "Example.com/dedicated"], ["node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"]]}));
        }
        _ => {}
    }
    if u.ratio(1, 3)? {
        s.insert(
            "podTolerationRestriction".into(),
            pod_toleration_restriction(u)?,
        );
    }
    if u.arbitrary()? {
        s.insert(
            "restrictions".into(),
            json!([{"name": "dedicated-nodes", "taints": [pick(u, KEY_GLOBS)?],
                    "allowedNamespaces": ["kube-system", "gpu-*"],
                    "allowedPrincipals": principal_list(u)?}]),
        );
    }
    Ok(Value::Object(s))
}

/// The injection rule `rule-{i}`: a match on any of what rules match by, and one to three
/// tolerations.
fn injection_rule(u: &mut Unstructured<'_>, i: i32) -> Result<Value> {
    let m = rule_match(u)?;
    let mut tolerations = Vec::new();
    for _ in 0..u.int_in_range(1..=3)? {
        tolerations.push(settings_toleration(u)?);
    }
    Ok(json!({"name": format!("rule-{i}"), "match": m, "tolerations": tolerations}))
}

/// A rule's `match`: each of kinds, namespaces, principals, a label selector, names and a
/// JSONPath condition now and then.
fn rule_match(u: &mut Unstructured<'_>) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    if u.ratio(1, 3)? {
        m.insert(
            "kinds".into(),
            json!([pick(u, &["Pod", "Deployment", "DaemonSet", "CronJob"])?]),
        );
    }
    if u.ratio(1, 3)? {
        m.insert(
            "namespaces".into(),
            json!([pick(u, &["kube-system", "tenant-*", "gpu-*"])?]),
        );
    }
    if u.ratio(1, 3)? {
        m.insert("principals".into(), principal_list(u)?);
    }
    if u.ratio(1, 3)? {
        let (k, v) = *pick(u, LABELS)?;
        m.insert("labelSelector".into(), json!({"matchLabels": {k: v}}));
    }
    if u.ratio(1, 4)? {
        m.insert(
            "names".into(),
            json!([pick(u, &["hostpath-*", "web", "*"])?]),
        );
    }
    if u.ratio(1, 3)? {
        m.insert("jsonPath".into(), json!([json_path_condition(u)?]));
    }
    Ok(m)
}

/// A rule's JSONPath condition, on paths away from the tolerations: a condition on what the
/// policy adds would make a rule stop matching its own output, which settings cannot be checked
/// for.
fn json_path_condition(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=5)? {
        0 => json!({"path": "$..priorityClassName", "in": ["system-node-critical"]}),
        1 => json!({"path": "$.metadata.labels.app", "exists": false}),
        2 => json!({"path": "$..x-unknown..deep", "equals": true}),
        3 => {
            json!({"path": "$..[?@['x-unknown'] || length(@.name) > 2 && count(@.*) != 1].name", "matches": "*"})
        }
        4 => {
            json!({"path": "$.metadata['labels', 'annotations'][*]", "in": ["x", 1, null]})
        }
        _ => json!({"path": "$.metadata.name", "matches": "web*"}),
    })
}

/// `podTolerationRestriction` enabled, with now and then a default list, a whitelist and each
/// of its switches.
fn pod_toleration_restriction(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut ptr = json!({"enabled": true});
    for field in ["default", "whitelist"] {
        if u.ratio(1, 3)? {
            ptr[field] = json!([settings_toleration(u)?]);
        }
    }
    for field in ["implicitTolerations", "guardAnnotations"] {
        if u.ratio(1, 4)? {
            ptr[field] = json!(u.arbitrary::<bool>()?);
        }
    }
    Ok(ptr)
}

fn pod_spec(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut spec = Map::new();
    spec.insert(
        "containers".into(),
        json!([{"name": "c", "image": "busybox"}]),
    );
    let mut tolerations = Vec::new();
    for _ in 0..u.int_in_range(0..=4)? {
        tolerations.push(toleration(u)?);
    }
    place(u, &mut spec, "tolerations", json!(tolerations))?;
    if u.ratio(1, 3)? {
        spec.insert("priorityClassName".into(), json!("system-node-critical"));
    }
    maybe_unknown(u, &mut spec)?;
    Ok(Value::Object(spec))
}

/// The PodTolerationRestriction plugin's two annotations.
const PLUGIN_ANNOTATIONS: [&str; 2] = [
    "scheduler.alpha.kubernetes.io/defaultTolerations",
    "scheduler.alpha.kubernetes.io/tolerationsWhitelist",
];

/// The Namespace `name` as the cluster answers it: each of the plugin's annotations absent,
/// a list as Kubernetes writes one (now and then with the members Go's `json.Marshal` writes for
/// the internal type), or [`toleration_annotation`]'s; other annotations beside them.
fn namespace_object(u: &mut Unstructured<'_>, name: &str) -> Result<Value> {
    let mut annotations = Map::new();
    for key in PLUGIN_ANNOTATIONS {
        let value = match u.int_in_range(0..=3)? {
            0 => continue,
            1 => {
                let mut list = Vec::new();
                for _ in 0..u.int_in_range(0..=2)? {
                    list.push(settings_toleration(u)?);
                }
                let text = Value::from(list).to_string();
                if u.ratio(1, 4)? {
                    capitalised(&text)
                } else {
                    text
                }
            }
            _ => toleration_annotation(u)?,
        };
        annotations.insert(key.into(), json!(value));
    }
    if u.arbitrary()? {
        annotations.insert("team".into(), json!(string(u, VALUES)?));
    }
    Ok(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "annotations": annotations}}))
}

/// A toleration list's text with its members named as Go marshals the internal type.
fn capitalised(list: &str) -> String {
    ["key", "operator", "value", "effect", "tolerationSeconds"]
        .iter()
        .fold(list.to_owned(), |text, field| {
            let mut upper = field.to_string();
            upper[..1].make_ascii_uppercase();
            text.replace(&format!("\"{field}\":"), &format!("\"{upper}\":"))
        })
}

/// A toleration-injection case, with the Namespace of the request most of the time.
pub fn toleration_injection(u: &mut Unstructured<'_>) -> Result<Case> {
    let settings = toleration_injection_settings(u)?;
    let Workload {
        kind,
        group,
        namespace,
        object,
    } = workload(u)?;
    let operation = *pick(u, &["CREATE", "CREATE", "UPDATE", "DELETE"])?;
    let mut request = json!({
        "uid": "r-2",
        "kind": {"group": group, "version": "v1", "kind": kind},
        "namespace": namespace,
        "operation": operation,
        "userInfo": user_info(u)?,
        "object": object,
    });
    if operation == "UPDATE" {
        request["oldObject"] = object;
    }
    let namespace = match u.ratio(3, 4)? {
        true => {
            let object = namespace_object(u, &namespace)?;
            Some(write(u, &object)?)
        }
        false => None,
    };
    Ok(Case {
        request: write(u, &request)?,
        settings: write(u, &settings)?,
        namespace,
    })
}

/// A generated workload and what its request says of it.
struct Workload {
    /// Its kind: a Pod or a kind with a Pod template (now and then in the wrong group).
    kind: &'static str,
    /// Its API group, empty for the core group.
    group: &'static str,
    /// Its namespace.
    namespace: String,
    /// The object.
    object: Value,
}

/// A Pod or a workload with a Pod template, in a generated namespace.
fn workload(u: &mut Unstructured<'_>) -> Result<Workload> {
    let (kind, group) = *pick(
        u,
        &[
            ("Pod", ""),
            ("Deployment", "apps"),
            ("DaemonSet", "apps"),
            ("CronJob", "batch"),
            ("Job", "batch"),
            ("Deployment", ""),
        ],
    )?;
    let mut body = pod_spec(u)?;
    if kind != "Pod" {
        body = json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": body}});
        if kind == "CronJob" {
            body = json!({"schedule": "* * * * *", "jobTemplate": {"spec": body}});
        }
    }
    let namespace = string(u, NAMESPACES)?;
    let metadata = workload_metadata(u, &namespace)?;
    let mut object = Map::new();
    object.insert(
        "apiVersion".into(),
        json!(if group.is_empty() {
            "v1".to_owned()
        } else {
            format!("{group}/v1")
        }),
    );
    object.insert("kind".into(), json!(kind));
    object.insert("metadata".into(), Value::Object(metadata));
    place(u, &mut object, "spec", body)?;
    maybe_unknown(u, &mut object)?;
    Ok(Workload {
        kind,
        group,
        namespace,
        object: Value::Object(object),
    })
}

/// A workload's metadata in `namespace`: a name or a `generateName`, and labels present, absent
/// or `null`.
fn workload_metadata(u: &mut Unstructured<'_>, namespace: &str) -> Result<Map<String, Value>> {
    let mut labels = Map::new();
    for _ in 0..u.int_in_range(0..=2)? {
        let (k, v) = *pick(u, LABELS)?;
        labels.insert(k.into(), json!(v));
    }
    let mut metadata = Map::new();
    if u.arbitrary()? {
        metadata.insert(
            "name".into(),
            json!(pick(u, &["web", "hostpath-provisioner-n1-abc", ""])?),
        );
    } else {
        metadata.insert("generateName".into(), json!("hostpath-provisioner-n1-"));
    }
    metadata.insert("namespace".into(), json!(namespace));
    place(u, &mut metadata, "labels", Value::Object(labels))?;
    Ok(metadata)
}

/// Member names of a toleration as a Go program may write them: the fields, near-misses, and
/// unknown names; [`member_name`] changes their case and letters.
const TOLERATION_NAMES: &[&str] = &[
    "key",
    "operator",
    "value",
    "effect",
    "tolerationSeconds",
    "other",
    "keys",
    "ke",
    "toleration_seconds",
    "",
];

/// Pieces of a string literal's text: the values Kubernetes writes, escapes, both halves of a
/// surrogate pair alone and together, the letters Go folds to ASCII ones (`K`, `ſ`), an escaped
/// backslash before what looks like an escape.
const STRING_PIECES: &[&str] = &[
    "NoSchedule",
    "NoExecute",
    "Exists",
    "Equal",
    "node.kubernetes.io/not-ready",
    "dedicated",
    "a",
    "é",
    "\\u00e9",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\ud83d",
    "\\ud83d\\u0041",
    "\\n",
    "\\/",
    "\\\"",
    "\\\\ud800",
    "\u{212a}",
    "\u{17f}",
    "\\u212a",
    "\\u0000",
];

/// Numbers at the edges of what Go reads into an `int64`, and a float beyond f64's range.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "60",
    "-5",
    "300",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "1.0",
    "1e2",
    "1E+2",
    "0.5",
    "1e400",
    "12345678901234567890123",
];

/// Whitespace between tokens, mostly none.
fn space(u: &mut Unstructured<'_>) -> Result<&'static str> {
    Ok(if u.ratio(4, 5)? {
        ""
    } else {
        pick(u, &[" ", "\n", "\t", "\r\n  "])?
    })
}

/// A toleration's member name as a JSON literal, one Go may or may not take for a field: cases
/// changed, `k` and `s` written as the Kelvin sign and the long s, letters escaped, now and then
/// half a surrogate pair.
fn member_name(u: &mut Unstructured<'_>) -> Result<String> {
    let mut literal = String::from("\"");
    for c in pick(u, TOLERATION_NAMES)?.chars() {
        let c = if u.ratio(1, 5)? {
            c.to_ascii_uppercase()
        } else {
            c
        };
        match c {
            'k' | 'K' if u.ratio(1, 7)? => literal.push_str(pick(u, &["\u{212a}", "\\u212a"])?),
            's' | 'S' if u.ratio(1, 7)? => literal.push_str(pick(u, &["\u{17f}", "\\u017f"])?),
            _ if u.ratio(1, 20)? => literal.push_str(&format!("\\u{:04x}", c as u32)),
            _ => literal.push(c),
        }
        if u.ratio(1, 100)? {
            literal.push_str(pick(u, &["\\ud800", "\\udfff"])?);
        }
    }
    literal.push('"');
    Ok(literal)
}

fn string_literal(u: &mut Unstructured<'_>) -> Result<String> {
    let mut literal = String::from("\"");
    for _ in 0..u.int_in_range(0..=3)? {
        literal.push_str(pick(u, STRING_PIECES)?);
    }
    if u.ratio(1, 100)? {
        literal.push('\u{1}');
    }
    literal.push('"');
    Ok(literal)
}

/// A member's value, nesting at most `depth` more levels.
fn member_value(u: &mut Unstructured<'_>, depth: usize) -> Result<String> {
    Ok(match u.int_in_range(0..=19)? {
        0..=10 => string_literal(u)?,
        11 | 12 => "null".to_owned(),
        13..=15 => pick(u, NUMBERS)?.to_string(),
        16 => pick(u, &["true", "false"])?.to_string(),
        17 if depth > 0 => format!("[{}]", member_value(u, depth - 1)?),
        18 if depth > 0 => toleration_text(u, depth - 1)?,
        _ => "{}".to_owned(),
    })
}

/// A toleration object as text, with up to six members.
fn toleration_text(u: &mut Unstructured<'_>, depth: usize) -> Result<String> {
    let mut members = Vec::new();
    for _ in 0..u.int_in_range(0..=6)? {
        let (a, b, c) = (space(u)?, space(u)?, space(u)?);
        let name = member_name(u)?;
        members.push(format!("{a}{name}{b}:{c}{}", member_value(u, depth)?));
    }
    Ok(format!("{{{}}}", members.join(",")))
}

fn toleration_list(u: &mut Unstructured<'_>) -> Result<String> {
    let mut entries = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let entry = if u.ratio(7, 8)? {
            toleration_text(u, 2)?
        } else {
            pick(u, &["null", "1", "\"x\"", "[]", "true"])?.to_string()
        };
        entries.push(format!("{}{entry}{}", space(u)?, space(u)?));
    }
    Ok(format!("{}[{}]{}", space(u)?, entries.join(","), space(u)?))
}

/// A value of a PodTolerationRestriction annotation as anyone may write one: what Go's
/// `encoding/json` reads in its own ways (member names in any case, the Kelvin sign and the
/// long s, escapes, halves of surrogate pairs, duplicates, `null`s, numbers at `int64`'s edges),
/// no list at all, damaged text, and nesting at Go's limit of 10,000 levels.
///
/// # Errors
///
/// Only `arbitrary`'s, when the bytes run out where a choice needs them.
pub fn toleration_annotation(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=39)? {
        0 => pick(
            u,
            &[
                "", " ", "null", " null ", "{}", "\"x\"", "1", "true", "[] x",
            ],
        )?
        .to_string(),
        1 => {
            let text = toleration_list(u)?;
            let mut cut = u.int_in_range(0..=text.len())?;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_owned()
        }
        // Around Go's limit: the list, its object and the arrays.
        2 => {
            let arrays = u.int_in_range(9_995..=10_002)?;
            format!(
                r#"[{{"other":{}{}}}]"#,
                "[".repeat(arrays),
                "]".repeat(arrays)
            )
        }
        _ => toleration_list(u)?,
    })
}

/// Writes `value` with object members in an order the bytes choose, sometimes indented, so
/// that key order and formatting are part of what must survive.
pub fn write(u: &mut Unstructured<'_>, value: &Value) -> Result<String> {
    let mut out = String::new();
    let pretty = u.arbitrary::<bool>()?;
    write_value(u, value, pretty, &mut out)?;
    Ok(out)
}

fn write_value(
    u: &mut Unstructured<'_>,
    value: &Value,
    pretty: bool,
    out: &mut String,
) -> Result<()> {
    let sep = if pretty { ",\n " } else { "," };
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                write_value(u, item, pretty, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            // A few swaps: enough to leave sorted order without costing many bytes.
            for _ in 0..u.int_in_range(0..=2)? {
                if members.len() > 1 {
                    let (i, j) = (
                        u.choose_index(members.len())?,
                        u.choose_index(members.len())?,
                    );
                    members.swap(i, j);
                }
            }
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push_str(if pretty { ": " } else { ":" });
                write_value(u, item, pretty, out)?;
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
    Ok(())
}
