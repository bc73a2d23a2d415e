#!/usr/bin/env python3
"""Exports the peer models to ONNX with dynamic batch/sequence axes, with both
torch exporters, and writes a report of what worked.

Why both exporters: they produce different graphs for the same model (the
TorchScript one traces, the dynamo one goes through torch.export and the
onnxscript optimizer), and shapeshift has to import what users actually have.
A failure of one exporter is a result, recorded with its reason, not a crash.

Layout, per model and exporter (the ONNX backend-test layout):
  OUT/<model>-<exporter>/model.onnx
  OUT/<model>-<exporter>/test_data_set_N/input_K.pb, output_K.pb   (--tiny, --llama-1b)
  OUT/export_report.txt, OUT/export_report.json

Models: the five peer models (peer_inputs.MODELS, the default) and the zoo
(peer_inputs.ZOO, `--zoo`: Llama, Qwen2, GPT-J, OPT, GPT-Neo, GPT-NeoX, Phi, Mistral, Gemma,
BLOOM, StarCoder, Falcon, StableLM, MPT, DeBERTa-v2, T5 encoder, BART, ELECTRA, ALBERT, and a
sentence-transformers embedding model (sentence-bert: BERT, masked mean pooling, L2
normalization); tiny only, except `--llama-1b`: Llama with
past at ~1.1B parameters, external data, ONNX Runtime's outputs at 4 shapes).

Each export is checked by running it in ONNX Runtime against torch eager on the
same inputs (max abs difference in the report).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import pathlib
import resource
import sys
import time
import traceback
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime
import torch

import peer_inputs as pi
import peer_models as pm

EXPORTERS = ("torchscript", "dynamo")
# TorchScript: 17 is the oldest opset with LayerNormalization. Dynamo: 18 is the
# opset its op library is written for (asking for less makes it down-convert).
OPSET = {"torchscript": 17, "dynamo": 18}

# (batch, sequence, past_sequence, padded tail tokens in rows after the first)
TINY_TEST_SETS = ((1, 5, 4, 0), (2, 37, 16, 9), (3, 128, 64, 0), (1, 1, 127, 0))
# The zoo's (all committed, so kept small): batch 1 and 2, odd lengths; with
# past, two prefills (a prompt after a short cache, a padded batch) and two
# decode steps (one new token).
ZOO_TEST_SETS = ((1, 5, 0, 0), (2, 37, 0, 9), (1, 1, 0, 0), (2, 13, 0, 0))
ZOO_PAST_TEST_SETS = ((1, 5, 3, 0), (2, 37, 4, 9), (1, 1, 37, 0), (2, 1, 64, 0))
# --llama-1b: two prefills and two decode steps, ONNX Runtime's outputs kept.
LLAMA_1B_TEST_SETS = ((1, 7, 1, 0), (2, 33, 16, 5), (1, 1, 40, 0), (2, 1, 128, 0))
# Example shapes the exporters trace with: not 0 or 1, so no dim is specialized.
EXAMPLE = dict(batch=2, seq=16, past=8)
# Full-size exports are checked on one small input only.
FULL_CHECK = dict(batch=2, seq=24, past=8, pad_tail=5)


def default_cache_dir() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "shapeshift" / "models"


def needs_external_data(module: torch.nn.Module) -> bool:
    """Weights past 1.5 GB are saved outside model.onnx: protobuf refuses a
    message over 2 GB, and the graph itself needs room too."""
    return sum(p.numel() * p.element_size() for p in module.parameters()) > 1.5 * 2 ** 30


def export_torchscript(spec, size, module, args, path):
    in_names = pi.input_names(spec, size)
    out_names = pi.output_names(spec, size)
    dynamic_axes = {n: pi.dim_names(spec, n) for n in in_names}
    dynamic_axes.update({n: pi.output_dim_names(spec, n) for n in out_names})
    torch.onnx.export(module, args, str(path), dynamo=False, opset_version=OPSET["torchscript"],
                      input_names=in_names, output_names=out_names, dynamic_axes=dynamic_axes,
                      do_constant_folding=True)


def export_dynamo(spec, size, module, args, path):
    in_names = pi.input_names(spec, size)
    dynamic_shapes = {
        "input_ids": pi.dim_names(spec, "input_ids"),
        "attention_mask": pi.dim_names(spec, "attention_mask"),
    }
    for name in ("token_type_ids", "decoder_input_ids"):
        if name in in_names:
            dynamic_shapes[name] = pi.dim_names(spec, name)
    if spec.with_past:
        past_dims = pi.dim_names(spec, "past_key_values.0.key")
        dynamic_shapes["past_key_values"] = tuple(
            (past_dims, past_dims) for _ in range(size.layers))
    program = torch.onnx.export(module, args, dynamo=True, opset_version=OPSET["dynamo"],
                                input_names=in_names, output_names=pi.output_names(spec, size),
                                dynamic_shapes=dynamic_shapes)
    # Over protobuf's 2 GB (the 1.1B Llama) the weights go to model.onnx.data.
    program.save(str(path), external_data=needs_external_data(module))


# Relations between dim names that the ONNX file cannot state but the model
# requires, recorded as metadata shapeshift's importer reads
# (`shapeshift.dim.<name>` = `a+b`): the GPT-2 mask covers past and new tokens.
DIM_RELATIONS = {pi.TOTAL_SEQUENCE: f"{pi.PAST_SEQUENCE}+{pi.SEQUENCE}"}


def record_dim_relations(spec, path: pathlib.Path) -> bool:
    """Adds the DIM_RELATIONS a model uses to its metadata (in place); True if it changed."""
    if not spec.with_past:
        return False
    model = onnx.load(str(path), load_external_data=False)
    keys = {p.key for p in model.metadata_props}
    added = False
    for name, expression in DIM_RELATIONS.items():
        key = f"shapeshift.dim.{name}"
        if key not in keys:
            model.metadata_props.add(key=key, value=expression)
            added = True
    if added:
        onnx.save(model, str(path))
    return added


# The committed test copies (tests/data/models/<model>-<exporter>/): the
# tiny model and the data sets small enough to keep in git (batch 3 x 128
# is left out: its GPT-2 logits alone are 1.5 MB).
REPO_TEST_SETS = (0, 1, 3)


def copy_to_repo(tiny_dir: pathlib.Path, repo_dir: pathlib.Path, names: list[str]):
    import shutil
    for name in names:
        src, dst = tiny_dir / name, repo_dir / name
        if not (src / "model.onnx").exists():
            continue
        shutil.rmtree(dst, ignore_errors=True)
        dst.mkdir(parents=True)
        shutil.copy2(src / "model.onnx", dst / "model.onnx")
        model = name.rsplit("-", 1)[0]
        sets = (sorted(int(d.name.rsplit("_", 1)[1]) for d in src.glob("test_data_set_*"))
                if model in pi.ZOO else REPO_TEST_SETS)  # the zoo's sets are all small
        for k in sets:
            shutil.copytree(src / f"test_data_set_{k}", dst / f"test_data_set_{k}")
        print(f"copied {name} to {dst}", file=sys.stderr)


def describe_values(values) -> list[dict]:
    def dims(value):
        return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
    return [{"name": v.name, "dtype": onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type),
             "shape": dims(v)} for v in values]


def check_dim_names(spec, model: onnx.ModelProto) -> list[str]:
    """Input axes whose ONNX name is not the one promised (dim names are the contract)."""
    problems = []
    for value in model.graph.input:
        shape = value.type.tensor_type.shape.dim
        for axis, want in pi.dim_names(spec, value.name).items():
            got = shape[axis].dim_param or shape[axis].dim_value
            if got != want:
                problems.append(f"{value.name}[{axis}] is {got!r}, expected {want!r}")
    return problems


def ort_session(path: pathlib.Path) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run_ort_session(session: onnxruntime.InferenceSession,
                    inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in session.get_outputs()]
    feed = {i.name: inputs[i.name] for i in session.get_inputs()}
    return dict(zip(names, session.run(names, feed)))


def run_ort(path: pathlib.Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return run_ort_session(ort_session(path), inputs)


def first_error_line(error: Exception) -> str:
    """The exception's type and first non-empty line, for the report."""
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {(lines[0] if lines else '')[:300]}"


