#!/usr/bin/env bash
# taintguard build entry point.
#
#   ./build.sh          build every policy into dist/ and evaluate its example requests
#   ./build.sh test     install what the tests need, build, lint and run every test
#
# Every command installs what it needs first, so each works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf '\n==> %s\n' "$*"; }

# Policies are the folders of policies/ that carry Kubewarden metadata.
policies() {
  local dir
  for dir in policies/*/; do
    [ -f "$dir/metadata.yml" ] && basename "$dir"
  done
}

ensure_rust_targets() {
  local installed missing=()
  installed=$(rustup target list --installed)
  for target in "$@"; do
    grep -qx "$target" <<<"$installed" || missing+=("$target")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Rust targets: ${missing[*]}"
    rustup target add "${missing[@]}"
  fi
}

ensure_rust_components() {
  local installed
  installed=$(rustup component list --installed)
  for component in "$@"; do
    grep -q "^$component" <<<"$installed" || rustup component add "$component"
  done
}

# Wasm builds treat warnings as errors: a warning in a policy is a defect.
WASM_CARGO=(cargo --config 'target.wasm32-wasip1.rustflags=["-Dwarnings"]')

build_policies() {
  ensure_rust_targets wasm32-wasip1
  mkdir -p dist
  local names=() policy
  mapfile -t names < <(policies)
  say "building ${names[*]} for wasm32-wasip1"
  "${WASM_CARGO[@]}" build --release --target wasm32-wasip1 $(printf -- '-p %s ' "${names[@]}")
  cargo build -q -p wasm-tests --bins
  for policy in "${names[@]}"; do
    target/debug/embed-metadata "policies/$policy/metadata.yml" "policies/$policy/README.md" \
      "target/wasm32-wasip1/release/${policy//-/_}.wasm" "dist/$policy.wasm"
    printf '    dist/%s.wasm  %s bytes\n' "$policy" "$(stat -c %s "dist/$policy.wasm")"
  done
}

evaluate_examples() {
  local policy
  for policy in $(policies); do
    say "evaluating policies/$policy/examples through the waPC host"
    target/debug/evaluate-examples "policies/$policy" "dist/$policy.wasm"
  done
}

run_tests() {
  ensure_rust_components rustfmt clippy
  build_policies
  say "cargo fmt --check"
  cargo fmt --all -- --check
  say "cargo clippy"
  cargo clippy -q --workspace --all-targets -- -D warnings
  say "unit tests and wasm-tests (built modules in the waPC host)"
  cargo test --workspace
  evaluate_examples
}

case "${1:-build}" in
  build) build_policies; evaluate_examples ;;
  test) run_tests ;;
  *) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac
