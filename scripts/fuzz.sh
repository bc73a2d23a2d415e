#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang-14, ASan+UBSan, ./build-fuzz) and
# fuzzes each for DURATION seconds (default 60).
#   scripts/fuzz.sh [DURATION] [HARNESS...]   harnesses: onnx_import sym_expr predicate guard_program
# The committed seeds (tests/fuzz/corpus/<h>/) are read, never written: new
# inputs go to $BUILD_DIR/fuzz-corpus/<h>/, crashes to $BUILD_DIR/fuzz-artifacts/<h>/.
# FUZZ_FLAGS adds libFuzzer flags, e.g. FUZZ_FLAGS="-fork=1 -ignore_crashes=1"
# to keep going after a crash. Exits non-zero if any harness crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-60}
shift || true
HARNESSES=("$@")
if [ ${#HARNESSES[@]} -eq 0 ]; then HARNESSES=(onnx_import sym_expr predicate guard_program); fi
BUILD_DIR=${BUILD_DIR:-build-fuzz}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/shapeshift-ccache}

CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSHAPESHIFT_FUZZ=ON -DSHAPESHIFT_SANITIZE=address,undefined -DSHAPESHIFT_BUILD_BENCH=OFF >/dev/null
targets=()
for h in "${HARNESSES[@]}"; do targets+=("${h}_fuzzer"); done
cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "${JOBS:-2}"

status=0
for h in "${HARNESSES[@]}"; do
  mkdir -p "$BUILD_DIR/fuzz-corpus/$h" "$BUILD_DIR/fuzz-artifacts/$h"
  echo "== $h: ${DURATION}s"
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
  "$BUILD_DIR/tests/fuzz/${h}_fuzzer" -max_total_time="$DURATION" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/fuzz-artifacts/$h/" ${FUZZ_FLAGS:-} \
    "$BUILD_DIR/fuzz-corpus/$h" "tests/fuzz/corpus/$h" || status=1
done
exit $status
