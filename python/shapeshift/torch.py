"""torch.compile backend: ``torch.compile(model, backend="shapeshift", dynamic=True)``.

Dynamo hands the backend an FX graph whose placeholders are the call's
tensors, the model's parameters and buffers (lifted as inputs), Python
numbers boxed as 0-d tensors, and symbolic sizes (SymInt placeholders).
``backend`` lowers that graph once to ONNX in memory with torch's dynamo
exporter (``torch.onnx.export(..., dynamo=True)``) and compiles it with
shapeshift, one polymorphic artifact for every size Dynamo's guards admit:

- each symbolic size becomes a named ONNX dim (the Dynamo symbol's name,
  e.g. ``s27``) and a shapeshift symbol with Dynamo's range from its
  ShapeEnv (``torch._dynamo.mark_dynamic(t, dim, min=, max=)`` when given,
  a guard's bound otherwise); a dim Dynamo leaves unbounded above takes the
  session's default range, 1..65536 narrowed to what the model can serve
  (e.g. a position table's rows; ``session.notes`` names the node), unless
  ``options["max_dim"]`` declares the upper end (see ``_ranges``);
- a SymInt placeholder is computed from the tensor dim that carries its
  symbol at call time, never baked in;
- parameters, buffers and boxed numbers are baked into the ONNX model
  (initializers, constants); each call checks they are still the same
  objects, unmodified (an in-place update or a new value is an error, not
  a stale result).

The returned callable takes what the FX graph takes and returns what it
returns (tuple structure, pass-through inputs and size outputs included);
tensors go in through DLPack without a copy (a non-contiguous one is
copied) and come back as torch tensors over shapeshift's output memory.

Anything that cannot be compiled raises ``ShapeshiftBackendError`` naming
the op (Dynamo reports it as ``BackendCompilerFailed``); there is no
fallback to eager.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
import weakref
from typing import Any, Callable, Sequence

import sympy
import torch
import torch._guards
import torch.fx
from torch.utils import _pytree as pytree

from shapeshift.session import InferenceSession

__all__ = ["backend", "ShapeshiftBackendError", "CompiledGraph", "compiled_graphs"]

# shapeshift's own default upper bound for a dim whose range is unknown
# (python/README.md: "else 1..65536"): the upper end declared for a dim Dynamo leaves
# unbounded when its lower end must be declared (above 2) and options has no max_dim.
DEFAULT_MAX_DIM = 65536
# The highest default-domain opset shapeshift's importer reads (graph/onnx/importer.cc).
ONNX_OPSET = 18

_OPTIONS = {"policy", "max_dim", "cache_dir", "intra_op_num_threads"}


class ShapeshiftBackendError(RuntimeError):
    """The graph cannot be compiled by shapeshift (the message names the op or input)."""


@dataclasses.dataclass
class _Placeholder:
    name: str
    kind: str  # "input" | "size" | "weight" | "scalar" | "int"
    index: int  # position in the graph's arguments
    slot: int = -1  # "input": position among the exported inputs
    source: tuple[int, int] | None = None  # "size": (input slot, dim)
    value: Any = None  # "weight": the tensor; "scalar"/"int": the number
    version: int = 0  # "weight": the tensor's version counter at compile time


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")
    for prefix in ("l_kwargs_", "l_args_", "l_"):
        if out.startswith(prefix) and len(out) > len(prefix):
            out = out[len(prefix):]
            break
    return out or "input"


def _symbol(value: Any):
    """The sympy expression of a SymInt (None for a plain int)."""
    if isinstance(value, torch.SymInt):
        return value.node.expr
    return None


def _finite(bound: Any, default: int) -> int:
    """A sympy range bound as an int; default for an infinite one (sympy's oo or torch's int_oo)."""
    if isinstance(bound, sympy.Integer):
        return int(bound)
    return default


def _shape_env(gm: torch.fx.GraphModule):
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if isinstance(value, torch.SymInt):
            return value.node.shape_env
        if isinstance(value, torch.Tensor):
            fake_mode = getattr(value, "fake_mode", None)
            if fake_mode is not None and fake_mode.shape_env is not None:
                return fake_mode.shape_env
    return None


@contextlib.contextmanager
def _quiet_exporter():
    """The exporter's progress warnings and log lines (dim renames, torchvision ops it skips)
    say nothing about our graph; its errors still propagate."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


