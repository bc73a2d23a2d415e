#!/usr/bin/env bash
# Set-up + build + the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
BIN=${BUILD_DIR:-build}/tools/shapeshift
# OpenMP wait policy: libgomp's default (spin, then sleep). Measured on the
# quiet 2-core machine: default p50 2.2 ms / 16x over the interpreter, passive
# p50 7.1 ms / 6x (each request opens ~60 oneDNN parallel regions, each a futex
# wake-up when passive). On a machine shared with other busy processes spinning
# collapses instead; set OMP_WAIT_POLICY=passive there.
if "$BIN" help | grep -q '^  demo '; then
  exec "$BIN" demo "$@"
fi
# Until the compiler's demo exists: a coverage proof over guard sets.
echo '$ shapeshift prove --dim seq=1..512 --guards "seq<=128" --guards "seq>128 && seq%16==0"'
"$BIN" prove --dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0' || true
echo '$ shapeshift prove --dim seq=1..512 --guards "seq<=128" --guards "seq>128 && seq%16==0" --guards "seq>128"'
"$BIN" prove --dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0' --guards 'seq>128'
