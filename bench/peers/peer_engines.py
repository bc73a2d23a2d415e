"""The peer engines behind one interface, for peer_bench.py.

Each engine separates what a server pays once (prepare: session creation or
the torch.compile wrapper; the compile itself happens lazily on the first
call, so "cold" is prepare + first run) from what it pays per request (run).
Compile engines also report their compiles and recompiles, with torch's own
reasons, because "no recompilation storm" is the claim shapeshift is measured
against.

Only numpy and onnxruntime are imported at module level: the ORT process must
not load torch, or its peak RSS would include torch's.
"""

from __future__ import annotations

import logging
import re

import numpy as np

import peer_inputs as pi

THREADS = 2
ENGINES = ("ort", "torch-eager", "torch-compile-dynamic", "torch-compile-default")


class OrtEngine:
    """ONNX Runtime on an exported file: 2 intra-op threads, 1 inter-op, all
    graph optimizations (what a tuned ORT CPU deployment uses)."""

    name = "ort"

    def __init__(self, model_file: str):
        import onnxruntime
        self._ort = onnxruntime
        self.model_file = model_file
        self.session = None

    def prepare(self):
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        options.execution_mode = self._ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = self._ort.InferenceSession(self.model_file, options,
                                                  providers=["CPUExecutionProvider"])
        self._outputs = [o.name for o in self.session.get_outputs()]
        self._inputs = [i.name for i in self.session.get_inputs()]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {name: inputs[name] for name in self._inputs}
        return dict(zip(self._outputs, self.session.run(self._outputs, feed)))

    def compile_stats(self) -> dict | None:
        return None

    def versions(self) -> dict:
        return {"onnxruntime": self._ort.__version__}


class RecompileLog(logging.Handler):
    """Collects torch's recompile reasons and recompile-limit warnings (the
    silent fallback to eager that torch users complain about)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.reasons: list[str] = []
        self.limit_hits: list[str] = []

    def emit(self, record):
        message = record.getMessage()
        if re.search(r"recompile[_ ]limit|cache_size_limit", message):
            self.limit_hits.append(message.strip()[:500])
        elif "Recompiling function" in message or "guard failure" in message:
            self.reasons.append(message.strip()[:500])


class TorchEngine:
    """torch eager, or torch.compile (inductor) with dynamic=True (symbolic
    shapes from the start) or dynamic=None (the default: compile static, then
    recompile with automatic dynamic shapes when a size changes)."""

    def __init__(self, name: str, spec: pi.ModelSpec, tiny: bool):
        import torch
        import peer_models as pm
        self._torch = torch
        self._pm = pm
        self.name = name
        self.spec = spec
        self.module = pm.wrap(spec, pm.build_hf_model(spec, tiny))
        self.function = None
        self._log = None
        if name != "torch-eager":
            from torch._dynamo import utils as dynamo_utils
            self._dynamo_utils = dynamo_utils
            # the metrics deque is bounded; a recompilation storm must not be cut off
            dynamo_utils.set_compilation_metrics_limit(1_000_000)
            dynamo_utils.clear_compilation_metrics()
            torch._logging.set_logs(recompiles=True)
            self._log = RecompileLog()
            # dynamo's recompile reasons and limit warnings both reach this logger
            # ("torch" itself does not get them: torch's logging stops propagation)
            logging.getLogger("torch._dynamo").addHandler(self._log)

    def prepare(self):
        torch = self._torch
        if self.name == "torch-eager":
            self.function = self.module
        elif self.name == "torch-compile-dynamic":
            self.function = torch.compile(self.module, dynamic=True)
        elif self.name == "torch-compile-default":
            self.function = torch.compile(self.module)
        else:
            raise ValueError(f"unknown torch engine {self.name!r}")

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with self._torch.inference_mode():
            result = self.function(*self._pm.to_torch_args(self.spec, inputs))
            return self._pm.flatten_outputs(self.spec, result)

    def compile_stats(self) -> dict | None:
        """Cumulative compile counts so far; callers diff two snapshots."""
        if self._log is None:
            return None
        metrics = self._dynamo_utils.get_compilation_metrics()
        compiles = recompiles = failed = 0
        seconds = 0.0
        for m in metrics:
            compiles += 1
            ids = re.search(r"(\d+)/(\d+)", m.compile_id or "")
            if ids and int(ids.group(2)) > 0:
                recompiles += 1
            if m.fail_type:
                failed += 1
            seconds += m.entire_frame_compile_time_s or 0.0
        return {"compiles": compiles, "recompiles": recompiles, "failed_compiles": failed,
                "compile_seconds": round(seconds, 3),
                "recompile_limit_hits": len(self._log.limit_hits),
                "recompile_reasons": len(self._log.reasons)}

    def recompile_examples(self, limit: int = 10) -> dict:
        if self._log is None:
            return {}
        return {"reasons": self._log.reasons[:limit], "limit_hits": self._log.limit_hits[:limit]}

    def versions(self) -> dict:
        import transformers
        return {"torch": self._torch.__version__, "transformers": transformers.__version__}


def stats_delta(before: dict | None, after: dict | None) -> dict | None:
    if before is None or after is None:
        return None
    return {k: round(after[k] - before[k], 3) if isinstance(after[k], float)
            else after[k] - before[k] for k in after}


def make_engine(name: str, spec: pi.ModelSpec, tiny: bool, model_file: str | None):
    if name == "ort":
        if not model_file:
            raise ValueError("the ort engine needs an exported model file")
        return OrtEngine(model_file)
    if name in ENGINES:
        return TorchEngine(name, spec, tiny)
    raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")


def set_torch_threads():
    """Called before any torch work: the interop pool size can be set only once."""
    import torch
    torch.set_num_threads(THREADS)
    torch.set_num_interop_threads(1)
