//! Kubewarden adapter: runs a taintguard [`Policy`](taintguard::Policy) behind the waPC operations Kubewarden's
//! policy-server and kwctl invoke (`validate`, `validate_settings`, `protocol_version`).
//!
//! Payloads and answers follow docs/abi.md ("Kubewarden waPC"): `validate` receives
//! `{"request": AdmissionRequest, "settings": {...}}` and answers a `ValidationResponse` with
//! snake_case keys; `validate_settings` receives the bare settings object and answers
//! `{"valid": bool, "message": ...}`; `protocol_version` answers the JSON string `"v1"`.
//!
//! A policy crate is one line: `taintguard_kubewarden::policy!(MyPolicy);`.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod arena;
mod cluster;
pub mod memcmp;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use taintguard::admission::AdmissionRequest;
use taintguard::json::{write_str, Level, Object};
use taintguard::{read_settings, run, run_read, Half, Policy, Verdict};

/// The core, for the `policy!` expansion in a policy crate.
#[doc(hidden)]
pub use taintguard;
pub use taintguard_wapc;

/// Exports waPC's `__guest_call`, which answers the policy's operations ([`serve`]) from the
/// bump arena ([`arena`]), rewound when each call ends. No `wapc_init`: the host calls it only
/// where a module exports it, and there is nothing to set up.
#[macro_export]
macro_rules! policy {
    ($policy:ty) => {
        // What the policy reads of the cluster, for the build's check of its metadata.
        $crate::taintguard::declare_asks!($policy);

        #[cfg(target_arch = "wasm32")]
        #[global_allocator]
        static ALLOCATOR: $crate::arena::Arena<$crate::arena::Memory> =
            $crate::arena::Arena::new($crate::arena::Memory);

        // C's allocation functions over the same arena (see `arena`), so that wasi-libc's own
        // allocator is not linked.
        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub unsafe extern "C" fn malloc(size: usize) -> *mut u8 {
            // SAFETY: C's contract, passed on.
            unsafe { ALLOCATOR.c_malloc(size) }
        }

        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub unsafe extern "C" fn free(ptr: *mut u8) {
            // SAFETY: C's contract, passed on.
            unsafe { ALLOCATOR.c_free(ptr) }
        }

        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut u8 {
            // SAFETY: C's contract, passed on.
            unsafe { ALLOCATOR.c_calloc(n, size) }
        }

        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub unsafe extern "C" fn realloc(ptr: *mut u8, size: usize) -> *mut u8 {
            // SAFETY: C's contract, passed on.
            unsafe { ALLOCATOR.c_realloc(ptr, size) }
        }

        // wasi-libc's compares a byte at a time (see `memcmp`).
        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
            // SAFETY: C's contract: both point at `n` readable bytes.
            unsafe { $crate::memcmp::compare_raw(a, b, n) }
        }

        // Each call's memory is taken back when it ends (see `arena`).
        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub extern "C" fn __guest_call(op_len: i32, payload_len: i32) -> i32 {
            let before = ALLOCATOR.position();
            let answered =
                $crate::taintguard_wapc::guest_call(op_len, payload_len, $crate::serve::<$policy>);
            // SAFETY: the host has copied the answer, and nothing the call allocated is kept:
            // the modules hold no state between calls.
            unsafe { ALLOCATOR.rewind(before) };
            answered
        }

        // Native builds (unit tests, clippy) have no host to answer, but keep what a module
        // serves in use, as its wasm build does.
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        fn __guest_call_served() -> impl Sized {
            $crate::serve::<$policy>
        }
    };
}

/// The answer to the waPC operation `operation` with `payload`; an error for an operation
/// Kubewarden does not call.
pub fn serve<P: Policy>(operation: &[u8], payload: &[u8]) -> taintguard_wapc::Answer {
    match operation {
        b"validate" => Ok(validate_payload::<P>(payload)),
        b"validate_settings" => Ok(validate_settings::<P>(payload)),
        b"protocol_version" => Ok(b"\"v1\"".to_vec()),
        other => Err(taintguard_wapc::unknown(other)),
    }
}

/// The same payload with the request kept as text, for a payload the one pass refused: read
/// apart, settings errors win over request errors and each error names its field, as in
/// [`taintguard::run`].
#[derive(Deserialize)]
struct ValidationText<'a> {
    #[serde(borrow)]
    request: &'a RawValue,
    #[serde(borrow, default)]
    settings: Option<&'a RawValue>,
}

