//! `cargo run --release -p taintguard-opa --example profile_gatekeeper -- POLICY PAYLOAD
//! [ROUNDS]`: runs the gatekeeper entrypoint (`policy/violation`) natively on the input a host
//! would build from one waPC `validate` payload (`bench --dump` writes them): `{"parameters":
//! settings, "review": request}`. For profiling under `valgrind --tool=callgrind`; POLICY is
//! `taint-preservation`, `toleration-injection`, or `baseline` (what
//! benchmarks/baseline-gatekeeper does).

use taint_preservation::TaintPreservation;
use taintguard_opa::{evaluate, Entrypoint};
use toleration_injection::TolerationInjection;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [policy, path, rest @ ..] = &args[..] else {
        eprintln!("usage: profile_gatekeeper POLICY PAYLOAD [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = rest.first().map_or(1, |r| r.parse().expect("ROUNDS"));
    let payload: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("payload")).expect("JSON payload");
    let input = serde_json::to_vec(&serde_json::json!({
        "parameters": payload["settings"],
        "review": payload["request"],
    }))
    .expect("JSON values serialise");
    let run: fn(&[u8]) -> String = match policy.as_str() {
        "taint-preservation" => {
            |input| evaluate::<TaintPreservation>(Entrypoint::Violation, Some(input), None)
        }
        "toleration-injection" => {
            |input| evaluate::<TolerationInjection>(Entrypoint::Violation, Some(input), None)
        }
        "baseline" => baseline,
        other => panic!("unknown policy {other}"),
    };
    let mut answer = String::new();
    for _ in 0..rounds {
        answer = run(std::hint::black_box(&input));
    }
    println!("{answer}");
}

/// What benchmarks/baseline-gatekeeper does: both halves of the input parsed into `Value`s.
fn baseline(input: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Input<'a> {
        #[serde(borrow)]
        review: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        parameters: &'a serde_json::value::RawValue,
    }
    let input: Input = serde_json::from_slice(input).expect("a gatekeeper input");
    let review: serde_json::Value = serde_json::from_str(input.review.get()).expect("JSON");
    let parameters: serde_json::Value = serde_json::from_str(input.parameters.get()).expect("JSON");
    let accepted = review.get("operation").is_some() && !parameters.is_null();
    format!(r#"[{{"result":[],"accepted":{accepted}}}]"#)
}
