//! The hosts Kubewarden runs taintguard's artifacts in, embedded, for the tests and for the
//! `taintguard` command: [`wapc`] is the waPC stack policy-server 1.35 links, with recorded
//! cluster answers; [`gatekeeper`] evaluates the OPA-ABI builds as Kubewarden's gatekeeper mode
//! calls them.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod gatekeeper;
pub mod wapc;

/// The wasmtime both hosts run on, for tools that drive a module below the hosts' APIs.
pub use wasmtime;
