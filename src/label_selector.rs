//! Kubernetes label selectors (`matchLabels` and `matchExpressions`).

use crate::json::{members, JsonStr};
use crate::settings::{Fields, Json, SettingsError};

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

impl LabelSelector {
    pub fn from_settings(path: String, value: &Json<'_>) -> Result<LabelSelector, SettingsError> {
        let mut f = Fields::new(path, value)?;
        let mut requirements = Vec::new();
        if let Some(labels) = f.object("matchLabels")? {
            for (path, key, v) in labels.into_entries() {
                let text = v
                    .as_str()
                    .ok_or_else(|| SettingsError::new(path, "expected a string label value"))?;
                requirements.push(Requirement::In(key.to_owned(), vec![text.to_owned()]));
            }
        }
        for (path, expression) in f.array("matchExpressions")?.unwrap_or_default() {
            let mut e = Fields::new(path, expression)?;
            let key_path = e.path_of("key");
            let key = e
                .string("key")?
                .filter(|k| !k.is_empty())
                .ok_or_else(|| SettingsError::new(key_path, "required field is missing"))?
                .to_owned();
            let operator_path = e.path_of("operator");
            let operator = e.string("operator")?.unwrap_or("");
            let values_path = e.path_of("values");
            let values = e.strings_as("values", |s| Ok(s.to_owned()))?;
            e.finish()?;
            let requirement = match (operator, values) {
                ("In", Some(v)) if !v.is_empty() => Requirement::In(key, v),
                ("NotIn", Some(v)) if !v.is_empty() => Requirement::NotIn(key, v),
                ("In" | "NotIn", _) => {
                    return Err(SettingsError::new(
                        values_path,
                        format!("operator {operator:?} needs values"),
                    ))
                }
                ("Exists" | "DoesNotExist", Some(v)) if !v.is_empty() => {
                    return Err(SettingsError::new(
                        values_path,
                        format!("operator {operator:?} takes no values"),
                    ))
                }
                ("Exists", _) => Requirement::Exists(key),
                ("DoesNotExist", _) => Requirement::DoesNotExist(key),
                _ => {
                    let expected = "expected In, NotIn, Exists or DoesNotExist";
                    let message = format!("unknown operator {operator:?}; {expected}");
                    return Err(SettingsError::new(operator_path, message));
                }
            };
            requirements.push(requirement);
        }
        f.finish()?;
        Ok(LabelSelector { requirements })
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
    use serde_json::json;

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
            let s = LabelSelector::from_settings("s".into(), &Json::from_value(&selector)).unwrap();
            assert_eq!(s.matches(&labels), want, "{selector}");
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
        ];
        for (selector, want) in cases {
            let err = LabelSelector::from_settings("s".into(), &Json::from_value(&selector))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{want:?} not in {err}");
        }
    }
}
