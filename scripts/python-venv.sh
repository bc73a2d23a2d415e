#!/usr/bin/env bash
# Prepares the Python test environment and prints its path (last line of stdout):
#  1. a virtual environment with python/requirements.txt's exact pins, kept under
#     ${XDG_CACHE_HOME:-~/.cache}/shapeshift/python-venv-<hash of the pin file and
#     the interpreter's version>, so a second run (or CI's) reinstalls nothing;
#  2. this checkout's package installed into it: `pip install .` without build
#     isolation (the pinned scikit-build-core and nanobind of the venv build it),
#     incremental in build-py/ (pyproject.toml), compiled through ccache.
# scripts/test.sh runs it and registers tests/python with ctest against the result.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# torch's PyPI wheel carries its CUDA libraries (several GB): download it once, into the
# cache bench/peers/setup.sh uses too.
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/pip}"
requirements=python/requirements.txt
key=$( { cat "$requirements"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
venv="${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/python-venv-$key"
stamp="$venv/.shapeshift-requirements"
if [ ! -e "$stamp" ]; then
  echo "python-venv: creating $venv from $requirements" >&2
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/shapeshift-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)}
# The compiler CMake picks in scripts/build.sh (c++); pip would pass the interpreter's
# own (sysconfig's g++), a different name that ccache hashes apart.
export CC=${CC:-cc} CXX=${CXX:-c++}
echo "python-venv: pip install . into $venv (build in build-py/)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps . >&2
echo "$venv"
