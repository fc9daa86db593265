//! Settings of the toleration-injection policy; the policy README is the users' reference.

use std::borrow::Cow;

use serde::Serialize;

use super::conditions::Condition;
use super::pod_toleration_restriction::PluginToleration;
use super::workload::Kind;
use taintguard::cluster::Freshness;
use taintguard::glob::Glob;
use taintguard::k8s_names;
use taintguard::label_selector::LabelSelector;
use taintguard::principal::{PrincipalList, SYSTEM_MASTERS};
use taintguard::settings::{
    checked, settings_object, At, PolicySettings, SettingsError, SettingsFields,
};
use taintguard::taint::{SelectsTaints, TaintKeyGlob, TaintSelector};
use taintguard::toleration::Toleration;

/// On by default: kubeadm 1.24 set both taints, 1.25 dropped `master`, and clusters upgraded
/// other ways still carry it (docs/incidents.md, incident 5).
const DEFAULT_ALIAS_GROUP: [&str; 2] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

/// What an injection rule selects; every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Match {
    /// Empty: every kind the policy handles.
    pub kinds: Vec<Kind>,
    pub namespaces: Vec<Glob>,
    pub principals: Option<PrincipalList>,
    #[serde(rename = "labelSelector")]
    pub labels: Option<LabelSelector>,
    /// Matched against `metadata.name`, or `metadata.generateName` when there is no name yet.
    pub names: Vec<Glob>,
    #[serde(rename = "jsonPath")]
    pub conditions: Vec<Condition>,
}

settings_object!(Match);

#[derive(Debug, Clone, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Required; read as empty when absent so that the check names it.
    #[serde(default)]
    pub name: String,
    #[serde(rename = "match", default)]
    pub matcher: Match,
    #[serde(default)]
    pub tolerations: Vec<Toleration<'static>>,
    /// Tolerations taken from the taints nodes carry, asked of the cluster per request.
    #[serde(rename = "nodeTaints", default)]
    pub node_taints: Option<NodeTaints>,
}

settings_object!(Rule);

/// A rule form whose tolerations come from the cluster (docs/context.md): every taint carried by
/// a node `nodes` selects, that `taints` selects and `except` does not, is tolerated with
/// `operator: Exists` (any value) and its effect.
#[derive(Debug, Clone, Default, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeTaints {
    /// `None`: every node.
    #[serde(rename = "nodeSelector")]
    pub nodes: Option<LabelSelector>,
    /// Empty: every taint.
    pub taints: Vec<TaintSelector>,
    pub except: Vec<TaintSelector>,
}

settings_object!(NodeTaints);

impl NodeTaints {
    pub fn selects(&self, key: &str, effect: &str) -> bool {
        (self.taints.is_empty()
            || self
                .taints
                .iter()
                .any(|s| s.matches_key_effect(key, effect)))
            && !self
                .except
                .iter()
                .any(|s| s.matches_key_effect(key, effect))
    }
}

/// Denies tolerations of selected taints outside allowed namespaces and principals.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Restriction {
    /// Required; read as empty when absent so that the check names it.
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub taints: Vec<TaintSelector>,
    #[serde(default)]
    pub allowed_namespaces: Vec<Glob>,
    #[serde(default)]
    pub allowed_principals: PrincipalList,
}

settings_object!(Restriction);

checked! {
    /// A key of an alias group: a plain taint key, never a glob. Checked while it is read; the
    /// default group is a constant ([`DEFAULT_GROUPS`]), not checked on every request (that
    /// cost 5.6% of the hostpath mutation, benchmarks/cost.md), its keys checked by the tests.
    pub struct AliasKey(Cow<'static, str>) = |text| {
        if text.is_empty() || text.contains(['*', '?', '[', '\\']) {
            return Err("alias keys are plain taint keys, not globs".to_owned());
        }
        TaintKeyGlob::try_from(text.clone())?;
        Ok(Cow::Owned(text))
    };
}

impl AliasKey {
    /// The key, as settings write it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Groups of taint keys that are the same taint under different names.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Aliases {
    pub enabled: bool,
    /// Borrowed for the default group, built on every request without settings: as lists
    /// of strings it cost each such request four allocations and their frees
    /// (benchmarks/cost.md, "Few tolerations").
    pub groups: Cow<'static, [Cow<'static, [AliasKey]>]>,
}