class CompiledGraph:
    """What ``backend`` returns for one Dynamo graph: a callable over the graph's arguments.

    session: the shapeshift.InferenceSession serving it (metrics(), explain(), ...).
    onnx_model: the exported ONNX ModelProto bytes.
    dims: {symbol name: (lo, hi)} declared to the session (a symbolic dim left out has the
      session's default range, narrowed to what the model serves: session.notes).
    """

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any]) -> None:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise ShapeshiftBackendError(
                f"shapeshift backend: the graph has {len(placeholders)} placeholders but Dynamo gave "
                f"{len(example_inputs)} example inputs"
            )
        self._num_args = len(placeholders)
        plan: list[_Placeholder] = []
        used_names: set[str] = set()
        # symbol -> (input slot, dim) of the first exported input dim that carries it
        symbol_dims: dict[Any, tuple[int, int]] = {}
        input_examples: list[torch.Tensor] = []
        input_dims: list[dict[int, Any]] = []  # per input: {dim: sympy symbol}
        for index, (node, example) in enumerate(zip(placeholders, example_inputs)):
            fake = node.meta.get("example_value")
            grapharg = node.meta.get("grapharg")
            name = _sanitize(node.name)
            while name in used_names:
                name += "_"
            used_names.add(name)
            if isinstance(example, (int, torch.SymInt)) and not isinstance(example, bool):
                expr = _symbol(fake)
                if expr is None:
                    plan.append(_Placeholder(name, "int", index, value=int(example)))
                else:
                    plan.append(_Placeholder(name, "size", index, value=expr))
                continue
            if not isinstance(example, torch.Tensor):
                raise ShapeshiftBackendError(
                    f"shapeshift backend: graph input '{node.name}' is a {type(example).__name__}; "
                    "only tensors and integer sizes are supported"
                )
            if example.device.type != "cpu":
                raise ShapeshiftBackendError(
                    f"shapeshift backend: graph input '{node.name}' is on {example.device}; "
                    "the torch backend compiles for CPU tensors"
                )
            if grapharg is not None and getattr(grapharg, "pass_arg_as_tensor", False):
                # A Python number Dynamo boxed as a 0-d tensor (a module's eps, dropout p, ...).
                plan.append(_Placeholder(name, "scalar", index, value=example.item()))
                continue
            static = getattr(example, "_dynamo_static_input_type", None)
            if isinstance(example, torch.nn.Parameter) or static is not None:
                plan.append(_Placeholder(name, "weight", index, value=example, version=example._version))
                continue
            slot = len(input_examples)
            dims: dict[int, Any] = {}
            shape = fake.shape if isinstance(fake, torch.Tensor) else example.shape
            for d, size in enumerate(shape):
                expr = _symbol(size)
                if expr is None:
                    continue
                if not expr.is_Symbol:
                    if expr.is_number:
                        continue
                    raise ShapeshiftBackendError(
                        f"shapeshift backend: dim {d} of graph input '{node.name}' is the expression {expr}; "
                        "only a plain symbolic size per input dim is supported"
                    )
                dims[d] = expr
                symbol_dims.setdefault(expr, (slot, d))
            input_examples.append(example.detach())
            input_dims.append(dims)
            plan.append(_Placeholder(name, "input", index, slot=slot))
        for p in plan:
            if p.kind == "size":
                # A size no tensor input carries is fine as long as only size outputs use it
                # (checked once the graph is cut down to its tensor outputs, in _lower).
                p.source = symbol_dims.get(p.value)
        self._plan = plan
        self._symbol_dims = symbol_dims
        self._size_args = {p.value: p.index for p in plan if p.kind == "size"}
        self._inputs = [p for p in plan if p.kind == "input"]
        self._weights = [p for p in plan if p.kind == "weight"]
        self._scalars = [p for p in plan if p.kind == "scalar"]

        self.dims, self._export_ranges = self._ranges(gm, symbol_dims, options)
        lowered, self._outputs, self._out_spec, exported_outputs = self._lower(gm, plan)
        self.onnx_model: bytes | None = None
        self.session: InferenceSession | None = None
        self._feed_slots: list[int] = []
        if not exported_outputs:  # only sizes, constants or inputs come out: nothing to compile
            self._run = lambda feed: []
            return
        self.onnx_model = self._export(lowered, input_examples, input_dims, exported_outputs)
        self.session = self._compile(options)
        names = [i.name for i in self.session.get_inputs()]
        by_name = {p.name: p.slot for p in self._inputs}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ShapeshiftBackendError(f"shapeshift backend: exported model has unexpected inputs {missing}")
        self._feed_slots = [by_name[n] for n in names]
        out_names = [o.name for o in self.session.get_outputs()]
        if out_names != exported_outputs:
            raise ShapeshiftBackendError(
                f"shapeshift backend: exported outputs {out_names} differ from the graph's {exported_outputs}"
            )
        self._run = self.session._model.run

    # -- compile time --------------------------------------------------------

    @staticmethod
    def _ranges(gm, symbol_dims, options):
        """({name: (lo, hi)} declared to the session, {name: (lo, hi or None)} for torch.export).

        A dim Dynamo bounds (a guard, mark_dynamic's max) is declared with Dynamo's range. A dim
        unbounded above is left undeclared when its lower end is Dynamo's default (2, after the 0/1
        specialization): the session gives it 1..65536 narrowed to what the model can serve (a
        position table's rows; session.notes names the node), which covers Dynamo's range below
        and the model's own limit above. With options["max_dim"], or a lower end above 2, it is
        declared lo..max_dim (default 65536) instead.
        """
        max_dim = options.get("max_dim")
        shape_env = _shape_env(gm)
        declared: dict[str, tuple[int, int]] = {}
        export: dict[str, tuple[int, int | None]] = {}
        for symbol in symbol_dims:
            lo, hi = 2, None
            if shape_env is not None and symbol in shape_env.var_to_range:
                vr = shape_env.var_to_range[symbol]
                lo = max(_finite(vr.lower, 2), 1)
                hi = _finite(vr.upper, None)
            name = str(symbol)
            if hi is None and (max_dim is not None or lo > 2):
                hi = int(max_dim if max_dim is not None else DEFAULT_MAX_DIM)
            if hi is not None and lo > hi:
                raise ShapeshiftBackendError(f"shapeshift backend: dim {name} has the empty range {lo}..{hi}")
            export[name] = (lo, hi)
            if hi is not None:
                declared[name] = (lo, hi)
        return declared, export

    def _lower(self, gm: torch.fx.GraphModule, plan: list[_Placeholder]):
        """A copy of gm with boxed numbers folded in and only tensor outputs computed by it."""
        graph = torch.fx.Graph()
        value_map: dict[torch.fx.Node, torch.fx.Node] = {}
        output_value = graph.graph_copy(gm.graph, value_map)
        new_placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        for p, node in zip(plan, new_placeholders):
            if p.kind != "scalar":
                continue
            for user in list(node.users):
                if user.op == "call_method" and user.target == "item":
                    value = p.value
                    for consumer in list(user.users):
                        consumer.args = pytree.tree_map(lambda a: value if a is user else a, consumer.args)
                        consumer.kwargs = pytree.tree_map(lambda a: value if a is user else a, consumer.kwargs)
                    graph.erase_node(user)
        placeholder_of = {new: p for p, new in zip(plan, new_placeholders)}
        leaves, spec = pytree.tree_flatten(output_value)
        outputs: list[tuple[str, Any]] = []  # per leaf: ("onnx", k) | ("arg", index) | ("size", expr) | ("const", v)
        exported: list[torch.fx.Node] = []
        for leaf in leaves:
            if not isinstance(leaf, torch.fx.Node):
                outputs.append(("const", leaf))
                continue
            value = leaf.meta.get("example_value")
            if leaf in placeholder_of:
                p = placeholder_of[leaf]
                outputs.append(("arg", p.index))
            elif isinstance(value, torch.SymInt):
                expr = value.node.expr
                unknown = [str(s) for s in expr.free_symbols
                           if s not in self._symbol_dims and s not in self._size_args]
                if unknown:
                    raise ShapeshiftBackendError(
                        f"shapeshift backend: graph output '{leaf.name}' is the size {expr}, which depends on "
                        f"{', '.join(sorted(unknown))}, neither a size input nor a tensor input's dim"
                    )
                outputs.append(("size", expr))
            elif isinstance(value, (int, float, bool)):
                outputs.append(("const", value))
            elif isinstance(value, torch.Tensor) or value is None:
                if leaf not in exported:
                    exported.append(leaf)
                outputs.append(("onnx", exported.index(leaf)))
            else:
                raise ShapeshiftBackendError(
                    f"shapeshift backend: graph output '{leaf.name}' is a {type(value).__name__}; "
                    "only tensors and sizes are supported"
                )
        graph.output(tuple(exported))
        graph.eliminate_dead_code()
        for node, p in placeholder_of.items():
            if p.kind == "size" and p.source is None and node.users:
                raise ShapeshiftBackendError(
                    f"shapeshift backend: size input '{p.name}' ({p.value}) is used by the graph's tensor "
                    "computation but is not the size of any tensor input's dim; such sizes are not supported"
                )
        lowered = torch.fx.GraphModule(gm, graph)
        return lowered, outputs, spec, [f"output_{k}" for k in range(len(exported))]

    def _export(self, lowered, input_examples, input_dims, output_names) -> bytes:
        wrapper = _ExportWrapper(lowered, self._plan)
        dims_by_symbol = {}
        for symbol in {s for dims in input_dims for s in dims.values()}:
            lo, hi = self._export_ranges[str(symbol)]
            if hi is None:
                dims_by_symbol[symbol] = torch.export.Dim(str(symbol), min=lo)
            else:
                dims_by_symbol[symbol] = torch.export.Dim(str(symbol), min=lo, max=hi)
        dynamic_shapes = tuple(
            {d: dims_by_symbol[s] for d, s in dims.items()} if dims else None for dims in input_dims
        )
        try:
            # Outside Dynamo's tracing and compile contexts: torch.export would otherwise
            # trace under Dynamo's fake mode and record guards on Dynamo's sources (L['kwargs']...).
            with torch._guards.tracing(None), torch._guards.compile_context(None), _quiet_exporter():
                program = torch.onnx.export(
                    wrapper,
                    tuple(input_examples),
                    dynamo=True,
                    dynamic_shapes=(dynamic_shapes,),
                    input_names=[p.name for p in self._inputs],
                    output_names=output_names,
                    opset_version=ONNX_OPSET,
                    optimize=True,
                    verbose=False,
                )
        except Exception as e:  # the exporter names the op it cannot lower
            raise ShapeshiftBackendError(
                f"shapeshift backend: torch.onnx.export of the Dynamo graph failed: {type(e).__name__}: {e}"
            ) from e
        return program.model_proto.SerializeToString()

    def _compile(self, options) -> InferenceSession:
        from shapeshift.session import SessionOptions

        sess_options = SessionOptions()
        sess_options.intra_op_num_threads = int(options.get("intra_op_num_threads", 0))
        try:
            return InferenceSession(
                self.onnx_model,
                sess_options,
                dims=self.dims,
                policy=options.get("policy", "polymorphic"),
                cache_dir=options.get("cache_dir"),
            )
        except (RuntimeError, ValueError, TypeError) as e:
            raise ShapeshiftBackendError(
                f"shapeshift backend: shapeshift cannot compile the graph: {type(e).__name__}: {e}"
                f"{self._fx_origins(str(e))}"
            ) from e

    def _fx_origins(self, message: str) -> str:
        """The torch ops behind the ONNX nodes a compile error names."""
        import onnx

        model = onnx.load_from_string(self.onnx_model)
        lines = []
        for node in model.graph.node:
            if node.name and f"'{node.name}'" in message:
                props = {p.key: p.value for p in node.metadata_props}
                origin = props.get("pkg.torch.onnx.fx_node")
                if origin:
                    lines.append(f"  ONNX node '{node.name}' ({node.op_type}) comes from: {origin}")
        return ("\n" + "\n".join(lines)) if lines else ""

    # -- call time -----------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        if len(args) != self._num_args:
            raise TypeError(f"shapeshift backend: the graph takes {self._num_args} arguments, got {len(args)}")
        for p in self._weights:
            a = args[p.index]
            if a is not p.value or a._version != p.version:
                raise RuntimeError(
                    f"shapeshift backend: '{p.name}' was baked into the compiled model and has changed since "
                    "(a new tensor or an in-place update); the compiled graph would be stale"
                )
        for p in self._scalars:
            a = args[p.index]
            if a.item() != p.value:
                raise RuntimeError(
                    f"shapeshift backend: '{p.name}' was compiled as the constant {p.value!r} and is now "
                    f"{a.item()!r}; the compiled graph would be stale"
                )
        inputs = [args[p.index] for p in self._inputs]
        feed = []
        for slot in self._feed_slots:
            t = inputs[slot]
            feed.append(t.detach() if t.requires_grad else t)
        arrays = self._run(feed)
        results = []
        for kind, what in self._outputs:
            if kind == "onnx":
                results.append(torch.from_numpy(arrays[what]))
            elif kind == "arg":
                results.append(args[what])
            elif kind == "size":
                results.append(self._size(what, args, inputs))
            else:
                results.append(what)
        return pytree.tree_unflatten(results, self._out_spec)

    def _size(self, expr, args, inputs) -> int:
        values = {}
        for symbol in expr.free_symbols:
            if symbol in self._size_args:
                values[symbol] = int(args[self._size_args[symbol]])
            else:
                slot, dim = self._symbol_dims[symbol]
                values[symbol] = inputs[slot].shape[dim]
        return int(expr.xreplace(values))


