//! The accepting anchor of the real-host benchmark: a module that reads every byte of the
//! request as JSON (validating it, as any policy must) into `serde::de::IgnoredAny`, builds
//! nothing, and accepts. Whatever an accepting policy costs beyond this is its own.

use serde::de::IgnoredAny;
use wapc_guest::CallResult;

#[no_mangle]
pub extern "C" fn wapc_init() {
    wapc_guest::register_function("validate", validate);
    wapc_guest::register_function("validate_settings", |_| Ok(br#"{"valid":true}"#.to_vec()));
    wapc_guest::register_function("protocol_version", |_| Ok(br#""v1""#.to_vec()));
}

fn validate(payload: &[u8]) -> CallResult {
    serde_json::from_slice::<IgnoredAny>(payload)?;
    Ok(br#"{"accepted":true}"#.to_vec())
}
