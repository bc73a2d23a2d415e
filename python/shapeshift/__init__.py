"""shapeshift: a compiler for neural networks whose input shapes vary between calls.

Porting an ONNX Runtime script is an import change::

    import shapeshift as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    (hidden,) = sess.run(None, {"input_ids": ids, "attention_mask": mask})

See python/README.md for what is supported and how it differs from ONNX Runtime.
"""

from shapeshift.session import (
    GraphOptimizationLevel,
    InferenceSession,
    NodeArg,
    RunOptions,
    SessionOptions,
    fuzz,
    get_available_providers,
)

__all__ = [
    "GraphOptimizationLevel",
    "InferenceSession",
    "NodeArg",
    "RunOptions",
    "SessionOptions",
    "fuzz",
    "get_available_providers",
]
__version__ = "0.1.0"
