//! Taints as they appear in `Node.spec.taints`, and settings selectors over them.

use serde::Deserialize;

use crate::glob::Glob;
use crate::json::flat::{plain_items, plain_strings};
use crate::json::JsonStr;
use crate::k8s_names::taint_key_character;
use crate::settings::{checked, string_enum, SettingsFields};

/// One entry of `spec.taints`, read from its raw text (which a restore copies back verbatim,
/// `timeAdded` and fields unknown to us included).
///
/// # Examples
///
/// ```
/// use taintguard::taint::{parse_taints, SelectsTaints, TaintSelector};
///
/// let text = r#"[{"key": "gpu", "value": "a100", "effect": "NoSchedule"},
///     {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
///      "timeAdded": "2024-01-01T00:00:00Z"}]"#;
/// let taints = parse_taints(Some(text)).unwrap();
/// assert_eq!(taints[0].describe(), "gpu=a100:NoSchedule");
/// assert_eq!(taints[1].identity(), ("node.kubernetes.io/unreachable", "NoExecute"));
/// assert!(taints[1].raw.contains("timeAdded"));
/// let selector = TaintSelector::from_key("node.kubernetes.io/*").unwrap();
/// assert!(selector.matches(&taints[1]) && !selector.matches(&taints[0]));
/// ```
#[derive(Debug, Clone)]
pub struct Taint<'a> {
    /// The taint's key.
    pub key: JsonStr<'a>,
    /// Absent and empty are the same value to Kubernetes.
    pub value: JsonStr<'a>,
    /// The effect as written (`NoSchedule`, `PreferNoSchedule`, `NoExecute`).
    pub effect: JsonStr<'a>,
    /// The entry's text in the request.
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
    /// (key, effect): what Kubernetes keeps unique in `spec.taints`, for indexing.
    pub fn identity(&self) -> (&str, &str) {
        (self.key.as_str(), self.effect.as_str())
    }

    /// `key=value:Effect`, as kubectl writes taints.
    pub fn describe(&self) -> String {
        // Sized once, and the key copied as it is: `to_string` through `Display` and the
        // buffer's growth cost every taint of a restore's warnings (benchmarks/cost.md, "Short
        // copies").
        let (key, value, effect) = (self.key.as_str(), self.value.as_str(), self.effect.as_str());
        let mut s = String::with_capacity(key.len() + value.len() + effect.len() + 2);
        s.push_str(key);
        if !value.is_empty() {
            s.push('=');
            s.push_str(value);
        }
        s.push(':');
        s.push_str(effect);
        s
    }
}

#[cfg(any(test, feature = "testing"))]
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
    const FIELDS: [&str; 3] = ["key", "value", "effect"];
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    // Taints written plainly, as the API server writes them, in one pass; a list with any other
    // taint to serde, each taint from its own text.
    if let Some(taints) = plain_items(raw, FIELDS) {
        return Ok((taints.into_iter())
            .map(|(entry, fields)| plain_taint(entry, fields))
            .collect());
    }
    (crate::json::items(raw)?.into_iter())
        .map(|entry| match plain_strings(entry, FIELDS) {
            Some(fields) => Ok(plain_taint(entry, fields)),
            None => {
                let fields: TaintFields = serde_json::from_str(entry)?;
                Ok(Taint {
                    key: fields.key,
                    value: fields.value.unwrap_or_default(),
                    effect: fields.effect,
                    raw: entry,
                })
            }
        })
        .collect()
}

