//! Reading the Kubewarden metadata a built module carries, the way policy-evaluator does: the
//! first custom section named `io.kubewarden.metadata`, parsed as JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasmparser::{Parser, Payload};

pub const SECTION: &str = "io.kubewarden.metadata";
/// What policy-fetcher checks a pulled module starts with.
pub const MAGIC: &[u8; 4] = b"\0asm";

/// The parts of the metadata publishing needs. Unknown keys are ignored, as Kubewarden does.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub rules: Vec<Rule>,
    pub mutating: bool,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default = "default_background_audit")]
    pub background_audit: bool,
    #[serde(default = "default_execution_mode")]
    pub execution_mode: String,
    #[serde(default)]
    pub context_aware_resources: Vec<Value>,
}

fn default_background_audit() -> bool {
    true
}

fn default_execution_mode() -> String {
    "kubewarden-wapc".into()
}

/// One admission rule, in the field order `kwctl scaffold manifest` writes; any other key (a
/// `scope`, say) is carried through unchanged.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Metadata {
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
}

/// The module's metadata, `None` if it has no metadata section. Fails on bytes that are not a
/// wasm module and on a section that does not hold the metadata JSON.
pub fn read_metadata(wasm: &[u8]) -> Result<Option<Metadata>, String> {
    if !wasm.starts_with(MAGIC) {
        return Err("not a wasm module (it does not start with the `\\0asm` magic)".into());
    }
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| format!("not a valid wasm module: {e}"))?;
        if let Payload::CustomSection(section) = payload {
            if section.name() == SECTION {
                return serde_json::from_slice(section.data())
                    .map(Some)
                    .map_err(|e| {
                        format!("the `{SECTION}` section is not Kubewarden metadata: {e}")
                    });
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A minimal module (magic, version) with one custom section appended.
    pub fn module_with_section(name: &str, data: &[u8]) -> Vec<u8> {
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
        let cases: [(&str, Vec<u8>, Result<bool, &str>); 5] = [
            ("metadata", module_with_section(SECTION, good), Ok(true)),
            ("other section", module_with_section("name", b""), Ok(false)),
            (
                "bad json",
                module_with_section(SECTION, b"{"),
                Err("is not Kubewarden metadata"),
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
}
