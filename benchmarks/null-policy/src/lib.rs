//! The benchmark floor in policy-server: a module that answers every call without reading its
//! payload, so what a host spends around a policy (HTTP, the AdmissionReview, a fresh instance,
//! the waPC round trip) is all it costs. Built with the workspace release profile like the policies.

use wapc_guest::CallResult;

#[no_mangle]
pub extern "C" fn wapc_init() {
    wapc_guest::register_function("validate", |_| answer(br#"{"accepted":true}"#));
    wapc_guest::register_function("validate_settings", |_| answer(br#"{"valid":true}"#));
    wapc_guest::register_function("protocol_version", |_| answer(br#""v1""#));
}

fn answer(json: &[u8]) -> CallResult {
    Ok(json.to_vec())
}
