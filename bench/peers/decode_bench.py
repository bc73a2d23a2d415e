#!/usr/bin/env python3
"""Greedy decoding of a causal LM with KV caches, one engine per process: a
prefill of B prompts of P tokens with empty caches, then N - 1 one-token steps,
each feeding the argmax of the last position's logits. Prints (or writes) one
JSON object: the prefill time, per-step latency (median, p90, max), decode
tokens/s, peak RSS and the first row's generated ids (engines that agree on the
logits generate the same ids, so the ids are compared across engines).

  decode_bench.py --engine ort|torch-eager|torch-compile-dynamic|torch-compile-default|shapeshift
                  --model llama-past --model-file DIR/model.onnx [--tiny]
                  [--prompt 1x16] [--steps 256] [--repeats 1] [--seed 3] [--out FILE]

--repeats R generates R times from empty caches: the prefill figure is the
median of the R prefills, the step figures pool every step.

ORT and torch feed each step's present tensors back as its past inputs (the
plain ONNX / transformers form: a copy of every cache per step); shapeshift
runs `shapeshift generate` (its caches bound in place, runtime/kv_cache.h) on
the same file with the same prompt ids (--prompt-ids). Engines run with 2
threads (peer_engines.THREADS). The model file is always the exported ONNX
file: its inputs give the cache shapes (and it is what ORT and shapeshift run;
torch builds the same module from peer_models with the same seed).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

import numpy as np
import onnx

import peer_engines as pe
import peer_inputs as pi
from peer_bench import emit, peak_rss_mb

ENGINES = (*pe.ENGINES, "shapeshift")


def cache_layout(model_file: str) -> tuple[list[str], list[int]]:
    """The past inputs' names and their [kv heads, head dim], from the file."""
    graph = onnx.load(model_file, load_external_data=False).graph
    names, dims = [], None
    for value in graph.input:
        if value.name.startswith("past_key_values."):
            names.append(value.name)
            shape = value.type.tensor_type.shape.dim
            dims = [shape[1].dim_value, shape[3].dim_value]
    if not names or not all(dims):
        raise SystemExit(f"{model_file}: no past_key_values.* inputs with constant heads and head dim")
    return names, dims


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def summary(prefills_s: list[float], steps_s: list[float], batch: int, tokens: list[int]) -> dict:
    total = sum(steps_s)
    return {"prefill_ms": round(percentile(prefills_s, 0.5) * 1e3, 3),
            "prefills_ms": [round(s * 1e3, 3) for s in prefills_s],
            "step_ms": {"median": round(percentile(steps_s, 0.5) * 1e3, 3),
                        "p90": round(percentile(steps_s, 0.9) * 1e3, 3),
                        "max": round(max(steps_s) * 1e3, 3)} if steps_s else None,
            "decode_tokens_per_s": round(batch * len(steps_s) / total, 2) if total > 0 else None,
            "tokens": tokens}


def generate_once(engine, past_names, cache_dims, prompt: np.ndarray, steps: int):
    batch = prompt.shape[0]
    pasts = {name: np.zeros((batch, cache_dims[0], 0, cache_dims[1]), np.float32) for name in past_names}
    ids, length = prompt, 0
    prefill_s, steps_s, tokens = 0.0, [], []
    for step in range(steps):
        feed = {"input_ids": ids, "attention_mask": np.ones((batch, length + ids.shape[1]), np.int64), **pasts}
        start = time.perf_counter()
        out = engine.run(feed)
        elapsed = time.perf_counter() - start
        if step == 0:
            prefill_s = elapsed
        else:
            steps_s.append(elapsed)
        next_ids = out["logits"][:, -1, :].argmax(axis=-1)
        tokens.append(int(next_ids[0]))
        pasts = {name: out[name.replace("past_key_values.", "present.")] for name in past_names}
        length += ids.shape[1]
        ids = next_ids.astype(np.int64).reshape(batch, 1)
    return prefill_s, steps_s, tokens


def run_engine(engine, past_names, cache_dims, prompt: np.ndarray, steps: int, repeats: int) -> dict:
    prefills, all_steps = [], []
    for _ in range(repeats):
        prefill_s, steps_s, tokens = generate_once(engine, past_names, cache_dims, prompt, steps)
        prefills.append(prefill_s)
        all_steps += steps_s
    return summary(prefills, all_steps, prompt.shape[0], tokens)


