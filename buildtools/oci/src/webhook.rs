//! How a policy's webhook is deployed beyond what its metadata says: `failurePolicy`,
//! `timeoutSeconds` and `matchConditions`, which Kubewarden's metadata has no field for, read
//! from the policy folder's `cluster-admission-policy.yaml`, the manifest its tests hold to its
//! settings (docs/availability.md), the first two stated again in `metadata.yml`'s annotations
//! ([`FAILURE_ANNOTATIONS`], so that `kwctl inspect` and Artifact Hub show them) and held equal
//! to the manifest here; and the companion policies beside it,
//! `cluster-admission-policy-<suffix>.yaml` (taint-preservation's `nodes/status` guard,
//! docs/records.md), deployed with the same module and settings.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use taintguard_wasm_metadata::metadata::Metadata;

/// The webhook fields of a policy resource's spec that its folder's manifest sets.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_conditions: Option<Value>,
}

impl Webhook {
    fn of(spec: &Value) -> Webhook {
        let field = |name: &str| spec.get(name).filter(|v| !v.is_null()).cloned();
        Webhook {
            failure_policy: field("failurePolicy"),
            timeout_seconds: field("timeoutSeconds"),
            match_conditions: field("matchConditions"),
        }
    }
}

/// The annotations of `metadata.yml` that state the main webhook's failure settings, and the
/// manifest's field each must equal.
pub const FAILURE_ANNOTATIONS: [(&str, &str); 2] = [
    ("io.taintguard.webhook.failurePolicy", "failurePolicy"),
    ("io.taintguard.webhook.timeoutSeconds", "timeoutSeconds"),
];

/// Each of [`FAILURE_ANNOTATIONS`] among `annotations` (the folder's `metadata.yml`'s) equals
/// the manifest `spec`'s field, or both are absent.
fn check_failure_annotations(
    annotations: &BTreeMap<String, String>,
    spec: &Value,
    folder: &Path,
) -> Result<(), String> {
    for (annotation, field) in FAILURE_ANNOTATIONS {
        let stated = annotations.get(annotation).map(String::as_str);
        let deployed = match &spec[field] {
            Value::Null => None,
            Value::String(text) => Some(text.clone()),
            other => Some(other.to_string()),
        };
        if stated != deployed.as_deref() {
            return Err(format!(
                "{}: annotation {annotation} is {}, but cluster-admission-policy.yaml's \
                 spec.{field} is {}: state the same value in both",
                folder.join("metadata.yml").display(),
                stated.map_or("absent".to_owned(), |v| format!("{v:?}")),
                deployed.map_or("absent".to_owned(), |v| format!("{v:?}")),
            ));
        }
    }
    Ok(())
}

/// A policy deployed beside the main one, from `cluster-admission-policy-<suffix>.yaml`.
#[derive(Debug, Clone)]
pub struct Companion {
    pub suffix: String,
    /// Its spec as the folder's manifest writes it; module, settings and mode are the main
    /// policy's when rendered.
    pub spec: Value,
    pub annotations: Value,
    /// The manifest's first comment lines: what the companion is for.
    pub comment: String,
}

/// What the policy folder's manifests say of its deployment.
#[derive(Debug, Default, Clone)]
pub struct Deployment {
    pub webhook: Webhook,
    pub companions: Vec<Companion>,
}

