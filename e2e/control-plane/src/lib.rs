//! A control plane on loopback (etcd and kube-apiserver 1.20) and a policy-server beside it, as
//! the end-to-end suite runs them and as the benchmarks run the API server a context-aware policy
//! reads (docs/e2e.md).

// clippy.toml's four-parameter rule is for the shipped code: src/, policies/, abi/ and cli/.
#![allow(clippy::too_many_arguments)]

pub mod binaries;
pub mod cluster;
