//! Kubewarden adapter: runs a taintguard [`Policy`] behind the waPC operations Kubewarden's
//! policy-server and kwctl invoke (`validate`, `validate_settings`, `protocol_version`).
//!
//! Payloads and answers follow docs/abi.md ("Kubewarden waPC"): `validate` receives
//! `{"request": AdmissionRequest, "settings": {...}}` and answers a `ValidationResponse` with
//! snake_case keys; `validate_settings` receives the bare settings object and answers
//! `{"valid": bool, "message": ...}`; `protocol_version` answers the JSON string `"v1"`.
//!
//! A policy crate is one line: `taintguard_kubewarden::policy!(MyPolicy);`.

use serde::Deserialize;
use serde_json::value::RawValue;
use taintguard::json::{write_str, write_str_array, write_str_map};
use taintguard::{Policy, Verdict};

pub use wapc_guest;

/// Exports `wapc_init`, which registers the policy's operations. policy-server instantiates the
/// module for every request and runs `wapc_init` each time, so it only fills the handler table.
#[macro_export]
macro_rules! policy {
    ($policy:ty) => {
        #[no_mangle]
        pub extern "C" fn wapc_init() {
            $crate::register::<$policy>();
        }
    };
}

pub fn register<P: Policy>() {
    wapc_guest::register_function("validate", validate::<P>);
    wapc_guest::register_function("validate_settings", validate_settings::<P>);
    wapc_guest::register_function("protocol_version", protocol_version);
}

fn protocol_version(_: &[u8]) -> wapc_guest::CallResult {
    Ok(b"\"v1\"".to_vec())
}

#[derive(Deserialize)]
struct ValidationRequest<'a> {
    #[serde(borrow)]
    request: &'a RawValue,
    #[serde(borrow, default)]
    settings: Option<&'a RawValue>,
}

/// Every outcome, malformed payloads included, is a `ValidationResponse`: a rejection here is an
/// answer the API server can show, where a guest error would only say "internal server error".
fn validate<P: Policy>(payload: &[u8]) -> wapc_guest::CallResult {
    Ok(validate_payload::<P>(payload))
}

/// The answer to one `validate` payload (public for the profiling example).
#[doc(hidden)]
pub fn validate_payload<P: Policy>(payload: &[u8]) -> Vec<u8> {
    let verdict = match serde_json::from_slice::<ValidationRequest>(payload) {
        Ok(envelope) => P::validate_raw(
            envelope.request,
            envelope.settings.map_or("{}", RawValue::get),
        ),
        Err(e) => Verdict::reject(
            400,
            format!("{}: malformed validation payload: {e}", P::NAME),
        ),
    };
    validation_response(&verdict).into_bytes()
}

fn validate_settings<P: Policy>(payload: &[u8]) -> wapc_guest::CallResult {
    let text = String::from_utf8_lossy(payload);
    Ok(settings_response(P::validate_settings(&text).map_err(|e| e.to_string())).into_bytes())
}

/// Writes `{"valid":true}` or `{"valid":false,"message":"…"}`.
pub fn settings_response(result: Result<(), String>) -> String {
    match result {
        Ok(()) => r#"{"valid":true}"#.to_owned(),
        Err(message) => {
            let mut out = String::from(r#"{"valid":false,"message":"#);
            write_str(&mut out, &message);
            out.push('}');
            out
        }
    }
}

/// Writes a Kubewarden `ValidationResponse`. The mutated object is already JSON text (the request's
/// object with edits spliced in), so it is copied, not re-serialised.
pub fn validation_response(verdict: &Verdict) -> String {
    // Room for everything, escapes aside, so that the mutated object is copied once.
    let mutated = verdict.mutated_object.as_deref().map_or(0, str::len);
    let message = verdict.message.as_deref().map_or(0, str::len);
    let lists: usize = verdict.warnings.iter().map(|w| w.len() + 3).sum::<usize>()
        + verdict
            .audit_annotations
            .iter()
            .map(|(k, v)| k.len() + v.len() + 6)
            .sum::<usize>();
    let mut out = String::with_capacity(128 + mutated + message + lists);
    out.push_str(if verdict.accepted {
        r#"{"accepted":true"#
    } else {
        r#"{"accepted":false"#
    });
    if let Some(message) = &verdict.message {
        out.push_str(r#","message":"#);
        write_str(&mut out, message);
    }
    if let Some(code) = verdict.code {
        out.push_str(&format!(r#","code":{code}"#));
    }
    if let Some(object) = &verdict.mutated_object {
        out.push_str(r#","mutated_object":"#);
        out.push_str(object);
    }
    if !verdict.audit_annotations.is_empty() {
        out.push_str(r#","audit_annotations":"#);
        write_str_map(&mut out, &verdict.audit_annotations);
    }
    if !verdict.warnings.is_empty() {
        out.push_str(r#","warnings":"#);
        write_str_array(&mut out, &verdict.warnings);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_valid_json_with_kubewarden_keys() {
        let verdict = Verdict {
            accepted: true,
            message: Some("m \"q\"".into()),
            code: Some(200),
            mutated_object: Some(r#"{"b":1,"a":2}"#.into()),
            warnings: vec!["w1".into(), "w2".into()],
            audit_annotations: vec![("k".into(), "v".into())],
        };
        let text = validation_response(&verdict);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"accepted":true,"message":"m \"q\"","code":200,"mutated_object":{"b":1,"a":2},
                               "audit_annotations":{"k":"v"},"warnings":["w1","w2"]})
        );
        assert!(
            text.contains(r#"{"b":1,"a":2}"#),
            "mutated object copied verbatim"
        );
        assert_eq!(
            validation_response(&Verdict::accept()),
            r#"{"accepted":true}"#
        );
        assert_eq!(
            settings_response(Err("x\ny".into())),
            r#"{"valid":false,"message":"x\ny"}"#
        );
    }
}
