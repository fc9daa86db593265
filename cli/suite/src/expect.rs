//! A policy's answer held against a case's expectation: every difference as one line that says
//! what was expected and what came, so a failure reads as a diff.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::suite::{Expect, Verdict};

/// What a waPC `ValidationResponse` amounts to.
pub fn verdict(response: &Value) -> Verdict {
    if response["accepted"] != Value::Bool(true) {
        Verdict::Rejected
    } else if response.get("mutated_object").is_some_and(|m| !m.is_null()) {
        Verdict::Mutated
    } else {
        Verdict::Accepted
    }
}

/// The differences between `response` (to a request whose object was `object`) and `expect`;
/// none when the response meets it. Each expectation's lines come in the order a suite lists
/// them: verdict, message, code, warnings, audit annotations, patched object.
pub fn differences(expect: &Expect, response: &Value, object: &Value) -> Vec<String> {
    let mut out = verdict_and_message(expect, response);
    if let Some(code) = expect.code {
        if response["code"].as_u64() != Some(u64::from(code)) {
            out.push(format!("code: expected {code}, got {}", response["code"]));
        }
    }
    if let Some(want) = &expect.warnings {
        let got: Vec<&str> = response["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        out.extend(warnings(want, &got));
    }
    if let Some(want) = &expect.audit_annotations {
        out.extend(audit_annotations(
            want,
            response["audit_annotations"].as_object(),
        ));
    }
    if let Some(want) = &expect.patched_object {
        let after = match response.get("mutated_object") {
            Some(mutated) if !mutated.is_null() => mutated,
            _ => object,
        };
        subset("patchedObject", want, after, &mut out);
    }
    out
}

/// The verdict against the expected one (a rejection's message with it, which says why), and
/// the message against the fragment and the pattern expected of it.
fn verdict_and_message(expect: &Expect, response: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let got = verdict(response);
    let message = response["message"].as_str().unwrap_or_default();
    if got != expect.verdict {
        let why = match got {
            Verdict::Rejected => format!(": {message}"),
            _ => String::new(),
        };
        out.push(format!(
            "verdict: expected {}, got {got}{why}",
            expect.verdict
        ));
    }
    if let Some(want) = &expect.message {
        if !message.contains(want.as_str()) {
            out.push(format!(
                "message: expected it to contain {want:?}, got {message:?}"
            ));
        }
    }
    if let Some(regex) = &expect.message_regex {
        if !regex.is_match(message) {
            out.push(format!(
                "message: expected it to match /{regex}/, got {message:?}"
            ));
        }
    }
    out
}

/// Each expected audit annotation holds its fragment; one the suite does not list fails it, as
/// an unlisted warning does.
fn audit_annotations(
    want: &BTreeMap<String, String>,
    got: Option<&Map<String, Value>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (key, fragment) in want {
        match got.and_then(|g| g.get(key)).and_then(Value::as_str) {
            Some(value) if value.contains(fragment.as_str()) => {}
            Some(value) => out.push(format!(
                "auditAnnotations.{key}: expected it to contain {fragment:?}, got {value:?}"
            )),
            None => out.push(format!("auditAnnotations.{key}: expected, missing")),
        }
    }
    for key in got.into_iter().flatten().map(|(k, _)| k) {
        if !want.contains_key(key) {
            out.push(format!("auditAnnotations.{key}: not expected, present"));
        }
    }
    out
}

/// Each expected warning is a fragment of the warning in its place; the counts must agree, so
/// a warning the suite does not list fails it.
fn warnings(want: &[String], got: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, fragment) in want.iter().enumerate() {
        match got.get(i) {
            Some(warning) if warning.contains(fragment.as_str()) => {}
            Some(warning) => out.push(format!(
                "warnings[{i}]: expected it to contain {fragment:?}, got {warning:?}"
            )),
            None => out.push(format!("warnings[{i}]: expected {fragment:?}, missing")),
        }
    }
    for (i, warning) in got.iter().enumerate().skip(want.len()) {
        out.push(format!("warnings[{i}]: not expected, got {warning:?}"));
    }
    out
}

