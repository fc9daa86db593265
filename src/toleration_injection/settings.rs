//! Settings of the toleration-injection policy; the policy README is the users' reference.

use super::conditions::Condition;
use super::workload::{Kind, KINDS};
use crate::glob::Glob;
use crate::label_selector::LabelSelector;
use crate::principal::PrincipalList;
use crate::settings::{taint_key_glob, Fields, Json, SettingsError};
use crate::taint::{selectors, TaintSelector};
use crate::toleration::Toleration;

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

fn read_match(mut f: Fields<'_>) -> Result<Match, SettingsError> {
    let kinds = f.strings_as("kinds", kind)?.unwrap_or_default();
    let namespaces = f.globs("namespaces", namespace_glob)?.unwrap_or_default();
    let principals = match f.object("principals")? {
        Some(p) => Some(PrincipalList::from_settings(p, &PrincipalList::default())?),
        None => None,
    };
    let selector_path = f.path_of("labelSelector");
    let labels = match f.get("labelSelector") {
        Some(v) => Some(LabelSelector::from_settings(selector_path, v)?),
        None => None,
    };
    let names = f.globs("names", namespace_glob)?.unwrap_or_default();
    let conditions = f
        .array("jsonPath")?
        .unwrap_or_default()
        .into_iter()
        .map(|(path, v)| Condition::from_settings(path, v))
        .collect::<Result<_, _>>()?;
    f.finish()?;
    Ok(Match {
        kinds,
        namespaces,
        principals,
        labels,
        names,
        conditions,
    })
}

fn read_rule(path: String, value: &Json<'_>) -> Result<Rule, SettingsError> {
    let mut f = Fields::new(path, value)?;
    let name_path = f.path_of("name");
    let name = f
        .string("name")?
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| SettingsError::new(name_path, "every rule needs a name"))?
        .to_owned();
    let matcher = match f.object("match")? {
        Some(m) => read_match(m)?,
        None => Match::default(),
    };
    let tolerations_path = f.path_of("tolerations");
    let tolerations: Vec<Toleration<'static>> = f
        .array("tolerations")?
        .unwrap_or_default()
        .into_iter()
        .map(|(path, v)| Toleration::from_settings(path, v))
        .collect::<Result<_, _>>()?;
    f.finish()?;
    if tolerations.is_empty() {
        return Err(SettingsError::new(
            tolerations_path,
            format!("rule {name:?} adds no tolerations"),
        ));
    }
    Ok(Rule {
        name,
        matcher,
        tolerations,
    })
}

fn read_restriction(path: String, value: &Json<'_>) -> Result<Restriction, SettingsError> {
    let mut f = Fields::new(path, value)?;
    let name_path = f.path_of("name");
    let name = f
        .string("name")?
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| SettingsError::new(name_path, "every restriction needs a name"))?
        .to_owned();
    let taints_path = f.path_of("taints");
    let taints = selectors(&mut f, "taints")?.unwrap_or_default();
    if taints.is_empty() {
        return Err(SettingsError::new(
            taints_path,
            "a restriction needs at least one taint selector",
        ));
    }
    let allowed_namespaces = f
        .globs("allowedNamespaces", namespace_glob)?
        .unwrap_or_default();
    let allowed_principals = match f.object("allowedPrincipals")? {
        Some(p) => PrincipalList::from_settings(p, &PrincipalList::default())?,
        None => PrincipalList::default(),
    };
    f.finish()?;
    Ok(Restriction {
        name,
        taints,
        allowed_namespaces,
        allowed_principals,
    })
}

fn read_aliases(f: &mut Fields<'_>) -> Result<Vec<Vec<String>>, SettingsError> {
    let default = || vec![DEFAULT_ALIAS_GROUP.iter().map(|k| k.to_string()).collect()];
    let Some(mut a) = f.object("aliases")? else {
        return Ok(default());
    };
    let enabled = a.bool("enabled")?.unwrap_or(true);
    let groups = match a.array("groups")? {
        None => default(),
        Some(items) => {
            let mut groups: Vec<Vec<String>> = Vec::new();
            for (path, group) in items {
                let Json::Array(keys) = group else {
                    return Err(SettingsError::new(path, "expected a list of taint keys"));
                };
                if keys.len() < 2 {
                    return Err(SettingsError::new(
                        path,
                        "an alias group needs at least two keys",
                    ));
                }
                let mut out = Vec::new();
                for (i, key) in keys.iter().enumerate() {
                    let at = format!("{path}[{i}]");
                    let key = key
                        .as_str()
                        .ok_or_else(|| SettingsError::new(at.clone(), "expected a taint key"))?;
                    if key.is_empty() || key.contains(['*', '?', '[', '\\']) {
                        return Err(SettingsError::new(
                            at,
                            "alias keys are plain taint keys, not globs",
                        ));
                    }
                    taint_key_glob(key).map_err(|m| SettingsError::new(at.clone(), m))?;
                    if groups.iter().flatten().chain(&out).any(|k| k == key) {
                        return Err(SettingsError::new(
                            at,
                            format!("{key:?} is already in an alias group"),
                        ));
                    }
                    out.push(key.to_owned());
                }
                groups.push(out);
            }
            groups
        }
    };
    a.finish()?;
    Ok(if enabled { groups } else { Vec::new() })
}

impl Settings {
    pub fn from_value(value: &Json<'_>) -> Result<Settings, SettingsError> {
        let mut f = Fields::new(String::new(), value)?;
        let rules: Vec<Rule> = f
            .array("rules")?
            .unwrap_or_default()
            .into_iter()
            .map(|(path, v)| read_rule(path, v))
            .collect::<Result<_, _>>()?;
        for (i, rule) in rules.iter().enumerate() {
            if rules[..i].iter().any(|r| r.name == rule.name) {
                return Err(SettingsError::new(
                    format!("rules[{i}].name"),
                    format!("duplicate rule name {:?}", rule.name),
                ));
            }
        }
        let aliases = read_aliases(&mut f)?;
        let restrictions = f
            .array("restrictions")?
            .unwrap_or_default()
            .into_iter()
            .map(|(path, v)| read_restriction(path, v))
            .collect::<Result<_, _>>()?;
        f.finish()?;
        Ok(Settings {
            rules,
            aliases,
            restrictions,
        })
    }
}
