//! What a policy reads of the cluster, declared once: the engines' answerers refuse what it does
//! not name, and the build writes it into the module, where the metadata's declarations are
//! checked against it (docs/context.md, "Declaring what a policy reads").

use super::ResourceKind;

/// The custom section of a module that holds its policy's [`Asks::declaration`], which the build
/// checks the metadata's `contextAwareResources` and `hostCapabilities` against.
pub const DECLARATION_SECTION: &str = "taintguard.asks";

/// The first line of a declaration: its format and version.
pub const DECLARATION_HEADER: &str = "taintguard-asks v1\n";

/// Places `$policy`'s [`Asks::declaration`] in its wasm module's [`DECLARATION_SECTION`]: the
/// engine adapters' `policy!` macros write it, so every policy module says what it reads.
#[macro_export]
macro_rules! declare_asks {
    ($policy:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            const LEN: usize = <$policy as $crate::Policy>::ASKS.declaration_len();
            #[used]
            #[link_section = "taintguard.asks"]
            static DECLARATION: [u8; LEN] =
                <$policy as $crate::Policy>::ASKS.declaration_array::<LEN>();
        };
    };
}

/// How a policy reads objects of a kind: each is a host call of its own, which a module makes
/// only when some policy's [`Asks`] names it (Kubewarden's hosts find a module's host calls by the
/// names in it, and warn about any its metadata does not declare).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBy {
    /// One object by name ([`Cluster::get`](super::Cluster::get)).
    Get,
    /// A list across the cluster ([`Cluster::list`](super::Cluster::list) without a namespace).
    ListAll,
    /// A list in one namespace ([`Cluster::list`](super::Cluster::list) with one).
    ListInNamespace,
}

impl ReadBy {
    /// The word the module's declaration uses for it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReadBy::Get => "get",
            ReadBy::ListAll => "list-all",
            ReadBy::ListInNamespace => "list-in-namespace",
        }
    }

    /// Whether `self` and `other` are the same (`==` is not `const`).
    const fn same(self, other: ReadBy) -> bool {
        self as u8 == other as u8
    }
}

/// One kind a policy reads, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// The kind read.
    pub kind: ResourceKind<'static>,
    /// How it is read.
    pub by: &'static [ReadBy],
}

/// What a policy may ask the cluster: the kinds it reads and how, and whether it asks RBAC.
/// Answerers refuse any other question ([`ClusterError::Unavailable`](super::ClusterError)), so
/// a module carries, and its metadata declares, exactly the host calls and resources it uses.
///
/// # Examples
///
/// ```
/// use taintguard::cluster::{Asks, Read, ReadBy, ResourceKind};
///
/// const CONFIG_MAP: ResourceKind = ResourceKind::new("v1", "ConfigMap");
/// const ASKS: Asks = Asks {
///     reads: &[Read { kind: CONFIG_MAP, by: &[ReadBy::Get] }],
///     access: false,
/// };
/// assert!(ASKS.allows(CONFIG_MAP, ReadBy::Get));
/// assert!(!ASKS.allows(CONFIG_MAP, ReadBy::ListAll));
/// assert!(!ASKS.allows(ResourceKind::NODE, ReadBy::Get));
/// assert_eq!(ASKS.declaration(), "taintguard-asks v1\nget v1/ConfigMap\n");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asks {
    /// The kinds read, each once.
    pub reads: &'static [Read],
    /// Whether it asks SubjectAccessReviews ([`Cluster::can_i`](super::Cluster::can_i)).
    pub access: bool,
}

impl Asks {
    /// Nothing: what [`Policy::ASKS`](crate::Policy::ASKS) is unless a policy says otherwise.
    pub const NOTHING: Asks = Asks {
        reads: &[],
        access: false,
    };

    /// Whether any kind is read `by`: a `const` answer, so that an adapter's code for a host call
    /// no policy makes is not compiled into the module.
    pub const fn makes(&self, by: ReadBy) -> bool {
        let mut i = 0;
        while i < self.reads.len() {
            let mut j = 0;
            while j < self.reads[i].by.len() {
                if self.reads[i].by[j].same(by) {
                    return true;
                }
                j += 1;
            }
            i += 1;
        }
        false
    }

