//! The `taintguard` command:
//!
//! - `taintguard test [PATH…]` runs the test suites under the paths (docs/testing.md) in the real
//!   hosts and exits non-zero on any failure;
//! - `taintguard request` writes the AdmissionReview the API server would send for an operation
//!   by a requester on objects as `kubectl get -o yaml` prints them, for `kwctl run -r` or the
//!   playground;
//! - `taintguard what-if` judges a cluster's objects as the audit scanner would.

mod judge;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use judge::{HostJudge, Modules};
use taintguard_suite::files::Disk;
use taintguard_suite::review::{review, Operation, Parts, Requester, RequesterFields};
use taintguard_suite::run::Judge;
use taintguard_suite::{object, what_if, Output};

const USAGE: &str = "usage: taintguard test [--output text|junit] [PATH]...
       taintguard request --operation CREATE|UPDATE|DELETE [REQUESTER]
                          [--object FILE] [--old-object FILE] [--subresource NAME] [--patch] [--uid UID]
       taintguard what-if --policy MODULE [-s SETTINGS] [--nodes FILE] [REQUESTER] FILE

REQUESTER: --user NAME [--group GROUP]... | --service-account NAMESPACE/NAME

test     runs every test suite (a YAML file with `kind: TestSuite`, docs/testing.md) found under
         the paths (default: .) through the policy's waPC module as policy-server runs it, and its
         gatekeeper build where that must agree. One line per case, a diff under each failure, and
         `N passed, N failed`; exits 1 on any failure. --output junit writes a JUnit XML report to
         standard output instead.
request  writes the AdmissionReview (admission.k8s.io/v1) the API server would send a webhook.
         Objects are YAML or JSON files as `kubectl get KIND NAME -o yaml` prints them. Without a
         requester the request has none, as the audit scanner sends stored objects. A user gets
         the group system:authenticated, as the API server adds it. --patch says the UPDATE was
         a PATCH (kubectl patch, server-side apply): options are PatchOptions.
what-if  judges every object of FILE (`kubectl get … -o json`: a List or one object) as the
         audit scanner would, a CREATE with no requester unless one is given, and prints for each
         whether the policy accepts, mutates (with the patch) or rejects it, and the counts.
         --nodes FILE (`kubectl get nodes -o json`) answers rules that read the nodes' taints.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let (command, result) = match args.first().map(String::as_str) {
        Some("test") => ("test", test(rest)),
        Some("request") => ("request", request(rest).map(|text| print(&text))),
        Some("what-if") => ("what-if", what_if(rest).map(|text| print(&text))),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("taintguard {command}: {e}\n(taintguard --help says how to call it)");
            ExitCode::from(2)
        }
    }
}

fn print(text: &str) -> ExitCode {
    println!("{}", text.trim_end());
    ExitCode::SUCCESS
}

/// Flags and their values, in order, and the arguments that are neither.
struct Args<'a> {
    flags: Vec<(&'a str, &'a str)>,
    positional: Vec<&'a str>,
}

/// Splits `args` by the flags that take a value (`valued`) and those that do not (`switches`).
fn parse<'a>(args: &'a [String], valued: &[&str], switches: &[&str]) -> Result<Args<'a>, String> {
    let mut out = Args {
        flags: Vec::new(),
        positional: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if valued.contains(&arg.as_str()) {
            let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
            out.flags.push((arg, value));
        } else if switches.contains(&arg.as_str()) {
            out.flags.push((arg, ""));
        } else if arg.starts_with('-') && arg.len() > 1 {
            return Err(format!("unknown argument {arg:?}"));
        } else {
            out.positional.push(arg);
        }
    }
    Ok(out)
}

