//! `wapc-example-verdicts OUT.json`: runs every example request of every policy with every one of
//! its example settings through the waPC build (`dist/<policy>.wasm`, a fresh instance per call
//! as policy-server does) and writes what Kubewarden would answer: the `ValidationResponse` and
//! the AdmissionResponse with its JSONPatch. The JavaScript package's parity test
//! (`abi/js/tests/parity.test.mjs`) evaluates the same inputs and must answer identically.
//!
//! Output: `[{"policy", "request", "settings", "input", "settingsValue", "response",
//! "admissionResponse"}, …]`, `request`/`settings` naming the example files.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};
use taintguard_wasm_metadata::metadata::policy_folders;
use wasm_tests::examples::json_files;
use wasm_tests::kubewarden::{admission_response, WapcPolicy};
use wasm_tests::{dist, repo_root};

fn policy_verdicts(name: &str) -> Result<Vec<Value>, String> {
    let examples = repo_root().join("policies").join(name).join("examples");
    let bytes = std::fs::read(dist(&format!("{name}.wasm")))
        .map_err(|e| format!("dist/{name}.wasm: {e}; run ./build.sh first"))?;
    let policy = WapcPolicy::from_bytes(&bytes)?;
    let requests = json_files(&examples.join("requests"))?;
    let settings = json_files(&examples.join("settings"))?;
    let mut out = Vec::new();
    for (request_file, request) in &requests {
        for (settings_file, settings) in &settings {
            let response = policy.validate(request, settings)?;
            out.push(json!({
                "policy": name,
                "request": format!("requests/{request_file}"),
                "settings": format!("settings/{settings_file}"),
                "input": request,
                "settingsValue": settings,
                "admissionResponse": admission_response(request, &response),
                "response": response,
            }));
        }
    }
    Ok(out)
}

fn run(out: &str) -> Result<usize, String> {
    let mut all = Vec::new();
    for name in policy_folders(&repo_root().join("policies"))? {
        all.extend(policy_verdicts(&name)?);
    }
    if let Some(parent) = Path::new(out).parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let text = serde_json::to_string(&all).expect("JSON values serialise");
    std::fs::write(out, text).map_err(|e| format!("{out}: {e}"))?;
    Ok(all.len())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out] = &args[..] else {
        eprintln!("usage: wapc-example-verdicts OUT.json");
        return ExitCode::from(2);
    };
    match run(out) {
        Ok(n) => {
            println!("wrote {n} waPC verdicts to {out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wapc-example-verdicts: {e}");
            ExitCode::FAILURE
        }
    }
}
