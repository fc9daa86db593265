//! template-policy: gives Pods the default labels its settings name, and refuses Pods that
//! still lack a label its settings require.
//!
//! A policy is a type that implements `taintguard::Policy`: its name, its settings type and
//! `evaluate`, which judges one request. The engines' adapters (src/exports.rs) and the npm
//! package run it; policies/README.md says how each of them finds the policy's folder.
//!
//! It reads and writes the object the one way every policy here does (policies/README.md,
//! "Reading and writing the object"): through the views the SDK read in its one pass over the
//! request ([`Object`], [`fields_in`], [`parse_labels`]), borrowing the request's text, never
//! parsing it again into a `serde_json::Value`; and a mutation is the object's own text with
//! the members it changes spliced in ([`Object::write_in`]), so every field it does not know
//! stays as it was sent.

// The exports come from the adapters' `policy!` macros and are the adapters' code: the lint
// checks this crate's own source.
#![forbid(unsafe_code)]
// No function of the policy's own code over 60 lines (clippy.toml); tests may hold long tables.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

#[cfg(feature = "wasm")]
mod exports;

pub mod settings;

use taintguard::admission::AdmissionRequest;
use taintguard::cluster::Cluster;
use taintguard::json::{fields_in, write_str, Level, Object};
use taintguard::k8s_names::{LabelKey, LabelValue};
use taintguard::label_selector::{parse_labels, Labels};
use taintguard::policy::{Half, Policy};
use taintguard::verdict::Verdict;

pub use settings::Settings;

/// The policy. Its name is the folder's, and the npm package finds the type by the folder's
/// name in CamelCase (policies/README.md).
pub struct TemplatePolicy;

impl Policy for TemplatePolicy {
    const NAME: &'static str = "template-policy";
    type Settings = Settings;

    /// The mutating half adds the missing default labels; the validating half (engines that
    /// cannot mutate) refuses the Pod that lacks them instead, naming them.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        half: Half,
        _cluster: &dyn Cluster,
    ) -> Verdict {
        if !request.is_core("Pod") || settings.is_empty() {
            return Verdict::accept();
        }
        // A DELETE has no object: nothing is created that could lack a label.
        let Some(pod) = &request.object else {
            return Verdict::accept();
        };
        judge(pod, settings, half).unwrap_or_else(|e| Verdict::reject(400, format!("object.{e}")))
    }
}

/// The verdict on `pod`, read as its members in the request's pass.
///
/// # Errors
///
/// A `metadata` or `metadata.labels` that is not what Kubernetes sends, named by path.
fn judge(pod: &Object<'_>, settings: &Settings, half: Half) -> Result<Verdict, String> {
    let metadata = pod
        .object("metadata")
        .map_err(|e| format!("metadata: {e}"))?;
    let [labels_text] = fields_in(metadata, ["labels"]).map_err(|e| format!("metadata: {e}"))?;
    let labels = parse_labels(labels_text.value()).map_err(|e| {
        let message = taintguard::json::error::message(&e);
        format!("metadata.labels: {message}")
    })?;
    let added: Vec<(&LabelKey, &LabelValue)> = (settings.defaults.iter())
        .filter(|(key, _)| !has(&labels, key))
        .collect();
    let missing: Vec<&str> = (settings.labels.iter())
        .filter(|key| !has(&labels, key) && !settings.defaults.contains_key(*key))
        .map(LabelKey::as_str)
        .collect();
    if !missing.is_empty() {
        let missing = missing.join(", ");
        let message = format!("the Pod lacks the required labels {missing}");
        return Ok(Verdict::reject(403, message));
    }
    if added.is_empty() {
        return Ok(Verdict::accept());
    }
    if half == Half::Validating {
        let keys: Vec<&str> = added.iter().map(|(key, _)| key.as_str()).collect();
        let message = format!(
            "the Pod lacks the labels {}, which this policy adds where the engine can mutate",
            keys.join(", ")
        );
        return Ok(Verdict::reject(403, message));
    }
    with_labels(pod, metadata, labels_text.value(), &added).map(Verdict::mutate)
}

/// Whether `labels` has `key`.
fn has(labels: &Labels<'_>, key: &LabelKey) -> bool {
    labels.iter().any(|(k, _)| k.as_str() == key.as_str())
}

