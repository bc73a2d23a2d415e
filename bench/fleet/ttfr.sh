#!/usr/bin/env bash
# Time to first result of a new replica, four ways, for BERT-base and GPT-2:
#   cold     no cache at all: every kernel compiled
#   local    a warm local cache directory (--cache-dir, filled by an earlier process)
#   redis    a warm Redis (--remote-cache, filled by another replica), no local cache
#   bundle   an AOT bundle (shapeshift compile -o MODEL.ssb), no cache
# Each figure is the median of --runs processes (default 3) of
#   shapeshift run MODEL --input input_ids=BxS --repeats 1 --json
# reading `time_to_first_result_ms` (model or bundle load + session creation +
# the first request, measured inside the process) and `compiles`/`llvm_compiles`.
#
# Models: the full-size torchscript exports in ${XDG_CACHE_HOME:-~/.cache}/shapeshift/models
# (bench/peers/export_models.py --models bert-base,gpt2) when present, else the
# built-ins builtin:bert / builtin:gpt2 (smaller: hidden 256) — the table says which.
# Starts its own redis-server on a loopback port (scripts/redis-test-server.sh)
# and stops it at exit. Run it on a quiet machine; it warns when loaded.
#   bench/fleet/ttfr.sh [--runs N] [--shape 1x128] [--out bench/fleet/ttfr.md]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SHAPESHIFT_BIN:-$root/build/tools/shapeshift}
runs=3
shape=1x128
out=$root/bench/fleet/ttfr.md
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "ttfr.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "ttfr.sh: $bin not built (scripts/build.sh)" >&2; exit 2; }
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
  echo "ttfr.sh: warning: load average $load on $(nproc) CPUs; the figures will be noisy" >&2
fi

work=$(mktemp -d -t shapeshift-ttfr.XXXXXX)
trap '"$root/scripts/redis-test-server.sh" stop "$work/redis"; rm -rf "$work"' EXIT
port=$("$root/scripts/redis-test-server.sh" start "$work/redis")
openssl rand -hex 32 > "$work/key"
models_dir=${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/models

# One process; prints "ttfr_ms compiles llvm_compiles".
measure() {
  "$bin" run "$@" --input "input_ids=$shape" --repeats 1 --json 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["time_to_first_result_ms"], j["compiles"], j["llvm_compiles"])'
}
# The median over $runs processes of `measure ARGS`.
median_of() {
  for _ in $(seq 1 "$runs"); do measure "$@"; done | sort -n | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'
}

{
  echo "| model | source | scenario | time to first result (ms) | compiles | LLVM compiles |"
  echo "|---|---|---|---:|---:|---:|"
} > "$out"
db=0
for name in bert-base gpt2; do
  model=$models_dir/$name-torchscript/model.onnx
  source="full-size export"
  if [ ! -f "$model" ]; then
    model=builtin:${name%-base}
    source="built-in (hidden 256)"
  fi
  dims=(--dim batch=1..8 --dim seq=1..512)
  case "$model" in *.onnx) dims=(--dim batch=1..8 --dim sequence=1..512) ;; esac
  db=$((db + 1))
  url=redis://127.0.0.1:$port/$db
  echo "== $name ($model)" >&2
  row() { echo "| $name | $source | $1 | $2 | $3 | $4 |" >> "$out"; }
  read -r ms c l < <(median_of "$model" "${dims[@]}" --no-cache)
  row cold "$ms" "$c" "$l"
  rm -rf "$work/cache"
  "$bin" run "$model" "${dims[@]}" --input "input_ids=$shape" --repeats 1 --cache-dir "$work/cache" >/dev/null 2>&1
  read -r ms c l < <(median_of "$model" "${dims[@]}" --cache-dir "$work/cache")
  row "warm local cache" "$ms" "$c" "$l"
  "$bin" run "$model" "${dims[@]}" --input "input_ids=$shape" --repeats 1 --no-cache \
    --remote-cache "$url" --remote-cache-key-file "$work/key" >/dev/null 2>&1
  read -r ms c l < <(median_of "$model" "${dims[@]}" --no-cache --remote-cache "$url" --remote-cache-key-file "$work/key")
  row "warm Redis" "$ms" "$c" "$l"
  "$bin" compile "$model" "${dims[@]}" --no-cache -o "$work/$name.ssb" >&2
  read -r ms c l < <(median_of "$work/$name.ssb" --no-cache)
  row bundle "$ms" "$c" "$l"
done
echo "shape $shape, median of $runs processes, load average at start $load, $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse --short HEAD)" >> "$out"
cat "$out"
