//! Talking to a registry with oci-client: transport, credentials, push and the pull Kubewarden
//! does (policy-fetcher: `Client::pull` accepting only the wasm layer media type, first layer =
//! module, wasm magic checked).

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use taintguard_wasm_metadata::section;

use crate::layout;
use crate::reference::{self, Transport};

pub const USERNAME_ENV: &str = "TAINTGUARD_REGISTRY_USERNAME";
pub const PASSWORD_ENV: &str = "TAINTGUARD_REGISTRY_PASSWORD";
pub const INSECURE_ENV: &str = "TAINTGUARD_REGISTRY_INSECURE";

/// A client for one registry and the credentials it sends there: every request to the registry
/// needs both.
pub struct Session {
    pub client: Client,
    pub auth: RegistryAuth,
}

/// A client for one registry, plain HTTP only for loopback registries or when `insecure`.
pub fn client(registry: &str, insecure: bool) -> Result<Client, String> {
    // reqwest is built without a bundled crypto provider; ring is the one this tool links.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = match reference::transport(registry, insecure) {
        Transport::Https => ClientProtocol::Https,
        Transport::HttpLoopback | Transport::HttpRequested => {
            ClientProtocol::HttpsExcept(vec![registry.to_owned()])
        }
    };
    let config = ClientConfig {
        protocol,
        connect_timeout: Some(std::time::Duration::from_secs(10)),
        read_timeout: Some(std::time::Duration::from_secs(120)),
        ..ClientConfig::default()
    };
    Client::try_from(config).map_err(|e| format!("cannot set up the OCI client: {e}"))
}

pub fn describe_transport(registry: &str, insecure: bool) -> &'static str {
    match reference::transport(registry, insecure) {
        Transport::Https => "HTTPS",
        Transport::HttpLoopback => "plain HTTP (loopback registry)",
        Transport::HttpRequested => "plain HTTP (asked for with --insecure)",
    }
}

/// Where credentials for `registry` come from: the environment pair first, then the docker
/// config (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, credential helpers
/// included), else anonymous.
pub fn auth(registry: &str) -> Result<(RegistryAuth, String), String> {
    let user = std::env::var(USERNAME_ENV).ok().filter(|s| !s.is_empty());
    let password = std::env::var(PASSWORD_ENV).ok().filter(|s| !s.is_empty());
    match (user, password) {
        (Some(user), Some(password)) => {
            return Ok((
                RegistryAuth::Basic(user, password),
                format!("${USERNAME_ENV}"),
            ))
        }
        (None, None) => {}
        _ => {
            return Err(format!(
                "set both {USERNAME_ENV} and {PASSWORD_ENV}, or neither (to use the docker config)"
            ))
        }
    }
    let Some(path) = docker_config_path().filter(|p| p.is_file()) else {
        return Ok((RegistryAuth::Anonymous, "none (anonymous)".into()));
    };
    use docker_credential::{CredentialRetrievalError as E, DockerCredential};
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let server = match registry {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "https://index.docker.io/v1/",
        other => other,
    };
    let from = path.display();
    match docker_credential::get_credential_from_reader(std::io::BufReader::new(file), server) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            Ok((RegistryAuth::Basic(user, password), format!("{from}")))
        }
        Ok(DockerCredential::IdentityToken(token)) => Ok((
            RegistryAuth::Bearer(token),
            format!("{from} (identity token)"),
        )),
        Err(E::NoCredentialConfigured) => Ok((
            RegistryAuth::Anonymous,
            format!("none for {registry} in {from} (anonymous)"),
        )),
        Err(e) => Err(format!(
            "cannot get the credentials for {registry} from {from}: {e:?}"
        )),
    }
}

/// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn docker_config_path() -> Option<std::path::PathBuf> {
    let dir = match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".docker"),
    };
    Some(dir.join("config.json"))
}

