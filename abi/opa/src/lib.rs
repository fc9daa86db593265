//! OPA adapter: runs the validating half of a taintguard [`Policy`](taintguard::Policy) behind
//! the OPA WebAssembly ABI 1.2, so the module loads wherever an OPA-compiled Rego policy does:
//! Kubewarden in `gatekeeper` and `opa` execution modes (burrego) and the
//! `@open-policy-agent/opa-wasm` SDK. No Rego is involved: the module implements the ABI itself.
//!
//! * [`evaluate`]: what each entrypoint answers, as JSON text (plain Rust, tested on the host).
//! * `abi` (wasm32 only): the ABI exports, values and evaluation contexts in linear memory.
//! * `heap` (wasm32 only): the bump heap behind both `opa_malloc` and Rust's global allocator,
//!   and below it the region where an instance keeps the settings it built last.
//!
//! A policy crate built for `wasm32-unknown-unknown` is one line:
//! `taintguard_opa::policy!(MyPolicy);`. It must be linked with `--import-memory`,
//! `--export-memory` and a small stack (see `build.sh`), and the ABI version globals need the
//! post-link rewrite in `buildtools/wasm-metadata` (`opa::set_abi_globals`): a Rust static can only be
//! exported as a global holding its address, not its value.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod evaluate;
pub mod inventory;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod abi;
#[cfg(target_arch = "wasm32")]
mod heap;
#[cfg(target_arch = "wasm32")]
mod host;

pub use evaluate::{evaluate, refuse, Entrypoint, ENTRYPOINTS_JSON};
/// The core, for the `policy!` expansion in a policy crate.
#[doc(hidden)]
pub use taintguard;

/// `opa_wasm_abi_version` and `opa_wasm_abi_minor_version`: 1.2 is the version that has
/// `opa_eval`, the one-call evaluation the JavaScript SDK uses when it is offered.
pub const ABI_VERSION: (i32, i32) = (1, 2);

/// Exports `eval` and `opa_eval` for `$policy`; every other ABI function is policy-independent
/// and exported by this crate itself. Both take addresses from the host, so both are
/// `unsafe extern "C"` with the contract of `abi::eval` and `abi::opa_eval`; the expansion's
/// `unsafe` is this crate's code, so a policy crate can still forbid `unsafe_code` in its own.
#[macro_export]
macro_rules! policy {
    ($policy:ty) => {
        // What the policy reads of the cluster, for the build's check of its metadata.
        $crate::taintguard::declare_asks!($policy);

        /// # Safety
        /// The host's side of the OPA ABI: see `taintguard_opa::abi::eval`.
        #[no_mangle]
        pub unsafe extern "C" fn eval(ctx: i32) -> i32 {
            // SAFETY: the caller's contract is this function's.
            unsafe { $crate::abi::eval::<$policy>(ctx) }
        }

        /// # Safety
        /// The host's side of the OPA ABI: see `taintguard_opa::abi::opa_eval`. Its seven
        /// parameters are those OPA's Wasm ABI 1.2 fixes.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn opa_eval(
            reserved: i32,
            entrypoint: i32,
            data: i32,
            input: i32,
            input_len: i32,
            heap_ptr: i32,
            format: i32,
        ) -> i32 {
            // SAFETY: the caller's contract is this function's.
            unsafe {
                $crate::abi::opa_eval::<$policy>(
                    reserved, entrypoint, data, input, input_len, heap_ptr, format,
                )
            }
        }
    };
}