/// The answer to one `validate` payload (public for the profiling example). Every outcome,
/// malformed payloads included, is a `ValidationResponse`: a rejection here is an answer the API
/// server can show, where a guest error would only say "internal server error".
#[doc(hidden)]
pub fn validate_payload<P: Policy>(payload: &[u8]) -> Vec<u8> {
    let cluster = cluster::HostCluster::<P>(std::marker::PhantomData);
    // Read as text checked once: read as bytes, serde_json checks each string and each raw
    // capture (every member of the objects) on its own, a second pass over most of the bytes.
    let one_pass = utf8(payload).and_then(|text| read_in_one_pass::<P>(text));
    let verdict = match one_pass {
        Some((request, settings)) => {
            let verdict = run_read::<P, _>(&request, &settings, Half::Mutating, &cluster);
            let_go((request, settings));
            verdict
        }
        None => match serde_json::from_slice::<ValidationText>(payload) {
            Ok(envelope) => run::<P>(
                envelope.request.get(),
                settings_text(envelope.settings),
                Half::Mutating,
                &cluster,
            ),
            Err(e) => Verdict::reject(
                400,
                format!("{}: malformed validation payload: {e}", P::NAME),
            ),
        },
    };
    let answer = response_json(&verdict);
    let_go(verdict);
    answer
}

/// Lets `value` go with the call's memory in a module (see `arena`), where dropping it would
/// visit each part to free nothing: 2.5k guest instructions of a rule's settings. Dropped in
/// native builds, whose allocator frees.
fn let_go<T>(value: T) {
    #[cfg(target_arch = "wasm32")]
    std::mem::forget(value);
    #[cfg(not(target_arch = "wasm32"))]
    drop(value);
}

/// The `validate` payload with the request and the settings read in the same pass: the fast way,
/// and the only one a well-formed payload takes (`None` for any other, which [`run`] then reads
/// apart to say what is wrong). Settings kept as text to be read after were walked twice, a fifth
/// of what reading them cost (benchmarks/cost.md). Absent or `null` settings are every default.
fn read_in_one_pass<P: Policy>(payload: &str) -> Option<(AdmissionRequest<'_>, P::Settings)> {
    let mut settings = None;
    let mut envelope = Object::parse_reading(payload, Level::Envelope, &mut |key, value| {
        if key != r#""settings""# || value.starts_with("null") {
            return None;
        }
        // What Kubewarden sends for a policy without settings: every default, which serde
        // built from `Default` too, after setting up its reader (550 guest instructions,
        // benchmarks/cost.md, "Few tolerations"). Each policy's tests hold the two equal.
        if value.starts_with("{}") {
            settings = Some(P::Settings::default());
            return Some(2);
        }
        let (read, end) = taintguard::settings::read_leading(value).ok()?;
        settings = Some(read);
        Some(end)
    })
    .ok()?;
    let request = envelope.take_object("request").ok()??;
    // Given twice, or spelt with escapes (then read from its text here): `get` says which.
    let settings = match (settings, envelope.get("settings").ok()?.value()) {
        (Some(settings), _) => settings,
        (None, Some(text)) => taintguard::settings::read(text).ok()?,
        (None, None) => P::Settings::default(),
    };
    Some((
        AdmissionRequest::from_members(payload, request).ok()?,
        settings,
    ))
}

/// Absent settings mean every default, as Kubewarden sends none for a policy without any.
fn settings_text(settings: Option<&RawValue>) -> &str {
    settings.map_or("{}", RawValue::get)
}

/// `payload` as text when it is UTF-8. Its ASCII run, most of a request, is checked 64 bytes at a
/// time, and only what follows by `str::from_utf8`, whose check goes four bytes at a time on
/// wasm32 (its word): 5.3k of incident 1's guest instructions, 1.0k this way (benchmarks/
/// cost.md, "Short copies").
fn utf8(payload: &[u8]) -> Option<&str> {
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut ascii = 0;
    while let Some(block) = payload.get(ascii..ascii + 64) {
        let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().unwrap_or_default());
        let any =
            word(0) | word(8) | word(16) | word(24) | word(32) | word(40) | word(48) | word(56);
        if any & HIGH != 0 {
            break;
        }
        ascii += 64;
    }
    std::str::from_utf8(&payload[ascii..]).ok()?;
    // SAFETY: the first `ascii` bytes are ASCII and the rest is UTF-8 on its own: an ASCII
    // byte ends any character before it, so the whole is UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(payload) })
}

