#!/usr/bin/env bash
# Set-up + build + the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
BIN=${BUILD_DIR:-build}/tools/shapeshift
# libgomp's default active spin-waiting collapses when the cores are shared
# with other work (measured 10x slower on the loaded 2-core machine, see
# bench/RESULTS.md "End to end"); sleep-waiting unless the caller chose.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if "$BIN" help | grep -q '^  demo '; then
  exec "$BIN" demo "$@"
fi
# Until the compiler's demo exists: a coverage proof over guard sets.
echo '$ shapeshift prove --dim seq=1..512 --guards "seq<=128" --guards "seq>128 && seq%16==0"'
"$BIN" prove --dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0' || true
echo '$ shapeshift prove --dim seq=1..512 --guards "seq<=128" --guards "seq>128 && seq%16==0" --guards "seq>128"'
"$BIN" prove --dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0' --guards 'seq>128'
