//! The mutating anchor of the real-host benchmark: a module that finds `request.object` as a
//! borrowed slice of the payload (reading the rest of the request without keeping it), inserts
//! one member at its start and hands it back as `mutated_object`, which policy-server then
//! parses and diffs into a one-operation JSONPatch. Whatever a mutating policy costs beyond this
//! is its own.
//!
//! Built with the `namespace` feature it is the anchor of a context-aware mutation: it first asks
//! the host for the request's Namespace as the policy does by default, from policy-server's cache
//! (`disable_cache: false`); with `namespace-fresh`, as the policy does under `namespaceReads:
//! fresh`, with `disable_cache: true` (`benchmarks/ask-namespace`).

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use serde::Deserialize;
use serde_json::value::RawValue;

taintguard_wapc::guest!(taintguard_wapc::answering(validate));

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow)]
    request: Request<'a>,
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    object: &'a RawValue,
    #[cfg(feature = "namespace")]
    #[serde(borrow)]
    namespace: &'a str,
}

/// The member added: a name no Kubernetes object has, so the patch is one `add`.
const MEMBER: &str = r#""taintguardBenchmark":true"#;

fn validate(payload: &[u8]) -> taintguard_wapc::Validated {
    let payload: Payload = serde_json::from_slice(payload)?;
    #[cfg(feature = "namespace")]
    ask_namespace::ask(payload.request.namespace, cfg!(feature = "namespace-fresh"))?;
    let object = payload.request.object.get();
    let inner = object
        .trim_start()
        .strip_prefix('{')
        .ok_or("request.object is not a JSON object")?;
    let separator = if inner.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    let head = r#"{"accepted":true,"mutated_object":{"#;
    let mut out = String::with_capacity(head.len() + MEMBER.len() + object.len() + 2);
    out.push_str(head);
    out.push_str(MEMBER);
    out.push_str(separator);
    out.push_str(inner);
    out.push('}');
    Ok(out.into_bytes())
}
