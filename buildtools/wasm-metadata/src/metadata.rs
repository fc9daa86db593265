//! A policy's Kubewarden metadata. `metadata.yml` is read here and nowhere else: checked, with
//! what Kubewarden assumes for an absent key filled in ([`read_yml`]); the JSON the module's
//! metadata section carries is that plus the usage text ([`metadata_json`]); [`Metadata`] is the
//! typed view of either, for the tools that publish and describe the artifacts.
//!
//! The section JSON stays a `serde_json` map rather than [`Metadata`]: keys this crate does not
//! type (a rule's `scope`, say) reach Kubewarden unchanged, and the map's sorted keys keep the
//! embedded bytes the same from build to build.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The policies of the folder `policies`: its folders that carry a `metadata.yml`, by name and
/// sorted, as build.sh's `policies` finds them (policies/README.md). Every tool and test that
/// must know every policy asks this.
///
/// # Errors
///
/// `policies` or one of its entries cannot be read, named; a folder with a `Cargo.toml` and no
/// `metadata.yml`, which would build and test and ship nowhere, named by the missing file.
pub fn policy_folders(policies: &Path) -> Result<Vec<String>, String> {
    let unreadable = |e: std::io::Error| format!("{}: {e}", policies.display());
    let mut names = Vec::new();
    for entry in std::fs::read_dir(policies).map_err(unreadable)? {
        let folder = entry.map_err(unreadable)?.path();
        let metadata = folder.join("metadata.yml");
        if metadata.is_file() {
            names.push(
                folder
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
        } else if folder.join("Cargo.toml").is_file() {
            // A crate without it would build and test, and ship nowhere.
            return Err(format!(
                "{} is missing: a policy folder needs it (policies/README.md)",
                metadata.display()
            ));
        }
    }
    names.sort();
    Ok(names)
}

/// The execution mode Kubewarden assumes when `metadata.yml` names none.
pub const DEFAULT_EXECUTION_MODE: &str = "kubewarden-wapc";

/// Execution modes Kubewarden knows, and whether each speaks the waPC protocol.
fn protocol_version(execution_mode: &str) -> Result<&'static str, String> {
    match execution_mode {
        "kubewarden-wapc" => Ok("v1"),
        "opa" | "gatekeeper" | "wasi" => Ok("Unknown"),
        other => Err(format!("unknown execution mode {other:?}")),
    }
}

/// `metadata.yml` checked, with `protocolVersion` derived from the execution mode and Kubewarden's
/// defaults for absent keys. Errors name the key; the caller names the file.
pub fn read_yml(text: &str) -> Result<Map<String, Value>, String> {
    let mut meta: Map<String, Value> = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    for required in ["rules", "mutating"] {
        if !meta.contains_key(required) {
            return Err(format!("`{required}` is required"));
        }
    }
    let rules = meta["rules"].as_array().ok_or("`rules` must be a list")?;
    for (i, rule) in rules.iter().enumerate() {
        for list in ["apiGroups", "apiVersions", "resources", "operations"] {
            if rule
                .get(list)
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                return Err(format!("`rules[{i}].{list}` must be a non-empty list"));
            }
        }
    }
    crate::served::check_rules(rules)?;
    let mode = meta
        .entry("executionMode")
        .or_insert_with(|| Value::from(DEFAULT_EXECUTION_MODE))
        .as_str()
        .ok_or("`executionMode` must be a string")?
        .to_owned();
    let protocol = protocol_version(&mode).map_err(|e| format!("`executionMode`: {e}"))?;
    meta.insert("protocolVersion".into(), Value::from(protocol));
    meta.entry("backgroundAudit").or_insert(Value::Bool(true));
    meta.entry("policyType")
        .or_insert_with(|| Value::from("kubernetes"));
    meta.entry("contextAwareResources")
        .or_insert_with(|| Value::Array(Vec::new()));
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object()
        .ok_or("`annotations` must be a map")?;
    if let Some((key, _)) = annotations.iter().find(|(_, v)| !v.is_string()) {
        return Err(format!("annotation {key:?} must be a string"));
    }
    check_release_tag(annotations)?;
    Ok(meta)
}

