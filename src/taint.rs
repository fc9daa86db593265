//! Taints as they appear in `Node.spec.taints`, and settings selectors over them.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::glob::Glob;
use crate::json::JsonStr;
use crate::settings::{each, taint_key_glob, At, SettingsError};

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

#[cfg(test)]
impl Taint<'static> {
    /// A taint with no value and no text of its own, for tests of what reads keys and effects.
    pub fn of(key: &'static str, effect: &'static str) -> Taint<'static> {
        Taint {
            key: JsonStr::borrowed(key),
            value: JsonStr::default(),
            effect: JsonStr::borrowed(effect),
            raw: "",
        }
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
        self.matches_key_effect(taint.key.as_str(), taint.effect.as_str())
    }

    pub fn matches_key_effect(&self, key: &str, effect: &str) -> bool {
        (self.effects.is_empty() || self.effects.contains(&effect)) && self.key.matches(key)
    }
}

/// A taint selector as settings write it: a bare key glob, or an object `X` holding the key, the
/// effects and whatever else a list of selectors gives each (a rule's own `permitted`, ...).
#[derive(Debug)]
pub enum SelectorSettings<'s, X> {
    Key(JsonStr<'s>),
    Object(X),
}

/// The fields every selector object has.
pub trait SelectorFields {
    fn key(&self) -> Option<&str>;
    fn effects(&self) -> Option<&[JsonStr<'_>]>;
}

/// A selector object with no further fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainSelector<'s> {
    #[serde(borrow)]
    key: Option<JsonStr<'s>>,
    #[serde(borrow)]
    effects: Option<Vec<JsonStr<'s>>>,
}

impl SelectorFields for PlainSelector<'_> {
    fn key(&self) -> Option<&str> {
        self.key.as_ref().map(JsonStr::as_str)
    }
    fn effects(&self) -> Option<&[JsonStr<'_>]> {
        self.effects.as_deref()
    }
}

impl<X: SelectorFields> SelectorSettings<'_, X> {
    /// The selector, its key and effects checked; `at` is where the selector is.
    pub fn build(&self, at: At<'_>) -> Result<TaintSelector, SettingsError> {
        let object = match self {
            SelectorSettings::Key(key) => {
                let key = taint_key_glob(key.as_str()).map_err(|m| at.error(m))?;
                return Ok(TaintSelector {
                    key,
                    effects: Vec::new(),
                });
            }
            SelectorSettings::Object(object) => object,
        };
        let key_at = at.field("key");
        let key = object
            .key()
            .ok_or_else(|| key_at.error("required field is missing"))?;
        let key = taint_key_glob(key).map_err(|m| key_at.error(m))?;
        let effects = match object.effects() {
            Some(effects) => each(at.field("effects"), effects, effect)?,
            None => Vec::new(),
        };
        Ok(TaintSelector { key, effects })
    }

    /// The object form, if the selector was written as one.
    pub fn object(&self) -> Option<&X> {
        match self {
            SelectorSettings::Key(_) => None,
            SelectorSettings::Object(object) => Some(object),
        }
    }
}

/// Each selector of a list, `at` being where the list is.
pub fn selectors<X: SelectorFields>(
    at: At<'_>,
    list: &[SelectorSettings<'_, X>],
) -> Result<Vec<TaintSelector>, SettingsError> {
    list.iter()
        .enumerate()
        .map(|(i, selector)| selector.build(at.index(i)))
        .collect()
}

impl<'de: 's, 's, X: Deserialize<'de>> Deserialize<'de> for SelectorSettings<'s, X> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SelectorVisitor<'s, X>(PhantomData<(&'s (), X)>);
        impl<'de: 's, 's, X: Deserialize<'de>> Visitor<'de> for SelectorVisitor<'s, X> {
            type Value = SelectorSettings<'s, X>;
            // A key glob is the other form; the object is what has structure to get wrong.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(SelectorSettings::Key(JsonStr(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(SelectorSettings::Key(JsonStr(Cow::Owned(v.to_owned()))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                X::deserialize(MapAccessDeserializer::new(map)).map(SelectorSettings::Object)
            }
        }
        deserializer.deserialize_any(SelectorVisitor(PhantomData))
    }
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