/// The Pod's text with `added` written into its labels: the labels it has are kept as they
/// were sent, and the metadata and labels objects are made where it has none.
///
/// # Errors
///
/// Labels that are not an object (already refused by [`parse_labels`]).
fn with_labels(
    pod: &Object<'_>,
    metadata: Option<&Object<'_>>,
    labels: Option<&str>,
    added: &[(&LabelKey, &LabelValue)],
) -> Result<String, String> {
    let members: Vec<(&str, String)> = (added.iter())
        .map(|(key, value)| {
            let mut text = String::new();
            write_str(&mut text, value.as_str());
            (key.as_str(), text)
        })
        .collect();
    let labels = labels.filter(|text| *text != "null").unwrap_or("{}");
    let labels = Object::parse_as(labels, Level::Leaf)
        .map_err(|e| format!("metadata.labels: {e}"))?
        .write(&members);
    Ok(match metadata {
        Some(metadata) => (pod.write_in(metadata, &[("labels", labels)]))
            .ok_or("metadata: not read from the Pod")?,
        None => pod.write(&[("metadata", format!("{{\"labels\":{labels}}}"))]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use taintguard::{run, NoCluster};

    const CLUSTER: NoCluster = NoCluster("the policy asks the cluster nothing");

    /// A Pod CREATE whose `metadata` member is `metadata` (JSON text).
    fn pod(metadata: &str) -> String {
        format!(
            r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE",
                "userInfo":{{"username":"alice"}},
                "object":{{"apiVersion":"v1","kind":"Pod","metadata":{metadata},"spec":{{"x-future":[1]}}}}}}"#
        )
    }

    /// What each half does with each Pod: accepted, refused (the message), or mutated (the
    /// object admitted, every member the policy does not know kept as sent).
    #[test]
    fn each_half_judges_each_pod() {
        let require = r#"{"labels":["team"]}"#;
        let defaults = r#"{"labels":["team"],"defaults":{"team":"platform","tier":"web"}}"#;
        let lacking_team = "template-policy: the Pod lacks the required labels team, tier";
        let cannot_mutate = "template-policy: the Pod lacks the labels team, tier, which this \
                             policy adds where the engine can mutate";
        // (metadata, settings, half, expected: Ok(mutated object or "") or Err(message))
        let cases: [(&str, &str, Half, Result<&str, &str>); 9] = [
            (r#"{"name":"web"}"#, "{}", Half::Mutating, Ok("")),
            (r#"{"name":"web","labels":{"team":"a"}}"#, require, Half::Mutating, Ok("")),
            (r#"{"name":"web"}"#, r#"{"labels":["team","tier"]}"#, Half::Mutating, Err(lacking_team)),
            (
                r#"{"name":"web","labels":{"app":"x"}}"#,
                defaults,
                Half::Mutating,
                Ok(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"x","team":"platform","tier":"web"}},"spec":{"x-future":[1]}}"#),
            ),
            (
                r#"{"name":"web","labels":null}"#,
                defaults,
                Half::Mutating,
                Ok(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"team":"platform","tier":"web"}},"spec":{"x-future":[1]}}"#),
            ),
            (
                r#"{"name":"web","labels":{"team":"a","tier":"db"}}"#,
                defaults,
                Half::Mutating,
                Ok(""),
            ),
            (r#"{"name":"web"}"#, defaults, Half::Validating, Err(cannot_mutate)),
            (
                r#"{"name":"web","labels":{"team":"a","tier":"db"}}"#,
                defaults,
                Half::Validating,
                Ok(""),
            ),
            (r#"{"name":"web","labels":["team"]}"#, require, Half::Mutating, Err("template-policy: object.metadata.labels: invalid type: sequence, expected an object")),
        ];
        for (metadata, settings, half, want) in cases {
            let verdict = run::<TemplatePolicy>(&pod(metadata), settings, half, &CLUSTER);
            let got = match verdict.message() {
                Some(message) => Err(message),
                None => Ok(verdict.mutated_object().unwrap_or_default()),
            };
            assert_eq!(got, want, "{metadata} {settings} {half:?}");
        }
    }

    #[test]
    fn bad_settings_name_the_field() {
        let cases = [
            (r#"{"labels":[" "]}"#, "labels[0]"),
            (r#"{"labels":["team","team"]}"#, "labels[1]"),
            (r#"{"defaults":{"team":"a b"}}"#, "defaults"),
        ];
        for (settings, field) in cases {
            let verdict = run::<TemplatePolicy>(&pod("{}"), settings, Half::Mutating, &CLUSTER);
            assert_eq!(verdict.code(), Some(400), "{settings}");
            let message = verdict.message().unwrap_or_default();
            assert!(message.contains(field), "{settings}: {message}");
        }
    }
}
