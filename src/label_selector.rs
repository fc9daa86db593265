//! Kubernetes label selectors (`matchLabels` and `matchExpressions`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::json::{members, JsonStr};
use crate::k8s_names::{label_value, qualified_name, LabelKey, LabelValue};
use crate::settings::{string_enum, At, SettingsError, SettingsFields};

/// A label selector as Kubernetes writes it: every requirement must hold. Keys and values are
/// checked as the API server checks labels: a selector that names a key no label can have
/// selects nothing, and `,`, `=`, `!`, parentheses or spaces would change what the list query's
/// text selects.
///
/// # Examples
///
/// ```
/// use taintguard::label_selector::{parse_labels, LabelSelector};
/// use taintguard::settings::read;
///
/// let selector: LabelSelector = read(r#"{"matchLabels": {"pool": "gpu"},
///     "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}"#).unwrap();
/// assert_eq!(selector.to_query(), "pool=gpu,zone notin (a)");
/// let labels = parse_labels(Some(r#"{"pool": "gpu", "zone": "b"}"#)).unwrap();
/// assert!(selector.matches(&labels));
/// let labels = parse_labels(Some(r#"{"pool": "gpu", "zone": "a"}"#)).unwrap();
/// assert!(!selector.matches(&labels));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LabelSelector {
    /// Labels that must each have exactly this value.
    pub match_labels: BTreeMap<LabelKey, LabelValue>,
    /// Requirements on a label's presence and values.
    pub match_expressions: Vec<LabelExpression>,
}

/// One of `matchExpressions`.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LabelExpression {
    /// The label the expression is about.
    pub key: LabelKey,
    /// How it selects.
    pub operator: LabelOperator,
    /// The values `In` and `NotIn` name; empty for `Exists` and `DoesNotExist`
    /// ([`LabelSelector::check`]).
    #[serde(default)]
    pub values: Vec<LabelValue>,
}

string_enum! {
    /// How an expression's key and values select.
    pub enum LabelOperator {
        /// The label has one of the values.
        In = "In",
        /// The label is absent, or has none of the values.
        NotIn = "NotIn",
        /// The label is present, whatever its value.
        Exists = "Exists",
        /// The label is absent.
        DoesNotExist = "DoesNotExist",
    }
    unknown = "operator", expected = "In, NotIn, Exists or DoesNotExist";
}

/// An object's labels, read from `metadata.labels`.
pub type Labels<'a> = Vec<(JsonStr<'a>, JsonStr<'a>)>;

/// Reads a `metadata.labels` value; absent or `null` is no labels.
pub fn parse_labels(raw: Option<&str>) -> Result<Labels<'_>, serde_json::Error> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    if let Some(labels) = crate::json::flat::plain_string_members(raw) {
        return Ok(labels);
    }
    members(raw)?
        .into_iter()
        .map(|(k, v)| Ok((k, JsonStr::read(v)?)))
        .collect()
}

impl LabelSelector {
    /// What the expressions' types cannot check alone: `In` and `NotIn` need values, `Exists`
    /// and `DoesNotExist` take none.
    ///
    /// # Errors
    ///
    /// The first expression whose values do not fit its operator, at `at`.
    pub fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let expressions_at = at.field("matchExpressions");
        for (i, e) in self.match_expressions.iter().enumerate() {
            let operator = e.operator.as_str();
            let needs_values = matches!(e.operator, LabelOperator::In | LabelOperator::NotIn);
            if needs_values == e.values.is_empty() {
                let message = if needs_values {
                    format!("operator {operator:?} needs values")
                } else {
                    format!("operator {operator:?} takes no values")
                };
                return Err(expressions_at.index(i).field("values").error(message));
            }
        }
        Ok(())
    }

    /// The selector in the query syntax of the Kubernetes list API (`labelSelector=`), the form
    /// a host asks the API server with: `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by
    /// commas. Every requirement must hold, as in [`LabelSelector::matches`].
    pub fn to_query(&self) -> String {
        let labels = self
            .match_labels
            .iter()
            .map(|(k, v)| format!("{}={}", k.as_str(), v.as_str()));
        let expressions = self.match_expressions.iter().map(|e| {
            let key = e.key.as_str();
            let values = || {
                let values: Vec<&str> = e.values.iter().map(|v| v.as_str()).collect();
                values.join(",")
            };
            match e.operator {
                LabelOperator::In if e.values.len() == 1 => {
                    format!("{key}={}", e.values[0].as_str())
                }
                LabelOperator::In => format!("{key} in ({})", values()),
                LabelOperator::NotIn => format!("{key} notin ({})", values()),
                LabelOperator::Exists => key.to_owned(),
                LabelOperator::DoesNotExist => format!("!{key}"),
            }
        });
        labels.chain(expressions).collect::<Vec<_>>().join(",")
    }

    /// Whether `labels` meet every requirement.
    pub fn matches(&self, labels: &Labels<'_>) -> bool {
        let get = |key: &str| label(labels, key);
        let has = |values: &[LabelValue], v: &str| values.iter().any(|x| x.as_str() == v);
        self.match_labels
            .iter()
            .all(|(k, v)| get(k.as_str()) == Some(v.as_str()))
            && self.match_expressions.iter().all(|e| {
                let found = get(e.key.as_str());
                match e.operator {
                    LabelOperator::In => found.is_some_and(|v| has(&e.values, v)),
                    LabelOperator::NotIn => found.is_none_or(|v| !has(&e.values, v)),
                    LabelOperator::Exists => found.is_some(),
                    LabelOperator::DoesNotExist => found.is_none(),
                }
            })
    }
}