fn read_yaml(path: &Path) -> Result<(Value, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if !doc["spec"].is_object() {
        return Err(format!("{}: no `spec` object", path.display()));
    }
    let comment = (text.lines())
        .take_while(|line| line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    Ok((doc, comment))
}

/// The deployment `policies/<policy>/` describes; none when the folder has no manifest.
///
/// # Errors
///
/// A manifest that cannot be read or has no `spec`, named by path.
pub fn deployment(policies: &Path, policy: &str) -> Result<Deployment, String> {
    let folder = policies.join(policy);
    let main = folder.join("cluster-admission-policy.yaml");
    if !main.is_file() {
        return Ok(Deployment::default());
    }
    let (doc, _) = read_yaml(&main)?;
    let path = folder.join("metadata.yml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let metadata = Metadata::from_yml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    check_failure_annotations(&metadata.annotations, &doc["spec"], &folder)?;
    let mut companions = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&folder)
        .map_err(|e| format!("{}: {e}", folder.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let Some(suffix) = (name.strip_prefix("cluster-admission-policy-"))
            .and_then(|rest| rest.strip_suffix(".yaml"))
        else {
            continue;
        };
        let (companion, comment) = read_yaml(&path)?;
        companions.push(Companion {
            suffix: suffix.to_owned(),
            spec: companion["spec"].clone(),
            annotations: companion["metadata"]["annotations"].clone(),
            comment,
        });
    }
    Ok(Deployment {
        webhook: Webhook::of(&doc["spec"]),
        companions,
    })
}

/// What a companion policy takes from the main policy it is deployed beside.
pub struct MainPolicy<'a> {
    /// The main policy's resource name; the companion's is `<name>-<suffix>`.
    pub name: &'a str,
    /// The module both policies run (`registry://...`).
    pub module: &'a str,
    /// The settings both policies are given.
    pub settings: &'a Value,
    /// Whether the main policy's metadata says it mutates.
    pub mutating: bool,
}

impl Companion {
    /// The companion's ClusterAdmissionPolicy beside `main`, with its name prefix, `module`,
    /// `settings` and `mutating`.
    pub fn resource(&self, main: &MainPolicy<'_>) -> Value {
        let mut spec = self.spec.clone();
        spec["module"] = Value::String(main.module.to_owned());
        spec["settings"] = main.settings.clone();
        spec["mutating"] = Value::Bool(main.mutating);
        let name = main.name;
        let mut metadata = serde_json::json!({"name": format!("{name}-{}", self.suffix)});
        if self.annotations.is_object() {
            metadata["annotations"] = self.annotations.clone();
        }
        serde_json::json!({
            "apiVersion": "policies.kubewarden.io/v1",
            "kind": "ClusterAdmissionPolicy",
            "metadata": metadata,
            "spec": spec,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check_failure_annotations;

    /// The annotations state what the manifest deploys, or nothing when it sets nothing; a
    /// number is stated as its text.
    #[test]
    fn failure_annotations_must_equal_the_manifest() {
        let metadata = |failure: Option<&str>, timeout: Option<&str>| {
            let stated = [
                ("io.taintguard.webhook.failurePolicy", failure),
                ("io.taintguard.webhook.timeoutSeconds", timeout),
            ];
            (stated.into_iter())
                .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
                .collect::<std::collections::BTreeMap<String, String>>()
        };
        let deployed = json!({"failurePolicy": "Fail", "timeoutSeconds": 5});
        // (metadata, spec, the error names, or None for agreement)
        let cases = [
            (metadata(Some("Fail"), Some("5")), deployed.clone(), None),
            (metadata(None, None), json!({}), None),
            (
                metadata(Some("Ignore"), Some("5")),
                deployed.clone(),
                Some("failurePolicy is \"Ignore\", but"),
            ),
            (
                metadata(Some("Fail"), None),
                deployed.clone(),
                Some("timeoutSeconds is absent, but"),
            ),
            (
                metadata(Some("Fail"), Some("5")),
                json!({"failurePolicy": "Fail"}),
                Some("spec.timeoutSeconds is absent"),
            ),
        ];
        for (metadata, spec, want) in cases {
            let got = check_failure_annotations(&metadata, &spec, std::path::Path::new("p"));
            match want {
                None => assert_eq!(got, Ok(()), "{metadata:?} {spec}"),
                Some(text) => {
                    let error = got.expect_err("a disagreement is an error");
                    assert!(error.contains(text), "{error}");
                    assert!(error.starts_with("p/metadata.yml: annotation io.taintguard.webhook."));
                }
            }
        }
    }
}
