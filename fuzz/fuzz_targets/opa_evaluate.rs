//! See `taintguard_testkit::targets::opa_evaluate`: the body lives in the test kit so that
//! `cargo test` replays the regression fixtures through the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = taintguard_testkit::targets::opa_evaluate(data) {
        panic!("{broken}");
    }
});