impl Args<'_> {
    fn one(&self, flag: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| *v)
    }

    fn all(&self, flag: &str) -> Vec<String> {
        self.flags
            .iter()
            .filter(|(f, _)| *f == flag)
            .map(|(_, v)| (*v).to_owned())
            .collect()
    }

    /// The requester `--user`/`--group` or `--service-account` name; none without either.
    fn requester(&self) -> Result<Requester, String> {
        Requester::from_parts(
            self.one("--user").map(str::to_owned),
            self.all("--group"),
            self.one("--service-account"),
            &RequesterFields {
                user: "--user",
                groups: "--group",
                service_account: "--service-account",
            },
        )
    }
}

const REQUESTER_FLAGS: [&str; 3] = ["--user", "--group", "--service-account"];

fn test(args: &[String]) -> Result<ExitCode, String> {
    let args = parse(args, &["--output"], &[])?;
    let output = match args.one("--output").unwrap_or("text") {
        "text" => Output::Text,
        "junit" => Output::Junit,
        other => return Err(format!("--output {other:?}: expected text or junit")),
    };
    let paths: Vec<PathBuf> = args.positional.iter().map(PathBuf::from).collect();
    let mut modules = Modules::default();
    let tested = taintguard_suite::test(&Disk, &paths, output, &mut |suite| {
        Ok(Box::new(modules.judge(suite)?) as Box<dyn Judge>)
    })?;
    print!("{}", tested.output);
    if output == Output::Junit {
        eprintln!("{}", tested.totals);
    }
    Ok(if tested.totals.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The review the arguments describe, as pretty JSON.
fn request(args: &[String]) -> Result<String, String> {
    let valued = [
        &REQUESTER_FLAGS[..],
        &[
            "--operation",
            "--object",
            "--old-object",
            "--subresource",
            "--uid",
        ],
    ]
    .concat();
    let args = parse(args, &valued, &["--patch"])?;
    if let Some(extra) = args.positional.first() {
        return Err(format!("unknown argument {extra:?}"));
    }
    let read = |flag: &str| {
        args.one(flag)
            .map(|p| object::read(&Disk, Path::new(p)))
            .transpose()
    };
    let parts = Parts {
        operation: Operation::try_from(args.one("--operation").ok_or("--operation is required")?)?,
        requester: args.requester()?,
        object: read("--object")?,
        old_object: read("--old-object")?,
        sub_resource: args.one("--subresource").map(str::to_owned),
        patch: args.one("--patch").is_some(),
        uid: args
            .one("--uid")
            .unwrap_or("00000000-0000-4000-8000-000000000000")
            .to_owned(),
    };
    serde_json::to_string_pretty(&review(&parts)?).map_err(|e| e.to_string())
}

fn what_if(args: &[String]) -> Result<String, String> {
    let valued = [
        &REQUESTER_FLAGS[..],
        &["--policy", "-s", "--settings", "--nodes"],
    ]
    .concat();
    let args = parse(args, &valued, &[])?;
    let [file] = args.positional[..] else {
        return Err("give one FILE of objects (`kubectl get … -o json`)".to_owned());
    };
    let module = args.one("--policy").ok_or("--policy MODULE is required")?;
    let bytes = std::fs::read(module).map_err(|e| format!("{module}: {e}"))?;
    let policy = taintguard_host::wapc::WapcPolicy::from_bytes(&bytes)
        .map_err(|e| format!("{module}: {e}"))?;
    let mut judge = HostJudge::wapc(policy);
    let settings = match args.one("-s").or(args.one("--settings")) {
        Some(path) => object::read_any(&Disk, Path::new(path))?,
        None => serde_json::json!({}),
    };
    let nodes = match args.one("--nodes") {
        Some(path) => what_if::objects(object::read_any(&Disk, Path::new(path))?)
            .map_err(|e| format!("{path}: {e}"))?,
        None => Vec::new(),
    };
    let objects = what_if::objects(object::read_any(&Disk, Path::new(file))?)
        .map_err(|e| format!("{file}: {e}"))?;
    what_if::report(&mut judge, &settings, &args.requester()?, nodes, &objects)
}
