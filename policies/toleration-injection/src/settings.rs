//! Settings of the toleration-injection policy; the policy README is the users' reference.

use std::borrow::Cow;

use serde::Serialize;

use super::conditions::Condition;
pub use super::pod_toleration_restriction::{DefaultTolerationSeconds, PodTolerationRestriction};
use super::workload::Kind;
use taintguard::glob::Glob;
use taintguard::label_selector::LabelSelector;
use taintguard::principal::PrincipalList;
use taintguard::settings::{checked, At, PolicySettings, SettingsError, SettingsFields};
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
    /// Globs of the request's namespace; empty: every namespace.
    pub namespaces: Vec<Glob>,
    /// The requesters the rule applies to; `None`: everyone.
    pub principals: Option<PrincipalList>,
    /// The selector the workload's labels must match; `None`: any labels.
    #[serde(rename = "labelSelector")]
    pub labels: Option<LabelSelector>,
    /// Matched against `metadata.name`, or `metadata.generateName` when there is no name yet.
    pub names: Vec<Glob>,
    /// JSONPath conditions on the object, every one of which must hold.
    #[serde(rename = "jsonPath")]
    pub conditions: Vec<Condition>,
}

/// An injection rule: the tolerations it adds, if nothing already covers them, to the workloads
/// its `match` selects.
#[derive(Debug, Clone, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Required; read as empty when absent so that the check names it.
    #[serde(default)]
    pub name: String,
    /// What the rule applies to.
    #[serde(rename = "match", default)]
    pub matcher: Match,
    /// The tolerations the rule adds.
    #[serde(default)]
    pub tolerations: Vec<Toleration<'static>>,
    /// Tolerations taken from the taints nodes carry, asked of the cluster per request.
    #[serde(rename = "nodeTaints", default)]
    pub node_taints: Option<NodeTaints>,
}

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
    /// Taints left out of those `taints` selects.
    pub except: Vec<TaintSelector>,
}

impl NodeTaints {
    /// Whether a node's taint with `key` and `effect` is one this rule tolerates: `taints`
    /// selects it (or is empty) and `except` does not.
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
    /// The taints whose tolerations are restricted.
    #[serde(default)]
    pub taints: Vec<TaintSelector>,
    /// Globs of the namespaces whose workloads may tolerate them.
    #[serde(default)]
    pub allowed_namespaces: Vec<Glob>,
    /// The requesters who may give a workload those tolerations anywhere.
    #[serde(default)]
    pub allowed_principals: PrincipalList,
}

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
    /// Whether alias groups are applied. On by default.
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

    /// The group in force that `key` belongs to.
    pub fn group_of(&self, key: &str) -> Option<&[AliasKey]> {
        self.in_force()
            .iter()
            .find(|g| g.iter().any(|k| k.as_str() == key))
            .map(|g| &g[..])
    }
}

/// The settings; every field has a default, so `{}` is a complete configuration.
#[derive(Debug, Clone, Default, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The injection rules, each applied on its own.
    pub rules: Vec<Rule>,
    /// The groups of taint keys that stand for the same taint.
    pub aliases: Aliases,
    /// The rules that deny tolerations outside allowed namespaces and principals.
    pub restrictions: Vec<Restriction>,
    /// PodTolerationRestriction's drop-in; off by default.
    #[serde(rename = "podTolerationRestriction")]
    pub pod_toleration_restriction: PodTolerationRestriction,
}

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
