//! template-policy: refuses Pods that lack the labels its settings require.
//!
//! A policy is a type that implements `taintguard::Policy`: its name, its settings type and
//! `evaluate`, which judges one request. The engines' adapters (src/exports.rs) and the npm
//! package run it; policies/README.md says how each of them finds the policy's folder.

// The exports come from the adapters' `policy!` macros and are the adapters' code: the lint
// checks this crate's own source.
#![forbid(unsafe_code)]
// No function of the policy's own code over 60 lines (clippy.toml); tests may hold long tables.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

#[cfg(feature = "wasm")]
mod exports;

pub mod settings;

use serde_json::Value;

use taintguard::admission::AdmissionRequest;
use taintguard::cluster::Cluster;
use taintguard::policy::{Half, Policy};
use taintguard::verdict::Verdict;

pub use settings::Settings;

/// The policy. Its name is the folder's, and the npm package finds the type by the folder's
/// name in CamelCase (policies/README.md).
pub struct TemplatePolicy;

impl Policy for TemplatePolicy {
    const NAME: &'static str = "template-policy";
    type Settings = Settings;

    /// Only refuses, so both halves judge alike: the gatekeeper build enforces it as it is.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        _half: Half,
        _cluster: &dyn Cluster,
    ) -> Verdict {
        if !request.is_core("Pod") || settings.labels.is_empty() {
            return Verdict::accept();
        }
        // A DELETE has no object: nothing is created that could lack a label.
        let Some(object) = &request.object else {
            return Verdict::accept();
        };
        let pod: Value = match serde_json::from_str(object.text()) {
            Ok(pod) => pod,
            Err(e) => return Verdict::reject(400, format!("malformed Pod: {e}")),
        };
        let labels = &pod["metadata"]["labels"];
        let missing: Vec<&str> = settings
            .labels
            .iter()
            .map(String::as_str)
            .filter(|key| labels.get(key).is_none())
            .collect();
        if missing.is_empty() {
            Verdict::accept()
        } else {
            Verdict::reject(
                403,
                format!("the Pod lacks the required labels {}", missing.join(", ")),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taintguard::{run, NoCluster};

    const CLUSTER: NoCluster = NoCluster("the policy asks the cluster nothing");

    fn pod(labels: &str) -> String {
        format!(
            r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"CREATE",
                "userInfo":{{"username":"alice"}},
                "object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"web","labels":{labels}}}}}}}"#
        )
    }

    fn judge(request: &str, settings: &str) -> Verdict {
        run::<TemplatePolicy>(request, settings, Half::Mutating, &CLUSTER)
    }

    #[test]
    fn a_pod_with_the_labels_is_accepted() {
        let verdict = judge(&pod(r#"{"team":"a"}"#), r#"{"labels":["team"]}"#);
        assert!(verdict.accepted(), "{verdict:?}");
    }

    #[test]
    fn a_pod_without_them_is_refused_by_name() {
        let verdict = judge(&pod("{}"), r#"{"labels":["team","tier"]}"#);
        assert_eq!(verdict.code(), Some(403));
        assert_eq!(
            verdict.message(),
            Some("template-policy: the Pod lacks the required labels team, tier")
        );
    }

    #[test]
    fn default_settings_accept_every_pod() {
        assert!(judge(&pod("{}"), "{}").accepted());
    }

    #[test]
    fn blank_and_repeated_keys_are_bad_settings() {
        for (settings, field) in [
            (r#"{"labels":[" "]}"#, "labels[0]"),
            (r#"{"labels":["team","team"]}"#, "labels[1]"),
        ] {
            let verdict = judge(&pod("{}"), settings);
            assert_eq!(verdict.code(), Some(400), "{settings}");
            assert!(
                verdict.message().unwrap().contains(field),
                "{settings}: {verdict:?}"
            );
        }
    }
}