/// `got` has what `want` names: objects by the members named (a `null` member must be absent),
/// arrays element by element with the same length, anything else equal.
fn subset(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, want) in want {
                let at = format!("{path}.{key}");
                match got.get(key) {
                    Some(got) => subset(&at, want, got, out),
                    None if want.is_null() => {}
                    None => out.push(format!("{at}: expected {want}, missing")),
                }
            }
        }
        (Value::Array(want_items), Value::Array(got_items))
            if want_items.len() == got_items.len() =>
        {
            for (i, (want, got)) in want_items.iter().zip(got_items).enumerate() {
                subset(&format!("{path}[{i}]"), want, got, out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!("{path}: expected {want}, got {got}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expect(verdict: Verdict) -> Expect {
        Expect {
            verdict,
            message: None,
            message_regex: None,
            code: None,
            warnings: None,
            audit_annotations: None,
            patched_object: None,
            gatekeeper: None,
        }
    }

    #[test]
    fn each_difference_is_one_line() {
        let taints = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
        let mutated = json!({"accepted": true, "mutated_object": taints, "warnings": ["w1"],
                             "audit_annotations": {"k": "v1"}});
        let rejected = json!({"accepted": false, "message": "no", "code": 403});
        let cases: Vec<(Expect, &Value, Vec<&str>)> = vec![
            (expect(Verdict::Mutated), &mutated, vec![]),
            (
                expect(Verdict::Accepted),
                &mutated,
                vec!["verdict: expected accepted, got mutated"],
            ),
            (
                expect(Verdict::Accepted),
                &rejected,
                vec!["verdict: expected accepted, got rejected: no"],
            ),
            (
                Expect {
                    message: Some("yes".into()),
                    code: Some(400),
                    ..expect(Verdict::Rejected)
                },
                &rejected,
                vec![
                    "message: expected it to contain \"yes\", got \"no\"",
                    "code: expected 400, got 403",
                ],
            ),
            (
                Expect {
                    message_regex: Some(regex_lite::Regex::new("^n.$").unwrap()),
                    ..expect(Verdict::Rejected)
                },
                &rejected,
                vec![],
            ),
            (
                Expect {
                    warnings: Some(vec![]),
                    ..expect(Verdict::Mutated)
                },
                &mutated,
                vec!["warnings[0]: not expected, got \"w1\""],
            ),
            (
                Expect {
                    warnings: Some(vec!["1".into(), "w2".into()]),
                    audit_annotations: Some([("j".to_owned(), "v".to_owned())].into()),
                    ..expect(Verdict::Mutated)
                },
                &mutated,
                vec![
                    "warnings[1]: expected \"w2\", missing",
                    "auditAnnotations.j: expected, missing",
                    "auditAnnotations.k: not expected, present",
                ],
            ),
            (
                Expect {
                    patched_object: Some(
                        json!({"spec": {"taints": [{"key": "b"}], "unschedulable": null}}),
                    ),
                    ..expect(Verdict::Mutated)
                },
                &mutated,
                vec!["patchedObject.spec.taints[0].key: expected \"b\", got \"a\""],
            ),
            (
                Expect {
                    patched_object: Some(json!({"spec": {"taints": []}})),
                    ..expect(Verdict::Mutated)
                },
                &mutated,
                vec!["patchedObject.spec.taints: expected [], got [{\"effect\":\"NoSchedule\",\"key\":\"a\"}]"],
            ),
        ];
        for (i, (expect, response, want)) in cases.iter().enumerate() {
            assert_eq!(differences(expect, response, &json!({})), *want, "case {i}");
        }
    }

    #[test]
    fn an_accepted_request_is_checked_against_its_own_object() {
        let object = json!({"spec": {"unschedulable": true}});
        let want = Expect {
            patched_object: Some(json!({"spec": {"unschedulable": true}})),
            ..expect(Verdict::Accepted)
        };
        assert!(differences(&want, &json!({"accepted": true}), &object).is_empty());
    }
}
