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
use crate::manifests::{self, Maintainer, Target};
use taintguard_wasm_metadata::metadata::{Rule, DISPLAY_NAME_ANNOTATION, VERSION_ANNOTATION};

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
    pub files: Vec<(&'static str, String)>,
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
        maintainers: manifests::maintainers(
            &get("io.kubewarden.policy.author").unwrap_or_default(),
        )
        .map_err(|e| format!("{}: {e}", artifact.path.display()))?,
        annotations,
    };

    let values = serde_json::json!({
        "global": {"cattle": {"systemDefaultRegistry": registry}},
        "module": {"repository": repository, "tag": target.tag},
        "policy": {"name": "", "mode": "protect", "settings": settings},
    });
    let mut files = vec![
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
    if let Some(questions) = questions {
        files.push(("questions.yaml", questions.to_owned()));
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
    /// The spec's fields that come from the metadata, in kwctl's order.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Fixed<'a> {
        rules: &'a [Rule],
        mutating: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        background_audit: Option<bool>,
        #[serde(skip_serializing_if = "<[Value]>::is_empty")]
        context_aware_resources: &'a [Value],
    }
    let meta = &artifact.metadata;
    let fixed = Fixed {
        rules: &meta.rules,
        mutating: meta.mutating,
        background_audit: (!meta.background_audit).then_some(false),
        context_aware_resources: &meta.context_aware_resources,
    };
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
         {}",
        indent(&manifests::to_yaml(&fixed)?, 2)
    ))
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
