//! taintguard: the engine-independent core of admission policies that keep node taints and
//! cordons from being lost and put the right tolerations on workloads.
//!
//! Nothing here knows about any engine ABI. The adapters (`abi/*`) hand a request and settings
//! text to [`policy::run`] and write the [`Verdict`] the way their engine expects. The crate is
//! four layers, each relying only on those above it:
//!
//! 1. **The contract**: what a policy is and is given ([`policy`]: [`Policy`], [`run`]), how
//!    its settings are read ([`settings`]), what it answers ([`verdict`]) and what it may ask the
//!    cluster ([`cluster`]).
//! 2. **Kubernetes vocabulary**: the admission request ([`admission`]), names ([`k8s_names`]),
//!    requesters ([`principal`]), taints ([`taint`]), tolerations ([`toleration`]), label
//!    selectors ([`label_selector`]) and the globs settings match them with ([`glob`]).
//! 3. **JSON plumbing**: borrowed views of request text and edits spliced back into it
//!    ([`json`]). JSONPath, which one optional matcher uses, is a crate of its own
//!    (`taintguard-jsonpath`).
//! 4. **The two policies**: [`taint_preservation`] and [`toleration_injection`].

// Untrusted requests are read here; memory safety is the compiler's to prove, never a comment's.
#![forbid(unsafe_code)]

// 1. The contract.
pub mod cluster;
pub mod policy;
pub mod settings;
pub mod verdict;

pub use cluster::{Cluster, NoCluster};
pub use policy::{read_settings, run, run_read, try_run, Half, Policy};
pub use verdict::{Decision, Verdict};

// 2. Kubernetes vocabulary.
pub mod admission;
pub mod glob;
pub mod k8s_names;
pub mod label_selector;
pub mod principal;
pub mod taint;
pub mod toleration;

// 3. JSON plumbing, and the small maps requests need.
pub mod json;
pub mod small_map;

// 4. The two policies.
pub mod taint_preservation;
pub mod toleration_injection;

pub use taint_preservation::TaintPreservation;
pub use toleration_injection::TolerationInjection;