    /// Whether `kind` is read `by`.
    pub fn allows(&self, kind: ResourceKind<'_>, by: ReadBy) -> bool {
        (self.reads.iter()).any(|read| read.kind == kind && read.by.contains(&by))
    }

    /// The declaration the build reads out of a module (its [`DECLARATION_SECTION`]): the line
    /// [`DECLARATION_HEADER`], one line per way a kind is read (`get v1/Namespace`), then
    /// `can-i` if it asks RBAC.
    pub fn declaration(&self) -> String {
        (0..).map_while(|k| self.piece(k)).collect()
    }

    /// The length of [`declaration`](Self::declaration), for a `const` array of it.
    pub const fn declaration_len(&self) -> usize {
        let (mut k, mut len) = (0, 0);
        while let Some(piece) = self.piece(k) {
            len += piece.len();
            k += 1;
        }
        len
    }

    /// [`declaration`](Self::declaration) as a `const` array of its length `N`
    /// ([`declaration_len`](Self::declaration_len)), for a module's custom section.
    ///
    /// # Panics
    ///
    /// At compile time, when `N` is not the declaration's length.
    pub const fn declaration_array<const N: usize>(&self) -> [u8; N] {
        assert!(N == self.declaration_len(), "N must be declaration_len()");
        let mut out = [0u8; N];
        let (mut k, mut at) = (0, 0);
        while let Some(piece) = self.piece(k) {
            let bytes = piece.as_bytes();
            let mut b = 0;
            while b < bytes.len() {
                out[at] = bytes[b];
                at += 1;
                b += 1;
            }
            k += 1;
        }
        out
    }

    /// The `k`th piece of the declaration, the one order all three forms above write: the
    /// header, six per way a kind is read, then `can-i`.
    const fn piece(&self, k: usize) -> Option<&'static str> {
        if k == 0 {
            return Some(DECLARATION_HEADER);
        }
        let mut k = k - 1;
        let mut i = 0;
        while i < self.reads.len() {
            let read = &self.reads[i];
            if k < 6 * read.by.len() {
                return Some(match k % 6 {
                    0 => read.by[k / 6].as_str(),
                    1 => " ",
                    2 => read.kind.api_version,
                    3 => "/",
                    4 => read.kind.kind,
                    _ => "\n",
                });
            }
            k -= 6 * read.by.len();
            i += 1;
        }
        match (self.access, k) {
            (true, 0) => Some("can-i\n"),
            _ => None,
        }
    }
}

/// A cluster that answers only what `P`'s [`Asks`] declares, from `inner`: [`run`](crate::run)
/// hands every policy its engine's cluster through one, so that a question its [`Asks`] does not
/// name is refused alike in every engine, with the same words. `P`'s [`Asks`] is a constant here,
/// so a module keeps no code of its engine's answerer for a question its policy never asks.
pub struct Declared<'c, P, C: ?Sized = dyn super::Cluster> {
    /// The engine's cluster: its own type where the adapter names it (the waPC adapter's host),
    /// so that the questions reach it without a second dispatch.
    pub inner: &'c C,
    /// The policy whose [`Asks`] decide.
    pub policy: std::marker::PhantomData<P>,
}

impl<P: crate::Policy, C: super::Cluster + ?Sized> Declared<'_, P, C> {
    /// `Ok` if `kind` may be read `by`, else why not.
    fn check(kind: ResourceKind<'_>, by: ReadBy) -> Result<(), super::ClusterError> {
        if P::ASKS.allows(kind, by) {
            return Ok(());
        }
        Err(super::ClusterError::Unavailable(format!(
            "the policy does not declare `{} {kind}` in its Asks, so no engine asks the cluster \
             for it (docs/context.md, \"Declaring what a policy reads\")",
            by.as_str()
        )))
    }
}

