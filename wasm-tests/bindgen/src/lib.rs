//! Nothing here: the suites are in `tests/`. They are compiled for wasm32-unknown-unknown and run
//! by `wasm-bindgen-test-runner` in Node (default) and in headless Chromium
//! (`WASM_BINDGEN_USE_BROWSER=1` with `CHROMEDRIVER`); `./build.sh test` runs both.

// clippy.toml's four-parameter rule is for the shipped code: src/, policies/, abi/ and cli/.
#![allow(clippy::too_many_arguments)]
