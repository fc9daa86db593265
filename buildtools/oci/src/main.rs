//! `taintguard-oci`: publishes the built policy modules to OCI registries the way Kubewarden
//! pulls them, and writes their deployment manifests. Run `taintguard-oci help`.

mod artifact;
mod chart;
mod layout;
mod manifests;
mod reference;
mod registry;
mod sbom;
mod sign;
mod verify;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use artifact::Artifact;

const USAGE: &str = "\
usage:
  taintguard-oci push [--insecure] [--dist DIR] [--policies DIR] [--sign KEY] REF_PREFIX [TAG]
      Push every Kubewarden module in DIR (default dist) to REF_PREFIX/<name>:TAG (TAG defaults
      to v<io.kubewarden.policy.version>; a TAG that is a version must be that one, any other
      TAG, such as latest, is a moving pointer beside it), print `<artifact>\\t<immutable ref>` per module, and
      rewrite its manifests in DIR/<name>/ to use the immutable reference. With --sign (or
      $TAINTGUARD_SIGNING_KEY set to a key file), also sign each pushed manifest digest with
      KEY and store the signature as cosign does (tag sha256-<hex>.sig), which `kwctl verify`
      and policy-server's verificationConfig check. KEY is a cosign key (password in
      $COSIGN_PASSWORD) or a PKCS#8 PEM private key; it is loaded before anything is pushed.
  taintguard-oci generate-key-pair PREFIX
      Write a new ECDSA P-256 key pair as cosign does: PREFIX.key, encrypted with
      $COSIGN_PASSWORD, and PREFIX.pub, the public key verifiers are given.
  taintguard-oci manifests [--dist DIR] [--policies DIR] [--ref-prefix PREFIX] [--tag TAG]
      Write DIR/<name>/{cluster-admission-policy.yaml,admission-policy.yaml,artifacthub-pkg.yml,
      README.md} for each module, referring to PREFIX/<name>:TAG (PREFIX defaults to the parent
      of the module's io.kubewarden.policy.ociUrl annotation), its policy-catalog Helm chart
      DIR/charts/<name>/ (docs/settings-ui.md), and DIR/artifacthub-repo.yml.
  taintguard-oci sbom [--dist DIR] PACKAGE...
      Write DIR/<module>.spdx.json for each module in DIR: an SPDX 2.3 SBOM of the crates linked
      into it, from cargo's resolution of the build of PACKAGEs (the packages built together)
      for the module's target; run from the workspace (docs/release.md).
  taintguard-oci pull [--insecure] REFERENCE OUTPUT
      Fetch a module the way Kubewarden's policy-fetcher does and write it to OUTPUT.
  taintguard-oci verify-copy ARTIFACT IMMUTABLE_REF MANIFEST BLOB_DIR
      Check a copy fetched by another client (manifest bytes, blobs named by hex digest in
      BLOB_DIR) against the artifact it was pushed from.

Plain HTTP is used for loopback registries (localhost, 127.0.0.0/8, [::1]) and, for any other
registry, only with --insecure or TAINTGUARD_REGISTRY_INSECURE=1. Credentials come from
TAINTGUARD_REGISTRY_USERNAME and TAINTGUARD_REGISTRY_PASSWORD, else the docker config
($DOCKER_CONFIG/config.json or ~/.docker/config.json, credential helpers included), else none.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("taintguard-oci: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Options and positional arguments of one command.
#[derive(Default)]
struct Args {
    flags: BTreeMap<&'static str, bool>,
    values: BTreeMap<&'static str, String>,
    positional: Vec<String>,
}

impl Args {
    fn parse(
        args: &[String],
        flags: &[&'static str],
        options: &[&'static str],
    ) -> Result<Args, String> {
        let mut parsed = Args::default();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if let Some(flag) = flags.iter().find(|f| **f == arg) {
                parsed.flags.insert(flag, true);
            } else if let Some(option) = options.iter().find(|o| **o == arg) {
                let value = it
                    .next()
                    .ok_or_else(|| format!("{option} needs a value\n\n{USAGE}"))?;
                parsed.values.insert(option, value.clone());
            } else if arg.starts_with("--") {
                return Err(format!("unknown option {arg}\n\n{USAGE}"));
            } else {
                parsed.positional.push(arg.clone());
            }
        }
        Ok(parsed)
    }

    fn path(&self, option: &str, default: &str) -> PathBuf {
        PathBuf::from(self.values.get(option).map_or(default, String::as_str))
    }

    fn insecure(&self) -> bool {
        self.flags.contains_key("--insecure")
            || std::env::var(registry::INSECURE_ENV)
                .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "yes"))
    }

    fn positional(&self, min: usize, max: usize) -> Result<&[String], String> {
        if (min..=max).contains(&self.positional.len()) {
            Ok(&self.positional)
        } else {
            Err(format!("wrong number of arguments\n\n{USAGE}"))
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    let (command, rest) = args.split_first().ok_or_else(|| USAGE.to_owned())?;
    match command.as_str() {
        "push" => push(Args::parse(
            rest,
            &["--insecure"],
            &["--dist", "--policies", "--sign"],
        )?),
        "sbom" => sboms(Args::parse(rest, &[], &["--dist"])?),
        "generate-key-pair" => generate_key_pair(Args::parse(rest, &[], &[])?),
        "manifests" => manifests(Args::parse(
            rest,
            &[],
            &["--dist", "--policies", "--ref-prefix", "--tag"],
        )?),
        "pull" => pull(Args::parse(rest, &["--insecure"], &[])?),
        "verify-copy" => verify_copy(Args::parse(rest, &[], &[])?),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

fn push(args: Args) -> Result<(), String> {
    let positional = args.positional(1, 2)?;
    let prefix = reference::parse_prefix(&positional[0])?;
    let tag = positional.get(1);
    if let Some(tag) = tag {
        reference::validate_tag(tag)?;
    }
    let dist = args.path("--dist", "dist");
    let policies = args.path("--policies", "policies");
    // A key that cannot sign must fail before the first upload, not after the modules moved.
    let signer = sign::key_path(args.values.get("--sign"))
        .map(|path| sign::Signer::load(&path))
        .transpose()?;
    let artifacts = artifact::discover(&dist)?;
    write_repository_metadata(&dist, &artifacts)?;
    let insecure = args.insecure();

    // Resolve every reference before the first upload, so a bad tag fails before anything moves.
    let mut plan = Vec::new();
    for artifact in &artifacts {
        let tag = match tag {
            Some(tag) => tag.clone(),
            None => artifact.default_tag()?,
        };
        reference::validate_tag(&tag).map_err(|e| format!("{}: {e}", artifact.path.display()))?;
        artifact.check_tag(&tag)?;
        plan.push((artifact, prefix.reference(&artifact.name, &tag)?, tag));
    }

    let registry_name = plan[0].1.resolve_registry().to_owned();
    let (auth, auth_source) = registry::auth(&registry_name)?;
    eprintln!(
        "registry {registry_name}: {}, credentials: {auth_source}",
        registry::describe_transport(&registry_name, insecure)
    );
    let client = registry::client(&registry_name, insecure)?;
    let created_at = manifests::created_at()?;
    let runtime = runtime()?;
    for (artifact, reference, tag) in plan {
        let built = layout::build(&artifact.bytes, &artifact.metadata.annotations);
        if !built.dropped_annotations.is_empty() {
            eprintln!(
                "note: {}: multi-line annotations not sent as OCI annotations (as kwctl push): {}",
                artifact.path.display(),
                built.dropped_annotations.join(", ")
            );
        }
        let digest = runtime.block_on(registry::push(&client, &auth, &reference, &built))?;
        let immutable = reference::immutable(&reference, &digest);
        eprintln!(
            "pushed {} ({}) as {reference}",
            artifact.path.display(),
            artifact.metadata.execution_mode
        );
        let repository = prefix.repository(&artifact.name);
        if let Some(signer) = &signer {
            let (at, outcome) = runtime.block_on(sign::sign_and_push(
                &client,
                &auth,
                signer,
                &repository,
                &digest,
            ))?;
            let what = match outcome {
                sign::Outcome::Created => "signed".to_owned(),
                sign::Outcome::Appended { kept } => {
                    format!("signed (beside {kept} signature(s) already stored)")
                }
                sign::Outcome::AlreadySigned => "already signed with this key".to_owned(),
            };
            eprintln!("    {what}: {at} ({})", signer.path.display());
        }
        push_sbom(
            &runtime,
            &client,
            &auth,
            signer.as_ref(),
            &repository,
            artifact,
            &digest,
        )?;
        println!("{}\t{immutable}", artifact.path.display());
        let target = manifests::Target {
            repository,
            tag,
            digest: Some(digest),
        };
        write_manifests(&dist, &policies, artifact, &target, &created_at)?;
    }
    Ok(())
}

/// The artifact's SBOM beside its module, as cosign attaches one: tag
/// `sha256-<module digest>.sbom`, signed like the module when a key is given (docs/release.md).
fn push_sbom(
    runtime: &tokio::runtime::Runtime,
    client: &oci_client::Client,
    auth: &oci_client::secrets::RegistryAuth,
    signer: Option<&sign::Signer>,
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
    let digest = runtime.block_on(registry::push(client, auth, &reference, &attachment))?;
    eprintln!("    SBOM {} as {reference}", path.display());
    if let Some(signer) = signer {
        let (at, _) = runtime.block_on(sign::sign_and_push(
            client, auth, signer, repository, &digest,
        ))?;
        eprintln!("    SBOM signed: {at}");
    }
    Ok(())
}

fn generate_key_pair(args: Args) -> Result<(), String> {
    let positional = args.positional(1, 1)?;
    let (private, public) = sign::generate_key_pair(&positional[0])?;
    eprintln!(
        "wrote {} (private, encrypted with ${}) and {} (public: give it to kwctl verify -k and \
         to the PolicyServer's verificationConfig)",
        private.display(),
        sign::PASSWORD_ENV,
        public.display()
    );
    Ok(())
}

fn write_manifests(
    dist: &Path,
    policies: &Path,
    artifact: &Artifact,
    target: &manifests::Target,
    created_at: &str,
) -> Result<(), String> {
    let (settings, settings_source) = manifests::default_settings(policies, &artifact.policy)?;
    let questions = manifests::questions_ui(policies, &artifact.policy)?;
    let rendered = manifests::render(
        artifact,
        &settings,
        &settings_source,
        questions.as_deref(),
        target,
        created_at,
    )?;
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
    let chart = chart::render(
        artifact,
        &settings,
        questions.as_deref(),
        &tagged,
        &rendered.readme,
    )?;
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

fn manifests(args: Args) -> Result<(), String> {
    args.positional(0, 0)?;
    let dist = args.path("--dist", "dist");
    let policies = args.path("--policies", "policies");
    let given_prefix = args
        .values
        .get("--ref-prefix")
        .map(|p| reference::parse_prefix(p))
        .transpose()?;
    if let Some(tag) = args.values.get("--tag") {
        reference::validate_tag(tag)?;
    }
    let created_at = manifests::created_at()?;
    let artifacts = artifact::discover(&dist)?;
    write_repository_metadata(&dist, &artifacts)?;
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
        let tag = match args.values.get("--tag") {
            Some(tag) => tag.clone(),
            None => artifact.default_tag()?,
        };
        let target = manifests::Target {
            repository: prefix.repository(&artifact.name),
            tag,
            digest: None,
        };
        write_manifests(&dist, &policies, &artifact, &target, &created_at)?;
    }
    Ok(())
}

/// `dist/<module>.spdx.json` beside each `dist/<module>.wasm`.
fn sbom_path(artifact: &Artifact) -> PathBuf {
    artifact.path.with_extension("spdx.json")
}

fn sboms(args: Args) -> Result<(), String> {
    let packages = args.positional(1, usize::MAX)?.to_vec();
    let dist = args.path("--dist", "dist");
    let workspace = std::env::current_dir().map_err(|e| e.to_string())?;
    let created = manifests::created_at()?;
    let checksums = sbom::lock_checksums(&workspace)?;
    // One `cargo tree` per target: it holds the tree of every package built for it.
    let mut trees: BTreeMap<&str, String> = BTreeMap::new();
    for artifact in artifact::discover(&dist)? {
        let target = sbom::target_of(&artifact.metadata.execution_mode)
            .map_err(|e| format!("{}: {e}", artifact.path.display()))?;
        if !trees.contains_key(target) {
            trees.insert(target, sbom::tree(&workspace, target, &packages)?);
        }
        let graph = sbom::parse_tree(&trees[target], &artifact.policy)?;
        let document = sbom::document(&artifact, target, &graph, &checksums, &created);
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

fn pull(args: Args) -> Result<(), String> {
    let positional = args.positional(2, 2)?;
    let reference = reference::parse_reference(&positional[0])?;
    let registry_name = reference.resolve_registry().to_owned();
    let (auth, _) = registry::auth(&registry_name)?;
    let client = registry::client(&registry_name, args.insecure())?;
    let (module, digest) =
        runtime()?.block_on(registry::pull_like_kubewarden(&client, &auth, &reference))?;
    if let Some(wanted) = reference.digest() {
        if wanted != digest {
            return Err(format!(
                "{reference}: the registry served manifest {digest}"
            ));
        }
    }
    std::fs::write(&positional[1], &module).map_err(|e| format!("{}: {e}", positional[1]))?;
    println!("{}\t{digest}\t{} bytes", positional[1], module.len());
    Ok(())
}

fn verify_copy(args: Args) -> Result<(), String> {
    let positional = args.positional(4, 4)?;
    let artifact = Artifact::load_required(Path::new(&positional[0]))?;
    let reference = reference::parse_reference(&positional[1])?;
    let digest = reference.digest().ok_or_else(|| {
        format!(
            "`{}` is not an immutable (@sha256:) reference",
            positional[1]
        )
    })?;
    let manifest = std::fs::read(&positional[2]).map_err(|e| format!("{}: {e}", positional[2]))?;
    let blob_dir = Path::new(&positional[3]);
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
        println!("ok {} = {}", artifact.path.display(), positional[1]);
        Ok(())
    } else {
        Err(format!(
            "{} does not match {}:\n  - {}",
            positional[1],
            artifact.path.display(),
            problems.join("\n  - ")
        ))
    }
}
