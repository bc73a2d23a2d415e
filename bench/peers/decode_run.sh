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
# recorded per run. With build/bench/machine_probe built, the FMA peak and
# triad bandwidth are measured before and after the runs (probe-start.json,
# probe-end.json) and the report puts prefill and step against the floor
# they give (peer_costs.py; the step's at the run's middle cache length).
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

"${here}/probe.sh" "${results}" start

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

"${here}/probe.sh" "${results}" end

PYTHONPATH="${here}" "${python}" - "${results}" > "${results}/report.md" <<'PY'
import collections, json, pathlib, statistics, sys
import peer_costs, peer_inputs as pi
runs = collections.defaultdict(list)
results = pathlib.Path(sys.argv[1])
for path in sorted(results.glob("*.json")):
    if path.name.startswith("probe-"):
        continue
    r = json.loads(path.read_text())
    runs[(f'{r["batch"]}x{r["prompt"]}', r["engine"])].append(r)
prompts = sorted({p for p, _ in runs}, key=lambda p: [int(x) for x in p.split("x")])
engines = sorted({e for _, e in runs}, key=lambda e: (e != "shapeshift", e != "ort", e))
def med(rs, f):
    vals = [f(r) for r in rs if f(r) is not None]
    return statistics.median(vals) if vals else None
def fmt(x, digits=1):
    return "—" if x is None else f"{x:.{digits}f}"
probes = peer_costs.load_probes(results)
limits = peer_costs.best_limits(probes)
def floors(r):
    """(prefill, step) floors in ms: peer_costs.cost at the probes' best
    figures; the step's at the middle of the cache lengths its steps saw."""
    if limits is None or r["model"] not in pi.ALL_MODELS:
        return None, None
    spec = pi.ALL_MODELS[r["model"]]
    size = pi.sizes(spec.family, bool(r.get("tiny")))
    prefill = peer_costs.cost(spec, size, r["batch"], r["prompt"], 0)
    step = peer_costs.cost(spec, size, r["batch"], 1, r["prompt"] + max(r["steps"] - 1, 0) // 2)
    if prefill is None:
        return None, None
    return 1e3 * prefill.floor_s(limits), 1e3 * step.floor_s(limits)
def of_floor(floor, ms):
    return None if floor is None or not ms else floor / ms
print("| prompt | engine | prefill ms | step ms (median) | p90 | tokens/s | peak RSS MB | ids = ORT's | prefill ss/peer | step ss/peer | prefill of floor | step of floor |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
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
        floor_pre, floor_step = floors(rs[0])
        print(f"| {p} | {e} | {fmt(pre)} | {fmt(step, 2)} | {fmt(p90, 2)} | {fmt(tps)} | {fmt(rss, 0)} | {same} | "
              f"{fmt(ratio_pre, 2)} | {fmt(ratio_step, 2)} | {fmt(of_floor(floor_pre, pre), 2)} | "
              f"{fmt(of_floor(floor_step, step), 2)} |")
loads = [r["load_average_at_start"] for rs in runs.values() for r in rs]
print(f"\nload average at each run's start: {min(loads):.2f}..{max(loads):.2f}; runs per cell: "
      f"{max(len(rs) for rs in runs.values())}")
if limits is None:
    print("floors: none (build/bench/machine_probe was not built)")
else:
    print(f"floors (peer_costs.py): FLOPs at {limits.fma_peak_gflops:.1f} GFLOP/s or bytes at "
          f"{limits.triad_gbytes_s:.1f} GB/s, the longer "
          f"(the higher of {len(probes)} probe(s)); of floor = floor / measured (above 1: the run had more "
          "bandwidth than the probes caught; this host's moves by 1.5x within minutes)")
PY
cat "${results}/report.md"