def run_eager(spec, module, inputs) -> dict[str, np.ndarray]:
    with torch.no_grad():
        return pm.flatten_outputs(spec, module(*pm.to_torch_args(spec, inputs)))


def agrees(expected: dict, actual: dict) -> bool:
    """fp32 agreement: absolute error within 1e-4 of the output's magnitude (kernels
    sum in different orders; anything larger is a wrong graph, not rounding)."""
    scale = max(float(np.max(np.abs(v))) if v.size else 0.0 for v in expected.values())
    return max_abs_diff(expected, actual) <= 1e-4 * max(1.0, scale)


def max_abs_diff(expected: dict, actual: dict) -> float:
    return max(float(np.max(np.abs(expected[n] - actual[n]))) if expected[n].size else 0.0
               for n in expected)


def test_cases(spec, tiny: bool, llama_1b: bool = False):
    """The shapes each export is checked at (and, tiny or --llama-1b, the data
    sets written): the zoo's and the peer models' own sets, or one small input."""
    if llama_1b:
        sets = LLAMA_1B_TEST_SETS
    elif tiny and spec.name in pi.ZOO:
        sets = ZOO_PAST_TEST_SETS if spec.with_past else ZOO_TEST_SETS
    elif tiny:
        sets = TINY_TEST_SETS
    else:
        sets = [tuple(FULL_CHECK[k] for k in ("batch", "seq", "past", "pad_tail"))]
    return [dict(batch=b, seq=s, past=p if spec.with_past else 0, pad_tail=t) for b, s, p, t in sets]


