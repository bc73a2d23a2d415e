#!/usr/bin/env python3
"""Runs the shapeshift CLI over the same grid and trace as peer_bench.py and
writes its figures in peer_bench's JSON schema, for report.py.

The CLI contract this relies on (issue 7):

  shapeshift run MODEL.onnx --dim batch=1..8 --dim sequence=1..512
      --input NAME=BxS ... --repeats N --json
    prints one JSON object with median_ms and p99_ms (and optionally
    peak_rss_mb, compile_s);
  shapeshift run MODEL.onnx --dim ... --trace file:PATH --json
    replays PATH ('batch=1 sequence=37' per line: the model's dim names) and
    prints one JSON object with engine_s (loading the model, session
    creation and every run),
    requests_s (every run),
    time_to_first_result_s, compiles, recompiles, per_request {median_ms,
    p99_ms, max_ms} and compile_ms.

Anything else (a failed command, output that is not JSON, a missing key) is
recorded as {"error": ...} with the command and its output saved next to the
result, and report.py shows "shapeshift: failed (...)": no figure is guessed.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys

import numpy as np

import peer_inputs as pi


class CliError(Exception):
    pass


def run_cli(command: list[str], log: pathlib.Path, required: tuple[str, ...]) -> dict:
    completed = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    with log.open("a") as f:
        f.write("$ " + " ".join(command) + f"\n[exit {completed.returncode}]\n"
                + completed.stdout + completed.stderr + "\n")
    if completed.returncode != 0:
        raise CliError(f"exit {completed.returncode}: {' '.join(command[:3])} ... (see {log})")
    try:
        result = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise CliError(f"output of {' '.join(command[:3])} ... is not JSON (see {log})") from None
    missing = [k for k in required if k not in result]
    if missing:
        raise CliError(f"output lacks {', '.join(missing)} (see {log})")
    return result


def dim_flags(spec: pi.ModelSpec, max_batch: int) -> list[str]:
    """The declared domain, in the exported files' dim names. With past, the
    mask's total_sequence is past_sequence + sequence (recorded in the file's
    metadata by export_models.py), so it is not declared here."""
    flags = ["--dim", f"{pi.BATCH}=1..{max_batch}"]
    if spec.with_past:
        return flags + ["--dim", f"{pi.SEQUENCE}=1..1", "--dim", f"{pi.PAST_SEQUENCE}=1..1023"]
    return flags + ["--dim", f"{pi.SEQUENCE}=1..512"]


def input_flags(spec: pi.ModelSpec, size: pi.Sizes, batch: int, length: int) -> list[str]:
    inputs = pi.make_inputs(spec, size, batch, **pi.request_shape(spec, length))
    flags = []
    for name in pi.input_names(spec, size):
        flags += ["--input", f"{name}={'x'.join(map(str, inputs[name].shape))}"]
    return flags


def save_outputs(binary: str, model_file: str, dims: list[str], spec: pi.ModelSpec, size: pi.Sizes,
                 work: pathlib.Path, path: pathlib.Path, log: pathlib.Path) -> list[str]:
    """Runs the peers' agreement cases through the CLI on the very tensors the
    peers got (`--inputs-from`, ONNX test-data layout) and saves the outputs
    (`--save-outputs`) under the peers' npz keys, for report.py."""
    import onnx
    from onnx import numpy_helper

    arrays = {}
    for batch, length, pad_tail in pi.AGREEMENT_CASES:
        if spec.with_past:
            pad_tail = 0  # as peer_bench.save_outputs: a decode step has no tail to pad
        shape = pi.request_shape(spec, length)
        inputs = pi.make_inputs(spec, size, batch, shape["seq"], shape["past"], pad_tail, 0)
        case = work / pi.agreement_key(batch, length, pad_tail, "").rstrip("/")
        in_dir, out_dir = case / "inputs", case / "outputs"
        in_dir.mkdir(parents=True, exist_ok=True)
        for k, name in enumerate(pi.input_names(spec, size)):
            onnx.save_tensor(numpy_helper.from_array(inputs[name], name), str(in_dir / f"input_{k}.pb"))
        run_cli([binary, "run", model_file, *dims, "--inputs-from", str(in_dir), "--save-outputs", str(out_dir),
                 "--repeats", "1", "--json"], log, ("outputs",))
        for file in sorted(out_dir.glob("output_*.pb")):
            tensor = onnx.load_tensor(str(file))
            arrays[pi.agreement_key(batch, length, pad_tail, tensor.name)] = numpy_helper.to_array(tensor)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return sorted(arrays)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="the shapeshift binary")
    parser.add_argument("--model", required=True, choices=list(pi.MODELS))
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--model-file", required=True)
    parser.add_argument("--trace", required=True, type=pathlib.Path)
    parser.add_argument("--seqs", default="8,16,32,64,128,256,384,512")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--outputs", type=pathlib.Path, help="npz of outputs for agreement checks")
    args = parser.parse_args()

    spec = pi.MODELS[args.model]
    size = pi.sizes(spec.family, args.tiny)
    batches = [int(b) for b in args.batches.split(",") if b]
    seqs = [int(s) for s in args.seqs.split(",") if s]
    log = args.out.with_suffix(".log")
    log.write_text("")
    dims = dim_flags(spec, max(batches))
    result = {"engine": "shapeshift", "model": args.model, "tiny": args.tiny,
              "model_file": args.model_file, "latency": [], "trace_file": str(args.trace)}
    try:
        trace = run_cli([args.bin, "run", args.model_file, *dims,
                         "--trace", f"file:{args.trace}", "--json",
                         # cold: the compile and the first result are measured
                         # from nothing, as for the peers' fresh processes
                         "--no-cache",
                         # no reference check inside the timed process: the
                         # peers run no second engine, and the interpreter
                         # holds its own copy of every weight (GPT-2 + past:
                         # 1097 MB peak with it, 754 without). Agreement is
                         # checked on the peers' own inputs instead
                         # (save_outputs, the report's Agreement table).
                         "--check-every", "0"], log,
                        ("engine_s", "requests_s", "time_to_first_result_s", "compiles", "recompiles", "per_request",
                         "compile_ms"))
        result["trace"] = {
            "requests": sum(1 for line in args.trace.read_text().splitlines() if line.strip()),
            "engine_s": trace["engine_s"],
            "requests_s": trace["requests_s"],
            "time_to_first_result_s": trace["time_to_first_result_s"],
            "per_request": trace["per_request"],
            "compile": {"compiles": trace["compiles"], "recompiles": trace["recompiles"],
                        "recompile_limit_hits": 0}}
        result["cold"] = {"first_result_s": trace["time_to_first_result_s"], "compile_s": trace["compile_ms"] / 1e3}
        peak = trace.get("peak_rss_mb")
        for batch in batches:
            for length in seqs:
                row = run_cli([args.bin, "run", args.model_file, *dims,
                               *input_flags(spec, size, batch, length),
                               "--repeats", str(args.repeats), "--json"], log,
                              ("median_ms", "p99_ms"))
                result["latency"].append({"batch": batch, "length": length,
                                          "median_ms": row["median_ms"], "p99_ms": row["p99_ms"]})
                if row.get("peak_rss_mb") is not None:
                    peak = max(peak or 0, row["peak_rss_mb"])
        if peak is not None:
            result["memory"] = {"peak_rss_mb": peak}
        if args.outputs:
            result["outputs_file"] = str(args.outputs)
            widest = max(max(batches), *(batch for batch, _, _ in pi.AGREEMENT_CASES))
            result["outputs"] = save_outputs(args.bin, args.model_file, dim_flags(spec, widest), spec, size,
                                             args.out.parent / "shapeshift-agreement", args.outputs, log)
    except (CliError, subprocess.TimeoutExpired, OSError) as error:
        result = {"engine": "shapeshift", "model": args.model, "error": str(error)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(main())
