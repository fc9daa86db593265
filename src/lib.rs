//! taintguard: the engine-independent core of admission policies that keep node taints and
//! cordons from being lost and put the right tolerations on workloads.
//!
//! Nothing here knows about any engine ABI. A policy implements [`policy::Policy`]; the adapters
//! (`abi/*`) turn engine payloads into calls of [`policy::Policy::validate`] and write the
//! [`verdict::Verdict`] the way their engine expects.

// Untrusted requests are read here; memory safety is the compiler's to prove, never a comment's.
#![forbid(unsafe_code)]

pub mod admission;
pub mod cluster;
pub mod glob;
pub mod json;
pub mod k8s_names;
pub mod label_selector;
pub mod policy;
pub mod principal;
pub mod settings;
pub mod taint;
pub mod taint_preservation;
pub mod toleration;
pub mod toleration_injection;
pub mod verdict;

pub use cluster::{Cluster, NoCluster};
pub use policy::{Policy, PolicyExt};
pub use verdict::{Decision, Verdict};
