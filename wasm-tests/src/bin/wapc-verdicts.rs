//! `wapc-verdicts`: prints, as JSON, the verdict of the waPC build (`dist/<policy>.wasm`, run as
//! policy-server runs it) in deny mode for every pairing of a policy's example requests with its
//! example settings. The OPA tests (`wasm-tests/js/opa`) check that the gatekeeper artifacts
//! reach the same verdicts: both must judge alike wherever mutation is not the answer.
//!
//! Output: `[{"policy", "request", "settings", "review", "parameters", "wapcSettings",
//! "accepted", "message", "code"}, …]` where `review` is the AdmissionRequest and `parameters`
//! the example settings as written (the gatekeeper artifact ignores `mode`), `wapcSettings` the
//! deny-mode settings given to the waPC build.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};
use taintguard_wasm_metadata::metadata::policy_folders;
use wasm_tests::kubewarden::{admission_request, WapcPolicy};
use wasm_tests::{dist, examples, repo_root};

/// Settings that put a policy in deny mode, for policies whose default is to repair. Policies not
/// listed only mutate to add things; their validating half simply leaves mutations out.
fn deny_mode(policy: &str, settings: &Value) -> Value {
    let mut settings = settings.clone();
    if policy == "taint-preservation" {
        settings["mode"] = json!("deny");
    }
    settings
}

/// The example files by stem (`incident-1-stale-taint-patch`).
fn json_files(dir: &Path) -> Result<Vec<(String, Value)>, String> {
    Ok(examples::json_files(dir)?
        .into_iter()
        .map(|(name, value)| (name.trim_end_matches(".json").to_owned(), value))
        .collect())
}

fn run() -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let policies = repo_root().join("policies");
    for policy in policy_folders(&policies)? {
        let dir = policies.join(&policy);
        let wasm = dist(&format!("{policy}.wasm"));
        let bytes = std::fs::read(&wasm)
            .map_err(|e| format!("{}: {e}; run ./build.sh first", wasm.display()))?;
        let host = WapcPolicy::from_bytes(&bytes)?;
        let requests = json_files(&dir.join("examples/requests"))?;
        let settings = json_files(&dir.join("examples/settings"))?;
        for (request_name, review) in &requests {
            for (settings_name, parameters) in &settings {
                let wapc_settings = deny_mode(&policy, parameters);
                let response = host.validate(review, &wapc_settings)?;
                out.push(json!({
                    "policy": policy,
                    "request": request_name,
                    "settings": settings_name,
                    "review": admission_request(review),
                    "parameters": parameters,
                    "wapcSettings": wapc_settings,
                    "accepted": response["accepted"],
                    "message": response.get("message").cloned().unwrap_or(Value::Null),
                    "code": response.get("code").cloned().unwrap_or(Value::Null),
                }));
            }
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    match run() {
        Ok(verdicts) => {
            println!("{}", Value::Array(verdicts));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wapc-verdicts: {e}");
            ExitCode::FAILURE
        }
    }
}
