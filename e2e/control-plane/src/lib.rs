//! A control plane on loopback (etcd and kube-apiserver 1.20) and a policy-server beside it, as
//! the end-to-end suite runs them and as the benchmarks run the API server a context-aware policy
//! reads (docs/e2e.md).

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod binaries;
pub mod cluster;
pub mod metrics;
