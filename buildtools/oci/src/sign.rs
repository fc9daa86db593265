//! Key signatures for pushed artifacts, stored the way cosign stores them and Kubewarden
//! (`kwctl verify`, policy-server's `verificationConfig`) looks them up (docs/signing.md):
//!
//! - the signed payload is a "simple signing" JSON document naming the repository and the
//!   artifact's manifest digest;
//! - it is one layer (`application/vnd.dev.cosign.simplesigning.v1+json`) of an image manifest
//!   tagged `sha256-<hex of the artifact digest>.sig` in the artifact's repository;
//! - the base64 signature of the payload is the layer's `dev.cosignproject.cosign/signature`
//!   annotation.
//!
//! Keys are read, and payloads signed, by the `sigstore` crate, the library kwctl verifies with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest, OciManifest, OCI_IMAGE_MEDIA_TYPE};
use oci_client::Reference;
use serde::Serialize;
use sigstore::crypto::signing_key::ecdsa::{ECDSAKeys, EllipticCurve};
use sigstore::crypto::signing_key::{
    SigStoreKeyPair, COSIGN_PRIVATE_KEY_PEM_LABEL, SIGSTORE_PRIVATE_KEY_PEM_LABEL,
};
use sigstore::crypto::{CosignVerificationKey, SigStoreSigner, Signature, SigningScheme};

use crate::layout::{canonical_json, sha256};
use crate::registry::{explain, Session};

/// Where `./build.sh push` finds the key when `--sign` is not given (a path to the key file).
pub const KEY_ENV: &str = "TAINTGUARD_SIGNING_KEY";
/// The password of an encrypted key, under the name cosign reads it from.
pub const PASSWORD_ENV: &str = "COSIGN_PASSWORD";

pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// cosign's signature images carry an OCI image config; its content is not part of what is
/// verified.
const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// A private key ready to sign, with its public half for the self-check.
pub struct Signer {
    signer: SigStoreSigner,
    verifier: CosignVerificationKey,
    pub path: PathBuf,
}

