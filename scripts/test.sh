#!/usr/bin/env bash
# Set-up + build + every test. The last line printed is ctest's summary.
#   scripts/test.sh              the full suite (Release build in ./build). When clang-14 and
#                                libFuzzer (libclang-rt-14-dev) are installed, the libFuzzer
#                                harnesses are built first (./build-fuzz) and the suite includes
#                                fuzz_smoke.<harness>: SHAPESHIFT_FUZZ_SMOKE_SECONDS (default 5) of
#                                fuzzing each (tests/fuzz/smoke.cmake). FUZZ_SMOKE=0 leaves it out.
#                                The Python package is installed into a cached venv
#                                (scripts/python-venv.sh) and its pytest suites run as python.*;
#                                PYTHON_TESTS=0 leaves them out.
#   scripts/test.sh --sanitize   the shapes/graph/codegen/runtime unit tests and hostile_test under
#                                ASan+UBSan (clang, ./build-asan); the last line says how many
#                                suites passed
#   scripts/test.sh --sanitize=thread   the multi-threaded tests under TSan (clang, ./build-tsan)
# The full suite starts a redis-server on a loopback port of its own for the fleet tests
# (scripts/redis-test-server.sh; SHAPESHIFT_TEST_REDIS) and stops it at exit, pass or fail.
# Property tests take their seed from SHAPESHIFT_TEST_SEED (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh

# Is libFuzzer usable here? (clang-14 plus its runtime library)
have_libfuzzer() {
  command -v clang++-14 >/dev/null 2>&1 &&
    [ -e "$(clang++-14 --print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a" ]
}

# clang links every listed library (g++ on Debian passes --as-needed): without
# it, binaries that link the optional CUDA backend need libcuda.so.1 even
# on machines without a GPU driver.
CLANG_LINK=(-DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--as-needed)

if [ "${1:-}" = "--sanitize" ]; then
  # ASan+UBSan (UBSan findings abort: -fno-sanitize-recover, see CMakeLists.txt).
  # The unit tests of the layers with hand-written memory handling, plus
  # the hostile inputs; each binary runs whole, so a finding names its test.
  export BUILD_DIR=${BUILD_DIR:-build-asan}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
  SUITES=(shapes graph codegen runtime hostile)
  targets=()
  for s in "${SUITES[@]}"; do targets+=("${s}_test"); done
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/shapeshift-ccache}
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSHAPESHIFT_SANITIZE=address,undefined -DSHAPESHIFT_BUILD_BENCH=OFF "${CLANG_LINK[@]}" >/dev/null
  cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "${JOBS:-$(nproc)}"
  failed=()
  for s in "${SUITES[@]}"; do
    echo "== ${s}_test under ASan+UBSan"
    "$BUILD_DIR/tests/$s/${s}_test" --gtest_brief=1 || failed+=("${s}_test")
  done
  if [ ${#failed[@]} -ne 0 ]; then
    echo "sanitize: ${#failed[@]} of ${#SUITES[@]} suites failed: ${failed[*]}"
    exit 1
  fi
  echo "sanitize: all ${#SUITES[@]} suites passed under ASan+UBSan (${SUITES[*]})"
  exit 0
fi

CTEST_FILTER=()
if [ "${1:-}" = "--sanitize=thread" ]; then
  # TSan, for the tests that run from several threads (names say so).
  export BUILD_DIR=${BUILD_DIR:-build-tsan} BUILD_TYPE=RelWithDebInfo
  CC=clang-14 CXX=clang++-14 scripts/build.sh -DSHAPESHIFT_SANITIZE=thread -DSHAPESHIFT_BUILD_BENCH=OFF "${CLANG_LINK[@]}"
  CTEST_FILTER=(-R 'Thread|Concurrent')
  # Prebuilt libomp and abseil internals are invisible to TSan: see the file.
  export TSAN_OPTIONS="suppressions=$PWD/tests/support/tsan.supp ${TSAN_OPTIONS:-}"
else
  export BUILD_DIR=${BUILD_DIR:-build}
  FUZZ_ARGS=(-DSHAPESHIFT_FUZZ_HARNESS_DIR=)
  if [ "${FUZZ_SMOKE:-1}" != 0 ] && have_libfuzzer; then
    FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
    echo "== libFuzzer harnesses ($FUZZ_BUILD_DIR), smoke-fuzzed by ctest as fuzz_smoke.*"
    export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/shapeshift-ccache}
    CC=clang-14 CXX=clang++-14 cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSHAPESHIFT_FUZZ=ON -DSHAPESHIFT_SANITIZE=address,undefined -DSHAPESHIFT_BUILD_BENCH=OFF >/dev/null
    cmake --build "$FUZZ_BUILD_DIR" -j "${JOBS:-$(nproc)}" \
      --target onnx_import_fuzzer sym_expr_fuzzer predicate_fuzzer guard_program_fuzzer
    FUZZ_ARGS=(-DSHAPESHIFT_FUZZ_HARNESS_DIR="$PWD/$FUZZ_BUILD_DIR/tests/fuzz")
  fi
  # The Python package (python/, tests/python): a venv of pinned PyPI packages with this
  # checkout installed (scripts/python-venv.sh), whose pytest suites ctest runs as
  # python.*. PYTHON_TESTS=0 leaves them out.
  PY_ARGS=(-DSHAPESHIFT_PYTHON_VENV=)
  if [ "${PYTHON_TESTS:-1}" != 0 ]; then
    echo "== Python package (pip install . into a cached venv), tested by ctest as python.*"
    PY_VENV=$(scripts/python-venv.sh | tail -n 1)
    PY_ARGS=(-DSHAPESHIFT_PYTHON_VENV="$PY_VENV")
  fi
  scripts/build.sh "${FUZZ_ARGS[@]}" "${PY_ARGS[@]}"
fi
if [ ${#CTEST_FILTER[@]} -eq 0 ]; then
  # The fleet tests (tests/fleet: remote cache, replicas) need a Redis server:
  # one of our own on a loopback port, its data in a temp dir, stopped on exit
  # whether the tests pass or not. Without it they fail rather than skip.
  REDIS_DIR=$(mktemp -d -t shapeshift-redis.XXXXXX)
  ROOT=$PWD  # the trap runs after the cd into the build directory
  trap '"$ROOT/scripts/redis-test-server.sh" stop "$REDIS_DIR"; rm -rf "$REDIS_DIR"' EXIT
  REDIS_PORT=$(scripts/redis-test-server.sh start "$REDIS_DIR")
  export SHAPESHIFT_TEST_REDIS=127.0.0.1:$REDIS_PORT
  echo "== redis-server on 127.0.0.1:$REDIS_PORT for the fleet tests (fleet_test: Redis*), stopped at exit"
fi
cd "$BUILD_DIR"
# What the tests write lands in test-tmp/ (tests/support/test_tmpdir.cc):
# emptied here, so a run starts from nothing and one run's files don't pile up.
rm -rf test-tmp && mkdir -p test-tmp
# ctest lists the tests that did not run (GTEST_SKIP: e.g. the AVX-512-only
# kernel tests on an AVX2 host) after its summary; its summary line is printed
# once more at the end so that it stays the last line (CI's verdict).
status=0
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900 "${CTEST_FILTER[@]}" 2>&1 | tee ctest-output.log ||
  status=$?
grep -E '^[0-9]+% tests passed' ctest-output.log | tail -n 1 || true
exit "$status"