/// [`DEFAULT_ALIAS_GROUP`] as the one group aliases have by default.
const DEFAULT_GROUPS: &[Cow<'static, [AliasKey]>] = &[Cow::Borrowed(&[
    AliasKey(Cow::Borrowed(DEFAULT_ALIAS_GROUP[0])),
    AliasKey(Cow::Borrowed(DEFAULT_ALIAS_GROUP[1])),
])];

settings_object!(Aliases);

impl Default for Aliases {
    fn default() -> Aliases {
        Aliases {
            enabled: true,
            groups: Cow::Borrowed(DEFAULT_GROUPS),
        }
    }
}

impl Aliases {
    /// The groups in force: none when aliases are off.
    pub fn in_force(&self) -> &[Cow<'static, [AliasKey]>] {
        if self.enabled {
            &self.groups
        } else {
            &[]
        }
    }
}

/// The PodTolerationRestriction admission plugin's namespace annotations, with its
/// configuration file's cluster-wide `default` and `whitelist`, and the two gaps upstream left
/// open closed unless turned off (docs/pod-toleration-restriction.md).
#[derive(Debug, Clone, PartialEq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodTolerationRestriction {
    /// Off by default: on, every Pod CREATE reads its Namespace.
    pub enabled: bool,
    /// Tolerations for Pods of namespaces without the `defaultTolerations` annotation.
    pub default: Vec<PluginToleration>,
    /// What Pods of namespaces without the `tolerationsWhitelist` annotation may tolerate;
    /// empty: anything.
    pub whitelist: Vec<PluginToleration>,
    /// The tolerations Kubernetes adds by itself count as whitelisted (kubernetes#64616).
    pub implicit_tolerations: bool,
    /// How long Kubernetes' own `not-ready` and `unreachable` tolerations last: what the implicit
    /// tolerations cover, and no longer.
    pub default_toleration_seconds: DefaultTolerationSeconds,
    /// Only `annotationEditors` may set or change the two annotations (kubernetes#59366).
    pub guard_annotations: bool,
    pub annotation_editors: PrincipalList,
    /// Whether policy-server's cache may answer a Pod's Namespace (at most five seconds old, as
    /// the plugin's informer is a moment behind) or every Pod reads it from the API server.
    pub namespace_reads: Freshness,
}

settings_object!(PodTolerationRestriction);

impl Default for PodTolerationRestriction {
    fn default() -> Self {
        PodTolerationRestriction {
            enabled: false,
            default: Vec::new(),
            whitelist: Vec::new(),
            implicit_tolerations: true,
            default_toleration_seconds: DefaultTolerationSeconds::default(),
            guard_annotations: true,
            annotation_editors: PrincipalList {
                groups: Cow::Borrowed(SYSTEM_MASTERS),
                ..PrincipalList::default()
            },
            namespace_reads: Freshness::Cached,
        }
    }
}

impl PodTolerationRestriction {
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        for (field, list) in [("default", &self.default), ("whitelist", &self.whitelist)] {
            let at = at.field(field);
            for (i, toleration) in list.iter().enumerate() {
                check_plugin_toleration(at.index(i), toleration)?;
            }
        }
        self.default_toleration_seconds
            .check(at.field("defaultTolerationSeconds"))
    }
}

/// The seconds the DefaultTolerationSeconds admission plugin gives the `not-ready` and
/// `unreachable` tolerations it adds to every Pod: kube-apiserver's
/// `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`,
/// 300 unless the cluster sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DefaultTolerationSeconds {
    pub not_ready: i64,
    pub unreachable: i64,
}

settings_object!(DefaultTolerationSeconds);

impl Default for DefaultTolerationSeconds {
    fn default() -> Self {
        DefaultTolerationSeconds {
            not_ready: 300,
            unreachable: 300,
        }
    }
}

impl DefaultTolerationSeconds {
    /// A negative value is refused: the taint-eviction controller reads it as 0, so 0 says it.
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        for (field, seconds) in [
            ("notReady", self.not_ready),
            ("unreachable", self.unreachable),
        ] {
            if seconds < 0 {
                return Err(at
                    .field(field)
                    .error(format!("{seconds} is negative; evicting at once is 0")));
            }
        }
        Ok(())
    }
}

