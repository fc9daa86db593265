//! The cluster as Kubewarden's host capabilities answer it (docs/context.md): waPC host calls on
//! binding `kubewarden`, namespace `kubernetes`. policy-server and `kwctl run
//! --allow-context-aware` serve them with their kubeconfig, for the resources a policy's
//! `contextAwareResources` names and the capabilities its `hostCapabilities` grants.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Freshness, Get, List, ReadBy};
use taintguard::Policy;

/// The host of the running module, for policy `P`: only the host calls `P::ASKS` makes are
/// compiled into its module (kwctl finds a module's host calls by the names in it, and warns
/// about any its metadata does not declare). Which kinds are asked is checked for every engine
/// alike, before this is asked ([`taintguard::cluster::Declared`]).
pub struct HostCluster<P>(pub PhantomData<P>);

fn not_asked(what: impl std::fmt::Display) -> ClusterError {
    ClusterError::Unavailable(format!(
        "this policy does not ask the cluster for {what} (its Asks, docs/context.md)"
    ))
}

/// The request of `list_resources_all` and, with a `namespace`, of
/// `list_resources_by_namespace` (which differ by that member alone). Field masks ask the host to
/// keep only what the policy reads, which keeps a list of thousands of nodes small (their image
/// lists and status are most of it); none (`null`) asks for whole objects.
#[derive(Serialize)]
struct ListRequest<'a> {
    api_version: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    label_selector: Option<&'a str>,
    field_selector: Option<&'a str>,
    field_masks: Option<&'a [&'a str]>,
}

/// `get_resource`'s request for the object `q` names. [`Freshness::Cached`] lets policy-server
/// answer from its five-second cache, which spares the API server a GET per Pod;
/// [`Freshness::Fresh`] sets `disable_cache`, so that a whitelist narrowed a moment ago counts
/// (docs/context.md, "How old an answer may be"). Kubewarden's `GetResourceRequest` (the test
/// holds its members equal), written by hand: serde's writer took 4k guest instructions of every
/// Pod the plugin judges (benchmarks/cost.md, "PodTolerationRestriction's reads").
fn get_request(q: &Get<'_>) -> Vec<u8> {
    let mut out = String::with_capacity(96 + q.name.len());
    out.push_str(r#"{"api_version":"#);
    taintguard::json::write_str(&mut out, q.kind.api_version);
    out.push_str(r#","kind":"#);
    taintguard::json::write_str(&mut out, q.kind.kind);
    out.push_str(r#","name":"#);
    taintguard::json::write_str(&mut out, q.name);
    out.push_str(r#","namespace":"#);
    match q.namespace {
        Some(namespace) => taintguard::json::write_str(&mut out, namespace),
        None => out.push_str("null"),
    }
    out.push_str(match q.freshness {
        Freshness::Cached => r#","disable_cache":false}"#,
        Freshness::Fresh => r#","disable_cache":true}"#,
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
    fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
        if !const { P::ASKS.makes(ReadBy::Get) } {
            return Err(not_asked(format_args!("gets of {}", q.kind)));
        }
        ask_text("get_resource", &get_request(q), || {
            format!("{} {:?}", q.kind, q.name)
        })
    }

    fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
        let operation = match q.namespace {
            None if const { P::ASKS.makes(ReadBy::ListAll) } => "list_resources_all",
            Some(_) if const { P::ASKS.makes(ReadBy::ListInNamespace) } => {
                "list_resources_by_namespace"
            }
            None => return Err(not_asked(format_args!("lists of {}", q.kind))),
            Some(_) => {
                return Err(not_asked(format_args!(
                    "lists of {} in a namespace",
                    q.kind
                )))
            }
        };
        let request = ListRequest {
            api_version: q.kind.api_version,
            kind: q.kind.kind,
            namespace: q.namespace,
            label_selector: q.label_selector,
            field_selector: None,
            field_masks: (!q.fields.is_empty()).then_some(q.fields),
        };
        let payload = serde_json::to_vec(&request).expect("strings only");
        ask_text(operation, &payload, || match q.namespace {
            None => format!("list of {}", q.kind),
            Some(namespace) => format!("list of {} in namespace {namespace:?}", q.kind),
        })
    }

    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        if !const { P::ASKS.access } {
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
}

#[cfg(test)]
mod tests {
    use taintguard::cluster::ResourceKind;

    use super::*;

    /// The members of the Kubewarden SDK's `GetResourceRequest` (`None` as `null`), the strings
    /// escaped as JSON (`json::write_str`, tested against serde_json itself).
    #[test]
    fn the_get_request_is_kubewardens() {
        let config_map = ResourceKind::new("v1", "ConfigMap");
        for (kind, namespace, name, freshness) in [
            (ResourceKind::NAMESPACE, None, "team-a", Freshness::Cached),
            (ResourceKind::NAMESPACE, None, "team-a", Freshness::Fresh),
            (ResourceKind::NAMESPACE, None, "", Freshness::Cached),
            (config_map, Some("team-a"), "limits", Freshness::Cached),
            (
                config_map,
                Some("a\"b"),
                "a\"b\\c\u{1}\u{e9}",
                Freshness::Fresh,
            ),
        ] {
            let q = Get {
                kind,
                namespace,
                name,
                freshness,
            };
            let want = serde_json::json!({
                "api_version": kind.api_version,
                "kind": kind.kind,
                "name": name,
                "namespace": namespace,
                "disable_cache": freshness == Freshness::Fresh,
            });
            let got: serde_json::Value = serde_json::from_slice(&get_request(&q)).unwrap();
            assert_eq!(got, want, "{q:?}");
        }
    }
}
