//! `taintguard-oci`: publishes the built policy modules to OCI registries the way Kubewarden
//! pulls them, and writes their deployment manifests. Run `taintguard-oci help`; the commands
//! and their arguments are the [`Command`] enum's (clap).

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod artifact;
mod chart;
mod layout;
mod manifests;
mod reference;
mod registry;
mod sbom;
mod sign;
mod verify;
mod webhook;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use artifact::Artifact;

/// Publishes the built policy modules to OCI registries the way Kubewarden pulls them, and
/// writes their deployment manifests.
///
/// Plain HTTP is used for loopback registries (localhost, 127.0.0.0/8, [::1]) and, for any other
/// registry, only with --insecure or TAINTGUARD_REGISTRY_INSECURE=1. Credentials come from
/// TAINTGUARD_REGISTRY_USERNAME and TAINTGUARD_REGISTRY_PASSWORD, else the docker config
/// ($DOCKER_CONFIG/config.json or ~/.docker/config.json, credential helpers included), else none.
#[derive(Parser)]
#[command(name = "taintguard-oci", version)]
enum Command {
    /// Push every Kubewarden module in DIST to REF_PREFIX/<name>:TAG, print `<artifact>\t<immutable
    /// ref>` per module, and rewrite its manifests in DIST/<name>/ to use the immutable reference.
    Push {
        #[command(flatten)]
        transport: Transport,
        #[command(flatten)]
        dirs: Dirs,
        /// Also sign each pushed manifest digest with KEY and store the signature as cosign does
        /// (tag sha256-<hex>.sig), which `kwctl verify` and policy-server's verificationConfig
        /// check. KEY is a cosign key (password in $COSIGN_PASSWORD) or a PKCS#8 PEM private key;
        /// it is loaded before anything is pushed. Without --sign, $TAINTGUARD_SIGNING_KEY names
        /// the key where it is set and not empty.
        #[arg(long, value_name = "KEY")]
        sign: Option<PathBuf>,
        /// Where the modules go: REF_PREFIX/<name>:TAG.
        ref_prefix: String,
        /// Defaults to v<io.kubewarden.policy.version>; a TAG that is a version must be that one,
        /// any other TAG, such as latest, is a moving pointer beside it.
        tag: Option<String>,
    },
    /// Write a new ECDSA P-256 key pair as cosign does: PREFIX.key, encrypted with
    /// $COSIGN_PASSWORD, and PREFIX.pub, the public key verifiers are given.
    GenerateKeyPair { prefix: String },
    /// Write each module's manifests, DIST/<name>/{cluster-admission-policy.yaml,
    /// admission-policy.yaml,artifacthub-pkg.yml,README.md} (and a gatekeeper module's
    /// gatekeeper-config.yaml, the sync of what it reads), its policy-catalog Helm chart
    /// DIST/charts/<name>/ (docs/settings-ui.md), and DIST/artifacthub-repo.yml.
    Manifests {
        #[command(flatten)]
        dirs: Dirs,
        /// The manifests refer to PREFIX/<name>:TAG; default: the parent of the module's
        /// io.kubewarden.policy.ociUrl annotation.
        #[arg(long, value_name = "PREFIX")]
        ref_prefix: Option<String>,
        /// Default: v<io.kubewarden.policy.version>.
        #[arg(long)]
        tag: Option<String>,
    },
    /// Write DIST/<module>.spdx.json for each module in DIST: an SPDX 2.3 SBOM of the crates
    /// linked into it, from cargo's resolution of the build of PACKAGEs (the packages built
    /// together) for the module's target; run from the workspace (docs/release.md).
    Sbom {
        /// The built modules.
        #[arg(long, default_value = "dist")]
        dist: PathBuf,
        #[arg(required = true)]
        packages: Vec<String>,
    },
    /// Fetch a module the way Kubewarden's policy-fetcher does and write it to OUTPUT.
    Pull {
        #[command(flatten)]
        transport: Transport,
        reference: String,
        output: PathBuf,
    },
    /// Check a copy fetched by another client (manifest bytes, blobs named by hex digest in
    /// BLOB_DIR) against the artifact it was pushed from.
    VerifyCopy {
        artifact: PathBuf,
        immutable_ref: String,
        manifest: PathBuf,
        blob_dir: PathBuf,
    },
}

