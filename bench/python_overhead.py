"""Per-call cost of shapeshift.InferenceSession.run against onnxruntime's, on the
same model and inputs (tests/data/models/tiny_bert_opset17.onnx, batch 1,
seq 8 by default; --model for another BERT-style export whose inputs are all
[batch, seq] integers: ids, mask, token types, fed as ones), and what the
Python layer adds over the C++ API.

Engines, timed in the same process, interleaved round by round (the order
rotated each round, so slow drift of a shared machine spreads over all):
  ort          onnxruntime.InferenceSession.run(None, feed)
  shapeshift   shapeshift.InferenceSession.run(None, feed)
  ss-core      shapeshift._core.Model.run([ids, mask]) (no name mapping)
and, when --cli names the built CLI, `shapeshift run --json` at the same shape
(the C++ API: Session::Run's median over --calls repeats, in its own
process, OMP_NUM_THREADS=--threads), run once per round between the in-process
engines, for the Python-vs-C++ difference. Each figure is the median over rounds
of the round's median per-call wall time (time.perf_counter_ns).
Nothing here asserts on time.

usage: python bench/python_overhead.py [--model M.onnx] [--seq 8] [--batch 1] [--calls 2000]
                                       [--rounds 5] [--threads 1] [--cli build/tools/shapeshift]
"""

import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np
import onnxruntime

import shapeshift

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "tests", "data", "models", "tiny_bert_opset17.onnx")


def time_calls(fn, calls):
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return samples


def cli_median_us(args):
    out = subprocess.run(
        [args.cli, "run", args.model, "--policy", "polymorphic", "--no-cache"]
        + [a for name in args.input_names for a in ("--input", f"{name}={args.batch}x{args.seq}")]
        + ["--repeats", str(args.calls), "--json"],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)),
    )
    return json.loads(out.stdout)["median_ms"] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cli", default="")
    args = ap.parse_args()

    ort_options = onnxruntime.SessionOptions()
    ort_options.intra_op_num_threads = args.threads
    ort = onnxruntime.InferenceSession(args.model, sess_options=ort_options, providers=["CPUExecutionProvider"])
    ss_options = shapeshift.SessionOptions()
    ss_options.intra_op_num_threads = args.threads
    ss = shapeshift.InferenceSession(args.model, sess_options=ss_options, policy="polymorphic")
    core = ss._model
    args.input_names = [i.name for i in ss.get_inputs()]
    rng = np.random.default_rng(1)
    feed = {}
    for name in args.input_names:
        if name == "input_ids" and args.model == MODEL:
            feed[name] = rng.integers(0, 1000, size=(args.batch, args.seq), dtype=np.int64)
        else:
            feed[name] = np.ones((args.batch, args.seq), dtype=np.int64)
    ordered = [feed[name] for name in args.input_names]
    np.testing.assert_allclose(ss.run(None, feed)[0], ort.run(None, feed)[0], atol=1e-4)

    engines = {
        "ort": lambda: ort.run(None, feed),
        "shapeshift": lambda: ss.run(None, feed),
        "ss-core": lambda: core.run(ordered),
    }
    for fn in engines.values():  # warm-up
        time_calls(fn, 200)
    names = list(engines) + (["cpp-cli"] if args.cli else [])
    round_medians = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            if name == "cpp-cli":
                round_medians[name].append(cli_median_us(args))
            else:
                round_medians[name].append(statistics.median(time_calls(engines[name], args.calls)) / 1e3)
    m = {n: statistics.median(v) for n, v in round_medians.items()}
    result = {
        "model": os.path.relpath(args.model, os.getcwd()),
        "batch": args.batch,
        "seq": args.seq,
        "threads": args.threads,
        "calls_per_round": args.calls,
        "rounds": args.rounds,
        "median_us": m,
        "round_medians_us": round_medians,
        "input_copies": core.input_copies,
        "loadavg": os.getloadavg(),
        "python_layer_us": m["shapeshift"] - m["ss-core"],
    }
    if args.cli:
        result["python_over_cpp_us"] = m["shapeshift"] - m["cpp-cli"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
