//! JSONPath conditions over the admitted object, for what the other matchers cannot say
//! (priorityClassName, nodeSelector, owner references).
//!
//! A condition selects from the object parsed into a `serde_json::Value` ([`taintguard_jsonpath`]),
//! which the caller parses once per request, and only when a rule that matches otherwise has
//! conditions. An object that does not parse (nesting past serde_json's recursion limit, a string
//! or number a `Value` cannot hold) is the caller's to reject, rather than read as `null`.

use serde::Deserialize;
use serde_json::Value;

use taintguard_jsonpath::JsonPath;

use crate::glob::Glob;
use crate::json::JsonStr;
use crate::settings::{At, SettingsError};

#[derive(Debug, Clone)]
enum Test {
    Exists(bool),
    Equals(Value),
    In(Vec<Value>),
    Matches(Glob),
}

/// `{"path": "$.spec.priorityClassName", "equals": "system-node-critical"}`; the test is one of
/// `equals`, `in`, `matches` (a glob over string results) or `exists` (default `true`). A test
/// holds when any value the path selects passes it.
#[derive(Debug, Clone)]
pub struct Condition {
    path: JsonPath,
    test: Test,
}

/// A condition as settings write it; see [`ConditionSettings::build`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionSettings<'s> {
    #[serde(borrow)]
    path: Option<JsonStr<'s>>,
    /// `null` is absent, as for every settings field: `"equals": null` is `exists: true`.
    equals: Option<Value>,
    #[serde(rename = "in")]
    in_: Option<Vec<Value>>,
    #[serde(borrow)]
    matches: Option<JsonStr<'s>>,
    exists: Option<bool>,
}

impl ConditionSettings<'_> {
    /// The condition, its JSONPath parsed; `at` is where it is.
    pub fn build(self, at: At<'_>) -> Result<Condition, SettingsError> {
        let path_at = at.field("path");
        let text = self
            .path
            .ok_or_else(|| path_at.error("required field is missing"))?
            .0
            .into_owned();
        let json_path = JsonPath::parse(&text).map_err(|e| {
            if e.unsupported {
                path_at.error(e.message)
            } else {
                path_at.error(format!("invalid JSONPath {text:?}: {e}"))
            }
        })?;
        let mut tests = Vec::new();
        if let Some(v) = self.equals {
            tests.push(Test::Equals(v));
        }
        if let Some(values) = self.in_ {
            tests.push(Test::In(values));
        }
        if let Some(glob) = self.matches {
            let glob =
                Glob::new(glob.as_str()).map_err(|e| at.field("matches").error(e.to_string()))?;
            tests.push(Test::Matches(glob));
        }
        if let Some(exists) = self.exists {
            tests.push(Test::Exists(exists));
        }
        if tests.len() > 1 {
            return Err(at.error("give at most one of `equals`, `in`, `matches`, `exists`"));
        }
        Ok(Condition {
            path: json_path,
            test: tests.pop().unwrap_or(Test::Exists(true)),
        })
    }
}

impl Condition {
    /// Whether the condition holds on `object`, the admitted object.
    pub fn holds(&self, object: &Value) -> bool {
        let found = self.path.select(object);
        match &self.test {
            Test::Exists(want) => found.is_empty() != *want,
            Test::Equals(v) => found.contains(&v),
            Test::In(values) => found.iter().any(|n| values.contains(n)),
            Test::Matches(glob) => found
                .iter()
                .any(|n| n.as_str().is_some_and(|s| glob.matches(s))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{read, Object};
    use serde_json::json;

    /// A condition at `c` of settings.
    fn from_settings(condition: &Value) -> Result<Condition, SettingsError> {
        let text = condition.to_string();
        let at = At::Root;
        let at = at.field("c");
        read::<Object<ConditionSettings>>(&text, at)?.0.build(at)
    }

    #[test]
    fn condition_table() {
        let object = json!({"spec": {"template": {"spec": {"priorityClassName": "system-node-critical",
            "nodeSelector": {"kubernetes.io/os": "linux"}, "replicas": 1, "ok": true, "nil": null}}},
            "metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "flannel"}]}});
        let twice: Value = serde_json::from_str(r#"{"b": "fine", "b": "last"}"#).unwrap();
        let cases: Vec<(Value, &Value, bool)> = vec![
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "equals": "system-node-critical"}),
                &object,
                true,
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "in": ["a", "system-node-critical"]}),
                &object,
                true,
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "in": ["a", 1]}),
                &object,
                false,
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "matches": "system-*"}),
                &object,
                true,
            ),
            (
                json!({"path": "$..replicas", "matches": "*"}),
                &object,
                false,
            ),
            (
                json!({"path": "$.spec.template.spec.nodeSelector['kubernetes.io/os']", "equals": "linux"}),
                &object,
                true,
            ),
            (
                json!({"path": "$.spec.template.spec.nodeSelector", "equals": {"kubernetes.io/os": "linux"}}),
                &object,
                true,
            ),
            (json!({"path": "$..replicas", "equals": 1}), &object, true),
            (
                json!({"path": "$..replicas", "equals": 1.0}),
                &object,
                false,
            ),
            (json!({"path": "$..ok", "equals": true}), &object, true),
            (json!({"path": "$..nil", "equals": null}), &object, true),
            (json!({"path": "$..nil", "exists": true}), &object, true),
            (
                json!({"path": "$.metadata.ownerReferences[*].kind", "equals": "DaemonSet"}),
                &object,
                true,
            ),
            (
                json!({"path": "$.metadata.ownerReferences[?@.kind == 'Job']"}),
                &object,
                false,
            ),
            (
                json!({"path": "$.metadata.ownerReferences[?@.kind == 'DaemonSet'].name", "equals": "flannel"}),
                &object,
                true,
            ),
            (
                json!({"path": "$.spec.missing", "exists": false}),
                &object,
                true,
            ),
            (json!({"path": "$.spec.missing"}), &object, false),
            // The last member of a name is the one a `Value` keeps.
            (json!({"path": "$.b", "equals": "last"}), &twice, true),
            (json!({"path": "$.b", "equals": "fine"}), &twice, false),
        ];
        for (condition, object, want) in cases {
            let c = from_settings(&condition).unwrap();
            assert_eq!(c.holds(object), want, "{condition}");
        }
    }

    #[test]
    fn bad_conditions() {
        let cases = [
            (json!({"path": "$.[["}), "`c.path`: invalid JSONPath"),
            (
                json!({"path": "$[?match(@.a, 'x.*')]"}),
                "`c.path`: JSONPath function match() is not supported; use the condition's `matches` glob",
            ),
            (json!({"equals": 1}), "`c.path`: required field is missing"),
            (
                json!({"path": "$.a", "equals": 1, "exists": true}),
                "at most one",
            ),
            (json!({"path": "$.a", "matches": "[x"}), "`c.matches`"),
        ];
        for (condition, want) in cases {
            let err = from_settings(&condition).unwrap_err().to_string();
            assert!(err.contains(want), "{want:?} not in {err}");
        }
    }
}
