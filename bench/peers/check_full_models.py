#!/usr/bin/env python3
"""Checks shapeshift on the full-size exports against ONNX Runtime.

Why a script: the full models are hundreds of MB and live in the cache, never
in git. For each one this writes ONNX Runtime's outputs at a few shapes as
ONNX test data sets (OUT/<model>-<exporter>/test_data_set_N/, model.onnx a
symlink to the cached file), then runs the C++ test that compiles each model
once with shapeshift's Session and compares every output (max abs diff
<= 1e-3): `runtime_test --gtest_filter=OnnxRuntimeReference/*` with
SHAPESHIFT_FULL_MODELS_DIR=OUT. Inputs come from peer_inputs.make_inputs, the
same ones the benchmark engines see.

  .venv/bin/python check_full_models.py --runtime-test ../../build/tests/runtime/runtime_test
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

import export_models as em
import peer_inputs as pi

# (batch, sequence, past_sequence, padded tail tokens in rows after the first)
SHAPES = ((1, 1, 7, 0), (1, 7, 16, 0), (2, 16, 64, 5), (1, 128, 127, 0), (8, 64, 32, 9))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=pathlib.Path, default=em.default_cache_dir())
    parser.add_argument("--out", type=pathlib.Path, default=em.default_cache_dir().parent / "ort-reference")
    parser.add_argument("--models", default=",".join(pi.MODELS))
    parser.add_argument("--exporters", default=",".join(em.EXPORTERS))
    parser.add_argument("--runtime-test", type=pathlib.Path,
                        help="the runtime_test binary to run afterwards (omit to only write data)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        spec = pi.MODELS[name]
        size = pi.sizes(spec.family, tiny=False)
        for exporter in args.exporters.split(","):
            source = args.models_dir / f"{name}-{exporter}" / "model.onnx"
            if not source.exists():
                print(f"missing {source}; run export_models.py first", file=sys.stderr)
                return 1
            em.record_dim_relations(spec, source)
            directory = args.out / f"{name}-{exporter}"
            directory.mkdir(parents=True, exist_ok=True)
            link = directory / "model.onnx"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(source.resolve())
            model = em.onnx.load(str(source), load_external_data=False)
            for k, (batch, seq, past, pad) in enumerate(SHAPES):
                inputs = pi.make_inputs(spec, size, batch, seq, past if spec.with_past else 0, pad, seed=k)
                outputs = em.run_ort(source, inputs)
                em.write_test_set(directory / f"test_data_set_{k}", model, inputs, outputs)
            print(f"wrote ORT references for {name}-{exporter}", file=sys.stderr, flush=True)
    if args.runtime_test is None:
        return 0
    env = dict(os.environ, SHAPESHIFT_FULL_MODELS_DIR=str(args.out))
    return subprocess.call([str(args.runtime_test), "--gtest_filter=OnnxRuntimeReference/*"], env=env)


if __name__ == "__main__":
    sys.exit(main())
