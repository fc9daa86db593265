#!/usr/bin/env bash
# Round trip of every built policy module through a real OCI registry.
#
#   tools/oci/registry-roundtrip.sh [DIST]      (./build.sh test runs it; DIST defaults to dist)
#
# Starts Debian's docker-registry (distribution 2.8) on a free loopback port with a temporary
# storage folder and htpasswd auth, pushes every Kubewarden module of DIST with taintguard-oci,
# then fetches each back by digest with an independent client (skopeo) and with the pull path
# Kubewarden uses (oci-client, as policy-fetcher), and checks bytes, digests, media types and
# annotations. The registry is stopped and its storage deleted on every exit, failures included.
#
# Needs docker-registry, skopeo and a built target/debug/taintguard-oci (./build.sh test
# provides all three). Pushes from a copy of DIST, so DIST's own manifests are left alone.
set -euo pipefail
cd "$(dirname "$0")/../.."

dist=${1:-dist}
oci=$PWD/target/debug/taintguard-oci
started=$SECONDS

for tool in docker-registry skopeo "$oci"; do
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
cp "$dist"/*.wasm "$work/dist/"
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

elapsed=$((SECONDS - started))
if [ ${#failures[@]} -eq 0 ]; then
  echo "registry round trip: PASS: $pushed artifacts pushed to docker-registry on $registry and pulled back by digest, byte for byte (${elapsed}s)"
else
  echo "registry round trip: FAIL: ${#failures[@]} problem(s) (${elapsed}s):" >&2
  printf '  - %s\n' "${failures[@]}" >&2
  exit 1
fi
