//! The benchmark baseline: what any policy minimally does with a request. `validate` parses the
//! whole payload (`{"request": …, "settings": …}`) into a `serde_json::Value`, as a policy written
//! the usual way would, and accepts. Built with the workspace release profile like the policies.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

taintguard_wapc::guest!(taintguard_wapc::answering(validate));

fn validate(payload: &[u8]) -> taintguard_wapc::Validated {
    let value: serde_json::Value = serde_json::from_slice(payload)?;
    // Reading one field keeps the parse from being optimised away and mirrors a policy's first look.
    let accepted = value.get("request").is_some();
    Ok(if accepted {
        br#"{"accepted":true}"#.to_vec()
    } else {
        br#"{"accepted":false,"message":"no request"}"#.to_vec()
    })
}
