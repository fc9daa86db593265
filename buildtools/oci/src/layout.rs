//! The OCI artifact a policy module is published as, exactly as `kwctl push` builds it: a config
//! blob `{}` (`application/vnd.wasm.config.v1+json`), one layer holding the module bytes
//! unchanged (`application/vnd.wasm.content.layer.v1+wasm`), and an image manifest whose
//! annotations are the policy's single-line metadata annotations plus
//! `org.opencontainers.image.source`, serialised as canonical JSON.

use std::collections::BTreeMap;

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use sha2::{Digest, Sha256};

pub const CONFIG_BYTES: &[u8] = b"{}";
pub const SOURCE_ANNOTATION: &str = "io.kubewarden.policy.source";
pub const OCI_SOURCE_ANNOTATION: &str = "org.opencontainers.image.source";

pub fn sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The manifest annotations for a policy's metadata annotations, and the keys left out because
/// their values span several lines (the policy README in `io.kubewarden.policy.usage`, above all).
pub fn manifest_annotations(
    metadata: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut kept = BTreeMap::new();
    let mut dropped = Vec::new();
    for (key, value) in metadata {
        let value = value.trim();
        if value.contains('\n') {
            dropped.push(key.clone());
        } else {
            kept.insert(key.clone(), value.to_owned());
        }
    }
    if let Some(source) = kept.get(SOURCE_ANNOTATION).cloned() {
        kept.entry(OCI_SOURCE_ANNOTATION.to_owned())
            .or_insert(source);
    }
    (kept, dropped)
}

/// Everything pushed for one module.
pub struct Artifact {
    pub layer: ImageLayer,
    pub config: Config,
    pub manifest: OciImageManifest,
    /// The manifest exactly as it is uploaded; its sha256 is the artifact's digest.
    pub manifest_bytes: Vec<u8>,
    pub digest: String,
    pub dropped_annotations: Vec<String>,
}

pub fn build(module: &[u8], metadata_annotations: &BTreeMap<String, String>) -> Artifact {
    let layer = ImageLayer::new(module.to_vec(), WASM_LAYER_MEDIA_TYPE.to_owned(), None);
    let config = Config::new(
        CONFIG_BYTES.to_vec(),
        WASM_CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    let (annotations, dropped_annotations) = manifest_annotations(metadata_annotations);
    image(layer, config, Some(annotations), dropped_annotations)
}

/// The one-layer image of `layer` and `config`, its manifest in canonical JSON and its digest.
fn image(
    layer: ImageLayer,
    config: Config,
    annotations: Option<BTreeMap<String, String>>,
    dropped_annotations: Vec<String>,
) -> Artifact {
    let manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, annotations);
    let manifest_bytes = canonical_json(&manifest);
    let digest = sha256(&manifest_bytes);
    Artifact {
        layer,
        config,
        manifest,
        manifest_bytes,
        digest,
        dropped_annotations,
    }
}

/// The media type cosign gives an SPDX SBOM attachment's layer.
pub const SPDX_MEDIA_TYPE: &str = "text/spdx+json";
/// The config of an attachment image, as cosign writes it.
pub const OCI_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// The tag cosign stores an attachment of `digest` under: `sha256-<hex>.<kind>` (`sbom`).
pub fn attachment_tag(digest: &str, kind: &str) -> String {
    format!("{}.{kind}", digest.replace(':', "-"))
}

/// An attachment as `cosign attach sbom` pushes one: an image whose config is `{}` and whose one
/// layer holds the file unchanged, with the file's media type.
pub fn attachment(bytes: &[u8], media_type: &str) -> Artifact {
    let layer = ImageLayer::new(bytes.to_vec(), media_type.to_owned(), None);
    let config = Config::new(
        CONFIG_BYTES.to_vec(),
        OCI_CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    image(layer, config, None, Vec::new())
}

/// Canonical JSON (sorted keys, no insignificant whitespace), the form oci-client gives
/// manifests, so the digest is the one kwctl would produce for the same module.
pub fn canonical_json(value: &impl serde::Serialize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, olpc_cjson::CanonicalFormatter::new());
    value
        .serialize(&mut ser)
        .expect("a manifest always serialises: strings, integers and maps only");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn annotations_as_kwctl_push_sends_them() {
        let src = "https://github.com/taintguard/taintguard";
        let cases = [
            (
                "usage dropped, source copied",
                map(&[
                    ("io.kubewarden.policy.usage", "# title\n\ntext\n"),
                    (SOURCE_ANNOTATION, src),
                    ("io.kubewarden.policy.title", " t "),
                ]),
                map(&[
                    (SOURCE_ANNOTATION, src),
                    (OCI_SOURCE_ANNOTATION, src),
                    ("io.kubewarden.policy.title", "t"),
                ]),
                vec!["io.kubewarden.policy.usage"],
            ),
            (
                "explicit OCI source wins",
                map(&[
                    (SOURCE_ANNOTATION, src),
                    (OCI_SOURCE_ANNOTATION, "https://x"),
                ]),
                map(&[
                    (SOURCE_ANNOTATION, src),
                    (OCI_SOURCE_ANNOTATION, "https://x"),
                ]),
                vec![],
            ),
            (
                "trailing newline is one line",
                map(&[("k", "v\n")]),
                map(&[("k", "v")]),
                vec![],
            ),
            ("no source, none added", map(&[]), map(&[]), vec![]),
        ];
        for (name, input, want_kept, want_dropped) in cases {
            let (kept, dropped) = manifest_annotations(&input);
            assert_eq!(kept, want_kept, "{name}");
            assert_eq!(dropped, want_dropped, "{name}");
        }
    }

    #[test]
    fn artifact_shape() {
        let module = b"\0asm\x01\0\0\0".to_vec();
        let a = build(&module, &map(&[(SOURCE_ANNOTATION, "https://s")]));
        // The digest of `{}` that kwctl's config blob has.
        assert_eq!(
            a.manifest.config.digest,
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(a.manifest.config.media_type, WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(a.manifest.layers.len(), 1);
        assert_eq!(a.manifest.layers[0].media_type, WASM_LAYER_MEDIA_TYPE);
        assert_eq!(a.manifest.layers[0].digest, sha256(&module));
        assert_eq!(a.manifest.layers[0].size, 8);
        assert_eq!(a.digest, sha256(&a.manifest_bytes));
        let text = String::from_utf8(a.manifest_bytes).unwrap();
        assert!(
            text.starts_with(r#"{"annotations":{"io.kubewarden.policy.source":"https://s","org.opencontainers.image.source":"https://s"},"config":{"#),
            "{text}"
        );
        assert!(text.ends_with(r#""schemaVersion":2}"#), "{text}");
        assert!(
            !text.contains("mediaType\":\"application/vnd.oci"),
            "no top-level mediaType"
        );
    }
}
