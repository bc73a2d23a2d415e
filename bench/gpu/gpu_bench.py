#!/usr/bin/env python3
"""shapeshift --device cuda against ONNX Runtime's CUDA execution provider and
torch.compile on the same GPU (scripts/gpu-check.sh runs this).

Models (random weights from configs, never downloaded): BERT-base (batch 1 and
8 x sequence 128 and 512), GPT-2 124M decode steps with a KV cache (batch 1
and 8, 128 cached tokens), and the zoo's Llama (TinyLlama's shape, ~1.1B:
RMSNorm, RoPE, SwiGLU, grouped KV heads; batch 1 x sequence 128 and 512).
All three are bench/peers' model definitions, exported by
bench/peers/export_models.py (`scripts/gpu-check.sh --setup-peers` exports
them ahead of the timed run; the Llama export alone takes minutes).

Every engine gets the same host inputs (bench/peers/peer_inputs.make_inputs)
and returns host outputs, so every latency includes the host<->device copies
at the edges. shapeshift runs through its CLI (`run MODEL --device cuda
--inputs-from DIR --save-outputs DIR --json`), so its outputs are compared
with ORT's on exactly those inputs (max abs diff; the target is 1e-3).

A stage that cannot run (a package missing, an exporter or engine failing, the
time budget spent) is recorded with its reason; no figure is guessed.
Writes one JSON file (--out) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "peers"))

import peer_inputs as pi  # noqa: E402  (numpy only)

BERT_SHAPES = [(1, 128), (1, 512), (8, 128), (8, 512)]
DECODE_SHAPES = [(1, 128), (8, 128)]  # (batch, cached tokens); one new token
LLAMA_SHAPES = [(1, 128), (1, 512)]


def elapsed_ok(start: float, budget: float, reserve: float = 20.0) -> bool:
    return time.monotonic() - start < budget - reserve


def median_ms(fn, repeats: int, sync) -> float:
    fn()  # warm-up (and, for torch.compile, the compile)
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def write_inputs(directory: pathlib.Path, names: list[str], inputs: dict[str, np.ndarray]):
    import onnx.numpy_helper
    directory.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(names):
        tensor = onnx.numpy_helper.from_array(inputs[name], name)
        (directory / f"input_{k}.pb").write_bytes(tensor.SerializeToString())


def read_outputs(directory: pathlib.Path) -> list[np.ndarray]:
    import onnx
    import onnx.numpy_helper
    outputs = []
    for path in sorted(directory.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1])):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        outputs.append(onnx.numpy_helper.to_array(tensor))
    return outputs


class OrtCuda:
    name = "ort-cuda"

    def __init__(self, model_file: str):
        import onnxruntime as ort
        if hasattr(ort, "preload_dlls"):
            ort.preload_dlls()  # CUDA/cuDNN from the nvidia-* wheels torch brings
        self.session = ort.InferenceSession(model_file, providers=["CUDAExecutionProvider"])
        if self.session.get_providers()[0] != "CUDAExecutionProvider":
            raise RuntimeError(f"ORT fell back to {self.session.get_providers()}: no CUDA EP on this machine")
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.version = ort.__version__

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, {n: feed[n] for n in self.inputs})


class TorchCompile:
    name = "torch-compile"

    def __init__(self, module, to_args):
        import torch
        self.torch = torch
        self.module = torch.compile(module.cuda().eval(), dynamic=True)
        self.to_args = to_args
        self.version = torch.__version__

    def run(self, feed: dict[str, np.ndarray]):
        torch = self.torch
        with torch.no_grad():
            args = self.to_args(feed)
            out = self.module(*args)
            flat = out if isinstance(out, torch.Tensor) else out[0]
            return [flat.cpu().numpy()]


def cuda_args(args):
    import torch
    if isinstance(args, torch.Tensor):
        return args.cuda()
    return type(args)(cuda_args(a) for a in args)


def shapeshift_run(binary: str, model: str, dims: list[str], inputs_dir: pathlib.Path, out_dir: pathlib.Path,
                   repeats: int) -> dict:
    command = [binary, "run", model, "--device", "cuda", "--inputs-from", str(inputs_dir), "--save-outputs",
               str(out_dir), "--repeats", str(repeats), "--no-cache", "--json"]
    for d in dims:
        command += ["--dim", d]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout)


def bench_model(name, model_file, module_and_args, shapes, make_feed, names, dims, args, results, start):
    """One model over its shapes: ORT CUDA EP, torch.compile, shapeshift."""
    engines = {}
    for engine_name, make in (("ort-cuda", lambda: OrtCuda(str(model_file))),
                              ("torch-compile", lambda: TorchCompile(*module_and_args()))):
        try:
            engines[engine_name] = make()
        except Exception as error:  # recorded, not fatal
            results["errors"].append({"model": name, "engine": engine_name, "error": f"{type(error).__name__}: {error}"})
    sync = lambda: None  # noqa: E731
    try:
        import torch
        if torch.cuda.is_available():
            sync = torch.cuda.synchronize
    except ImportError:
        pass
    for shape in shapes:
        if not elapsed_ok(start, args.budget_s):
            results["errors"].append({"model": name, "shape": shape, "error": "skipped: time budget spent"})
            continue
        feed = make_feed(*shape)
        row = {"model": name, "shape": list(shape)}
        reference = None
        for engine_name, engine in engines.items():
            try:
                row[engine_name + "_ms"] = round(median_ms(lambda: engine.run(feed), args.repeats, sync), 3)
                if engine_name == "ort-cuda":
                    reference = engine.run(feed)
            except Exception as error:
                row[engine_name + "_error"] = f"{type(error).__name__}: {str(error)[:300]}"
        case_dir = pathlib.Path(args.work) / name / "x".join(map(str, shape))
        try:
            write_inputs(case_dir / "inputs", names, feed)
            report = shapeshift_run(args.shapeshift, str(model_file), dims, case_dir / "inputs",
                                    case_dir / "outputs", args.repeats)
            row["shapeshift_ms"] = report["median_ms"]
            row["shapeshift_first_ms"] = report["first_run_ms"]
            row["shapeshift_compiles"] = report["compiles"]
            row["shapeshift_cuda"] = {k: v for k, v in report.get("cuda", {}).items() if k != "report"}
            if reference is not None:
                got = read_outputs(case_dir / "outputs")
                row["max_abs_diff_vs_ort"] = float(max(np.max(np.abs(g.astype(np.float64) - r))
                                                       for g, r in zip(got, reference)))
        except Exception as error:
            row["shapeshift_error"] = f"{type(error).__name__}: {str(error)[:600]}"
        for peer in ("ort-cuda", "torch-compile"):
            if peer + "_ms" in row and "shapeshift_ms" in row:
                row[f"ratio_vs_{peer}"] = round(row["shapeshift_ms"] / row[peer + "_ms"], 3)
        results["rows"].append(row)
        print(json.dumps(row), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapeshift", required=True, help="the shapeshift CLI binary")
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--work", required=True, help="inputs and outputs go here")
    parser.add_argument("--models-dir", default="", help="exports (default: export_models.py's cache)")
    parser.add_argument("--models", default="bert-base,gpt2-decode,llama")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget-s", type=float, default=300)
    args = parser.parse_args()
    start = time.monotonic()
    results = {"rows": [], "errors": []}
    try:
        import torch
        import transformers  # noqa: F401
        results["torch"] = torch.__version__
        results["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "torch sees no GPU"
        import peer_models as pm
        import export_models as em
    except Exception as error:
        results["errors"].append({"error": f"peers unavailable ({type(error).__name__}: {error}); "
                                  "install bench/gpu/requirements.txt (PyPI) to compare"})
        args.out.write_text(json.dumps(results, indent=1))
        return 0
    work = pathlib.Path(args.work)
    models_dir = pathlib.Path(args.models_dir) if args.models_dir else em.default_cache_dir()
    # name -> (peer spec, exporter, shapes, dims declared to shapeshift, decode step?). The
    # Llama is export_models.py --llama-1b's (with past, dynamo, external data): prefills
    # run it with an empty cache.
    plans = {
        "bert-base": ("bert-base", "torchscript", BERT_SHAPES, ["batch=1..8", "sequence=1..512"], False),
        "gpt2-decode": ("gpt2-past", "torchscript", DECODE_SHAPES, ["batch=1..8", "past_sequence=0..511"], True),
        "llama": ("llama-past", "dynamo", LLAMA_SHAPES, ["batch=1..8", "sequence=1..512"], False),
    }
    for name in args.models.split(","):
        if not elapsed_ok(start, args.budget_s):
            results["errors"].append({"model": name, "error": "skipped: time budget spent"})
            continue
        try:
            spec_name, exporter, shapes, dims, decode = plans[name]
            spec = pi.MODELS[spec_name]
            model_file = models_dir / f"{spec.name}-{exporter}" / "model.onnx"
            if not model_file.exists():  # gpu-check.sh --setup-peers exports ahead of the budget
                record = em.export_one(spec, exporter, False, models_dir, llama_1b=spec.family == "llama")
                if record.get("status") == "failed":
                    raise RuntimeError(f"export failed: {record.get('error')}")
            size = pi.sizes(spec.family, False)
            names = pi.input_names(spec, size)

            def module_and_args(spec=spec):
                module = pm.wrap(spec, pm.build_hf_model(spec, False))
                return module, lambda feed: cuda_args(pm.to_torch_args(spec, feed))

            if decode:  # one new token after `past` cached ones
                feed = lambda b, p, spec=spec, size=size: pi.make_inputs(spec, size, b, 1, p, seed=p)  # noqa: E731
            else:
                feed = lambda b, s, spec=spec, size=size: pi.make_inputs(spec, size, b, s, 0, seed=s)  # noqa: E731
            bench_model(name, model_file, module_and_args, shapes, feed, names, dims, args, results, start)
        except Exception as error:
            results["errors"].append({"model": name, "error": f"{type(error).__name__}: {error}",
                                      "traceback": traceback.format_exc(limit=-4)})
    results["seconds"] = round(time.monotonic() - start, 1)
    args.out.write_text(json.dumps(results, indent=1))
    print("| model | shape | shapeshift ms | ORT CUDA ms | torch.compile ms | vs ORT | vs torch | max diff vs ORT |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results["rows"]:
        print(f"| {r['model']} | {'x'.join(map(str, r['shape']))} | {r.get('shapeshift_ms', r.get('shapeshift_error', '-'))}"
              f" | {r.get('ort-cuda_ms', '-')} | {r.get('torch-compile_ms', '-')} | {r.get('ratio_vs_ort-cuda', '-')}"
              f" | {r.get('ratio_vs_torch-compile', '-')} | {r.get('max_abs_diff_vs_ort', '-')} |")
    for e in results["errors"]:
        print(f"not measured: {json.dumps(e)[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
