//! The `taintguard` command's library: an AdmissionReview built from the parts a user knows
//! ([`review`]), the objects read as `kubectl get -o yaml` or `-o json` prints them
//! ([`object`]), and the test suites users write for their own settings ([`suite`]), run in the
//! real hosts ([`run`]) against their expectations ([`expect`]) and reported ([`report`]).
//! `taintguard what-if` ([`what_if`]) judges a cluster's objects as the audit scanner would.

#![forbid(unsafe_code)]

pub mod cluster;
pub mod expect;
pub mod object;
pub mod report;
pub mod review;
pub mod run;
pub mod suite;
pub mod what_if;
