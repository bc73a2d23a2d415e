#!/usr/bin/env bash
# Installs, idempotently, every Debian package shapeshift builds, tests and
# fuzzes with. Safe to run repeatedly; skips apt entirely when all are present.
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build ccache pkg-config git
  libz3-dev llvm-14-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev
  clang clang-14 libclang-rt-14-dev libomp-14-dev
  libssl-dev libhiredis-dev redis-server
  python3-dev python3-venv
)
# ocl-icd-opencl-dev: libdnnl-dev's CMake config calls find_package(OpenCL), but
#   the package only *recommends* it and we install without recommends.
# libomp-14-dev: clang's OpenMP runtime, for the clang-14 fuzz/sanitizer builds.
# libssl-dev: OpenSSL's libcrypto, for SHA-256 and HMAC-SHA-256 (bundle checksums and
#   signatures, signed remote-cache entries): a well-kept crypto library, not a hand-written hash.
# libhiredis-dev: the C client of the remote compile cache (runtime/persist/remote_cache.h).
# python3-dev, python3-venv: the Python package's build (headers) and its test venv
#   (scripts/python-venv.sh; the PyPI packages themselves are pinned in python/requirements.txt).
# redis-server: the server scripts/test.sh starts on a loopback port of its own for the
#   remote-cache and replica tests (the package's own service is not used).

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
