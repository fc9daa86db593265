//! Settings of the taint-preservation policy. The policy README is the reference for users;
//! every field has a default, so `{}` is a complete configuration.

use serde::Deserialize;

use crate::glob::Glob;
use crate::json::JsonStr;
use crate::principal::{PrincipalList, PrincipalListSettings};
use crate::settings::{each, read, taint_key_glob, At, Object, SettingsError};
use crate::taint::{
    selectors, PlainSelector, SelectorFields, SelectorSettings, Taint, TaintSelector,
};

/// Taints that controllers own: they add and remove them as node conditions change, so
/// protecting them would fight the controllers. Everything else is protected by default.
///
/// Besides known keys, the readiness conventions (docs/controllers.md): a taint that exists
/// to be removed by the agent it waits for, and that its component may put back when the agent
/// goes away, must never be protected. `*-not-ready` covers `<prefix>/agent-not-ready` (Cilium,
/// whose operator re-taints a node whose agent pod is not ready; the CSI drivers' taints of this form are
/// one-shot, below) and `<prefix>/<name>-not-ready` (CNI and service-mesh node agents, such as
/// Istio's `cni.istio.io/not-ready`); `not-ready` and `*/not-ready` a name that is exactly
/// `not-ready`; `readiness.k8s.io/*` the Node Readiness Controller, whose continuous mode
/// re-adds its taints while a condition is unmet.
pub const DEFAULT_UNPROTECTED_TAINTS: &[&str] = &[
    "node.kubernetes.io/*",
    "node.cloudprovider.kubernetes.io/*",
    "node.cluster.x-k8s.io/*",
    "karpenter.sh/*",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
    "aws-node-termination-handler/*",
    "cloud.google.com/impending-node-termination",
    "not-ready",
    "*/not-ready",
    "*-not-ready",
    "readiness.k8s.io/*",
];

/// A default one-shot startup taint: its key glob, the keys it leaves out, and whether only the
/// kubelet's registration (a CREATE) sets it.
pub struct DefaultOneShot {
    pub key: &'static str,
    pub except: &'static [&'static str],
    pub only_at_registration: bool,
}

/// Startup taints that, once removed, must not come back (docs/incidents.md, incident 3). The
/// uninitialized taints and Karpenter's `unregistered` are registration taints. The CSI node
/// plugins' `<driver>/agent-not-ready` (EBS, EFS, FSx for Lustre and OpenZFS, Mountpoint for S3,
/// ...) is applied at registration or by an UPDATE (Karpenter applies a NodePool's
/// `startupTaints` so) and removed once by the node plugin when it starts; nothing of the driver
/// ever applies it again. Cilium's `node.cilium.io/agent-not-ready` shares the form but its
/// operator re-taints a node whose agent pod is not ready, so it is left out (and unprotected above).
pub const DEFAULT_ONE_SHOT_TAINTS: &[DefaultOneShot] = &[
    DefaultOneShot {
        key: "node.cloudprovider.kubernetes.io/uninitialized",
        except: &[],
        only_at_registration: true,
    },
    DefaultOneShot {
        key: "node.cluster.x-k8s.io/uninitialized",
        except: &[],
        only_at_registration: true,
    },
    DefaultOneShot {
        key: "karpenter.sh/unregistered",
        except: &[],
        only_at_registration: true,
    },
    DefaultOneShot {
        key: "*/agent-not-ready",
        except: &["node.cilium.io/agent-not-ready"],
        only_at_registration: false,
    },
];

pub const DEFAULT_OWNER_ANNOTATION: &str = "taintguard.io/cordoned-by";
pub const DEFAULT_ONE_SHOT_RECORD_ANNOTATION: &str = "taintguard.io/removed-startup-taints";
pub const DEFAULT_TAINT_OWNERS_ANNOTATION: &str = "taintguard.io/taint-owners";

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
    /// Keys the selector leaves out, so that a convention can be written as one glob even when
    /// one component using its form re-adds its taint.
    pub except: Vec<Glob>,
}

impl OneShotRule {
    pub fn selects(&self, taint: &Taint<'_>) -> bool {
        self.selector.matches(taint) && !self.except.iter().any(|g| g.matches(taint.key.as_str()))
    }
}

/// The record of who added each protected taint (docs/controllers.md): the adder may later
/// change the taint's value or remove it.
#[derive(Debug, Clone)]
pub struct TaintOwners {
    pub enabled: bool,
    pub annotation: String,
}

