#!/usr/bin/env python3
"""Benchmarks ONE peer engine on one model and prints one JSON document.

One engine per process, so that peak RSS, thread pools and torch's compile
caches of one engine never leak into another's numbers (run.sh interleaves
the processes). Phases, in this order because each one's state is the next
one's starting point:

  cold     engine preparation (session creation / torch.compile wrapper) plus
           the first request of the trace: what a fresh server pays.
  trace    a variable-length request stream (lognormal sentence lengths, fixed
           seed, batch 1) on the engine as the cold phase left it: total time,
           per-request percentiles, compiles and recompiles it caused.
  latency  a fixed grid of (batch, length): warmup, then repeats; median, p99.
  outputs  outputs at a few fixed shapes, saved as npz for agreement checks.

"length" is the sequence length, except for a model with past (gpt2-past)
where it is the cache length of a one-token decode step.
Inputs come from peer_inputs.make_inputs with fixed seeds: every engine sees
the same token ids. Nothing here asserts on time; it only measures.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import resource
import sys
import time

import numpy as np
import psutil

import peer_engines as pe
import peer_inputs as pi

LATENCY_SEQS = (8, 16, 32, 64, 128, 256, 384, 512)
LATENCY_BATCHES = (1, 8)
# (batch, length, padded tail tokens in rows after the first)
# Sentence lengths in tokens: median 24, p99 about 140; clipped to the model's range.
TRACE_MEDIAN, TRACE_SIGMA, TRACE_MAX = 24, 0.75, 512
TRACE_SEED_BASE = 1000  # request i of a trace uses input seed TRACE_SEED_BASE + i


def cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def rss_mb() -> float:
    return round(psutil.Process().memory_info().rss / 2**20, 1)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def make_trace(requests: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    lengths = rng.lognormal(mean=np.log(TRACE_MEDIAN), sigma=TRACE_SIGMA, size=requests)
    return [int(n) for n in np.clip(np.rint(lengths), 1, TRACE_MAX)]


def trace_line(spec: pi.ModelSpec, length: int) -> str:
    shape = pi.request_shape(spec, length)
    if spec.with_past:
        return f"{pi.BATCH}=1 {pi.SEQUENCE}={shape['seq']} {pi.PAST_SEQUENCE}={shape['past']}"
    return f"{pi.BATCH}=1 {pi.SEQUENCE}={shape['seq']}"


def timed_run(engine, inputs) -> tuple[float, dict]:
    start = time.perf_counter()
    outputs = engine.run(inputs)
    return time.perf_counter() - start, outputs


def percentiles_ms(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1e3
    return {"median_ms": round(float(np.median(ms)), 4), "p99_ms": round(float(np.percentile(ms, 99)), 4),
            "mean_ms": round(float(ms.mean()), 4), "min_ms": round(float(ms.min()), 4),
            "max_ms": round(float(ms.max()), 4)}


def request_inputs(spec, size, batch, length, pad_tail=0, seed=0):
    shape = pi.request_shape(spec, length)
    return pi.make_inputs(spec, size, batch, shape["seq"], shape["past"], pad_tail, seed)


def run_cold_and_trace(engine, spec, size, lengths: list[int]) -> tuple[dict, dict]:
    before = engine.compile_stats()
    start = time.perf_counter()
    engine.prepare()
    prepared = time.perf_counter()
    first_inputs = request_inputs(spec, size, 1, lengths[0], seed=TRACE_SEED_BASE)
    first_seconds, _ = timed_run(engine, first_inputs)
    cold = {"prepare_s": round(prepared - start, 4), "first_run_s": round(first_seconds, 4),
            "first_result_s": round(prepared - start + first_seconds, 4),
            "first_length": lengths[0], "compile": pe.stats_delta(before, engine.compile_stats())}
    if len(lengths) == 1:
        return cold, {}
    per_request = [first_seconds]
    wall_start = time.perf_counter()
    for i, length in enumerate(lengths[1:], start=1):
        seconds, _ = timed_run(engine, request_inputs(spec, size, 1, length,
                                                      seed=TRACE_SEED_BASE + i))
        per_request.append(seconds)
    wall = time.perf_counter() - wall_start + first_seconds
    # engine_s: session creation (prepare) + every run, as shapeshift's
    # (tools/run_replay_report.cc): its compile is its session creation, so a
    # total without the peers' prepare compared unlike with like.
    trace = {"requests": len(lengths), "engine_s": round(prepared - start + sum(per_request), 4),
             "requests_s": round(sum(per_request), 4),
             "wall_s_with_input_generation": round(wall, 4),
             "time_to_first_result_s": cold["first_result_s"],
             "per_request": percentiles_ms(per_request),
             "compile": pe.stats_delta(before, engine.compile_stats())}
    return cold, trace


def run_latency(engine, spec, size, batches, seqs, warmup: int, repeats: int) -> list[dict]:
    rows = []
    for batch in batches:
        for length in seqs:
            inputs = request_inputs(spec, size, batch, length)
            before = engine.compile_stats()
            first, _ = timed_run(engine, inputs)
            for _ in range(max(0, warmup - 1)):
                engine.run(inputs)
            times = [timed_run(engine, inputs)[0] for _ in range(repeats)]
            row = {"batch": batch, "length": length, **pi.request_shape(spec, length),
                   "repeats": repeats, "first_call_ms": round(first * 1e3, 4),
                   **percentiles_ms(times)}
            stats = pe.stats_delta(before, engine.compile_stats())
            if stats is not None:
                row["compile"] = stats
            rows.append(row)
            print(f"  batch={batch} length={length}: median {row['median_ms']:.3f} ms",
                  file=sys.stderr, flush=True)
    return rows


def save_outputs(engine, spec, size, path: pathlib.Path) -> list[str]:
    arrays = {}
    for batch, length, pad_tail in pi.AGREEMENT_CASES:
        if spec.with_past:
            pad_tail = 0  # a one-token decode step has no tail to pad
        outputs = engine.run(request_inputs(spec, size, batch, length, pad_tail))
        for name, value in outputs.items():
            arrays[pi.agreement_key(batch, length, pad_tail, name)] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return sorted(arrays)


def emit(text: str, out: pathlib.Path | None):
    """A result document to `out` (its folder made), or to stdout."""
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    else:
        sys.stdout.write(text)


def parse_ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, choices=pe.ENGINES)
    parser.add_argument("--model", default="bert-base", choices=list(pi.MODELS))
    parser.add_argument("--tiny", action="store_true", help="the --tiny architectures")
    parser.add_argument("--model-file", help="ONNX file for --engine ort")
    parser.add_argument("--seqs", default=",".join(map(str, LATENCY_SEQS)),
                        help="latency lengths (empty: skip the latency phase)")
    parser.add_argument("--batches", default=",".join(map(str, LATENCY_BATCHES)))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--trace-requests", type=int, default=2000,
                        help="requests in the variable-length trace (1: cold start only)")
    parser.add_argument("--trace-seed", type=int, default=7)
    parser.add_argument("--trace-out", type=pathlib.Path,
                        help="write the trace as 'batch=1 sequence=N' lines (for shapeshift --trace)")
    parser.add_argument("--outputs", type=pathlib.Path, help="npz of outputs for agreement checks")
    parser.add_argument("--out", type=pathlib.Path, help="JSON result file (default: stdout)")
    args = parser.parse_args()
    if args.engine == "ort" and not (args.model_file and pathlib.Path(args.model_file).is_file()):
        parser.error(f"--engine ort needs --model-file naming an exported ONNX file "
                     f"(got {args.model_file!r}; see export_models.py)")
    if args.trace_requests < 1:
        parser.error("--trace-requests must be at least 1 (its first request is the cold start)")

    process_start = time.perf_counter()
    spec = pi.MODELS[args.model]
    size = pi.sizes(spec.family, args.tiny)
    if args.engine != "ort":
        pe.set_torch_threads()
    rss_after_imports = rss_mb()
    build_start = time.perf_counter()
    engine = pe.make_engine(args.engine, spec, args.tiny, args.model_file)
    model_build_s = time.perf_counter() - build_start

    lengths = make_trace(args.trace_requests, args.trace_seed)
    if args.trace_out:
        args.trace_out.parent.mkdir(parents=True, exist_ok=True)
        args.trace_out.write_text("".join(trace_line(spec, n) + "\n" for n in lengths))
    cold, trace = run_cold_and_trace(engine, spec, size, lengths)
    rss_after_trace = rss_mb()
    latency = run_latency(engine, spec, size, parse_ints(args.batches), parse_ints(args.seqs),
                          args.warmup, args.repeats)
    output_keys = save_outputs(engine, spec, size, args.outputs) if args.outputs else []

    result = {
        "engine": args.engine, "model": args.model, "tiny": args.tiny,
        "model_file": args.model_file if args.engine == "ort" else None,
        "machine": {"cpu": cpu_model(), "logical_cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "versions": engine.versions(),
        "threads": {"intra_op": pe.THREADS, "inter_op": 1},
        "model_build_s": round(model_build_s, 4),
        "cold": cold,
        "trace": trace,
        "trace_file": str(args.trace_out) if args.trace_out else None,
        "trace_settings": {"requests": args.trace_requests, "seed": args.trace_seed,
                           "lognormal_median": TRACE_MEDIAN, "lognormal_sigma": TRACE_SIGMA,
                           "max_length": TRACE_MAX},
        "latency": latency,
        "latency_settings": {"warmup": args.warmup, "repeats": args.repeats},
        "memory": {"rss_after_imports_mb": rss_after_imports,
                   "rss_after_trace_mb": rss_after_trace, "rss_end_mb": rss_mb(),
                   "peak_rss_mb": peak_rss_mb()},
        "outputs_file": str(args.outputs) if args.outputs else None,
        "outputs": output_keys,
        "total_process_s": round(time.perf_counter() - process_start, 3),
    }
    if isinstance(engine, pe.TorchEngine):
        result["recompile_examples"] = engine.recompile_examples()
    emit(json.dumps(result, indent=1) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
