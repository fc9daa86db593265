//! Settings of the taint-preservation policy. The policy README is the reference for users;
//! every field has a default, so `{}` is a complete configuration.

use crate::glob::Glob;
use crate::principal::PrincipalList;
use crate::settings::{Fields, Json, SettingsError};
use crate::taint::{selectors, TaintSelector};

/// Taint keys that controllers own: they add and remove them as node conditions change, so
/// protecting them would fight the controllers. Everything else is protected by default.
pub const DEFAULT_UNPROTECTED_TAINTS: &[&str] = &[
    "node.kubernetes.io/*",
    "node.cloudprovider.kubernetes.io/*",
    "node.cluster.x-k8s.io/*",
    "karpenter.sh/*",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
    "ebs.csi.aws.com/agent-not-ready",
    "efs.csi.aws.com/agent-not-ready",
    "node.cilium.io/agent-not-ready",
    "aws-node-termination-handler/*",
    "cloud.google.com/impending-node-termination",
];

/// Startup taints that, once removed, must not come back (docs/incidents.md, incident 3), with
/// whether only the kubelet's registration (a CREATE) sets them: the uninitialized taints and
/// Karpenter's `unregistered` are registration taints; the CSI drivers' `agent-not-ready` is also
/// applied by an UPDATE, as Karpenter does with a NodePool's `startupTaints`.
pub const DEFAULT_ONE_SHOT_TAINTS: &[(&str, bool)] = &[
    ("node.cloudprovider.kubernetes.io/uninitialized", true),
    ("node.cluster.x-k8s.io/uninitialized", true),
    ("karpenter.sh/unregistered", true),
    ("ebs.csi.aws.com/agent-not-ready", false),
    ("efs.csi.aws.com/agent-not-ready", false),
];

pub const DEFAULT_OWNER_ANNOTATION: &str = "taintguard.io/cordoned-by";
pub const DEFAULT_ONE_SHOT_RECORD_ANNOTATION: &str = "taintguard.io/removed-startup-taints";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Mutate the request so that the protected state stays, accept and warn.
    Restore,
    /// Reject the request.
    Deny,
}

/// A protected-taint rule: the taints it selects and who, besides the global list, may remove or
/// change them.
#[derive(Debug, Clone)]
pub struct ProtectedRule {
    pub selector: TaintSelector,
    pub permitted: PrincipalList,
}

/// A one-shot startup taint: applied once, removed once by its owner, never to come back.
#[derive(Debug, Clone)]
pub struct OneShotRule {
    pub selector: TaintSelector,
    /// Only the kubelet's registration sets it, so an UPDATE adding it is always a re-add. Other
    /// one-shot taints may be applied by an UPDATE until their removal has been recorded.
    pub only_at_registration: bool,
}

#[derive(Debug, Clone)]
pub struct Cordon {
    pub enabled: bool,
    pub owner_annotation: String,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub mode: Mode,
    pub protected: Vec<ProtectedRule>,
    pub unprotected: Vec<TaintSelector>,
    pub one_shot: Vec<OneShotRule>,
    /// The annotation that records which one-shot taints were removed from a node.
    pub one_shot_record: String,
    pub permitted: PrincipalList,
    pub cordon: Cordon,
}

/// The default permitted principals: people, and members of `system:masters`.
pub fn default_permitted() -> PrincipalList {
    PrincipalList {
        people: true,
        groups: vec![Glob::new("system:masters").expect("valid glob")],
        ..PrincipalList::default()
    }
}

fn defaults(keys: &[&str]) -> Vec<TaintSelector> {
    keys.iter().map(|k| TaintSelector::new(k, &[])).collect()
}

