//! Kubernetes label selectors (`matchLabels` and `matchExpressions`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::json::{members, JsonStr};
use crate::k8s_names;
use crate::settings::{At, Object, SettingsError};

#[derive(Debug, Clone)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// An object's labels, read from `metadata.labels`.
pub type Labels<'a> = Vec<(JsonStr<'a>, JsonStr<'a>)>;

/// Reads a `metadata.labels` value; absent or `null` is no labels.
pub fn parse_labels(raw: Option<&str>) -> Result<Labels<'_>, serde_json::Error> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    members(raw)?
        .into_iter()
        .map(|(k, v)| Ok((k, serde_json::from_str::<JsonStr>(v.get())?)))
        .collect()
}

/// A label selector as settings write it; see [`LabelSelectorSettings::build`].
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorSettings<'s> {
    /// Read as a `Value` map, as the JSONPath conditions' values are (code the module has anyway),
    /// so that its entries come in key order and the first bad one is the first reported.
    match_labels: Option<Map<String, Value>>,
    #[serde(borrow)]
    match_expressions: Option<Vec<Object<ExpressionSettings<'s>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpressionSettings<'s> {
    #[serde(borrow)]
    key: Option<JsonStr<'s>>,
    #[serde(borrow)]
    operator: Option<JsonStr<'s>>,
    #[serde(borrow)]
    values: Option<Vec<JsonStr<'s>>>,
}

impl LabelSelectorSettings<'_> {
    /// The selector, its requirements checked; `at` is where it is.
    pub fn build(&self, at: At<'_>) -> Result<LabelSelector, SettingsError> {
        let mut requirements = Vec::new();
        let labels_at = at.field("matchLabels");
        // Keys and values are checked as the API server checks labels: a selector that names a
        // key no label can have selects nothing, and `,`, `=`, `!`, parentheses or spaces would
        // change what the list query's text selects.
        for (key, value) in self.match_labels.iter().flatten() {
            let at = labels_at.field(key);
            let text = value
                .as_str()
                .ok_or_else(|| at.error("expected a string label value"))?;
            k8s_names::qualified_name(key).map_err(|e| at.error(format!("label key {e}")))?;
            k8s_names::label_value(text).map_err(|e| at.error(e))?;
            requirements.push(Requirement::In(key.clone(), vec![text.to_owned()]));
        }
        let expressions_at = at.field("matchExpressions");
        for (i, e) in self.match_expressions.iter().flatten().enumerate() {
            let at = expressions_at.index(i);
            let key = e
                .key
                .as_ref()
                .map(JsonStr::as_str)
                .filter(|k| !k.is_empty())
                .ok_or_else(|| at.field("key").error("required field is missing"))?
                .to_owned();
            k8s_names::qualified_name(&key)
                .map_err(|e| at.field("key").error(format!("label key {e}")))?;
            let operator = e.operator.as_ref().map_or("", JsonStr::as_str);
            let values: Option<Vec<String>> = e
                .values
                .as_ref()
                .map(|v| v.iter().map(|s| s.as_str().to_owned()).collect());
            let values_at = at.field("values");
            for (i, value) in values.iter().flatten().enumerate() {
                k8s_names::label_value(value).map_err(|e| values_at.index(i).error(e))?;
            }
            let requirement = match (operator, values) {
                ("In", Some(v)) if !v.is_empty() => Requirement::In(key, v),
                ("NotIn", Some(v)) if !v.is_empty() => Requirement::NotIn(key, v),
                ("In" | "NotIn", _) => {
                    return Err(values_at.error(format!("operator {operator:?} needs values")))
                }
                ("Exists" | "DoesNotExist", Some(v)) if !v.is_empty() => {
                    return Err(values_at.error(format!("operator {operator:?} takes no values")))
                }
                ("Exists", _) => Requirement::Exists(key),
                ("DoesNotExist", _) => Requirement::DoesNotExist(key),
                _ => {
                    let expected = "expected In, NotIn, Exists or DoesNotExist";
                    let message = format!("unknown operator {operator:?}; {expected}");
                    return Err(at.field("operator").error(message));
                }
            };
            requirements.push(requirement);
        }
        Ok(LabelSelector { requirements })
    }
}

impl LabelSelector {
    /// The selector in the query syntax of the Kubernetes list API (`labelSelector=`), the form
    /// a host asks the API server with: `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by
    /// commas. Every requirement must hold, as in [`LabelSelector::matches`].
    pub fn to_query(&self) -> String {
        let requirements: Vec<String> = self
            .requirements
            .iter()
            .map(|r| match r {
                Requirement::In(k, values) if values.len() == 1 => format!("{k}={}", values[0]),
                Requirement::In(k, values) => format!("{k} in ({})", values.join(",")),
                Requirement::NotIn(k, values) => format!("{k} notin ({})", values.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
            })
            .collect();
        requirements.join(",")
    }

    pub fn matches(&self, labels: &Labels<'_>) -> bool {
        let get = |key: &str| {
            labels
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| v.as_str())
        };
        self.requirements.iter().all(|r| match r {
            Requirement::In(k, values) => get(k).is_some_and(|v| values.iter().any(|x| x == v)),
            Requirement::NotIn(k, values) => get(k).is_none_or(|v| values.iter().all(|x| x != v)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::read;
    use serde_json::json;

    /// A selector at `s` of settings.
    fn from_settings(selector: &Value) -> Result<LabelSelector, SettingsError> {
        let text = selector.to_string();
        let at = At::Root;
        let at = at.field("s");
        read::<Object<LabelSelectorSettings>>(&text, at)?.build(at)
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
}