def write_test_set(directory: pathlib.Path, model: onnx.ModelProto, inputs, outputs):
    directory.mkdir(parents=True, exist_ok=True)
    for k, value in enumerate(model.graph.input):
        tensor = onnx.numpy_helper.from_array(inputs[value.name], value.name)
        (directory / f"input_{k}.pb").write_bytes(tensor.SerializeToString())
    for k, value in enumerate(model.graph.output):
        tensor = onnx.numpy_helper.from_array(outputs[value.name], value.name)
        (directory / f"output_{k}.pb").write_bytes(tensor.SerializeToString())


def export_one(spec, exporter: str, tiny: bool, out: pathlib.Path, expected_from: str = "torch",
               llama_1b: bool = False) -> dict:
    """Exports one model with one exporter, checks it in ORT against torch eager
    and, tiny or llama_1b, writes the test data sets with `expected_from`'s
    outputs ("torch": eager, "ort": ONNX Runtime)."""
    size = pi.sizes(spec.family, tiny)
    build_start = time.perf_counter()
    module = pm.wrap(spec, pm.build_hf_model(spec, tiny))
    build_seconds = time.perf_counter() - build_start
    example = pi.make_inputs(spec, size, EXAMPLE["batch"], EXAMPLE["seq"],
                             EXAMPLE["past"] if spec.with_past else 0, seed=99)
    args = pm.to_torch_args(spec, example)
    directory = out / f"{spec.name}-{exporter}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.onnx"
    record = {"model": spec.name, "exporter": exporter, "tiny": tiny, "path": str(path),
              "opset": OPSET[exporter], "parameters": sum(p.numel() for p in module.parameters()),
              "build_seconds": round(build_seconds, 2)}
    start = time.perf_counter()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (export_torchscript if exporter == "torchscript" else export_dynamo)(
                spec, size, module, args, path)
    except Exception as error:  # an exporter failure is a result to report
        record.update(status="failed", seconds=round(time.perf_counter() - start, 2),
                      error=first_error_line(error), traceback=traceback.format_exc(limit=-8))
        path.unlink(missing_ok=True)
        return record
    record["seconds"] = round(time.perf_counter() - start, 2)
    record_dim_relations(spec, path)
    model = onnx.load(str(path), load_external_data=False)
    data_bytes = sum(f.stat().st_size for f in directory.iterdir()
                     if f.is_file() and f.name != "model.onnx")
    record.update(bytes=path.stat().st_size + data_bytes, inputs=describe_values(model.graph.input),
                  outputs=describe_values(model.graph.output),
                  ops=dict(sorted(collections.Counter(n.op_type for n in model.graph.node).items())))
    problems = check_dim_names(spec, model)
    # torch eager first, then the module is freed before ONNX Runtime loads the
    # file: at ~1.1B parameters each holds 4.4 GB (ORT more, with packed weights).
    cases = test_cases(spec, tiny, llama_1b)
    inputs_of = [pi.make_inputs(spec, size, seed=k, **case) for k, case in enumerate(cases)]
    eager_of = [run_eager(spec, module, inputs) for inputs in inputs_of]
    del module, args
    gc.collect()
    checks = []
    session = None
    for k, (case, inputs, expected) in enumerate(zip(cases, inputs_of, eager_of)):
        try:
            if session is None:
                ort_start = time.perf_counter()
                session = ort_session(path)
                record["ort_session_seconds"] = round(time.perf_counter() - ort_start, 2)
            actual = run_ort_session(session, inputs)
        except Exception as error:
            problems.append(f"ORT failed on {case}: {first_error_line(error)}")
            continue
        checks.append(dict(case, max_abs_diff=max_abs_diff(expected, actual)))
        if not agrees(expected, actual):
            problems.append(f"ORT disagrees with torch eager on {case}: max abs diff "
                            f"{checks[-1]['max_abs_diff']:.3g}")
        if tiny or llama_1b:
            write_test_set(directory / f"test_data_set_{k}", model, inputs,
                           actual if expected_from == "ort" else expected)
    record.update(status="ok" if not problems else "problems", checks=checks, problems=problems,
                  process_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    return record


def write_report(out: pathlib.Path, records: list[dict]):
    versions = {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__,
                "onnx": onnx.__version__, "transformers": pm.transformers.__version__}
    (out / "export_report.json").write_text(json.dumps(
        {"versions": versions, "exports": records}, indent=1) + "\n")
    lines = ["shapeshift peer model exports", "versions: " + ", ".join(
        f"{k} {v}" for k, v in versions.items()), ""]
    for r in records:
        head = f"{r['model']}-{r['exporter']} (opset {r['opset']}): {r['status']} in {r['seconds']} s"
        if r["status"] == "failed":
            lines += [head, f"  error: {r['error']}"]
            continue
        params = f", {r['parameters'] / 1e6:.2f}M parameters" if "parameters" in r else ""
        rss = (f", process peak RSS so far {r['process_peak_rss_mb']} MB"
               if "process_peak_rss_mb" in r else "")
        lines.append(head + f", {r['bytes'] / 1e6:.2f} MB{params}{rss}")
        for io in ("inputs", "outputs"):
            lines.append(f"  {io}: " + "; ".join(
                f"{v['name']} {v['dtype']} {v['shape']}" for v in r[io]))
        for c in r["checks"]:
            lines.append(f"  ORT vs torch eager at batch={c['batch']} seq={c['seq']} "
                         f"past={c['past']} pad_tail={c['pad_tail']}: max abs diff "
                         f"{c['max_abs_diff']:.3g}")
        lines += [f"  problem: {p}" for p in r["problems"]]
    (out / "export_report.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true",
                        help="2 layers, hidden 64, 4 heads, intermediate 256, vocab 1000; "
                             "writes ONNX test data sets")
    parser.add_argument("--out", type=pathlib.Path,
                        help="output directory (default: ${XDG_CACHE_HOME:-~/.cache}/shapeshift/models, "
                             "and its tiny/ with --tiny)")
    parser.add_argument("--models", help="comma-separated subset of " + ",".join(pi.ALL_MODELS)
                        + " (default: the five peer models, " + ",".join(pi.MODELS) + ")")
    parser.add_argument("--zoo", action="store_true",
                        help="the zoo (" + ",".join(pi.ZOO) + ") instead of the peer models; "
                             "tiny only")
    parser.add_argument("--llama-1b", action="store_true",
                        help="Llama with past at ~1.1B parameters (hidden 2048, 22 layers, 32 query / "
                             "4 key-value heads, vocab 32000), weights as external data, with ONNX "
                             "Runtime's outputs at 4 shapes (2 prefills, 2 decode steps) as test data "
                             "sets; default exporter dynamo")
    parser.add_argument("--expected-from", choices=("torch", "ort"), default="torch",
                        help="whose outputs the test data sets hold: torch eager (default) or "
                             "ONNX Runtime (the zoo's committed sets; always ort with --llama-1b)")
    parser.add_argument("--exporters", help="default: " + ",".join(EXPORTERS)
                        + " (dynamo only with --llama-1b)")
    parser.add_argument("--skip-existing", action="store_true",
                        help="keep a model.onnx that is already there (its report entry is "
                             "taken from the previous export_report.json)")
    parser.add_argument("--repo-test-data", type=pathlib.Path, metavar="DIR",
                        help="with --tiny: also copy each model and test sets "
                             f"{','.join(map(str, REPO_TEST_SETS))} to DIR/<model>-<exporter>/ "
                             "(tests/data/models in the repository)")
    parser.add_argument("--record-relations", action="store_true",
                        help="only add the dim relations (shapeshift.dim.* metadata) to models "
                             "already in OUT, without exporting")
    args = parser.parse_args()
    if args.llama_1b:
        if args.tiny or args.zoo or args.models:
            parser.error("--llama-1b is one full-size model: drop --tiny, --zoo and --models")
        args.models, args.expected_from = "llama-past", "ort"
        args.exporters = args.exporters or "dynamo"
    elif args.zoo:
        if args.models:
            parser.error("--zoo names the models: drop --models (or name zoo models there)")
        if not args.tiny:
            parser.error("the zoo is exported --tiny (only Llama has a full size: --llama-1b)")
        args.models = ",".join(pi.ZOO)
    args.models = args.models or ",".join(pi.MODELS)
    args.exporters = args.exporters or ",".join(EXPORTERS)
    out = args.out or (default_cache_dir() / "tiny" if args.tiny else default_cache_dir())
    if args.record_relations:
        for name in args.models.split(","):
            for exporter in args.exporters.split(","):
                path = out / f"{name}-{exporter}" / "model.onnx"
                if path.exists() and record_dim_relations(pi.ALL_MODELS[name], path):
                    print(f"recorded dim relations in {path}", file=sys.stderr)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)

    # The report covers every export in OUT, so a run of a subset keeps the others' entries.
    previous = {}
    if (out / "export_report.json").exists():
        for r in json.loads((out / "export_report.json").read_text())["exports"]:
            previous[(r["model"], r["exporter"])] = r
    records = []
    done = set()
    for name in args.models.split(","):
        if name not in pi.ALL_MODELS:
            parser.error(f"unknown model {name!r}; known: {', '.join(pi.ALL_MODELS)}")
        for exporter in args.exporters.split(","):
            if exporter not in EXPORTERS:
                parser.error(f"unknown exporter {exporter!r}; known: {', '.join(EXPORTERS)}")
            done.add((name, exporter))
            old = previous.get((name, exporter))
            if (args.skip_existing and old and old["status"] != "failed"
                    and pathlib.Path(old["path"]).exists()):
                records.append(old)
                continue
            print(f"exporting {name} with {exporter} ...", file=sys.stderr, flush=True)
            records.append(export_one(pi.ALL_MODELS[name], exporter, args.tiny, out,
                                      args.expected_from, args.llama_1b))
    failed_now = any(r["status"] == "failed" for r in records)
    records += [r for key, r in previous.items()
                if key not in done and pathlib.Path(r["path"]).exists()]
    write_report(out, records)
    if args.repo_test_data and args.tiny:
        copy_to_repo(out, args.repo_test_data, [f"{r['model']}-{r['exporter']}" for r in records
                                                if r["status"] != "failed"])
    return 1 if failed_now else 0


if __name__ == "__main__":
    sys.exit(main())