def run_shapeshift(binary: str, model_file: str, prompt: np.ndarray, steps: int, repeats: int) -> dict:
    batch, length = prompt.shape
    command = [binary, "generate", model_file, "--json", "--no-cache",
               "--prompt", f"{batch}x{length}", "--steps", str(steps), "--repeats", str(repeats),
               "--prompt-ids", ",".join(map(str, prompt.reshape(-1).tolist())),
               "--dim", f"{pi.BATCH}={batch}..{batch}", "--dim", f"past_sequence=0..{length + steps}"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if completed.returncode != 0:
        raise SystemExit(f"shapeshift generate failed (exit {completed.returncode}):\n{completed.stderr[-4000:]}")
    r = json.loads(completed.stdout)
    rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"prefill_ms": round(r["prefill_ms"], 3), "prefills_ms": [round(x, 3) for x in r["prefills_ms"]],
            "step_ms": {k: round(v, 3) for k, v in r["step_ms"].items()} if steps > 1 else None,
            "decode_tokens_per_s": round(r["decode_tokens_per_s"], 2) if steps > 1 else None, "tokens": r["tokens"],
            "compiles": r["compiles"], "fused_attentions": r["fused_attentions"],
            "create_ms": round(r["create_ms"], 1), "cache_growths": r["cache_growths"],
            "child_peak_rss_mb": round(rusage.ru_maxrss / 1024.0, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, choices=ENGINES)
    parser.add_argument("--model", default="llama-past",
                        choices=[n for n, s in pi.ALL_MODELS.items() if s.with_past])
    parser.add_argument("--model-file", required=True, help="the exported ONNX file (with past key/values)")
    parser.add_argument("--tiny", action="store_true", help="the --tiny architecture (torch engines)")
    parser.add_argument("--prompt", default="1x16", help="BxP: batch and prompt length")
    parser.add_argument("--steps", type=int, default=256, help="generated tokens per row (the prefill's included)")
    parser.add_argument("--repeats", type=int, default=1, help="generations from empty caches")
    parser.add_argument("--seed", type=int, default=3, help="the prompt ids' seed")
    parser.add_argument("--out", type=pathlib.Path, help="JSON result file (default: stdout)")
    args = parser.parse_args()
    try:
        batch, length = (int(x) for x in args.prompt.split("x"))
    except ValueError:
        parser.error("--prompt: expected BxP, e.g. 1x16")
    if batch < 1 or length < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--prompt, --steps and --repeats must be positive")
    if not pathlib.Path(args.model_file).is_file():
        parser.error(f"--model-file {args.model_file}: no such file (see export_models.py --llama-1b)")
    spec = pi.ALL_MODELS[args.model]
    size = pi.sizes(spec.family, args.tiny)
    past_names, cache_dims = cache_layout(args.model_file)
    prompt = np.random.default_rng(args.seed).integers(0, size.vocab, size=(batch, length), dtype=np.int64)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    if args.engine == "shapeshift":
        repo = pathlib.Path(__file__).resolve().parents[2]
        binary = os.environ.get("SHAPESHIFT_BIN", str(repo / "build" / "tools" / "shapeshift"))
        result = run_shapeshift(binary, args.model_file, prompt, args.steps, args.repeats)
        versions = {}
    else:
        if args.engine != "ort":
            pe.set_torch_threads()
        engine = pe.make_engine(args.engine, spec, args.tiny, args.model_file)
        engine.prepare()
        result = run_engine(engine, past_names, cache_dims, prompt, args.steps, args.repeats)
        if engine.compile_stats() is not None:
            result["compile_stats"] = engine.compile_stats()
        versions = engine.versions()
    result = {"engine": args.engine, "model": args.model, "tiny": args.tiny, "model_file": args.model_file,
              "batch": batch, "prompt": length, "steps": args.steps, "repeats": args.repeats,
              "prompt_seed": args.seed,
              "threads": pe.THREADS, "versions": versions, "load_average_at_start": load,
              "total_s": round(time.perf_counter() - start, 2),
              "peak_rss_mb": peak_rss_mb(), **result}
    emit(json.dumps(result) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
