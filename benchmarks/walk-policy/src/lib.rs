//! The accepting anchor of the real-host benchmark: a module that reads every byte of the
//! request as JSON (validating it, as any policy must) into `serde::de::IgnoredAny`, builds
//! nothing, and accepts. Whatever an accepting policy costs beyond this is its own.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use serde::de::IgnoredAny;

taintguard_wapc::guest!(taintguard_wapc::answering(validate));

fn validate(payload: &[u8]) -> taintguard_wapc::Validated {
    serde_json::from_slice::<IgnoredAny>(payload)?;
    Ok(br#"{"accepted":true}"#.to_vec())
}
