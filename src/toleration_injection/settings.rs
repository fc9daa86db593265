//! Settings of the toleration-injection policy; the policy README is the users' reference.

use serde::Deserialize;

use super::conditions::{Condition, ConditionSettings};
use super::workload::{Kind, KINDS};
use crate::glob::Glob;
use crate::json::JsonStr;
use crate::label_selector::{LabelSelector, LabelSelectorSettings};
use crate::principal::{PrincipalList, PrincipalListSettings};
use crate::settings::{each, read, taint_key_glob, At, Object, SettingsError};
use crate::taint::{selectors, PlainSelector, SelectorSettings, TaintSelector};
use crate::toleration::{Toleration, TolerationSettings};

/// On by default: kubeadm 1.24 set both taints, 1.25 dropped `master`, and clusters upgraded
/// other ways still carry it (docs/incidents.md, incident 5).
pub const DEFAULT_ALIAS_GROUP: [&str; 2] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

/// What an injection rule selects; every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct Match {
    /// Empty: every kind the policy handles.
    pub kinds: Vec<Kind>,
    pub namespaces: Vec<Glob>,
    pub principals: Option<PrincipalList>,
    pub labels: Option<LabelSelector>,
    /// Matched against `metadata.name`, or `metadata.generateName` when there is no name yet.
    pub names: Vec<Glob>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub matcher: Match,
    pub tolerations: Vec<Toleration<'static>>,
    /// Tolerations taken from the taints nodes carry, asked of the cluster per request.
    pub node_taints: Option<NodeTaints>,
}

/// A rule form whose tolerations come from the cluster (docs/context.md): every taint carried by
/// a node `nodes` selects, that `taints` selects and `except` does not, is tolerated with
/// `operator: Exists` (any value) and its effect.
#[derive(Debug, Clone)]
pub struct NodeTaints {
    /// `None`: every node.
    pub nodes: Option<LabelSelector>,
    /// Empty: every taint.
    pub taints: Vec<TaintSelector>,
    pub except: Vec<TaintSelector>,
}

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
#[derive(Debug, Clone)]
pub struct Restriction {
    pub name: String,
    pub taints: Vec<TaintSelector>,
    pub allowed_namespaces: Vec<Glob>,
    pub allowed_principals: PrincipalList,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub rules: Vec<Rule>,
    /// Groups of taint keys that are the same taint under different names.
    pub aliases: Vec<Vec<String>>,
    pub restrictions: Vec<Restriction>,
}

