//! The publishable artifacts: every `dist/*.wasm` that carries Kubewarden metadata.
//!
//! An artifact's name comes from its file name with dots turned into dashes
//! (`taint-preservation.wasm` → `taint-preservation`, `taint-preservation.gatekeeper.wasm` →
//! `taint-preservation-gatekeeper`). The name is the OCI repository under the push prefix and the
//! name of the generated policy resources; the part before the first dot names the policy folder
//! under `policies/` that holds its default settings.

use std::path::{Path, PathBuf};

use taintguard_wasm_metadata::metadata::Metadata;
use taintguard_wasm_metadata::section;

#[derive(Debug)]
pub struct Artifact {
    pub path: PathBuf,
    /// OCI repository name and policy resource name.
    pub name: String,
    /// The folder under `policies/` this artifact was built from.
    pub policy: String,
    pub bytes: Vec<u8>,
    pub metadata: Metadata,
}

use taintguard_wasm_metadata::metadata::VERSION_ANNOTATION;

/// `(name, policy)` for an artifact file name.
pub fn names(file_name: &str) -> Result<(String, String), String> {
    let stem = file_name
        .strip_suffix(".wasm")
        .ok_or_else(|| format!("`{file_name}` is not a `.wasm` file"))?;
    let name = stem.replace('.', "-");
    if !is_dns_label(&name) {
        return Err(format!(
            "artifact `{file_name}`: its name `{name}` must be 1 to 63 lower-case letters, digits \
             and inner `-` (it names the OCI repository and the policy resource)"
        ));
    }
    let policy = stem.split('.').next().unwrap_or(stem).to_owned();
    Ok((name, policy))
}

/// RFC 1123 label: what Kubernetes accepts as a resource name and OCI as a path component.
pub fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

impl Artifact {
    /// The artifact at `path`, `None` if the module has no Kubewarden metadata.
    pub fn load(path: &Path) -> Result<Option<Artifact>, String> {
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{}: not a file name", path.display()))?;
        let (name, policy) = names(file_name)?;
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let metadata =
            section::read_metadata(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(metadata.map(|metadata| Artifact {
            path: path.to_owned(),
            name,
            policy,
            bytes,
            metadata,
        }))
    }

    /// Like [`Artifact::load`], for a file the user named: one without metadata is an error, as in
    /// `kwctl push`.
    pub fn load_required(path: &Path) -> Result<Artifact, String> {
        Artifact::load(path)?.ok_or_else(|| {
            format!(
                "{}: the module has no `{}` section; Kubewarden cannot run it (build it with \
                 ./build.sh, which embeds the metadata)",
                path.display(),
                section::SECTION
            )
        })
    }

    /// The metadata annotation `key`, trimmed.
    pub fn annotation(&self, key: &str) -> Option<String> {
        self.metadata.annotation(key).map(|v| v.trim().to_owned())
    }

    /// The metadata annotation `key`, which `what` (the file being written) cannot do without.
    ///
    /// # Errors
    ///
    /// The annotation is missing or empty; the message names the module, the file and the key.
    pub fn required_annotation(&self, key: &str, what: &str) -> Result<String, String> {
        self.annotation(key)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                format!(
                    "{}: {what} needs the `{key}` annotation in the policy metadata",
                    self.path.display()
                )
            })
    }

    pub fn version(&self) -> Option<&str> {
        self.metadata.annotation(VERSION_ANNOTATION)
    }

    /// The tag to publish under when none is given: `v` + the policy version, as Kubewarden's
    /// own release pipeline tags policies.
    pub fn default_tag(&self) -> Result<String, String> {
        self.version()
            .map(|v| format!("v{}", v.trim()))
            .ok_or_else(|| {
                format!(
                    "{}: no TAG given and the module has no `{VERSION_ANNOTATION}` annotation",
                    self.path.display()
                )
            })
    }

    /// Checks a TAG given to `push`. A version tag must be the module's own `v<version>`: the
    /// module carries its version in its metadata, and its manifests, Artifact Hub package and
    /// release link name that version, so a module pushed as another version would be described
    /// wrongly everywhere. Any other tag (`latest`, `edge`, a test run's) names no release and is
    /// allowed: it is a moving pointer beside the release tag, as Kubewarden's own policies
    /// publish `latest`.
    ///
    /// # Errors
    ///
    /// A version tag other than [`Artifact::default_tag`].
    pub fn check_tag(&self, tag: &str) -> Result<(), String> {
        let own = self.default_tag()?;
        if is_version_tag(tag) && tag != own {
            return Err(format!(
                "{}: TAG `{tag}` is a version, but the module's `{VERSION_ANNOTATION}` says `{own}`; \
                 bump the version in policies/{}/metadata.yml and rebuild, or push without a TAG",
                self.path.display(),
                self.policy
            ));
        }
        Ok(())
    }
}

