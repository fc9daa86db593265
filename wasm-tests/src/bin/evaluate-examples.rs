//! `evaluate-examples POLICY_DIR WASM`: evaluates the policy's bundled example requests through
//! the waPC host (fresh instance per request, as policy-server does) and prints each verdict as
//! the AdmissionResponse the API server would receive. Exits non-zero when a verdict differs
//! from the one `cases.yml` expects.

use std::path::Path;
use std::process::ExitCode;

use wasm_tests::examples::{self, outcome};
use wasm_tests::kubewarden::{admission_response, WapcPolicy};

fn run(dir: &str, wasm: &str) -> Result<bool, String> {
    let bytes = std::fs::read(wasm).map_err(|e| format!("{wasm}: {e}"))?;
    let policy = WapcPolicy::from_bytes(&bytes)?;
    let mut all_as_expected = true;
    for example in examples::load(Path::new(dir))? {
        let answers = example.answers()?;
        let response = policy.validate_with(&example.request, &example.settings, &answers)?;
        let got = outcome(&response);
        let mark = if got == example.expect { "ok " } else { "BAD" };
        all_as_expected &= got == example.expect;
        println!("{mark} {:<62} {:?}", example.name, got);
        let review = admission_response(&example.request, &response);
        if let Some(message) = review.get("status").and_then(|s| s["message"].as_str()) {
            println!("      message: {message}");
        }
        for op in review
            .get("patch")
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
        {
            println!("      patch:   {op}");
        }
        for warning in review["warnings"].as_array().into_iter().flatten() {
            println!("      warning: {}", warning.as_str().unwrap_or_default());
        }
    }
    Ok(all_as_expected)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, wasm] = &args[..] else {
        eprintln!("usage: evaluate-examples POLICY_DIR WASM");
        return ExitCode::from(2);
    };
    match run(dir, wasm) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("evaluate-examples: some verdicts differ from cases.yml");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("evaluate-examples: {e}");
            ExitCode::FAILURE
        }
    }
}
