//! The one host call of the benchmark's context-aware anchors: the Namespace a request is in,
//! asked of policy-server as toleration-injection's PodTolerationRestriction asks it
//! (`kubewarden/kubernetes/get_resource`: `abi/kubewarden/src/cluster.rs`), from policy-server's
//! five-second cache as the policy's default `namespaceReads: cached` asks, or fresh
//! (`disable_cache: true`) as `namespaceReads: fresh` asks, and the answer read through into
//! `IgnoredAny`, so that the host's answer (the API server's round trip, where it makes one) and
//! the answer's reading are on the anchor's side of a ratio too.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use serde::de::IgnoredAny;
use serde::Serialize;

/// `get_resource`'s request, as the policy writes it: written again rather than imported, since
/// an anchor must not link the adapter whose cost it is measured against.
#[derive(Serialize)]
struct GetResource<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
    disable_cache: bool,
}

/// Asks for the Namespace `name` and reads the answer through: `fresh` sets `disable_cache` (a
/// GET of the API server per call), else policy-server may answer from its cache.
///
/// # Errors
///
/// The host's refusal, or an answer that is not JSON.
pub fn ask(name: &str, fresh: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let request = GetResource {
        api_version: "v1",
        kind: "Namespace",
        name,
        namespace: None,
        disable_cache: fresh,
    };
    let answer = taintguard_wapc::host_call(
        "kubewarden",
        "kubernetes",
        "get_resource",
        &serde_json::to_vec(&request)?,
    )?;
    serde_json::from_slice::<IgnoredAny>(&answer)?;
    Ok(())
}