/// The settings as written: every field optional, `null` as good as absent.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsText<'s> {
    #[serde(borrow)]
    rules: Option<Vec<Object<RuleText<'s>>>>,
    #[serde(borrow)]
    aliases: Option<Object<AliasesText<'s>>>,
    #[serde(borrow)]
    restrictions: Option<Vec<Object<RestrictionText<'s>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText<'s> {
    #[serde(borrow)]
    name: Option<JsonStr<'s>>,
    #[serde(borrow, rename = "match")]
    matcher: Option<Object<MatchText<'s>>>,
    #[serde(borrow)]
    tolerations: Option<Vec<Object<TolerationSettings<'s>>>>,
    #[serde(borrow, rename = "nodeTaints")]
    node_taints: Option<Object<NodeTaintsText<'s>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeTaintsText<'s> {
    #[serde(borrow)]
    node_selector: Option<Object<LabelSelectorSettings<'s>>>,
    #[serde(borrow)]
    taints: Option<Vec<SelectorSettings<'s, PlainSelector<'s>>>>,
    #[serde(borrow)]
    except: Option<Vec<SelectorSettings<'s, PlainSelector<'s>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MatchText<'s> {
    #[serde(borrow)]
    kinds: Option<Vec<JsonStr<'s>>>,
    #[serde(borrow)]
    namespaces: Option<Vec<JsonStr<'s>>>,
    #[serde(borrow)]
    principals: Option<Object<PrincipalListSettings<'s>>>,
    #[serde(borrow)]
    label_selector: Option<Object<LabelSelectorSettings<'s>>>,
    #[serde(borrow)]
    names: Option<Vec<JsonStr<'s>>>,
    #[serde(borrow)]
    json_path: Option<Vec<Object<ConditionSettings<'s>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AliasesText<'s> {
    enabled: Option<bool>,
    #[serde(borrow)]
    groups: Option<Vec<Vec<JsonStr<'s>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RestrictionText<'s> {
    #[serde(borrow)]
    name: Option<JsonStr<'s>>,
    #[serde(borrow)]
    taints: Option<Vec<SelectorSettings<'s, PlainSelector<'s>>>>,
    #[serde(borrow)]
    allowed_namespaces: Option<Vec<JsonStr<'s>>>,
    #[serde(borrow)]
    allowed_principals: Option<Object<PrincipalListSettings<'s>>>,
}

fn namespace_glob(text: &str) -> Result<Glob, String> {
    Glob::new(text).map_err(|e| format!("{text:?} is not a valid glob: {e}"))
}

fn kind(text: &str) -> Result<Kind, String> {
    Kind::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = KINDS.iter().map(|k| k.name()).collect();
        format!(
            "unknown kind {text:?}; expected one of {}",
            names.join(", ")
        )
    })
}

/// Each glob of an optional list; absent is none.
fn globs(at: At<'_>, list: Option<&[JsonStr<'_>]>) -> Result<Vec<Glob>, SettingsError> {
    each(at, list.unwrap_or_default(), namespace_glob)
}

/// A rule's or a restriction's name: present and not blank.
fn name(at: At<'_>, name: Option<&JsonStr<'_>>, what: &str) -> Result<String, SettingsError> {
    name.map(JsonStr::as_str)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_owned)
        .ok_or_else(|| at.field("name").error(format!("every {what} needs a name")))
}

impl MatchText<'_> {
    fn build(self, at: At<'_>) -> Result<Match, SettingsError> {
        let kinds = each(
            at.field("kinds"),
            self.kinds.as_deref().unwrap_or_default(),
            kind,
        )?;
        let namespaces = globs(at.field("namespaces"), self.namespaces.as_deref())?;
        let principals = match &self.principals {
            Some(p) => Some(p.build(at.field("principals"), &PrincipalList::default())?),
            None => None,
        };
        let labels = match &self.label_selector {
            Some(s) => Some(s.build(at.field("labelSelector"))?),
            None => None,
        };
        let names = globs(at.field("names"), self.names.as_deref())?;
        let conditions_at = at.field("jsonPath");
        let conditions = self
            .json_path
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, c)| c.0.build(conditions_at.index(i)))
            .collect::<Result<_, _>>()?;
        Ok(Match {
            kinds,
            namespaces,
            principals,
            labels,
            names,
            conditions,
        })
    }
}

impl RuleText<'_> {
    fn build(self, at: At<'_>) -> Result<Rule, SettingsError> {
        let name = name(at, self.name.as_ref(), "rule")?;
        let matcher = match self.matcher {
            Some(m) => m.0.build(at.field("match"))?,
            None => Match::default(),
        };
        let tolerations_at = at.field("tolerations");
        let tolerations: Vec<Toleration<'static>> = self
            .tolerations
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, t)| t.build(tolerations_at.index(i)))
            .collect::<Result<_, _>>()?;
        let node_taints = match self.node_taints {
            Some(n) => {
                let at = at.field("nodeTaints");
                Some(NodeTaints {
                    nodes: match &n.node_selector {
                        Some(s) => Some(s.build(at.field("nodeSelector"))?),
                        None => None,
                    },
                    taints: selectors(at.field("taints"), n.taints.as_deref().unwrap_or_default())?,
                    except: selectors(at.field("except"), n.except.as_deref().unwrap_or_default())?,
                })
            }
            None => None,
        };
        if tolerations.is_empty() && node_taints.is_none() {
            return Err(tolerations_at.error(format!(
                "rule {name:?} adds no tolerations (give `tolerations`, `nodeTaints` or both)"
            )));
        }
        Ok(Rule {
            name,
            matcher,
            tolerations,
            node_taints,
        })
    }
}

