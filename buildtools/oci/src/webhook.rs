//! How a policy's webhook is deployed beyond what its metadata says: `failurePolicy`,
//! `timeoutSeconds` and `matchConditions`, which Kubewarden's metadata has no place for, read
//! from the policy folder's `cluster-admission-policy.yaml`, the manifest its tests hold to its
//! settings (docs/availability.md); and the companion policies beside it,
//! `cluster-admission-policy-<suffix>.yaml` (taint-preservation's `nodes/status` guard,
//! docs/records.md), deployed with the same module and settings.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

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

impl Companion {
    /// The companion's ClusterAdmissionPolicy for the main policy `name`, with its `module`,
    /// `settings` and `mutating`.
    pub fn resource(&self, name: &str, module: &str, settings: &Value, mutating: bool) -> Value {
        let mut spec = self.spec.clone();
        spec["module"] = Value::String(module.to_owned());
        spec["settings"] = settings.clone();
        spec["mutating"] = Value::Bool(mutating);
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
