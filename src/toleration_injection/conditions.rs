//! JSONPath conditions over the admitted object, for what the other matchers cannot say
//! (priorityClassName, nodeSelector, owner references).
//!
//! A condition reads the object's text in place ([`crate::jsonpath`]): only what its path leads
//! to is read, and only the values it compares are decoded. What it reads must be readable as a
//! `serde_json::Value` would need it (nesting within serde_json's recursion limit, strings and
//! numbers a `Value` can hold); otherwise the condition fails with an error, which rejects the
//! request, rather than reading `null`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::glob::Glob;
use crate::jsonpath::{self, JsonPath, Node};
use crate::settings::{settings_object, At, SettingsError};

/// What a condition tests of the values its path selects.
#[derive(Debug, Clone)]
enum Test<'c> {
    Exists(bool),
    Equals(&'c Value),
    In(&'c [Value]),
    Matches(&'c Glob),
}

/// `{"path": "$.spec.priorityClassName", "equals": "system-node-critical"}`; the test is one of
/// `equals`, `in`, `matches` (a glob over string results) or `exists` (default `true`). A test
/// holds when any value the path selects passes it. `null` is absent, as for every optional
/// settings field: `"equals": null` is `exists: true`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Condition {
    pub path: ConditionPath,
    #[serde(default)]
    pub equals: Option<Value>,
    #[serde(default, rename = "in")]
    pub in_: Option<Vec<Value>>,
    #[serde(default)]
    pub matches: Option<Glob>,
    #[serde(default)]
    pub exists: Option<bool>,
}

settings_object!(Condition);

/// A JSONPath as settings write it, parsed.
#[derive(Debug, Clone)]
pub struct ConditionPath {
    text: String,
    path: JsonPath,
}

impl PartialEq for ConditionPath {
    fn eq(&self, other: &ConditionPath) -> bool {
        self.text == other.text
    }
}

impl TryFrom<String> for ConditionPath {
    type Error = String;
    fn try_from(text: String) -> Result<ConditionPath, String> {
        match JsonPath::parse(&text) {
            Ok(path) => Ok(ConditionPath { text, path }),
            Err(e) if e.unsupported => Err(e.message),
            Err(e) => Err(format!("invalid JSONPath {text:?}: {e}")),
        }
    }
}

crate::settings::from_string!(ConditionPath, into = String);

impl From<ConditionPath> for String {
    fn from(path: ConditionPath) -> String {
        path.text
    }
}

impl Condition {
    /// At most one test; `at` is where the condition is.
    ///
    /// # Errors
    ///
    /// More than one test given.
    pub fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let tests = [
            self.equals.is_some(),
            self.in_.is_some(),
            self.matches.is_some(),
            self.exists.is_some(),
        ];
        if tests.into_iter().filter(|given| *given).count() > 1 {
            return Err(at.error("give at most one of `equals`, `in`, `matches`, `exists`"));
        }
        Ok(())
    }

    fn test(&self) -> Test<'_> {
        match (&self.equals, &self.in_, &self.matches, self.exists) {
            (Some(v), ..) => Test::Equals(v),
            (_, Some(values), ..) => Test::In(values),
            (_, _, Some(glob), _) => Test::Matches(glob),
            (.., exists) => Test::Exists(exists.unwrap_or(true)),
        }
    }
}

