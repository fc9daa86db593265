//! The cluster as Kubewarden's host capabilities answer it (docs/context.md): waPC host calls on
//! binding `kubewarden`, namespace `kubernetes`. policy-server and `kwctl run
//! --allow-context-aware` serve them with their kubeconfig, for the resources a policy's
//! `contextAwareResources` names and the capabilities its `hostCapabilities` grants.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Freshness};
use taintguard::Policy;

/// The host of the running module, for policy `P`: only the calls `P::ASKS` names are made, so
/// the others are not even compiled into its module (kwctl finds a module's host calls by the
/// names in it, and warns about any its metadata does not declare).
pub struct HostCluster<P>(pub PhantomData<P>);

fn not_asked(what: &str) -> ClusterError {
    ClusterError::Unavailable(format!("this policy does not ask the cluster for {what}"))
}

/// `list_resources_all`'s request. Field masks ask the host to keep only what the policy reads,
/// which keeps a list of thousands of nodes small (their image lists and status are most of it).
#[derive(Serialize)]
struct ListAll<'a> {
    api_version: &'a str,
    kind: &'a str,
    label_selector: Option<&'a str>,
    field_selector: Option<&'a str>,
    field_masks: [&'a str; 3],
}

/// `get_resource`'s request for the Namespace `name`. [`Freshness::Cached`] lets policy-server
/// answer from its five-second cache, which spares the API server a GET per Pod;
/// [`Freshness::Fresh`] sets `disable_cache`, so that a whitelist narrowed a moment ago counts
/// (docs/context.md, "How old an answer may be"). Written as serde writes a `GetResource` (the
/// test holds the two equal), but by hand: serde's writer took 4k guest instructions of every Pod
/// the plugin judges (benchmarks/cost.md, "PodTolerationRestriction's reads").
fn namespace_request(name: &str, freshness: Freshness) -> Vec<u8> {
    let mut out = String::with_capacity(96 + name.len());
    out.push_str(r#"{"api_version":"v1","kind":"Namespace","name":"#);
    taintguard::json::write_str(&mut out, name);
    out.push_str(match freshness {
        Freshness::Cached => r#","namespace":null,"disable_cache":false}"#,
        Freshness::Fresh => r#","namespace":null,"disable_cache":true}"#,
    });
    out.into_bytes()
}

/// `can_i`'s request: a SubjectAccessReview spec, asked fresh (not from the host's cache), since
/// an RBAC grant or revocation must take effect on the next request.
#[derive(Serialize)]
struct CanI<'a> {
    subject_access_review: Review<'a>,
    disable_cache: bool,
}

#[derive(Serialize)]
struct Review<'a> {
    user: &'a str,
    groups: Vec<&'a str>,
    resource_attributes: Attributes<'a>,
}

#[derive(Serialize)]
struct Attributes<'a> {
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    name: Option<&'a str>,
    namespace: Option<&'a str>,
    subresource: Option<&'a str>,
    version: Option<&'a str>,
}

/// The part of a SubjectAccessReview status the policy reads.
#[derive(Deserialize)]
struct Status {
    allowed: bool,
}

/// Native builds (the profiling example, unit tests) have no waPC host to call.
#[cfg(not(target_arch = "wasm32"))]
fn call(operation: &str, _: &[u8]) -> Result<Vec<u8>, ClusterError> {
    Err(ClusterError::Unavailable(format!(
        "kubewarden/kubernetes/{operation} is a waPC host call, which only a wasm build makes"
    )))
}

#[cfg(target_arch = "wasm32")]
fn call(operation: &str, payload: &[u8]) -> Result<Vec<u8>, ClusterError> {
    taintguard_wapc::host_call("kubewarden", "kubernetes", operation, payload).map_err(|e| {
        ClusterError::Failed(format!(
            "the host refused kubewarden/kubernetes/{operation}: {e} (does the policy's \
             configuration grant it? see docs/context.md)"
        ))
    })
}

/// The answer to `operation` with `payload`, as text; `what` names it in the error, written
/// only then (a Namespace's name formatted for every Pod cost 3k guest instructions).
fn ask_text<W: std::fmt::Display>(
    operation: &str,
    payload: &[u8],
    what: impl FnOnce() -> W,
) -> Result<String, ClusterError> {
    let answer = call(operation, payload)?;
    crate::utf8_string(answer)
        .ok_or_else(|| ClusterError::Failed(format!("the host's {} is not UTF-8 text", what())))
}

impl<P: Policy> Cluster for HostCluster<P> {
    fn list_nodes(&self, label_selector: Option<&str>) -> Result<String, ClusterError> {
        if !P::ASKS.nodes {
            return Err(not_asked("nodes"));
        }
        let request = ListAll {
            api_version: "v1",
            kind: "Node",
            label_selector,
            field_selector: None,
            field_masks: ["metadata.name", "metadata.labels", "spec.taints"],
        };
        let payload = serde_json::to_vec(&request).expect("strings only");
        ask_text("list_resources_all", &payload, || "list of nodes")
    }

    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        if !P::ASKS.access {
            return Err(not_asked("RBAC answers"));
        }
        let request = CanI {
            subject_access_review: Review {
                user: question.user,
                groups: question.groups.iter().map(|g| g.as_str()).collect(),
                resource_attributes: Attributes {
                    verb: question.verb,
                    group: question.group,
                    resource: question.resource,
                    name: question.name,
                    namespace: None,
                    subresource: None,
                    version: None,
                },
            },
            disable_cache: true,
        };
        let payload = serde_json::to_vec(&request).expect("strings only");
        let answer = call("can_i", &payload)?;
        serde_json::from_slice::<Status>(&answer)
            .map(|status| status.allowed)
            .map_err(|e| {
                ClusterError::Failed(format!(
                    "the host's SubjectAccessReview answer cannot be read: {e}"
                ))
            })
    }

    fn get_namespace(&self, name: &str, freshness: Freshness) -> Result<String, ClusterError> {
        if !P::ASKS.namespaces {
            return Err(not_asked("namespaces"));
        }
        let payload = namespace_request(name, freshness);
        ask_text("get_resource", &payload, || format!("Namespace {name:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the Kubewarden SDK's `GetResourceRequest` is serialised as (its fields in this
    /// order, `None` as `null`), the names escaped as serde_json escapes a string
    /// (`json::write_str`, tested against serde_json itself).
    #[test]
    fn the_namespace_request_is_what_serde_writes() {
        for (name, freshness, written, disable_cache) in [
            ("team-a", Freshness::Cached, r#""team-a""#, false),
            ("team-a", Freshness::Fresh, r#""team-a""#, true),
            ("", Freshness::Cached, r#""""#, false),
            (
                "a\"b\\c\u{1}\u{e9}",
                Freshness::Fresh,
                "\"a\\\"b\\\\c\\u0001\u{e9}\"",
                true,
            ),
        ] {
            let want = format!(
                r#"{{"api_version":"v1","kind":"Namespace","name":{written},"namespace":null,"disable_cache":{disable_cache}}}"#
            );
            let got = String::from_utf8(namespace_request(name, freshness)).unwrap();
            assert_eq!(got, want);
        }
    }
}
