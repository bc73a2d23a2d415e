"""The ONNX-Runtime-compatible session over shapeshift._core.Model.

Only what ORT's Python API means is mapped here (names, output selection,
providers, options, nested lists as inputs); every check of a request's
tensors, every message and every report text comes from the C++ library, but
for a list's conversion to an array (`_from_list`).
"""

from __future__ import annotations

import enum
import json
import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from shapeshift import _core

_CPU = "CPUExecutionProvider"
_CUDA = "CUDAExecutionProvider"
_DEVICES = {_CPU: "cpu", _CUDA: "cuda"}


# The element types a Python list converts to, and which kinds of numpy array
# (np.asarray of the list) convert to each without changing a value's meaning:
# an integer input takes integers, a float input numbers (rounded to its
# precision, as any float conversion), a bool input bools.
_LIST_TYPES = {
    "tensor(int64)": (np.int64, "iu"),
    "tensor(int32)": (np.int32, "iu"),
    "tensor(float)": (np.float32, "iuf"),
    "tensor(double)": (np.float64, "iuf"),
    "tensor(float16)": (np.float16, "iuf"),
    "tensor(bool)": (np.bool_, "b"),
}


def _from_list(arg: "NodeArg", value: list | tuple) -> Any:
    """A (nested) list for `arg` as an array of its element type, as ONNX Runtime
    converts lists; unlike ORT, a value the conversion would change (1.7 for an
    integer input, 2**40 for an int32 one) is an error naming the input, never a
    silently different request. Other element types: left to the C++ checks."""
    if arg.type not in _LIST_TYPES:
        return value
    dtype, kinds = _LIST_TYPES[arg.type]
    try:
        given = np.asarray(value)
    except ValueError as e:  # ragged nesting
        raise ValueError(f"run: input {arg.name!r}: the list is not a rectangular array ({e})") from None
    if given.dtype == object:
        raise ValueError(
            f"run: input {arg.name!r}: the list is not a rectangular array of numbers that fit 64 bits"
        )
    if given.size and given.dtype.kind not in kinds:
        raise TypeError(
            f"run: input {arg.name!r} is {arg.type}: a list of {given.dtype} values would change in conversion"
        )
    converted = given.astype(dtype)
    if given.size and given.dtype.kind in "iu" and not np.array_equal(converted, given):
        raise ValueError(f"run: input {arg.name!r}: a list value does not fit {arg.type}")
    return converted


