//! Deployment manifests for a published module, in the shape `kwctl scaffold manifest` writes
//! (ClusterAdmissionPolicy and AdmissionPolicy), and the `artifacthub-pkg.yml` Artifact Hub reads
//! (the keys `kwctl scaffold artifacthub` writes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use crate::artifact::Artifact;
use crate::webhook::{Deployment, MainPolicy, Webhook};
use taintguard_wasm_metadata::metadata::{
    Metadata, Rule, DEFAULT_EXECUTION_MODE, DISPLAY_NAME_ANNOTATION, RELEASE_TAG_ANNOTATION,
    TITLE_ANNOTATION, USAGE_ANNOTATION, VERSION_ANNOTATION,
};

/// Where a manifest's module lives: by digest once pushed, else by tag.
#[derive(Debug, Clone)]
pub struct Target {
    /// `host/path/name`
    pub repository: String,
    pub tag: String,
    pub digest: Option<String>,
}

impl Target {
    pub fn module(&self) -> String {
        match &self.digest {
            Some(digest) => format!("registry://{}@{digest}", self.repository),
            None => format!("registry://{}:{}", self.repository, self.tag),
        }
    }

    pub fn tagged(&self) -> String {
        format!("{}:{}", self.repository, self.tag)
    }
}

/// The settings the manifests deploy: the policy's `examples/settings/default.json` if it has
/// one, else `{}` (valid defaults for every taintguard policy). Returns where they came from.
pub fn default_settings(policies: &Path, policy: &str) -> Result<(Value, String), String> {
    let path = policies.join(policy).join("examples/settings/default.json");
    if !path.is_file() {
        return Ok((Value::Object(Default::default()), "none given: `{}`".into()));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let settings: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if !settings.is_object() {
        return Err(format!(
            "{}: settings must be a JSON object",
            path.display()
        ));
    }
    Ok((settings, path.display().to_string()))
}

/// The policy's `questions-ui.yml`, the settings form of the Kubewarden UI (written by
/// buildtools/settings-ui), if the policy folder has one. Artifact Hub packages of Kubewarden policies
/// carry it as the `kubewarden/questions-ui` annotation, which the UI reads (docs/settings-ui.md).
pub fn questions_ui(policies: &Path, policy: &str) -> Result<Option<String>, String> {
    let path = policies.join(policy).join("questions-ui.yml");
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if !doc["questions"].is_sequence() {
        return Err(format!("{}: no `questions` list", path.display()));
    }
    Ok(Some(text))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resource<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: Spec<'a>,
}

#[derive(Serialize)]
struct ObjectMeta {
    name: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Spec<'a> {
    module: String,
    settings: &'a Value,
    #[serde(flatten)]
    from_metadata: MetadataSpec<'a>,
    /// The failure settings and matchConditions of the policy folder's manifest.
    #[serde(flatten)]
    webhook: &'a Webhook,
}

/// The fields of a policy resource's spec that come from the module's metadata, in the order
/// `kwctl scaffold manifest` writes them; the chart's template writes the same
/// (`crate::chart`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetadataSpec<'a> {
    rules: &'a [Rule],
    mutating: bool,
    /// Omitted when true, as kwctl does (kubewarden-controller#395).
    #[serde(skip_serializing_if = "Option::is_none")]
    background_audit: Option<bool>,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    context_aware_resources: &'a [Value],
}

impl<'a> MetadataSpec<'a> {
    /// The spec fields of `artifact`'s metadata, with `context_aware` as its context-aware
    /// resources (none for a namespaced AdmissionPolicy).
    pub fn of(artifact: &'a Artifact, context_aware: &'a [Value]) -> MetadataSpec<'a> {
        let meta = &artifact.metadata;
        MetadataSpec {
            rules: &meta.rules,
            mutating: meta.mutating,
            background_audit: (!meta.background_audit).then_some(false),
            context_aware_resources: context_aware,
        }
    }
}

/// The annotations `kwctl scaffold manifest` copies onto the policy resource.
const RESOURCE_ANNOTATIONS: [&str; 2] = [
    "io.kubewarden.policy.category",
    "io.kubewarden.policy.severity",
];

/// The metadata annotations a policy resource carries.
pub fn resource_annotations(artifact: &Artifact) -> BTreeMap<String, String> {
    RESOURCE_ANNOTATIONS
        .iter()
        .filter_map(|k| artifact.annotation(k).map(|v| (k.to_string(), v)))
        .collect()
}

