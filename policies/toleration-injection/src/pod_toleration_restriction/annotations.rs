//! A Namespace's two PodTolerationRestriction annotations, read as the plugin reads them
//! (docs/pod-toleration-restriction.md, "Namespace annotations"): Go's `encoding/json` into
//! `[]v1.Toleration`, so member names match in any case (the last in the document wins, and the
//! Kelvin sign and the long s match `k` and `s`), unknown members are ignored, `null` changes no
//! string and unsets `tolerationSeconds`, half a surrogate pair is U+FFFD, more than 10,000
//! levels of nesting are refused, and nothing else about the tolerations is checked. A
//! differential test holds this reader to Go's own (`go_differential.rs`).

use serde::de::IgnoredAny;

use taintguard::json::error::message;
use taintguard::json::{
    items, last_strings, members, nested_past, unpaired_surrogates_replaced, JsonStr,
};
use taintguard::toleration::plain_fields_only;

use super::algebra::PluginToleration;

/// The namespace's default tolerations.
pub const DEFAULTS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
/// The tolerations the namespace's Pods may carry.
pub const WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";

/// The plugin's two annotations, [`DEFAULTS`] and [`WHITELIST`], of the annotations object
/// `annotations` (its text; `None` when absent or `null`): the last of each, as the API server
/// keeps a key given twice; `None` where absent. Only these two are decoded: the others are
/// checked to be strings, as Kubernetes has them (a Namespace applied with kubectl carries its
/// whole last configuration in one, escapes and all).
///
/// # Errors
///
/// An `annotations` that is not an object of strings, in serde_json's words.
pub fn plugin_pair(annotations: Option<&str>) -> Result<[Option<JsonStr<'_>>; 2], String> {
    let mut pair = [None, None];
    let Some(text) = annotations else {
        return Ok(pair);
    };
    // In one pass where every annotation is a string and no key has escapes, as the API server
    // keeps them; else member by member, serde wording what is refused.
    if let Some([defaults, whitelist]) = last_strings(text, [DEFAULTS, WHITELIST]) {
        return Ok([defaults.map(JsonStr), whitelist.map(JsonStr)]);
    }
    let fault = |e: serde_json::Error| format!("annotations: {}", message(&e));
    for (key, value) in members(text).map_err(fault)? {
        let slot = match key.as_str() {
            DEFAULTS => &mut pair[0],
            WHITELIST => &mut pair[1],
            // A value is JSON already: a string is one that begins with a quote.
            _ if value.starts_with('"') => continue,
            _ => &mut None,
        };
        *slot = Some(JsonStr::read(value).map_err(fault)?);
    }
    Ok(pair)
}

/// An annotation's tolerations: `None` when the annotation is absent (the cluster-wide list
/// applies), `Some` of an empty list for `""`, `[]` and `null` (none, and the cluster-wide list
/// does not apply).
///
/// # Errors
///
/// What `encoding/json` would refuse: text that is not JSON, a value that is not a list, an
/// entry that is not an object, a field of the wrong type.
pub fn read(annotation: Option<&str>) -> Result<Option<Vec<PluginToleration>>, String> {
    let text = match annotation {
        None => return Ok(None),
        Some("") => return Ok(Some(Vec::new())),
        Some(text) => text,
    };
    if text.len() > MIN_TOO_DEEP && nested_past(text, GO_MAX_NESTING).is_some() {
        return Err(format!("nests more than {GO_MAX_NESTING} levels"));
    }
    // The JSON readers here refuse half a surrogate pair, as policy-server does; Go reads it as
    // U+FFFD. Only a text they refused can hold one, so only such a text is read again.
    read_list(text).or_else(|refused| match unpaired_surrogates_replaced(text) {
        Some(replaced) => read_list(&replaced),
        None => Err(refused),
    })
}

/// The most levels of arrays and objects `encoding/json` reads: it refuses the next.
const GO_MAX_NESTING: usize = 10_000;
/// Text of this many bytes or fewer cannot nest past [`GO_MAX_NESTING`] (each level opens and
/// closes), so only longer annotations pay for the walk.
const MIN_TOO_DEEP: usize = 2 * GO_MAX_NESTING;

