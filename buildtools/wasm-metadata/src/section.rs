//! The `io.kubewarden.metadata` custom section: appended the way `kwctl annotate` appends it, so
//! the built module loads in policy-server with no extra step, and read back the way
//! policy-evaluator reads it (the first section of that name, parsed as JSON).

use std::borrow::Cow;

use serde_json::Value;
use wasm_encoder::{CustomSection, Section};
use wasmparser::{Parser, Payload};

use crate::metadata::Metadata;

/// The custom section's name, which policy-evaluator reads the metadata from.
pub const SECTION: &str = "io.kubewarden.metadata";
/// What policy-fetcher checks a pulled module starts with.
pub const MAGIC: &[u8; 4] = b"\0asm";

/// `wasm` with the metadata section appended. Refuses a module that already has one: Kubewarden
/// reads the first, so a second would be silently ignored.
pub fn embed(wasm: &[u8], metadata: &Value) -> Result<Vec<u8>, String> {
    if read_json(wasm)?.is_some() {
        return Err(format!("the module already has a `{SECTION}` section"));
    }
    let data = serde_json::to_vec(metadata).map_err(|e| e.to_string())?;
    let mut out = wasm.to_vec();
    CustomSection {
        name: Cow::Borrowed(SECTION),
        data: Cow::Owned(data),
    }
    .append_to(&mut out);
    Ok(out)
}

/// The first metadata section's JSON, `None` if the module has none. Fails on bytes that are not
/// a wasm module and on a section that is not JSON.
pub fn read_json(wasm: &[u8]) -> Result<Option<Value>, String> {
    if !wasm.starts_with(MAGIC) {
        return Err("not a wasm module (it does not start with the `\\0asm` magic)".into());
    }
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| format!("not a valid wasm module: {e}"))?;
        if let Payload::CustomSection(section) = payload {
            if section.name() == SECTION {
                return serde_json::from_slice(section.data())
                    .map(Some)
                    .map_err(|e| not_metadata(&e));
            }
        }
    }
    Ok(None)
}

/// The module's metadata, typed; `None` if it has no metadata section.
pub fn read_metadata(wasm: &[u8]) -> Result<Option<Metadata>, String> {
    read_json(wasm)?
        .map(|json| serde_json::from_value(json).map_err(|e| not_metadata(&e)))
        .transpose()
}

fn not_metadata(e: &serde_json::Error) -> String {
    format!("the `{SECTION}` section is not Kubewarden metadata: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal module (magic, version) with one custom section appended.
    fn module_with_section(name: &str, data: &[u8]) -> Vec<u8> {
        let mut body = vec![name.len() as u8];
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(data);
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        wasm.push(0);
        assert!(body.len() < 128, "test helper writes a one-byte length");
        wasm.push(body.len() as u8);
        wasm.extend_from_slice(&body);
        wasm
    }

    #[test]
    fn reads_the_section_or_explains_why_not() {
        let good = br#"{"rules":[],"mutating":true,"annotations":{"a":"b"}}"#;
        let cases: [(&str, Vec<u8>, Result<bool, &str>); 6] = [
            ("metadata", module_with_section(SECTION, good), Ok(true)),
            ("other section", module_with_section("name", b""), Ok(false)),
            (
                "bad json",
                module_with_section(SECTION, b"{"),
                Err("is not Kubewarden metadata"),
            ),
            (
                "json but not metadata",
                module_with_section(SECTION, br#"{"rules":[]}"#),
                Err("is not Kubewarden metadata: missing field `mutating`"),
            ),
            ("not wasm", b"PK\x03\x04".to_vec(), Err("not a wasm module")),
            (
                "truncated",
                b"\0asm\x01\0\0\0\0\x7f".to_vec(),
                Err("not a valid wasm"),
            ),
        ];
        for (name, wasm, expected) in cases {
            match (read_metadata(&wasm), expected) {
                (Ok(found), Ok(present)) => assert_eq!(found.is_some(), present, "{name}"),
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn defaults_match_kubewarden() {
        let wasm = module_with_section(SECTION, br#"{"rules":[],"mutating":false}"#);
        let meta = read_metadata(&wasm).unwrap().unwrap();
        assert!(meta.background_audit);
        assert_eq!(meta.execution_mode, "kubewarden-wapc");
        assert!(meta.annotations.is_empty() && meta.context_aware_resources.is_empty());
    }

    #[test]
    fn embeds_once_and_reads_back() {
        let wasm = b"\0asm\x01\0\0\0".to_vec();
        let meta = serde_json::json!({"rules": [], "mutating": true, "z": "last", "a": "first"});
        let out = embed(&wasm, &meta).unwrap();
        // id 0, section size, name length and name, then the JSON with its keys sorted.
        let json = br#"{"a":"first","mutating":true,"rules":[],"z":"last"}"#;
        let mut want = wasm.clone();
        want.extend_from_slice(&[
            0,
            (1 + SECTION.len() + json.len()) as u8,
            SECTION.len() as u8,
        ]);
        want.extend_from_slice(SECTION.as_bytes());
        want.extend_from_slice(json);
        assert_eq!(out, want);
        assert_eq!(read_json(&out).unwrap(), Some(meta.clone()));
        let again = embed(&out, &meta).unwrap_err();
        assert!(again.contains("already has"), "{again}");
    }
}
