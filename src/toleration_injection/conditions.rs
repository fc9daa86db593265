//! JSONPath conditions over the admitted object, for what the other matchers cannot say
//! (priorityClassName, nodeSelector, owner references).

use jsonpath_rust::JsonPath;
use serde_json::Value;

use crate::glob::Glob;
use crate::settings::{Fields, SettingsError};

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
    path: String,
    test: Test,
}

impl Condition {
    pub fn from_settings(path: String, value: &Value) -> Result<Condition, SettingsError> {
        let mut f = Fields::new(path, value)?;
        let path_path = f.path_of("path");
        let json_path = f
            .string("path")?
            .ok_or_else(|| SettingsError::new(path_path.clone(), "required field is missing"))?
            .to_owned();
        jsonpath_rust::parser::parse_json_path(&json_path).map_err(|e| {
            SettingsError::new(path_path, format!("invalid JSONPath {json_path:?}: {e}"))
        })?;
        let mut tests = Vec::new();
        if let Some(v) = f.get("equals") {
            tests.push(Test::Equals(v.clone()));
        }
        if let Some(values) = f.array("in")? {
            tests.push(Test::In(
                values.into_iter().map(|(_, v)| v.clone()).collect(),
            ));
        }
        let matches_path = f.path_of("matches");
        if let Some(glob) = f.string("matches")? {
            let glob =
                Glob::new(glob).map_err(|e| SettingsError::new(matches_path, e.to_string()))?;
            tests.push(Test::Matches(glob));
        }
        if let Some(exists) = f.bool("exists")? {
            tests.push(Test::Exists(exists));
        }
        let where_ = f.path_of("");
        f.finish()?;
        if tests.len() > 1 {
            return Err(SettingsError::new(
                where_.trim_end_matches('.'),
                "give at most one of `equals`, `in`, `matches`, `exists`",
            ));
        }
        Ok(Condition {
            path: json_path,
            test: tests.pop().unwrap_or(Test::Exists(true)),
        })
    }

    pub fn holds(&self, object: &Value) -> bool {
        // The path was parsed when settings were read; a query error here selects nothing.
        let found = object.query(&self.path).unwrap_or_default();
        match &self.test {
            Test::Exists(want) => found.is_empty() != *want,
            Test::Equals(v) => found.contains(&v),
            Test::In(values) => found.iter().any(|f| values.contains(f)),
            Test::Matches(glob) => found
                .iter()
                .any(|f| f.as_str().is_some_and(|s| glob.matches(s))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn condition_table() {
        let object = json!({"spec": {"template": {"spec": {"priorityClassName": "system-node-critical",
            "nodeSelector": {"kubernetes.io/os": "linux"}}}},
            "metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "flannel"}]}});
        let cases = [
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "equals": "system-node-critical"}),
                true,
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "in": ["a", "system-node-critical"]}),
                true,
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "matches": "system-*"}),
                true,
            ),
            (
                json!({"path": "$.spec.template.spec.nodeSelector['kubernetes.io/os']", "equals": "linux"}),
                true,
            ),
            (
                json!({"path": "$.metadata.ownerReferences[*].kind", "equals": "DaemonSet"}),
                true,
            ),
            (
                json!({"path": "$.metadata.ownerReferences[?@.kind == 'Job']"}),
                false,
            ),
            (json!({"path": "$.spec.missing", "exists": false}), true),
            (json!({"path": "$.spec.missing"}), false),
        ];
        for (condition, want) in cases {
            let c = Condition::from_settings("c".into(), &condition).unwrap();
            assert_eq!(c.holds(&object), want, "{condition}");
        }
    }

    #[test]
    fn bad_conditions() {
        let cases = [
            (json!({"path": "$.[["}), "`c.path`: invalid JSONPath"),
            (json!({"equals": 1}), "`c.path`: required field is missing"),
            (
                json!({"path": "$.a", "equals": 1, "exists": true}),
                "at most one",
            ),
            (json!({"path": "$.a", "matches": "[x"}), "`c.matches`"),
        ];
        for (condition, want) in cases {
            let err = Condition::from_settings("c".into(), &condition)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{want:?} not in {err}");
        }
    }
}
