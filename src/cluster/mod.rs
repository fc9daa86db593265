//! What a policy may ask the cluster while it judges a request, through its engine
//! (docs/context.md). The core knows no engine: each adapter implements [`Cluster`] with what its
//! host offers (Kubewarden's host capabilities, the inventory a Gatekeeper-style engine passes as
//! data, or nothing), and says why when it cannot answer.

use serde::Deserialize;

use crate::json::{JsonStr, Raw};
use crate::settings::string_enum;
use crate::taint::{parse_taints, Taint};

/// One node as the cluster lists it: what the policies read of it, borrowed from the list's
/// text. The host selects nodes by label, so labels are not read here. Its taints are read as a
/// request's are.
#[derive(Debug, Clone)]
pub struct ClusterNode<'a> {
    /// The node's name.
    pub name: JsonStr<'a>,
    /// Its `spec.taints`.
    pub taints: Vec<Taint<'a>>,
}

/// A SubjectAccessReview question: may `user` (in `groups`) `verb` the `resource` named `name`
/// in API group `group`?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessQuestion<'a> {
    /// The user asked about.
    pub user: &'a str,
    /// The user's groups.
    pub groups: &'a [JsonStr<'a>],
    /// What the user would do (`get`, `update`).
    pub verb: &'a str,
    /// The API group of the resource; empty for the core group.
    pub group: &'a str,
    /// The resource (`nodes`).
    pub resource: &'a str,
    /// The object's name; `None` for any object of the resource.
    pub name: Option<&'a str>,
}

string_enum! {
    /// How old an answer about an object may be: whether the engine's cache may answer.
    /// policy-server keeps each `get_resource` answer for five seconds (docs/context.md,
    /// "How old an answer may be").
    #[derive(Default)]
    pub enum Freshness {
        /// The engine's cache may answer: at most a few seconds old, and no API server round
        /// trip for most requests.
        #[default]
        Cached = "cached",
        /// Asked of the API server for this request, so that a change made a moment ago counts.
        Fresh = "fresh",
    }
    unknown = "freshness", expected = "\"cached\" or \"fresh\"";
}

/// Why the cluster gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterError {
    /// The engine offers no way to ask (a Gatekeeper-style engine asked for RBAC, the
    /// JavaScript package without a cluster given, a policy-server that did not grant access).
    Unavailable(String),
    /// The engine asked and the question failed (API server unreachable, RBAC refused the
    /// policy-server's service account, an answer that could not be read).
    Failed(String),
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Unavailable(why) => write!(f, "the cluster cannot be asked here: {why}"),
            ClusterError::Failed(why) => write!(f, "asking the cluster failed: {why}"),
        }
    }
}

/// The questions a policy may ask. Implementations answer from the engine's host; answers are
/// never cached across requests (a fresh module instance serves every request).
///
/// # Examples
///
/// A cluster of one namespace, as a policy's test may give it:
///
/// ```
/// use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Freshness};
///
/// struct OneNamespace;
///
/// impl Cluster for OneNamespace {
///     fn list_nodes(&self, _: Option<&str>) -> Result<String, ClusterError> {
///         Err(ClusterError::Unavailable("no nodes here".to_owned()))
///     }
///     fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
///         Ok(false)
///     }
///     fn get_namespace(&self, name: &str, _: Freshness) -> Result<String, ClusterError> {
///         match name {
///             "team-a" => Ok(r#"{"metadata": {"name": "team-a"}}"#.to_owned()),
///             _ => Err(ClusterError::Failed(format!("namespace {name:?} not found"))),
///         }
///     }
/// }
///
/// let cluster: &dyn Cluster = &OneNamespace;
/// assert!(cluster.get_namespace("team-a", Freshness::Cached).unwrap().contains("team-a"));
/// let error = cluster.get_namespace("team-b", Freshness::Fresh).unwrap_err();
/// assert_eq!(error.to_string(), "asking the cluster failed: namespace \"team-b\" not found");
/// ```
pub trait Cluster {
    /// Every node, or those matching `label_selector` (Kubernetes selector syntax), as the text
    /// of a Kubernetes `List` (`{"items": [Node, ...]}`), read with [`nodes_of_list`].
    fn list_nodes(&self, label_selector: Option<&str>) -> Result<String, ClusterError>;

    /// The answer of a SubjectAccessReview.
    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError>;

    /// The Namespace `name`, as the text of the object, no older than `freshness` allows. A
    /// namespace that does not exist is an error, as every other failure is: a policy must not
    /// read "no annotations" into a namespace it could not read.
    fn get_namespace(&self, name: &str, freshness: Freshness) -> Result<String, ClusterError>;
}

/// A host that can answer nothing, with the reason given in every error.
///
/// # Examples
///
/// ```
/// use taintguard::cluster::{ClusterError, Freshness};
/// use taintguard::{Cluster, NoCluster};
///
/// let cluster = NoCluster("this engine answers nothing");
/// let error = cluster.get_namespace("default", Freshness::Cached).unwrap_err();
/// assert_eq!(error, ClusterError::Unavailable("this engine answers nothing".to_owned()));
/// assert_eq!(error.to_string(), "the cluster cannot be asked here: this engine answers nothing");
/// ```
pub struct NoCluster(pub &'static str);

impl Cluster for NoCluster {
    fn list_nodes(&self, _: Option<&str>) -> Result<String, ClusterError> {
        Err(ClusterError::Unavailable(self.0.to_owned()))
    }

    fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        Err(ClusterError::Unavailable(self.0.to_owned()))
    }

    fn get_namespace(&self, _: &str, _: Freshness) -> Result<String, ClusterError> {
        Err(ClusterError::Unavailable(self.0.to_owned()))
    }
}