/// Core and well-known cluster-scoped resources: a namespaced AdmissionPolicy never sees them.
const CLUSTER_SCOPED: [&str; 17] = [
    "apiservices",
    "certificatesigningrequests",
    "clusterrolebindings",
    "clusterroles",
    "csidrivers",
    "csinodes",
    "customresourcedefinitions",
    "ingressclasses",
    "mutatingwebhookconfigurations",
    "namespaces",
    "nodes",
    "persistentvolumes",
    "priorityclasses",
    "runtimeclasses",
    "storageclasses",
    "validatingwebhookconfigurations",
    "volumeattachments",
];

fn cluster_scoped_resources(rules: &[Rule]) -> (Vec<&str>, bool) {
    let mut found = Vec::new();
    let mut all = true;
    for resource in rules.iter().flat_map(|r| &r.resources) {
        let base = resource.split('/').next().unwrap_or(resource);
        if CLUSTER_SCOPED.contains(&base) {
            if !found.contains(&resource.as_str()) {
                found.push(resource.as_str());
            }
        } else {
            all = false;
        }
    }
    (found, all && !rules.is_empty())
}

pub struct Rendered {
    pub cluster_admission_policy: String,
    /// `cluster-admission-policy-<suffix>.yaml` and its text, per companion policy.
    pub companions: Vec<(String, String)>,
    pub admission_policy: String,
    pub artifacthub_pkg: String,
    /// The package's README, which Artifact Hub reads beside `artifacthub-pkg.yml`.
    pub readme: String,
    /// `gatekeeper-config.yaml`: for a gatekeeper module that reads the cluster, the sync
    /// configuration Gatekeeper needs to hold what it reads ([`gatekeeper_config`]).
    pub gatekeeper_config: Option<String>,
}

/// What a policy's folder adds to its module's metadata for the manifests and the chart.
pub struct PolicyFolder {
    /// The settings the manifests deploy ([`default_settings`]).
    pub settings: Value,
    /// Where `settings` came from, which each manifest's header states.
    pub settings_source: String,
    /// The folder's `questions-ui.yml` ([`questions_ui`]), if it has one.
    pub questions: Option<String>,
    /// The webhook fields and companion policies its manifests set.
    pub deployment: Deployment,
}

impl PolicyFolder {
    /// What `policies/<policy>/` says of the policy's deployment: its settings, settings form,
    /// webhook and companions; the first file that cannot be read is the error.
    pub fn read(policies: &Path, policy: &str) -> Result<PolicyFolder, String> {
        let (settings, settings_source) = default_settings(policies, policy)?;
        Ok(PolicyFolder {
            settings,
            settings_source,
            questions: questions_ui(policies, policy)?,
            deployment: crate::webhook::deployment(policies, policy)?,
        })
    }
}

/// The manifests of `artifact`'s module at `target`, deployed as `folder` says; `created_at` is
/// the Artifact Hub package's creation time.
pub fn render(
    artifact: &Artifact,
    folder: &PolicyFolder,
    target: &Target,
    created_at: &str,
) -> Result<Rendered, String> {
    let policy = PolicyManifests::new(artifact, folder, target);
    let meta = &artifact.metadata;
    // Context-aware resources are a ClusterAdmissionPolicy-only field.
    let cluster = policy.header("ClusterAdmissionPolicy")
        + &to_yaml(&policy.resource("ClusterAdmissionPolicy", &meta.context_aware_resources))?;
    let namespaced = policy.header("AdmissionPolicy")
        + &admission_policy_notes(meta)
        + &to_yaml(&policy.resource("AdmissionPolicy", &[]))?;
    let artifacthub_pkg = format!(
        "# Artifact Hub package for {}, generated by taintguard-oci from {}.\n",
        artifact.name,
        artifact.path.display()
    ) + &to_yaml(&artifacthub(
        artifact,
        folder.questions.as_deref(),
        target,
        created_at,
    )?)?;
    Ok(Rendered {
        cluster_admission_policy: cluster,
        companions: policy.companions()?,
        admission_policy: namespaced,
        artifacthub_pkg,
        readme: readme(artifact),
        gatekeeper_config: gatekeeper_config(artifact)?,
    })
}