/// An annotation's list, past [`read`]'s checks.
fn read_list(text: &str) -> Result<Option<Vec<PluginToleration>>, String> {
    // Read by the request's scanner, not as a `serde_json::Value`: a tree of maps built and
    // dropped for two short annotations was 6k guest instructions each (benchmarks/cost.md,
    // "PodTolerationRestriction's reads"). serde words what the scanner refuses.
    let value = text.trim_matches(|c| matches!(c, ' ' | '\n' | '\t' | '\r'));
    if value == "null" {
        return Ok(Some(Vec::new()));
    }
    if !value.starts_with('[') {
        return Err(match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => "expected a list of tolerations".to_owned(),
            Err(e) => message(&e),
        });
    }
    // As Kubernetes writes them, each toleration's members named exactly and plain: in one
    // pass. Anything else (another name, `null`, an escape) is read member by member.
    if let Some(list) = plain_fields_only(text, PluginToleration::from_fields) {
        return Ok(Some(list));
    }
    let entries = items(text).map_err(|e| message(&e))?;
    entries
        .into_iter()
        .map(toleration)
        .collect::<Result<_, _>>()
        .map(Some)
}

/// One `v1.Toleration` (its JSON text, checked) as `encoding/json` fills it: `null` is an empty
/// toleration, member names match in any case and the last in the document wins, `null` leaves
/// a string as it was and unsets `tolerationSeconds`, unknown members are ignored.
fn toleration(entry: &str) -> Result<PluginToleration, String> {
    let mut t = PluginToleration::default();
    if entry == "null" {
        return Ok(t);
    }
    if !entry.starts_with('{') {
        return Err("expected a toleration object".to_owned());
    }
    for (name, value) in members(entry).map_err(|e| message(&e))? {
        let field = |wanted: &str| names_field(name.as_str(), wanted);
        let text = if field("key") {
            &mut t.key
        } else if field("operator") {
            &mut t.operator
        } else if field("value") {
            &mut t.value
        } else if field("effect") {
            &mut t.effect
        } else if field("tolerationSeconds") {
            // A pointer in Go, which `null` sets to nil. A number here is JSON already: Go
            // takes an integer literal in int64's range only.
            let seconds = || {
                value
                    .parse()
                    .map_err(|_| "tolerationSeconds: expected an integer")
            };
            t.toleration_seconds = if value == "null" {
                None
            } else {
                Some(seconds()?)
            };
            continue;
        } else {
            continue;
        };
        if value != "null" {
            let string = value
                .starts_with('"')
                .then(|| JsonStr::read(value).ok())
                .flatten();
            let string = string.ok_or_else(|| format!("{name}: expected a string"))?;
            string.as_str().clone_into(text);
        }
    }
    Ok(t)
}