/// The annotation that holds the policy's title: its name, as its artifacts' files are named.
pub const TITLE_ANNOTATION: &str = "io.kubewarden.policy.title";
/// The annotation that holds the policy's version (`0.1.0`, without a leading `v`).
pub const VERSION_ANNOTATION: &str = "io.kubewarden.policy.version";
/// The annotation that holds the name Artifact Hub shows for the policy.
pub const DISPLAY_NAME_ANNOTATION: &str = "io.artifacthub.displayName";
/// The annotation that holds the OCI reference the policy is published at.
pub const OCI_URL_ANNOTATION: &str = "io.kubewarden.policy.ociUrl";
/// The GitHub release that holds the module as `policy.wasm`: `kwctl scaffold artifacthub` links
/// `<source>/releases/download/<tag>/policy.wasm`, `v<version>` without it.
pub const RELEASE_TAG_ANNOTATION: &str = "com.github.release.tag";

/// Each artifact has a release of its own, `<title>/v<version>` (docs/release.md): a tag that
/// says otherwise would link Artifact Hub to another artifact's or another version's module.
fn check_release_tag(annotations: &Map<String, Value>) -> Result<(), String> {
    let get = |key: &str| annotations.get(key).and_then(Value::as_str);
    let Some(tag) = get(RELEASE_TAG_ANNOTATION) else {
        return Ok(());
    };
    let (Some(title), Some(version)) = (get(TITLE_ANNOTATION), get(VERSION_ANNOTATION)) else {
        return Err(format!(
            "annotation {RELEASE_TAG_ANNOTATION:?} needs {TITLE_ANNOTATION:?} and \
             {VERSION_ANNOTATION:?} beside it"
        ));
    };
    let want = format!("{title}/v{version}");
    if tag != want {
        return Err(format!(
            "annotation {RELEASE_TAG_ANNOTATION:?} is {tag:?}, but the title and version say \
             {want:?}"
        ));
    }
    Ok(())
}

/// The annotation `kwctl annotate --usage-path` adds: the policy's README.
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";

/// The metadata section's JSON: [`read_yml`] with `usage` added as the usage annotation.
pub fn metadata_json(metadata_yml: &str, usage: &str) -> Result<Value, String> {
    let mut meta = read_yml(metadata_yml)?;
    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
        annotations.insert(USAGE_ANNOTATION.into(), Value::from(usage));
    }
    Ok(Value::Object(meta))
}

/// The metadata of the same policy built for another execution mode: the gatekeeper artifact
/// runs only the validating half, so it is `mutating: false` whatever the waPC module is. It is
/// its own package, named as its file is (`taint-preservation.gatekeeper.wasm` →
/// `taint-preservation-gatekeeper`): title, display name, OCI repository and release tag carry
/// the mode, so that Artifact Hub and the UI never show two packages under one name. Rules and
/// every other annotation stay those of `metadata.yml`.
pub fn for_execution_mode(mut meta: Value, mode: &str) -> Result<Value, String> {
    let protocol = protocol_version(mode)?;
    let fields = meta.as_object_mut().ok_or("metadata must be an object")?;
    fields.insert("executionMode".into(), Value::from(mode));
    fields.insert("protocolVersion".into(), Value::from(protocol));
    if mode != DEFAULT_EXECUTION_MODE {
        fields.insert("mutating".into(), Value::Bool(false));
        // A gatekeeper module makes no host calls, but reads the objects of its
        // `contextAwareResources` from the inventory Kubewarden passes as data (docs/context.md);
        // OPA mode's data is the settings, and another inventory form this build does not read.
        if mode != "gatekeeper" {
            fields.insert("contextAwareResources".into(), Value::Array(Vec::new()));
        }
        fields.remove("hostCapabilities");
        if let Some(Value::Object(annotations)) = fields.get_mut("annotations") {
            rename_for_mode(annotations, mode);
        }
    }
    Ok(meta)
}

fn rename_for_mode(annotations: &mut Map<String, Value>, mode: &str) {
    let engine = match mode {
        "gatekeeper" => "Gatekeeper",
        "opa" => "OPA",
        other => other,
    };
    let mut edit = |key: &str, edit: &dyn Fn(&str) -> String| {
        if let Some(Value::String(value)) = annotations.get_mut(key) {
            *value = edit(value);
        }
    };
    edit(TITLE_ANNOTATION, &|title| format!("{title}-{mode}"));
    edit(OCI_URL_ANNOTATION, &|url| format!("{url}-{mode}"));
    edit(DISPLAY_NAME_ANNOTATION, &|name| {
        format!("{name} ({engine})")
    });
    edit(RELEASE_TAG_ANNOTATION, &|tag| match tag.split_once('/') {
        Some((title, version)) => format!("{title}-{mode}/{version}"),
        None => tag.to_owned(),
    });
}

