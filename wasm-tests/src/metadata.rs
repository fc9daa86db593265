//! Kubewarden metadata: embedding it as the `io.kubewarden.metadata` custom section (what
//! `kwctl annotate` does, so the built module loads in policy-server with no extra step), reading
//! it back the way policy-evaluator does, and checking a module's imports and exports.

use serde_json::{Map, Value};
use wasmparser::{Parser, Payload};

pub const SECTION: &str = "io.kubewarden.metadata";

/// Execution modes Kubewarden knows, and whether each speaks the waPC protocol.
fn protocol_version(execution_mode: &str) -> Result<&'static str, String> {
    match execution_mode {
        "kubewarden-wapc" => Ok("v1"),
        "opa" | "gatekeeper" | "wasi" => Ok("Unknown"),
        other => Err(format!("metadata `executionMode`: unknown mode {other:?}")),
    }
}

/// The metadata JSON for `metadata_yml`, with `protocolVersion` filled in and `usage` (the policy
/// README) added as the `io.kubewarden.policy.usage` annotation.
pub fn metadata_json(metadata_yml: &str, usage: &str) -> Result<Value, String> {
    let mut meta: Map<String, Value> =
        serde_yaml::from_str(metadata_yml).map_err(|e| format!("metadata.yml: {e}"))?;
    for required in ["rules", "mutating"] {
        if !meta.contains_key(required) {
            return Err(format!("metadata.yml: `{required}` is required"));
        }
    }
    let rules = meta["rules"]
        .as_array()
        .ok_or("metadata.yml: `rules` must be a list")?;
    for (i, rule) in rules.iter().enumerate() {
        for list in ["apiGroups", "apiVersions", "resources", "operations"] {
            if rule
                .get(list)
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
            {
                return Err(format!(
                    "metadata.yml: `rules[{i}].{list}` must be a non-empty list"
                ));
            }
        }
    }
    let mode = meta
        .entry("executionMode")
        .or_insert_with(|| Value::from("kubewarden-wapc"))
        .as_str()
        .ok_or("metadata.yml: `executionMode` must be a string")?
        .to_owned();
    meta.insert(
        "protocolVersion".into(),
        Value::from(protocol_version(&mode)?),
    );
    meta.entry("backgroundAudit").or_insert(Value::Bool(true));
    meta.entry("policyType")
        .or_insert_with(|| Value::from("kubernetes"));
    meta.entry("contextAwareResources")
        .or_insert_with(|| Value::Array(Vec::new()));
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("metadata.yml: `annotations` must be a map")?;
    if let Some((key, _)) = annotations.iter().find(|(_, v)| !v.is_string()) {
        return Err(format!("metadata.yml: annotation {key:?} must be a string"));
    }
    annotations.insert("io.kubewarden.policy.usage".into(), Value::from(usage));
    Ok(Value::Object(meta))
}

/// The metadata of the same policy built for another execution mode: the gatekeeper artifact
/// runs only the validating half, so it is `mutating: false` whatever the waPC module is. Rules,
/// annotations and everything else stay those of `metadata.yml`.
pub fn for_execution_mode(mut meta: Value, mode: &str) -> Result<Value, String> {
    let protocol = protocol_version(mode)?;
    let fields = meta.as_object_mut().ok_or("metadata must be an object")?;
    fields.insert("executionMode".into(), Value::from(mode));
    fields.insert("protocolVersion".into(), Value::from(protocol));
    if mode != "kubewarden-wapc" {
        fields.insert("mutating".into(), Value::Bool(false));
    }
    Ok(meta)
}

/// Appends `n` as unsigned LEB128, the integer encoding of wasm sections.
pub fn leb128(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends the metadata custom section. Refuses a module that already has one: Kubewarden
/// reads the first, so a second would be silently ignored.
pub fn embed(wasm: &[u8], metadata: &Value) -> Result<Vec<u8>, String> {
    if read(wasm)?.is_some() {
        return Err(format!("the module already has a `{SECTION}` section"));
    }
    let data = serde_json::to_vec(metadata).map_err(|e| e.to_string())?;
    let mut body = Vec::with_capacity(data.len() + SECTION.len() + 8);
    leb128(SECTION.len() as u64, &mut body);
    body.extend_from_slice(SECTION.as_bytes());
    body.extend_from_slice(&data);
    let mut out = wasm.to_vec();
    out.push(0); // custom section id
    leb128(body.len() as u64, &mut out);
    out.extend_from_slice(&body);
    Ok(out)
}

/// The first `io.kubewarden.metadata` section, parsed, as policy-evaluator reads it.
pub fn read(wasm: &[u8]) -> Result<Option<Value>, String> {
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::CustomSection(section) = payload.map_err(|e| e.to_string())? {
            if section.name() == SECTION {
                return serde_json::from_slice(section.data())
                    .map(Some)
                    .map_err(|e| e.to_string());
            }
        }
    }
    Ok(None)
}

/// A module's imports (`module.name`) and exports.
#[derive(Debug, Default)]
pub struct Interface {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// `(minimum pages, maximum pages)` of an imported memory.
    pub imported_memory: Option<(u64, Option<u64>)>,
}

pub fn interface(wasm: &[u8]) -> Result<Interface, String> {
    let mut iface = Interface::default();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| e.to_string())? {
            Payload::ImportSection(reader) => {
                for import in reader {
                    let import = import.map_err(|e| e.to_string())?;
                    if let wasmparser::TypeRef::Memory(m) = import.ty {
                        iface.imported_memory = Some((m.initial, m.maximum));
                    }
                    iface
                        .imports
                        .push(format!("{}.{}", import.module, import.name));
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    iface
                        .exports
                        .push(export.map_err(|e| e.to_string())?.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(iface)
}

/// What policy-server's linker accepts for a waPC module: exports `memory` and `__guest_call`,
/// imports only from `wapc` and `wasi_snapshot_preview1`.
pub fn check_wapc(wasm: &[u8]) -> Result<(), String> {
    let iface = interface(wasm)?;
    for required in ["memory", "__guest_call"] {
        if !iface.exports.iter().any(|e| e == required) {
            return Err(format!("the module does not export `{required}`"));
        }
    }
    if let Some(bad) = iface
        .imports
        .iter()
        .find(|i| !(i.starts_with("wapc.") || i.starts_with("wasi_snapshot_preview1.")))
    {
        return Err(format!(
            "import `{bad}` cannot be satisfied by Kubewarden's waPC host"
        ));
    }
    Ok(())
}

/// What Kubewarden's gatekeeper/opa modes (burrego) and the OPA SDKs accept: only `env` imports
/// the hosts provide, memory imported with at most 5 pages and no maximum and exported again,
/// every function the hosts call with its exact signature, and the ABI version as real globals.
pub fn check_opa(wasm: &[u8]) -> Result<(), String> {
    crate::opa::check(wasm)
}
