//! JSONPath conditions over the admitted object, for what the other matchers cannot say
//! (priorityClassName, nodeSelector, owner references).
//!
//! A condition does not build a `Value` of the whole object: that cost as much as the rest of the
//! policy together (benchmarks/results.md). The leading plain member names of its path
//! (`$.spec.template.spec`) are followed through the borrowed text, and only the value they lead
//! to is parsed and queried with the rest of the path. [`readable`] checks, without allocating,
//! that the whole object is one serde_json could parse into a `Value`, so that an unreadable
//! object is refused exactly as when the whole object was parsed.

use std::fmt;

use jsonpath_rust::JsonPath;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::glob::Glob;
use crate::json::members;
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
    /// Leading member names of the path, followed through the raw text.
    prefix: Vec<String>,
    /// The rest of the path, as a query on the value `prefix` leads to.
    rest: String,
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
        let (prefix, rest) = split_prefix(&json_path);
        Ok(Condition {
            prefix,
            rest,
            test: tests.pop().unwrap_or(Test::Exists(true)),
        })
    }

    /// Whether the condition holds on the object whose text is `object`, which [`readable`]
    /// accepted.
    pub fn holds(&self, object: &str) -> bool {
        let mut at = object;
        for name in &self.prefix {
            match last_member(at, name) {
                Some(value) => at = value,
                None => return self.passes(&[]),
            }
        }
        let Ok(value) = serde_json::from_str::<Value>(at) else {
            return self.passes(&[]);
        };
        // The path was parsed when settings were read; a query error here selects nothing.
        self.passes(&value.query(&self.rest).unwrap_or_default())
    }

    fn passes(&self, found: &[&Value]) -> bool {
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

/// Splits a JSONPath into its leading plain member names (`.name`, `['name']`, each followed by
/// `.`, `[` or the end) and the rest as a query from `$`. A rest that refers to the root (`$` in
/// a filter) keeps the whole path, as it needs the whole object.
fn split_prefix(path: &str) -> (Vec<String>, String) {
    let whole = || (Vec::new(), path.to_owned());
    let Some(mut rest) = path.strip_prefix('$') else {
        return whole();
    };
    let mut prefix = Vec::new();
    loop {
        let (name, after) = if let Some(after) = rest.strip_prefix('.') {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if len == 0 || after.starts_with(|c: char| c.is_ascii_digit()) {
                break;
            }
            after.split_at(len)
        } else if let Some(quoted) = rest.strip_prefix("['") {
            let Some(end) = quoted.find('\'') else { break };
            let Some(after) = quoted[end + 1..].strip_prefix(']') else {
                break;
            };
            if quoted[..end].contains(['\\', '"']) {
                break;
            }
            (&quoted[..end], after)
        } else {
            break;
        };
        if !(after.is_empty() || after.starts_with(['.', '['])) {
            break;
        }
        prefix.push(name.to_owned());
        rest = after;
    }
    if rest.contains('$') {
        return whole();
    }
    (prefix, format!("${rest}"))
}

/// The value of member `name` of the object `text` (the last one, as a `Value` keeps it), or
/// `None` when `text` is not an object or has no such member.
fn last_member<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let all = members(text).ok()?;
    all.iter()
        .rev()
        .find(|(key, _)| key.as_str() == name)
        .map(|(_, value)| value.get())
}

/// Checks that `object` parses into a `serde_json::Value`, with the same error when it does not
/// (nesting deeper than serde_json's limit, numbers out of range, bad escapes), without building it.
pub fn readable(object: &str) -> Result<(), String> {
    serde_json::from_str::<Readable>(object)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Visits a value the way `Value`'s deserializer does (every number and string decoded, nesting
/// counted) and keeps nothing.
struct Readable;

impl<'de> Deserialize<'de> for Readable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Readable)
    }
}

impl<'de> Visitor<'de> for Readable {
    type Value = Readable;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Readable, A::Error> {
        while seq.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Readable, A::Error> {
        while map.next_key::<Readable>()?.is_some() {
            map.next_value::<Readable>()?;
        }
        Ok(Readable)
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
            assert_eq!(c.holds(&object.to_string()), want, "{condition}");
        }
    }

    /// Following the prefix through the text selects what the whole path selects on a `Value`.
    #[test]
    fn prefix_then_rest_selects_what_the_whole_path_selects() {
        let text = r#"{"spec": {"a": 1, "template": {"spec": {"x": "first", "x": "last",
            "list": [{"k": "v", "n": 2}, {"k": "w"}], "odd-name": {"q": 1}, "nil": null}}},
            "arr": [1, {"spec": 3}], "top": "t"}"#;
        let whole: Value = serde_json::from_str(text).unwrap();
        let paths = [
            "$",
            "$.top",
            "$.spec.template.spec.x",
            "$.spec.template.spec.list[*].k",
            "$.spec.template.spec.list[0].n",
            "$.spec.template.spec['odd-name'].q",
            "$.spec.template.spec.odd-name",
            "$.spec.template.spec.nil.deeper",
            "$.spec.missing.deeper",
            "$.arr.spec",
            "$.arr[1].spec",
            "$.spec..k",
            "$..spec",
            "$.spec.template.spec.list[?@.k == 'w']",
            "$.spec.template.spec.list[?@.k == $.top]",
            "$.spec.*",
            "$['spec']['template'].spec.x",
        ];
        for path in paths {
            let c = Condition::from_settings("c".into(), &json!({"path": path, "exists": true}));
            let Ok(c) = c else { continue };
            let want = !whole.query(path).unwrap_or_default().is_empty();
            assert_eq!(
                c.holds(text),
                want,
                "{path} (prefix {:?}, rest {:?})",
                c.prefix,
                c.rest
            );
            for value in whole.query(path).unwrap_or_default() {
                let c =
                    Condition::from_settings("c".into(), &json!({"path": path, "equals": value}))
                        .unwrap();
                assert!(c.holds(text), "{path} equals {value}");
            }
        }
        assert_eq!(
            split_prefix("$['spec'].template.list[0]"),
            (
                vec!["spec".into(), "template".into(), "list".into()],
                "$[0]".into()
            )
        );
    }

    #[test]
    fn readable_refuses_what_value_refuses_with_the_same_error() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for text in [
            r#"{"a": [1, 2.5, -3, "s\u00e9", true, null, {}]}"#,
            r#"{"n": 1e400}"#,
            deep.as_str(),
            r#"{"s": "\ud800"}"#,
        ] {
            let value = serde_json::from_str::<Value>(text)
                .map(drop)
                .map_err(|e| e.to_string());
            assert_eq!(readable(text), value, "{text}");
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