/// Where the built modules and the policies' sources are.
#[derive(clap::Args)]
struct Dirs {
    /// The built modules and what is written beside them.
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// The policies' folders (their settings examples and questions-ui.yml).
    #[arg(long, default_value = "policies")]
    policies: PathBuf,
}

/// Plain HTTP to a registry that is not on loopback.
#[derive(clap::Args)]
struct Transport {
    /// Use plain HTTP for any registry, not only loopback ones.
    #[arg(long, env = registry::INSECURE_ENV, value_parser = switch)]
    insecure: bool,
}

/// An environment switch: `1`, `true` or `yes` turn it on; empty, `0`, `false` or `no` leave it
/// off; anything else is refused rather than guessed.
fn switch(value: &str) -> Result<bool, String> {
    match value {
        "1" | "true" | "yes" => Ok(true),
        "" | "0" | "false" | "no" => Ok(false),
        other => Err(format!(
            "{other:?} is neither 1, true, yes nor 0, false, no"
        )),
    }
}

fn main() -> ExitCode {
    let result = match Command::parse() {
        Command::Push {
            transport,
            dirs,
            sign,
            ref_prefix,
            tag,
        } => {
            let key = sign::key_path(sign);
            let destination = Destination {
                ref_prefix: &ref_prefix,
                tag: tag.as_deref(),
            };
            push(&dirs, key.as_deref(), &destination, transport.insecure)
        }
        Command::GenerateKeyPair { prefix } => generate_key_pair(&prefix),
        Command::Manifests {
            dirs,
            ref_prefix,
            tag,
        } => manifests(&dirs, ref_prefix.as_deref(), tag.as_deref()),
        Command::Sbom { dist, packages } => sboms(&dist, &packages),
        Command::Pull {
            transport,
            reference,
            output,
        } => pull(&reference, &output, transport.insecure),
        Command::VerifyCopy {
            artifact,
            immutable_ref,
            manifest,
            blob_dir,
        } => verify_copy(&artifact, &immutable_ref, &manifest, &blob_dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("taintguard-oci: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Where `push` puts the modules: `REF_PREFIX/<name>:TAG`.
struct Destination<'a> {
    /// The repository prefix each module's name is appended to.
    ref_prefix: &'a str,
    /// The tag; `None` tags each module `v<io.kubewarden.policy.version>`.
    tag: Option<&'a str>,
}

/// Pushes every module of `dirs.dist` to `destination`, signing each with the key at `key` if
/// one is given, and rewrites its manifests to the immutable reference.
fn push(
    dirs: &Dirs,
    key: Option<&Path>,
    destination: &Destination<'_>,
    insecure: bool,
) -> Result<(), String> {
    let prefix = reference::parse_prefix(destination.ref_prefix)?;
    if let Some(tag) = destination.tag {
        reference::validate_tag(tag)?;
    }
    // A key that cannot sign must fail before the first upload, not after the modules moved.
    let signer = key.map(sign::Signer::load).transpose()?;
    let artifacts = artifact::discover(&dirs.dist)?;
    write_repository_metadata(&dirs.dist, &artifacts)?;
    // Resolve every reference before the first upload, so a bad tag fails before anything moves.
    let plan = plan_pushes(&artifacts, &prefix, destination.tag)?;
    let session = connect(plan[0].1.resolve_registry(), insecure)?;
    let created_at = manifests::created_at()?;
    let publisher = Publisher {
        runtime: runtime()?,
        session,
        signer,
    };
    for (artifact, reference, tag) in plan {
        let digest = publisher.push_module(artifact, &reference)?;
        let immutable = reference::immutable(&reference, &digest);
        let repository = prefix.repository(&artifact.name);
        publisher.sign(&repository, &digest)?;
        publisher.push_sbom(&repository, artifact, &digest)?;
        println!("{}\t{immutable}", artifact.path.display());
        let target = manifests::Target {
            repository,
            tag,
            digest: Some(digest),
        };
        write_manifests(dirs, artifact, &target, &created_at)?;
    }
    Ok(())
}

/// Each artifact with the reference it is pushed to and its tag (`tag`, else its version's),
/// or the first artifact whose tag is not valid or not its version.
fn plan_pushes<'a>(
    artifacts: &'a [Artifact],
    prefix: &reference::Prefix,
    tag: Option<&str>,
) -> Result<Vec<(&'a Artifact, oci_client::Reference, String)>, String> {
    let mut plan = Vec::new();
    for artifact in artifacts {
        let tag = match tag {
            Some(tag) => tag.to_owned(),
            None => artifact.default_tag()?,
        };
        reference::validate_tag(&tag).map_err(|e| format!("{}: {e}", artifact.path.display()))?;
        artifact.check_tag(&tag)?;
        plan.push((artifact, prefix.reference(&artifact.name, &tag)?, tag));
    }
    Ok(plan)
}

/// A session with the registry `registry_name`, over the transport `insecure` allows and with
/// the credentials found for it; says on stderr which transport and credentials it uses.
fn connect(registry_name: &str, insecure: bool) -> Result<registry::Session, String> {
    let (auth, auth_source) = registry::auth(registry_name)?;
    eprintln!(
        "registry {registry_name}: {}, credentials: {auth_source}",
        registry::describe_transport(registry_name, insecure)
    );
    let client = registry::client(registry_name, insecure)?;
    Ok(registry::Session { client, auth })
}

/// What every upload of one `push` shares: the runtime the async client runs on, the registry
/// session, and the key to sign with, if any.
struct Publisher {
    runtime: tokio::runtime::Runtime,
    session: registry::Session,
    signer: Option<sign::Signer>,
}

impl Publisher {
    /// Pushes `artifact`'s module to `reference` and returns its manifest digest.
    fn push_module(
        &self,
        artifact: &Artifact,
        reference: &oci_client::Reference,
    ) -> Result<String, String> {
        let built = layout::build(&artifact.bytes, &artifact.metadata.annotations);
        if !built.dropped_annotations.is_empty() {
            eprintln!(
                "note: {}: multi-line annotations not sent as OCI annotations (as kwctl push): {}",
                artifact.path.display(),
                built.dropped_annotations.join(", ")
            );
        }
        let (client, auth) = (&self.session.client, &self.session.auth);
        let digest = self
            .runtime
            .block_on(registry::push(client, auth, reference, &built))?;
        eprintln!(
            "pushed {} ({}) as {reference}",
            artifact.path.display(),
            artifact.metadata.execution_mode
        );
        Ok(digest)
    }

    /// Signs the module `digest` in `repository` when a key is given, and says what was done.
    fn sign(&self, repository: &str, digest: &str) -> Result<(), String> {
        let Some(signer) = &self.signer else {
            return Ok(());
        };
        let (at, outcome) = self.runtime.block_on(sign::sign_and_push(
            &self.session,
            signer,
            repository,
            digest,
        ))?;
        let what = match outcome {
            sign::Outcome::Created => "signed".to_owned(),
            sign::Outcome::Appended { kept } => {
                format!("signed (beside {kept} signature(s) already stored)")
            }
            sign::Outcome::AlreadySigned => "already signed with this key".to_owned(),
        };
        eprintln!("    {what}: {at} ({})", signer.path.display());
        Ok(())
    }

    /// The artifact's SBOM beside its module, as cosign attaches one: tag
    /// `sha256-<module digest>.sbom`, signed like the module when a key is given
    /// (docs/release.md).
    fn push_sbom(
        &self,
        repository: &str,
        artifact: &Artifact,
        module_digest: &str,
    ) -> Result<(), String> {
        let path = sbom_path(artifact);
        let bytes = std::fs::read(&path).map_err(|e| {
            format!(
                "{}: {e} (./build.sh writes an SBOM beside each module)",
                path.display()
            )
        })?;
        let attachment = layout::attachment(&bytes, layout::SPDX_MEDIA_TYPE);
        let reference: oci_client::Reference = format!(
            "{repository}:{}",
            layout::attachment_tag(module_digest, "sbom")
        )
        .parse()
        .map_err(|e| format!("{repository}: cannot form the SBOM tag: {e}"))?;
        let (client, auth) = (&self.session.client, &self.session.auth);
        let digest =
            self.runtime
                .block_on(registry::push(client, auth, &reference, &attachment))?;
        eprintln!("    SBOM {} as {reference}", path.display());
        if let Some(signer) = &self.signer {
            let (at, _) = self.runtime.block_on(sign::sign_and_push(
                &self.session,
                signer,
                repository,
                &digest,
            ))?;
            eprintln!("    SBOM signed: {at}");
        }
        Ok(())
    }
}

fn generate_key_pair(prefix: &str) -> Result<(), String> {
    let (private, public) = sign::generate_key_pair(prefix)?;
    eprintln!(
        "wrote {} (private, encrypted with ${}) and {} (public: give it to kwctl verify -k and \
         to the PolicyServer's verificationConfig)",
        private.display(),
        sign::PASSWORD_ENV,
        public.display()
    );
    Ok(())
}

/// Writes `artifact`'s manifests for `target` into `dirs.dist/<name>/` and its chart into
/// `dirs.dist/charts/`, deployed as its folder in `dirs.policies` says.
fn write_manifests(
    dirs: &Dirs,
    artifact: &Artifact,
    target: &manifests::Target,
    created_at: &str,
) -> Result<(), String> {
    let dist = &dirs.dist;
    let folder = manifests::PolicyFolder::read(&dirs.policies, &artifact.policy)?;
    let rendered = manifests::render(artifact, &folder, target, created_at)?;
    let written = manifests::write(dist, &artifact.name, &rendered)?;
    let names: Vec<String> = written
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    eprintln!(
        "    wrote {}/{{{}}} for {}",
        dist.join(&artifact.name).display(),
        names.join(","),
        target.module()
    );
    // The chart names the tag: the UI composes registry/repository:tag.
    let tagged = manifests::Target {
        digest: None,
        ..target.clone()
    };
    let chart = chart::render(artifact, &folder, &tagged, &rendered.readme)?;
    let dir = chart::write(&dist.join("charts"), &chart)?;
    eprintln!("    wrote {} (policy-catalog chart)", dir.display());
    Ok(())
}

fn write_repository_metadata(dist: &Path, artifacts: &[Artifact]) -> Result<(), String> {
    let path = dist.join("artifacthub-repo.yml");
    std::fs::write(&path, manifests::repository_metadata(artifacts)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("    wrote {}", path.display());
    Ok(())
}

fn manifests(dirs: &Dirs, ref_prefix: Option<&str>, tag: Option<&str>) -> Result<(), String> {
    let dist = &dirs.dist;
    let given_prefix = ref_prefix.map(reference::parse_prefix).transpose()?;
    if let Some(tag) = tag {
        reference::validate_tag(tag)?;
    }
    let created_at = manifests::created_at()?;
    let artifacts = artifact::discover(dist)?;
    write_repository_metadata(dist, &artifacts)?;
    for artifact in artifacts {
        let prefix = match &given_prefix {
            Some(prefix) => prefix.clone(),
            None => {
                let oci_url = artifact.metadata.annotation("io.kubewarden.policy.ociUrl").ok_or_else(|| {
                    format!(
                        "{}: no --ref-prefix given and the module has no io.kubewarden.policy.ociUrl annotation",
                        artifact.path.display()
                    )
                })?;
                reference::prefix_of_oci_url(oci_url)
                    .map_err(|e| format!("{}: {e}", artifact.path.display()))?
            }
        };
        let tag = match tag {
            Some(tag) => tag.to_owned(),
            None => artifact.default_tag()?,
        };
        let target = manifests::Target {
            repository: prefix.repository(&artifact.name),
            tag,
            digest: None,
        };
        write_manifests(dirs, &artifact, &target, &created_at)?;
    }
    Ok(())
}

/// `dist/<module>.spdx.json` beside each `dist/<module>.wasm`.
fn sbom_path(artifact: &Artifact) -> PathBuf {
    artifact.path.with_extension("spdx.json")
}

fn sboms(dist: &Path, packages: &[String]) -> Result<(), String> {
    let workspace = std::env::current_dir().map_err(|e| e.to_string())?;
    let created = manifests::created_at()?;
    let checksums = sbom::lock_checksums(&workspace)?;
    // One `cargo tree` per target: it holds the tree of every package built for it.
    let mut trees: BTreeMap<&str, String> = BTreeMap::new();
    for artifact in artifact::discover(dist)? {
        let target = sbom::target_of(&artifact.metadata.execution_mode)
            .map_err(|e| format!("{}: {e}", artifact.path.display()))?;
        if !trees.contains_key(target) {
            trees.insert(target, sbom::tree(&workspace, target, packages)?);
        }
        let graph = sbom::parse_tree(&trees[target], &artifact.policy)?;
        let linked = sbom::Linked {
            target,
            graph: &graph,
        };
        let document = sbom::document(&artifact, &linked, &checksums, &created);
        let path = sbom_path(&artifact);
        let text = serde_json::to_string_pretty(&document).map_err(|e| e.to_string())? + "\n";
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!(
            "    {}  {} crates linked ({target})",
            path.display(),
            graph.crates.len()
        );
    }
    Ok(())
}

fn pull(reference: &str, output: &Path, insecure: bool) -> Result<(), String> {
    let reference = reference::parse_reference(reference)?;
    let registry_name = reference.resolve_registry().to_owned();
    let (auth, _) = registry::auth(&registry_name)?;
    let client = registry::client(&registry_name, insecure)?;
    let (module, digest) =
        runtime()?.block_on(registry::pull_like_kubewarden(&client, &auth, &reference))?;
    if let Some(wanted) = reference.digest() {
        if wanted != digest {
            return Err(format!(
                "{reference}: the registry served manifest {digest}"
            ));
        }
    }
    let shown = output.display();
    std::fs::write(output, &module).map_err(|e| format!("{shown}: {e}"))?;
    println!("{shown}\t{digest}\t{} bytes", module.len());
    Ok(())
}

fn verify_copy(
    artifact: &Path,
    immutable_ref: &str,
    manifest: &Path,
    blob_dir: &Path,
) -> Result<(), String> {
    let artifact = Artifact::load_required(artifact)?;
    let reference = reference::parse_reference(immutable_ref)?;
    let digest = reference
        .digest()
        .ok_or_else(|| format!("`{immutable_ref}` is not an immutable (@sha256:) reference"))?;
    let manifest = std::fs::read(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let mut blobs = BTreeMap::new();
    let entries =
        std::fs::read_dir(blob_dir).map_err(|e| format!("{}: {e}", blob_dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("{}: {e}", blob_dir.display()))?
            .path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            blobs.insert(format!("sha256:{name}"), bytes);
        }
    }
    let problems = verify::check(&artifact, digest, &verify::Pulled { manifest, blobs });
    if problems.is_empty() {
        println!("ok {} = {immutable_ref}", artifact.path.display());
        Ok(())
    } else {
        Err(format!(
            "{immutable_ref} does not match {}:\n  - {}",
            artifact.path.display(),
            problems.join("\n  - ")
        ))
    }
}
