#!/usr/bin/env bash
# Round trip of every built policy module through a real OCI registry.
#
#   buildtools/oci/registry-roundtrip.sh [DIST]      (./build.sh test runs it; DIST defaults to dist)
#
# Starts Debian's docker-registry (distribution 2.8) on a free loopback port with a temporary
# storage folder and htpasswd auth, pushes every Kubewarden module of DIST with taintguard-oci,
# then fetches each back by digest with an independent client (skopeo) and with the pull path
# Kubewarden uses (oci-client, as policy-fetcher), and checks bytes, digests, media types and
# annotations. Then signatures: pushes signed with `--sign` must pass Kubewarden's `kwctl verify`
# and `kwctl pull` with a verification config (kwctl found through KWCTL, else PATH; without it
# that part says it did not run), unsigned or wrongly signed ones must fail them, and a key that
# cannot sign must stop the push before anything is uploaded. The registry is stopped and its
# storage deleted on every exit, failures included.
#
# Needs docker-registry, skopeo, openssl and a built target/debug/taintguard-oci (./build.sh
# test provides them). Pushes from a copy of DIST, so DIST's own manifests are left alone.
set -euo pipefail
cd "$(dirname "$0")/../.."

dist=${1:-dist}
oci=$PWD/target/debug/taintguard-oci
started=$SECONDS