/// The parts of the metadata the tools need. Unknown keys are ignored, as Kubewarden does.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// The admission rules: the requests the webhook is sent.
    pub rules: Vec<Rule>,
    /// Whether the policy may answer with a mutated object.
    pub mutating: bool,
    /// The metadata's annotations, by key; empty when there are none.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Whether the audit scanner runs the policy on stored objects; `true` by default.
    #[serde(default = "default_background_audit")]
    pub background_audit: bool,
    /// The ABI the module is run with: `kubewarden-wapc` by default; `opa`, `gatekeeper`, `wasi`.
    #[serde(default = "default_execution_mode")]
    pub execution_mode: String,
    /// The cluster resources the policy may read (`apiVersion` and `kind` each); empty: none.
    #[serde(default)]
    pub context_aware_resources: Vec<Value>,
}

fn default_background_audit() -> bool {
    true
}

fn default_execution_mode() -> String {
    DEFAULT_EXECUTION_MODE.into()
}

/// One admission rule, in the field order `kwctl scaffold manifest` writes; any other key (a
/// `scope`, say) is carried through unchanged.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// The API groups the rule matches (`""` is the core group).
    pub api_groups: Vec<String>,
    /// The API versions the rule matches.
    pub api_versions: Vec<String>,
    /// The resources the rule matches, with subresources as `pods/status`.
    pub resources: Vec<String>,
    /// The operations the rule matches (`CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`).
    pub operations: Vec<String>,
    /// Any other key of the rule, kept as written.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Metadata {
    /// A policy's `metadata.yml`, read by [`read_yml`].
    pub fn from_yml(text: &str) -> Result<Metadata, String> {
        serde_json::from_value(Value::Object(read_yml(text)?)).map_err(|e| e.to_string())
    }

    /// The annotation `key`'s value; `None` when the metadata has no such annotation.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn policy_folders_are_those_with_metadata_and_a_crate_without_it_is_an_error() {
        let root = std::env::temp_dir().join(format!("policy-folders-{}", std::process::id()));
        // (folder, its files, listed) per case; the last case adds a crate without metadata.
        let cases: &[(&str, &[&str], bool)] = &[
            ("a-policy", &["Cargo.toml", "metadata.yml"], true),
            ("metadata-only", &["metadata.yml"], true),
            ("docs", &["README.md"], false),
        ];
        for (folder, files, _) in cases {
            std::fs::create_dir_all(root.join(folder)).unwrap();
            for file in *files {
                std::fs::write(root.join(folder).join(file), "").unwrap();
            }
        }
        let want: Vec<String> = (cases.iter())
            .filter(|(_, _, listed)| *listed)
            .map(|(folder, _, _)| folder.to_string())
            .collect();
        assert_eq!(policy_folders(&root).unwrap(), want);
        std::fs::create_dir_all(root.join("forgotten")).unwrap();
        std::fs::write(root.join("forgotten/Cargo.toml"), "").unwrap();
        let error = policy_folders(&root).unwrap_err();
        assert!(
            error.contains("forgotten/metadata.yml is missing"),
            "{error}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    use super::*;

    const RULE: &str =
        "rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [CREATE]}]\n";

    #[test]
    fn fills_kubewarden_defaults_and_the_usage() {
        let meta = metadata_json(&format!("{RULE}mutating: true\n"), "usage").unwrap();
        assert_eq!(meta["executionMode"], "kubewarden-wapc");
        assert_eq!(meta["protocolVersion"], "v1");
        assert_eq!(meta["backgroundAudit"], true);
        assert_eq!(meta["policyType"], "kubernetes");
        assert_eq!(meta["contextAwareResources"], Value::Array(vec![]));
        assert_eq!(meta["annotations"][USAGE_ANNOTATION], "usage");
        let typed = Metadata::from_yml(&format!("{RULE}mutating: true\n")).unwrap();
        assert!(typed.mutating && typed.background_audit);
        assert_eq!(typed.rules[0].resources, ["pods"]);
    }

    /// A gatekeeper module makes no host call, so it declares none; it reads the resources it
    /// declares from the inventory Kubewarden passes. An OPA-mode module reads none.
    #[test]
    fn gatekeeper_modules_declare_resources_and_no_host_call() {
        let yml = format!(
            "{RULE}mutating: true\ncontextAwareResources: [{{apiVersion: v1, kind: Node}}]\n\
             hostCapabilities: [kubernetes/list_resources_all]\n"
        );
        let wapc = metadata_json(&yml, "").unwrap();
        assert_eq!(wapc["hostCapabilities"][0], "kubernetes/list_resources_all");
        assert_eq!(wapc["contextAwareResources"][0]["kind"], "Node");
        let gatekeeper = for_execution_mode(wapc.clone(), "gatekeeper").unwrap();
        assert_eq!(gatekeeper["contextAwareResources"][0]["kind"], "Node");
        assert!(gatekeeper.get("hostCapabilities").is_none());
        assert_eq!(gatekeeper["mutating"], false);
        let opa = for_execution_mode(wapc, "opa").unwrap();
        assert_eq!(opa["contextAwareResources"], Value::Array(vec![]));
    }

    #[test]
    fn refuses_what_kubewarden_would_and_names_the_key() {
        let cases = [
            ("mutating: true\n".to_owned(), "`rules` is required"),
            (RULE.to_owned(), "`mutating` is required"),
            (
                "rules: {}\nmutating: true\n".into(),
                "`rules` must be a list",
            ),
            (
                "rules: [{apiGroups: ['']}]\nmutating: true\n".into(),
                "`rules[0].apiVersions` must be a non-empty list",
            ),
            (
                format!("{RULE}mutating: true\nexecutionMode: rego\n"),
                "`executionMode`: unknown execution mode \"rego\"",
            ),
            (
                format!("{RULE}mutating: true\nannotations: {{a: 1}}\n"),
                "annotation \"a\" must be a string",
            ),
            (
                "rules: [{apiGroups: [batch], apiVersions: [v1beta1], resources: [cronjobs], \
                 operations: [CREATE]}]\nmutating: true\n"
                    .into(),
                "rules[0]: batch/v1beta1 is served by no Kubernetes since 1.25",
            ),
            (
                format!(
                    "{RULE}mutating: true\nannotations: {{io.kubewarden.policy.title: a, \
                     io.kubewarden.policy.version: 1.0.0, com.github.release.tag: a/v0.9.0}}\n"
                ),
                "\"com.github.release.tag\" is \"a/v0.9.0\", but the title and version say \"a/v1.0.0\"",
            ),
            ("rules: [\n".into(), "line 2"),
        ];
        for (yml, want) in cases {
            let err = read_yml(&yml).expect_err(want);
            assert!(err.contains(want), "{yml}: {err}");
        }
    }

    #[test]
    fn another_mode_keeps_the_rest_and_never_mutates() {
        let meta = metadata_json(&format!("{RULE}mutating: true\n"), "usage").unwrap();
        assert!(for_execution_mode(meta.clone(), "rego").is_err());
        let opa = for_execution_mode(meta.clone(), "opa").unwrap();
        assert_eq!(
            (
                &opa["executionMode"],
                &opa["mutating"],
                &opa["protocolVersion"]
            ),
            (
                &Value::from("opa"),
                &Value::Bool(false),
                &Value::from("Unknown")
            )
        );
        assert_eq!(opa["rules"], meta["rules"]);
        assert_eq!(opa["annotations"], meta["annotations"]);
    }

    #[test]
    fn another_mode_is_its_own_package() {
        let yml = format!(
            "{RULE}mutating: true\nannotations:\n  io.kubewarden.policy.title: demo\n  \
             io.kubewarden.policy.version: 1.2.3\n  io.artifacthub.displayName: Demo\n  \
             io.kubewarden.policy.ociUrl: ghcr.io/x/demo\n  com.github.release.tag: demo/v1.2.3\n  \
             io.kubewarden.policy.description: d\n"
        );
        let meta = metadata_json(&yml, "").unwrap();
        let gatekeeper = for_execution_mode(meta.clone(), "gatekeeper").unwrap();
        let cases = [
            (TITLE_ANNOTATION, "demo-gatekeeper"),
            (DISPLAY_NAME_ANNOTATION, "Demo (Gatekeeper)"),
            (OCI_URL_ANNOTATION, "ghcr.io/x/demo-gatekeeper"),
            (RELEASE_TAG_ANNOTATION, "demo-gatekeeper/v1.2.3"),
            (VERSION_ANNOTATION, "1.2.3"),
            ("io.kubewarden.policy.description", "d"),
        ];
        for (key, want) in cases {
            assert_eq!(gatekeeper["annotations"][key], want, "{key}");
        }
        let wapc = for_execution_mode(meta.clone(), DEFAULT_EXECUTION_MODE).unwrap();
        assert_eq!(wapc["annotations"], meta["annotations"]);
    }
}
