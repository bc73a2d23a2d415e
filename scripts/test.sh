#!/usr/bin/env bash
# Set-up + build + every test. The last line printed is ctest's summary.
#   scripts/test.sh              the full suite (Release build in ./build)
#   scripts/test.sh --sanitize   the suite under ASan+UBSan (clang, ./build-asan)
#   scripts/test.sh --sanitize=thread   the multi-threaded tests under TSan (clang, ./build-tsan)
# Property tests take their seed from SHAPESHIFT_TEST_SEED (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
CTEST_FILTER=()
if [ "${1:-}" = "--sanitize" ]; then
  # ASan+UBSan (UBSan findings abort: -fno-sanitize-recover, see CMakeLists.txt).
  export BUILD_DIR=${BUILD_DIR:-build-asan} BUILD_TYPE=RelWithDebInfo
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  CC=clang-14 CXX=clang++-14 scripts/build.sh -DSHAPESHIFT_SANITIZE=address,undefined -DSHAPESHIFT_BUILD_BENCH=OFF
elif [ "${1:-}" = "--sanitize=thread" ]; then
  # TSan, for the tests that run from several threads (names say so).
  export BUILD_DIR=${BUILD_DIR:-build-tsan} BUILD_TYPE=RelWithDebInfo
  CC=clang-14 CXX=clang++-14 scripts/build.sh -DSHAPESHIFT_SANITIZE=thread -DSHAPESHIFT_BUILD_BENCH=OFF
  CTEST_FILTER=(-R 'Thread|Concurrent')
else
  export BUILD_DIR=${BUILD_DIR:-build}
  scripts/build.sh
fi
cd "$BUILD_DIR"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900 "${CTEST_FILTER[@]}"
