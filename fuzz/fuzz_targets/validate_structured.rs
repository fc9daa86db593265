//! See `taintguard_testkit::targets::validate_structured`: the body lives in the test kit so that
//! `cargo test` replays the regression fixtures through the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = taintguard_testkit::targets::validate_structured(data) {
        panic!("{broken}");
    }
});
