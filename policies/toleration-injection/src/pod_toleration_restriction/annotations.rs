//! A Namespace's two PodTolerationRestriction annotations, read as the plugin reads them
//! (docs/pod-toleration-restriction.md, "Namespace annotations"): Go's `encoding/json` into
//! `[]v1.Toleration`, so member names match in any case, unknown members are ignored, `null`
//! leaves a field empty, and nothing else about the tolerations is checked.

use serde_json::Value;

use taintguard::json::error::message;
use taintguard::label_selector::{parse_labels, Labels};

use super::algebra::PluginToleration;

/// The namespace's default tolerations.
pub const DEFAULTS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
/// The tolerations the namespace's Pods may carry.
pub const WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";

/// The annotations object `annotations` (its text; `None` when absent or `null`).
///
/// # Errors
///
/// An `annotations` that is not an object of strings, in serde_json's words.
pub fn read_all(annotations: Option<&str>) -> Result<Labels<'_>, String> {
    parse_labels(annotations).map_err(|e| format!("annotations: {}", message(&e)))
}

/// The value of annotation `key` (the last, as the API server keeps it, if given twice).
pub fn get<'a>(annotations: &'a Labels<'_>, key: &str) -> Option<&'a str> {
    annotations
        .iter()
        .rev()
        .find(|(k, _)| k.as_str() == key)
        .map(|(_, v)| v.as_str())
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
    // Read as a `Value`, whose reader the module already links for JSONPath conditions: a
    // reader of its own was 3 KB of a module that must stay under 400 KB.
    match serde_json::from_str(text).map_err(|e| message(&e))? {
        Value::Null => Ok(Some(Vec::new())),
        Value::Array(entries) => {
            let mut list = Vec::with_capacity(entries.len());
            for entry in &entries {
                list.push(toleration(entry)?);
            }
            Ok(Some(list))
        }
        _ => Err("expected a list of tolerations".to_owned()),
    }
}

/// One `v1.Toleration` as `encoding/json` fills it: `null` is an empty toleration, member names
/// match in any case, `null` leaves a field empty, unknown members are ignored. (Go keeps the
/// last of two members that differ only in case in document order; this, in name order.)
fn toleration(entry: &Value) -> Result<PluginToleration, String> {
    let members = match entry {
        Value::Null => return Ok(PluginToleration::default()),
        Value::Object(members) => members,
        _ => return Err("expected a toleration object".to_owned()),
    };
    let mut t = PluginToleration::default();
    for (name, value) in members {
        let field = |wanted: &str| name.eq_ignore_ascii_case(wanted);
        let text = if field("key") {
            &mut t.key
        } else if field("operator") {
            &mut t.operator
        } else if field("value") {
            &mut t.value
        } else if field("effect") {
            &mut t.effect
        } else if field("tolerationSeconds") {
            t.toleration_seconds = match value {
                Value::Null => None,
                Value::Number(n) => {
                    Some(n.as_i64().ok_or("tolerationSeconds: expected an integer")?)
                }
                _ => return Err("tolerationSeconds: expected an integer".to_owned()),
            };
            continue;
        } else {
            continue;
        };
        match value {
            Value::Null => {}
            Value::String(s) => s.clone_into(text),
            _ => return Err(format!("{name}: expected a string")),
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(key: &str, op: &str, value: &str, effect: &str, seconds: Option<i64>) -> PluginToleration {
        PluginToleration::of(key, op, value, effect, seconds)
    }

    #[test]
    fn annotations_read_as_the_plugin_reads_them() {
        type Read<'t> = Result<Option<Vec<PluginToleration>>, &'t str>;
        let cases: [(Option<&str>, Read); 13] = [
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
}
