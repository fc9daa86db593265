//! Reading settings text, with errors that name the field they are about.
//!
//! Each policy writes the shape of its settings as `#[derive(Deserialize)]` structs that deny
//! unknown fields (which catches misspelt settings that would otherwise be silently ignored) and
//! take every field as optional (`null` included, so a defaulted field can be written out);
//! [`read`] deserializes the text straight into them, with the path of any type error. A second
//! step checks what types cannot say (globs, key syntax, one value among several) and names the
//! field through an [`At`].

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::error::Category;

use crate::glob::Glob;
use crate::json::JsonStr;

/// A settings error: the path of the offending field (`protectedTaints[1].effects[0]`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    pub path: String,
    pub message: String,
}

impl SettingsError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "settings: {}", self.message)
        } else {
            write!(f, "settings field `{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for SettingsError {}

/// Where a settings value is, for the errors of the checks that follow deserialization. Built on
/// the stack as the checks descend, and written out only when there is an error.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    Root,
    Field(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl<'a> At<'a> {
    pub fn field(&'a self, name: &'a str) -> At<'a> {
        At::Field(self, name)
    }

    pub fn index(&'a self, i: usize) -> At<'a> {
        At::Index(self, i)
    }

    pub fn error(&self, message: impl Into<String>) -> SettingsError {
        SettingsError::new(self.to_string(), message)
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Field(At::Root, name) => f.write_str(name),
            At::Field(parent, name) => write!(f, "{parent}.{name}"),
            At::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A settings object, read into `T` by field name. A derived struct alone would also read a JSON
/// array as its fields in order (`[true]` as `{"enabled": true}`), which settings never mean:
/// every settings object is read through this instead.
#[derive(Debug, Default)]
pub struct Object<T>(pub T);

impl<T> Deref for Object<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(ObjectVisitor(PhantomData))
    }
}

/// Reads settings text (or a part of settings, found `at`) into `T`. Kubewarden sends `{}` when
/// none are configured. Text that is not JSON is reported as such whatever else is wrong with
/// it, as parsing a `serde_json::Value` reports it (nesting past serde_json's recursion limit
/// included).
pub fn read<'de, T: Deserialize<'de>>(text: &'de str, at: At<'_>) -> Result<T, SettingsError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let error = match T::deserialize(&mut deserializer).and_then(|v| deserializer.end().map(|()| v))
    {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    if error.classify() != Category::Data {
        return Err(not_json(&error));
    }
    // A type error may come before a syntax error further on; the syntax error wins. Only a
    // `Value` parse finds every one: skipping a value (`IgnoredAny`) has no recursion limit.
    if let Err(syntax) = serde_json::from_str::<serde_json::Value>(text) {
        return Err(not_json(&syntax));
    }
    let mut path = at.to_string();
    path_at(text, offset(text, error.line(), error.column()), &mut path);
    Err(SettingsError::new(path, describe(&error)))
}

/// The byte offset of serde_json's error position: a 1-based line and the bytes before the
/// position on that line.
fn offset(text: &str, line: usize, column: usize) -> usize {
    let line_start = match line {
        0 | 1 => 0,
        _ => text
            .match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1),
    };
    (line_start + column).min(text.len())
}

/// Appends to `path` where in `text` serde_json was when it found a data error at byte `end`:
/// the member key or element index in each object and array still open there. serde_json
/// reports a type error just past the value it read (or at the bracket it would not read), and
/// an unknown or duplicate field just past the key, so the value being read is the last one
/// begun. Only errors pay for this walk, which is why no path is kept while deserializing: a
/// deserializer wrapper that tracks one (serde_path_to_error) made each policy module about
/// 16 KB larger.
fn path_at(text: &str, end: usize, path: &mut String) {
    enum Open {
        /// The key of the member being read, once read.
        Object(Option<String>),
        /// The index of the element being read.
        Array(usize),
    }
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b'{' => open.push(Open::Object(None)),
            b'[' => open.push(Open::Array(0)),
            b'}' | b']' => drop(open.pop()),
            b',' => match open.last_mut() {
                Some(Open::Object(key)) => *key = None,
                Some(Open::Array(n)) => *n += 1,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Open::Object(key @ None)) = open.last_mut() {
                    let token = text.get(start..=i).unwrap_or_default();
                    let name = serde_json::from_str::<JsonStr<'_>>(token).unwrap_or_default();
                    *key = Some(name.0.into_owned());
                }
            }
            _ => {}
        }
        i += 1;
    }
    for segment in open {
        match segment {
            Open::Object(None) => {}
            Open::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
            }
            Open::Array(n) => {
                path.push('[');
                path.push_str(&n.to_string());
                path.push(']');
            }
        }
    }
}

fn not_json(error: &serde_json::Error) -> SettingsError {
    SettingsError::new("", format!("not valid JSON: {error}"))
}

/// serde's message for a data error, in the words of these settings: `expected a string, found a
/// number` for serde's `invalid type: integer `3`, expected a string`, and no text position
/// (settings are usually YAML converted to JSON, whose lines and columns the user never sees).
fn describe(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    let message = full.strip_suffix(&position).unwrap_or(&full);
    let mismatch = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "));
    if let Some((found, expected)) = mismatch {
        return format!("expected {}, found {}", noun(expected), noun(found));
    }
    if message.starts_with("duplicate field `") {
        return "field given twice".to_owned();
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let expected = rest
            .split_once(", expected ")
            .map_or("", |(_, names)| names);
        let names = expected
            .trim_start_matches("one of ")
            .replace(" or ", ", ")
            .replace('`', "");
        return format!("unknown field; expected one of: {names}");
    }
    message.to_owned()
}

