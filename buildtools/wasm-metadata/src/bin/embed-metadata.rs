//! `embed-metadata [--execution-mode MODE] METADATA_YML USAGE_MD IN_WASM OUT_WASM`: writes
//! OUT_WASM, IN_WASM with the Kubewarden metadata section, after checking the module's interface
//! for its execution mode, and with the declarations of what the module reads ([`asks`]) written
//! where metadata.yml leaves them out and checked where it states them. A waPC module's `memory.copy` operators first become calls of a copy
//! function of its own ([`short_copies`]: short copies without a call into the host).
//!
//! `--execution-mode gatekeeper|opa` makes the artifact of the same policy for another engine
//! from the one `metadata.yml`: the mode is overridden and `mutating` set to false (these modules
//! run the validating half). For those modes the linked module is first finished as an OPA-ABI
//! artifact ([`opa::finish`]: real ABI version globals, static data that fits the hosts' 5
//! memory pages) and checked.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use std::process::ExitCode;

use taintguard_wasm_metadata::{asks, metadata, opa, section, short_copies, wapc};

const USAGE: &str =
    "usage: embed-metadata [--execution-mode MODE] METADATA_YML USAGE_MD IN_WASM OUT_WASM";

fn run(args: &[String]) -> Result<(), String> {
    let (mode, args) = match args {
        [flag, mode, rest @ ..] if flag == "--execution-mode" => (Some(mode.as_str()), rest),
        _ => (None, args),
    };
    let [metadata_yml, usage, input, output] = args else {
        return Err(USAGE.into());
    };
    let read = |p: &str| std::fs::read(p).map_err(|e| format!("{p}: {e}"));
    let text = |p: &str| String::from_utf8(read(p)?).map_err(|e| format!("{p}: {e}"));
    let mut wasm = read(input)?;
    let yml = text(metadata_yml)?;
    let mut meta =
        metadata::metadata_json(&yml, &text(usage)?).map_err(|e| format!("{metadata_yml}: {e}"))?;
    if let Some(mode) = mode {
        meta = metadata::for_execution_mode(meta, mode)
            .map_err(|e| format!("--execution-mode: {e}"))?;
    }
    if let Some(declared) = asks::read(&wasm).map_err(|e| format!("{input}: {e}"))? {
        let stated = asks::Stated::of_yml(&yml).map_err(|e| format!("{metadata_yml}: {e}"))?;
        asks::reconcile(&mut meta, stated, &declared)
            .map_err(|e| format!("{metadata_yml}: {e}"))?;
    }
    match meta["executionMode"].as_str() {
        Some("kubewarden-wapc") => short_copies::rewrite(&wasm)
            .map(|rewritten| wasm = rewritten)
            .and_then(|()| wapc::check(&wasm)),
        Some("gatekeeper" | "opa") => opa::finish(&wasm).map(|finished| wasm = finished),
        _ => Ok(()),
    }
    .map_err(|e| format!("{input}: {e}"))?;
    let out = section::embed(&wasm, &meta).map_err(|e| format!("{input}: {e}"))?;
    std::fs::write(output, out).map_err(|e| format!("{output}: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embed-metadata: {e}");
            ExitCode::FAILURE
        }
    }
}
