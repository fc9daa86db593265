//! The Helm chart of an artifact in Kubewarden's policy-catalog format (docs/settings-ui.md).
//!
//! The Rancher/Kubewarden UI lists policies from a Helm repository whose charts carry
//! `catalog.cattle.io/type: kubewarden-policy`. It never installs them: it reads the chart's
//! annotations (rules, mutation, context-aware resources, resources, display name), its
//! `values.yaml` (`global.cattle.systemDefaultRegistry`, `module.repository`, `module.tag`: the
//! module it deploys) and its `questions.yaml` (the settings form, bound to `spec.settings`), and
//! creates the policy resource itself. These are the fields policy-catalog's own generator
//! writes from an Artifact Hub package, from the same metadata as `artifacthub-pkg.yml` here.
//!
//! Beyond the catalog's charts, each chart has `apiVersion: v2`, a source URL and one template,
//! so that `helm lint --strict` passes and `helm install` deploys the same ClusterAdmissionPolicy
//! `./build.sh` writes beside it (`policy.*` values; the UI ignores them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::artifact::Artifact;
use crate::manifests::{self, Maintainer, MetadataSpec, Target};
use crate::webhook::{Companion, Deployment};
use taintguard_wasm_metadata::metadata::{DISPLAY_NAME_ANNOTATION, VERSION_ANNOTATION};

/// The chart type the UI filters on: the one thing that makes a chart a policy.
pub const CATALOG_TYPE: &str = "kubewarden-policy";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChartYaml {
    api_version: &'static str,
    name: String,
    description: String,
    #[serde(rename = "type")]
    kind: &'static str,
    version: String,
    app_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    home: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keywords: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    maintainers: Vec<Maintainer>,
    annotations: BTreeMap<String, String>,
}

/// A chart's files, by path inside the chart folder.
pub struct Chart {
    pub name: String,
    pub files: Vec<(String, String)>,
}

/// The chart of `artifact`, whose module the UI deploys from `target`'s repository and tag (a
/// chart names a tag, never a digest: `values.yaml` has no place for one).
///
/// # Errors
///
/// Metadata an Artifact Hub package would lack too (version, display name, ...), named with the
/// annotation, or a repository without a registry host.
pub fn render(
    artifact: &Artifact,
    settings: &Value,
    questions: Option<&str>,
    target: &Target,
    readme: &str,
    deployment: &Deployment,
) -> Result<Chart, String> {
    let get = |key: &str| artifact.annotation(key);
    let required = |key: &str| artifact.required_annotation(key, "the Helm chart");
    let version = required(VERSION_ANNOTATION)?;
    let display_name = required(DISPLAY_NAME_ANNOTATION)?;
    let (registry, repository) = target.repository.split_once('/').ok_or_else(|| {
        format!(
            "{}: `{}` names no registry host",
            artifact.path.display(),
            target.repository
        )
    })?;

    let mut annotations = manifests::kubewarden_annotations(artifact)?;
    for (key, value) in [
        ("catalog.cattle.io/type", CATALOG_TYPE),
        // Rancher's Apps page offers charts that install workloads; these only describe policies.
        ("catalog.cattle.io/hidden", "true"),
        ("catalog.cattle.io/ui-component", "kubewarden"),
        ("kubewarden/displayName", &display_name),
        // Older UI releases read the module from these, and every release matches a deployed
        // policy's module to its chart with them.
        ("kubewarden/registry", registry),
        ("kubewarden/repository", repository),
        ("kubewarden/tag", &target.tag),
    ] {
        annotations.insert(key.to_owned(), value.to_owned());
    }
    let source = get("io.kubewarden.policy.source");
    let chart_yaml = ChartYaml {
        api_version: "v2",
        name: artifact.name.clone(),
        description: required("io.kubewarden.policy.description")?,
        kind: "application",
        version: version.clone(),
        app_version: version,
        home: get("io.kubewarden.policy.url").or_else(|| source.clone()),
        sources: source.into_iter().collect(),
        keywords: manifests::keywords(artifact)?,
        maintainers: manifests::authors(artifact)?,
        annotations,
    };

    let mut policy = serde_json::json!({"name": "", "mode": "protect", "settings": settings});
    merge(
        &mut policy,
        serde_json::to_value(&deployment.webhook).map_err(|e| e.to_string())?,
    );
    // Each companion policy (docs/records.md): on by default, its webhook fields tunable.
    let mut companions = serde_json::Map::new();
    for companion in &deployment.companions {
        let mut values = serde_json::json!({"enabled": true});
        for field in ["failurePolicy", "timeoutSeconds", "matchConditions"] {
            if let Some(value) = companion.spec.get(field) {
                values[field] = value.clone();
            }
        }
        companions.insert(companion.suffix.clone(), values);
    }
    let mut values = serde_json::json!({
        "global": {"cattle": {"systemDefaultRegistry": registry}},
        "module": {"repository": repository, "tag": target.tag},
        "policy": policy,
    });
    if !companions.is_empty() {
        values["companions"] = Value::Object(companions);
    }
    let files = vec![
        (
            "Chart.yaml",
            format!(
                "# Kubewarden policy-catalog chart for {}, generated by taintguard-oci from {}.\n{}",
                artifact.name,
                artifact.path.display(),
                manifests::to_yaml(&chart_yaml)?
            ),
        ),
        (
            "values.yaml",
            format!(
                "# The Kubewarden UI deploys registry/module.repository:module.tag (Rancher's system \
                 default registry\n# replaces the registry when set). `policy` is read only by \
                 `helm install` (templates/policy.yaml).\n{}",
                manifests::to_yaml(&values)?
            ),
        ),
        ("templates/policy.yaml", policy_template(artifact)?),
        ("README.md", readme.to_owned()),
    ];
    let mut files: Vec<(String, String)> = (files.into_iter())
        .map(|(file, text)| (file.to_owned(), text))
        .collect();
    for companion in &deployment.companions {
        let file = format!("templates/{}-policy.yaml", companion.suffix);
        files.push((file, companion_template(artifact, companion)?));
    }
    if let Some(questions) = questions {
        files.push(("questions.yaml".to_owned(), questions.to_owned()));
    }
    Ok(Chart {
        name: artifact.name.clone(),
        files,
    })
}

