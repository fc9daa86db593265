//! Who made a request, and lists of principals that settings permit.

use std::borrow::Cow;

use serde::Serialize;

use crate::glob::Glob;
use crate::json::JsonStr;
use crate::settings::{checked, SettingsFields};
use crate::verdict::quoted;

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const NODE_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";

/// The requester of an admission request, as `userInfo` names it.
///
/// # Examples
///
/// ```
/// use taintguard::json::JsonStr;
/// use taintguard::principal::{Identity, Principal};
///
/// let groups = [JsonStr::borrowed("system:nodes")];
/// let kubelet = Principal::new("system:node:worker-1", &groups);
/// assert_eq!(kubelet.identity(), Identity::Node);
/// assert!(kubelet.in_group("system:nodes"));
/// let controller = Principal::new("system:serviceaccount:kube-system:node-controller", &[]);
/// let account = Identity::ServiceAccount { namespace: "kube-system", name: "node-controller" };
/// assert_eq!(controller.identity(), account);
/// assert_eq!(Principal::new("", &[]).describe(), "an anonymous requester");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Principal<'r> {
    /// The username; empty for an anonymous requester.
    pub username: &'r str,
    /// The groups the requester is in.
    pub groups: &'r [JsonStr<'r>],
    /// Told once: each principal list a request is checked against asks for it (five times on
    /// a restore), and each time cost a search of the username (benchmarks/cost.md, "Short
    /// copies").
    identity: Identity<'r>,
}

/// What kind of identity a username is. Kubernetes reserves the `system:` prefix, so a person's
/// username can never start with it; everything else authenticated is taken to be a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity<'r> {
    /// A username neither empty nor `system:`: taken to be a person.
    Person,
    /// `system:serviceaccount:<namespace>:<name>`, kept as `<namespace>/<name>`.
    ServiceAccount {
        /// The service account's namespace.
        namespace: &'r str,
        /// Its name.
        name: &'r str,
    },
    /// A kubelet: `system:node:<name>`, or any member of `system:nodes`.
    Node,
    /// Any other `system:` identity, and the empty username.
    System,
}

impl<'r> Principal<'r> {
    /// The requester `username` in `groups`, its [`Identity`] told once.
    pub fn new(username: &'r str, groups: &'r [JsonStr<'r>]) -> Principal<'r> {
        Principal {
            username,
            groups,
            identity: identity_of(username, groups),
        }
    }

    /// What kind of identity the requester is.
    pub fn identity(&self) -> Identity<'r> {
        self.identity
    }

    /// Whether the requester is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        in_group(self.groups, group)
    }

    /// How the requester is named in messages.
    pub fn describe(&self) -> String {
        if self.username.is_empty() {
            "an anonymous requester".to_owned()
        } else {
            quoted("", self.username)
        }
    }
}

/// Principals that settings permit: people as a class, plus named users, groups and service
/// accounts (`namespace/name`), each a glob. A field left out keeps its default: none, or with
/// `ADMINS` (the global list of taint-preservation) people and `system:masters`.
///
/// # Examples
///
/// ```
/// use taintguard::json::JsonStr;
/// use taintguard::principal::{Principal, PrincipalList};
/// use taintguard::settings::read;
///
/// let text = r#"{"groups": ["ops-*"], "serviceAccounts": ["karpenter/*"]}"#;
/// let list: PrincipalList = read(text).unwrap();
/// assert!(list.allows(&Principal::new("system:serviceaccount:karpenter:karpenter", &[])));
/// assert!(!list.allows(&Principal::new("alice", &[])));
/// let ops = [JsonStr::borrowed("ops-oncall")];
/// assert!(list.allows(&Principal::new("alice", &ops)));
/// // Lists that start from admins permit people and `system:masters` unless told otherwise.
/// let admins: PrincipalList<true> = read("{}").unwrap();
/// assert!(admins.allows(&Principal::new("alice", &[])));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    default = "PrincipalList::defaults"
)]
pub struct PrincipalList<const ADMINS: bool = false> {
    /// Every person ([`Identity::Person`]).
    pub people: bool,
    /// The globs, built in or read from the settings. Built in (defaults are made for every
    /// request), they borrow constants: nothing is copied, compiled or freed.
    pub users: Cow<'static, [NameGlob]>,
    /// Globs over the groups whose members are permitted.
    pub groups: Cow<'static, [NameGlob]>,
    /// Globs over service accounts, as `namespace/name`.
    pub service_accounts: Cow<'static, [ServiceAccountGlob]>,
}

/// The group whose members bypass RBAC, a default of the lists that start from admins.
pub const SYSTEM_MASTERS: &[NameGlob] = &[NameGlob::constant("system:masters")];

impl<const ADMINS: bool> Default for PrincipalList<ADMINS> {
    fn default() -> Self {
        PrincipalList::defaults()
    }
}

checked! {
    /// A glob over user or group names.
    pub struct NameGlob(Glob) = |text| {
        if text.trim().is_empty() {
            return Err("empty principal name".to_owned());
        }
        Glob::new(&text).map_err(|e| e.to_string())
    };
}

checked! {
    /// A glob over service accounts as `namespace/name`.
    pub struct ServiceAccountGlob(Glob) = |text| match text.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Glob::new(&text).map_err(|e| e.to_string())
        }
        _ => Err(format!("{text:?} is not `namespace/name`")),
    };
}