class _ExportWrapper(torch.nn.Module):
    """forward(*tensor inputs): the graph's full argument list rebuilt (sizes from the inputs'
    shapes, parameters and buffers as this module's buffers, so they export as initializers)."""

    def __init__(self, lowered: torch.fx.GraphModule, plan: list[_Placeholder]) -> None:
        super().__init__()
        self.graph_module = lowered
        self._plan = plan
        self._attrs: dict[int, str] = {}
        for p in plan:
            if p.kind == "weight":
                attr = f"w_{p.name}"
                self.register_buffer(attr, p.value.detach())
                self._attrs[p.index] = attr
            elif p.kind == "scalar":
                attr = f"c_{p.name}"
                self.register_buffer(attr, torch.tensor(p.value))
                self._attrs[p.index] = attr

    def forward(self, *inputs):
        args = []
        for p in self._plan:
            if p.kind == "input":
                args.append(inputs[p.slot])
            elif p.kind == "size":
                # No source: a size only size outputs use, cut from this graph (_lower).
                args.append(inputs[p.source[0]].shape[p.source[1]] if p.source is not None else None)
            elif p.kind == "int":
                args.append(p.value)
            else:
                args.append(getattr(self, self._attrs[p.index]))
        return self.graph_module(*args)


# Weak: a graph lives as long as Dynamo's cache (torch._dynamo.reset() drops it) or the caller holds it.
_compiled: list[weakref.ref] = []


