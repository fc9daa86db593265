//! The benchmark baseline: what any policy minimally does with a request. `validate` parses the
//! whole payload (`{"request": …, "settings": …}`) into a `serde_json::Value`, as a policy written
//! the usual way would, and accepts. Built with the workspace release profile like the policies.

use wapc_guest::CallResult;

#[no_mangle]
pub extern "C" fn wapc_init() {
    wapc_guest::register_function("validate", validate);
    // policy-server validates every policy's settings before it serves (benchmarks/src/realhost).
    wapc_guest::register_function("validate_settings", |_| Ok(br#"{"valid":true}"#.to_vec()));
    wapc_guest::register_function("protocol_version", |_| Ok(b"\"v1\"".to_vec()));
}

fn validate(payload: &[u8]) -> CallResult {
    let value: serde_json::Value = serde_json::from_slice(payload)?;
    // Reading one field keeps the parse from being optimised away and mirrors a policy's first look.
    let accepted = value.get("request").is_some();
    Ok(if accepted {
        br#"{"accepted":true}"#.to_vec()
    } else {
        br#"{"accepted":false,"message":"no request"}"#.to_vec()
    })
}