impl Settings {
    pub fn from_value(value: &Json<'_>) -> Result<Settings, SettingsError> {
        let mut fields = Fields::new(String::new(), value)?;
        let mode = match fields.string("mode")? {
            None | Some("restore") => Mode::Restore,
            Some("deny") => Mode::Deny,
            Some(other) => {
                return Err(SettingsError::new(
                    "mode",
                    format!("unknown mode {other:?}; expected \"restore\" or \"deny\""),
                ))
            }
        };
        let protected = match fields.array("protectedTaints")? {
            None => vec![ProtectedRule {
                selector: TaintSelector::new("*", &[]),
                permitted: PrincipalList::default(),
            }],
            Some(items) => items
                .into_iter()
                .map(|(path, value)| {
                    let (selector, permitted) = TaintSelector::from_settings(
                        path,
                        value,
                        |rule| match rule.object("permitted")? {
                            Some(p) => PrincipalList::from_settings(p, &PrincipalList::default()),
                            None => Ok(PrincipalList::default()),
                        },
                        PrincipalList::default(),
                    )?;
                    Ok(ProtectedRule {
                        selector,
                        permitted,
                    })
                })
                .collect::<Result<_, SettingsError>>()?,
        };
        let unprotected = selectors(&mut fields, "unprotectedTaints")?
            .unwrap_or_else(|| defaults(DEFAULT_UNPROTECTED_TAINTS));
        let one_shot = match fields.array("oneShotTaints")? {
            None => DEFAULT_ONE_SHOT_TAINTS
                .iter()
                .map(|&(key, only_at_registration)| OneShotRule {
                    selector: TaintSelector::new(key, &[]),
                    only_at_registration,
                })
                .collect(),
            Some(items) => items
                .into_iter()
                .map(|(path, value)| {
                    let (selector, only_at_registration) = TaintSelector::from_settings(
                        path,
                        value,
                        |rule| Ok(rule.bool("onlyAtRegistration")?.unwrap_or(false)),
                        false,
                    )?;
                    Ok(OneShotRule {
                        selector,
                        only_at_registration,
                    })
                })
                .collect::<Result<_, SettingsError>>()?,
        };
        let one_shot_record = annotation_key(
            &mut fields,
            "oneShotRecordAnnotation",
            DEFAULT_ONE_SHOT_RECORD_ANNOTATION,
        )?;
        let permitted = match fields.object("permitted")? {
            Some(p) => PrincipalList::from_settings(p, &default_permitted())?,
            None => default_permitted(),
        };
        let cordon = match fields.object("cordon")? {
            None => Cordon {
                enabled: true,
                owner_annotation: DEFAULT_OWNER_ANNOTATION.to_owned(),
            },
            Some(mut c) => {
                let enabled = c.bool("enabled")?.unwrap_or(true);
                let owner_annotation =
                    annotation_key(&mut c, "ownerAnnotation", DEFAULT_OWNER_ANNOTATION)?;
                c.finish()?;
                Cordon {
                    enabled,
                    owner_annotation,
                }
            }
        };
        if cordon.enabled && cordon.owner_annotation == one_shot_record {
            return Err(SettingsError::new(
                "oneShotRecordAnnotation",
                format!(
                    "{one_shot_record:?} is also `cordon.ownerAnnotation`; the two records need \
                     annotations of their own"
                ),
            ));
        }
        fields.finish()?;
        Ok(Settings {
            mode,
            protected,
            unprotected,
            one_shot,
            one_shot_record,
            permitted,
            cordon,
        })
    }
}

/// The annotation key at `key` of `fields`, or `default`.
fn annotation_key(
    fields: &mut Fields<'_>,
    key: &'static str,
    default: &str,
) -> Result<String, SettingsError> {
    let path = fields.path_of(key);
    let value = fields.string(key)?.unwrap_or(default);
    check_annotation_key(value).map_err(|m| SettingsError::new(path, m))?;
    Ok(value.to_owned())
}

/// Kubernetes annotation keys: an optional DNS-subdomain prefix and `/`, then a name of at most
/// 63 characters, alphanumeric at both ends, with `-`, `_` and `.` inside.
fn check_annotation_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    });
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(format!(
            "{key:?} is not a valid annotation key ([prefix/]name)"
        ))
    }
}