class GraphOptimizationLevel(enum.IntEnum):
    """ORT's levels. Accepted for compatibility: shapeshift always runs its full pipeline."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class SessionOptions:
    """The ORT session options that mean something here.

    intra_op_num_threads: OpenMP threads per run, and the count the compile's oneDNN
        primitives are created with (they keep it); 0: OpenMP's default.
    graph_optimization_level, inter_op_num_threads, log_severity_level,
    enable_profiling: accepted and kept, with no effect.
    """

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.log_severity_level = 2
        self.enable_profiling = False


class RunOptions:
    """Accepted for compatibility (ORT's log and terminate flags); no effect."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.run_tag = ""
        self.terminate = False


class NodeArg:
    """An input or output as ORT describes it: name, shape (ints, dim names as strings), type."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name: str, type: str, shape: list) -> None:
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def get_available_providers() -> list[str]:
    """The providers InferenceSession accepts (CUDA still needs a GPU and a CUDA build)."""
    return [_CUDA, _CPU]


def _device(providers: Sequence[Any] | None) -> str:
    if not providers:
        return "cpu"
    names = []
    for p in providers:
        name = p[0] if isinstance(p, (tuple, list)) else p
        if name not in _DEVICES:
            raise ValueError(
                f"provider {name!r} is not available in shapeshift (available: {', '.join(get_available_providers())})"
            )
        names.append(name)
    # The first listed provider decides. A CUDA session without a usable GPU
    # is an error from the compiler, never a silent CPU run.
    return _DEVICES[names[0]]


def _ranges(dims: Mapping[str, Any] | None, what: str) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for name, value in (dims or {}).items():
        if isinstance(value, int):
            lo = hi = value
        elif isinstance(value, str) and ".." in value:
            lo_text, hi_text = value.split("..", 1)
            try:
                lo, hi = int(lo_text), int(hi_text)
            except ValueError:
                raise ValueError(f"{what}: {name}={value!r} is not a range like '1..512'") from None
        else:
            try:
                lo, hi = value
                lo, hi = int(lo), int(hi)
            except (TypeError, ValueError):
                raise ValueError(f"{what}: {name}={value!r} is not a range: give (lo, hi), 'lo..hi' or an int") from None
        out[str(name)] = (lo, hi)
    return out


class InferenceSession:
    """onnxruntime.InferenceSession's API over a shapeshift compile.

    path_or_bytes: an .onnx path (str or os.PathLike) or the model's bytes.
    dims: declared ranges of the model's dynamic dims, {name: (lo, hi)}
      (default: the model's metadata, else 1..65536, limited by what the model allows).
    policy: "auto" (default), "polymorphic", "bucketed" or "static".
    cache_dir: persistent compile cache directory (default: none). It also keeps this
      machine's measured GEMM choices: a model file's first session here measures its
      GEMM classes (at most tune_budget_s seconds, default 10, 0: never; once; `notes`
      says so) and later sessions read them.
    recompile_limit: compiles requests may trigger (the bucketed/static tiers).
    weights_dir: keep the model's weights in an unlinked file under this directory
      (on a disk, not tmpfs), resident only while read and given back once packed:
      about one copy of the weights in memory instead of two. Default: `weights`
      under cache_dir, or under the default cache directory ($XDG_CACHE_HOME or
      ~/.cache, /shapeshift) without one, as the CLI. A directory that cannot take
      them keeps them in memory, with a note.
    weights_in_memory: keep the weights in memory instead (the plain weights stay
      beside their packed copies); exclusive with weights_dir.
    """

    def __init__(
        self,
        path_or_bytes: str | bytes | os.PathLike,
        sess_options: SessionOptions | None = None,
        providers: Sequence[Any] | None = None,
        provider_options: Sequence[Mapping[str, Any]] | None = None,
        *,
        dims: Mapping[str, Any] | None = None,
        policy: str = "auto",
        cache_dir: str | os.PathLike | None = None,
        recompile_limit: int = 64,
        weights_dir: str | os.PathLike | None = None,
        weights_in_memory: bool = False,
        tune_budget_s: float = 10.0,
    ) -> None:
        self._options = sess_options or SessionOptions()
        device = _device(providers)
        self._providers = [_CUDA if device == "cuda" else _CPU]
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            source: str | bytes = bytes(path_or_bytes)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            source = os.fspath(path_or_bytes)
        else:
            raise TypeError(f"InferenceSession: expected a path or bytes, got {type(path_or_bytes).__name__}")
        if weights_dir is not None and weights_in_memory:
            raise ValueError("InferenceSession: weights_dir and weights_in_memory=True are exclusive")
        if weights_dir is not None and not os.fspath(weights_dir):
            raise ValueError("InferenceSession: weights_dir is empty: name a directory, or pass weights_in_memory=True")
        tune_budget_s = float(tune_budget_s)
        if not 0 <= tune_budget_s <= 3600:
            raise ValueError(f"InferenceSession: tune_budget_s = {tune_budget_s}: expected seconds in [0, 3600]")
        threads = int(self._options.intra_op_num_threads or 0)
        if threads < 0:
            raise ValueError(f"SessionOptions.intra_op_num_threads = {threads}: expected >= 0")
        self._model = _core.Model.load(
            source,
            _ranges(dims, "dims"),
            policy,
            os.fspath(cache_dir) if cache_dir is not None else "",
            int(recompile_limit),
            device,
            threads,
            os.fspath(weights_dir) if weights_dir is not None else "",
            bool(weights_in_memory),
            tune_budget_s,
        )
        self._inputs = [NodeArg(n, t, s) for n, t, s in self._model.inputs()]
        self._outputs = [NodeArg(n, t, s) for n, t, s in self._model.outputs()]
        self._input_names = [a.name for a in self._inputs]
        self._input_set = frozenset(self._input_names)
        self._output_index = {a.name: i for i, a in enumerate(self._outputs)}

    # ORT's introspection.
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_session_options(self) -> SessionOptions:
        return self._options

    def run(
        self,
        output_names: Iterable[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None = None,
    ) -> list:
        """The outputs named by output_names (all when None or empty), as numpy arrays."""
        try:
            arrays = [input_feed[name] for name in self._input_names]
        except KeyError:
            self._raise_bad_feed(input_feed)
        except TypeError:
            raise TypeError(f"run: input_feed must map input names to arrays, got {type(input_feed).__name__}") from None
        if len(input_feed) != len(arrays):
            self._raise_bad_feed(input_feed)
        arrays = [
            _from_list(arg, a) if isinstance(a, (list, tuple)) else a for arg, a in zip(self._inputs, arrays)
        ]
        outputs = self._model.run(arrays)
        if not output_names:
            return outputs
        try:
            return [outputs[self._output_index[name]] for name in output_names]
        except KeyError:
            unknown = [n for n in output_names if n not in self._output_index]
            raise ValueError(
                f"run: {self._model.name} has no output {unknown[0]!r} (its outputs: {', '.join(self._output_index)})"
            ) from None

    def _raise_bad_feed(self, input_feed: Mapping[str, Any]) -> None:
        given = list(input_feed)
        missing = [n for n in self._input_names if n not in input_feed]
        if missing:
            raise ValueError(f"run: required inputs {missing} are missing from input feed {given}")
        unknown = [n for n in given if n not in self._input_set]
        raise ValueError(
            f"run: {self._model.name} has no input {unknown[0]!r} (its inputs: {', '.join(self._input_names)})"
        )

    # shapeshift's introspection, as data.
    def recompile_events(self) -> list[dict]:
        """Every compile so far, as the JSON-lines recompile log's objects."""
        return [json.loads(e) for e in self._model.recompile_events_json()]

    def explain(self, summary: bool = False) -> str:
        """What `shapeshift explain` prints for this session's recompile events."""
        return self._model.explain(summary)

    def metrics(self, format: str = "dict") -> dict | str:
        """The SpecializationMetrics: a dict, or format="text" / "prometheus" text."""
        if format == "dict":
            return json.loads(self._model.metrics("json"))
        return self._model.metrics(format)

    def prove(self, dims: Mapping[str, Any] | None = None) -> dict:
        """Z3's verdict on whether the compiled entries serve every shape of the
        domain (dims narrows the declared ranges): {"covered": bool, "witness": {...} | None, ...}."""
        return json.loads(self._model.prove(_ranges(dims, "prove")))

    def wait_for_tier_ups(self) -> None:
        """Blocks until the auto policy's background compiles are done."""
        self._model.wait_for_tier_ups()

    def weights(self) -> dict:
        """Where the weights live: {"dir": "" (in memory) or the weights_dir,
        "spilled_constants", "spilled_bytes", "released_bytes" (given back once packed)}."""
        return json.loads(self._model.weights_json())

    @property
    def notes(self) -> list[str]:
        """What the importer did that a user may want to know (e.g. a dim limited by the model)."""
        return list(self._model.notes)


def fuzz(
    model: str | os.PathLike,
    dims: Mapping[str, Any] | None = None,
    cases: int = 200,
    seed: int = 1,
    policy: str = "auto",
    recompile_limit: int = 64,
    case: Sequence[str] | None = None,
) -> dict:
    """`shapeshift fuzz`'s report as a dict: shapes inside, on the edges of and outside
    the domain through a session and the reference interpreter (soundness, tightness,
    evaluator agreement). model: an .onnx path or "builtin:bert" etc.; case: explicit
    shapes like "batch=1,sequence=8" instead of generated ones. report["failed"] says
    whether any check failed (the CLI's exit 1)."""
    return json.loads(
        _core.fuzz(os.fspath(model), _ranges(dims, "fuzz"), int(cases), int(seed), policy, int(recompile_limit),
                   list(case or []))
    )
