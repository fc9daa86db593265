//! Checks a copy fetched from a registry by another client (skopeo) against the artifact it was
//! pushed from. Written from Kubewarden's rules, not from this tool's push code, so a push bug
//! cannot check itself.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::artifact::Artifact;
use crate::layout::sha256;

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v1+json";
pub const WASM_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// sha256 of the two bytes `{}`, the config blob `kwctl push` sends.
pub const EMPTY_CONFIG_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

/// What was fetched: the raw manifest and the blobs by digest.
pub struct Pulled {
    pub manifest: Vec<u8>,
    pub blobs: BTreeMap<String, Vec<u8>>,
}

/// Every way `pulled` differs from what `artifact` should have become; empty when it matches.
pub fn check(artifact: &Artifact, digest: &str, pulled: &Pulled) -> Vec<String> {
    let mut problems = Vec::new();
    let manifest_digest = sha256(&pulled.manifest);
    if manifest_digest != digest {
        problems.push(format!(
            "the manifest fetched has digest {manifest_digest}, not {digest}"
        ));
    }
    let manifest: Value = match serde_json::from_slice(&pulled.manifest) {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!("the manifest is not JSON: {e}"));
            return problems;
        }
    };
    let module_digest = sha256(&artifact.bytes);
    problems.extend(manifest_problems(&manifest));
    problems.extend(config_problems(&manifest["config"]));
    problems.extend(layer_problems(
        &manifest["layers"],
        artifact,
        &module_digest,
    ));
    problems.extend(annotation_problems(artifact, &manifest["annotations"]));
    problems.extend(blob_problems(&pulled.blobs, artifact, module_digest));
    problems
}

/// How the manifest's own fields differ from an OCI image manifest's: schema version 2, and
/// the OCI media type if it states one.
fn manifest_problems(manifest: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if manifest["schemaVersion"] != 2 {
        problems.push(format!(
            "schemaVersion is {}, not 2",
            manifest["schemaVersion"]
        ));
    }
    if !(manifest["mediaType"].is_null() || manifest["mediaType"] == OCI_MANIFEST) {
        problems.push(format!(
            "manifest mediaType is {}, not {OCI_MANIFEST}",
            manifest["mediaType"]
        ));
    }
    problems
}

/// How the manifest's `config` descriptor differs from the one `kwctl push` sends: the wasm
/// config media type, and the 2-byte `{}` blob.
fn config_problems(config: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if config["mediaType"] != WASM_CONFIG {
        problems.push(format!(
            "config mediaType is {}, not {WASM_CONFIG}",
            config["mediaType"]
        ));
    }
    if config["digest"] != EMPTY_CONFIG_DIGEST || config["size"] != 2 {
        problems.push(format!(
            "config is {config}, not the 2-byte `{{}}` blob {EMPTY_CONFIG_DIGEST}"
        ));
    }
    problems
}

/// How the manifest's `layers` differ from the one wasm layer holding `artifact`'s module,
/// whose digest is `module_digest`.
fn layer_problems(layers: &Value, artifact: &Artifact, module_digest: &str) -> Vec<String> {
    let Some([layer]) = layers.as_array().map(Vec::as_slice) else {
        return vec![format!(
            "the manifest must have exactly one layer: {layers}"
        )];
    };
    let mut problems = Vec::new();
    if layer["mediaType"] != WASM_LAYER {
        problems.push(format!(
            "layer mediaType is {}, not {WASM_LAYER}",
            layer["mediaType"]
        ));
    }
    if layer["digest"] != module_digest {
        problems.push(format!(
            "layer digest is {}, not the module's {module_digest}",
            layer["digest"]
        ));
    }
    if layer["size"] != artifact.bytes.len() {
        problems.push(format!(
            "layer size is {}, not {}",
            layer["size"],
            artifact.bytes.len()
        ));
    }
    problems
}

/// Which of the two blobs the manifest names (the `{}` config, the module layer whose digest is
/// `module_digest`) were not fetched, or were fetched with other bytes than the original's.
fn blob_problems(
    blobs: &BTreeMap<String, Vec<u8>>,
    artifact: &Artifact,
    module_digest: String,
) -> Vec<String> {
    let blob_checks = [
        ("config", EMPTY_CONFIG_DIGEST.to_owned(), b"{}".as_slice()),
        ("module layer", module_digest, artifact.bytes.as_slice()),
    ];
    let mut problems = Vec::new();
    for (what, want_digest, want_bytes) in blob_checks {
        match blobs.get(&want_digest) {
            None => problems.push(format!("the {what} blob {want_digest} was not fetched")),
            Some(bytes) if bytes != want_bytes => problems.push(format!(
                "the {what} blob fetched ({} bytes, {}) differs from the original ({} bytes)",
                bytes.len(),
                sha256(bytes),
                want_bytes.len()
            )),
            Some(_) => {}
        }
    }
    problems
}

