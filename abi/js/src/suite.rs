//! `taintguard test` and the request builder for the npm package: the suites run through this
//! package's build of each policy (the policy a suite names by its module's file name,
//! `taint-preservation.wasm` being `taint-preservation`), reading files through the caller's
//! callbacks, since a wasm-bindgen module has no file system. Plain Rust, as `evaluate.rs`.

use std::path::Path;

use serde_json::{json, Map, Value};
use taintguard::Verdict;
use taintguard_suite::cluster::SuiteCluster;
use taintguard_suite::files::Files;
use taintguard_suite::run::{Judge, Violation};
use taintguard_suite::suite::{Case, Cluster, Suite};

use crate::evaluate::admission_request;
use crate::registry::{self, Entry};

/// A suite's policy in this package.
pub struct PackageJudge {
    entry: &'static Entry,
}

impl PackageJudge {
    /// The judge for the policy `suite` names.
    ///
    /// # Errors
    ///
    /// A policy this package does not have.
    pub fn for_suite(suite: &Suite) -> Result<PackageJudge, String> {
        let name = suite
            .policy
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name.strip_suffix(".wasm").unwrap_or(&name);
        let entry = registry::find(name).map_err(|e| format!("policy: {e}"))?;
        Ok(PackageJudge { entry })
    }
}

impl Judge for PackageJudge {
    fn settings_error(&mut self, settings: &Value) -> Result<Option<String>, String> {
        Ok((self.entry.validate_settings)(&settings.to_string()).err())
    }

    /// The case's cluster answers the policy's questions, from the same answers the waPC host
    /// of the workspace's `taintguard test` gives (`taintguard_suite::cluster`).
    fn validate(
        &mut self,
        review: &Value,
        settings: &Value,
        cluster: &Cluster,
    ) -> Result<(Value, bool), String> {
        let review = review.to_string();
        let answers = SuiteCluster(cluster);
        let verdict =
            (self.entry.evaluate)(admission_request(&review)?, &settings.to_string(), &answers)?;
        // What the policy asked only decides whether a gatekeeper build is compared, and the
        // package has none.
        Ok((response(&verdict)?, false))
    }

    /// The package holds one build of each policy: there is no gatekeeper build to compare.
    fn violations(
        &mut self,
        _: &Value,
        _: &Value,
        _: &Cluster,
    ) -> Option<Result<Vec<Violation>, String>> {
        None
    }

    /// A kwctl session is a sequence of waPC host calls, replayed by a waPC host.
    fn cannot_run(&self, case: &Case) -> Option<String> {
        case.cluster.session.is_some().then(|| {
            "it replays a kwctl session, which only a waPC host replays: run it with the \
             workspace's `taintguard test`"
                .to_owned()
        })
    }
}

/// A verdict in the shape of Kubewarden's `ValidationResponse`, which expectations read.
fn response(verdict: &Verdict) -> Result<Value, String> {
    let mutated = match verdict.mutated_object() {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("internal error: the mutated object cannot be read: {e}"))?,
        None => Value::Null,
    };
    let annotations: Map<String, Value> = verdict
        .audit_annotations
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    Ok(json!({
        "accepted": verdict.accepted(),
        "message": verdict.message(),
        "code": verdict.code(),
        "warnings": verdict.warnings,
        "audit_annotations": annotations,
        "mutated_object": mutated,
    }))
}

/// Files read through two callbacks: `read(path)` gives a file's text, `list(path)` a
/// directory's entries as `[name, isDirectory]` pairs, or `null` for a path that is no
/// directory. The functions are the caller's (Node's `fs` in the package's `taintguard` bin).
pub struct Callbacks<R, L> {
    /// `read(path)`: the file's text.
    pub read: R,
    /// `list(path)`: the directory's entries, or `null` when `path` is no directory.
    pub list: L,
}

impl<R, L> Files for Callbacks<R, L>
where
    R: Fn(&Path) -> Result<String, String>,
    L: Fn(&Path) -> Result<Option<Vec<(String, bool)>>, String>,
{
    fn read(&self, path: &Path) -> Result<String, String> {
        (self.read)(path)
    }

    fn list(&self, path: &Path) -> Result<Option<Vec<(String, bool)>>, String> {
        (self.list)(path)
    }
}

