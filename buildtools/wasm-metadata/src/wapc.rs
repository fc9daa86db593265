//! What policy-server's linker accepts of a waPC module (`executionMode: kubewarden-wapc`).

use wasmparser::{Parser, Payload};

/// Imports (`module.name`) and exports of a module.
fn imports_and_exports(wasm: &[u8]) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| e.to_string())? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(|e| e.to_string())?;
                    imports.push(format!("{}.{}", import.module, import.name));
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    exports.push(export.map_err(|e| e.to_string())?.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

/// The module exports `memory` and `__guest_call` and imports only from `wapc` and
/// `wasi_snapshot_preview1`; the first problem found.
pub fn check(wasm: &[u8]) -> Result<(), String> {
    let (imports, exports) = imports_and_exports(wasm)?;
    for required in ["memory", "__guest_call"] {
        if !exports.iter().any(|e| e == required) {
            return Err(format!("the module does not export `{required}`"));
        }
    }
    if let Some(bad) = imports
        .iter()
        .find(|i| !(i.starts_with("wapc.") || i.starts_with("wasi_snapshot_preview1.")))
    {
        return Err(format!(
            "import `{bad}` cannot be satisfied by Kubewarden's waPC host"
        ));
    }
    Ok(())
}
