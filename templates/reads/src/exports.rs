//! The policy as WebAssembly modules, with the `wasm` feature:
//! * wasm32-wasip1: a Kubewarden waPC module (the default `kubewarden-wapc` execution mode), whose
//!   ConfigMap lists are Kubewarden's `list_resources_by_namespace` host calls;
//! * wasm32-unknown-unknown: an OPA-ABI module running the policy's validating half, for
//!   Kubewarden's `gatekeeper` and `opa` execution modes and the OPA SDKs, whose ConfigMap lists
//!   are answered from the engine's inventory (`data.inventory`).

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
taintguard_kubewarden::policy!(crate::TemplateReads);

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
taintguard_opa::policy!(crate::TemplateReads);