/// An oci-client error as a message that says what to do about it.
pub fn explain(e: OciDistributionError, what: &str, registry: &str) -> String {
    let refused = format!(
        "; the registry refused access: if credentials are missing or wrong, run `docker login \
         {registry}` or set {USERNAME_ENV} and {PASSWORD_ENV}; if they are right, check that \
         they may push to and pull from this repository"
    );
    let hint = match &e {
        OciDistributionError::AuthenticationFailure(_)
        | OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::ServerError {
            code: 401 | 403, ..
        } => refused,
        OciDistributionError::RequestError(re) if re.is_connect() || re.is_timeout() => {
            format!("; is a registry listening at {registry}?")
        }
        _ => String::new(),
    };
    let mut message = format!("{what}: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message.trim_end().to_owned() + &hint
}

/// Pushes one module to `reference` (a tag) and returns the manifest digest, after checking the
/// registry reports the same digest for the tag.
pub async fn push(
    client: &Client,
    auth: &RegistryAuth,
    reference: &Reference,
    artifact: &layout::Artifact,
) -> Result<String, String> {
    let registry = reference.resolve_registry().to_owned();
    let at = |what: &str| format!("{what} {reference}");
    client.store_auth_if_needed(&registry, auth).await;
    client
        .push_blob(
            reference,
            artifact.layer.data.clone(),
            &artifact.manifest.layers[0].digest,
        )
        .await
        .map_err(|e| explain(e, &at("pushing the module layer to"), &registry))?;
    client
        .push_blob(
            reference,
            artifact.config.data.clone(),
            &artifact.manifest.config.digest,
        )
        .await
        .map_err(|e| explain(e, &at("pushing the config blob to"), &registry))?;
    client
        .push_manifest_raw(
            reference,
            artifact.manifest_bytes.clone(),
            http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
        )
        .await
        .map_err(|e| explain(e, &at("pushing the manifest to"), &registry))?;
    let reported = client
        .fetch_manifest_digest(reference, auth)
        .await
        .map_err(|e| explain(e, &at("reading back the digest of"), &registry))?;
    if reported != artifact.digest {
        return Err(format!(
            "{reference}: the registry reports digest {reported} after the push, but the manifest \
             sent has digest {}; it rewrote the manifest",
            artifact.digest
        ));
    }
    Ok(artifact.digest.clone())
}

/// What Kubewarden's policy-fetcher gets for `reference`: the first layer's bytes, refusing any
/// layer that is not a wasm module layer and any module without the wasm magic. Also returns the
/// manifest digest the registry served.
pub async fn pull_like_kubewarden(
    client: &Client,
    auth: &RegistryAuth,
    reference: &Reference,
) -> Result<(Vec<u8>, String), String> {
    let registry = reference.resolve_registry().to_owned();
    let image = client
        .pull(reference, auth, vec![WASM_LAYER_MEDIA_TYPE])
        .await
        .map_err(|e| explain(e, &format!("pulling {reference}"), &registry))?;
    let module = image
        .layers
        .into_iter()
        .next()
        .ok_or_else(|| format!("{reference}: the manifest has no layers"))?
        .data
        .to_vec();
    if !module.starts_with(section::MAGIC) {
        return Err(format!("{reference}: the first layer is not a wasm module"));
    }
    let digest = image
        .digest
        .ok_or_else(|| format!("{reference}: the registry sent no manifest digest"))?;
    Ok((module, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(var: &str, value: Option<&str>) {
        match value {
            Some(v) => std::env::set_var(var, v),
            None => std::env::remove_var(var),
        }
    }

    /// Environment pair first (all or nothing), then the docker config. One test owns these
    /// process-wide variables.
    #[test]
    fn where_credentials_come_from() {
        let registry = "registry.test.invalid";
        let dir = std::env::temp_dir().join(format!("taintguard-oci-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config.json");
        // base64("u:p") = dTpw
        let with_auth = r#"{"auths":{"registry.test.invalid":{"auth":"dTpw"}}}"#;
        let other_registry = r#"{"auths":{"ghcr.io":{"auth":"dTpw"}}}"#;
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Result<&'a str, &'a str>,
        );
        let cases: [Case; 7] = [
            (
                Some("u"),
                Some("p"),
                Some(with_auth),
                Ok("$TAINTGUARD_REGISTRY_USERNAME"),
            ),
            (None, None, None, Ok("none (anonymous)")),
            (None, None, Some(with_auth), Ok("config.json")),
            (None, None, Some(other_registry), Ok("(anonymous)")),
            (
                None,
                None,
                Some("{not json"),
                Err("cannot get the credentials"),
            ),
            (Some("u"), None, None, Err("set both")),
            (None, Some("p"), None, Err("set both")),
        ];
        std::env::set_var("DOCKER_CONFIG", &dir);
        for (user, password, config_json, expected) in cases {
            set(USERNAME_ENV, user);
            set(PASSWORD_ENV, password);
            match config_json {
                Some(text) => std::fs::write(&config, text).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&config);
                }
            }
            let label = format!("{user:?}/{password:?}/{config_json:?}");
            match (auth(registry), expected) {
                (Ok((found, source)), Ok(want)) => {
                    assert!(source.contains(want), "{label}: {source}");
                    let anonymous = source.contains("anonymous");
                    assert_eq!(found == RegistryAuth::Anonymous, anonymous, "{label}");
                }
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{label}: {e}"),
                (got, want) => panic!("{label}: got {got:?}, want {want:?}"),
            }
        }
        std::env::remove_var(USERNAME_ENV);
        std::env::remove_var(PASSWORD_ENV);
        std::env::remove_var("DOCKER_CONFIG");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
