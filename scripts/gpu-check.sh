#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one prepared run that
# fits an 8-minute GPU slot (stages are time-boxed; what does not fit is
# recorded as skipped, never guessed):
#
#   1. build (build-gpu/: shapeshift, gpu_test, codegen_test) with the GPU
#      tests registered (-DSHAPESHIFT_GPU_TESTS=ON);
#   2. the CUDA tests: tests/gpu (kernels on the GPU vs their emulation,
#      BERT and GPT-2 device programs vs the CPU, CUDA graphs) and the
#      codegen CUDA suites (NVRTC cubins, ptxas reports, emulation);
#   3. shapeshift alone (no PyPI needed): a 200-request variable-length trace
#      on builtin:bert-base and 200 decode steps on builtin:gpt2-base-kv with
#      --device cuda — compiles, CUDA graph captures/replays, latencies;
#   4. peers (needs bench/gpu/requirements.txt: torch, onnxruntime-gpu):
#      BERT-base batch 1/8 x seq 128/512, GPT-2 decode, the zoo's ~1.1B Llama
#      (prefill) — shapeshift vs ONNX Runtime's CUDA EP and torch.compile,
#      outputs compared with ORT's (bench/gpu/gpu_bench.py).
#
#   scripts/gpu-check.sh [--results DIR] [--budget-s SECONDS] [--no-peers] [--setup-peers] [--help]
#
# Results: DIR (default ${XDG_CACHE_HOME:-~/.cache}/shapeshift/gpu-check/<UTC
# time>) gets summary.md, results.json and one log per stage; the summary is
# printed at the end. --setup-peers creates bench/gpu/.venv from PyPI first
# and exports BERT-base, GPT-2 with past and the ~1.1B Llama (minutes; not
# part of the budget: run it where PyPI is reachable). Without
# that venv (or torch/onnxruntime-gpu importable by python3) stage 4 records
# "not measured". Exit: 0 when the build and every test passed, 1 otherwise,
# 3 when there is no GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

results=""
budget_s=470
peers=1
setup_peers=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --results) results="$2"; shift 2 ;;
    --budget-s) budget_s="$2"; shift 2 ;;
    --no-peers) peers=0; shift ;;
    --setup-peers) setup_peers=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
done
results="${results:-${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/gpu-check/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$results"
start=$(date +%s)
left() { echo $(( budget_s - ($(date +%s) - start) )); }
summary="$results/summary.md"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
status=0

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  note "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed); nothing to check"
  exit 3
fi
note "# gpu-check $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
note "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
note "CUDA toolkit: $( (/usr/local/cuda/bin/nvcc --version 2>/dev/null || nvcc --version 2>/dev/null) | tail -1)"

if [[ $setup_peers == 1 ]]; then
  venv="$repo/bench/gpu/.venv"
  export PIP_CACHE_DIR="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/pip}"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet -r "$repo/bench/gpu/requirements.txt" > "$results/setup-peers.log" 2>&1 \
    || note "setup-peers failed: see $results/setup-peers.log"
  # The exports the peers and shapeshift share (the ~1.1B Llama takes minutes).
  (cd "$repo/bench/peers" &&
    "$venv/bin/python" export_models.py --models bert-base,gpt2-past --exporters torchscript --skip-existing &&
    "$venv/bin/python" export_models.py --llama-1b --skip-existing) >> "$results/setup-peers.log" 2>&1 \
    || note "setup-peers: an export failed (see $results/setup-peers.log); gpu_bench.py retries it in the budget"
  start=$(date +%s)  # setup is not part of the GPU budget
fi

# 1. Build. ccache (when warm) makes this a relink; cold, about 3-4 minutes on 16 cores.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/shapeshift-ccache}
build=build-gpu
if ! timeout $(( $(left) - 200 > 60 ? $(left) - 200 : 60 )) bash -c "
    cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHAPESHIFT_GPU_TESTS=ON -DSHAPESHIFT_BUILD_BENCH=OFF >/dev/null &&
    cmake --build $build -j$(nproc) --target shapeshift gpu_test codegen_test" > "$results/build.log" 2>&1; then
  note "build: FAILED (see $results/build.log)"
  exit 1