impl RestrictionText<'_> {
    fn build(&self, at: At<'_>) -> Result<Restriction, SettingsError> {
        let name = name(at, self.name.as_ref(), "restriction")?;
        let taints_at = at.field("taints");
        let taints = selectors(taints_at, self.taints.as_deref().unwrap_or_default())?;
        if taints.is_empty() {
            return Err(taints_at.error("a restriction needs at least one taint selector"));
        }
        let allowed_namespaces = globs(
            at.field("allowedNamespaces"),
            self.allowed_namespaces.as_deref(),
        )?;
        let allowed_principals = match &self.allowed_principals {
            Some(p) => p.build(at.field("allowedPrincipals"), &PrincipalList::default())?,
            None => PrincipalList::default(),
        };
        Ok(Restriction {
            name,
            taints,
            allowed_namespaces,
            allowed_principals,
        })
    }
}

impl AliasesText<'_> {
    fn build(&self, at: At<'_>) -> Result<Vec<Vec<String>>, SettingsError> {
        let Some(list) = &self.groups else {
            return Ok(if self.enabled.unwrap_or(true) {
                default_aliases()
            } else {
                Vec::new()
            });
        };
        let groups_at = at.field("groups");
        let mut groups: Vec<Vec<String>> = Vec::new();
        for (i, keys) in list.iter().enumerate() {
            let at = groups_at.index(i);
            if keys.len() < 2 {
                return Err(at.error("an alias group needs at least two keys"));
            }
            let mut out = Vec::new();
            for (j, key) in keys.iter().enumerate() {
                let at = at.index(j);
                let key = key.as_str();
                if key.is_empty() || key.contains(['*', '?', '[', '\\']) {
                    return Err(at.error("alias keys are plain taint keys, not globs"));
                }
                taint_key_glob(key).map_err(|m| at.error(m))?;
                if groups.iter().flatten().chain(&out).any(|k| k == key) {
                    return Err(at.error(format!("{key:?} is already in an alias group")));
                }
                out.push(key.to_owned());
            }
            groups.push(out);
        }
        Ok(if self.enabled.unwrap_or(true) {
            groups
        } else {
            Vec::new()
        })
    }
}

fn default_aliases() -> Vec<Vec<String>> {
    vec![DEFAULT_ALIAS_GROUP.iter().map(|k| k.to_string()).collect()]
}

impl Settings {
    /// Reads and checks settings text (`{}` and `null` mean every default).
    pub fn from_text(text: &str) -> Result<Settings, SettingsError> {
        let root = At::Root;
        let settings = read::<Option<Object<SettingsText>>>(text, root)?
            .unwrap_or_default()
            .0;
        let rules_at = root.field("rules");
        let rules: Vec<Rule> = settings
            .rules
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.0.build(rules_at.index(i)))
            .collect::<Result<_, _>>()?;
        for (i, rule) in rules.iter().enumerate() {
            if rules[..i].iter().any(|r| r.name == rule.name) {
                return Err(rules_at
                    .index(i)
                    .field("name")
                    .error(format!("duplicate rule name {:?}", rule.name)));
            }
        }
        let aliases = match &settings.aliases {
            Some(a) => a.build(root.field("aliases"))?,
            None => default_aliases(),
        };
        let restrictions_at = root.field("restrictions");
        let restrictions = settings
            .restrictions
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| r.build(restrictions_at.index(i)))
            .collect::<Result<_, _>>()?;
        Ok(Settings {
            rules,
            aliases,
            restrictions,
        })
    }
}
