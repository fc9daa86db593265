//! The `taintguard` command's library: an AdmissionReview built from the parts a user knows
//! ([`review`]), and the objects read as `kubectl get -o yaml` or `-o json` prints them
//! ([`object`]). `taintguard request` writes the review, for `kwctl run -r` or the playground.

#![forbid(unsafe_code)]

pub mod object;
pub mod review;