/// The key to sign with: `--sign KEY` if given, else `$TAINTGUARD_SIGNING_KEY` if set and not
/// empty, else none.
pub fn key_path(flag: Option<PathBuf>) -> Option<PathBuf> {
    flag.or_else(|| {
        std::env::var_os(KEY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("path", &self.path).finish()
    }
}

impl Signer {
    /// Loads a private key: cosign's encrypted PEM (`ENCRYPTED SIGSTORE PRIVATE KEY` or
    /// `ENCRYPTED COSIGN PRIVATE KEY`, password in `$COSIGN_PASSWORD`) or an unencrypted PKCS#8
    /// PEM (`PRIVATE KEY`, as `openssl genpkey` writes). ECDSA P-256 and P-384 and Ed25519 keys
    /// are accepted, the types `kwctl verify -k` checks.
    pub fn load(path: &Path) -> Result<Signer, String> {
        let at = |what: String| key_error(path, &what);
        let text = std::fs::read(path).map_err(|e| at(format!("cannot read it: {e}")))?;
        let pair = read_key_pair(path, &text)?;
        let scheme = signing_scheme(&pair).map_err(|what| at(what.to_owned()))?;
        let signer = pair
            .to_sigstore_signer(&scheme)
            .map_err(|e| at(format!("cannot sign with it: {e}")))?;
        // The verifier is built from the public key's PEM the way kwctl builds it from `-k`, so
        // the self-check below judges as the verifier will.
        let public = pair
            .public_key_to_pem()
            .map_err(|e| at(format!("cannot derive its public key: {e}")))?;
        let verifier = CosignVerificationKey::try_from_pem(public.as_bytes())
            .map_err(|e| at(format!("cannot read back its public key: {e}")))?;
        Ok(Signer {
            signer,
            verifier,
            path: path.to_owned(),
        })
    }

    /// The base64 signature of `payload`, checked against the public key before it is returned.
    pub fn sign(&self, payload: &[u8]) -> Result<String, String> {
        let raw = self
            .signer
            .sign(payload)
            .map_err(|e| format!("signing with {}: {e}", self.path.display()))?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
        self.verifier
            .verify_signature(Signature::Base64Encoded(encoded.as_bytes()), payload)
            .map_err(|e| {
                format!(
                    "signing with {}: the signature does not verify with the key's own public \
                     half: {e}",
                    self.path.display()
                )
            })?;
        Ok(encoded)
    }
}

/// An error about the signing key at `path`: every one names the file.
fn key_error(path: &Path, what: &str) -> String {
    format!("signing key {}: {what}", path.display())
}

/// The private key pair in `text`, the contents of the key file at `path`, read as its PEM
/// block's label says; the error says what to do about a file that holds no usable private key.
fn read_key_pair(path: &Path, text: &[u8]) -> Result<SigStoreKeyPair, String> {
    let at = |what: String| key_error(path, &what);
    // The `pem` crate is the one sigstore reads keys with.
    let label = pem::parse(text)
        .map(|block| block.tag().to_owned())
        .map_err(|_| {
            at("not a PEM file (expected a `-----BEGIN ... PRIVATE KEY-----` block)".into())
        })?;
    match label.as_str() {
        SIGSTORE_PRIVATE_KEY_PEM_LABEL | COSIGN_PRIVATE_KEY_PEM_LABEL => {
            let password = std::env::var(PASSWORD_ENV).map_err(|_| {
                at(format!(
                    "the key is encrypted; set {PASSWORD_ENV} to its password (empty if it \
                     has none)"
                ))
            })?;
            // sigstore tries every key type in turn and reports only the last failure
            // ("unsupported key type"), so the likely cause is named first.
            SigStoreKeyPair::from_encrypted_pem(text, password.as_bytes()).map_err(|e| {
                at(format!(
                    "cannot decrypt it with the password in {PASSWORD_ENV}: the password is \
                     wrong, or the key is not ECDSA P-256/P-384 or Ed25519 (sigstore: {e})"
                ))
            })
        }
        "PRIVATE KEY" => SigStoreKeyPair::from_pem(text)
            .map_err(|e| at(format!("cannot read the PKCS#8 private key: {e}"))),
        "PUBLIC KEY" => Err(at(
            "this is a public key; sign with the private half (the `.key` file)".into(),
        )),
        other => Err(at(format!(
            "unsupported PEM block `{other}`; use a cosign key (`taintguard-oci \
             generate-key-pair`, `cosign generate-key-pair`) or a PKCS#8 `PRIVATE KEY`"
        ))),
    }
}

/// The scheme to sign with a key of `pair`'s type (the one `kwctl verify -k` checks it with),
/// or why the type is refused.
fn signing_scheme(pair: &SigStoreKeyPair) -> Result<SigningScheme, &'static str> {
    match pair {
        SigStoreKeyPair::ECDSA(ECDSAKeys::P256(_)) => Ok(SigningScheme::ECDSA_P256_SHA256_ASN1),
        SigStoreKeyPair::ECDSA(ECDSAKeys::P384(_)) => Ok(SigningScheme::ECDSA_P384_SHA384_ASN1),
        SigStoreKeyPair::ED25519(_) => Ok(SigningScheme::ED25519),
        SigStoreKeyPair::RSA(_) => {
            Err("RSA keys are not supported; use an ECDSA P-256 key (cosign's default)")
        }
    }
}

/// Writes a new ECDSA P-256 key pair, as `cosign generate-key-pair` does: `PREFIX.key` encrypted
/// with the password in `$COSIGN_PASSWORD`, and `PREFIX.pub`. Existing files are never replaced.
pub fn generate_key_pair(prefix: &str) -> Result<(PathBuf, PathBuf), String> {
    let password = std::env::var(PASSWORD_ENV).map_err(|_| {
        format!("set {PASSWORD_ENV} to the password for the new key (it may be empty)")
    })?;
    let private = PathBuf::from(format!("{prefix}.key"));
    let public = PathBuf::from(format!("{prefix}.pub"));
    for path in [&private, &public] {
        if path.exists() {
            return Err(format!(
                "{} already exists; not replacing a key",
                path.display()
            ));
        }
    }
    let pair = SigStoreKeyPair::ECDSA(
        ECDSAKeys::new(EllipticCurve::P256).map_err(|e| format!("cannot generate a key: {e}"))?,
    );
    let private_pem = pair
        .private_key_to_encrypted_pem(password.as_bytes())
        .map_err(|e| format!("cannot encrypt the new key: {e}"))?;
    let public_pem = pair
        .public_key_to_pem()
        .map_err(|e| format!("cannot encode the new public key: {e}"))?;
    write_new(&private, private_pem.as_bytes(), 0o600)?;
    write_new(&public, public_pem.as_bytes(), 0o644)?;
    Ok((private, public))
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The simple-signing payload for the artifact `digest` in `repository` (`registry/path/name`).
#[derive(Serialize)]
struct Payload<'a> {
    critical: Critical<'a>,
    optional: Option<BTreeMap<String, String>>,
}

#[derive(Serialize)]
struct Critical<'a> {
    identity: Identity<'a>,
    image: Image<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct Identity<'a> {
    #[serde(rename = "docker-reference")]
    docker_reference: &'a str,
}

