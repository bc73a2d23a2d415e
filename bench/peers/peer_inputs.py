"""The peer models' names, sizes and inputs, without torch.

Every engine must see the same token ids, or agreement checks and speed ratios
mean nothing; so all inputs come from make_inputs(), keyed by (seed, batch,
sequence, past_sequence, padding). This module needs only numpy so that the
ONNX Runtime benchmark process does not load torch (it would add hundreds of
MB to the peak RSS it reports). peer_models.py builds the torch modules from
the same size table.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# dim names used in every exported file (ONNX dim_param) and by shapeshift.
BATCH = "batch"
SEQUENCE = "sequence"
PAST_SEQUENCE = "past_sequence"
# attention_mask of a model with past covers past and new tokens; torch.export
# cannot name a sum of two dims, so it is its own dim.
TOTAL_SEQUENCE = "total_sequence"


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str  # file-name stem, e.g. "bert-base"
    family: str  # bert | distilbert | roberta | gpt2
    with_past: bool = False

    @property
    def is_decoder(self) -> bool:
        return self.family == "gpt2"


MODELS = {
    spec.name: spec
    for spec in (
        ModelSpec("bert-base", "bert"),
        ModelSpec("distilbert", "distilbert"),
        ModelSpec("roberta-base", "roberta"),
        ModelSpec("gpt2", "gpt2"),
        ModelSpec("gpt2-past", "gpt2", with_past=True),
    )
}


@dataclasses.dataclass(frozen=True)
class Sizes:
    vocab: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    pad_token_id: int  # also used as filler by families without a pad token

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


# Full sizes are the published base models (BERT-base, DistilBERT-base,
# RoBERTa-base, GPT-2 124M). --tiny shrinks width, depth and vocab only.
FULL_SIZES = {
    "bert": Sizes(30522, 768, 12, 12, 3072, 512, 0),
    "distilbert": Sizes(30522, 768, 6, 12, 3072, 512, 0),
    "roberta": Sizes(50265, 768, 12, 12, 3072, 514, 1),
    "gpt2": Sizes(50257, 768, 12, 12, 3072, 1024, 0),
}


def sizes(family: str, tiny: bool) -> Sizes:
    full = FULL_SIZES[family]
    if not tiny:
        return full
    return dataclasses.replace(full, vocab=1000, hidden=64, layers=2, heads=4, intermediate=256)


def input_names(spec: ModelSpec, size: Sizes) -> list[str]:
    names = ["input_ids", "attention_mask"]
    if spec.family == "bert":
        names.append("token_type_ids")
    if spec.with_past:
        for layer in range(size.layers):
            names += [f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"]
    return names


def output_names(spec: ModelSpec, size: Sizes) -> list[str]:
    if not spec.is_decoder:
        return ["last_hidden_state"]
    names = ["logits"]
    if spec.with_past:
        for layer in range(size.layers):
            names += [f"present.{layer}.key", f"present.{layer}.value"]
    return names


def dim_names(spec: ModelSpec, name: str) -> dict[int, str]:
    """Which axes of an input are dynamic, and their ONNX names."""
    if name.startswith("past_key_values."):
        return {0: BATCH, 2: PAST_SEQUENCE}
    if name == "attention_mask" and spec.with_past:
        return {0: BATCH, 1: TOTAL_SEQUENCE}
    return {0: BATCH, 1: SEQUENCE}


def output_dim_names(spec: ModelSpec, name: str) -> dict[int, str]:
    if name.startswith("present."):
        return {0: BATCH, 2: TOTAL_SEQUENCE}
    return {0: BATCH, 1: SEQUENCE}


def make_inputs(spec: ModelSpec, size: Sizes, batch: int, seq: int, past: int = 0,
                pad_tail: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs named as the ONNX inputs, identical for every engine.

    Token ids avoid the low ids (pad/bos/eos of every family) so that no
    token is special by accident. With pad_tail > 0, the last pad_tail tokens
    of every row but the first are padding (mask 0, pad id): the first row
    stays full so the batch's sequence length is really used."""
    rng = np.random.default_rng([seed, batch, seq, past, pad_tail])
    input_ids = rng.integers(5, size.vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, past + seq), dtype=np.int64)
    if pad_tail:
        if pad_tail >= seq:
            raise ValueError(f"pad_tail {pad_tail} must be shorter than sequence {seq}")
        input_ids[1:, seq - pad_tail:] = size.pad_token_id
        mask[1:, past + seq - pad_tail:] = 0
    inputs = {"input_ids": input_ids, "attention_mask": mask}
    if spec.family == "bert":
        token_type_ids = np.zeros((batch, seq), dtype=np.int64)
        token_type_ids[:, seq // 2:] = 1  # sentence-pair layout: both segment ids used
        inputs["token_type_ids"] = token_type_ids
    if spec.with_past:
        for layer in range(size.layers):
            for kind in ("key", "value"):
                inputs[f"past_key_values.{layer}.{kind}"] = rng.standard_normal(
                    (batch, size.heads, past, size.head_dim), dtype=np.float32)
    return inputs


# (batch, length, padded tail tokens) at which every engine's outputs are saved
# and compared (report.py's agreement table); one key per case and output:
# agreement_key(...).
AGREEMENT_CASES = ((1, 8, 0), (2, 37, 9), (1, 128, 0))


def agreement_key(batch: int, length: int, pad_tail: int, output: str) -> str:
    return f"batch{batch}_length{length}_pad{pad_tail}/{output}"


def request_shape(spec: ModelSpec, length: int) -> dict[str, int]:
    """What a benchmark "length" means for a model: the sequence of an encoder or
    a prefill, or, with past, the cache length of a one-token decode step."""
    if spec.with_past:
        return {"seq": 1, "past": length}
    return {"seq": length, "past": 0}
