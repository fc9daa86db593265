//! A host other than policy-server may keep one instance for many requests. The waPC modules
//! allocate from a bump arena rewound to where it stood when each call began
//! (abi/kubewarden/src/arena.rs): on a kept instance every answer must be the first one's, and
//! the linear memory must stop growing after the first call.

use wasm_tests::examples::Expect;
use wasm_tests::limits::cases;
use wasm_tests::probe::Probe;
use wasm_tests::{policies, read_artifact};

#[test]
fn a_kept_instance_answers_alike_and_does_not_grow() {
    for name in policies() {
        // A policy that never mutates has no mutating limit case (wasm_tests::limits) to keep
        // an instance through.
        let metadata = wasm_tests::repo_root()
            .join("policies")
            .join(&name)
            .join("metadata.yml");
        let metadata = std::fs::read_to_string(metadata).unwrap();
        if !metadata.lines().any(|line| line.trim() == "mutating: true") {
            continue;
        }
        let probe = Probe::from_bytes(&read_artifact(&format!("{name}.wasm"))).unwrap();
        let mut tried = 0;
        for case in cases()
            .iter()
            .filter(|c| c.policy == name && c.expect == Expect::Mutated)
        {
            let payload = format!(
                r#"{{"request":{},"settings":{}}}"#,
                case.request, case.settings
            );
            let calls = probe.calls_on_one_instance("validate", payload.as_bytes(), 4);
            let first = calls[0]
                .answer
                .as_ref()
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            for (i, call) in calls.iter().enumerate() {
                assert_eq!(call.answer.as_ref(), Ok(first), "{} call {i}", case.name);
            }
            assert_eq!(
                calls[1].peak_memory, calls[3].peak_memory,
                "{}: the memory grew after the first call",
                case.name
            );
            tried += 1;
        }
        assert!(tried > 0, "{name}: no mutating limit case");
    }
}