/// The taint whose text is `raw` and whose `key`, `value` and `effect` are plain strings.
fn plain_taint<'a>(raw: &'a str, [key, value, effect]: [Option<&'a str>; 3]) -> Taint<'a> {
    let field = |s: Option<&'a str>| s.map(JsonStr::borrowed).unwrap_or_default();
    Taint {
        key: field(key),
        value: field(value),
        effect: field(effect),
        raw,
    }
}

string_enum! {
    /// A taint effect Kubernetes defines.
    pub enum Effect {
        /// Pods that do not tolerate the taint are not scheduled on the node.
        NoSchedule = "NoSchedule",
        /// The scheduler avoids the node for pods that do not tolerate the taint.
        PreferNoSchedule = "PreferNoSchedule",
        /// Pods that do not tolerate the taint are evicted from the node, and not scheduled on
        /// it.
        NoExecute = "NoExecute",
    }
    unknown = "effect", expected = "one of NoSchedule, PreferNoSchedule, NoExecute";
}

checked! {
    /// A glob over taint keys. Taint keys are qualified names (`[prefix/]name`: letters, digits,
    /// `-`, `_`, `.`, one `/`); a pattern with other characters could never match, so it is
    /// refused.
    pub struct TaintKeyGlob(Glob) = |text| {
        if let Some(bad) = text
            .chars()
            .find(|c| !(taint_key_character(*c) || matches!(c, '*' | '?' | '[' | ']' | '!' | '\\')))
        {
            return Err(format!(
                "{text:?} is not a taint key glob: {bad:?} cannot occur in a taint key"
            ));
        }
        Glob::new(&text).map_err(|e| format!("{text:?} is not a valid glob: {e}"))
    };
}

/// What selects taints by key glob and, optionally, effects: a selector, and each settings rule
/// written as one with fields of its own. In settings either a bare key glob
/// (`"node.kubernetes.io/*"`) or `{"key": "...", "effects": ["NoSchedule"]}`.
pub trait SelectsTaints {
    /// The glob over taint keys.
    fn key(&self) -> &TaintKeyGlob;
    /// Empty means every effect.
    fn effects(&self) -> &[Effect];

    /// Whether a taint of `key` and `effect` is selected: the key glob matches `key`, and
    /// `effect` is one of the effects (any, when none are named).
    fn matches_key_effect(&self, key: &str, effect: &str) -> bool {
        let effects = self.effects();
        (effects.is_empty() || effects.iter().any(|e| e.as_str() == effect))
            && self.key().matches(key)
    }

    /// Whether `taint` is selected, by its key and effect.
    fn matches(&self, taint: &Taint<'_>) -> bool {
        self.matches_key_effect(taint.key.as_str(), taint.effect.as_str())
    }
}

/// A taint selector with no further fields.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, serde::Serialize)]
#[serde(deny_unknown_fields)]
#[settings(from_str = "TaintSelector::from_key")]
pub struct TaintSelector {
    /// The glob over taint keys.
    pub key: TaintKeyGlob,
    /// The effects selected; empty means every effect.
    #[serde(default)]
    pub effects: Vec<Effect>,
}

impl TaintSelector {
    /// The selector a bare key glob stands for.
    pub fn from_key(key: &str) -> Result<TaintSelector, String> {
        Ok(TaintSelector {
            key: TaintKeyGlob::try_from(key.to_owned())?,
            effects: Vec::new(),
        })
    }

    /// A built-in selector of every effect, `const` so that a list of defaults is built while
    /// compiling. Its key is a [`Glob::builtin`], not checked as a taint key glob here: the
    /// JavaScript adapter's test of the spelled-out defaults reads every one back as settings.
    pub const fn builtin(key: &'static str) -> TaintSelector {
        TaintSelector {
            key: TaintKeyGlob::constant(key),
            effects: Vec::new(),
        }
    }
}

impl TaintKeyGlob {
    /// A built-in key glob, `const` like [`TaintSelector::builtin`] and unchecked for the same
    /// reason: defaults built from constants clone them instead of finding each glob's shape
    /// on every request.
    pub const fn constant(key: &'static str) -> TaintKeyGlob {
        TaintKeyGlob(Glob::builtin(key))
    }
}

impl SelectsTaints for TaintSelector {
    fn key(&self) -> &TaintKeyGlob {
        &self.key
    }
    fn effects(&self) -> &[Effect] {
        &self.effects
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