#[derive(Serialize)]
struct Image<'a> {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: &'a str,
}

pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    let payload = Payload {
        critical: Critical {
            identity: Identity {
                docker_reference: repository,
            },
            image: Image {
                docker_manifest_digest: digest,
            },
            kind: "cosign container image signature",
        },
        optional: None,
    };
    serde_json::to_vec(&payload).expect("strings only")
}

/// The tag the signatures of `digest` live under: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &str) -> String {
    crate::layout::attachment_tag(digest, "sig")
}

/// What was done for one artifact.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// A new signature image was pushed.
    Created,
    /// Our signature was added beside the ones already stored.
    Appended { kept: usize },
    /// An identical signature (same payload, same signature) was already stored.
    AlreadySigned,
}

/// Signs the artifact `digest` in `repository` and stores the signature under its `.sig` tag.
/// Signatures already stored there (another key's, a keyless one) are kept: the new layer is
/// appended, as cosign does.
pub async fn sign_and_push(
    session: &Session,
    signer: &Signer,
    repository: &str,
    digest: &str,
) -> Result<(Reference, Outcome), String> {
    let tag_ref: Reference = format!("{repository}:{}", signature_tag(digest))
        .parse()
        .map_err(|e| format!("{repository}: cannot form the signature tag: {e}"))?;
    let (layer, layer_descriptor) = signature_layer(signer, repository, digest)?;
    let (mut layers, outcome) = match stored_signatures(session, &tag_ref).await? {
        Some(manifest) => {
            if manifest.layers.iter().any(|l| {
                l.digest == layer_descriptor.digest && l.annotations == layer_descriptor.annotations
            }) {
                return Ok((tag_ref, Outcome::AlreadySigned));
            }
            let kept = manifest.layers.len();
            (manifest.layers, Outcome::Appended { kept })
        }
        None => (Vec::new(), Outcome::Created),
    };
    layers.push(layer_descriptor);
    let image = SignatureImage::of(layer, layers);
    push_signature_image(session, &tag_ref, &image).await?;
    Ok((tag_ref, outcome))
}

/// The signature layer for the artifact `digest` in `repository`: the simple-signing payload
/// with its signature as an annotation, and the descriptor the signature manifest lists it by
/// (which also tells whether the same signature is already stored).
fn signature_layer(
    signer: &Signer,
    repository: &str,
    digest: &str,
) -> Result<(ImageLayer, OciDescriptor), String> {
    let payload = payload(repository, digest);
    let signature = signer.sign(&payload)?;
    let layer = ImageLayer::new(
        payload,
        PAYLOAD_MEDIA_TYPE.to_owned(),
        Some(BTreeMap::from([(
            SIGNATURE_ANNOTATION.to_owned(),
            signature,
        )])),
    );
    let layer_descriptor = OciDescriptor {
        media_type: layer.media_type.clone(),
        digest: layer.sha256_digest(),
        size: layer.data.len() as i64,
        annotations: layer.annotations.clone(),
        ..OciDescriptor::default()
    };
    Ok((layer, layer_descriptor))
}

