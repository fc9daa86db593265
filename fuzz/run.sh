#!/usr/bin/env bash
# Runs the cargo-fuzz targets for a bounded time each:  fuzz/run.sh [SECONDS] [TARGET...]
#
# cargo-fuzz passes nightly-only flags (-Zsanitizer, -Cpasses); RUSTC_BOOTSTRAP=1 lets the stable
# toolchain rust-toolchain.toml pins accept them (`RUSTUP_TOOLCHAIN=nightly fuzz/run.sh` would run
# a nightly instead: the variable overrides the file). The code under test is safe Rust, so no sanitizer is used (`-s none`);
# debug assertions (`-a`) are on, so the splicer's overlap and span checks fire.
#
# A crash stops its target and fails the run; its input is in fuzz/artifacts/<target>/. Minimise it
# with `RUSTC_BOOTSTRAP=1 cargo fuzz tmin -s none -a <target> <file>` and keep it as a regression
# fixture in fuzz/regressions/<target>/, which `cargo test -p taintguard-testkit` replays
# (testkit/src/targets.rs).
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(ls fuzz_targets | sed 's/\.rs$//')

export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
for t in "${targets[@]}"; do cargo fuzz build -s none -a "$t"; done

status=0
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  seeds=()
  [ -d "seeds/$target" ] && seeds=("seeds/$target")
  [ -d "regressions/$target" ] && seeds+=("regressions/$target")
  printf '\n==> fuzzing %s for %ss\n' "$target" "$seconds"
  log="corpus/$target.log"
  if cargo fuzz run -s none -a "$target" "corpus/$target" "${seeds[@]}" -- \
      -max_total_time="$seconds" -dict=json.dict -timeout=5 -rss_limit_mb=2048 \
      -print_final_stats=1 >"$log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done)' "$log" || true
  else
    status=1
    tail -40 "$log"
    echo "!!! $target crashed; the input is in fuzz/artifacts/$target/" >&2
  fi
done
exit $status