/// `items` is required (a `null` list is empty): without it, an answer that is not a list at all
/// (`{}`, `[]`) would read as "no nodes".
#[derive(Deserialize)]
struct ListText<'a> {
    #[serde(borrow, deserialize_with = "null_as_default")]
    items: Vec<NodeText<'a>>,
}

/// Reads `null` as the type's default, as Kubernetes writes an empty list.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

#[derive(Deserialize)]
struct NodeText<'a> {
    #[serde(borrow, default)]
    metadata: Option<MetadataText<'a>>,
    #[serde(borrow, default)]
    spec: Option<SpecText<'a>>,
}

#[derive(Deserialize)]
struct MetadataText<'a> {
    #[serde(borrow, default)]
    name: JsonStr<'a>,
}

#[derive(Deserialize)]
struct SpecText<'a> {
    #[serde(borrow, default)]
    taints: Raw<'a>,
}

/// The nodes of a Kubernetes `List` of Nodes; `null` items is an empty list. An answer that is
/// not such a list is an error: a policy must not read "no nodes" into an answer it cannot read.
pub fn nodes_of_list(text: &str) -> Result<Vec<ClusterNode<'_>>, ClusterError> {
    let unreadable = |e: serde_json::Error| {
        ClusterError::Failed(format!("the list of nodes cannot be read: {e}"))
    };
    let list: ListText = serde_json::from_str(text).map_err(unreadable)?;
    list.items
        .into_iter()
        .map(|node| {
            let taints = node.spec.as_ref().and_then(|s| s.taints.value());
            Ok(ClusterNode {
                name: node.metadata.map(|m| m.name).unwrap_or_default(),
                taints: parse_taints(taints).map_err(unreadable)?,
            })
        })
        .collect()
}

/// A cluster that answers from recorded answers, and remembers what it was asked: the core's
/// tests judge requests against it. The engines' own hosts are tested in `wasm-tests` and `e2e`.
#[cfg(any(test, feature = "testing"))]
pub mod recorded {
    use std::cell::RefCell;

    use super::*;

    /// Recorded answers, and the questions asked.
    #[derive(Default)]
    pub struct Recorded {
        /// The answer to every `list_nodes`.
        pub nodes: Option<Result<String, ClusterError>>,
        /// `(user, verb)` pairs RBAC allows; `can_i_error` instead answers every question.
        pub grants: Vec<(&'static str, &'static str)>,
        /// The error every `can_i` answers, when set.
        pub can_i_error: Option<ClusterError>,
        /// The Namespaces `get_namespace` finds, as `(name, object text)`.
        pub namespaces: Vec<(&'static str, String)>,
        /// One line per question: `list <selector>`, `can_i <user> <verb> <group> <resource>/<name>`
        /// or `get namespace <name> <freshness>`.
        pub asked: RefCell<Vec<String>>,
    }

    impl Cluster for Recorded {
        fn list_nodes(&self, label_selector: Option<&str>) -> Result<String, ClusterError> {
            self.asked
                .borrow_mut()
                .push(format!("list {}", label_selector.unwrap_or("")));
            self.nodes
                .clone()
                .unwrap_or_else(|| Err(ClusterError::Unavailable("no nodes recorded".into())))
        }

        fn can_i(&self, q: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
            self.asked.borrow_mut().push(format!(
                "can_i {} {} {} {}/{}",
                q.user,
                q.verb,
                q.group,
                q.resource,
                q.name.unwrap_or("")
            ));
            match &self.can_i_error {
                Some(e) => Err(e.clone()),
                None => Ok(self.grants.contains(&(q.user, q.verb))),
            }
        }

        fn get_namespace(&self, name: &str, freshness: Freshness) -> Result<String, ClusterError> {
            self.asked
                .borrow_mut()
                .push(format!("get namespace {name} {}", freshness.as_str()));
            self.namespaces
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, text)| text.clone())
                .ok_or_else(|| ClusterError::Failed(format!("namespace {name:?} not found")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_are_read_or_refused() {
        let cases = [
            (r#"{"items": null}"#, Ok(0)),
            (
                r#"{"apiVersion": "v1", "kind": "List", "items": []}"#,
                Ok(0),
            ),
            (
                r#"{"items": [{"metadata": {"name": "n1", "labels": {"pool": "gpu"}},
                               "spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                                                   {"key": "b", "value": "v", "effect": "NoExecute"}]}},
                              {"metadata": {"name": "n2"}}]}"#,
                Ok(2),
            ),
            ("[]", Err("cannot be read")),
            ("{}", Err("missing field `items`")),
            (
                r#"{"items": [{"spec": {"taints": [{"key": "a", "effect": 7}]}}]}"#,
                Err("cannot be read: invalid type: integer `7`, expected a string"),
            ),
            ("not json", Err("cannot be read")),
        ];
        for (text, want) in cases {
            match (nodes_of_list(text), want) {
                (Ok(nodes), Ok(n)) => assert_eq!(nodes.len(), n, "{text}"),
                (Err(ClusterError::Failed(e)), Err(fragment)) => {
                    assert!(e.contains(fragment), "{text}: {e}")
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
        let nodes = nodes_of_list(cases[2].0).unwrap();
        assert_eq!(nodes[0].name.as_str(), "n1");
        assert_eq!(nodes[0].taints[1].describe(), "b=v:NoExecute");
        assert!(nodes[1].taints.is_empty());
    }
}
