//! The `taintguard` command:
//!
//! - `taintguard test [PATH…]` runs the test suites under the paths (docs/testing.md) in the real
//!   hosts and exits non-zero on any failure;
//! - `taintguard request` writes the AdmissionReview the API server would send for an operation
//!   by a requester on objects as `kubectl get -o yaml` prints them, for `kwctl run -r` or the
//!   playground;
//! - `taintguard what-if` judges a cluster's objects as the audit scanner would.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod judge;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use judge::{HostJudge, Modules};
use taintguard::cluster::ResourceKind;
use taintguard_suite::cluster::checked_object;
use taintguard_suite::files::Disk;
use taintguard_suite::review::{review, Operation, Parts, Requester, RequesterFields};
use taintguard_suite::run::Judge;
use taintguard_suite::suite::Cluster;
use taintguard_suite::{object, Output};
use taintguard_what_if as what_if;

/// Test suites for your own settings, admission requests built from your objects, and what a
/// policy would do to a cluster, in the hosts Kubewarden runs.
#[derive(Parser)]
#[command(name = "taintguard", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs every test suite found under the paths.
    ///
    /// A suite is a YAML file with `kind: TestSuite` (docs/testing.md). It runs through the
    /// policy's waPC module as policy-server runs it, and its gatekeeper build where that must
    /// agree: one line per case, a diff under each failure, and `N passed, N failed`. Exits 1 on
    /// any failure.
    Test(TestArgs),
    /// Writes the AdmissionReview (admission.k8s.io/v1) the API server would send a webhook.
    ///
    /// Objects are YAML or JSON files as `kubectl get KIND NAME -o yaml` prints them. Without a
    /// requester the request has none, as the audit scanner sends stored objects. A user gets
    /// the group system:authenticated, as the API server adds it.
    Request(RequestArgs),
    /// Judges every object of FILE as the audit scanner would.
    ///
    /// FILE is `kubectl get … -o json` output: a List or one object. Each is judged as a CREATE
    /// with no requester unless one is given; the report says whether the policy accepts,
    /// mutates (with the patch) or rejects it, and the counts. Over Nodes, taint-preservation's
    /// protected taints and their owners follow (README, "Installing on a running cluster").
    WhatIf(WhatIfArgs),
}

#[derive(Args)]
struct TestArgs {
    /// `junit` writes a JUnit XML report to standard output, `json` a JSON report with every
    /// request's verdict (allowed, code, patch, warnings); either writes the counts to standard
    /// error.
    #[arg(long, value_enum, default_value_t = OutputArg::Text)]
    output: OutputArg,
    /// Files or folders holding suites.
    #[arg(default_value = ".")]
    paths: Vec<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputArg {
    Text,
    Junit,
    Json,
}

/// Who makes the request: a user (with groups) or a service account; nobody without either.
#[derive(Args)]
struct RequesterArgs {
    /// The requester's username.
    #[arg(long, value_name = "NAME")]
    user: Option<String>,
    /// A group of the user; repeat for more.
    #[arg(long = "group", value_name = "GROUP")]
    groups: Vec<String>,
    /// The requester as a service account.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    service_account: Option<String>,
}

impl RequesterArgs {
    fn requester(&self) -> Result<Requester, String> {
        Requester::from_parts(
            self.user.clone(),
            self.groups.clone(),
            self.service_account.as_deref(),
            &RequesterFields {
                user: "--user",
                groups: "--group",
                service_account: "--service-account",
            },
        )
    }
}

#[derive(Args)]
struct RequestArgs {
    /// CREATE, UPDATE or DELETE.
    #[arg(long)]
    operation: String,
    #[command(flatten)]
    requester: RequesterArgs,
    /// The object written.
    #[arg(long, value_name = "FILE")]
    object: Option<PathBuf>,
    /// The object stored before (UPDATE, DELETE).
    #[arg(long, value_name = "FILE")]
    old_object: Option<PathBuf>,
    /// A subresource, such as `status`.
    #[arg(long, value_name = "NAME")]
    subresource: Option<String>,
    /// The UPDATE was a PATCH (kubectl patch, server-side apply): options are PatchOptions.
    #[arg(long)]
    patch: bool,
    /// The request's uid.
    #[arg(long, default_value = "00000000-0000-4000-8000-000000000000")]
    uid: String,
}

#[derive(Args)]
struct WhatIfArgs {
    /// The policy's waPC module (`dist/<policy>.wasm`).
    #[arg(long, value_name = "MODULE")]
    policy: PathBuf,
    /// The settings, JSON or YAML; `{}` without.
    #[arg(short, long, value_name = "SETTINGS")]
    settings: Option<PathBuf>,
    /// `kubectl get nodes -o json`, for rules that read the nodes' taints.
    #[arg(long, value_name = "FILE")]
    nodes: Option<PathBuf>,
    /// `kubectl get namespaces -o json`, for toleration-injection's `podTolerationRestriction`,
    /// which reads each Pod's Namespace.
    #[arg(long, value_name = "FILE")]
    namespaces: Option<PathBuf>,
    #[command(flatten)]
    requester: RequesterArgs,
    /// The objects, `kubectl get … -o json`.
    file: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (command, result) = match &cli.command {
        Command::Test(args) => ("test", test(args)),
        Command::Request(args) => ("request", request(args).map(|text| print(&text))),
        Command::WhatIf(args) => ("what-if", what_if(args).map(|text| print(&text))),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "taintguard {command}: {e}\n(taintguard {command} --help says how to call it)"
            );
            ExitCode::from(2)
        }
    }
}

