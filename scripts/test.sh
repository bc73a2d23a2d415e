#!/usr/bin/env bash
# Set-up + build + every test. The last line printed is ctest's summary.
#   scripts/test.sh              the full suite (Release build in ./build)
#   scripts/test.sh --sanitize   the suite under ASan+UBSan (clang, ./build-asan)
# Property tests take their seed from SHAPESHIFT_TEST_SEED (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR=${BUILD_DIR:-build-asan} BUILD_TYPE=RelWithDebInfo
  CC=clang-14 CXX=clang++-14 scripts/build.sh -DSHAPESHIFT_SANITIZE=address,undefined -DSHAPESHIFT_BUILD_BENCH=OFF
else
  export BUILD_DIR=${BUILD_DIR:-build}
  scripts/build.sh
fi
cd "$BUILD_DIR"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
