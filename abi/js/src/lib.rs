//! JavaScript adapter: the taintguard policies as a wasm-bindgen module for Node and browsers
//! (`dist/js/`, built by `./build.sh`). It gives the verdicts of the Kubewarden build, plus the
//! RFC 6902 patch a webhook would send, to people who want to unit-test their settings or try a
//! request in a page.
//!
//! Errors: bad input (unknown policy, invalid settings, a request that is not an AdmissionReview
//! or AdmissionRequest, or one missing a field the policies read) throws a JavaScript `Error`
//! whose message names the field. The Kubewarden build answers the same inputs with a 400
//! rejection carrying the same message, because an engine can only show verdicts.
//!
//! The logic is in plain-Rust modules (host unit-tested); this file converts values only.

mod defaults;
pub mod evaluate;
pub mod registry;

use js_sys::JSON;
use wasm_bindgen::prelude::*;

/// The package's TypeScript declarations. The functions' signatures are written here rather
/// than generated, because wasm-bindgen cannot mark `settings` optional once its type is given.
/// `abi/js/tests/types` compiles typed use of them against the shapes the package README
/// documents (`./build.sh test`).
#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** One RFC 6902 operation, as json-patch writes them. */
export interface PatchOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: unknown;
}

/** What a policy answers for one request: the Kubewarden verdict plus the webhook's patch. */
export interface Verdict {
  accepted: boolean;
  message: string | null;
  /** HTTP-style status for rejections (403 refused, 400 the request cannot be judged). */
  code: number | null;
  warnings: string[];
  auditAnnotations: Record<string, string>;
  /** The whole object after the policy's changes; null when it changes nothing. */
  mutatedObject: Record<string, unknown> | null;
  /** The JSONPatch from the request's object to mutatedObject; null when there is none. */
  patch: PatchOperation[] | null;
  patchType: "JSONPatch" | null;
}

export interface SettingsValidation {
  valid: boolean;
  /** Why the settings are invalid, naming the field. */
  message?: string;
}

export interface PolicyInfo {
  name: string;
  description: string;
  /** Whether the policy may change objects (Kubewarden's `mutating`). */
  mutating: boolean;
  /** Every setting at its default: the same as passing `{}`. */
  defaultSettings: Record<string, unknown>;
}

/**
 * Evaluates `policy` on `request` (an AdmissionReview or AdmissionRequest, as an object or JSON
 * text) with `settings` (object or JSON text; omitted or null means `{}`). Throws an Error naming the
 * field on an unknown policy, invalid settings or a malformed request.
 */
export function evaluate(policy: string, request: object | string, settings?: object | string | null): Verdict;

/**
 * Checks settings as Kubewarden does when it loads the policy. Invalid settings are an answer,
 * not an exception; an unknown policy throws.
 */
export function validateSettings(policy: string, settings?: object | string | null): SettingsValidation;

/** The policies in this package, with their descriptions and default settings. */
export function policies(): PolicyInfo[];

/** The package version. */
export function version(): string;
"#;

/// Objects go through JSON text: the core reads text, and `JSON.stringify` is the one
/// conversion every JavaScript value a user would pass supports.
fn json_text(value: &JsValue, what: &str, absent: Option<&str>) -> Result<String, JsError> {
    if let Some(text) = value.as_string() {
        return Ok(text);
    }
    if value.is_undefined() || value.is_null() {
        return absent
            .map(str::to_owned)
            .ok_or_else(|| JsError::new(&format!("{what} is required")));
    }
    if !value.is_object() {
        return Err(JsError::new(&format!(
            "{what}: expected an object or a JSON string, found {}",
            value.js_typeof().as_string().unwrap_or_default()
        )));
    }
    JSON::stringify(value)
        .map(String::from)
        .map_err(|e| JsError::new(&format!("{what} cannot be written as JSON: {e:?}")))
}

fn to_js(text: &str) -> Result<JsValue, JsError> {
    JSON::parse(text).map_err(|e| JsError::new(&format!("internal error: {e:?}")))
}

/// Evaluates `policy` on `request` (an AdmissionReview or AdmissionRequest, as an object or JSON
/// text) with `settings` (object or JSON text; omitted means `{}`).
#[wasm_bindgen(skip_typescript)]
pub fn evaluate(
    policy: &str,
    request: JsValue,
    settings: Option<JsValue>,
) -> Result<JsValue, JsError> {
    let entry = registry::find(policy).map_err(|e| JsError::new(&e))?;
    let request = json_text(&request, "request", None)?;
    let settings = json_text(
        &settings.unwrap_or(JsValue::UNDEFINED),
        "settings",
        Some("{}"),
    )?;
    let result = evaluate::evaluate(entry, &request, &settings).map_err(|e| JsError::new(&e))?;
    to_js(&result)
}

/// Checks settings as Kubewarden does when it loads the policy. Invalid settings are an answer
/// here, not an exception; only an unknown policy or an unusable value throws.
#[wasm_bindgen(js_name = validateSettings, skip_typescript)]
pub fn validate_settings(policy: &str, settings: Option<JsValue>) -> Result<JsValue, JsError> {
    let entry = registry::find(policy).map_err(|e| JsError::new(&e))?;
    let settings = json_text(
        &settings.unwrap_or(JsValue::UNDEFINED),
        "settings",
        Some("{}"),
    )?;
    let out = match (entry.validate_settings)(&settings) {
        Ok(()) => serde_json::json!({"valid": true}),
        Err(message) => serde_json::json!({"valid": false, "message": message}),
    };
    to_js(&out.to_string())
}

/// The policies in this package, with their descriptions and default settings.
#[wasm_bindgen(skip_typescript)]
pub fn policies() -> Result<JsValue, JsError> {
    let list: Vec<serde_json::Value> = registry::POLICIES
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "description": p.facts.description,
                "mutating": p.facts.mutating,
                "defaultSettings": (p.default_settings)(),
            })
        })
        .collect();
    to_js(&serde_json::Value::from(list).to_string())
}

/// The package version (the workspace version).
#[wasm_bindgen(skip_typescript)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