/// A selector in the list API's query syntax (what [`LabelSelector::to_query`] writes: `k=v`,
/// `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by commas), read back by a
/// host that selects objects itself instead of asking the API server: the inventory a
/// Gatekeeper-style engine passes as data, a test suite's nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorQuery<'q>(Vec<Requirement<'q>>);

/// One requirement of a [`SelectorQuery`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement<'q> {
    In(&'q str, Vec<&'q str>),
    NotIn(&'q str, Vec<&'q str>),
    Exists(&'q str),
    DoesNotExist(&'q str),
}

impl<'q> SelectorQuery<'q> {
    /// Reads `text`; empty selects everything.
    ///
    /// # Errors
    ///
    /// A set without its parentheses, named with the selector.
    pub fn parse(text: &'q str) -> Result<SelectorQuery<'q>, String> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0u32, 0);
        for (i, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&text[start..]);
        let set = |values: &'q str| -> Result<Vec<&'q str>, String> {
            let inner = values
                .trim()
                .strip_prefix('(')
                .and_then(|v| v.strip_suffix(')'))
                .ok_or_else(|| format!("label selector {text:?}: a set needs parentheses"))?;
            Ok(inner.split(',').map(str::trim).collect())
        };
        let requirement = |part: &'q str| -> Result<Requirement<'q>, String> {
            Ok(if let Some((key, value)) = part.split_once("!=") {
                Requirement::NotIn(key.trim(), vec![value.trim()])
            } else if let Some((key, value)) = part.split_once('=') {
                let value = value.strip_prefix('=').unwrap_or(value);
                Requirement::In(key.trim(), vec![value.trim()])
            } else if let Some((key, values)) = part.split_once(" notin ") {
                Requirement::NotIn(key.trim(), set(values)?)
            } else if let Some((key, values)) = part.split_once(" in ") {
                Requirement::In(key.trim(), set(values)?)
            } else if let Some(key) = part.strip_prefix('!') {
                Requirement::DoesNotExist(key.trim())
            } else {
                Requirement::Exists(part)
            })
        };
        let requirements = (parts.into_iter().map(str::trim))
            .filter(|part| !part.is_empty())
            .map(requirement)
            .collect::<Result<_, _>>()?;
        Ok(SelectorQuery(requirements))
    }

    /// Checks every key as a label key and every value as a label value, as the API server
    /// checks a list's selector: [`SelectorQuery::parse`] reads what it is given (`team a`
    /// reads as "has the label `team a`"), so settings that hold a selector's query text check
    /// it here, where a bad one is named, not on every request, where the list would fail.
    ///
    /// # Errors
    ///
    /// The first key or value no label can have, quoted.
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::label_selector::SelectorQuery;
    ///
    /// assert!(SelectorQuery::parse("team=a,tier in (web, db),!spot").unwrap().check().is_ok());
    /// let error = SelectorQuery::parse("team a").unwrap().check().unwrap_err();
    /// assert!(error.starts_with(r#""team a" is not a qualified name"#));
    /// ```
    pub fn check(&self) -> Result<(), String> {
        for requirement in &self.0 {
            let (key, values) = match requirement {
                Requirement::In(key, values) | Requirement::NotIn(key, values) => {
                    (key, &values[..])
                }
                Requirement::Exists(key) | Requirement::DoesNotExist(key) => (key, &[][..]),
            };
            qualified_name(key)?;
            for value in values {
                label_value(value)?;
            }
        }
        Ok(())
    }

    /// Whether an object whose label `key` has the value `get(key)` is selected.
    pub fn matches_with<'v>(&self, get: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.0.iter().all(|requirement| match requirement {
            Requirement::In(key, values) => get(key).is_some_and(|v| values.contains(&v)),
            Requirement::NotIn(key, values) => get(key).is_none_or(|v| !values.contains(&v)),
            Requirement::Exists(key) => get(key).is_some(),
            Requirement::DoesNotExist(key) => get(key).is_none(),
        })
    }

    /// Whether an object with `labels` is selected.
    pub fn matches(&self, labels: &Labels<'_>) -> bool {
        self.matches_with(|key| label(labels, key))
    }
}