for tool in docker-registry skopeo openssl "$oci"; do
  if ! command -v "$tool" >/dev/null; then
    echo "registry round trip: FAIL: $tool is missing (./build.sh test installs it)" >&2
    exit 1
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/taintguard-registry.XXXXXX")
registry_pid=
cleanup() {
  local status=$?
  if [ -n "$registry_pid" ]; then
    kill "$registry_pid" 2>/dev/null || true
    wait "$registry_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A throw-away account for this run only: user `taintguard`, password `roundtrip` (bcrypt, cost
# 4 so that checking it on every request stays cheap).
user=taintguard password=roundtrip
echo "$user:\$2b\$04\$n3Wdx0bGA3/4XUM9C4ngS.tFIg/0qTWcaB3gx4Ukg9HkQxoPaWRmu" >"$work/htpasswd"

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Start the registry on a free port; retry with another port if one is taken meanwhile.
start_registry() {
  local attempt wait
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    listening "$port" && continue
    cat >"$work/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/storage
http:
  addr: 127.0.0.1:$port
  secret: taintguard-roundtrip
auth:
  htpasswd:
    realm: taintguard-roundtrip
    path: $work/htpasswd
EOF
    docker-registry serve "$work/config.yml" >"$work/registry.log" 2>&1 &
    registry_pid=$!
    for wait in $(seq 50); do
      if ! kill -0 "$registry_pid" 2>/dev/null; then
        wait "$registry_pid" 2>/dev/null || true
        registry_pid=
        break
      fi
      listening "$port" && return 0
      sleep 0.1
    done
    [ -n "$registry_pid" ] && { kill "$registry_pid"; wait "$registry_pid" 2>/dev/null || true; registry_pid=; }
  done
  echo "registry round trip: FAIL: docker-registry did not start; its log:" >&2
  cat "$work/registry.log" >&2
  exit 1
}
start_registry
registry=127.0.0.1:$port
prefix=$registry/taintguard-roundtrip
echo "docker-registry $(docker-registry --version | awk '{print $NF}') listening on $registry (pid $registry_pid, storage $work/storage)"

mkdir -p "$work/dist" "$work/docker" "$work/no-docker"
cp "$dist"/*.wasm "$dist"/*.spdx.json "$work/dist/"
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$registry" "$(printf '%s:%s' "$user" "$password" | base64)" \
  >"$work/docker/config.json"
unset TAINTGUARD_REGISTRY_USERNAME TAINTGUARD_REGISTRY_PASSWORD TAINTGUARD_REGISTRY_INSECURE

failures=()
fail() { failures+=("$*"); echo "  FAIL: $*" >&2; }
pass() { echo "  ok: $*"; }

echo "== pushing without credentials must be refused"
if DOCKER_CONFIG=$work/no-docker "$oci" push --dist "$work/dist" "$prefix" >/dev/null 2>"$work/anon.err"; then
  fail "an anonymous push was accepted by a registry that requires credentials"
elif grep -q 'refused access' "$work/anon.err"; then
  pass "anonymous push refused: $(grep -o 'code: 401' "$work/anon.err" | head -1)"
else
  fail "anonymous push failed without naming the refusal: $(cat "$work/anon.err")"
fi

# Output: the `<artifact>\t<immutable ref>` lines; progress goes to a log shown on failure.
push() {
  local log=$1; shift
  if ! "$oci" push "$@" >"$log.tsv" 2>"$log.log"; then
    cat "$log.log" >&2
    echo "registry round trip: FAIL: taintguard-oci push $* failed ($((SECONDS - started))s)" >&2
    exit 1
  fi
}
echo "== push with the docker config (default tags v<version>)"
DOCKER_CONFIG=$work/docker push "$work/pushed" --dist "$work/dist" "$prefix"
echo "== push again with credentials from the environment, tag roundtrip"
TAINTGUARD_REGISTRY_USERNAME=$user TAINTGUARD_REGISTRY_PASSWORD=$password DOCKER_CONFIG=$work/no-docker \
  push "$work/pushed-again" --dist "$work/dist" --policies policies "$prefix" roundtrip
if cmp -s "$work/pushed.tsv" "$work/pushed-again.tsv"; then
  pass "both pushes gave the same digests (the artifact is deterministic)"
else
  fail "the second push gave other digests: $(diff "$work/pushed.tsv" "$work/pushed-again.tsv" | tr '\n' ' ')"
fi

modules=$(find "$work/dist" -maxdepth 1 -name '*.wasm' | wc -l)
pushed=$(wc -l <"$work/pushed.tsv")
[ "$pushed" -gt 0 ] || fail "nothing was pushed"
[ "$pushed" -eq "$modules" ] || echo "  note: $pushed of $modules modules pushed (the others have no Kubewarden metadata)"

skopeo=(skopeo --insecure-policy)
creds=(--creds "$user:$password")
previous_artifact=
while IFS=$'\t' read -r artifact ref; do
  name=${ref##*/}; name=${name%%@*}
  digest=${ref#*@}
  echo "== $name ($(basename "$artifact"), $(stat -c %s "$artifact") bytes) = $ref"
  copy=$work/copy-$name
  if ! "${skopeo[@]}" inspect --raw --tls-verify=false "${creds[@]}" "docker://$ref" >"$copy.manifest.json"; then
    fail "$name: skopeo could not fetch the manifest by digest"
    continue
  fi
  if ! "${skopeo[@]}" copy -q --src-tls-verify=false --src-creds "$user:$password" "docker://$ref" "dir:$copy"; then
    fail "$name: skopeo could not copy the artifact by digest"
    continue
  fi
  cmp -s "$copy.manifest.json" "$copy/manifest.json" ||
    fail "$name: skopeo inspect and skopeo copy returned different manifests"
  if out=$("$oci" verify-copy "$artifact" "$ref" "$copy.manifest.json" "$copy" 2>&1); then
    pass "skopeo copy: manifest digest, Kubewarden media types, annotations, config {} and module bytes match"
  else
    fail "$name: $out"
  fi
  if "${skopeo[@]}" inspect --raw --tls-verify=false "${creds[@]}" "docker://$prefix/$name:roundtrip" \
    >"$copy.tagged.json"; then
    tag_digest="sha256:$(sha256sum "$copy.tagged.json" | cut -d' ' -f1)"
    [ "$tag_digest" = "$digest" ] && pass "tag roundtrip resolves to the same manifest" ||
      fail "$name: tag roundtrip resolves to $tag_digest, not $digest"
  else
    fail "$name: skopeo could not fetch tag roundtrip"
  fi
  if TAINTGUARD_REGISTRY_USERNAME=$user TAINTGUARD_REGISTRY_PASSWORD=$password \
    "$oci" pull "$ref" "$copy.pulled.wasm" >/dev/null 2>"$copy.pull.err" &&
    cmp -s "$copy.pulled.wasm" "$artifact"; then
    pass "Kubewarden's pull path (oci-client, wasm layer only): byte-identical module"
  else
    fail "$name: Kubewarden-style pull failed or differs: $(cat "$copy.pull.err")"
  fi
  # The SBOM beside the module, where cosign attaches one (docs/release.md).
  sbom_tag="$prefix/$name:${digest/:/-}.sbom"
  if "${skopeo[@]}" inspect --raw --tls-verify=false "${creds[@]}" "docker://$sbom_tag" >"$copy.sbom.json" &&
    "${skopeo[@]}" copy -q --src-tls-verify=false --src-creds "$user:$password" "docker://$sbom_tag" "dir:$copy.sbom"; then
    layer=$(grep -o '"layers":\[{"digest":"sha256:[0-9a-f]*","mediaType":"text/spdx+json"' "$copy.sbom.json" |
      grep -o '[0-9a-f]\{64\}' || true)
    if [ -n "$layer" ] && cmp -s "$copy.sbom/$layer" "${artifact%.wasm}.spdx.json"; then
      pass "the SBOM is attached at ${digest/:/-}.sbom as cosign attaches one (text/spdx+json), byte-identical"
    else
      fail "$name: the SBOM at $sbom_tag is not $(basename "${artifact%.wasm}.spdx.json") as a text/spdx+json layer"
    fi
  else
    fail "$name: skopeo could not fetch the SBOM at $sbom_tag"
  fi
  for manifest in cluster-admission-policy.yaml admission-policy.yaml; do
    grep -qx "  module: registry://$prefix/$name@$digest" "$work/dist/$name/$manifest" ||
      fail "$name: $manifest does not deploy registry://$prefix/$name@$digest"
  done
  # The checker must reject a copy that does not match: compare against another artifact.
  if [ -n "$previous_artifact" ]; then
    if "$oci" verify-copy "$previous_artifact" "$ref" "$copy.manifest.json" "$copy" >/dev/null 2>&1; then
      fail "$name: verify-copy accepted $(basename "$previous_artifact") as this artifact's copy"
    else
      pass "verify-copy rejects another module ($(basename "$previous_artifact")) against this copy"
    fi
  fi
  previous_artifact=$artifact
done <"$work/pushed.tsv"

missing="$prefix/taint-preservation@sha256:$(printf 'absent' | sha256sum | cut -d' ' -f1)"
if TAINTGUARD_REGISTRY_USERNAME=$user TAINTGUARD_REGISTRY_PASSWORD=$password \
  "$oci" pull "$missing" "$work/absent.wasm" >/dev/null 2>&1; then
  fail "pulling a digest that was never pushed succeeded"
fi

# Signatures (docs/signing.md): pushed with `push --sign`, judged by Kubewarden's own kwctl.
kwctl=${KWCTL:-$(command -v kwctl || true)}
if [ -z "$kwctl" ] || [ ! -x "$kwctl" ]; then
  echo "== signatures: NOT RUN: kwctl not found (set KWCTL or put it on PATH); signing was not checked"
else
  echo "== signatures, judged by $("$kwctl" --version 2>/dev/null | head -1)"
  keys=$work/keys
  mkdir -p "$keys" "$work/kwctl-home"
  # The release key as `generate-key-pair` writes it (cosign's encrypted format), and a second,
  # unrelated key as openssl writes one (PKCS#8), so both formats sign.
  COSIGN_PASSWORD=release-pass "$oci" generate-key-pair "$keys/release" 2>/dev/null
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$keys/other.pem" 2>/dev/null
  openssl pkey -in "$keys/other.pem" -pubout -out "$keys/other.pub"
  # kwctl refuses to verify keys without a Sigstore trust root, which it otherwise downloads from
  # Sigstore's TUF repository. Offline, a trust config naming a throw-away CA stands in; a CA plays
  # no part in judging key signatures.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj "/O=taintguard round trip/CN=offline trust root" \
    -keyout "$keys/ca.key" -out "$keys/ca.pem" 2>/dev/null
  ca_der=$(openssl x509 -in "$keys/ca.pem" -outform DER | base64 -w0)
  printf '%s\n' \
    '{"mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",' \
    ' "trustedRoot": {"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",' \
    '  "certificateAuthorities": [{"subject": {"organization": "taintguard round trip"},' \
    '   "uri": "https://fulcio.invalid",' \
    "   \"certChain\": {\"certificates\": [{\"rawBytes\": \"$ca_der\"}]}}]}}" >"$keys/trust.json"
  printf 'insecure_sources:\n  - "%s"\n' "$registry" >"$keys/sources.yml"
  verification_config() {
    printf 'apiVersion: v1\nallOf:\n  - kind: pubKey\n    owner: %s\n    key: |\n' "$1"
    sed 's/^/      /' "$2"
  }
  verification_config "taintguard release" "$keys/release.pub" >"$keys/release.yml"
  verification_config "someone else" "$keys/other.pub" >"$keys/other.yml"
  # kwctl with this run's registry, credentials and trust root, and none of the user's state.
  kw() {
    XDG_CONFIG_HOME=$work/kwctl-home/config XDG_CACHE_HOME=$work/kwctl-home/cache \
      XDG_DATA_HOME=$work/kwctl-home/data "$kwctl" "$1" --sources-path "$keys/sources.yml" \
      --docker-config-json-path "$work/docker" --sigstore-trust-config "$keys/trust.json" "${@:2}"
  }
  # kw_verify KEY REF: kwctl verify's verdict; its output is kept in $work/kwctl.err.
  kw_verify() { kw verify -k "$1" "registry://$2" >/dev/null 2>"$work/kwctl.err"; }
  reason() { grep -v '^ \|^Stack\|^$\|INFO\|WARN' "$work/kwctl.err" | head -2 | tr '\n' ' '; }
  # every_artifact LOG PATTERN CLAIM: the push log LOG has a PATTERN line for each pushed artifact.
  every_artifact() {
    local lines
    lines=$(grep -c "$2" "$1" || true)
    if [ "$lines" = "$pushed" ]; then
      pass "$3"
    else
      fail "$3: true of $lines of the $pushed artifacts"
    fi
  }
  # sign_push LOG PREFIX [push args...]: pushes every artifact, tag `signed`.
  sign_push() {
    local log=$1 to=$2
    shift 2
    DOCKER_CONFIG=$work/docker push "$log" --dist "$work/dist" --policies policies "$@" "$to" signed
  }

  echo "-- a key that cannot sign fails before anything is pushed"
  refused=$registry/taintguard-refused
  # label | arguments and VAR=value settings | what the error must say
  key_cases=(
    "missing file|--sign $keys/absent.key|cannot read it"
    "public key given|--sign $keys/release.pub|this is a public key"
    "not a key|--sign $keys/sources.yml|not a PEM file"
    "encrypted, no password|--sign $keys/release.key|set COSIGN_PASSWORD"
    "encrypted, wrong password|--sign $keys/release.key COSIGN_PASSWORD=wrong|cannot decrypt"
    "missing file named by TAINTGUARD_SIGNING_KEY|TAINTGUARD_SIGNING_KEY=$keys/absent.key|cannot read it"
  )
  for key_case in "${key_cases[@]}"; do
    IFS='|' read -r label setup want <<<"$key_case"
    args=() envs=()
    for word in $setup; do
      case $word in *=*) envs+=("$word") ;; *) args+=("$word") ;; esac
    done
    if env -u COSIGN_PASSWORD -u TAINTGUARD_SIGNING_KEY "${envs[@]}" DOCKER_CONFIG="$work/docker" \
      "$oci" push --dist "$work/dist" "${args[@]}" "$refused" signed >/dev/null 2>"$work/key.err"; then
      fail "signing key, $label: the push succeeded"
    elif ! grep -q "signing key .*$want" "$work/key.err"; then
      fail "signing key, $label: the error does not name the key and say \"$want\": $(cat "$work/key.err")"
    else
      pass "signing key, $label: $(sed 's/^taintguard-oci: error: //' "$work/key.err")"
    fi
  done
  if TAINTGUARD_REGISTRY_USERNAME=$user TAINTGUARD_REGISTRY_PASSWORD=$password \
    "$oci" pull "$refused/taint-preservation:signed" "$work/refused.wasm" >/dev/null 2>&1; then
    fail "a push refused for its key still uploaded a module"
  else
    pass "nothing reached $refused"
  fi

  echo "-- signed with the release key (cosign format), and elsewhere with another key (PKCS#8)"
  COSIGN_PASSWORD=release-pass sign_push "$work/signed" "$registry/taintguard-signed" --sign "$keys/release.key"
  TAINTGUARD_SIGNING_KEY=$keys/other.pem sign_push "$work/foreign" "$registry/taintguard-foreign"
  every_artifact "$work/signed.log" '^    signed: ' "every pushed artifact was signed"
  while IFS=$'\t' read -r artifact ref; do
    name=${ref##*/}; name=${name%%@*}
    foreign=$(awk -F'\t' -v a="$artifact" '$1 == a { print $2 }' "$work/foreign.tsv")
    unsigned=$(awk -F'\t' -v a="$artifact" '$1 == a { print $2 }' "$work/pushed.tsv")
    echo "  $name"
    if kw_verify "$keys/release.pub" "$ref"; then
      pass "kwctl verify -k release.pub accepts the release signature"
    else
      fail "$name: kwctl verify rejects the release signature: $(reason)"
    fi
    if kw_verify "$keys/other.pub" "$ref"; then
      fail "$name: kwctl verify -k other.pub accepts the release signature"
    else
      pass "kwctl verify -k other.pub refuses it: $(reason)"
    fi
    if kw_verify "$keys/release.pub" "$foreign"; then
      fail "$name: kwctl verify -k release.pub accepts a signature made with another key"
    elif kw_verify "$keys/other.pub" "$foreign"; then
      pass "a copy signed with another key is refused (and verifies with that key)"
    else
      fail "$name: the copy signed with the PKCS#8 key does not verify with it: $(reason)"
    fi
    if kw_verify "$keys/release.pub" "$unsigned"; then
      fail "$name: kwctl verify accepts the copy pushed unsigned"
    else
      pass "the copy pushed unsigned is refused: $(reason)"
    fi
    sbom_tag="${ref%@*}:${ref#*@}"
    sbom_tag="${sbom_tag/sha256:/sha256-}.sbom"
    if "${skopeo[@]}" inspect --raw --tls-verify=false "${creds[@]}" "docker://$sbom_tag" >"$work/sbom-$name.json" &&
      kw_verify "$keys/release.pub" "${ref%@*}@sha256:$(sha256sum "$work/sbom-$name.json" | cut -d' ' -f1)"; then
      pass "kwctl verify -k release.pub accepts the SBOM attachment's signature"
    else
      fail "$name: the SBOM attachment at $sbom_tag is not signed with the release key: $(reason)"
    fi
    if kw pull --verification-config-path "$keys/release.yml" -o "$work/verified-$name.wasm" \
      "registry://$ref" >/dev/null 2>"$work/kwctl.err" && cmp -s "$work/verified-$name.wasm" "$artifact"; then
      pass "kwctl pull with a verification config requiring the release key: byte-identical module"
    else
      fail "$name: kwctl pull with the release verification config failed or differs: $(reason)"
    fi
    if kw pull --verification-config-path "$keys/other.yml" -o "$work/refused-$name.wasm" \
      "registry://$ref" >/dev/null 2>"$work/kwctl.err"; then
      fail "$name: kwctl pull with a verification config requiring another key succeeded"
    else
      pass "kwctl pull with a verification config requiring another key is refused"
    fi
  done <"$work/signed.tsv"

  echo "-- signing again keeps the signatures already stored"
  COSIGN_PASSWORD=release-pass sign_push "$work/resigned" "$registry/taintguard-signed" --sign "$keys/release.key"
  every_artifact "$work/resigned.log" 'already signed with this key' \
    "re-signing with the same key leaves every signature image as it was"
  TAINTGUARD_SIGNING_KEY=$keys/other.pem sign_push "$work/cosigned" "$registry/taintguard-signed"
  every_artifact "$work/cosigned.log" 'beside 1 signature' \
    "a second key's signature is stored beside the first on every artifact"
  while IFS=$'\t' read -r artifact ref; do
    name=${ref##*/}; name=${name%%@*}
    if kw verify -k "$keys/release.pub" -k "$keys/other.pub" "registry://$ref" >/dev/null 2>"$work/kwctl.err"; then
      pass "$name: both signatures verify (kwctl verify -k release.pub -k other.pub)"
    else
      fail "$name: after a second signature, not both verify: $(reason)"
    fi
  done <"$work/signed.tsv"
fi

elapsed=$((SECONDS - started))
if [ ${#failures[@]} -eq 0 ]; then
  echo "registry round trip: PASS: $pushed artifacts pushed to docker-registry on $registry and pulled back by digest, byte for byte (${elapsed}s)"
else
  echo "registry round trip: FAIL: ${#failures[@]} problem(s) (${elapsed}s):" >&2
  printf '  - %s\n' "${failures[@]}" >&2
  exit 1
fi
