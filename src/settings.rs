//! Reading settings objects field by field, so that every error names the field it is about.
//!
//! Settings are read into a [`Json`] tree that borrows from the settings text (OPA engines build
//! them on every evaluation, so a `serde_json::Value`, with a `String` per key and a `BTreeMap`
//! per object, would cost about as much as the rest of the evaluation); the reader records which
//! keys it consumed and [`Fields::finish`] rejects the rest, which catches misspelt settings that
//! would otherwise be silently ignored.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::glob::Glob;

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

/// Parses settings text; Kubewarden sends `{}` when none are configured. What it accepts, and
/// its errors, are those of parsing a `serde_json::Value` (the same parser reads both).
pub fn parse_settings_json(text: &str) -> Result<Json<'_>, SettingsError> {
    serde_json::from_str(text).map_err(|e| SettingsError::new("", format!("not valid JSON: {e}")))
}

/// A JSON value read from settings text: a `serde_json::Value` that borrows its strings from the
/// text when they are written without escapes, and keeps object members in a vector. As with a
/// `Value`, a key given twice keeps the last value; unlike one, members stay in text order
/// (readers that show an order sort them as a `Value`'s map would).
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'s> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'s, str>),
    Array(Vec<Json<'s>>),
    Object(Vec<(Cow<'s, str>, Json<'s>)>),
}

impl Json<'_> {
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The same value as a `serde_json::Value`, for the few settings compared with JSON data.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.as_ref().to_owned()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.as_ref().to_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// A `serde_json::Value` as settings (tests, and defaults written with `json!`).
    pub fn from_value(value: &Value) -> Json<'static> {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(Cow::Owned(s.clone())),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Owned(k.clone()), Json::from_value(v)))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(n).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        Json::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            let value = map.next_value()?;
            // The last of duplicate keys wins, as in a `Value`'s map.
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some(member) => member.1 = value,
                None => members.push((key, value)),
            }
        }
        Ok(Json::Object(members))
    }
}

/// An object key, borrowed when written without escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The fields of one settings object, read by name.
pub struct Fields<'s> {
    path: String,
    members: &'s [(Cow<'s, str>, Json<'s>)],
    known: Vec<&'static str>,
}

fn type_name(value: &Json<'_>) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

impl<'s> Fields<'s> {
    /// The fields of `value`, which must be an object (or `null`, read as `{}`).
    pub fn new(path: String, value: &'s Json<'s>) -> Result<Fields<'s>, SettingsError> {
        let members: &'s [(Cow<'s, str>, Json<'s>)] = match value {
            Json::Object(members) => members,
            Json::Null => &[],
            other => {
                return Err(SettingsError::new(
                    path,
                    format!("expected an object, found {}", type_name(other)),
                ))
            }
        };
        Ok(Fields {
            path,
            members,
            known: Vec::with_capacity(8),
        })
    }

    pub fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            let mut path = String::with_capacity(self.path.len() + 1 + key.len());
            path.push_str(&self.path);
            path.push('.');
            path.push_str(key);
            path
        }
    }

    /// The value of `key`; `null` counts as absent so that a defaulted field can be written out.
    pub fn get(&mut self, key: &'static str) -> Option<&'s Json<'s>> {
        self.known.push(key);
        self.members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    }

    fn mismatch(&self, key: &str, expected: &str, found: &Json<'_>) -> SettingsError {
        SettingsError::new(
            self.path_of(key),
            format!("expected {expected}, found {}", type_name(found)),
        )
    }

    pub fn bool(&mut self, key: &'static str) -> Result<Option<bool>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.mismatch(key, "a boolean", other)),
        }
    }

    pub fn string(&mut self, key: &'static str) -> Result<Option<&'s str>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(Json::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.mismatch(key, "a string", other)),
        }
    }

    /// An array field: each element with its path.
    pub fn array(
        &mut self,
        key: &'static str,
    ) -> Result<Option<Vec<(String, &'s Json<'s>)>>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(Json::Array(items)) => {
                let path = self.path_of(key);
                Ok(Some(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (indexed(&path, i), v))
                        .collect(),
                ))
            }
            Some(other) => Err(self.mismatch(key, "an array", other)),
        }
    }

    /// An array of strings, each converted by `convert`, whose error is reported at the element.
    pub fn strings_as<T>(
        &mut self,
        key: &'static str,
        convert: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<Vec<T>>, SettingsError> {
        let Some(items) = self.array(key)? else {
            return Ok(None);
        };
        items
            .into_iter()
            .map(|(path, value)| match value {
                Json::String(s) => convert(s).map_err(|m| SettingsError::new(path, m)),
                other => Err(SettingsError::new(
                    path,
                    format!("expected a string, found {}", type_name(other)),
                )),
            })
            .collect::<Result<Vec<T>, _>>()
            .map(Some)
    }

    pub fn globs(
        &mut self,
        key: &'static str,
        convert: fn(&str) -> Result<Glob, String>,
    ) -> Result<Option<Vec<Glob>>, SettingsError> {
        self.strings_as(key, convert)
    }

    /// A nested object field.
    pub fn object(&mut self, key: &'static str) -> Result<Option<Fields<'s>>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => Fields::new(self.path_of(key), value).map(Some),
        }
    }

    /// Every member, for objects whose keys are data (label maps): `(path, key, value)`, in the
    /// order of keys (that of a `Value`'s map, so that the first bad entry reported is too).
    pub fn into_entries(self) -> Vec<(String, &'s str, &'s Json<'s>)> {
        let mut entries: Vec<(String, &'s str, &'s Json<'s>)> = self
            .members
            .iter()
            .map(|(k, v)| (self.path_of(k), k.as_ref(), v))
            .collect();
        entries.sort_unstable_by(|a, b| a.1.cmp(b.1));
        entries
    }

    /// Rejects keys that were never asked for (the first in key order, as a `Value`'s map
    /// would list them).
    pub fn finish(self) -> Result<(), SettingsError> {
        let unknown = self
            .members
            .iter()
            .map(|(k, _)| k.as_ref())
            .filter(|k| !self.known.contains(k))
            .min();
        match unknown {
            None => Ok(()),
            Some(unknown) => Err(SettingsError::new(
                self.path_of(unknown),
                format!("unknown field; expected one of: {}", self.known.join(", ")),
            )),
        }
    }
}

