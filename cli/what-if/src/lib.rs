//! `taintguard what-if`: what a policy would do to objects already in a cluster, judged as the
//! audit scanner judges them (a CREATE of the stored object, with no requester unless one is
//! given), before a platform team turns the policy on; over Nodes, also who owns each protected
//! taint ([`owners`]). A crate of its own because that report reads taint-preservation's records
//! as the policy does, and the suites (taintguard-suite) stay engine- and policy-neutral.

#![forbid(unsafe_code)]
// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod owners;

use serde_json::{json, Value};

use taintguard_suite::expect::verdict;
use taintguard_suite::review::{audit_review, Requester};
use taintguard_suite::run::Judge;
use taintguard_suite::suite::{Cluster, Verdict};

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

/// What each object is judged with: the policy's settings, the requester of the audit's requests
/// and the cluster the policy's host calls see.
pub struct Audit<'a> {
    /// The policy's settings, as JSON.
    pub settings: &'a Value,
    /// The requester every audit request is made as.
    pub requester: &'a Requester,
    /// What the cluster answers the policy's host calls.
    pub cluster: &'a Cluster,
}

/// Judges each object and writes a report: a line per object (with the patch under a mutation
/// and the message after a rejection) and the counts.
///
/// # Errors
///
/// Settings the policy refuses, or a module that fails.
pub fn report(
    judge: &mut dyn Judge,
    audit: &Audit<'_>,
    objects: &[Value],
) -> Result<String, String> {
    if let Some(message) = judge.settings_error(audit.settings)? {
        return Err(format!("the policy refuses the settings: {message}"));
    }
    let mut out = String::new();
    // Accepted, mutated, rejected.
    let mut counts = [0usize; 3];
    for (i, object) in objects.iter().enumerate() {
        let (verdict, lines) = judged(judge, audit, i, object)?;
        counts[match verdict {
            Verdict::Accepted => 0,
            Verdict::Mutated => 1,
            Verdict::Rejected => 2,
        }] += 1;
        out.push_str(&lines);
    }
    out.push_str(&format!(
        "{} objects: {} accepted, {} mutated, {} rejected\n",
        objects.len(),
        counts[0],
        counts[1],
        counts[2]
    ));
    if let Some(owners) = crate::owners::report(judge, audit.settings, objects)? {
        out.push('\n');
        out.push_str(&owners);
    }
    Ok(out)
}

/// The verdict on `object`, the `i`th, and its lines in the report: the verdict with the patch
/// or the message, and the warnings.
fn judged(
    judge: &mut dyn Judge,
    audit: &Audit<'_>,
    i: usize,
    object: &Value,
) -> Result<(Verdict, String), String> {
    let label = label(object);
    let request = audit_review(object, audit.requester, &format!("taintguard-what-if-{i}"))
        .map_err(|e| format!("items[{i}] ({label}): {e}"))?;
    let (response, _) = judge
        .validate(&request, audit.settings, audit.cluster)
        .map_err(|e| format!("{label}: {e}"))?;
    let got = verdict(&response);
    let mut out = String::new();
    match got {
        Verdict::Accepted => out.push_str(&format!("accepted  {label}\n")),
        Verdict::Mutated => {
            out.push_str(&format!("mutated   {label}\n"));
            let patch =
                json_patch::diff(&request["request"]["object"], &response["mutated_object"]);
            for op in patch.0 {
                out.push_str(&format!("          {}\n", json!(op)));
            }
        }
        Verdict::Rejected => {
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
    Ok((got, out))
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