/// The ClusterAdmissionPolicy `./build.sh` writes as `cluster-admission-policy.yaml`, with the
/// module, name, mode and settings from the chart's values. Everything else is the metadata's,
/// written out here rather than read back from annotations in the template, so that rendering
/// needs no YAML parsing in Helm.
fn policy_template(artifact: &Artifact) -> Result<String, String> {
    let annotations = manifests::resource_annotations(artifact);
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        let yaml = manifests::to_yaml(&annotations)?;
        format!("  annotations:\n{}", indent(&yaml, 4))
    };
    Ok(format!(
        "# The policy as `helm install` deploys it; the Kubewarden UI does not render templates.\n\
         apiVersion: policies.kubewarden.io/v1\n\
         kind: ClusterAdmissionPolicy\n\
         metadata:\n  \
           name: {{{{ .Values.policy.name | default .Chart.Name }}}}\n\
         {annotations}\
         spec:\n  \
           module: registry://{{{{ .Values.global.cattle.systemDefaultRegistry }}}}/{{{{ .Values.module.repository }}}}:{{{{ .Values.module.tag }}}}\n  \
           mode: {{{{ .Values.policy.mode }}}}\n  \
           settings: {{{{- toYaml .Values.policy.settings | nindent 4 }}}}\n\
         {}{WEBHOOK_FIELDS}",
        indent(
            &manifests::to_yaml(&MetadataSpec::of(
                artifact,
                &artifact.metadata.context_aware_resources
            ))?,
            2
        )
    ))
}

/// The webhook fields a value sets, each left out when the value is empty: `matchConditions`
/// set to `[]` turns them off (docs/availability.md).
const WEBHOOK_FIELDS: &str = "  {{- with .Values.policy.failurePolicy }}\n  failurePolicy: {{ . }}\n  {{- end }}\n  \
     {{- with .Values.policy.timeoutSeconds }}\n  timeoutSeconds: {{ . }}\n  {{- end }}\n  \
     {{- with .Values.policy.matchConditions }}\n  matchConditions: {{- toYaml . | nindent 4 }}\n  {{- end }}\n";

/// A companion policy's template: its rules and the rest of its spec as the policy folder's
/// manifest writes them, the main policy's module, mode and settings, and its own webhook values
/// under `companions.<suffix>`; nothing when `enabled` is false.
fn companion_template(artifact: &Artifact, companion: &Companion) -> Result<String, String> {
    let mut fixed = companion.spec.clone();
    if let Some(spec) = fixed.as_object_mut() {
        for field in [
            "module",
            "settings",
            "mode",
            "mutating",
            "failurePolicy",
            "timeoutSeconds",
            "matchConditions",
        ] {
            spec.remove(field);
        }
    }
    let values = format!(".Values.companions.{}", companion.suffix);
    let webhook = WEBHOOK_FIELDS.replace(".Values.policy.", &format!("{values}."));
    let annotations = if companion.annotations.is_object() {
        format!(
            "  annotations:\n{}",
            indent(&manifests::to_yaml(&companion.annotations)?, 4)
        )
    } else {
        String::new()
    };
    Ok(format!(
        "{{{{- if {values}.enabled }}}}\n\
         # {}'s {} companion (docs/records.md), as `helm install` deploys it.\n\
         apiVersion: policies.kubewarden.io/v1\n\
         kind: ClusterAdmissionPolicy\n\
         metadata:\n  \
           name: {{{{ .Values.policy.name | default .Chart.Name }}}}-{}\n\
         {annotations}\
         spec:\n  \
           module: registry://{{{{ .Values.global.cattle.systemDefaultRegistry }}}}/{{{{ .Values.module.repository }}}}:{{{{ .Values.module.tag }}}}\n  \
           mode: {{{{ .Values.policy.mode }}}}\n  \
           mutating: {}\n  \
           settings: {{{{- toYaml .Values.policy.settings | nindent 4 }}}}\n\
         {}{webhook}{{{{- end }}}}\n",
        artifact.name,
        companion.suffix,
        companion.suffix,
        artifact.metadata.mutating,
        indent(&manifests::to_yaml(&fixed)?, 2),
    ))
}

/// `extra`'s members written into `into`, an object.
fn merge(into: &mut Value, extra: Value) {
    if let (Some(into), Value::Object(extra)) = (into.as_object_mut(), extra) {
        into.extend(extra);
    }
}

fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines().map(|line| format!("{pad}{line}\n")).collect()
}

/// Writes the chart into `charts/<name>/`, replacing what an earlier build left there.
pub fn write(charts: &Path, chart: &Chart) -> Result<PathBuf, String> {
    let dir = charts.join(&chart.name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for (file, text) in &chart.files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(dir)
}
