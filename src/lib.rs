//! taintguard: the engine-independent SDK of admission policies that keep node taints and
//! cordons from being lost and put the right tolerations on workloads. The policies themselves
//! are crates of their own (`policies/<name>/`).
//!
//! Nothing here knows about any engine ABI. The adapters (`abi/*`) hand a request and settings
//! text to [`policy::run`] and write the [`Verdict`] the way their engine expects. The crate is
//! four layers, each module relying only on those listed before it:
//!
//! 1. **Plumbing**: borrowed views of request text and objects written back with edits ([`json`]),
//!    the small maps requests need ([`small_map`]), and what a policy answers ([`verdict`]).
//!    JSONPath, which one optional matcher uses, is a crate of its own (`taintguard-jsonpath`).
//! 2. **Settings reading** ([`settings`]): the checked types, objects and errors every policy's
//!    settings are read with.
//! 3. **Kubernetes vocabulary**: the globs settings match with ([`glob`]), names
//!    ([`k8s_names`]), requesters ([`principal`]), taints ([`taint`]), tolerations
//!    ([`toleration`]), label selectors ([`label_selector`]) and the admission request
//!    ([`admission`]).
//! 4. **The contract**: what a policy is and is given ([`policy`]: [`Policy`], [`run`]), what
//!    it may ask the cluster ([`cluster`]), and the `matchConditions` it writes for its webhook
//!    ([`match_condition`]).

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Untrusted requests are read here; memory safety is the compiler's to prove, never a comment's.
#![forbid(unsafe_code)]
// The core is the SDK policy authors read: each public item says what it is and why.
#![warn(missing_docs)]

// What `#[derive(SettingsFields)]` writes names this crate `::taintguard`, here as in the
// policies.
extern crate self as taintguard;

// 1. Plumbing.
pub mod byte_class;
pub mod json;
pub mod small_map;
pub mod verdict;

// 2. Settings reading.
pub mod settings;

// 3. Kubernetes vocabulary.
pub mod admission;
pub mod glob;
pub mod k8s_names;
pub mod label_selector;
pub mod principal;
pub mod taint;
pub mod toleration;

// 4. The contract.
pub mod cluster;
pub mod match_condition;
pub mod policy;

pub use cluster::{Cluster, NoCluster};
pub use match_condition::MatchCondition;
pub use policy::{read_settings, run, run_read, try_run, Half, Policy};
pub use verdict::{Decision, Verdict};