/// Gatekeeper's `Config` syncing into its inventory the kinds a gatekeeper module reads: its
/// metadata's `contextAwareResources`, which the build writes from the policy's `Asks`
/// (docs/context.md, "Declaring what a policy reads"). `None` for other modes and for a module
/// that reads nothing. Gatekeeper keeps one `Config`; the header says to merge the entries.
fn gatekeeper_config(artifact: &Artifact) -> Result<Option<String>, String> {
    let meta = &artifact.metadata;
    if meta.execution_mode != "gatekeeper" || meta.context_aware_resources.is_empty() {
        return Ok(None);
    }
    let sync_only: Vec<Value> = (meta.context_aware_resources.iter())
        .map(|resource| {
            let api_version = resource["apiVersion"].as_str().unwrap_or_default();
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            json!({"group": group, "version": version, "kind": resource["kind"]})
        })
        .collect();
    let config = json!({
        "apiVersion": "config.gatekeeper.sh/v1alpha1",
        "kind": "Config",
        "metadata": {"name": "config", "namespace": "gatekeeper-system"},
        "spec": {"sync": {"syncOnly": sync_only}},
    });
    let header = format!(
        "# What Gatekeeper must replicate into its inventory for {}\n\
         # (generated by taintguard-oci from {}): the kinds its module reads (docs/context.md).\n\
         # Without them it refuses every request that needs them (500). Gatekeeper keeps one\n\
         # Config, `config` in gatekeeper-system: add these entries to its spec.sync.syncOnly.\n",
        artifact.name,
        artifact.path.display()
    );
    Ok(Some(header + &to_yaml(&config)?))
}

/// One policy's resources as they are rendered: what every one of them repeats (the module
/// reference, the annotations) worked out once.
struct PolicyManifests<'a> {
    artifact: &'a Artifact,
    folder: &'a PolicyFolder,
    target: &'a Target,
    /// `target`'s module reference, which every resource names.
    module: String,
    /// The metadata annotations every policy resource carries ([`resource_annotations`]).
    annotations: BTreeMap<String, String>,
}

impl<'a> PolicyManifests<'a> {
    /// The resources of `artifact` at `target`, as `folder` deploys them.
    fn new(artifact: &'a Artifact, folder: &'a PolicyFolder, target: &'a Target) -> Self {
        PolicyManifests {
            artifact,
            folder,
            target,
            module: target.module(),
            annotations: resource_annotations(artifact),
        }
    }

    /// The policy resource of `kind`, with `context_aware` as its context-aware resources.
    fn resource(&self, kind: &'static str, context_aware: &'a [Value]) -> Resource<'a> {
        Resource {
            api_version: "policies.kubewarden.io/v1",
            kind,
            metadata: ObjectMeta {
                name: self.artifact.name.clone(),
                annotations: self.annotations.clone(),
            },
            spec: Spec {
                module: self.module.clone(),
                settings: &self.folder.settings,
                from_metadata: MetadataSpec::of(self.artifact, context_aware),
                webhook: &self.folder.deployment.webhook,
            },
        }
    }

    /// The comment a manifest of `kind` starts with: what generated it from what, the module
    /// (and whether a push will rewrite it), and where the settings came from.
    fn header(&self, kind: &str) -> String {
        let (module, settings_source) = (&self.module, &self.folder.settings_source);
        format!(
            "# {kind} for {}, generated by taintguard-oci from {}.\n\
             # module: {module}{}\n\
             # settings: {settings_source}\n",
            self.artifact.name,
            self.artifact.path.display(),
            if self.target.digest.is_some() {
                " (the immutable reference `./build.sh push` printed)"
            } else {
                "\n#   (a tag: `./build.sh push REF_PREFIX [TAG]` rewrites this file with the pushed digest)"
            },
        )
    }

    /// Each companion policy's file name and ClusterAdmissionPolicy, deployed with this
    /// policy's module and settings.
    fn companions(&self) -> Result<Vec<(String, String)>, String> {
        let main = MainPolicy {
            name: &self.artifact.name,
            module: &self.module,
            settings: &self.folder.settings,
            mutating: self.artifact.metadata.mutating,
        };
        let mut companions = Vec::new();
        for companion in &self.folder.deployment.companions {
            let resource = companion.resource(&main);
            companions.push((
                format!("cluster-admission-policy-{}.yaml", companion.suffix),
                self.header("ClusterAdmissionPolicy") + &companion.comment + &to_yaml(&resource)?,
            ));
        }
        Ok(companions)
    }
}

/// The comment lines an AdmissionPolicy adds after its header: how to apply it, and what it
/// cannot do that the ClusterAdmissionPolicy does (context-aware resources, cluster-scoped
/// objects).
fn admission_policy_notes(meta: &Metadata) -> String {
    let mut notes =
        String::from("# Namespaced: apply it with `kubectl apply -n <namespace> -f`.\n");
    if !meta.context_aware_resources.is_empty() {
        notes.push_str(
            "# An AdmissionPolicy cannot be context-aware; use the ClusterAdmissionPolicy for that.\n",
        );
    }
    match cluster_scoped_resources(&meta.rules) {
        (found, true) => notes.push_str(&format!(
            "# WARNING: {} cluster-scoped, and an AdmissionPolicy only sees namespaced objects, so\n\
             # this policy never fires; deploy the ClusterAdmissionPolicy instead.\n",
            describe(&found)
        )),
        (found, false) if !found.is_empty() => notes.push_str(&format!(
            "# Note: {} cluster-scoped; an AdmissionPolicy does not see those.\n",
            describe(&found)
        )),
        _ => {}
    }
    notes
}

