//! The benchmark floor in policy-server: a module that answers every call without reading its
//! payload, so what a host spends around a policy (HTTP, the AdmissionReview, a fresh instance,
//! the waPC round trip) is all it costs. Built with the workspace release profile like the policies.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

taintguard_wapc::guest!(serve);

fn serve(operation: &[u8], _payload: &[u8]) -> taintguard_wapc::Answer {
    let answer: &[u8] = match operation {
        b"validate" => br#"{"accepted":true}"#,
        b"validate_settings" => br#"{"valid":true}"#,
        b"protocol_version" => br#""v1""#,
        other => return Err(taintguard_wapc::unknown(other)),
    };
    Ok(answer.to_vec())
}