impl NameGlob {
    /// A built-in name glob, `const` and unchecked as [`TaintKeyGlob::constant`] is; the
    /// defaults read back through the checks in the settings tests.
    ///
    /// [`TaintKeyGlob::constant`]: crate::taint::TaintKeyGlob::constant
    pub const fn constant(text: &'static str) -> NameGlob {
        NameGlob(Glob::builtin(text))
    }
}

impl ServiceAccountGlob {
    /// A built-in `namespace/name` glob, as [`NameGlob::constant`].
    pub const fn constant(text: &'static str) -> ServiceAccountGlob {
        ServiceAccountGlob(Glob::builtin(text))
    }
}

impl<const ADMINS: bool> PrincipalList<ADMINS> {
    /// None, or with `ADMINS` people and `system:masters`.
    pub const fn defaults() -> Self {
        PrincipalList {
            people: ADMINS,
            users: Cow::Borrowed(&[]),
            groups: Cow::Borrowed(if ADMINS { SYSTEM_MASTERS } else { &[] }),
            service_accounts: Cow::Borrowed(&[]),
        }
    }

    /// Whether the list permits no one.
    pub fn is_empty(&self) -> bool {
        !self.people
            && self.users.is_empty()
            && self.groups.is_empty()
            && self.service_accounts.is_empty()
    }

    /// Whether the list permits `who`: a person when `people` is set, or a requester whose
    /// username, one of whose groups, or whose service account one of the globs matches.
    pub fn allows(&self, who: &Principal<'_>) -> bool {
        let identity = who.identity();
        if self.people && identity == Identity::Person {
            return true;
        }
        if self.users.iter().any(|g| g.matches(who.username)) {
            return true;
        }
        if self
            .groups
            .iter()
            .any(|g| who.groups.iter().any(|group| g.matches(group.as_str())))
        {
            return true;
        }
        if let Identity::ServiceAccount { namespace, name } = identity {
            if !self.service_accounts.is_empty() {
                let mut qualified = String::with_capacity(namespace.len() + 1 + name.len());
                qualified.push_str(namespace);
                qualified.push('/');
                qualified.push_str(name);
                return self.service_accounts.iter().any(|g| g.matches(&qualified));
            }
        }
        false
    }
}

/// What kind of identity `username`, in `groups`, is (see [`Identity`]).
fn identity_of<'r>(username: &'r str, groups: &[JsonStr<'_>]) -> Identity<'r> {
    if let Some(rest) = username.strip_prefix(SERVICE_ACCOUNT_PREFIX) {
        return match rest.split_once(':') {
            Some((namespace, name)) => Identity::ServiceAccount { namespace, name },
            None => Identity::System,
        };
    }
    if username.starts_with(NODE_PREFIX) || in_group(groups, NODES_GROUP) {
        Identity::Node
    } else if username.is_empty() || username.starts_with("system:") {
        Identity::System
    } else {
        Identity::Person
    }
}

fn in_group(groups: &[JsonStr<'_>], group: &str) -> bool {
    groups.iter().any(|g| g.as_str() == group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn groups(names: &[&'static str]) -> Vec<JsonStr<'static>> {
        names.iter().map(|n| JsonStr(Cow::Borrowed(*n))).collect()
    }

    #[test]
    fn identities() {
        let none = groups(&[]);
        let nodes = groups(&["system:nodes"]);
        let cases: &[(&str, &[JsonStr], Identity)] = &[
            ("alice@example.com", &none, Identity::Person),
            ("kubernetes-admin", &none, Identity::Person),
            (
                "system:serviceaccount:kube-system:node-controller",
                &none,
                Identity::ServiceAccount {
                    namespace: "kube-system",
                    name: "node-controller",
                },
            ),
            ("system:serviceaccount:broken", &none, Identity::System),
            ("system:node:worker-1", &none, Identity::Node),
            ("weird-kubelet", &nodes, Identity::Node),
            ("system:kube-controller-manager", &none, Identity::System),
            ("system:masters", &none, Identity::System),
            ("", &none, Identity::System),
        ];
        for (username, groups, want) in cases {
            let p = Principal::new(username, groups);
            assert_eq!(p.identity(), *want, "{username}");
        }
    }

    #[test]
    fn lists_allow() {
        let list: PrincipalList = PrincipalList {
            people: true,
            users: vec![NameGlob::try_from("system:kube-scheduler".to_owned()).unwrap()].into(),
            groups: vec![NameGlob::try_from("system:masters".to_owned()).unwrap()].into(),
            service_accounts: vec![ServiceAccountGlob::try_from("karpenter/*".to_owned()).unwrap()]
                .into(),
        };
        let masters = groups(&["system:masters", "system:authenticated"]);
        let none = groups(&[]);
        let cases: &[(&str, &[JsonStr], bool)] = &[
            ("alice", &none, true),
            ("system:masters", &none, false),
            ("system:kube-scheduler", &none, true),
            ("system:serviceaccount:kube-system:ops", &masters, true),
            ("system:serviceaccount:karpenter:karpenter", &none, true),
            ("system:serviceaccount:kube-system:karpenter", &none, false),
            ("system:node:n1", &none, false),
        ];
        for (username, groups, want) in cases {
            assert_eq!(
                list.allows(&Principal::new(username, groups)),
                *want,
                "{username}"
            );
        }
    }
}
