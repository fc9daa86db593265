//! The contract's depth limits on a real policy: a field the policy never reads, however deep,
//! never changes its decision; only a mutated object past serde_json's limit is refused, since no
//! engine could read it back.

use serde_json::{json, Value};

use taint_preservation::TaintPreservation;
use taintguard::{run, try_run, Half, NoCluster, Verdict};

/// The `request` of a bundled example, with `"@DEEP@"` in an unknown field of `at` (`object`
/// or the request itself).
fn example(name: &str, at: &str) -> String {
    let path = format!(
        "{}/examples/requests/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let review: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut request = review["request"].clone();
    match at {
        "object" => request["object"]["x-deep"] = json!("@DEEP@"),
        _ => request["x-deep"] = json!("@DEEP@"),
    }
    request.to_string()
}

/// A field no policy reads, nested so that the object (or the request) is `depth` levels
/// deep in all, counted as serde_json counts: the object itself is level 1. Past serde_json's
/// 127 levels, the mutating half refuses to hand back an object no engine could read, with
/// the limit named; anywhere else the policy's own decision stands, whatever the depth.
#[test]
fn unread_deep_fields_never_change_the_decision_only_a_mutation_past_the_limit() {
    let nested = |depth: usize| format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    // (example, where the deep field is, the validating half's code when it rejects)
    let cases = [
        ("incident-1-stale-taint-patch", "object", true),
        ("incident-1-stale-taint-patch", "request", true),
        ("label-update-by-service-account", "object", false),
        ("label-update-by-service-account", "request", false),
    ];
    for (name, at, mutates) in cases {
        for depth in [126, 127, 128, 129, 1000] {
            let request = example(name, at).replacen(r#""@DEEP@""#, &nested(depth - 1), 1);
            // The depth is counted as serde_json counts it: the request is one level more.
            let request_depth = if at == "object" { depth + 1 } else { depth };
            let whole = serde_json::from_str::<Value>(&request);
            assert_eq!(whole.is_ok(), request_depth <= 127, "{at} {depth}");
            let cluster = NoCluster("test");
            let got = try_run::<TaintPreservation>(&request, "{}", Half::Mutating, &cluster);
            let validating = run::<TaintPreservation>(&request, "{}", Half::Validating, &cluster);
            let case = format!("{name}, {at} {depth} deep: {got:?}");
            match (mutates, at, depth) {
                (true, "object", 128..) => {
                    let message = got.expect_err(&case);
                    assert!(
                        message.starts_with("taint-preservation: the mutated object would nest arrays and objects more than 127 levels deep (at byte "),
                        "{case}"
                    );
                    assert!(message.contains("recursion limit"), "{case}");
                    let verdict =
                        run::<TaintPreservation>(&request, "{}", Half::Mutating, &cluster);
                    assert_eq!(verdict.code(), Some(400), "{case}");
                    assert_eq!(verdict.message(), Some(message.as_str()));
                }
                (true, ..) => {
                    let verdict = got.expect(&case);
                    assert!(verdict.mutated_object().is_some(), "{case}");
                }
                (false, ..) => assert_eq!(got, Ok(Verdict::accept()), "{case}"),
            }
            // The validating half hands back no object: the policy's decision at any depth.
            assert_eq!(validating.accepted(), !mutates, "{case}: {validating:?}");
            assert_eq!(validating.code(), mutates.then_some(403), "{case}");
        }
    }
}
