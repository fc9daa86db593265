//! What a policy may ask the cluster while it judges a request, through its engine
//! (docs/context.md). The core knows no engine: each adapter implements [`Cluster`] with what its
//! host offers (Kubewarden's host capabilities, the inventory a Gatekeeper-style engine passes as
//! data, a test suite's objects, or nothing), and says why when it cannot answer.
//!
//! The contract is open: [`Cluster::get`] and [`Cluster::list`] read objects of any kind, as
//! Kubewarden's host reads them, and [`Cluster::can_i`] asks RBAC. What a policy reads is declared
//! once, in its [`Asks`](crate::policy::Asks), which also writes what its metadata declares.

mod asks;
mod list;
mod nodes;
#[cfg(any(test, feature = "testing"))]
pub mod recorded;

pub use asks::{Asks, Declared, Read, ReadBy, DECLARATION_HEADER, DECLARATION_SECTION};
pub use list::list_items;
pub use nodes::{nodes_of_list, ClusterNode, NODE_FIELDS};

use crate::json::JsonStr;
use crate::settings::string_enum;

/// A kind of object, as the API names it: the group version (`v1` for the core group,
/// `apps/v1`) and the kind (`ConfigMap`). Shown as `v1/ConfigMap`, the form metadata's
/// `contextAwareResources` and messages use.
///
/// # Examples
///
/// ```
/// use taintguard::cluster::ResourceKind;
///
/// const CONFIG_MAP: ResourceKind = ResourceKind::new("v1", "ConfigMap");
/// assert_eq!(CONFIG_MAP.to_string(), "v1/ConfigMap");
/// assert_eq!(ResourceKind::NODE.to_string(), "v1/Node");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKind<'a> {
    /// The group version: `v1` for the core group, `<group>/<version>` for others.
    pub api_version: &'a str,
    /// The kind, in the API's PascalCase (`Namespace`).
    pub kind: &'a str,
}

impl<'a> ResourceKind<'a> {
    /// The kind `kind` of group version `api_version`.
    pub const fn new(api_version: &'a str, kind: &'a str) -> Self {
        ResourceKind { api_version, kind }
    }
}

impl ResourceKind<'static> {
    /// Core `v1` Nodes.
    pub const NODE: ResourceKind<'static> = ResourceKind::new("v1", "Node");
    /// Core `v1` Namespaces.
    pub const NAMESPACE: ResourceKind<'static> = ResourceKind::new("v1", "Namespace");
}

impl std::fmt::Display for ResourceKind<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)
    }
}

/// One object asked for by name: [`Cluster::get`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Get<'a> {
    /// Its kind.
    pub kind: ResourceKind<'a>,
    /// Its namespace; `None` for a cluster-scoped kind.
    pub namespace: Option<&'a str>,
    /// Its name.
    pub name: &'a str,
    /// How old the answer may be.
    pub freshness: Freshness,
}

/// Objects asked for by kind: [`Cluster::list`]. Lists are answered from the host's watch of the
/// kind (policy-server keeps one per listed kind), as current as that watch: no freshness to
/// choose, as Kubewarden's host offers none for lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List<'a> {
    /// Their kind.
    pub kind: ResourceKind<'a>,
    /// Only those of this namespace (a namespaced kind); `None`: all of the cluster.
    pub namespace: Option<&'a str>,
    /// Only those this label selector selects (the API's selector string); `None`: all.
    pub label_selector: Option<&'a str>,
    /// Only these fields of each object (`metadata.name`, `spec.taints`), which keeps a list of
    /// thousands small; empty: whole objects. A host that cannot cut may send more.
    pub fields: &'a [&'a str],
}