/// `path[i]`. Paths are built for every settings field read, errors or not, so without the
/// formatting machinery.
pub fn indexed(path: &str, i: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut out = String::with_capacity(path.len() + 2 + digits.len() - at);
    out.push_str(path);
    out.push('[');
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
    out.push(']');
    out
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

    /// The tree reads what a `serde_json::Value` reads, and fails as parsing one fails.
    #[test]
    fn reads_as_a_value_does() {
        let deep = format!("{}1{}", "[".repeat(128), "]".repeat(128));
        let ok_deep = format!("{}1{}", "[".repeat(127), "]".repeat(127));
        let texts = [
            "{}",
            "null",
            r#"{"a": 1, "b": [true, false, null, -2, 1.5, 18446744073709551615], "a": "last"}"#,
            r#"{"e\u0073c": "t\"ab\tle", "plain": "x", "z": {}, "y": {"z": 1, "z": {"k": []}}}"#,
            r#"{"n": 1e400}"#,
            r#"{"n": -1e400}"#,
            r#"{"s": "\ud800"}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 1} x"#,
            "{",
            "",
            &deep,
            &ok_deep,
        ];
        for text in texts {
            let want = serde_json::from_str::<Value>(text)
                .map_err(|e| SettingsError::new("", format!("not valid JSON: {e}")));
            let got = parse_settings_json(text).map(|v| v.to_value());
            assert_eq!(got, want, "{text}");
        }
        let Json::Object(members) = parse_settings_json(r#"{"a": "x", "b\n": "y\n"}"#).unwrap()
        else {
            panic!("an object")
        };
        assert!(matches!(
            members[0],
            (Cow::Borrowed("a"), Json::String(Cow::Borrowed("x")))
        ));
        assert!(matches!(
            members[1],
            (Cow::Owned(_), Json::String(Cow::Owned(_)))
        ));
    }

    #[test]
    fn unknown_fields_and_entries_in_key_order() {
        let value = parse_settings_json(r#"{"z": 1, "b": 2, "known": 3, "a": 4, "b": 5}"#).unwrap();
        let mut f = Fields::new("p".into(), &value).unwrap();
        assert_eq!(f.get("b").and_then(Json::as_i64), Some(5));
        f.get("known");
        let err = f.finish().unwrap_err();
        assert_eq!(
            err.to_string(),
            "settings field `p.a`: unknown field; expected one of: b, known"
        );
        let f = Fields::new("p".into(), &value).unwrap();
        let keys: Vec<&str> = f.into_entries().iter().map(|e| e.1).collect();
        assert_eq!(keys, ["a", "b", "known", "z"]);
    }
}