/// Whether the member name `name` names the field `field` (ASCII) as `encoding/json` matches
/// them: ASCII letters in any case, and the two other letters that fold to ASCII ones, the
/// Kelvin sign to `k` and the long s to `s`.
fn names_field(name: &str, field: &str) -> bool {
    let mut chars = name.chars();
    let same = field.bytes().all(|f| match chars.next() {
        Some(c) if c.is_ascii() => f.eq_ignore_ascii_case(&(c as u8)),
        Some('\u{212a}') => f.eq_ignore_ascii_case(&b'k'),
        Some('\u{17f}') => f.eq_ignore_ascii_case(&b's'),
        _ => false,
    });
    same && chars.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_toleration_restriction::algebra::t;

    #[test]
    fn annotations_read_as_the_plugin_reads_them() {
        type Read<'t> = Result<Option<Vec<PluginToleration>>, &'t str>;
        let deep = format!(
            "[{}{}]",
            "[".repeat(GO_MAX_NESTING),
            "]".repeat(GO_MAX_NESTING)
        );
        let deepest = format!("[{{\"x\":{}{}}}]", "[".repeat(9_998), "]".repeat(9_998));
        let cases: [(Option<&str>, Read); 22] = [
            (None, Ok(None)),
            (Some(""), Ok(Some(vec![]))),
            (Some("[]"), Ok(Some(vec![]))),
            (Some("null"), Ok(Some(vec![]))),
            (Some(" [ ] "), Ok(Some(vec![]))),
            (
                Some(r#"[{"key":"k","operator":"Equal","value":"v","effect":"NoSchedule"}]"#),
                Ok(Some(vec![t("k", "Equal", "v", "NoSchedule", None)])),
            ),
            // Kubernetes' own test marshals the internal type, whose members are capitalised.
            (
                r#"[{"Key":"k","Operator":"Exists","Value":"","Effect":"NoExecute","TolerationSeconds":60}]"#.into(),
                Ok(Some(vec![t("k", "Exists", "", "NoExecute", Some(60))])),
            ),
            (
                Some(r#"[null, {"key": null, "tolerationSeconds": null, "other": [1]}, {"key":"a","key":"b"}]"#),
                Ok(Some(vec![t("", "", "", "", None), t("", "", "", "", None), t("b", "", "", "", None)])),
            ),
            // Document order, as Go reads it: the last of two names that differ in case wins.
            (
                Some(r#"[{"key":"a","KEY":"b","tolerationSeconds":5,"TolerationSeconds":null}]"#),
                Ok(Some(vec![t("b", "", "", "", None)])),
            ),
            (
                Some(r#"[{"KEY":"b","key":"a","value":"x","Value":null,"k\u0065y":"c"}]"#),
                Ok(Some(vec![t("c", "", "x", "", None)])),
            ),
            // The Kelvin sign and the long s fold to `k` and `s`; no other letter folds.
            (
                Some("[{\"\u{212a}EY\":\"a\",\"toleration\u{17f}econds\":1,\"op\u{e9}rator\":\"x\"}]"),
                Ok(Some(vec![t("a", "", "", "", Some(1))])),
            ),
            // Half a surrogate pair is U+FFFD, in a value, a name or a member not read.
            (
                Some(r#"[{"value":"\ud800\ud83d\ude00\udc00","ke\udfffy":"a","x":"\ud800"}]"#),
                Ok(Some(vec![t("", "", "\u{fffd}\u{1f600}\u{fffd}", "", None)])),
            ),
            (Some(r#"[{"value":"\\ud800"}]"#), Ok(Some(vec![t("", "", "\\ud800", "", None)]))),
            (Some(&deepest), Ok(Some(vec![t("", "", "", "", None)]))),
            (Some(&deep), Err("nests more than 10000 levels")),
            (Some(r#"[{"tolerationSeconds":1.0}]"#), Err("tolerationSeconds: expected an integer")),
            (Some(r#"[{"effect":["NoSchedule"]}]"#), Err("effect: expected a string")),
            (Some("  "), Err("EOF")),
            (Some("{}"), Err("expected a list of tolerations")),
            (Some("[1]"), Err("expected a toleration object")),
            (Some(r#"[{"tolerationSeconds":"60"}]"#), Err("tolerationSeconds: expected an integer")),
            (Some(r#"[{"key":"k"}] x"#), Err("trailing characters")),
        ];
        for (text, want) in cases {
            match (read(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
                (Err(got), Err(fragment)) => assert!(got.contains(fragment), "{text:?}: {got}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn only_the_plugins_two_annotations_are_read() {
        type Pair<'t> = Result<[Option<&'t str>; 2], &'t str>;
        let cases: [(Option<&str>, Pair); 7] = [
            (None, Ok([None, None])),
            (Some("{}"), Ok([None, None])),
            (
                Some(
                    r#"{"scheduler.alpha.kubernetes.io/tolerationsWhitelist": "[{\"key\":\"a\"}]", "x": "{\"y\"}"}"#,
                ),
                Ok([None, Some(r#"[{"key":"a"}]"#)]),
            ),
            // The last of a key given twice, as the API server keeps it.
            (
                Some(
                    r#"{"scheduler.alpha.kubernetes.io/defaultTolerations": "[]", "scheduler.alpha.kubernetes.io/defaultTolerations": "null"}"#,
                ),
                Ok([Some("null"), None]),
            ),
            (
                Some(
                    r#"{"scheduler.alpha.kubernetes.io/defaultTolerations": "", "scheduler.alpha.kubernetes.io/tolerations\u0057hitelist": "[]"}"#,
                ),
                Ok([Some(""), Some("[]")]),
            ),
            (
                Some(r#"{"x": 1}"#),
                Err("annotations: invalid type: integer `1`, expected a string"),
            ),
            (Some("[]"), Err("annotations: invalid type: sequence")),
        ];
        for (text, want) in cases {
            let got = plugin_pair(text);
            let got = got
                .as_ref()
                .map(|pair| pair.each_ref().map(|v| v.as_ref().map(JsonStr::as_str)));
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
                (Err(got), Err(fragment)) => assert!(got.starts_with(fragment), "{text:?}: {got}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