impl<'a> List<'a> {
    /// Every object of `kind` in the cluster, whole.
    pub const fn all(kind: ResourceKind<'a>) -> Self {
        List {
            kind,
            namespace: None,
            label_selector: None,
            fields: &[],
        }
    }
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
    /// JavaScript package without a cluster given, a policy-server that did not grant access,
    /// a kind the policy's [`Asks`] does not name).
    Unavailable(String),
    /// The engine asked and the question failed (API server unreachable, RBAC refused the
    /// policy-server's service account, an object that does not exist, an answer that could not
    /// be read).
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

/// The questions a policy may ask. Each engine's answerer implements the three required
/// methods; the others are asked through them. Answers are never cached across requests (a fresh
/// module instance serves every request). A policy may ask only what its
/// [`Asks`](crate::policy::Asks) declares: the engines' answerers refuse the rest.
///
/// # Errors
///
/// Every method answers [`ClusterError::Unavailable`] where the engine cannot ask and
/// [`ClusterError::Failed`] where asking failed. An object that does not exist is `Failed`: a
/// policy must not read "no annotations" into an object it could not read.
///
/// # Examples
///
/// A cluster of one ConfigMap, as a policy's test may give it:
///
/// ```
/// use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Freshness, Get, List};
/// use taintguard::cluster::ResourceKind;
///
/// const CONFIG_MAP: ResourceKind = ResourceKind::new("v1", "ConfigMap");
///
/// struct OneConfigMap;
///
/// impl Cluster for OneConfigMap {
///     fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
///         match (q.kind, q.namespace, q.name) {
///             (CONFIG_MAP, Some("team-a"), "limits") => Ok(r#"{"data": {"max": "3"}}"#.into()),
///             _ => Err(ClusterError::Failed(format!("{} {:?} not found", q.kind, q.name))),
///         }
///     }
///     fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
///         Err(ClusterError::Unavailable(format!("no lists of {} here", q.kind)))
///     }
///     fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
///         Ok(false)
///     }
/// }
///
/// let cluster: &dyn Cluster = &OneConfigMap;
/// let get = |name| Get { kind: CONFIG_MAP, namespace: Some("team-a"), name, freshness: Freshness::Cached };
/// assert!(cluster.get(&get("limits")).unwrap().contains("max"));
/// let error = cluster.get(&get("quotas")).unwrap_err();
/// assert_eq!(error.to_string(), "asking the cluster failed: v1/ConfigMap \"quotas\" not found");
/// // Today's questions are asked through the generic ones.
/// let error = cluster.list_nodes(None).unwrap_err();
/// assert_eq!(error, ClusterError::Unavailable("no lists of v1/Node here".into()));
/// ```
pub trait Cluster {
    /// The object `query` names, as the text of the object, no older than its freshness allows.
    fn get(&self, query: &Get<'_>) -> Result<String, ClusterError>;

    /// The objects `query` selects, as the text of a Kubernetes `List`
    /// (`{"items": [object, ...]}`).
    fn list(&self, query: &List<'_>) -> Result<String, ClusterError>;

    /// The answer of a SubjectAccessReview.
    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError>;

    /// Every node, or those matching `label_selector` (Kubernetes selector syntax), with the
    /// fields the policies read of them ([`NODE_FIELDS`]), as a `List`'s text, read with
    /// [`nodes_of_list`].
    fn list_nodes(&self, label_selector: Option<&str>) -> Result<String, ClusterError> {
        self.list(&List {
            label_selector,
            fields: NODE_FIELDS,
            ..List::all(ResourceKind::NODE)
        })
    }

    /// The Namespace `name`, as the text of the object, no older than `freshness` allows.
    fn get_namespace(&self, name: &str, freshness: Freshness) -> Result<String, ClusterError> {
        self.get(&Get {
            kind: ResourceKind::NAMESPACE,
            namespace: None,
            name,
            freshness,
        })
    }
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
    fn get(&self, _: &Get<'_>) -> Result<String, ClusterError> {
        Err(ClusterError::Unavailable(self.0.to_owned()))
    }

    fn list(&self, _: &List<'_>) -> Result<String, ClusterError> {
        Err(ClusterError::Unavailable(self.0.to_owned()))
    }

    fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        Err(ClusterError::Unavailable(self.0.to_owned()))
    }
}
