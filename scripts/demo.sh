#!/usr/bin/env bash
# Set-up + build + the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
BIN=${BUILD_DIR:-build}/tools/shapeshift
if "$BIN" help | grep -q '^  demo '; then
  exec "$BIN" demo "$@"
fi
# Until the compiler's demo exists: a coverage proof over guard sets.
echo '$ shapeshift prove --dim seq=1..512 --guards "seq<=128" --guards "seq>128 && seq%16==0"'
"$BIN" prove --dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0' || true
echo '$ shapeshift prove --dim seq=1..512 --guards "seq<=128" --guards "seq>128 && seq%16==0" --guards "seq>128"'
"$BIN" prove --dim seq=1..512 --guards 'seq<=128' --guards 'seq>128 && seq%16==0' --guards 'seq>128'