/// `buildRequest(parts)`: the AdmissionReview the API server would send, from `{operation, user,
/// groups, serviceAccount, object, oldObject, subResource, patch, uid}`; objects are objects or
/// their YAML or JSON text, as `kubectl get -o yaml` prints them.
///
/// # Errors
///
/// A part that is missing, of the wrong type, or does not fit the operation, named.
pub fn build_request(parts: &Value) -> Result<Value, String> {
    use taintguard_suite::review::{review, Operation, Parts, Requester, SUITE_FIELDS};
    let parts = parts
        .as_object()
        .ok_or("parts: expected an object of the request's parts")?;
    let known = [
        "operation",
        "user",
        "groups",
        "serviceAccount",
        "object",
        "oldObject",
        "subResource",
        "patch",
        "uid",
    ];
    if let Some(unknown) = parts.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "{unknown}: unknown part; expected {}",
            known.join(", ")
        ));
    }
    let text = |field: &str| text_part(parts, field);
    let object = |field: &str| object_part(parts, field);
    let groups = groups_part(parts)?;
    let requester = Requester::from_parts(
        text("user")?,
        groups,
        text("serviceAccount")?.as_deref(),
        &SUITE_FIELDS,
    )?;
    let operation = text("operation")?.ok_or("operation: required")?;
    let review_parts = Parts {
        operation: Operation::try_from(operation.as_str())
            .map_err(|e| format!("operation: {e}"))?,
        requester,
        object: object("object")?,
        old_object: object("oldObject")?,
        sub_resource: text("subResource")?,
        patch: match parts.get("patch") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("patch: expected true or false".to_owned()),
        },
        uid: text("uid")?.unwrap_or_else(|| "00000000-0000-4000-8000-000000000000".to_owned()),
    };
    review(&review_parts)
}

/// The part `field`, a string; absent for `null` or blank text, as a form's empty field is.
fn text_part(parts: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match parts.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{field}: expected a string")),
    }
}

/// The part `field`, an object or its YAML or JSON text; absent for `null` or blank text.
fn object_part(parts: &Map<String, Value>, field: &str) -> Result<Option<Value>, String> {
    match parts.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => taintguard_suite::object::parse(s, field).map(Some),
        Some(value @ Value::Object(_)) => Ok(Some(value.clone())),
        Some(_) => Err(format!(
            "{field}: expected an object or its YAML or JSON text"
        )),
    }
}

/// The part `groups`, a list of strings; none when absent or `null`.
fn groups_part(parts: &Map<String, Value>) -> Result<Vec<String>, String> {
    match parts.get("groups") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|g| g.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| "groups: expected a list of strings".to_owned()),
        Some(_) => Err("groups: expected a list of strings".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_from_parts_or_the_part_that_is_wrong() {
        let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n";
        let cases = [
            (
                json!({"operation": "UPDATE", "serviceAccount": "kube-system/node-controller",
                       "object": node, "oldObject": node, "patch": true}),
                Ok("system:serviceaccount:kube-system:node-controller"),
            ),
            (
                json!({"operation": "CREATE", "user": "alice", "groups": ["ops"], "object": node}),
                Ok("alice"),
            ),
            (json!({"object": node}), Err("operation: required")),
            (
                json!({"operation": "UPDATE", "object": node}),
                Err("UPDATE needs the old object"),
            ),
            (
                json!({"operation": "CREATE", "object": node, "owner": "x"}),
                Err("owner: unknown part"),
            ),
            (
                json!({"operation": "CREATE", "object": "a: ["}),
                Err("object: not YAML or JSON"),
            ),
            (
                json!({"operation": "CREATE", "object": node, "groups": ["g"]}),
                Err("groups: only a `user`"),
            ),
        ];
        for (parts, want) in cases {
            match (build_request(&parts), want) {
                (Ok(review), Ok(user)) => {
                    assert_eq!(review["request"]["userInfo"]["username"], user, "{parts}")
                }
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{parts}: {e}"),
                (got, want) => panic!("{parts}: got {got:?}, want {want:?}"),
            }
        }
    }
}
