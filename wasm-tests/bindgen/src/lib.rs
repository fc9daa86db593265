//! Nothing here: the suites are in `tests/`. They are compiled for wasm32-unknown-unknown and run
//! by `wasm-bindgen-test-runner` in Node (default) and in headless Chromium
//! (`WASM_BINDGEN_USE_BROWSER=1` with `CHROMEDRIVER`); `./build.sh test` runs both.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]