impl<P: crate::Policy, C: super::Cluster + ?Sized> super::Cluster for Declared<'_, P, C> {
    fn get(&self, q: &super::Get<'_>) -> Result<String, super::ClusterError> {
        Self::check(q.kind, ReadBy::Get)?;
        self.inner.get(q)
    }

    fn list(&self, q: &super::List<'_>) -> Result<String, super::ClusterError> {
        let by = match q.namespace {
            None => ReadBy::ListAll,
            Some(_) => ReadBy::ListInNamespace,
        };
        Self::check(q.kind, by)?;
        self.inner.list(q)
    }

    fn can_i(&self, q: &super::AccessQuestion<'_>) -> Result<bool, super::ClusterError> {
        if !P::ASKS.access {
            return Err(super::ClusterError::Unavailable(
                "the policy does not declare `can-i` in its Asks, so no engine asks RBAC for it \
                 (docs/context.md, \"Declaring what a policy reads\")"
                    .to_owned(),
            ));
        }
        self.inner.can_i(q)
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;
    use crate::admission::AdmissionRequest;
    use crate::cluster::recorded::Recorded;
    use crate::cluster::{AccessQuestion, Cluster, ClusterError, Freshness, Get, List};
    use crate::policy::{Half, Policy};
    use crate::settings::{PolicySettings, SettingsFields};
    use crate::verdict::Verdict;

    #[derive(Default, SettingsFields, Serialize)]
    #[serde(deny_unknown_fields, default)]
    struct NoSettings {}

    impl PolicySettings for NoSettings {}

    /// A policy that declares one read: Namespaces, got by name.
    struct ReadsNamespaces;

    impl Policy for ReadsNamespaces {
        const NAME: &'static str = "reads-namespaces";
        type Settings = NoSettings;
        const ASKS: Asks = Asks {
            reads: &[Read {
                kind: ResourceKind::NAMESPACE,
                by: &[ReadBy::Get],
            }],
            access: false,
        };

        fn evaluate(_: &AdmissionRequest<'_>, _: &NoSettings, _: Half, _: &dyn Cluster) -> Verdict {
            Verdict::accept()
        }
    }

    /// A cluster that would answer everything hands on only the declared read: every other
    /// question is refused by the wrapper, naming the read, and never reaches the cluster.
    #[test]
    fn only_the_declared_reads_reach_the_cluster() {
        let inner = Recorded {
            namespaces: vec![("team-a", r#"{"metadata": {"name": "team-a"}}"#.to_owned())],
            nodes: Some(Ok(r#"{"items": []}"#.to_owned())),
            grants: vec![("alice", "get")],
            ..Recorded::default()
        };
        let declared = Declared::<ReadsNamespaces, Recorded> {
            inner: &inner,
            policy: std::marker::PhantomData,
        };
        let config_map = ResourceKind::new("v1", "ConfigMap");
        let get = |kind, namespace| {
            declared.get(&Get {
                kind,
                namespace,
                name: "team-a",
                freshness: Freshness::Cached,
            })
        };
        let refused = |result: Result<String, ClusterError>, read: &str| match result {
            Err(ClusterError::Unavailable(m)) => {
                assert!(m.contains(&format!("does not declare `{read}`")), "{m}")
            }
            other => panic!("{read}: {other:?}"),
        };
        assert!(get(ResourceKind::NAMESPACE, None)
            .unwrap()
            .contains("team-a"));
        refused(get(config_map, Some("team-a")), "get v1/ConfigMap");
        refused(
            declared.list(&List::all(ResourceKind::NAMESPACE)),
            "list-all v1/Namespace",
        );
        refused(declared.list_nodes(None), "list-all v1/Node");
        let in_namespace = List {
            namespace: Some("team-a"),
            ..List::all(config_map)
        };
        refused(
            declared.list(&in_namespace),
            "list-in-namespace v1/ConfigMap",
        );
        let question = AccessQuestion {
            user: "alice",
            groups: &[],
            verb: "get",
            group: "",
            resource: "namespaces",
            name: None,
        };
        let can_i = declared.can_i(&question);
        assert!(
            matches!(&can_i, Err(ClusterError::Unavailable(m)) if m.contains("`can-i`")),
            "{can_i:?}"
        );
        assert_eq!(*inner.asked.borrow(), ["get v1/Namespace team-a cached"]);
    }
}
