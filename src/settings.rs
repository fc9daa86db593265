//! Reading settings objects field by field, so that every error names the field it is about.
//!
//! Settings are small and read once per request, so they go through `serde_json::Value`; the
//! reader records which keys it consumed and [`Fields::finish`] rejects the rest, which catches
//! misspelt settings that would otherwise be silently ignored.

use std::fmt;

use serde_json::{Map, Value};

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

/// Parses settings text; Kubewarden sends `{}` when none are configured.
pub fn parse_settings_json(text: &str) -> Result<Value, SettingsError> {
    serde_json::from_str(text).map_err(|e| SettingsError::new("", format!("not valid JSON: {e}")))
}

/// The fields of one settings object, read by name.
pub struct Fields<'s> {
    path: String,
    map: &'s Map<String, Value>,
    known: Vec<&'static str>,
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'s> Fields<'s> {
    /// The fields of `value`, which must be an object (or `null`, read as `{}`).
    pub fn new(path: String, value: &'s Value) -> Result<Fields<'s>, SettingsError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let map = match value {
            Value::Object(map) => map,
            Value::Null => EMPTY.get_or_init(Map::new),
            other => {
                return Err(SettingsError::new(
                    path,
                    format!("expected an object, found {}", type_name(other)),
                ))
            }
        };
        Ok(Fields {
            path,
            map,
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
    pub fn get(&mut self, key: &'static str) -> Option<&'s Value> {
        self.known.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn mismatch(&self, key: &str, expected: &str, found: &Value) -> SettingsError {
        SettingsError::new(
            self.path_of(key),
            format!("expected {expected}, found {}", type_name(found)),
        )
    }

    pub fn bool(&mut self, key: &'static str) -> Result<Option<bool>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.mismatch(key, "a boolean", other)),
        }
    }

    pub fn string(&mut self, key: &'static str) -> Result<Option<&'s str>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.mismatch(key, "a string", other)),
        }
    }

    /// An array field: each element with its path.
    pub fn array(
        &mut self,
        key: &'static str,
    ) -> Result<Option<Vec<(String, &'s Value)>>, SettingsError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => {
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
                Value::String(s) => convert(s).map_err(|m| SettingsError::new(path, m)),
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

    /// Every member, for objects whose keys are data (label maps): `(path, key, value)`.
    pub fn into_entries(self) -> Vec<(String, &'s str, &'s Value)> {
        self.map
            .iter()
            .map(|(k, v)| (self.path_of(k), k.as_str(), v))
            .collect()
    }

    /// Rejects keys that were never asked for.
    pub fn finish(self) -> Result<(), SettingsError> {
        match self.map.keys().find(|k| !self.known.contains(&k.as_str())) {
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
