//! `taintguard what-if`: what a policy would do to objects already in a cluster, judged as the
//! audit scanner judges them (a CREATE of the stored object, with no requester unless one is
//! given), before a platform team turns the policy on.

use serde_json::{json, Value};
use taintguard_host::wapc::WapcPolicy;

use crate::cluster;
use crate::expect::verdict;
use crate::review::{review, Operation, Parts, Requester};
use crate::suite::{Cluster, Verdict};

/// The objects of a `kubectl get … -o json` answer: a `List`'s items, or the one object.
///
/// # Errors
///
/// Anything else.
pub fn objects(value: Value) -> Result<Vec<Value>, String> {
    match value {
        Value::Object(mut map) if map.get("items").is_some_and(Value::is_array) => {
            match map.remove("items") {
                Some(Value::Array(items)) => Ok(items),
                _ => unreachable!("checked to be an array"),
            }
        }
        Value::Object(map) if map.contains_key("kind") => Ok(vec![Value::Object(map)]),
        _ => Err("expected `kubectl get … -o json` output: a List or one object".to_owned()),
    }
}

/// Judges each object and writes a report: a line per object (with the patch under a mutation
/// and the message after a rejection) and the counts.
///
/// # Errors
///
/// Settings the policy refuses, or a module that fails.
pub fn report(
    policy: &WapcPolicy,
    settings: &Value,
    requester: &Requester,
    nodes: Vec<Value>,
    objects: &[Value],
) -> Result<String, String> {
    let settings_answer = policy.validate_settings(settings)?;
    if settings_answer["valid"] != Value::Bool(true) {
        return Err(format!(
            "the policy refuses the settings: {}",
            settings_answer["message"].as_str().unwrap_or_default()
        ));
    }
    let cluster = Cluster {
        nodes,
        ..Cluster::default()
    };
    let mut out = String::new();
    let mut counts = [0usize; 3];
    for (i, object) in objects.iter().enumerate() {
        let mut object = object.clone();
        // `kubectl get` lists write the items' kind; a typed list's items may lack it.
        for field in ["apiVersion", "kind"] {
            if object.get(field).is_none() {
                return Err(format!("items[{i}]: no `{field}`"));
            }
        }
        let label = label(&object);
        let request = review(&Parts {
            operation: Operation::Create,
            requester: requester.clone(),
            object: Some(object.take()),
            old_object: None,
            sub_resource: None,
            patch: false,
            uid: format!("taintguard-what-if-{i}"),
        })
        .map_err(|e| format!("items[{i}] ({label}): {e}"))?;
        let answers = cluster::answers(&cluster)?;
        let response = policy
            .validate_with(&request, settings, &answers)
            .map_err(|e| format!("{label}: {e}"))?;
        match verdict(&response) {
            Verdict::Accepted => {
                counts[0] += 1;
                out.push_str(&format!("accepted  {label}\n"));
            }
            Verdict::Mutated => {
                counts[1] += 1;
                out.push_str(&format!("mutated   {label}\n"));
                let patch =
                    json_patch::diff(&request["request"]["object"], &response["mutated_object"]);
                for op in patch.0 {
                    out.push_str(&format!("          {}\n", json!(op)));
                }
            }
            Verdict::Rejected => {
                counts[2] += 1;
                let message = response["message"].as_str().unwrap_or_default();
                out.push_str(&format!("rejected  {label}: {message}\n"));
            }
        }
        for warning in response["warnings"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "          warning: {}\n",
                warning.as_str().unwrap_or_default()
            ));
        }
    }
    out.push_str(&format!(
        "{} objects: {} accepted, {} mutated, {} rejected\n",
        objects.len(),
        counts[0],
        counts[1],
        counts[2]
    ));
    Ok(out)
}

/// `Kind namespace/name`, or `Kind name` for a cluster-scoped object.
fn label(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("?");
    let metadata = &object["metadata"];
    let name = metadata["name"].as_str().unwrap_or("?");
    match metadata["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}
