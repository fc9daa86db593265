//! The policy as WebAssembly modules, with the `wasm` feature:
//! * wasm32-wasip1: a Kubewarden waPC module (the default `kubewarden-wapc` execution mode);
//! * wasm32-unknown-unknown: an OPA-ABI module running the policy's validating half, for
//!   Kubewarden's `gatekeeper` and `opa` execution modes and the OPA SDKs.

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
taintguard_kubewarden::policy!(crate::TemplatePolicy);

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
taintguard_opa::policy!(crate::TemplatePolicy);
