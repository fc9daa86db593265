//! `cargo run --release -p taintguard-kubewarden --example profile -- POLICY PAYLOAD [ROUNDS]`:
//! runs the adapter's `validate` natively on one `validate` payload (`bench --dump` writes them),
//! for profiling under `valgrind --tool=callgrind`. POLICY is `taint-preservation`,
//! `toleration-injection`, `baseline` (what benchmarks/baseline-policy does) or `answer` (what
//! benchmarks/answer-policy does before it returns its embedded answer).

use taint_preservation::TaintPreservation;
use taintguard::Policy;
use toleration_injection::TolerationInjection;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [policy, path, rest @ ..] = &args[..] else {
        eprintln!("usage: profile POLICY PAYLOAD [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = rest.first().map_or(1, |r| r.parse().expect("ROUNDS"));
    let payload = std::fs::read(path).expect("payload");
    let validate: fn(&[u8]) -> Vec<u8> = match policy.as_str() {
        "taint-preservation" => taintguard_kubewarden::validate_payload::<TaintPreservation>,
        "toleration-injection" => taintguard_kubewarden::validate_payload::<TolerationInjection>,
        "taint-preservation-settings" => settings_only::<TaintPreservation>,
        "toleration-injection-settings" => settings_only::<TolerationInjection>,
        "baseline" => |payload| {
            let value: serde_json::Value = serde_json::from_slice(payload).expect("JSON");
            let accepted = value.get("request").is_some();
            format!("{{\"accepted\":{accepted}}}").into_bytes()
        },
        "answer" => |payload| {
            serde_json::from_slice::<serde::de::IgnoredAny>(payload).expect("JSON");
            br#"{"accepted":true}"#.to_vec()
        },
        other => panic!("unknown policy {other}"),
    };
    let mut answer = Vec::new();
    for _ in 0..rounds {
        answer = validate(std::hint::black_box(&payload));
    }
    println!("{}", String::from_utf8_lossy(&answer));
}

fn settings_only<P: Policy>(payload: &[u8]) -> Vec<u8> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        settings: &'a serde_json::value::RawValue,
    }
    let envelope: Envelope = serde_json::from_slice(payload).expect("a validate payload");
    let built = taintguard::read_settings::<P>(envelope.settings.get());
    format!("{{\"valid\":{}}}", built.is_ok()).into_bytes()
}
