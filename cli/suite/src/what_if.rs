//! `taintguard what-if`: what a policy would do to objects already in a cluster, judged as the
//! audit scanner judges them (a CREATE of the stored object, with no requester unless one is
//! given), before a platform team turns the policy on.

use serde_json::{json, Value};

use crate::expect::verdict;
use crate::review::{audit_review, Requester};
use crate::run::Judge;
use crate::suite::{Cluster, Verdict};

/// The objects of a `kubectl get … -o json` answer: a `List`'s items, or the one object.
///
/// # Errors
///
/// Anything else.
pub fn objects(value: Value) -> Result<Vec<Value>, String> {
    match value {
        Value::Object(mut map) if map.get("items").is_some_and(Value::is_array) => Ok(map["items"]
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default()),
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
    judge: &mut dyn Judge,
    settings: &Value,
    requester: &Requester,
    cluster: &Cluster,
    objects: &[Value],
) -> Result<String, String> {
    if let Some(message) = judge.settings_error(settings)? {
        return Err(format!("the policy refuses the settings: {message}"));
    }
    let mut out = String::new();
    let mut counts = [0usize; 3];
    for (i, object) in objects.iter().enumerate() {
        let label = label(object);
        let request = audit_review(object, requester, &format!("taintguard-what-if-{i}"))
            .map_err(|e| format!("items[{i}] ({label}): {e}"))?;
        let (response, _) = judge
            .validate(&request, settings, cluster)
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
    if let Some(owners) = crate::owners::report(judge, settings, objects)? {
        out.push('\n');
        out.push_str(&owners);
    }
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
