//! `taintguard request`: writes the AdmissionReview the API server would send for an operation
//! by a requester on objects as `kubectl get -o yaml` prints them, for `kwctl run -r` or the
//! playground.

use std::path::Path;
use std::process::ExitCode;

use taintguard_cli::object;
use taintguard_cli::review::{review, Operation, Parts, Requester};

const USAGE: &str = "usage: taintguard request --operation CREATE|UPDATE|DELETE
         [--user NAME [--group GROUP]... | --service-account NAMESPACE/NAME]
         [--object FILE] [--old-object FILE] [--subresource NAME] [--patch] [--uid UID]

Writes the AdmissionReview (admission.k8s.io/v1) the API server would send a webhook, to
standard output. Objects are YAML or JSON files as `kubectl get KIND NAME -o yaml` prints them.
Without --user or --service-account the request has no requester, as the audit scanner sends
stored objects. A user gets the group system:authenticated, as the API server adds it.
--patch says the UPDATE was a PATCH (kubectl patch, server-side apply): options are
PatchOptions.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("request") => match request(&args[1..]) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("taintguard request: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The review `args` describe, as pretty JSON.
fn request(args: &[String]) -> Result<String, String> {
    let mut operation = None;
    let mut user = None;
    let mut groups = Vec::new();
    let mut service_account = None;
    let mut object_path = None;
    let mut old_object_path = None;
    let mut sub_resource = None;
    let mut patch = false;
    let mut uid = "00000000-0000-4000-8000-000000000000".to_owned();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--operation" => operation = Some(Operation::try_from(value()?.as_str())?),
            "--user" => user = Some(value()?),
            "--group" => groups.push(value()?),
            "--service-account" => service_account = Some(Requester::service_account(&value()?)?),
            "--object" => object_path = Some(value()?),
            "--old-object" => old_object_path = Some(value()?),
            "--subresource" => sub_resource = Some(value()?),
            "--patch" => patch = true,
            "--uid" => uid = value()?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let requester = match (user, service_account) {
        (Some(_), Some(_)) => return Err("give --user or --service-account, not both".to_owned()),
        (Some(name), None) => Requester::User { name, groups },
        (None, Some(account)) if groups.is_empty() => account,
        (None, _) if !groups.is_empty() => return Err("--group needs --user".to_owned()),
        (None, account) => account.unwrap_or(Requester::Nobody),
    };
    let read = |path: Option<String>| path.map(|p| object::read(Path::new(&p))).transpose();
    let parts = Parts {
        operation: operation.ok_or("--operation is required")?,
        requester,
        object: read(object_path)?,
        old_object: read(old_object_path)?,
        sub_resource,
        patch,
        uid,
    };
    let review = review(&parts)?;
    serde_json::to_string_pretty(&review).map_err(|e| e.to_string())
}