impl Condition {
    /// Whether the condition holds on the object whose text is `object`; an error says what in
    /// the object the path could not read.
    pub fn holds(&self, object: &str) -> Result<bool, String> {
        let text = &self.path.text;
        let found = self
            .path
            .path
            .select(object)
            .map_err(|e| format!("`{text}`: {e}"))?;
        let decode =
            |node: Node<'_>| jsonpath::value(node, object).map_err(|e| format!("`{text}`: {e}"));
        let any = |pass: &dyn Fn(Node<'_>) -> Result<bool, String>| {
            for node in &found {
                if pass(*node)? {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        match self.test() {
            Test::Exists(want) => Ok(found.is_empty() != want),
            Test::Equals(v) => any(&|n| Ok(same_kind(n, v) && decode(n)? == *v)),
            Test::In(values) => any(&|n| {
                if !values.iter().any(|v| same_kind(n, v)) {
                    return Ok(false);
                }
                let found = decode(n)?;
                Ok(values.contains(&found))
            }),
            Test::Matches(glob) => any(&|n| {
                let s = jsonpath::string(n, object).map_err(|e| format!("`{text}`: {e}"))?;
                Ok(s.is_some_and(|s| glob.matches(&s)))
            }),
        }
    }
}

/// Whether the node's text could be `v`, judged by its first byte, so that values of another
/// kind are not decoded.
fn same_kind(node: Node<'_>, v: &Value) -> bool {
    let first = node.text.as_bytes().first().copied().unwrap_or_default();
    match v {
        Value::Null => first == b'n',
        Value::Bool(true) => first == b't',
        Value::Bool(false) => first == b'f',
        Value::Number(_) => first == b'-' || first.is_ascii_digit(),
        Value::String(_) => first == b'"',
        Value::Array(_) => first == b'[',
        Value::Object(_) => first == b'{',
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A condition at `c` of settings.
    fn from_settings(condition: &Value) -> Result<Condition, SettingsError> {
        #[derive(Default, Deserialize, Serialize)]
        struct Holder {
            c: Option<Condition>,
        }
        impl crate::settings::PolicySettings for Holder {
            fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
                self.c.as_ref().map_or(Ok(()), |c| c.check(at.field("c")))
            }
        }
        crate::settings::parse::<Holder>(&json!({ "c": condition }).to_string())
            .map(|h| h.c.expect("a condition"))
    }

    #[test]
    fn condition_table() {
        let object = json!({"spec": {"template": {"spec": {"priorityClassName": "system-node-critical",
            "nodeSelector": {"kubernetes.io/os": "linux"}, "replicas": 1, "ok": true, "nil": null}}},
            "metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "flannel"}]}})
        .to_string();
        let deep = format!(
            r#"{{"spec": {{"x": "y", "deep": {}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let odd = r#"{"a": "\ud800", "n": 1e400, "b": "fine", "b": "last"}"#;
        let cases: Vec<(Value, &str, Result<bool, &str>)> = vec![
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "equals": "system-node-critical"}),
                &object,
                Ok(true),
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "in": ["a", "system-node-critical"]}),
                &object,
                Ok(true),
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "in": ["a", 1]}),
                &object,
                Ok(false),
            ),
            (
                json!({"path": "$.spec.template.spec.priorityClassName", "matches": "system-*"}),
                &object,
                Ok(true),
            ),
            (
                json!({"path": "$..replicas", "matches": "*"}),
                &object,
                Ok(false),
            ),
            (
                json!({"path": "$.spec.template.spec.nodeSelector['kubernetes.io/os']", "equals": "linux"}),
                &object,
                Ok(true),
            ),
            (
                json!({"path": "$.spec.template.spec.nodeSelector", "equals": {"kubernetes.io/os": "linux"}}),
                &object,
                Ok(true),
            ),
            (json!({"path": "$..replicas", "equals": 1}), &object, Ok(true)),
            (json!({"path": "$..replicas", "equals": 1.0}), &object, Ok(false)),
            (json!({"path": "$..ok", "equals": true}), &object, Ok(true)),
            (json!({"path": "$..nil", "equals": null}), &object, Ok(true)),
            (json!({"path": "$..nil", "exists": true}), &object, Ok(true)),
            (
                json!({"path": "$.metadata.ownerReferences[*].kind", "equals": "DaemonSet"}),
                &object,
                Ok(true),
            ),
            (
                json!({"path": "$.metadata.ownerReferences[?@.kind == 'Job']"}),
                &object,
                Ok(false),
            ),
            (
                json!({"path": "$.metadata.ownerReferences[?@.kind == 'DaemonSet'].name", "equals": "flannel"}),
                &object,
                Ok(true),
            ),
            (json!({"path": "$.spec.missing", "exists": false}), &object, Ok(true)),
            (json!({"path": "$.spec.missing"}), &object, Ok(false)),
            // Only what the path reads must be readable.
            (json!({"path": "$.spec.x", "equals": "y"}), &deep, Ok(true)),
            (json!({"path": "$.spec.nope", "exists": false}), &deep, Ok(true)),
            (
                json!({"path": "$.spec.deep", "exists": true}),
                &deep,
                Ok(true),
            ),
            (
                json!({"path": "$.spec.deep", "equals": []}),
                &deep,
                Err("recursion limit"),
            ),
            (
                json!({"path": "$..nope", "exists": false}),
                &deep,
                Err("`$..nope`: more than 127 nested arrays and objects (the recursion limit) at byte"),
            ),
            (json!({"path": "$.b", "equals": "last"}), odd, Ok(true)),
            (json!({"path": "$.n", "equals": "x"}), odd, Ok(false)),
            (json!({"path": "$.n", "equals": 1}), odd, Err("number out of range")),
            (json!({"path": "$.a", "matches": "*"}), odd, Err("`$.a`: unreadable string")),
        ];
        for (condition, object, want) in cases {
            let c = from_settings(&condition).unwrap();
            match (c.holds(object), want) {
                (Err(got), Err(want)) => assert!(got.contains(want), "{condition}: {got}"),
                (got, want) => assert_eq!(got, want.map_err(String::from), "{condition}"),
            }
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