def compiled_graphs() -> list[CompiledGraph]:
    """Every CompiledGraph this process's backend made, oldest first (introspection, tests)."""
    alive = [r() for r in _compiled]
    return [g for g in alive if g is not None]


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, options: dict | None = None,
            mode: str | None = None, **kwargs: Any) -> Callable[..., Any]:
    """The torch.compile backend (``backend="shapeshift"``).

    Returns a CompiledGraph (the callable Dynamo runs). options (``torch.compile(...,
    options={...})``): policy ("polymorphic", the default: one compile for every size; or
    "auto", "bucketed", "static"), max_dim (declared upper end of a dim Dynamo leaves unbounded;
    default: the session's narrowed default range), cache_dir, intra_op_num_threads. Ranges
    come from Dynamo (torch._dynamo.mark_dynamic(t, dim, min=, max=)). Raises
    ShapeshiftBackendError for anything it cannot compile.
    """
    options = dict(options or {})
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ShapeshiftBackendError(
            f"shapeshift backend: unknown option(s) {unknown} (known: {', '.join(sorted(_OPTIONS))})"
        )
    if mode not in (None, "default"):
        raise ShapeshiftBackendError(f"shapeshift backend: mode={mode!r} is not supported (use options=)")
    if kwargs:
        raise ShapeshiftBackendError(f"shapeshift backend: unexpected argument(s) {sorted(kwargs)}")
    compiled = CompiledGraph(gm, example_inputs, options)
    _compiled[:] = [r for r in _compiled if r() is not None]
    _compiled.append(weakref.ref(compiled))
    return compiled
