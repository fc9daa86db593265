//! Prints the limit cases of `wasm_tests::limits` for the JavaScript hosts' tests, three lines
//! each: `{"name", "policy", "expect", "expectValidating", "mutationTooDeep"}`, the request, the
//! settings. Request and settings stay text: JavaScript's JSON.stringify overflows its stack on the deep ones.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use std::io::Write;

use wasm_tests::examples::Expect;
use wasm_tests::limits::cases;

fn word(e: Expect) -> &'static str {
    match e {
        Expect::Accepted => "accepted",
        Expect::Mutated => "mutated",
        Expect::Rejected => "rejected",
    }
}

fn main() {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for case in cases() {
        writeln!(
            out,
            "{{\"name\":{},\"policy\":\"{}\",\"expect\":\"{}\",\"expectValidating\":\"{}\",\"mutationTooDeep\":{}}}\n{}\n{}",
            serde_json::to_string(&case.name).expect("a string"),
            case.policy,
            word(case.expect),
            word(case.expect_validating),
            case.mutation_too_deep,
            case.request,
            case.settings
        )
        .expect("stdout");
    }
}
