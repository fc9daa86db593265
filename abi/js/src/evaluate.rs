//! Text in, text out: what `evaluate()` does, free of any JavaScript type so that it runs in
//! host unit tests. `lib.rs` only converts values at the boundary.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use taintguard::cluster::Cluster;
use taintguard::verdict::serialize_pairs;
use taintguard::Verdict;

use taintguard_suite::files::Files;
use taintguard_suite::object;
use taintguard_suite::suite::Cluster as SuiteAnswers;

use crate::registry::Entry;

/// The members of the input that decide whether it is an `AdmissionReview` envelope.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    kind: Option<Value>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// The `AdmissionRequest` text inside `input`: its `request` member when `input` is an
/// `AdmissionReview` (as kwctl and the API server send), otherwise `input` itself.
pub fn admission_request(input: &str) -> Result<&str, String> {
    let expected = "request: expected an AdmissionReview or AdmissionRequest JSON object";
    // serde reads a struct from an array too; only an object is a request.
    if !input.trim_start().starts_with('{') {
        return Err(expected.to_owned());
    }
    let envelope: Envelope = serde_json::from_str(input).map_err(|e| format!("{expected}: {e}"))?;
    if envelope.kind.as_ref().and_then(Value::as_str) != Some("AdmissionReview") {
        return Ok(input);
    }
    match envelope.request.map(RawValue::get) {
        Some(text) if text != "null" => Ok(text),
        _ => Err("request: AdmissionReview has no `request`".to_owned()),
    }
}

/// Evaluates `input` (AdmissionReview or AdmissionRequest text) with `settings` text, the
/// policy's cluster questions answered by `cluster`, and writes the result object the package
/// returns.
pub fn evaluate(
    policy: &Entry,
    input: &str,
    settings: &str,
    cluster: &dyn Cluster,
) -> Result<String, String> {
    let request = admission_request(input)?;
    let verdict = (policy.evaluate)(request, settings, cluster)?;
    let (mutated, patch) = match verdict.mutated_object() {
        Some(mutated) => (
            Some(borrowed_json(mutated)?),
            Some(patch(request, mutated)?),
        ),
        None => (None, None),
    };
    Ok(result_json(&verdict, mutated, patch.as_ref()))
}

/// The cluster `evaluate()` is given, as YAML or JSON text (`null`: none): a test suite's
/// `cluster:` with its objects inline, as the suite's runner reads it.
///
/// # Errors
///
/// Text that is not such a cluster, or a file name where an object belongs (`evaluate()` reads
/// no files), named.
pub fn given_cluster(text: &str) -> Result<Option<SuiteAnswers>, String> {
    if text.trim() == "null" {
        return Ok(None);
    }
    let value = object::parse(text, "cluster")?;
    if value.get("session").is_some() {
        return Err("cluster.session: a kwctl session is replayed by a waPC host, not here".into());
    }
    SuiteAnswers::from_value(value, &NoFiles, Path::new(""))
        .map(Some)
        .map_err(|e| format!("cluster.{e}"))
}

/// `evaluate()` reads no files: a cluster's objects are given inline.
struct NoFiles;

impl Files for NoFiles {
    fn read(&self, path: &Path) -> Result<String, String> {
        Err(format!(
            "{} is a file name; evaluate() takes the object itself (runTests reads files)",
            path.display()
        ))
    }

    fn list(&self, _: &Path) -> Result<Option<Vec<(String, bool)>>, String> {
        Ok(None)
    }
}

/// The RFC 6902 patch from the request's object to the mutated object, computed as Kubewarden's
/// policy-evaluator does (json-patch `diff`).
fn patch(request: &str, mutated: &str) -> Result<json_patch::Patch, String> {
    // The object is captured raw, then read on its own: read as a `Value` member of the request,
    // it would have one level less than the 127 the core allows the mutated object.
    #[derive(Deserialize)]
    struct Object<'a> {
        #[serde(borrow, default)]
        object: Option<&'a RawValue>,
    }
    let original: Object = serde_json::from_str(request).map_err(|e| format!("request: {e}"))?;
    let original: Value = match original.object {
        Some(object) => serde_json::from_str(object.get()).map_err(|e| {
            format!(
                "request: `object` cannot be read to compute the patch \
                 (serde_json reads at most {} nested levels): {e}",
                taintguard::json::MAX_NESTING
            )
        })?,
        None => Value::Null,
    };
    // The core checked that the mutated object is JSON and nests no deeper than a `Value` holds
    // (`policy::try_run`), so this cannot fail.
    let mutated: Value = serde_json::from_str(mutated)
        .map_err(|e| format!("internal error: the mutated object cannot be read back: {e}"))?;
    Ok(json_patch::diff(&original, &mutated))
}