fi
note "build: ok in $(( $(date +%s) - start )) s"

# 2. The CUDA tests.
run_tests() {  # name, command...
  local name=$1; shift
  if timeout 180 "$@" > "$results/$name.log" 2>&1; then
    note "$name: $(grep -E '^\[  PASSED  \]' "$results/$name.log" | tail -1)"
  else
    status=1
    note "$name: FAILED — $(grep -E '^\[  FAILED  \]' "$results/$name.log" | head -5 | tr '\n' ' ') (see $results/$name.log)"
  fi
}
run_tests gpu_test "$build/tests/gpu/gpu_test"
run_tests codegen_cuda_tests "$build/tests/codegen/codegen_test" \
  --gtest_filter='CudaEmitter*:CudaEmulation*:CudaAttention*:Nvrtc*:PtxasReport*:OpenCuda*:KernelKinds*'
grep -E "ptxas|registers" "$results/codegen_cuda_tests.log" | head -80 > "$results/ptxas.txt"

# 3. shapeshift alone: traces on BERT-base and GPT-2 decode.
cli="$build/tools/shapeshift"
trace() {  # name, model, trace, extra args...
  local name=$1 model=$2 spec=$3; shift 3
  if (( $(left) < 90 )); then note "$name: skipped (time budget)"; return; fi
  timeout $(( $(left) - 60 )) "$cli" run "$model" --device cuda --policy polymorphic --trace "$spec" --no-cache \
      --json "$@" > "$results/$name.json" 2> "$results/$name.log"
  local rc=$?
  if [[ $rc == 0 ]]; then
    python3 - "$results/$name.json" <<'PY' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
c = r.get("cuda", {})
pr = r.get("per_request", {})
print(f"{sys.argv[1].rsplit('/', 1)[-1][:-5]}: {r['requests']} requests, {r['compiles']} compile(s), "
      f"{r['distinct_shapes']} shapes in {r['buckets_with_traffic']} buckets; CUDA graphs "
      f"{c.get('graph_captures')} captured, {c.get('graph_replays')} replays, {c.get('direct_runs')} direct; "
      f"median {pr.get('median_ms')} ms, p99 {pr.get('p99_ms')} ms; compile {r.get('compile_ms', 0):.0f} ms; "
      f"{r['checked']} checked vs the interpreter, {r['wrong_results']} wrong (max abs error {r['max_abs_error']:.2g})")
PY
  else
    status=1
    note "$name: FAILED (exit $rc; see $results/$name.log)"
  fi
}
trace bert-base-trace builtin:bert-base lognormal:200:1 --check-every 50
trace gpt2-decode-trace builtin:gpt2-base-kv decode:200 --check-every 100 --cuda-graph-symbol past
"$cli" run builtin:bert-base --device cuda --input input_ids=8x128 --repeats 1 --no-cache > "$results/bert-base-report.txt" 2>&1 || true

# 4. Peers.
if [[ $peers == 1 ]] && (( $(left) > 120 )); then
  python="$repo/bench/gpu/.venv/bin/python"
  [[ -x "$python" ]] || python=python3
  if ! why=$("$python" -c "import numpy, onnx, onnxruntime, torch, transformers" 2>&1); then
    note "peers: not measured — $(echo "$why" | tail -1) (run with --setup-peers where PyPI is reachable)"
  else
  timeout $(( $(left) - 15 )) "$python" "$repo/bench/gpu/gpu_bench.py" --shapeshift "$cli" --out "$results/results.json" \
    --work "$results/work" --budget-s $(( $(left) - 20 )) > "$results/peers.log" 2>&1
  { echo; echo "## shapeshift --device cuda vs ORT CUDA EP and torch.compile (median ms)"; \
    grep -E '^\||^not measured' "$results/peers.log"; } | tee -a "$summary"
  fi
else
  note "peers: skipped (--no-peers or time budget)"
fi
note "total: $(( $(date +%s) - start )) s; results in $results"
exit $status
