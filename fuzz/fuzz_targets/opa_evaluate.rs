//! The OPA-ABI entry (`taintguard_opa::evaluate`, what `eval`/`opa_eval` answer) on arbitrary
//! input. The first byte picks the entrypoint, the policy and the data document (settings); the
//! rest is the input. Whatever the input, the answer must be a result set of the shape the hosts
//! read, since Kubewarden's gatekeeper mode allows a request whose result it cannot read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use taintguard::taint_preservation::TaintPreservation;
use taintguard::testkit::bundled_settings;
use taintguard::toleration_injection::TolerationInjection;
use taintguard_opa::{evaluate, Entrypoint};

fuzz_target!(|data: &[u8]| {
    let Some((&choice, input)) = data.split_first() else {
        return;
    };
    let entrypoint = if choice & 1 == 0 {
        Entrypoint::Violation
    } else {
        Entrypoint::Main
    };
    let settings = bundled_settings();
    let data_doc = match usize::from(choice >> 2) % (settings.len() + 1) {
        0 => None,
        i => Some(settings[i - 1].as_bytes()),
    };
    let answer = if choice & 2 == 0 {
        evaluate::<TaintPreservation>(entrypoint, Some(input), data_doc)
    } else {
        evaluate::<TolerationInjection>(entrypoint, Some(input), data_doc)
    };
    let set: Value =
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"));
    let result = &set[0]["result"];
    assert_eq!(set.as_array().map(Vec::len), Some(1), "{answer}");
    match entrypoint {
        Entrypoint::Violation => {
            let list = result.as_array().unwrap_or_else(|| panic!("{answer}"));
            assert!(list.iter().all(|v| v["msg"].is_string()), "{answer}");
        }
        Entrypoint::Main => {
            let allowed = &result["response"]["allowed"];
            assert!(allowed.is_boolean(), "{answer}");
        }
    }
});