/// What serde calls a JSON value (`integer `3``) or the type it expected (`a sequence`), as
/// these settings call it.
fn noun(serde: &str) -> &str {
    match serde {
        "a sequence" => return "an array",
        "a map" => return "an object",
        "i64" | "u64" => return "an integer",
        _ => {}
    }
    match serde.split(' ').next() {
        Some("boolean") => "a boolean",
        Some("integer" | "floating") => "a number",
        Some("string") => "a string",
        Some("sequence") => "an array",
        Some("map") => "an object",
        Some("unit") => "null",
        _ => serde,
    }
}

/// Each string of `list` converted by `convert`, whose error names the element.
pub fn each<T>(
    at: At<'_>,
    list: &[JsonStr<'_>],
    convert: fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, SettingsError> {
    list.iter()
        .enumerate()
        .map(|(i, text)| convert(text.as_str()).map_err(|m| at.index(i).error(m)))
        .collect()
}

/// A glob over taint keys. Taint keys are qualified names (`[prefix/]name`: letters, digits,
/// `-`, `_`, `.`, one `/`); a pattern with other characters could never match, so it is refused.
pub fn taint_key_glob(text: &str) -> Result<Glob, String> {
    if let Some(bad) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_./*?[]!\\".contains(*c)))
    {
        return Err(format!(
            "{text:?} is not a taint key glob: {bad:?} cannot occur in a taint key"
        ));
    }
    Glob::new(text).map_err(|e| format!("{text:?} is not a valid glob: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    // Only the errors of reading these are tested.
    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Shape<'s> {
        flag: Option<bool>,
        #[serde(borrow)]
        names: Option<Vec<JsonStr<'s>>>,
        count: Option<i64>,
        inner: Option<Object<Inner>>,
        inner_list: Option<Vec<Object<Inner>>>,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        on: Option<bool>,
    }

    fn error(text: &str, at: At<'_>) -> String {
        read::<Option<Object<Shape>>>(text, at)
            .unwrap_err()
            .to_string()
    }

    /// Type errors and unknown fields in the words the settings references use, at the field.
    #[test]
    fn errors_name_the_field() {
        let cases = [
            (r#"{"flag": "yes"}"#, "settings field `flag`: expected a boolean, found a string"),
            (r#"{"names": ["a", 1]}"#, "settings field `names[1]`: expected a string, found a number"),
            (r#"{"names": "a"}"#, "settings field `names`: expected an array, found a string"),
            (r#"{"names": [null]}"#, "settings field `names[0]`: expected a string, found null"),
            (r#"{"count": 1.5}"#, "settings field `count`: expected an integer, found a number"),
            (
                r#"{"count": 18446744073709551615}"#,
                "settings field `count`: expected an integer, found a number",
            ),
            (r#"{"count": {}}"#, "settings field `count`: expected an integer, found an object"),
            (r#"{"inner": [true]}"#, "settings field `inner`: expected an object, found an array"),
            (r#"{"inner": {"on": 1}}"#, "settings field `inner.on`: expected a boolean, found a number"),
            (
                r#"{"innerList": [{"on": true}, {"of": true}]}"#,
                "settings field `innerList[1].of`: unknown field; expected one of: on",
            ),
            (
                r#"{"flags": true}"#,
                "settings field `flags`: unknown field; expected one of: flag, names, count, inner, innerList",
            ),
            ("[true]", "settings: expected an object, found an array"),
            ("7", "settings: expected an object, found a number"),
            (r#"{"flag": true, "flag": false}"#, "settings field `flag`: field given twice"),
            (
                r#"{"inner": {"on": true, "on": true}}"#,
                "settings field `inner.on`: field given twice",
            ),
            // What the path is read from: escapes, and brackets, commas and quotes in strings.
            (
                r#"{"fl\u0061gs": 1}"#,
                "settings field `flags`: unknown field; expected one of: flag, names, count, inner, innerList",
            ),
            (
                r#"{"names": ["a,]\"[{", "}"], "innerList": [{}, {"on": true}, {"on": "x"}]}"#,
                "settings field `innerList[2].on`: expected a boolean, found a string",
            ),
            (
                "{\n  \"inner\": {},\n  \"innerList\": [\n    {\"on\": true},\n    {\"on\": 1}\n  ]\n}",
                "settings field `innerList[1].on`: expected a boolean, found a number",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(error(text, At::Root), want, "{text}");
        }
        let at = At::Root;
        let rules = at.field("rules");
        let first = rules.index(0);
        assert_eq!(
            error(r#"{"inner": {"on": 1}}"#, first),
            "settings field `rules[0].inner.on`: expected a boolean, found a number"
        );
        assert_eq!(
            error("[]", first),
            "settings field `rules[0]`: expected an object, found an array"
        );
        assert_eq!(
            read::<Vec<bool>>("[true, 1]", rules)
                .unwrap_err()
                .to_string(),
            "settings field `rules[1]`: expected a boolean, found a number"
        );
        assert!(read::<Option<Object<Shape>>>("null", at).unwrap().is_none());
    }

    /// Text that is not JSON is said to be so, as serde_json says it, even where a field before
    /// the syntax error is wrong too.
    #[test]
    fn not_json_is_not_json() {
        let deep = format!("{{\"flags\": {}1{}}}", "[".repeat(200), "]".repeat(200));
        for text in [
            "{",
            "",
            "{\"flag\": true} x",
            "{\"flag\": tru}",
            "{\"count\": 1e400}",
            "{\"flags\": true,}",
            "{\"flag\": 1, \"x\"}",
            "{\"names\": [1, ]}",
            "{\"names\": [\"\\ud800\"]}",
            &deep,
        ] {
            let want = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            assert_eq!(
                error(text, At::Root),
                format!("settings: not valid JSON: {want}"),
                "{text}"
            );
        }
    }
}