/// The mutated object as a `RawValue`, to be written as it is. The core builds it as JSON
/// (`Decision::Mutate`); were it not, this says so instead of returning it.
fn borrowed_json(mutated: &str) -> Result<&RawValue, String> {
    serde_json::from_str(mutated)
        .map_err(|e| format!("internal error: the mutated object is not JSON: {e}"))
}

/// The object `evaluate()` returns (`Verdict` in the package's TypeScript declarations).
/// `mutatedObject` is the core's text verbatim: key order and number formatting survive, and
/// the page's diff shows only what the policy changed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsVerdict<'a> {
    accepted: bool,
    message: Option<&'a str>,
    code: Option<u16>,
    warnings: &'a [String],
    #[serde(serialize_with = "serialize_pairs")]
    audit_annotations: &'a [(String, String)],
    mutated_object: Option<&'a RawValue>,
    patch: Option<&'a json_patch::Patch>,
    patch_type: Option<&'static str>,
}

fn result_json(
    verdict: &Verdict,
    mutated_object: Option<&RawValue>,
    patch: Option<&json_patch::Patch>,
) -> String {
    // policy-server sends no patch when the diff is empty; neither do we.
    let patch = patch.filter(|p| !p.0.is_empty());
    let result = JsVerdict {
        accepted: verdict.accepted(),
        message: verdict.message(),
        code: verdict.code(),
        warnings: &verdict.warnings,
        audit_annotations: &verdict.audit_annotations,
        mutated_object,
        patch,
        patch_type: patch.map(|_| "JSONPatch"),
    };
    // Cannot fail: every map key is a string.
    serde_json::to_string(&result).expect("verdicts serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{find, NO_CLUSTER};
    use serde_json::json;

    #[test]
    fn unwraps_reviews_and_passes_requests_through() {
        let cases: [(&str, Result<&str, &str>); 6] = [
            (
                r#"{"kind":"AdmissionReview","request":{"uid":"1"}}"#,
                Ok(r#"{"uid":"1"}"#),
            ),
            (
                r#"{"uid":"1","kind":{"kind":"Node"}}"#,
                Ok(r#"{"uid":"1","kind":{"kind":"Node"}}"#),
            ),
            (r#"{"kind":"AdmissionReview"}"#, Err("has no `request`")),
            (
                r#"{"kind":"AdmissionReview","request":null}"#,
                Err("has no `request`"),
            ),
            (
                "[1]",
                Err("expected an AdmissionReview or AdmissionRequest"),
            ),
            ("{", Err("expected an AdmissionReview or AdmissionRequest")),
        ];
        for (input, want) in cases {
            match (admission_request(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want),
                (Err(got), Err(want)) => assert!(got.contains(want), "{input}: {got}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    fn node_request(old_taints: Value, new_taints: Value) -> String {
        json!({"kind": "AdmissionReview", "request": {
            "uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Node"},
            "operation": "UPDATE", "name": "n1",
            "userInfo": {"username": "system:serviceaccount:kube-system:some-controller"},
            "oldObject": {"kind": "Node", "metadata": {"name": "n1"}, "spec": {"taints": old_taints}},
            "object": {"kind": "Node", "metadata": {"name": "n1"}, "spec": {"taints": new_taints}},
        }})
        .to_string()
    }

    #[test]
    fn a_restored_taint_comes_back_as_a_patch() {
        let taint = json!({"key": "example.com/maintenance", "effect": "NoSchedule"});
        let input = node_request(json!([taint]), json!([]));
        let policy = find("taint-preservation").unwrap();
        let out: Value =
            serde_json::from_str(&evaluate(policy, &input, "{}", &NO_CLUSTER).unwrap()).unwrap();
        assert_eq!(out["accepted"], true);
        assert_eq!(out["patchType"], "JSONPatch");
        assert_eq!(out["mutatedObject"]["spec"]["taints"], json!([taint]));
        assert_eq!(
            out["patch"],
            json!([{"op": "add", "path": "/spec/taints/0", "value": taint}])
        );
        assert!(out["warnings"].as_array().is_some_and(|w| !w.is_empty()));

        let denied: Value = serde_json::from_str(
            &evaluate(policy, &input, r#"{"mode":"deny"}"#, &NO_CLUSTER).unwrap(),
        )
        .unwrap();
        assert_eq!(denied["accepted"], false);
        assert_eq!(denied["code"], 403);
        assert_eq!(denied["patch"], Value::Null);
        assert_eq!(denied["mutatedObject"], Value::Null);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_field() {
        let policy = find("taint-preservation").unwrap();
        let input = node_request(json!([]), json!([]));
        let cases = [
            (
                input.as_str(),
                r#"{"mode":"sometimes"}"#,
                "settings field `mode`",
            ),
            (
                input.as_str(),
                r#"{"cordon":{"enabled":1}}"#,
                "settings field `cordon.enabled`",
            ),
            (input.as_str(), "{", "settings: not valid JSON"),
            (r#"{"uid":"u"}"#, "{}", "malformed admission request"),
            ("null", "{}", "request: expected an AdmissionReview"),
        ];
        for (input, settings, want) in cases {
            let err = evaluate(policy, input, settings, &NO_CLUSTER).unwrap_err();
            assert!(err.contains(want), "{settings}: {err}");
        }
    }

    #[test]
    fn result_keeps_the_mutated_text_verbatim() {
        let verdict = Verdict {
            audit_annotations: vec![("k".into(), "v\"".into())],
            ..Verdict::mutate(r#"{"z":1,"a":1.50}"#.into())
        };
        let mutated = borrowed_json(verdict.mutated_object().unwrap()).unwrap();
        let text = result_json(&verdict, Some(mutated), None);
        assert!(
            text.contains(r#""mutatedObject":{"z":1,"a":1.50}"#),
            "{text}"
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"accepted": true, "message": null, "code": null, "warnings": [],
                   "auditAnnotations": {"k": "v\""}, "mutatedObject": {"z": 1, "a": 1.5},
                   "patch": null, "patchType": null})
        );
    }

    /// `evaluate()`'s cluster is a suite's `cluster:` with its objects inline; anything else is
    /// an error naming the field.
    #[test]
    fn a_given_cluster_is_a_suites_with_objects_inline() {
        let given = given_cluster(
            r#"{"namespaces": [{"metadata": {"name": "team-a"}}],
                "canI": [{"serviceAccount": "ops/m", "verb": "untaint", "allowed": true}]}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(given.objects.len(), 1);
        assert_eq!(given.objects[0]["kind"], "Namespace");
        assert_eq!(given.can_i[0].username, "system:serviceaccount:ops:m");
        assert!(given_cluster("null").unwrap().is_none());
        let yaml = given_cluster("namespaces:\n- metadata: {name: team-a}\n")
            .unwrap()
            .unwrap();
        assert_eq!(yaml.objects[0]["metadata"]["name"], "team-a");
        let cases = [
            (
                r#"{"namespaces": ["team-a.yaml"]}"#,
                "cluster.namespaces[0]: ",
            ),
            (
                r#"{"namespaces": ["team-a.yaml"]}"#,
                "is a file name; evaluate() takes the object",
            ),
            (r#"{"nodes": {}}"#, "cluster."),
            (
                r#"{"canI": [{"verb": "untaint", "allowed": true}]}"#,
                "cluster.canI[0]: give `user` or `serviceAccount`",
            ),
            (
                r#"{"session": "s.yml"}"#,
                "cluster.session: a kwctl session is replayed by a waPC host",
            ),
            (r#"{"nodez": []}"#, "unknown field `nodez`"),
            ("[", "cluster: "),
        ];
        for (text, want) in cases {
            let err = given_cluster(text).err().unwrap_or_default();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