impl Default for TaintOwners {
    fn default() -> TaintOwners {
        TaintOwners {
            enabled: true,
            annotation: DEFAULT_TAINT_OWNERS_ANNOTATION.to_owned(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cordon {
    pub enabled: bool,
    pub owner_annotation: String,
}

/// RBAC as a way in besides the settings lists (docs/context.md): a requester is permitted
/// what a SubjectAccessReview says it may do with `verb` on `resource` (named by the node) in
/// `api_group`. The default group is one no API server serves, so only a role naming it grants
/// the verbs, or one granting every verb in every group, as `cluster-admin` does.
#[derive(Debug, Clone)]
pub struct Rbac {
    pub enabled: bool,
    pub api_group: String,
    pub resource: String,
    /// Permits what the taint part forbids: removing or changing protected taints, re-adding
    /// one-shot taints, editing the one-shot removal record.
    pub untaint_verb: String,
    /// Permits lifting or reassigning another's cordon.
    pub uncordon_verb: String,
}

pub const DEFAULT_RBAC_API_GROUP: &str = "taintguard.io";
pub const DEFAULT_RBAC_RESOURCE: &str = "nodes";
pub const DEFAULT_UNTAINT_VERB: &str = "untaint";
pub const DEFAULT_UNCORDON_VERB: &str = "uncordon";

impl Rbac {
    /// The grant `verb` stands for, as messages name it.
    pub fn describe(&self, verb: &str, node: &str) -> String {
        format!(
            "{verb} {}/{node} in API group {:?}",
            self.resource, self.api_group
        )
    }
}

impl Default for Rbac {
    fn default() -> Rbac {
        Rbac {
            enabled: false,
            api_group: DEFAULT_RBAC_API_GROUP.to_owned(),
            resource: DEFAULT_RBAC_RESOURCE.to_owned(),
            untaint_verb: DEFAULT_UNTAINT_VERB.to_owned(),
            uncordon_verb: DEFAULT_UNCORDON_VERB.to_owned(),
        }
    }
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
    pub taint_owners: TaintOwners,
    pub rbac: Rbac,
}

impl Settings {
    /// The one-shot rule that selects `taint`, if any.
    pub fn one_shot_rule(&self, taint: &Taint<'_>) -> Option<&OneShotRule> {
        self.one_shot.iter().find(|r| r.selects(taint))
    }

    /// The protected-taint rule that decides `taint`: `None` for one-shot and unprotected taints
    /// and for those no rule selects.
    pub fn protecting_rule(&self, taint: &Taint<'_>) -> Option<&ProtectedRule> {
        if self.one_shot_rule(taint).is_some() || self.unprotected.iter().any(|s| s.matches(taint))
        {
            return None;
        }
        self.protected.iter().find(|r| r.selector.matches(taint))
    }
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

/// The settings as written: every field optional, `null` as good as absent.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SettingsText<'s> {
    #[serde(borrow)]
    mode: Option<JsonStr<'s>>,
    #[serde(borrow)]
    protected_taints: Option<Vec<SelectorSettings<'s, ProtectedSelector<'s>>>>,
    #[serde(borrow)]
    unprotected_taints: Option<Vec<SelectorSettings<'s, PlainSelector<'s>>>>,
    #[serde(borrow)]
    one_shot_taints: Option<Vec<SelectorSettings<'s, OneShotSelector<'s>>>>,
    #[serde(borrow)]
    one_shot_record_annotation: Option<JsonStr<'s>>,
    #[serde(borrow)]
    permitted: Option<Object<PrincipalListSettings<'s>>>,
    #[serde(borrow)]
    cordon: Option<Object<CordonText<'s>>>,
    #[serde(borrow)]
    taint_owners: Option<Object<TaintOwnersText<'s>>>,
    #[serde(borrow)]
    rbac: Option<Object<RbacText<'s>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TaintOwnersText<'s> {
    enabled: Option<bool>,
    #[serde(borrow)]
    annotation: Option<JsonStr<'s>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RbacText<'s> {
    enabled: Option<bool>,
    #[serde(borrow)]
    api_group: Option<JsonStr<'s>>,
    #[serde(borrow)]
    resource: Option<JsonStr<'s>>,
    #[serde(borrow)]
    untaint_verb: Option<JsonStr<'s>>,
    #[serde(borrow)]
    uncordon_verb: Option<JsonStr<'s>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProtectedSelector<'s> {
    #[serde(borrow)]
    key: Option<JsonStr<'s>>,
    #[serde(borrow)]
    effects: Option<Vec<JsonStr<'s>>>,
    #[serde(borrow)]
    permitted: Option<Object<PrincipalListSettings<'s>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OneShotSelector<'s> {
    #[serde(borrow)]
    key: Option<JsonStr<'s>>,
    #[serde(borrow)]
    effects: Option<Vec<JsonStr<'s>>>,
    only_at_registration: Option<bool>,
    #[serde(borrow)]
    except: Option<Vec<JsonStr<'s>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CordonText<'s> {
    enabled: Option<bool>,
    #[serde(borrow)]
    owner_annotation: Option<JsonStr<'s>>,
}

impl SelectorFields for ProtectedSelector<'_> {
    fn key(&self) -> Option<&str> {
        self.key.as_ref().map(JsonStr::as_str)
    }
    fn effects(&self) -> Option<&[JsonStr<'_>]> {
        self.effects.as_deref()
    }
}

impl SelectorFields for OneShotSelector<'_> {
    fn key(&self) -> Option<&str> {
        self.key.as_ref().map(JsonStr::as_str)
    }
    fn effects(&self) -> Option<&[JsonStr<'_>]> {
        self.effects.as_deref()
    }
}

impl Settings {
    /// Reads and checks settings text (`{}` and `null` mean every default).
    pub fn from_text(text: &str) -> Result<Settings, SettingsError> {
        let root = At::Root;
        let settings: Object<SettingsText> = read::<Option<_>>(text, root)?.unwrap_or_default();
        let mode = match settings.mode.as_ref().map(JsonStr::as_str) {
            None | Some("restore") => Mode::Restore,
            Some("deny") => Mode::Deny,
            Some(other) => {
                return Err(root.field("mode").error(format!(
                    "unknown mode {other:?}; expected \"restore\" or \"deny\""
                )))
            }
        };
        let protected = match &settings.protected_taints {
            None => vec![ProtectedRule {
                selector: TaintSelector::new("*", &[]),
                permitted: PrincipalList::default(),
            }],
            Some(list) => {
                let list_at = root.field("protectedTaints");
                let mut rules = Vec::with_capacity(list.len());
                for (i, rule) in list.iter().enumerate() {
                    let at = list_at.index(i);
                    let selector = rule.build(at)?;
                    let permitted = match rule.object().and_then(|r| r.permitted.as_ref()) {
                        Some(p) => p.build(at.field("permitted"), &PrincipalList::default())?,
                        None => PrincipalList::default(),
                    };
                    rules.push(ProtectedRule {
                        selector,
                        permitted,
                    });
                }
                rules
            }
        };
        let unprotected = match &settings.unprotected_taints {
            Some(list) => selectors(root.field("unprotectedTaints"), list)?,
            None => defaults(DEFAULT_UNPROTECTED_TAINTS),
        };
        let one_shot = match &settings.one_shot_taints {
            None => DEFAULT_ONE_SHOT_TAINTS
                .iter()
                .map(|d| OneShotRule {
                    selector: TaintSelector::new(d.key, &[]),
                    only_at_registration: d.only_at_registration,
                    except: d
                        .except
                        .iter()
                        .map(|k| taint_key_glob(k).expect("built-in taint key globs are valid"))
                        .collect(),
                })
                .collect(),
            Some(list) => {
                let list_at = root.field("oneShotTaints");
                list.iter()
                    .enumerate()
                    .map(|(i, rule)| {
                        let at = list_at.index(i);
                        let except = match rule.object().and_then(|r| r.except.as_deref()) {
                            Some(keys) => each(at.field("except"), keys, taint_key_glob)?,
                            None => Vec::new(),
                        };
                        Ok(OneShotRule {
                            selector: rule.build(at)?,
                            only_at_registration: rule
                                .object()
                                .and_then(|r| r.only_at_registration)
                                .unwrap_or(false),
                            except,
                        })
                    })
                    .collect::<Result<_, SettingsError>>()?
            }
        };
        let one_shot_record = annotation_key(
            root.field("oneShotRecordAnnotation"),
            settings.one_shot_record_annotation.as_ref(),
            DEFAULT_ONE_SHOT_RECORD_ANNOTATION,
        )?;
        let permitted = match &settings.permitted {
            Some(p) => p.build(root.field("permitted"), &default_permitted())?,
            None => default_permitted(),
        };
        let cordon = match &settings.cordon {
            None => Cordon {
                enabled: true,
                owner_annotation: DEFAULT_OWNER_ANNOTATION.to_owned(),
            },
            Some(c) => Cordon {
                enabled: c.enabled.unwrap_or(true),
                owner_annotation: annotation_key(
                    root.field("cordon").field("ownerAnnotation"),
                    c.owner_annotation.as_ref(),
                    DEFAULT_OWNER_ANNOTATION,
                )?,
            },
        };
        let taint_owners = match &settings.taint_owners {
            None => TaintOwners::default(),
            Some(o) => TaintOwners {
                enabled: o.enabled.unwrap_or(true),
                annotation: annotation_key(
                    root.field("taintOwners").field("annotation"),
                    o.annotation.as_ref(),
                    DEFAULT_TAINT_OWNERS_ANNOTATION,
                )?,
            },
        };
        // Each record needs an annotation of its own (the one-shot record is always kept). The
        // error names the field moved off its default, which is the one the user wrote.
        let records = [
            (
                true,
                "oneShotRecordAnnotation",
                &one_shot_record,
                DEFAULT_ONE_SHOT_RECORD_ANNOTATION,
            ),
            (
                cordon.enabled,
                "cordon.ownerAnnotation",
                &cordon.owner_annotation,
                DEFAULT_OWNER_ANNOTATION,
            ),
            (
                taint_owners.enabled,
                "taintOwners.annotation",
                &taint_owners.annotation,
                DEFAULT_TAINT_OWNERS_ANNOTATION,
            ),
        ];
        for (i, a) in records.iter().enumerate() {
            for b in &records[i + 1..] {
                if a.0 && b.0 && a.2 == b.2 {
                    let (named, other) = if *a.2 != a.3 { (a, b) } else { (b, a) };
                    return Err(SettingsError::new(
                        named.1,
                        format!(
                            "{:?} is also `{}`; each record needs an annotation of its own",
                            named.2, other.1
                        ),
                    ));
                }
            }
        }
        let rbac = match &settings.rbac {
            None => Rbac::default(),
            Some(r) => {
                let at = root.field("rbac");
                let defaults = Rbac::default();
                Rbac {
                    enabled: r.enabled.unwrap_or(false),
                    api_group: rbac_name(
                        at.field("apiGroup"),
                        r.api_group.as_ref(),
                        &defaults.api_group,
                        true,
                    )?,
                    resource: rbac_name(
                        at.field("resource"),
                        r.resource.as_ref(),
                        &defaults.resource,
                        false,
                    )?,
                    untaint_verb: rbac_name(
                        at.field("untaintVerb"),
                        r.untaint_verb.as_ref(),
                        &defaults.untaint_verb,
                        false,
                    )?,
                    uncordon_verb: rbac_name(
                        at.field("uncordonVerb"),
                        r.uncordon_verb.as_ref(),
                        &defaults.uncordon_verb,
                        false,
                    )?,
                }
            }
        };
        Ok(Settings {
            mode,
            protected,
            unprotected,
            one_shot,
            one_shot_record,
            permitted,
            cordon,
            taint_owners,
            rbac,
        })
    }
}

/// An RBAC name (API group, resource, verb) at `at`, or `default`. RBAC matches these exactly,
/// so the characters a role can name are checked here rather than found wrong in an audit:
/// lower-case letters, digits, `-` and, in a group, `.`. An empty group would be the core API
/// group, whose roles grant real powers over nodes, so it is refused.
fn rbac_name(
    at: At<'_>,
    value: Option<&JsonStr<'_>>,
    default: &str,
    group: bool,
) -> Result<String, SettingsError> {
    let value = value.map_or(default, JsonStr::as_str);
    let ok = !value.is_empty()
        && value.len() <= 253
        && value.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (group && c == '.')
        });
    if ok {
        Ok(value.to_owned())
    } else if value.is_empty() && group {
        Err(at.error(
            "the core API group (\"\") is refused: roles over real node resources would grant \
             this permission; name a group no API server serves, such as \"taintguard.io\""
                .to_owned(),
        ))
    } else {
        Err(at.error(format!(
            "{value:?} is not an RBAC name: lower-case letters, digits and `-`{}",
            if group { " and `.`" } else { "" }
        )))
    }
}

/// The annotation key `value` at `at`, or `default`.
fn annotation_key(
    at: At<'_>,
    value: Option<&JsonStr<'_>>,
    default: &str,
) -> Result<String, SettingsError> {
    let value = value.map_or(default, JsonStr::as_str);
    check_annotation_key(value).map_err(|m| at.error(m))?;
    Ok(value.to_owned())
}

/// Kubernetes annotation keys are qualified names (`crate::k8s_names`).
fn check_annotation_key(key: &str) -> Result<(), String> {
    crate::k8s_names::qualified_name(key)
        .map_err(|_| format!("{key:?} is not a valid annotation key ([prefix/]name)"))
}
