use serde_json::{json, Value};
use taint_preservation::TaintPreservation;

use super::*;

/// The AdmissionRequest inside one of taint-preservation's example AdmissionReviews.
fn request(name: &str) -> Value {
    let path = format!(
        "{}/../../policies/taint-preservation/examples/requests/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let review: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    review["request"].clone()
}

fn run(entrypoint: Entrypoint, input: Option<&[u8]>, data: Option<&[u8]>) -> Value {
    let text = evaluate::<TaintPreservation>(entrypoint, input, data);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid result {text}: {e}"))
}

/// The violations of a gatekeeper result, checking the shape Kubewarden needs not to fail open.
fn violations(result: &Value) -> &Vec<Value> {
    let set = result.as_array().expect("a result set");
    assert_eq!(set.len(), 1, "{result}");
    let list = set[0]["result"].as_array().expect("result is a list");
    for violation in list {
        assert!(violation["msg"].is_string(), "{violation}");
        assert_eq!(violation["details"]["policy"], "taint-preservation");
    }
    list
}

fn response(result: &Value) -> &Value {
    let response = &result[0]["result"]["response"];
    assert!(response["uid"].is_string(), "{result}");
    assert!(response["allowed"].is_boolean(), "{result}");
    response
}

#[test]
fn entrypoint_ids_match_the_advertised_names() {
    let names: serde_json::Map<String, Value> = serde_json::from_str(ENTRYPOINTS_JSON).unwrap();
    assert_eq!(names.len(), 2);
    for (name, id) in names {
        let entry = Entrypoint::from_id(id.as_i64().unwrap() as i32).unwrap();
        assert_eq!(entry as i64, id.as_i64().unwrap(), "{name}");
    }
    assert_eq!(Entrypoint::from_id(0), Some(Entrypoint::Violation));
    assert_eq!(Entrypoint::from_id(2), None);
}

#[test]
fn gatekeeper_bad_input_is_a_violation_that_says_so() {
    let review = request("admin-uncordons");
    let with = |v: Value| v.to_string().into_bytes();
    let cases: Vec<(Option<Vec<u8>>, &str)> = vec![
        (None, "no input"),
        (Some(b"\xff\xfe".to_vec()), "not UTF-8"),
        (
            Some(b"[1,2]".to_vec()),
            "must be a JSON object, not `[1,2]`",
        ),
        (Some(b"\"review\"".to_vec()), "must be a JSON object"),
        (Some(b"".to_vec()), "must be a JSON object"),
        (Some(br#"{"review": {"uid": "x""#.to_vec()), "EOF"),
        (
            Some(br#"{"review": {}} trailing"#.to_vec()),
            "trailing characters",
        ),
        (Some(b"{}".to_vec()), "has no `review`"),
        (Some(br#"{"review": null}"#.to_vec()), "has no `review`"),
        (Some(br#"{"review": {}}"#.to_vec()), "missing field"),
        (Some(with(json!({"review": 7}))), "invalid type"),
        (
            Some(with(
                json!({"review": review, "parameters": {"mdoe": "deny"}}),
            )),
            "mdoe",
        ),
        (
            Some(with(json!({"review": review, "parameters": [1]}))),
            "settings",
        ),
    ];
    for (input, want) in cases {
        let result = run(Entrypoint::Violation, input.as_deref(), None);
        let list = violations(&result);
        assert_eq!(list.len(), 1, "{result}");
        let msg = list[0]["msg"].as_str().unwrap();
        assert!(msg.starts_with("taint-preservation: "), "{msg}");
        assert!(msg.contains(want), "want {want:?} in {msg}");
        assert_eq!(list[0]["details"]["code"], 400);
    }
}

/// What the module answers when it cannot read the host's input at all: the 400 of a malformed
/// input, in each entrypoint's shape.
#[test]
fn refusals_have_each_entrypoints_shape() {
    let problem = "the host's input has a negative length (-1)";
    let text = refuse::<TaintPreservation>(Entrypoint::Violation, problem);
    let result: Value = serde_json::from_str(&text).unwrap();
    let list = violations(&result);
    assert_eq!(list.len(), 1, "{result}");
    assert_eq!(list[0]["msg"], format!("taint-preservation: {problem}"));
    assert_eq!(list[0]["details"]["code"], 400);

    let text = refuse::<TaintPreservation>(Entrypoint::Main, problem);
    let result: Value = serde_json::from_str(&text).unwrap();
    let response = response(&result);
    assert_eq!(response["allowed"], false, "{result}");
    assert_eq!(response["uid"], "");
    assert_eq!(
        response["status"],
        json!({"message": format!("taint-preservation: {problem}"), "code": 400})
    );
}

#[test]
fn gatekeeper_reports_what_restore_mode_would_restore() {
    let cases = [
        // (request, parameters, violations expected, a word of the message)
        (
            "incident-1-stale-taint-patch",
            json!({}),
            1,
            "example.com/dedicated",
        ),
        (
            "incident-1-stale-taint-patch",
            json!(null),
            1,
            "example.com/dedicated",
        ),
        (
            "incident-1-stale-taint-patch",
            json!({"mode": "deny"}),
            1,
            "example.com/dedicated",
        ),
        (
            "incident-3-readd-uninitialized",
            json!({}),
            1,
            "uninitialized",
        ),
        ("admin-uncordons", json!({}), 0, ""),
        ("delete-node", json!({}), 0, ""),
    ];
    for (name, parameters, count, word) in cases {
        let mut input = json!({"review": request(name), "parameters": parameters});
        if parameters.is_null() {
            input.as_object_mut().unwrap().remove("parameters");
        }
        let result = run(
            Entrypoint::Violation,
            Some(input.to_string().as_bytes()),
            None,
        );
        let list = violations(&result);
        assert_eq!(list.len(), count, "{name}: {result}");
        if count > 0 {
            assert!(list[0]["msg"].as_str().unwrap().contains(word), "{result}");
            assert_eq!(list[0]["details"]["code"], 403, "{result}");
        } else {
            assert_eq!(result, json!([{"result": []}]));
        }
    }
}

#[test]
fn opa_mode_answers_an_admission_review_with_settings_from_data() {
    let incident = json!({"request": request("incident-1-stale-taint-patch")}).to_string();
    let allowed = json!({"request": request("admin-uncordons")}).to_string();
    /// (name, input, data, allowed, status code, a word of the message)
    type Case<'a> = (
        &'a str,
        Option<&'a [u8]>,
        Option<&'a [u8]>,
        bool,
        u16,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        (
            "default settings",
            Some(allowed.as_bytes()),
            None,
            true,
            0,
            "",
        ),
        (
            "incident",
            Some(incident.as_bytes()),
            Some(b"{}"),
            false,
            403,
            "example.com/dedicated",
        ),
        // Kubewarden puts the inventory of context-aware policies under `kubernetes`.
        (
            "inventory ignored",
            Some(allowed.as_bytes()),
            Some(br#"{"kubernetes":{"nodes":[]},"mode":"deny"}"#),
            true,
            0,
            "",
        ),
        (
            "bad settings",
            Some(allowed.as_bytes()),
            Some(br#"{"mode":"x"}"#),
            false,
            400,
            "mode",
        ),
        (
            "data not an object",
            Some(allowed.as_bytes()),
            Some(b"[]"),
            false,
            400,
            "data",
        ),
        ("no input", None, None, false, 400, "no input"),
        (
            "no request",
            Some(b"{}"),
            None,
            false,
            400,
            "has no `request`",
        ),
        (
            "gatekeeper input",
            Some(br#"{"review":{}}"#),
            None,
            false,
            400,
            "has no `request`",
        ),
        ("not JSON", Some(b"{"), None, false, 400, "malformed input"),
        (
            "not an object",
            Some(b"null"),
            None,
            false,
            400,
            "must be a JSON object",
        ),
    ];
    for (name, input, data, allowed, code, word) in cases {
        let result = run(Entrypoint::Main, input, data);
        assert_eq!(result[0]["result"]["kind"], "AdmissionReview", "{name}");
        let response = response(&result);
        assert_eq!(response["allowed"], allowed, "{name}: {result}");
        if allowed {
            assert!(response.get("status").is_none(), "{name}: {result}");
        } else {
            assert_eq!(response["status"]["code"], code, "{name}: {result}");
            let message = response["status"]["message"].as_str().unwrap();
            assert!(message.contains(word), "{name}: want {word:?} in {message}");
        }
    }
    let result = run(Entrypoint::Main, Some(incident.as_bytes()), None);
    assert_eq!(
        response(&result)["uid"],
        request("incident-1-stale-taint-patch")["uid"]
    );
}

#[test]
fn settings_keep_everything_but_the_inventory() {
    let cases: [(&[u8], &str); 3] = [
        (br#"{"mode":"deny"}"#, r#"{"mode":"deny"}"#),
        (
            br#"{"a":1,"kubernetes":{},"b\"":[2]}"#,
            r#"{"a":1,"b\"":[2]}"#,
        ),
        (br#"{"kubernetes":null}"#, "{}"),
    ];
    for (data, want) in cases {
        assert_eq!(settings_from_data(Some(data)).unwrap(), want);
    }
    assert_eq!(settings_from_data(None).unwrap(), "{}");
}
