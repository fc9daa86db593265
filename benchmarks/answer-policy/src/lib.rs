//! The answer anchor of the real-host benchmark: a module that reads the whole payload (the
//! request and the settings document) into `serde::de::IgnoredAny`, building nothing, and
//! returns an answer embedded when it was built: the policy's own answer to one case, byte for
//! byte (`build.rs`). policy-server then does for it exactly what it does for the policy (parse
//! the answer, diff a mutated object into a JSONPatch, copy warnings and audit annotations), so
//! the policy's cost beyond this module's is its decision alone. Built with the `namespace`
//! feature it first asks for the request's Namespace as the policy does by default, from
//! policy-server's cache (`disable_cache: false`); with `namespace-fresh`, as the policy does
//! under `namespaceReads: fresh`, with `disable_cache: true` (`benchmarks/ask-namespace`). Not a
//! policy to deploy.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

taintguard_wapc::guest!(taintguard_wapc::answering(validate));

/// The policy's answer to the case this module was built for.
const ANSWER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/answer.json"));

#[cfg(not(feature = "namespace"))]
fn validate(payload: &[u8]) -> taintguard_wapc::Validated {
    serde_json::from_slice::<serde::de::IgnoredAny>(payload)?;
    Ok(ANSWER.to_vec())
}

/// The payload with the request's namespace kept; serde reads every other member through.
#[cfg(feature = "namespace")]
#[derive(serde::Deserialize)]
struct Payload<'a> {
    #[serde(borrow)]
    request: Request<'a>,
}

#[cfg(feature = "namespace")]
#[derive(serde::Deserialize)]
struct Request<'a> {
    namespace: &'a str,
}

#[cfg(feature = "namespace")]
fn validate(payload: &[u8]) -> taintguard_wapc::Validated {
    let payload: Payload = serde_json::from_slice(payload)?;
    ask_namespace::ask(payload.request.namespace, cfg!(feature = "namespace-fresh"))?;
    Ok(ANSWER.to_vec())
}