/// The value of the label `key` among `labels`.
fn label<'l>(labels: &'l Labels<'_>, key: &str) -> Option<&'l str> {
    (labels.iter())
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A selector at `s` of settings.
    fn from_settings(selector: &serde_json::Value) -> Result<LabelSelector, SettingsError> {
        #[derive(Default, SettingsFields, Serialize)]
        struct Holder {
            s: LabelSelector,
        }
        impl crate::settings::PolicySettings for Holder {
            fn check(&self, at: crate::settings::At<'_>) -> Result<(), SettingsError> {
                self.s.check(at.field("s"))
            }
        }
        crate::settings::parse::<Holder>(&json!({ "s": selector }).to_string()).map(|h| h.s)
    }

    #[test]
    fn selector_table() {
        let labels = parse_labels(Some(
            r#"{"app":"web","tier":"front","microk8s.hostpath.io/managed-by":"n1"}"#,
        ))
        .unwrap();
        let cases = [
            (json!({}), true),
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchLabels": {"app": "db"}}), false),
            (
                json!({"matchExpressions": [{"key": "microk8s.hostpath.io/managed-by", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["back", "front"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": ["x"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
                false,
            ),
        ];
        for (selector, want) in cases {
            let s = from_settings(&selector).unwrap();
            assert_eq!(s.matches(&labels), want, "{selector}");
        }
    }

    /// The query form says what `matches` judges.
    #[test]
    fn query_form() {
        let cases = [
            (json!({}), ""),
            (json!({"matchLabels": {"pool": "gpu"}}), "pool=gpu"),
            (
                json!({"matchLabels": {"a": "1"}, "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["x", "y"]},
                    {"key": "tier", "operator": "NotIn", "values": ["spot"]},
                    {"key": "node-role.kubernetes.io/worker", "operator": "Exists"},
                    {"key": "excluded", "operator": "DoesNotExist"}]}),
                "a=1,zone in (x,y),tier notin (spot),node-role.kubernetes.io/worker,!excluded",
            ),
        ];
        for (selector, want) in cases {
            assert_eq!(
                from_settings(&selector).unwrap().to_query(),
                want,
                "{selector}"
            );
        }
    }

    #[test]
    fn bad_selectors() {
        let cases = [
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Has"}]}),
                "`s.matchExpressions[0].operator`",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
                "`s.matchExpressions[0].values`: operator \"In\" needs values",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
                "takes no values",
            ),
            (json!({"matchLabels": {"a": 1}}), "`s.matchLabels.a`"),
            (json!({"matchLabel": {}}), "unknown field"),
            // Text that would change what the list query selects (`a,b=c` selects two labels).
            (
                json!({"matchLabels": {"a,b": "c"}}),
                "`s.matchLabels.a,b`: label key \"a,b\" is not a qualified name",
            ),
            (
                json!({"matchLabels": {"a": "b,c=d"}}),
                "`s.matchLabels.a`: \"b,c=d\" is not a label value",
            ),
            (
                json!({"matchExpressions": [{"key": "a b", "operator": "Exists"}]}),
                "`s.matchExpressions[0].key`: label key \"a b\" is not a qualified name",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y)"]}]}),
                "`s.matchExpressions[0].values[1]`: \"y)\" is not a label value",
            ),
            (
                json!({"matchExpressions": [{"key": "!a", "operator": "DoesNotExist"}]}),
                "label key \"!a\"",
            ),
        ];
        for (selector, want) in cases {
            let err = from_settings(&selector).unwrap_err().to_string();
            assert!(err.contains(want), "{want:?} not in {err}");
        }
    }

    /// A selector's query selects what the selector selects, and the API's other spellings
    /// (`==`, `!=`, spaces) read as the API server reads them.
    #[test]
    fn queries_select_as_the_api_server_does() {
        let labels: Labels<'_> = vec![
            (JsonStr::borrowed("pool"), JsonStr::borrowed("gpu")),
            (JsonStr::borrowed("zone"), JsonStr::borrowed("a")),
        ];
        let cases = [
            ("", true),
            ("pool=gpu", true),
            ("pool==gpu", true),
            ("pool!=gpu", false),
            ("pool in (cpu,gpu)", true),
            ("pool notin (cpu, gpu)", false),
            ("zone,pool=gpu", true),
            ("!zone", false),
            ("missing", false),
            ("!missing", true),
            ("missing notin (x)", true),
            ("pool=gpu,zone in (b)", false),
        ];
        for (query, want) in cases {
            let parsed = SelectorQuery::parse(query).unwrap();
            assert_eq!(parsed.matches(&labels), want, "{query:?}: {parsed:?}");
        }
        assert!(SelectorQuery::parse("pool in gpu").is_err());
        let selectors = [
            json!({"matchLabels": {"pool": "gpu"}}),
            json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}),
            json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}),
            json!({"matchExpressions": [{"key": "pool", "operator": "Exists"},
                                        {"key": "spot", "operator": "DoesNotExist"}]}),
            json!({"matchLabels": {"pool": "cpu"}, "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}),
        ];
        for selector in selectors {
            let selector = from_settings(&selector).unwrap();
            let query = selector.to_query();
            let parsed = SelectorQuery::parse(&query).unwrap();
            assert_eq!(
                parsed.matches(&labels),
                selector.matches(&labels),
                "{query}"
            );
        }
    }
}