/// The policy's README, embedded in the module as its usage annotation; a build for another
/// engine says first what it leaves out.
pub fn readme(artifact: &Artifact) -> String {
    let meta = &artifact.metadata;
    let usage = meta.annotation(USAGE_ANNOTATION).unwrap_or_default();
    if meta.execution_mode == DEFAULT_EXECUTION_MODE {
        return usage.to_owned();
    }
    format!(
        "> **The {} build of `{}`** (`executionMode: {}`): the same policy for engines that speak \
         the OPA Wasm ABI. It validates only: it never mutates, reads nothing from the cluster, and \
         decides what the waPC build's validating half decides. The README below describes both \
         builds.\n\n{usage}",
        meta.execution_mode, artifact.policy, meta.execution_mode
    )
}

fn describe(resources: &[&str]) -> String {
    let list = resources.join(", ");
    if resources.len() == 1 {
        format!("{list} is")
    } else {
        format!("{list} are")
    }
}

pub fn to_yaml(value: &impl Serialize) -> Result<String, String> {
    serde_yaml::to_string(value).map_err(|e| format!("cannot write YAML: {e}"))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactHubPkg {
    version: String,
    name: String,
    display_name: String,
    created_at: String,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<String>,
    #[serde(rename = "homeURL", skip_serializing_if = "Option::is_none")]
    home_url: Option<String>,
    containers_images: Vec<NameValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keywords: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    links: Vec<NameUrl>,
    install: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    maintainers: Vec<Maintainer>,
    provider: Name,
    recommendations: Vec<Url>,
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct NameValue {
    name: &'static str,
    image: String,
}
#[derive(Serialize)]
struct NameUrl {
    name: &'static str,
    url: String,
}
#[derive(Serialize, Debug, PartialEq)]
pub struct Maintainer {
    name: String,
    email: String,
}
#[derive(Serialize)]
struct Name {
    name: &'static str,
}
#[derive(Serialize)]
struct Url {
    url: &'static str,
}

fn artifacthub(
    artifact: &Artifact,
    questions: Option<&str>,
    target: &Target,
    created_at: &str,
) -> Result<ArtifactHubPkg, String> {
    let get = |key: &str| artifact.annotation(key);
    let required = |key: &str| artifact.required_annotation(key, "artifacthub-pkg.yml");
    let version = required(VERSION_ANNOTATION)?;
    // kwctl names the package after the title; the registry repository and the resources
    // after the file. One name for all three.
    let name = required(TITLE_ANNOTATION)?;
    if name != artifact.name {
        return Err(format!(
            "{}: `{TITLE_ANNOTATION}` is `{name}`, but the artifact's file names it `{}`",
            artifact.path.display(),
            artifact.name
        ));
    }
    let keywords = keywords(artifact)?;
    let mut annotations = kubewarden_annotations(artifact)?;
    if let Some(questions) = questions {
        annotations.insert("kubewarden/questions-ui".to_owned(), questions.to_owned());
    }
    let maintainers = authors(artifact)?;
    let links = get("io.kubewarden.policy.source")
        .map(|source| links(&source, get(RELEASE_TAG_ANNOTATION), &version))
        .unwrap_or_default();
    Ok(ArtifactHubPkg {
        version,
        name,
        display_name: required(DISPLAY_NAME_ANNOTATION)?,
        created_at: created_at.to_owned(),
        description: required("io.kubewarden.policy.description")?,
        license: get("io.kubewarden.policy.license"),
        home_url: get("io.kubewarden.policy.url"),
        containers_images: vec![NameValue {
            name: "policy",
            image: target.tagged(),
        }],
        keywords,
        links,
        install: format!(
            "The policy is an OCI artifact; fetch it with\n\n```console\nkwctl pull {}\n```\n\n\
             and deploy it with a ClusterAdmissionPolicy whose `spec.module` is that reference.\n",
            target.module()
        ),
        maintainers,
        provider: Name { name: "kubewarden" },
        recommendations: vec![Url {
            url: "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller",
        }],
        annotations,
    })
}

/// `io.artifacthub.keywords`, split as kwctl splits it.
pub fn keywords(artifact: &Artifact) -> Result<Vec<String>, String> {
    let Some(csv) = artifact.metadata.annotation("io.artifacthub.keywords") else {
        return Ok(Vec::new());
    };
    let words: Vec<String> = csv.split(',').map(|w| w.trim().to_owned()).collect();
    if words.iter().any(String::is_empty) {
        return Err(format!(
            "{}: `io.artifacthub.keywords` has an empty keyword: {csv:?}",
            artifact.path.display()
        ));
    }
    Ok(words)
}

/// The `kubewarden/*` annotations an Artifact Hub package and a policy-catalog chart both carry
/// for the UI: mutation, rules and context-aware resources as YAML text, resources, hidden-ui.
pub fn kubewarden_annotations(artifact: &Artifact) -> Result<BTreeMap<String, String>, String> {
    let meta = &artifact.metadata;
    let get = |key: &str| artifact.annotation(key);
    let mut annotations = BTreeMap::new();
    annotations.insert("kubewarden/mutation".to_owned(), meta.mutating.to_string());
    annotations.insert("kubewarden/rules".to_owned(), to_yaml(&meta.rules)?);
    if !meta.context_aware_resources.is_empty() {
        annotations.insert(
            "kubewarden/contextAwareResources".to_owned(),
            to_yaml(&meta.context_aware_resources)?,
        );
    }
    if let Some(resources) = get("io.artifacthub.resources") {
        annotations.insert("kubewarden/resources".to_owned(), resources);
    }
    if let Some(hidden) = get("io.kubewarden.hidden-ui") {
        annotations.insert("kubewarden/hidden-ui".to_owned(), hidden);
    }
    Ok(annotations)
}

/// The links `kwctl scaffold artifacthub` writes: the module's download from the artifact's
/// GitHub release (its `com.github.release.tag`, form-encoded as kwctl does, else `v<version>`)
/// when the source is on GitHub, and the source.
fn links(source: &str, release_tag: Option<String>, version: &str) -> Vec<NameUrl> {
    let mut links = Vec::new();
    if source.starts_with("https://github.com/") {
        let release = match release_tag {
            Some(tag) => form_urlencoded::byte_serialize(tag.as_bytes()).collect(),
            None => format!("v{version}"),
        };
        links.push(NameUrl {
            name: "policy",
            url: format!(
                "{}/releases/download/{release}/policy.wasm",
                source.trim_end_matches('/')
            ),
        });
    }
    links.push(NameUrl {
        name: "source",
        url: source.to_owned(),
    });
    links
}

/// The maintainers `artifact`'s `io.kubewarden.policy.author` names ([`maintainers`]).
///
/// # Errors
///
/// An entry without an email address, naming the module.
pub fn authors(artifact: &Artifact) -> Result<Vec<Maintainer>, String> {
    maintainers(
        &artifact
            .annotation("io.kubewarden.policy.author")
            .unwrap_or_default(),
    )
    .map_err(|e| format!("{}: {e}", artifact.path.display()))
}

/// `Name <email>, Other <email>` → maintainers, as `kwctl scaffold artifacthub` reads the author.
///
/// # Errors
///
/// An entry without an email address: Artifact Hub requires one for each maintainer, and kwctl
/// refuses the metadata.
pub fn maintainers(author: &str) -> Result<Vec<Maintainer>, String> {
    if author.trim().is_empty() {
        return Ok(Vec::new());
    }
    author
        .split(',')
        .map(|entry| {
            let address = entry.split_once('<').and_then(|(name, rest)| {
                let email = rest.trim_end().strip_suffix('>')?.trim();
                let (local, domain) = email.split_once('@')?;
                (!local.is_empty() && domain.contains('.')).then(|| Maintainer {
                    name: name.trim().to_owned(),
                    email: email.to_owned(),
                })
            });
            address.ok_or_else(|| {
                format!(
                    "`io.kubewarden.policy.author`: `{}` has no email address (`Name <address>`); \
                     Artifact Hub requires one for each maintainer",
                    entry.trim()
                )
            })
        })
        .collect()
}

/// Writes `dist/<name>/{cluster-admission-policy.yaml,admission-policy.yaml,artifacthub-pkg.yml,README.md}`,
/// a gatekeeper module's `gatekeeper-config.yaml` and each companion's
/// `cluster-admission-policy-<suffix>.yaml`.
pub fn write(dist: &Path, name: &str, rendered: &Rendered) -> Result<Vec<PathBuf>, String> {
    let dir = dist.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let files = [
        (
            "cluster-admission-policy.yaml",
            &rendered.cluster_admission_policy,
        ),
        ("admission-policy.yaml", &rendered.admission_policy),
        ("artifacthub-pkg.yml", &rendered.artifacthub_pkg),
        ("README.md", &rendered.readme),
    ];
    let gatekeeper =
        (rendered.gatekeeper_config.iter()).map(|text| ("gatekeeper-config.yaml", text));
    let companions = (rendered.companions.iter()).map(|(file, text)| (file.as_str(), text));
    let mut written = Vec::new();
    for (file, text) in files.into_iter().chain(gatekeeper).chain(companions) {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// `artifacthub-repo.yml`, the Artifact Hub repository metadata at the root of the folder whose
/// package folders (`<artifact>/artifacthub-pkg.yml` and `README.md`) the hub indexes: the
/// maintainers of every package as the repository's owners. `repositoryID` is left for whoever
/// claims the repository on the hub to add.
pub fn repository_metadata(artifacts: &[Artifact]) -> Result<String, String> {
    #[derive(Serialize)]
    struct Repository {
        owners: Vec<Maintainer>,
    }
    let mut owners: Vec<Maintainer> = Vec::new();
    for artifact in artifacts {
        for owner in authors(artifact)? {
            if !owners.contains(&owner) {
                owners.push(owner);
            }
        }
    }
    Ok(
        "# Artifact Hub repository metadata, generated by taintguard-oci from the packages' \
        maintainers.\n# Add `repositoryID: <id>` once the repository is registered on the hub.\n"
            .to_owned()
            + &to_yaml(&Repository { owners })?,
    )
}

/// Now (or `$SOURCE_DATE_EPOCH`, for reproducible output) in RFC 3339.
pub fn created_at() -> Result<String, String> {
    let time = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => {
            let seconds: i64 = epoch
                .trim()
                .parse()
                .map_err(|_| format!("SOURCE_DATE_EPOCH `{epoch}` is not a number of seconds"))?;
            chrono::DateTime::from_timestamp(seconds, 0)
                .ok_or_else(|| format!("SOURCE_DATE_EPOCH `{epoch}` is out of range"))?
        }
        Err(_) => chrono::Utc::now(),
    };
    Ok(time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use taintguard_wasm_metadata::metadata::Metadata;

    fn artifact(metadata: &str) -> Artifact {
        Artifact {
            path: "dist/demo.wasm".into(),
            name: "demo".into(),
            policy: "demo".into(),
            bytes: Vec::new(),
            metadata: serde_json::from_str::<Metadata>(metadata).unwrap(),
        }
    }

    const ANNOTATIONS: &str = r#""annotations":{"io.kubewarden.policy.version":"0.1.0",
        "io.artifacthub.displayName":"Demo","io.kubewarden.policy.description":"d",
        "io.kubewarden.policy.severity":"high","io.kubewarden.policy.category":"Node",
        "io.kubewarden.policy.title":"demo","io.artifacthub.keywords":"a, b",
        "io.kubewarden.policy.author":"A <a@example.com>",
        "io.kubewarden.policy.source":"https://example.com/src"}"#;

    fn target(digest: Option<&str>) -> Target {
        Target {
            repository: "ghcr.io/x/demo".into(),
            tag: "v0.1.0".into(),
            digest: digest.map(str::to_owned),
        }
    }

    fn parse(yaml: &str) -> serde_yaml::Value {
        serde_yaml::from_str(yaml).unwrap()
    }

    /// A policy folder with these settings and questions, and no manifest of its own.
    fn folder(settings: &Value, settings_source: &str, questions: Option<&str>) -> PolicyFolder {
        PolicyFolder {
            settings: settings.clone(),
            settings_source: settings_source.to_owned(),
            questions: questions.map(str::to_owned),
            deployment: Deployment::default(),
        }
    }

    /// A gatekeeper module that reads the cluster gets Gatekeeper's sync entries for each kind
    /// (group and version apart); a waPC module, or one that reads nothing, gets none.
    #[test]
    fn gatekeeper_config_syncs_what_the_module_reads() {
        let rules = r#""rules":[],"mutating":false"#;
        let reads = r#"[{"apiVersion":"v1","kind":"Namespace"},{"apiVersion":"apps/v1","kind":"Deployment"}]"#;
        let cases = [
            (
                "gatekeeper",
                reads,
                Some(
                    r#"[{"group":"","kind":"Namespace","version":"v1"},{"group":"apps","kind":"Deployment","version":"v1"}]"#,
                ),
            ),
            ("gatekeeper", "[]", None),
            ("kubewarden-wapc", reads, None),
        ];
        for (mode, resources, sync_only) in cases {
            let metadata = format!(
                r#"{{{rules},"executionMode":"{mode}","contextAwareResources":{resources}}}"#
            );
            let written = gatekeeper_config(&artifact(&metadata)).unwrap();
            let Some(want) = sync_only else {
                assert_eq!(written, None, "{mode} {resources}");
                continue;
            };
            let written = written.unwrap();
            assert!(
                written.starts_with("# What Gatekeeper must replicate into its inventory for demo")
            );
            let config: Value = serde_yaml::from_str(&written).unwrap();
            assert_eq!(config["kind"], "Config");
            assert_eq!(config["metadata"]["namespace"], "gatekeeper-system");
            let want: Value = serde_json::from_str(want).unwrap();
            assert_eq!(config["spec"]["sync"]["syncOnly"], want);
        }
    }

    #[test]
    fn policy_resources() {
        let nodes = r#"[{"apiGroups":[""],"apiVersions":["v1"],"resources":["nodes"],"operations":["CREATE","UPDATE"]}]"#;
        let pods = r#"[{"apiGroups":[""],"apiVersions":["v1"],"resources":["pods","nodes/status"],"operations":["CREATE"]}]"#;
        let ctx = r#"[{"apiVersion":"v1","kind":"Node"}]"#;
        // (rules, backgroundAudit, contextAwareResources, expected backgroundAudit in spec, AdmissionPolicy comment)
        let cases = [
            (nodes, "false", "[]", Some(false), Some("never fires")),
            (
                pods,
                "true",
                ctx,
                None,
                Some("nodes/status is cluster-scoped"),
            ),
        ];
        for (rules, audit, context, want_audit, comment) in cases {
            let a = artifact(&format!(
                r#"{{"rules":{rules},"mutating":true,"backgroundAudit":{audit},"contextAwareResources":{context},{ANNOTATIONS}}}"#
            ));
            let settings = serde_json::json!({"mode": "restore"});
            let digest = format!("sha256:{}", "a".repeat(64));
            let out = render(
                &a,
                &folder(&settings, "s.json", None),
                &target(Some(&digest)),
                "2025-01-01T00:00:00Z",
            )
            .unwrap();
            for (yaml, kind) in [
                (&out.cluster_admission_policy, "ClusterAdmissionPolicy"),
                (&out.admission_policy, "AdmissionPolicy"),
            ] {
                let doc = parse(yaml);
                assert_eq!(doc["kind"].as_str(), Some(kind));
                assert_eq!(
                    doc["apiVersion"].as_str(),
                    Some("policies.kubewarden.io/v1")
                );
                assert_eq!(doc["metadata"]["name"].as_str(), Some("demo"));
                assert_eq!(
                    doc["metadata"]["annotations"]["io.kubewarden.policy.severity"].as_str(),
                    Some("high")
                );
                assert_eq!(
                    doc["metadata"]["annotations"].as_mapping().unwrap().len(),
                    2
                );
                let spec = &doc["spec"];
                assert_eq!(
                    spec["module"].as_str().unwrap(),
                    format!("registry://ghcr.io/x/demo@{digest}")
                );
                assert_eq!(spec["settings"]["mode"].as_str(), Some("restore"));
                assert_eq!(spec["mutating"].as_bool(), Some(true));
                assert_eq!(spec["backgroundAudit"].as_bool(), want_audit, "{kind}");
                let rules_back: Vec<Rule> = serde_yaml::from_value(spec["rules"].clone()).unwrap();
                assert_eq!(rules_back, a.metadata.rules);
            }
            let cluster = parse(&out.cluster_admission_policy);
            let namespaced = parse(&out.admission_policy);
            assert_eq!(
                cluster["spec"]["contextAwareResources"].is_null(),
                context == "[]"
            );
            assert!(namespaced["spec"]["contextAwareResources"].is_null());
            if let Some(comment) = comment {
                assert!(
                    out.admission_policy.contains(comment),
                    "{}",
                    out.admission_policy
                );
            }
            let rule_order = out.cluster_admission_policy.find("apiVersions:").unwrap()
                < out.cluster_admission_policy.find("resources:").unwrap();
            assert!(rule_order, "rules keep kwctl's key order");
        }
    }

    #[test]
    fn tag_targets_say_they_will_be_replaced() {
        let a = artifact(&format!(r#"{{"rules":[],"mutating":false,{ANNOTATIONS}}}"#));
        let out = render(
            &a,
            &folder(&serde_json::json!({}), "x", None),
            &target(None),
            "t",
        )
        .unwrap();
        let doc = parse(&out.cluster_admission_policy);
        assert_eq!(
            doc["spec"]["module"].as_str(),
            Some("registry://ghcr.io/x/demo:v0.1.0")
        );
        assert_eq!(
            doc["spec"]["settings"].as_mapping().map(|m| m.len()),
            Some(0)
        );
        assert!(out
            .cluster_admission_policy
            .contains("rewrites this file with the pushed digest"));
    }

    #[test]
    fn artifacthub_package() {
        let a = artifact(&format!(r#"{{"rules":[],"mutating":true,{ANNOTATIONS}}}"#));
        let questions = "questions:\n- variable: mode\n  type: enum\n";
        let out = render(
            &a,
            &folder(&serde_json::json!({}), "x", Some(questions)),
            &target(None),
            "2025-01-01T00:00:00Z",
        )
        .unwrap();
        let doc = parse(&out.artifacthub_pkg);
        assert_eq!(
            doc["annotations"]["kubewarden/questions-ui"].as_str(),
            Some(questions)
        );
        let expect = [
            ("version", "0.1.0"),
            ("name", "demo"),
            ("displayName", "Demo"),
            ("createdAt", "2025-01-01T00:00:00Z"),
            ("description", "d"),
        ];
        for (key, value) in expect {
            assert_eq!(doc[key].as_str(), Some(value), "{key}");
        }
        assert_eq!(
            doc["containersImages"][0]["image"].as_str(),
            Some("ghcr.io/x/demo:v0.1.0")
        );
        assert_eq!(doc["keywords"][1].as_str(), Some("b"));
        assert_eq!(doc["maintainers"].as_sequence().unwrap().len(), 1);
        assert_eq!(
            doc["links"][0]["url"].as_str(),
            Some("https://example.com/src")
        );
        assert_eq!(
            doc["annotations"]["kubewarden/mutation"].as_str(),
            Some("true")
        );
        assert_eq!(
            doc["annotations"]["kubewarden/rules"].as_str(),
            Some("[]\n")
        );
        assert!(doc["install"]
            .as_str()
            .unwrap()
            .contains("kwctl pull registry://ghcr.io/x/demo:v0.1.0"));

        let missing = artifact(
            r#"{"rules":[],"mutating":true,"annotations":{"io.kubewarden.policy.version":"1"}}"#,
        );
        let err = render(
            &missing,
            &folder(&serde_json::json!({}), "x", None),
            &target(None),
            "t",
        )
        .err()
        .unwrap();
        assert!(err.contains("io.kubewarden.policy.title"), "{err}");
    }

    #[test]
    fn questions_of_the_policy_folders() {
        let policies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
        let folders = taintguard_wasm_metadata::metadata::policy_folders(&policies).unwrap();
        for policy in &folders {
            let text = questions_ui(&policies, policy).unwrap().unwrap();
            assert!(text.contains("\nquestions:\n"), "{policy}");
        }
        assert_eq!(questions_ui(&policies, "no-such-policy").unwrap(), None);
    }

    #[test]
    fn maintainer_parsing() {
        let cases = [
            (
                "A <a@x.io>, B <b@y.io>",
                Ok(vec![("A", "a@x.io"), ("B", "b@y.io")]),
            ),
            ("", Ok(vec![])),
            (
                "taintguard developers",
                Err("`taintguard developers` has no email"),
            ),
            (
                "A <not-an-address>",
                Err("`A <not-an-address>` has no email"),
            ),
            ("A <a@x.io>, nobody", Err("`nobody` has no email")),
        ];
        for (input, want) in cases {
            let got = maintainers(input).map(|list| {
                list.into_iter()
                    .map(|m| (m.name, m.email))
                    .collect::<Vec<_>>()
            });
            match (got, want) {
                (Ok(got), Ok(want)) => {
                    let want: Vec<(String, String)> = want
                        .into_iter()
                        .map(|(n, e)| (n.to_owned(), e.to_owned()))
                        .collect();
                    assert_eq!(got, want, "{input}");
                }
                (Err(err), Err(want)) => assert!(err.contains(want), "{input}: {err}"),
                (got, want) => panic!("{input}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn download_links_follow_the_release_tag() {
        let cases = [
            (
                "https://github.com/o/r",
                Some("demo-gatekeeper/v1.0.0"),
                vec![
                    "https://github.com/o/r/releases/download/demo-gatekeeper%2Fv1.0.0/policy.wasm",
                    "https://github.com/o/r",
                ],
            ),
            (
                "https://github.com/o/r",
                None,
                vec![
                    "https://github.com/o/r/releases/download/v1.0.0/policy.wasm",
                    "https://github.com/o/r",
                ],
            ),
            (
                "https://example.com/src",
                None,
                vec!["https://example.com/src"],
            ),
        ];
        for (source, tag, want) in cases {
            let got: Vec<String> = links(source, tag.map(str::to_owned), "1.0.0")
                .into_iter()
                .map(|l| l.url)
                .collect();
            assert_eq!(got, want, "{source}");
        }
    }
}
