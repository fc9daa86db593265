//! The toleration-injection policy as WebAssembly modules:
//! * wasm32-wasip1: a Kubewarden waPC module (the default `kubewarden-wapc` execution mode);
//! * wasm32-unknown-unknown: an OPA-ABI module running the policy's validating half, for
//!   Kubewarden's `gatekeeper` and `opa` execution modes and the OPA SDKs.

// The exports (`#[no_mangle]`, the OPA ones `unsafe extern "C"`) come from the adapters'
// `policy!` macros and are the adapters' code: the lint checks this crate's own source.
#![forbid(unsafe_code)]

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
taintguard_kubewarden::policy!(taintguard::toleration_injection::TolerationInjection);

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
taintguard_opa::policy!(taintguard::toleration_injection::TolerationInjection);
