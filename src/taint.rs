//! Taints as they appear in `Node.spec.taints`, and settings selectors over them.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::glob::Glob;
use crate::json::JsonStr;
use crate::settings::{taint_key_glob, Fields, Json, SettingsError};

/// The taint effects Kubernetes defines.
pub const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One entry of `spec.taints`, read from its raw text (which a restore copies back verbatim,
/// `timeAdded` and fields unknown to us included).
#[derive(Debug, Clone)]
pub struct Taint<'a> {
    pub key: JsonStr<'a>,
    /// Absent and empty are the same value to Kubernetes.
    pub value: JsonStr<'a>,
    pub effect: JsonStr<'a>,
    pub raw: &'a str,
}

#[derive(Deserialize)]
struct TaintFields<'a> {
    #[serde(borrow, default)]
    key: JsonStr<'a>,
    #[serde(borrow, default)]
    value: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    effect: JsonStr<'a>,
}

impl<'a> Taint<'a> {
    /// Taints are identified by key and effect; the value may change.
    pub fn same_identity(&self, other: &Taint<'_>) -> bool {
        self.identity() == other.identity()
    }

    /// (key, effect): what Kubernetes keeps unique in `spec.taints`, for indexing.
    pub fn identity(&self) -> (&str, &str) {
        (self.key.as_str(), self.effect.as_str())
    }

    /// `key=value:Effect`, as kubectl writes taints.
    pub fn describe(&self) -> String {
        let mut s = self.key.to_string();
        if !self.value.as_str().is_empty() {
            s.push('=');
            s.push_str(self.value.as_str());
        }
        s.push(':');
        s.push_str(self.effect.as_str());
        s
    }
}

/// Reads a `spec.taints` value; absent or `null` is the empty list.
pub fn parse_taints(raw: Option<&str>) -> Result<Vec<Taint<'_>>, serde_json::Error> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let entries: Vec<&RawValue> = serde_json::from_str(raw)?;
    entries
        .into_iter()
        .map(|entry| {
            let fields: TaintFields = serde_json::from_str(entry.get())?;
            Ok(Taint {
                key: fields.key,
                value: fields.value.unwrap_or_default(),
                effect: fields.effect,
                raw: entry.get(),
            })
        })
        .collect()
}

/// Validates an effect name.
pub fn effect(text: &str) -> Result<&'static str, String> {
    EFFECTS
        .iter()
        .find(|e| **e == text)
        .copied()
        .ok_or_else(|| {
            format!(
                "unknown effect {text:?}; expected one of {}",
                EFFECTS.join(", ")
            )
        })
}

/// Selects taints by key glob and, optionally, effects. In settings either a bare key glob
/// (`"node.kubernetes.io/*"`) or `{"key": "...", "effects": ["NoSchedule"]}`.
#[derive(Debug, Clone)]
pub struct TaintSelector {
    pub key: Glob,
    /// Empty means every effect.
    pub effects: Vec<&'static str>,
}

impl TaintSelector {
    pub fn new(key: &str, effects: &[&'static str]) -> TaintSelector {
        TaintSelector {
            key: taint_key_glob(key).expect("built-in taint key globs are valid"),
            effects: effects.to_vec(),
        }
    }

    pub fn matches(&self, taint: &Taint<'_>) -> bool {
        (self.effects.is_empty() || self.effects.contains(&taint.effect.as_str()))
            && self.key.matches(taint.key.as_str())
    }

    /// Reads a selector; `fields_extra` reads any further fields of the object form.
    pub fn from_settings<'s, T>(
        path: String,
        value: &'s Json<'s>,
        fields_extra: impl FnOnce(&mut Fields<'s>) -> Result<T, SettingsError>,
        extra_default: T,
    ) -> Result<(TaintSelector, T), SettingsError> {
        if let Json::String(key) = value {
            let key = taint_key_glob(key).map_err(|m| SettingsError::new(path, m))?;
            return Ok((
                TaintSelector {
                    key,
                    effects: Vec::new(),
                },
                extra_default,
            ));
        }
        let mut fields = Fields::new(path, value)?;
        let key_path = fields.path_of("key");
        let key = fields
            .string("key")?
            .ok_or_else(|| SettingsError::new(key_path.clone(), "required field is missing"))?;
        let key = taint_key_glob(key).map_err(|m| SettingsError::new(key_path, m))?;
        let effects = fields.strings_as("effects", effect)?.unwrap_or_default();
        let extra = fields_extra(&mut fields)?;
        fields.finish()?;
        Ok((TaintSelector { key, effects }, extra))
    }
}

/// Reads a list of selectors at `key` of `fields`.
pub fn selectors(
    fields: &mut Fields<'_>,
    key: &'static str,
) -> Result<Option<Vec<TaintSelector>>, SettingsError> {
    let Some(items) = fields.array(key)? else {
        return Ok(None);
    };
    items
        .into_iter()
        .map(|(path, value)| {
            TaintSelector::from_settings(path, value, |_| Ok(()), ()).map(|(s, ())| s)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_taints_keeping_raw_text() {
        let raw = r#"[{"key":"a","value":"1","effect":"NoSchedule","future":{"x":1}},{"effect":"NoExecute","key":"b","timeAdded":"2024-01-01T00:00:00Z"}]"#;
        let taints = parse_taints(Some(raw)).unwrap();
        assert_eq!(taints[0].describe(), "a=1:NoSchedule");
        assert_eq!(taints[1].describe(), "b:NoExecute");
        assert!(taints[0].raw.contains("future"));
        assert_eq!(parse_taints(None).unwrap().len(), 0);
        assert!(parse_taints(Some("{}")).is_err());
    }
}
