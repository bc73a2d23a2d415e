#!/usr/bin/env bash
# The one command for the peer comparison: set up the venv, export the models,
# run every engine on every model in its own process (rounds interleaved, engine
# order rotated per round, so slow drift of the machine spreads over all
# engines), shapeshift among them in every round where its CLI can run models,
# and write the report.
#
#   bench/peers/run.sh [--tiny] [--models a,b] [--engines a,b] [--rounds N]
#                      [--repeats N] [--trace-requests N] [--exporter torchscript|dynamo]
#                      [--seqs 8,16,...] [--batches 1,8] [--results DIR]
#
# Results (JSON per process, npz outputs, the trace, the machine probes, report.md) go to
# ${XDG_CACHE_HOME:-~/.cache}/shapeshift/peer-results/<UTC time> unless --results
# is given; models to ${XDG_CACHE_HOME:-~/.cache}/shapeshift/models. Nothing is
# written into the repository. Benchmarks want a quiet machine: the load average
# at the start is recorded and a warning printed when other work is running.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift"
python="${here}/.venv/bin/python"

tiny=""
models="bert-base,distilbert,roberta-base,gpt2,gpt2-past"
engines="ort,torch-eager,torch-compile-dynamic,torch-compile-default"
rounds=2
repeats=20
trace_requests=2000
exporter=torchscript
results=""
seqs="8,16,32,64,128,256,384,512"
batches="1,8"
shapeshift_bin="${SHAPESHIFT_BIN:-${repo}/build/tools/shapeshift}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --tiny) tiny="--tiny"; shift ;;
    --models) models="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --trace-requests) trace_requests="$2"; shift 2 ;;
    --exporter) exporter="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    --seqs) seqs="$2"; shift 2 ;;
    --batches) batches="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done

models_dir="${cache}/models${tiny:+/tiny}"
results="${results:-${cache}/peer-results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "${results}"

"${here}/setup.sh"
# --skip-existing: an export that is already there (and passed its check) is kept.
"${python}" "${here}/export_models.py" ${tiny} --out "${models_dir}" --models "${models}" \
  --exporters "${exporter}" --skip-existing > "${results}/export.log" 2>&1 \
  || { echo "run.sh: export failed; see ${results}/export.log" >&2; exit 1; }
# Files exported before the relation was recorded (GPT-2 with past: the mask's
# total_sequence = past_sequence + sequence) get it now; a no-op otherwise.
"${python}" "${here}/export_models.py" ${tiny} --out "${models_dir}" --models "${models}" \
  --exporters "${exporter}" --record-relations >> "${results}/export.log" 2>&1

shapeshift_runnable=0
if [[ -x "${shapeshift_bin}" ]] && "${shapeshift_bin}" help 2>/dev/null | grep -qE '^\s+run\s'; then
  shapeshift_runnable=1
fi

load="$(cut -d' ' -f1 /proc/loadavg)"
cpus="$(nproc)"
if awk -v l="${load}" -v c="${cpus}" 'BEGIN { exit !(l > 0.5 * c) }'; then
  echo "run.sh: WARNING: load average ${load} on ${cpus} CPUs; figures will be noisy" >&2
fi
"${python}" - "${results}/machine.json" "${load}" "${shapeshift_runnable}" "${shapeshift_bin}" \
  "${repo}" <<'PY'
import datetime, importlib.metadata as md, json, os, subprocess, sys
path, load, runnable, binary, repo = sys.argv[1:]
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
              if l.startswith("Model name")), "unknown")
commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"],
                        capture_output=True, text=True).stdout.strip()
json.dump({
    "cpu (lscpu)": model,
    "logical CPUs": len(os.sched_getaffinity(0)),
    "load average at start": load,
    "torch": md.version("torch"), "onnxruntime": md.version("onnxruntime"),
    "transformers": md.version("transformers"),
    "threads per engine": "2 intra-op, 1 inter-op",
    "shapeshift": f"runnable ({binary})" if runnable == "1" else "not yet runnable",
    "shapeshift commit": commit,
    "date (UTC)": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
}, open(path, "w"), indent=1)
PY

# The machine's FMA peak and triad bandwidth before and after the runs
# (probe.sh): report.py puts each latency against the floor they give.
"${here}/probe.sh" "${results}" start

IFS=, read -r -a engine_list <<< "${engines}"
IFS=, read -r -a model_list <<< "${models}"
for model in "${model_list[@]}"; do
  out="${results}/${model}"
  mkdir -p "${out}"
  model_file="${models_dir}/${model}-${exporter}/model.onnx"
  # shapeshift takes its turn in every round like a peer (last in round 1,
  # which writes the trace it replays), so machine noise reaches it as often.
  round_list=("${engine_list[@]}")
  [[ ${shapeshift_runnable} == 1 ]] && round_list+=(shapeshift)
  for ((round = 1; round <= rounds; round++)); do
    n=${#round_list[@]}
    for ((k = 0; k < n; k++)); do
      engine="${round_list[$(( (k + round - 1) % n ))]}"
      echo "run.sh: ${model} round ${round}/${rounds}: ${engine}" >&2
      if [[ ${engine} == shapeshift ]]; then
        "${python}" "${here}/shapeshift_bench.py" --bin "${shapeshift_bin}" --model "${model}" \
          ${tiny} --model-file "${model_file}" --trace "${out}/trace.txt" --repeats "${repeats}" \
          --seqs "${seqs}" --batches "${batches}" \
          --out "${out}/shapeshift.round${round}.json" --outputs "${out}/shapeshift.npz" \
          || echo "run.sh: shapeshift failed on ${model}; see ${out}/shapeshift.round${round}.log" >&2
        continue
      fi
      "${python}" "${here}/peer_bench.py" --engine "${engine}" --model "${model}" ${tiny} \
        --model-file "${model_file}" --repeats "${repeats}" --seqs "${seqs}" --batches "${batches}" \
        --trace-requests "${trace_requests}" --trace-out "${out}/trace.txt" \
        --outputs "${out}/${engine}.npz" --out "${out}/${engine}.round${round}.json" \
        2> "${out}/${engine}.round${round}.log" \
        || echo "run.sh: ${engine} failed on ${model}; see ${out}/${engine}.round${round}.log" >&2
    done
  done
done

"${here}/probe.sh" "${results}" end

"${python}" "${here}/report.py" "${results}" --out "${results}/report.md"
cat "${results}/report.md"
echo "run.sh: results in ${results}" >&2
