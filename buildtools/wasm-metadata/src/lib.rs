//! From a linked policy module to a Kubewarden artifact, and the readers every other crate uses:
//! the one reader of a policy's `metadata.yml` ([`metadata`]), the metadata section a module
//! carries (`section`), what a module says it reads of the cluster (`asks`), what each execution mode's host needs of a module's interface (`wapc`,
//! `opa`), the API versions rules may name (`served`) and the post-link finishing of OPA-ABI modules (`opa::finish`)
//! and of waPC modules' `memory.copy` (`short_copies`).
//! `src/bin/embed-metadata.rs` puts them together for `./build.sh`.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

#[cfg(feature = "module")]
pub mod asks;
pub mod metadata;
#[cfg(feature = "module")]
pub mod opa;
#[cfg(feature = "module")]
pub mod section;
pub mod served;
#[cfg(feature = "module")]
pub mod short_copies;
#[cfg(feature = "module")]
pub mod wapc;
