#!/usr/bin/env bash
# Configures and builds shapeshift with CMake + Ninja into ${BUILD_DIR:-build}.
# Extra arguments are passed to CMake's configure step (e.g. -DSHAPESHIFT_SANITIZE=address,undefined).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/shapeshift-ccache}
# Paths under the checkout are hashed relative to it, so a fresh clone in
# another folder (CI) reuses the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