/// The signature image already stored under `tag_ref`, `None` when the tag does not exist yet;
/// an image index there is refused rather than overwritten.
async fn stored_signatures(
    session: &Session,
    tag_ref: &Reference,
) -> Result<Option<OciImageManifest>, String> {
    let registry = tag_ref.resolve_registry().to_owned();
    let (client, auth) = (&session.client, &session.auth);
    client.store_auth_if_needed(&registry, auth).await;
    match client.pull_manifest(tag_ref, auth).await {
        Ok((OciManifest::Image(manifest), _)) => Ok(Some(manifest)),
        Ok((OciManifest::ImageIndex(_), _)) => Err(format!(
            "{tag_ref} is an image index, not a cosign signature image; not touching it"
        )),
        Err(oci_client::errors::OciDistributionError::ImageManifestNotFoundError(_)) => Ok(None),
        Err(oci_client::errors::OciDistributionError::RegistryError { envelope, .. })
            if envelope
                .errors
                .iter()
                .any(|e| e.code == oci_client::errors::OciErrorCode::ManifestUnknown) =>
        {
            Ok(None)
        }
        Err(e) => Err(explain(
            e,
            &format!("reading the signatures at {tag_ref}"),
            &registry,
        )),
    }
}

/// A signature image ready to push: the new signature's layer, and the config and manifest
/// listing every signature layer kept under the tag.
struct SignatureImage {
    /// The new signature's payload layer, the one blob of it not already stored.
    layer: ImageLayer,
    /// The image config, which lists the layers' digests.
    config: Config,
    /// The manifest: `config` and every signature layer.
    manifest: OciImageManifest,
}

impl SignatureImage {
    /// The image holding `layers` (the stored signatures and the new one, whose payload is
    /// `layer`).
    fn of(layer: ImageLayer, layers: Vec<OciDescriptor>) -> SignatureImage {
        // The config lists the layers' digests as a container image config does; cosign writes
        // the same shape, and registries that inspect configs accept it.
        let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
        let config_bytes = serde_json::to_vec(&serde_json::json!({
            "architecture": "",
            "config": {},
            "created": "0001-01-01T00:00:00Z",
            "history": [{"created": "0001-01-01T00:00:00Z"}],
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }))
        .expect("a JSON value always serialises");
        let config = Config::new(config_bytes, CONFIG_MEDIA_TYPE.to_owned(), None);
        let manifest = OciImageManifest {
            config: OciDescriptor {
                media_type: config.media_type.clone(),
                digest: sha256(&config.data),
                size: config.data.len() as i64,
                ..OciDescriptor::default()
            },
            layers,
            ..OciImageManifest::default()
        };
        SignatureImage {
            layer,
            config,
            manifest,
        }
    }
}