/// The checks of a pod spec's toleration, as the plugin makes of its configuration file's
/// (`ValidateTolerations`), so that settings copied from a file kube-apiserver refuses are
/// refused here too: the core's checks, an operator it knows, and a value a label may carry.
fn check_plugin_toleration(at: At<'_>, t: &PluginToleration) -> Result<(), SettingsError> {
    if !matches!(t.operator.as_str(), "Equal" | "Exists" | "") {
        return Err(at.field("operator").error(format!(
            "unknown operator {:?}; expected \"Equal\" or \"Exists\"",
            t.operator
        )));
    }
    t.as_core().into_owned().check(at)?;
    k8s_names::label_value(&t.value).map_err(|m| at.field("value").error(m))
}

/// The settings; every field has a default, so `{}` is a complete configuration.
#[derive(Debug, Clone, Default, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub rules: Vec<Rule>,
    pub aliases: Aliases,
    pub restrictions: Vec<Restriction>,
    #[serde(rename = "podTolerationRestriction")]
    pub pod_toleration_restriction: PodTolerationRestriction,
}

settings_object!(Settings);

impl PolicySettings for Settings {
    /// Names, the rules' tolerations, selectors and conditions, and the alias groups.
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let rules_at = at.field("rules");
        for (i, rule) in self.rules.iter().enumerate() {
            let at = rules_at.index(i);
            check_name(at, &rule.name, "rule")?;
            if self.rules[..i].iter().any(|r| r.name == rule.name) {
                return Err(at
                    .field("name")
                    .error(format!("duplicate rule name {:?}", rule.name)));
            }
            rule.check(at)?;
        }
        let aliases_at = at.field("aliases");
        check_aliases(aliases_at.field("groups"), &self.aliases.groups)?;
        let restrictions_at = at.field("restrictions");
        for (i, restriction) in self.restrictions.iter().enumerate() {
            let at = restrictions_at.index(i);
            check_name(at, &restriction.name, "restriction")?;
            if restriction.taints.is_empty() {
                return Err(at
                    .field("taints")
                    .error("a restriction needs at least one taint selector"));
            }
        }
        self.pod_toleration_restriction
            .check(at.field("podTolerationRestriction"))
    }
}

impl Rule {
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let match_at = at.field("match");
        if let Some(labels) = &self.matcher.labels {
            labels.check(match_at.field("labelSelector"))?;
        }
        let conditions_at = match_at.field("jsonPath");
        for (i, condition) in self.matcher.conditions.iter().enumerate() {
            condition.check(conditions_at.index(i))?;
        }
        let tolerations_at = at.field("tolerations");
        for (i, toleration) in self.tolerations.iter().enumerate() {
            toleration.check(tolerations_at.index(i))?;
        }
        if let Some(nodes) = self.node_taints.as_ref().and_then(|n| n.nodes.as_ref()) {
            nodes.check(at.field("nodeTaints").field("nodeSelector"))?;
        }
        if self.tolerations.is_empty() && self.node_taints.is_none() {
            return Err(tolerations_at.error(format!(
                "rule {:?} adds no tolerations (give `tolerations`, `nodeTaints` or both)",
                self.name
            )));
        }
        Ok(())
    }
}

/// A rule's or a restriction's name: present and not blank.
fn check_name(at: At<'_>, name: &str, what: &str) -> Result<(), SettingsError> {
    if name.trim().is_empty() {
        return Err(at.field("name").error(format!("every {what} needs a name")));
    }
    Ok(())
}

/// Each group names at least two keys, and no key is in two groups.
fn check_aliases(at: At<'_>, groups: &[Cow<'_, [AliasKey]>]) -> Result<(), SettingsError> {
    for (i, keys) in groups.iter().enumerate() {
        let at = at.index(i);
        if keys.len() < 2 {
            return Err(at.error("an alias group needs at least two keys"));
        }
        for (j, key) in keys.iter().enumerate() {
            let at = at.index(j);
            let mut earlier = groups[..i].iter().flat_map(|g| g.iter()).chain(&keys[..j]);
            if earlier.any(|k| k == key) {
                return Err(at.error(format!("{:?} is already in an alias group", key.as_str())));
            }
        }
    }
    Ok(())
}
