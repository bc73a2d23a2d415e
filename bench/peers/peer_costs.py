"""What one benchmark request must cost at least, from the models' size table.

A request's floor on a machine is the larger of its FLOPs at the machine's
measured FP32 FMA peak and its bytes at the measured stream-triad bandwidth
(bench/machine_probe.h; run.sh records both). report.py divides it by each
engine's median latency: the fraction of the machine that engine used.

FLOPs count what the request needs, not what an engine happens to compute:
  - every constant-weight GEMM, 2 flops per multiply-add, per token: the
    attention's projections (q and o: hidden x hidden; k and v: hidden x
    key/value heads x head dim), the MLP (two matrices, three when gated), and
    a decoder's LM head (hidden x vocab), applied to every position of a
    prefill (the exported graphs return logits for all of them);
  - the attention's two products (scores and probabilities times values):
    2 x hidden multiply-adds per (query, allowed key) pair and layer (head dim
    times query heads, for each product); a causal
    prefill allows key j for query i only when j <= i (S (S + 1) / 2 pairs),
    a decode step with a cache of P allows all P + 1 keys;
  - biases, normalizations, softmax and activations are left out (a few
    flops per element, under 1% of any cell here).
The embedding lookups and BERT's pooler (one row per sequence) are not GEMMs
over the tokens and are left out too.

Bytes count the one read of every GEMM weight (f32) a request cannot avoid,
and, with past key/values, the cache read once and written once as the
`present` outputs (plain ONNX semantics: a fresh tensor each step).
Activations are not counted: they fit in the caches at these sizes or move
far fewer bytes than the weights.

The limits come from the run's probes (load_probes, best_limits), so the
two reports (report.py, decode_run.sh's) take them by one rule. Needs only
the standard library and peer_inputs (numpy), like report.py.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import peer_inputs as pi

F32 = 4  # bytes

# Families whose MLP is gated (gate, up, down: three hidden x intermediate
# matrices); the others have two (up, down).
GATED_MLP = frozenset({"llama", "qwen2", "mistral", "gemma"})
# Families costed here; others have no floor (the report shows none).
COSTED = frozenset({"bert", "distilbert", "roberta", "gpt2", "llama"})


@dataclasses.dataclass(frozen=True)
class Cost:
    flops: float
    bytes: float

    def floor_s(self, limits: "Limits") -> float:
        return max(self.compute_s(limits), self.memory_s(limits))

    def bound(self, limits: "Limits") -> str:
        return "compute" if self.compute_s(limits) >= self.memory_s(limits) else "memory"

    def compute_s(self, limits: "Limits") -> float:
        return self.flops / (limits.fma_peak_gflops * 1e9)

    def memory_s(self, limits: "Limits") -> float:
        return self.bytes / (limits.triad_gbytes_s * 1e9)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The machine's FP32 FMA peak and triad bandwidth a floor is taken at."""
    fma_peak_gflops: float
    triad_gbytes_s: float


def load_probes(results: pathlib.Path) -> dict[str, dict]:
    """The machine_probe outputs a run saved as RESULTS/probe-<when>.json,
    by <when> (run.sh and decode_run.sh take one before and one after)."""
    return {p.stem.removeprefix("probe-"): json.loads(p.read_text()) for p in sorted(results.glob("probe-*.json"))}


def best_limits(probes: dict[str, dict]) -> Limits | None:
    """The higher of the probes' figures: what the machine delivered when
    least disturbed (a floor taken there makes every engine's fraction
    lower, never higher); None without probes."""
    if not probes:
        return None
    return Limits(max(p["fma_peak_gflops"] for p in probes.values()),
                  max(p["triad_gbytes_s"] for p in probes.values()))


def layer_weights(family: str, size: pi.Sizes) -> int:
    """Multiply-adds per token of one layer's constant-weight GEMMs (= their
    weight elements)."""
    kv_width = size.key_value_heads * size.head_dim
    attention = 2 * size.hidden * size.hidden + 2 * size.hidden * kv_width
    mlp = (3 if family in GATED_MLP else 2) * size.hidden * size.intermediate
    return attention + mlp


def cost(spec: pi.ModelSpec, size: pi.Sizes, batch: int, seq: int, past: int = 0) -> Cost | None:
    """The floor's work for `seq` new tokens per sequence after `past` cached
    ones (a prefill: past 0; a decode step: seq 1), or None for a family not
    costed here."""
    if spec.family not in COSTED or spec.kind not in ("encoder", "decoder"):
        return None
    weights = size.layers * layer_weights(spec.family, size)
    if spec.is_decoder:
        weights += size.hidden * size.vocab  # the LM head, on every position
        pairs = seq * past + seq * (seq + 1) // 2  # token i sees the cache and tokens 0..i
    else:
        pairs = seq * seq  # an encoder sees every key
    flops = 2.0 * batch * (seq * weights + size.layers * 2 * size.hidden * pairs)
    cache = 0
    if spec.with_past:
        per_token = size.layers * 2 * size.key_value_heads * size.head_dim  # keys and values
        cache = batch * per_token * (past + (past + seq))  # past read, present written
    return Cost(flops=flops, bytes=float(F32 * (weights + cache)))


def request_cost(spec: pi.ModelSpec, size: pi.Sizes, batch: int, length: int) -> Cost | None:
    """cost() of one peer-grid request (pi.request_shape says what `length`
    is: a prefill's sequence, or with past the cache of a one-token step)."""
    shape = pi.request_shape(spec, length)
    return cost(spec, size, batch, shape["seq"], shape["past"])
