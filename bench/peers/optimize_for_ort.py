#!/usr/bin/env python3
"""Writes ONNX Runtime-optimized copies of committed exports, as users who serve
with ORT have them: `onnxruntime.transformers.optimizer` fuses layer norms with
their residual adds (com.microsoft SkipLayerNormalization) and GELUs with their
biases (BiasGelu; GPT-2's tanh GELU as FastGelu). shapeshift expands those
back into default-domain ops at import (graph/onnx/contrib_ops.h).

    cd bench/peers && .venv/bin/python optimize_for_ort.py \\
        ../../tests/data/models/bert-base-torchscript ../../tests/data/models/gpt2-torchscript

For each DIR it writes DIR-ort-optimized/model.onnx and, for each
DIR/test_data_set_N, the same inputs with ONNX Runtime's outputs of the
optimized model (which it checks against DIR's outputs, within 1e-4).
The tiny models' sizes: 4 heads, hidden 64 (peer_inputs.sizes).
"""

from __future__ import annotations

import pathlib
import shutil
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper
from onnxruntime.transformers import optimizer

HEADS, HIDDEN = 4, 64
MODEL_TYPES = {"bert": "bert", "gpt2": "gpt2"}


def read_numbered(directory: pathlib.Path, prefix: str) -> list[np.ndarray]:
    return [numpy_helper.to_array(onnx.load_tensor(str(p)))
            for p in sorted(directory.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]


def optimize(source: pathlib.Path) -> pathlib.Path:
    family = next(f for f in MODEL_TYPES if source.name.startswith(f))
    out = source.parent / f"{source.name}-ort-optimized"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    model = optimizer.optimize_model(str(source / "model.onnx"), model_type=MODEL_TYPES[family],
                                     num_heads=HEADS, hidden_size=HIDDEN, opt_level=1)
    model.save_model_to_file(str(out / "model.onnx"))
    fused = sorted({n.op_type for n in model.model.graph.node if n.domain == "com.microsoft"})
    session = onnxruntime.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for data_set in sorted(source.glob("test_data_set_*")):
        inputs = read_numbered(data_set, "input")
        expected = read_numbered(data_set, "output")
        outputs = session.run(None, dict(zip(names, inputs)))
        diff = max(float(np.abs(a - b).max()) for a, b in zip(outputs, expected))
        if diff > 1e-4:
            raise SystemExit(f"{out}: {data_set.name} differs from {source.name}'s outputs by {diff}")
        target = out / data_set.name
        target.mkdir()
        for k, array in enumerate(inputs):
            onnx.save_tensor(numpy_helper.from_array(array), str(target / f"input_{k}.pb"))
        for k, array in enumerate(outputs):
            onnx.save_tensor(numpy_helper.from_array(array), str(target / f"output_{k}.pb"))
        print(f"{out.name}/{data_set.name}: ORT's outputs, {diff:.3g} from {source.name}'s")
    print(f"{out.name}: com.microsoft {', '.join(fused)}")
    return out


def main() -> int:
    for directory in sys.argv[1:]:
        optimize(pathlib.Path(directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
