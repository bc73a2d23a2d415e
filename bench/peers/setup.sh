#!/usr/bin/env bash
# Creates bench/peers/.venv with the pinned peer engines (requirements.txt).
# Idempotent: a stamp holding the hash of requirements.txt skips the install
# when nothing changed. The venv is git-ignored; wheels are cached outside the
# repository (PIP_CACHE_DIR, default ~/.cache/shapeshift/pip) because the torch
# wheel from PyPI carries its CUDA libraries and is several GB.
#
# --ort-only: bench/peers/.venv-ort with just onnx, onnxruntime and numpy at
# the same pins (what special_values.py needs; no torch download).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${here}/.venv"
requirements="${here}/requirements.txt"
packages=(torch transformers onnx onnxruntime onnxscript numpy psutil)
if [[ "${1:-}" == "--ort-only" ]]; then
  venv="${here}/.venv-ort"
  packages=(onnx onnxruntime numpy)
  mkdir -p "${venv}"
  subset="${venv}/requirements-ort.txt"
  grep -E '^(onnx|onnxruntime|numpy)==' "${here}/requirements.txt" > "${subset}.new"
  mv "${subset}.new" "${subset}"
  requirements="${subset}"
elif [[ $# -gt 0 ]]; then
  echo "usage: setup.sh [--ort-only]" >&2
  exit 2
fi
stamp="${venv}/.requirements.sha256"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/pip}"

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "setup.sh: python3 venv module missing; installing python3-venv" >&2
  apt-get update -qq
  apt-get install -y -qq python3-venv
fi

want="$(sha256sum "${requirements}" | cut -d' ' -f1)"
if [[ -x "${venv}/bin/python" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  echo "setup.sh: ${venv} is up to date"
else
  [[ -x "${venv}/bin/python" ]] || python3 -m venv "${venv}"
  "${venv}/bin/python" -m pip install --quiet --upgrade pip
  "${venv}/bin/python" -m pip install --quiet -r "${requirements}"
  echo "${want}" > "${stamp}"
fi

"${venv}/bin/python" - "${packages[@]}" <<'PY'
import importlib.metadata as md
import sys
for name in sys.argv[1:]:
    print(f"setup.sh: {name}=={md.version(name)}")
PY