/// `bytes` as a `String` when they are UTF-8, checked as [`utf8`] checks a payload: a host's
/// answer is ASCII but for rare names.
fn utf8_string(bytes: Vec<u8>) -> Option<String> {
    utf8(&bytes)?;
    // SAFETY: `utf8` found the bytes UTF-8.
    Some(unsafe { String::from_utf8_unchecked(bytes) })
}

fn validate_settings<P: Policy>(payload: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(payload);
    let response = match read_settings::<P>(&text) {
        Ok(_) => SettingsResponse {
            valid: true,
            message: None,
        },
        Err(e) => SettingsResponse {
            valid: false,
            message: Some(e.to_string()),
        },
    };
    to_json(&response)
}

/// The answer to `validate_settings`.
#[derive(Serialize)]
struct SettingsResponse {
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// Kubewarden's `ValidationResponse` for `verdict`, written by hand: the members in the order
/// Kubewarden's own type declares them, each present only when it has something to say, and a
/// mutated object copied in as the core's JSON text (a `RawValue` would have read the whole
/// object once more to check what the core built as JSON, a tenth of what a mutation of a small
/// object costs). The strings go through [`write_str`], which escapes as serde_json does a word
/// at a time: warnings and annotations are most of a small mutation's answer
/// (benchmarks/cost.md).
fn response_json(verdict: &Verdict) -> Vec<u8> {
    let object = verdict.mutated_object();
    // One buffer sized for the whole answer (escapes may outgrow it, at the price of one copy):
    // grown from empty, the warnings of a small mutation were copied five times over.
    let texts = verdict.message().map_or(0, str::len)
        + verdict.warnings.iter().map(|w| w.len() + 3).sum::<usize>()
        + (verdict.audit_annotations.iter())
            .map(|(key, value)| key.len() + value.len() + 6)
            .sum::<usize>();
    let mut out = String::with_capacity(96 + object.map_or(0, str::len) + texts + texts / 8);
    out.push_str(if verdict.accepted() {
        r#"{"accepted":true"#
    } else {
        r#"{"accepted":false"#
    });
    if let Some(object) = object {
        out.push_str(r#","mutated_object":"#);
        out.push_str(object);
    }
    if let Some(message) = verdict.message() {
        out.push_str(r#","message":"#);
        write_str(&mut out, message);
    }
    if let Some(code) = verdict.code() {
        out.push_str(r#","code":"#);
        out.push_str(&code.to_string());
    }
    if !verdict.audit_annotations.is_empty() {
        out.push_str(r#","audit_annotations":{"#);
        for (i, (key, value)) in verdict.audit_annotations.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(&mut out, key);
            out.push(':');
            write_str(&mut out, value);
        }
        out.push('}');
    }
    if !verdict.warnings.is_empty() {
        out.push_str(r#","warnings":["#);
        for (i, warning) in verdict.warnings.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(&mut out, warning);
        }
        out.push(']');
    }
    out.push('}');
    out.into_bytes()
}

/// Serialising these types cannot fail: every map key is a string.
fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("responses serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(verdict: Verdict) -> String {
        String::from_utf8(response_json(&verdict)).unwrap()
    }

    /// Text exactly when `str::from_utf8` says so, wherever a character or a bad byte falls
    /// around the 64-byte blocks of the ASCII run.
    #[test]
    fn utf8_and_utf8_string_agree_with_std() {
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for len in [0, 1, 63, 64, 65, 127, 128, 200] {
            let ascii = vec![b'a'; len];
            texts.push(ascii.clone());
            for at in [0, 1, 62, 63, 64, 65, 127, 128, 199] {
                for odd in [
                    &b"\xc3\xa9"[..],
                    b"\xe2\x82\xac",
                    b"\xc3",
                    b"\xff",
                    b"\x80a",
                    b"\xed\xa0\x80",
                ] {
                    let mut text = ascii.clone();
                    let at = at.min(len);
                    text.splice(at..at, odd.iter().copied());
                    texts.push(text);
                }
            }
        }
        for text in texts {
            assert_eq!(utf8(&text), std::str::from_utf8(&text).ok(), "{text:?}");
            let std = String::from_utf8(text.clone()).ok();
            assert_eq!(utf8_string(text), std);
        }
    }

    #[test]
    fn responses_have_kubewarden_keys_and_copy_the_object_verbatim() {
        let mutated = Verdict {
            warnings: vec!["w1".into(), "w2\"".into()],
            audit_annotations: vec![("k".into(), "v".into()), ("a".into(), "b".into())],
            ..Verdict::mutate(r#"{"b":1,"a":2.50}"#.into())
        };
        let cases = [
            (
                mutated,
                r#"{"accepted":true,"mutated_object":{"b":1,"a":2.50},"audit_annotations":{"k":"v","a":"b"},"warnings":["w1","w2\""]}"#,
            ),
            (Verdict::accept(), r#"{"accepted":true}"#),
            (
                Verdict::reject(403, "m \"q\""),
                r#"{"accepted":false,"message":"m \"q\"","code":403}"#,
            ),
            (
                Verdict {
                    warnings: vec!["only\twarned".into()],
                    ..Verdict::accept()
                },
                r#"{"accepted":true,"warnings":["only\twarned"]}"#,
            ),
            (
                Verdict {
                    warnings: vec!["w".into()],
                    audit_annotations: vec![("who".into(), "\u{1}é".into())],
                    ..Verdict::reject(400, "bad")
                },
                r#"{"accepted":false,"message":"bad","code":400,"audit_annotations":{"who":"\u0001é"},"warnings":["w"]}"#,
            ),
        ];
        for (verdict, want) in cases {
            assert_eq!(response(verdict), want);
        }
        let invalid = SettingsResponse {
            valid: false,
            message: Some("x\ny".into()),
        };
        assert_eq!(
            String::from_utf8(to_json(&invalid)).unwrap(),
            r#"{"valid":false,"message":"x\ny"}"#
        );
    }

    /// The hand-written responses read back as Kubewarden's own SDK types, field for field, and
    /// use no key those types lack, so the wire format cannot drift from Kubewarden's.
    #[test]
    fn responses_read_as_kubewarden_policy_sdk_types() {
        use kubewarden_policy_sdk::response::ValidationResponse;
        use kubewarden_policy_sdk::settings::SettingsValidationResponse;
        use serde_json::Value;

        let keys =
            |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
        let verdicts = [
            Verdict {
                warnings: vec!["w1".into()],
                audit_annotations: vec![("k".into(), "v".into())],
                ..Verdict::mutate(r#"{"kind":"Node","spec":{"taints":[]}}"#.into())
            },
            Verdict::accept(),
            Verdict {
                warnings: vec!["w".into()],
                audit_annotations: vec![("who".into(), "alice".into())],
                ..Verdict::reject(403, "refused")
            },
        ];
        for verdict in verdicts {
            let text = response(verdict.clone());
            let sdk: ValidationResponse = serde_json::from_str(&text).unwrap();
            assert_eq!(sdk.accepted, verdict.accepted(), "{text}");
            assert_eq!(sdk.message.as_deref(), verdict.message(), "{text}");
            assert_eq!(sdk.code, verdict.code(), "{text}");
            let mutated: Option<Value> = verdict
                .mutated_object()
                .map(|m| serde_json::from_str(m).unwrap());
            assert_eq!(sdk.mutated_object, mutated, "{text}");
            let warnings = (!verdict.warnings.is_empty()).then(|| verdict.warnings.clone());
            assert_eq!(sdk.warnings, warnings, "{text}");
            let annotations = (!verdict.audit_annotations.is_empty())
                .then(|| verdict.audit_annotations.iter().cloned().collect());
            assert_eq!(sdk.audit_annotations, annotations, "{text}");
            let ours: Value = serde_json::from_str(&text).unwrap();
            let theirs = serde_json::to_value(&sdk).unwrap();
            for key in keys(&ours) {
                assert!(
                    theirs.get(&key).is_some(),
                    "{key} is no field of the SDK's: {text}"
                );
            }
        }
        for settings in [
            SettingsResponse {
                valid: true,
                message: None,
            },
            SettingsResponse {
                valid: false,
                message: Some("bad".into()),
            },
        ] {
            let text = String::from_utf8(to_json(&settings)).unwrap();
            let sdk: SettingsValidationResponse = serde_json::from_str(&text).unwrap();
            assert_eq!((sdk.valid, sdk.message), (settings.valid, settings.message));
            let theirs = serde_json::to_value(
                serde_json::from_str::<SettingsValidationResponse>(&text).unwrap(),
            )
            .unwrap();
            for key in keys(&serde_json::from_str(&text).unwrap()) {
                assert!(theirs.get(&key).is_some(), "{key}: {text}");
            }
        }
    }
}
