//! `embed-metadata METADATA_YML USAGE_MD IN_WASM OUT_WASM`: writes OUT_WASM, IN_WASM with the
//! Kubewarden metadata section, after checking the module's interface for its execution mode.

use std::process::ExitCode;

use wasm_tests::metadata;

fn run(args: &[String]) -> Result<(), String> {
    let [metadata_yml, usage, input, output] = args else {
        return Err("usage: embed-metadata METADATA_YML USAGE_MD IN_WASM OUT_WASM".into());
    };
    let read = |p: &str| std::fs::read(p).map_err(|e| format!("{p}: {e}"));
    let wasm = read(input)?;
    let yml = String::from_utf8(read(metadata_yml)?).map_err(|e| format!("{metadata_yml}: {e}"))?;
    let usage = String::from_utf8(read(usage)?).map_err(|e| format!("{usage}: {e}"))?;
    let meta = metadata::metadata_json(&yml, &usage)?;
    if meta["executionMode"] == "kubewarden-wapc" {
        metadata::check_wapc(&wasm).map_err(|e| format!("{input}: {e}"))?;
    }
    let out = metadata::embed(&wasm, &meta)?;
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
