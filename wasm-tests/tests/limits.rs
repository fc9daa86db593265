//! The limit cases of `wasm_tests::limits` in the waPC artifacts, through the host stack
//! policy-server runs: each gets its verdict, never a trap. Time and the linear-memory
//! high-water mark are printed (`cargo test -p wasm-tests --test limits -- --nocapture`), never
//! asserted: they depend on the machine.

use std::time::Instant;

use serde::Deserialize;
use serde_json::value::RawValue;
use wasm_tests::examples::Expect;
use wasm_tests::kubewarden::WapcPolicy;
use wasm_tests::limits::{cases, nested, DEEP};
use wasm_tests::probe::Probe;
use wasm_tests::{policies, read_artifact};

/// The head of a `ValidationResponse`. The mutated object stays raw: it may carry the request's
/// deep nesting back, which a `Value` could not hold.
#[derive(Deserialize)]
struct Response<'a> {
    accepted: bool,
    #[serde(default)]
    code: Option<u16>,
    #[serde(borrow, default)]
    mutated_object: Option<&'a RawValue>,
}

fn outcome(answer: &[u8]) -> (Expect, Option<u16>) {
    let r: Response = serde_json::from_slice(answer).expect("a ValidationResponse");
    let expect = match (r.accepted, r.mutated_object.is_some()) {
        (false, _) => Expect::Rejected,
        (true, true) => Expect::Mutated,
        (true, false) => Expect::Accepted,
    };
    (expect, r.code)
}

#[test]
fn limit_cases_get_their_verdicts_in_the_wapc_artifacts() {
    let cases = cases();
    // The policies the limit cases are written for (wasm_tests::limits).
    let mut names: Vec<&str> = cases.iter().map(|case| case.policy).collect();
    names.sort_unstable();
    names.dedup();
    let policies: Vec<_> = names
        .into_iter()
        .map(|name| {
            let bytes = read_artifact(&format!("{name}.wasm"));
            (
                name,
                WapcPolicy::from_bytes(&bytes).unwrap(),
                Probe::from_bytes(&bytes).unwrap(),
            )
        })
        .collect();
    for case in cases {
        let (_, policy, probe) = policies.iter().find(|(n, ..)| *n == case.policy).unwrap();
        let payload = format!(
            r#"{{"request":{},"settings":{}}}"#,
            case.request, case.settings
        );
        let started = Instant::now();
        let answer = policy
            .call("validate", payload.as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let elapsed = started.elapsed();
        let (got, code) = outcome(&answer);
        assert_eq!(got, case.expect, "{} [{}]", case.name, case.policy);
        if got == Expect::Rejected {
            assert_eq!(
                code,
                Some(400),
                "{}: a malformed request is a 400",
                case.name
            );
        }
        let measured = probe.call("validate", payload.as_bytes());
        let probed = measured
            .answer
            .unwrap_or_else(|e| panic!("{} in the probe: {e}", case.name));
        assert_eq!(
            outcome(&probed).0,
            case.expect,
            "{} in the probe",
            case.name
        );
        println!(
            "{:<22} {:<58} {:>5} KiB in  {:?}  {:>6.1} ms  memory {:>6} KiB",
            case.policy,
            case.name,
            payload.len() / 1024,
            got,
            elapsed.as_secs_f64() * 1000.0,
            measured.peak_memory / 1024
        );
    }
}

#[test]
fn deep_settings_are_invalid_not_a_trap() {
    for name in policies() {
        let policy = WapcPolicy::from_bytes(&read_artifact(&format!("{name}.wasm"))).unwrap();
        for settings in [
            nested(DEEP),
            format!("[{}]", nested(DEEP)),
            "[".repeat(DEEP),
        ] {
            let answer = policy
                .call("validate_settings", settings.as_bytes())
                .unwrap();
            let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(answer["valid"], false, "{name}: {answer}");
            assert!(
                answer["message"]
                    .as_str()
                    .unwrap()
                    .contains("recursion limit"),
                "{name}: {answer}"
            );
        }
    }
}

/// A payload that is not even an envelope, 10,000 levels deep, is a 400 too.
#[test]
fn deep_garbage_payloads_are_rejections() {
    for name in policies() {
        let policy = WapcPolicy::from_bytes(&read_artifact(&format!("{name}.wasm"))).unwrap();
        for payload in [
            nested(DEEP),
            "[".repeat(DEEP),
            format!(r#"{{"request":{}}}"#, "[".repeat(DEEP)),
        ] {
            let answer = policy.call("validate", payload.as_bytes()).unwrap();
            assert_eq!(outcome(&answer), (Expect::Rejected, Some(400)), "{name}");
        }
    }
}