/// Pushes `image` under `tag_ref`: the new payload, the config, then the manifest, so that the
/// tag never names blobs the registry lacks.
async fn push_signature_image(
    session: &Session,
    tag_ref: &Reference,
    image: &SignatureImage,
) -> Result<(), String> {
    let registry = tag_ref.resolve_registry().to_owned();
    let at = |what: &str| format!("{what} {tag_ref}");
    let client = &session.client;
    client
        .push_blob(
            tag_ref,
            image.layer.data.clone(),
            &image.layer.sha256_digest(),
        )
        .await
        .map_err(|e| explain(e, &at("pushing the signature payload to"), &registry))?;
    client
        .push_blob(
            tag_ref,
            image.config.data.clone(),
            &image.manifest.config.digest,
        )
        .await
        .map_err(|e| explain(e, &at("pushing the signature config to"), &registry))?;
    client
        .push_manifest_raw(
            tag_ref,
            canonical_json(&image.manifest),
            http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
        )
        .await
        .map_err(|e| explain(e, &at("pushing the signature manifest to"), &registry))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload is the document cosign signs: sigstore's own type reads it back with the
    /// digest and repository we gave, and it names no tag.
    #[test]
    fn payload_is_simple_signing() {
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let bytes = payload("127.0.0.1:5000/p/taint-preservation", digest);
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "critical": {
                    "identity": {"docker-reference": "127.0.0.1:5000/p/taint-preservation"},
                    "image": {"docker-manifest-digest": digest},
                    "type": "cosign container image signature"
                },
                "optional": null
            })
        );
        assert_eq!(
            signature_tag(digest),
            "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig"
        );
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("taintguard-sign-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every way a key file can be wrong names the file and what to do, and a good key signs
    /// what its public half verifies. One test owns COSIGN_PASSWORD.
    #[test]
    fn keys_load_or_say_why_not() {
        let dir = temp_dir("keys");
        let prefix = dir.join("cosign");
        let prefix = prefix.to_str().unwrap();
        std::env::set_var(PASSWORD_ENV, "right");
        let (private, public) = generate_key_pair(prefix).unwrap();
        assert!(generate_key_pair(prefix)
            .unwrap_err()
            .contains("already exists"));
        let plain = dir.join("plain.pem");
        let pair = SigStoreKeyPair::ECDSA(ECDSAKeys::new(EllipticCurve::P256).unwrap());
        std::fs::write(&plain, pair.private_key_to_pem().unwrap().as_bytes()).unwrap();
        let garbage = dir.join("garbage.key");
        std::fs::write(&garbage, "not a key").unwrap();
        let rsa_label = dir.join("rsa.key");
        std::fs::write(
            &rsa_label,
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
        )
        .unwrap();

        /// label, key file, COSIGN_PASSWORD, what loading it gives
        type Case<'a> = (&'a str, &'a Path, Option<&'a str>, Result<(), &'a str>);
        let cases: [Case; 7] = [
            ("encrypted, right password", &private, Some("right"), Ok(())),
            (
                "encrypted, wrong password",
                &private,
                Some("wrong"),
                Err("cannot decrypt it with the password in COSIGN_PASSWORD"),
            ),
            (
                "encrypted, no password",
                &private,
                None,
                Err("the key is encrypted; set COSIGN_PASSWORD"),
            ),
            ("PKCS#8, no password needed", &plain, None, Ok(())),
            ("public key", &public, None, Err("this is a public key")),
            ("not PEM", &garbage, None, Err("not a PEM file")),
            (
                "missing file",
                &dir.join("absent.key"),
                None,
                Err("cannot read it"),
            ),
        ];
        for (label, path, password, want) in cases {
            match password {
                Some(p) => std::env::set_var(PASSWORD_ENV, p),
                None => std::env::remove_var(PASSWORD_ENV),
            }
            match (Signer::load(path), want) {
                (Ok(signer), Ok(())) => {
                    let signature = signer.sign(b"payload").unwrap();
                    let public = CosignVerificationKey::try_from_pem(
                        pair_public_pem(path, password).as_bytes(),
                    )
                    .unwrap();
                    public
                        .verify_signature(
                            Signature::Base64Encoded(signature.as_bytes()),
                            b"payload",
                        )
                        .unwrap_or_else(|e| panic!("{label}: {e}"));
                    assert!(public
                        .verify_signature(Signature::Base64Encoded(signature.as_bytes()), b"other")
                        .is_err());
                }
                (Err(e), Err(fragment)) => {
                    assert!(e.contains(fragment), "{label}: {e}");
                    assert!(e.contains(&path.display().to_string()), "{label}: {e}");
                }
                (got, want) => panic!("{label}: got {got:?}, want {want:?}"),
            }
        }
        // An RSA block is refused with the reason, not as garbage.
        assert!(Signer::load(&rsa_label)
            .unwrap_err()
            .contains("unsupported PEM block `RSA PRIVATE KEY`"));
        std::env::remove_var(PASSWORD_ENV);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The public key of the private key at `path`, read independently of `Signer`.
    fn pair_public_pem(path: &Path, password: Option<&str>) -> String {
        let text = std::fs::read(path).unwrap();
        let pair = match password {
            Some(p) => SigStoreKeyPair::from_encrypted_pem(&text, p.as_bytes()).unwrap(),
            None => SigStoreKeyPair::from_pem(&text).unwrap(),
        };
        pair.public_key_to_pem().unwrap()
    }
}