/// The manifest annotations must be exactly the single-line metadata annotations (trimmed),
/// plus `org.opencontainers.image.source` taken from `io.kubewarden.policy.source`.
fn annotation_problems(artifact: &Artifact, annotations: &Value) -> Vec<String> {
    let Some(found) = annotations.as_object() else {
        return vec![format!(
            "the manifest has no annotations map: {annotations}"
        )];
    };
    let mut problems = Vec::new();
    let metadata = &artifact.metadata.annotations;
    for (key, value) in metadata {
        let single_line = !value.trim().contains('\n');
        match (found.get(key), single_line) {
            (Some(got), true) if got != value.trim() => {
                problems.push(format!("annotation {key} is {got}, not {:?}", value.trim()))
            }
            (None, true) => problems.push(format!("annotation {key} is missing")),
            (Some(_), false) => {
                problems.push(format!("multi-line annotation {key} reached the manifest"))
            }
            _ => {}
        }
    }
    let source = "org.opencontainers.image.source";
    let expected_source = metadata
        .get(source)
        .or(metadata.get("io.kubewarden.policy.source"));
    if let Some(want) = expected_source {
        if found.get(source).and_then(Value::as_str) != Some(want.trim()) {
            problems.push(format!("{source} is {:?}, not {want:?}", found.get(source)));
        }
    }
    for (key, value) in found {
        if !metadata.contains_key(key) && key != source {
            problems.push(format!("annotation {key} is not in the policy metadata"));
        }
        if value.as_str().is_none_or(|v| v.contains('\n')) {
            problems.push(format!(
                "annotation {key} is not a single-line string: {value}"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout;

    fn artifact() -> Artifact {
        let metadata = r#"{"rules":[],"mutating":false,"annotations":{
            "io.kubewarden.policy.source":"https://s","io.kubewarden.policy.title":"demo",
            "io.kubewarden.policy.usage":"line one\nline two\n"}}"#;
        Artifact {
            path: "dist/demo.wasm".into(),
            name: "demo".into(),
            policy: "demo".into(),
            bytes: b"\0asm\x01\0\0\0module".to_vec(),
            metadata: serde_json::from_str(metadata).unwrap(),
        }
    }

    /// What an honest registry returns for a push of `artifact`.
    fn honest(artifact: &Artifact) -> (String, Pulled) {
        let built = layout::build(&artifact.bytes, &artifact.metadata.annotations);
        let blobs = BTreeMap::from([
            (EMPTY_CONFIG_DIGEST.to_owned(), b"{}".to_vec()),
            (sha256(&artifact.bytes), artifact.bytes.clone()),
        ]);
        (
            built.digest,
            Pulled {
                manifest: built.manifest_bytes,
                blobs,
            },
        )
    }

    fn edit_manifest(pulled: &mut Pulled, edit: impl Fn(&mut Value)) {
        let mut manifest: Value = serde_json::from_slice(&pulled.manifest).unwrap();
        edit(&mut manifest);
        pulled.manifest = serde_json::to_vec(&manifest).unwrap();
    }

    #[test]
    fn an_honest_round_trip_passes() {
        let a = artifact();
        let (digest, pulled) = honest(&a);
        assert_eq!(check(&a, &digest, &pulled), Vec::<String>::new());
    }

    /// Each tampering must be caught, with a message naming it.
    #[test]
    fn every_kind_of_difference_is_caught() {
        type Tamper = fn(&mut Pulled);
        let cases: [(&str, Tamper, &str); 10] = [
            (
                "other manifest bytes",
                |p| p.manifest.push(b' '),
                "the manifest fetched has digest",
            ),
            (
                "docker media type",
                |p| {
                    edit_manifest(p, |m| {
                        m["mediaType"] =
                            "application/vnd.docker.distribution.manifest.v2+json".into()
                    })
                },
                "manifest mediaType",
            ),
            (
                "layer media type",
                |p| {
                    edit_manifest(p, |m| {
                        m["layers"][0]["mediaType"] =
                            "application/vnd.oci.image.layer.v1.tar".into()
                    })
                },
                "layer mediaType",
            ),
            (
                "config media type",
                |p| {
                    edit_manifest(p, |m| {
                        m["config"]["mediaType"] = "application/vnd.oci.image.config.v1+json".into()
                    })
                },
                "config mediaType",
            ),
            (
                "two layers",
                |p| {
                    edit_manifest(p, |m| {
                        let l = m["layers"][0].clone();
                        m["layers"].as_array_mut().unwrap().push(l)
                    })
                },
                "exactly one layer",
            ),
            (
                "usage leaked",
                |p| {
                    edit_manifest(p, |m| {
                        m["annotations"]["io.kubewarden.policy.usage"] = "a\nb".into()
                    })
                },
                "multi-line annotation",
            ),
            (
                "source missing",
                |p| {
                    edit_manifest(p, |m| {
                        m["annotations"]
                            .as_object_mut()
                            .unwrap()
                            .remove("org.opencontainers.image.source");
                    })
                },
                "org.opencontainers.image.source is None",
            ),
            (
                "title missing",
                |p| {
                    edit_manifest(p, |m| {
                        m["annotations"]
                            .as_object_mut()
                            .unwrap()
                            .remove("io.kubewarden.policy.title");
                    })
                },
                "io.kubewarden.policy.title is missing",
            ),
            (
                "module bytes differ",
                |p| {
                    let key = p
                        .blobs
                        .keys()
                        .find(|k| k.as_str() != EMPTY_CONFIG_DIGEST)
                        .unwrap()
                        .clone();
                    p.blobs.get_mut(&key).unwrap().push(0)
                },
                "module layer blob fetched",
            ),
            (
                "config blob missing",
                |p| {
                    p.blobs.remove(EMPTY_CONFIG_DIGEST);
                },
                "config blob",
            ),
        ];
        let a = artifact();
        for (name, tamper, message) in cases {
            let (digest, mut pulled) = honest(&a);
            tamper(&mut pulled);
            let problems = check(&a, &digest, &pulled);
            assert!(
                problems.iter().any(|p| p.contains(message)),
                "{name}: {problems:?}"
            );
        }
    }
}