/// Whether `tag` names a release: `1.2.3` or `v1.2.3`, with or without a pre-release or build
/// suffix.
fn is_version_tag(tag: &str) -> bool {
    let core = tag.strip_prefix('v').unwrap_or(tag);
    let core = core.split(['-', '+']).next().unwrap_or(core);
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Every Kubewarden module directly in `dist`, by file name. Modules without metadata (a
/// wasm-bindgen build, say) are skipped with a notice on stderr.
pub fn discover(dist: &Path) -> Result<Vec<Artifact>, String> {
    let entries = std::fs::read_dir(dist).map_err(|e| {
        format!(
            "cannot read the artifact folder {}: {e} (run ./build.sh first)",
            dist.display()
        )
    })?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("{}: {e}", dist.display()))?
            .path();
        if path.is_file() && path.extension().is_some_and(|ext| ext == "wasm") {
            paths.push(path);
        }
    }
    paths.sort();
    let mut artifacts = Vec::new();
    for path in paths {
        match Artifact::load(&path)? {
            Some(artifact) => artifacts.push(artifact),
            None => eprintln!(
                "note: skipping {}: it has no `{}` section, so it is not a Kubewarden policy",
                path.display(),
                section::SECTION
            ),
        }
    }
    if artifacts.is_empty() {
        return Err(format!(
            "no Kubewarden policy modules in {} (run ./build.sh first)",
            dist.display()
        ));
    }
    Ok(artifacts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_file_names() {
        let cases = [
            (
                "taint-preservation.wasm",
                Ok(("taint-preservation", "taint-preservation")),
            ),
            (
                "taint-preservation.gatekeeper.wasm",
                Ok(("taint-preservation-gatekeeper", "taint-preservation")),
            ),
            ("a.wasm", Ok(("a", "a"))),
            ("Policy.wasm", Err("lower-case")),
            ("-x.wasm", Err("lower-case")),
            ("x_y.wasm", Err("lower-case")),
            ("policy.wat", Err("not a `.wasm` file")),
        ];
        for (file, expected) in cases {
            match (names(file), expected) {
                (Ok((name, policy)), Ok((want_name, want_policy))) => {
                    assert_eq!(
                        (name.as_str(), policy.as_str()),
                        (want_name, want_policy),
                        "{file}"
                    )
                }
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{file}: {e}"),
                (got, want) => panic!("{file}: got {got:?}, want {want:?}"),
            }
        }
        assert!(names(&format!("{}.wasm", "a".repeat(64))).is_err());
    }

    #[test]
    fn a_version_tag_must_be_the_modules_own() {
        let artifact = Artifact {
            path: "dist/demo.wasm".into(),
            name: "demo".into(),
            policy: "demo".into(),
            bytes: Vec::new(),
            metadata: serde_json::from_str(
                r#"{"rules":[],"mutating":false,"annotations":{"io.kubewarden.policy.version":"0.1.0"}}"#,
            )
            .unwrap(),
        };
        let cases = [
            ("v0.1.0", Ok(())),
            ("latest", Ok(())),
            ("roundtrip", Ok(())),
            ("v0.2.0", Err("TAG `v0.2.0` is a version, but")),
            ("0.1.0", Err("says `v0.1.0`")),
            ("v0.1.0-rc1", Err("is a version")),
        ];
        for (tag, want) in cases {
            match (artifact.check_tag(tag), want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{tag}: {e}"),
                (got, want) => panic!("{tag}: got {got:?}, want {want:?}"),
            }
        }
    }
}
