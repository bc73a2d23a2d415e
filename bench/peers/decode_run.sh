#!/usr/bin/env bash
# Greedy decoding side by side: decode_bench.py for every engine and prompt,
# one process each, engine order rotated per round (so slow drift of a shared
# machine spreads over all engines), then one table: prefill and per-step
# latency, decode tokens/s, peak RSS, shapeshift / peer ratios, and whether
# each engine generated ORT's ids.
#
#   bench/peers/decode_run.sh --model-file DIR/model.onnx [--model llama-past] [--tiny]
#       [--engines shapeshift,ort,...] [--prompts 1x16,1x512] [--steps 256]
#       [--repeats 1] [--rounds 1] [--results DIR]
#
# The model file is an export with past key/values (export_models.py
# --llama-1b writes ~/.cache/shapeshift/models/llama-past-dynamo/model.onnx).
# `--steps 1 --repeats 3` times prefills only. Results (one JSON per run,
# report.md) go to ${XDG_CACHE_HOME:-~/.cache}/shapeshift/decode-results/<UTC
# time> unless --results is given. Wants a quiet machine: the load average is
# recorded per run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${here}/.venv/bin/python"
model=llama-past
model_file=""
tiny=""
engines="shapeshift,ort,torch-eager,torch-compile-dynamic,torch-compile-default"
prompts="1x16,1x512"
steps=256
repeats=1
rounds=1
results=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --model-file) model_file="$2"; shift 2 ;;
    --tiny) tiny="--tiny"; shift ;;
    --engines) engines="$2"; shift 2 ;;
    --prompts) prompts="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    *) echo "decode_run.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -n "${model_file}" ]] || { echo "decode_run.sh: --model-file is required" >&2; exit 2; }
results="${results:-${XDG_CACHE_HOME:-$HOME/.cache}/shapeshift/decode-results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "${results}"
"${here}/setup.sh"

IFS=, read -r -a engine_list <<< "${engines}"
IFS=, read -r -a prompt_list <<< "${prompts}"
for ((round = 0; round < rounds; round++)); do
  for prompt in "${prompt_list[@]}"; do
    n=${#engine_list[@]}
    for ((i = 0; i < n; i++)); do
      engine="${engine_list[$(((i + round) % n))]}"
      out="${results}/${engine}-${prompt}-r${round}.json"
      echo "round ${round}: ${engine} ${prompt} (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      "${python}" "${here}/decode_bench.py" --engine "${engine}" --model "${model}" ${tiny} \
        --model-file "${model_file}" --prompt "${prompt}" --steps "${steps}" --repeats "${repeats}" \
        --out "${out}" 2> "${out%.json}.log" \
        || echo "decode_run.sh: ${engine} ${prompt} failed; see ${out%.json}.log" >&2
    done
  done
done

"${python}" - "${results}" > "${results}/report.md" <<'PY'
import collections, json, pathlib, statistics, sys
runs = collections.defaultdict(list)
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    r = json.loads(path.read_text())
    runs[(f'{r["batch"]}x{r["prompt"]}', r["engine"])].append(r)
prompts = sorted({p for p, _ in runs}, key=lambda p: [int(x) for x in p.split("x")])
engines = sorted({e for _, e in runs}, key=lambda e: (e != "shapeshift", e != "ort", e))
def med(rs, f):
    vals = [f(r) for r in rs if f(r) is not None]
    return statistics.median(vals) if vals else None
def fmt(x, digits=1):
    return "—" if x is None else f"{x:.{digits}f}"
print("| prompt | engine | prefill ms | step ms (median) | p90 | tokens/s | peak RSS MB | ids = ORT's | prefill ss/peer | step ss/peer |")
print("|---|---|---|---|---|---|---|---|---|---|")
for p in prompts:
    ss = runs.get((p, "shapeshift"), [])
    ort_ids = runs[(p, "ort")][0]["tokens"] if (p, "ort") in runs else None
    for e in engines:
        rs = runs.get((p, e))
        if not rs:
            continue
        pre = med(rs, lambda r: r["prefill_ms"])
        step = med(rs, lambda r: r["step_ms"]["median"] if r["step_ms"] else None)
        p90 = med(rs, lambda r: r["step_ms"]["p90"] if r["step_ms"] else None)
        tps = med(rs, lambda r: r["decode_tokens_per_s"])
        rss = med(rs, lambda r: r.get("child_peak_rss_mb") or r["peak_rss_mb"])
        same = "—" if ort_ids is None else ("yes" if rs[0]["tokens"] == ort_ids else
                                          f'first {next((i for i, (a, b) in enumerate(zip(rs[0]["tokens"], ort_ids)) if a != b), len(ort_ids))}')
        ss_pre = med(ss, lambda r: r["prefill_ms"])
        ss_step = med(ss, lambda r: r["step_ms"]["median"] if r["step_ms"] else None)
        ratio_pre = None if e == "shapeshift" or ss_pre is None or not pre else ss_pre / pre
        ratio_step = None if e == "shapeshift" or ss_step is None or not step else ss_step / step
        print(f"| {p} | {e} | {fmt(pre)} | {fmt(step, 2)} | {fmt(p90, 2)} | {fmt(tps)} | {fmt(rss, 0)} | {same} | "
              f"{fmt(ratio_pre, 2)} | {fmt(ratio_step, 2)} |")
loads = [r["load_average_at_start"] for rs in runs.values() for r in rs]
print(f"\nload average at each run's start: {min(loads):.2f}..{max(loads):.2f}; runs per cell: "
      f"{max(len(rs) for rs in runs.values())}")
PY
cat "${results}/report.md"
