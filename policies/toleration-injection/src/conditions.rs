//! JSONPath conditions over the admitted object, for what the other matchers cannot say
//! (priorityClassName, nodeSelector, owner references).
//!
//! A condition selects from the object parsed into a `serde_json::Value` ([`taintguard_jsonpath`]),
//! which the caller parses once per request, and only when a rule that matches otherwise has
//! conditions. An object that does not parse (nesting past serde_json's recursion limit, a string
//! or number a `Value` cannot hold) is the caller's to reject, rather than read as `null`.

use serde::Serialize;
use serde_json::Value;

use taintguard_jsonpath::JsonPath;

use taintguard::glob::Glob;
use taintguard::settings::{At, SettingsError, SettingsFields};

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
#[derive(Debug, Clone, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
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

taintguard::settings::from_string!(ConditionPath, into = String);

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
    /// Whether the condition holds on `object`, the admitted object.
    pub fn holds(&self, object: &Value) -> bool {
        self.holds_on(&self.path.path.select(object))
    }

    /// The member names of the path, when it is made of them only
    /// ([`taintguard_jsonpath::JsonPath::member_names`]).
    pub fn member_names(&self) -> Option<Vec<&str>> {
        self.path.path.member_names()
    }

    /// Whether the condition holds on `found`, what its path selects.
    pub fn holds_on(&self, found: &[&Value]) -> bool {
        match self.test() {
            Test::Exists(want) => found.is_empty() != want,
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
    use serde_json::json;

    /// A condition at `c` of settings.
    fn from_settings(condition: &Value) -> Result<Condition, SettingsError> {
        #[derive(Default, SettingsFields, Serialize)]
        struct Holder {
            c: Option<Condition>,
        }
        impl taintguard::settings::PolicySettings for Holder {
            fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
                self.c.as_ref().map_or(Ok(()), |c| c.check(at.field("c")))
            }
        }
        taintguard::settings::parse::<Holder>(&json!({ "c": condition }).to_string())
            .map(|h| h.c.expect("a condition"))
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