fn print(text: &str) -> ExitCode {
    println!("{}", text.trim_end());
    ExitCode::SUCCESS
}

fn test(args: &TestArgs) -> Result<ExitCode, String> {
    let output = match args.output {
        OutputArg::Text => Output::Text,
        OutputArg::Junit => Output::Junit,
        OutputArg::Json => Output::Json,
    };
    let mut modules = Modules::default();
    let tested = taintguard_suite::test(&Disk, &args.paths, output, &mut |suite| {
        Ok(Box::new(modules.judge(suite)?) as Box<dyn Judge>)
    })?;
    print!("{}", tested.output);
    if output != Output::Text {
        eprintln!("{}", tested.totals);
    }
    Ok(if tested.totals.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The review the arguments describe, as pretty JSON.
fn request(args: &RequestArgs) -> Result<String, String> {
    let read = |path: &Option<PathBuf>| path.as_deref().map(|p| object::read(&Disk, p)).transpose();
    let parts = Parts {
        operation: Operation::try_from(args.operation.as_str())?,
        requester: args.requester.requester()?,
        object: read(&args.object)?,
        old_object: read(&args.old_object)?,
        sub_resource: args.subresource.clone(),
        patch: args.patch,
        uid: args.uid.clone(),
    };
    serde_json::to_string_pretty(&review(&parts)?).map_err(|e| e.to_string())
}

fn what_if(args: &WhatIfArgs) -> Result<String, String> {
    let module = &args.policy;
    let bytes = std::fs::read(module).map_err(|e| format!("{}: {e}", module.display()))?;
    let policy = taintguard_host::wapc::WapcPolicy::from_bytes(&bytes)
        .map_err(|e| format!("{}: {e}", module.display()))?;
    let mut judge = HostJudge::wapc(policy);
    let settings = match &args.settings {
        Some(path) => object::read_any(&Disk, path)?,
        None => serde_json::json!({}),
    };
    let mut objects = Vec::new();
    for (file, kind) in [
        (&args.nodes, ResourceKind::NODE),
        (&args.namespaces, ResourceKind::NAMESPACE),
    ] {
        let Some(path) = file else { continue };
        let at = |e: String| format!("{}: {e}", path.display());
        for object in what_if::objects(object::read_any(&Disk, path)?).map_err(at)? {
            objects.push(checked_object(object, Some(kind)).map_err(at)?);
        }
    }
    let cluster = Cluster {
        objects,
        ..Cluster::default()
    };
    let file = &args.file;
    let objects = what_if::objects(object::read_any(&Disk, file)?)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let requester = args.requester.requester()?;
    let audit = what_if::Audit {
        settings: &settings,
        requester: &requester,
        cluster: &cluster,
    };
    what_if::report(&mut judge, &audit, &objects)
}
