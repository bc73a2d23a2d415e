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
# A seq2seq model's decoder length (BART), independent of the encoder's sequence.
DECODER_SEQUENCE = "decoder_sequence"

# What each family's exported graph takes and returns: "encoder" (hidden
# states), "decoder" (causal LM: logits, optionally past key/values),
# "seq2seq" (encoder + decoder: the decoder's hidden states), "embedding"
# (one L2-normalized vector per sequence: sentence-transformers' mean pooling).
FAMILY_KIND = {
    "bert": "encoder", "distilbert": "encoder", "roberta": "encoder", "gpt2": "decoder",
    # the zoo (issue 13): today's NLP architectures, tiny only except llama
    "llama": "decoder", "qwen2": "decoder", "gptj": "decoder", "opt": "decoder",
    "gpt-neo": "decoder", "gpt-neox": "decoder", "phi": "decoder",
    "mistral": "decoder", "gemma": "decoder", "bloom": "decoder", "gpt-bigcode": "decoder",
    "falcon": "decoder", "stablelm": "decoder", "mpt": "decoder",
    "deberta-v2": "encoder", "t5-encoder": "encoder",
    "electra": "encoder", "albert": "encoder", "bart": "seq2seq",
    "sentence-bert": "embedding",
}
# Families whose encoders take token_type_ids (segment ids) as a third input.
TOKEN_TYPE_FAMILIES = frozenset({"bert", "electra", "albert"})


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str  # file-name stem, e.g. "bert-base"
    family: str  # a key of FAMILY_KIND
    with_past: bool = False

    @property
    def kind(self) -> str:
        return FAMILY_KIND[self.family]

    @property
    def is_decoder(self) -> bool:
        return self.kind == "decoder"

    @property
    def has_token_types(self) -> bool:
        return self.family in TOKEN_TYPE_FAMILIES


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

# The zoo (issue 13, item 5): exported tiny as test data for the compiler
# (tests/data/models), not benchmarked against the peers. Llama's full size is
# the ~1.1B model of item 6; the others exist only in --tiny.
ZOO = {
    spec.name: spec
    for spec in (
        ModelSpec("llama", "llama"),
        ModelSpec("llama-past", "llama", with_past=True),
        ModelSpec("qwen2", "qwen2"),
        ModelSpec("qwen2-past", "qwen2", with_past=True),
        ModelSpec("gptj", "gptj"),
        ModelSpec("opt", "opt"),
        ModelSpec("gpt-neo", "gpt-neo"),
        ModelSpec("gpt-neox", "gpt-neox"),
        ModelSpec("phi", "phi"),
        ModelSpec("mistral", "mistral"),
        ModelSpec("gemma", "gemma"),
        ModelSpec("bloom", "bloom"),
        ModelSpec("gpt-bigcode", "gpt-bigcode"),
        ModelSpec("falcon", "falcon"),
        ModelSpec("stablelm", "stablelm"),
        ModelSpec("mpt", "mpt"),
        # With past key/values: every decoder family (MPT's dynamo export
        # fails in torch.export; its TorchScript export slices the ALiBi table
        # at 512 - (past + sequence), which shapeshift keeps as the domain's
        # relation past_sequence + sequence <= 512).
        *(ModelSpec(f"{family}-past", family, with_past=True)
          for family in ("mistral", "gemma", "phi", "gpt-neox", "stablelm", "falcon", "gpt-bigcode", "bloom",
                         "mpt")),
        ModelSpec("deberta-v2", "deberta-v2"),
        ModelSpec("t5-encoder", "t5-encoder"),
        ModelSpec("bart", "bart"),
        ModelSpec("electra", "electra"),
        ModelSpec("albert", "albert"),
        # sentence-transformers' all-MiniLM-L6-v2 pipeline on a tiny BERT:
        # masked mean pooling over the sequence axis, then L2 normalization.
        ModelSpec("sentence-bert", "sentence-bert"),
    )
}
ALL_MODELS = {**MODELS, **ZOO}


@dataclasses.dataclass(frozen=True)
class Sizes:
    vocab: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    pad_token_id: int  # also used as filler by families without a pad token
    kv_heads: int = 0  # key/value heads (grouped-query attention); 0 = heads
    embedding: int = 0  # ALBERT/ELECTRA factorized embedding width; 0 = hidden

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def key_value_heads(self) -> int:
        return self.kv_heads or self.heads


# Full sizes are the published base models (BERT-base, DistilBERT-base,
# RoBERTa-base, GPT-2 124M). --tiny shrinks width, depth and vocab only.
FULL_SIZES = {
    "bert": Sizes(30522, 768, 12, 12, 3072, 512, 0),
    "distilbert": Sizes(30522, 768, 6, 12, 3072, 512, 0),
    "roberta": Sizes(50265, 768, 12, 12, 3072, 514, 1),
    "gpt2": Sizes(50257, 768, 12, 12, 3072, 1024, 0),
    # ~1.1B parameters (issue 13, item 6): hidden 2048, 22 layers, 32 query
    # and 4 key/value heads, intermediate 5632, vocab 32000 (TinyLlama's shape).
    "llama": Sizes(32000, 2048, 22, 32, 5632, 2048, 0, kv_heads=4),
}

# Zoo families exported only tiny. max_positions is 512 (BART: 256) where the
# model has a position table (learned or sinusoidal), so the tiny files stay
# under 2 MB; kv_heads 2 of 4 makes Llama/Qwen2 grouped-query
# (repeat_kv in the graph); ALBERT/ELECTRA factor the embeddings (32 -> 64).
TINY_ONLY_SIZES = {
    "qwen2": Sizes(1000, 64, 2, 4, 256, 512, 0, kv_heads=2),
    "gptj": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "opt": Sizes(1000, 64, 2, 4, 256, 512, 1),
    "gpt-neo": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "gpt-neox": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "phi": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "mistral": Sizes(1000, 64, 2, 4, 256, 512, 0, kv_heads=2),
    "gemma": Sizes(1000, 64, 2, 4, 256, 512, 0, kv_heads=1),
    "bloom": Sizes(1000, 64, 2, 4, 256, 512, 3),
    "gpt-bigcode": Sizes(1000, 64, 2, 4, 256, 512, 0, kv_heads=1),  # multi-query: one key/value head
    "falcon": Sizes(1000, 64, 2, 4, 256, 512, 0, kv_heads=1),
    "stablelm": Sizes(1000, 64, 2, 4, 256, 512, 0, kv_heads=2),
    "mpt": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "deberta-v2": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "t5-encoder": Sizes(1000, 64, 2, 4, 256, 512, 0),
    "bart": Sizes(1000, 64, 2, 4, 256, 256, 1),  # 2 position tables: 256 rows keep it < 2 MB
    "electra": Sizes(1000, 64, 2, 4, 256, 512, 0, embedding=32),
    "albert": Sizes(1000, 64, 2, 4, 256, 512, 0, embedding=32),
    "sentence-bert": Sizes(1000, 64, 2, 4, 256, 512, 0),
}
# What --tiny shrinks the full sizes to (the zoo's tiny sizes match it).
TINY = dict(vocab=1000, hidden=64, layers=2, heads=4, intermediate=256)


def sizes(family: str, tiny: bool) -> Sizes:
    if family in TINY_ONLY_SIZES:
        if not tiny:
            raise ValueError(f"{family} has no full size here; export it with --tiny")
        return TINY_ONLY_SIZES[family]
    full = FULL_SIZES[family]
    if not tiny:
        return full
    # kv_heads 2 of 4 keeps grouped-query attention in a tiny Llama.
    return dataclasses.replace(full, **TINY, kv_heads=2 if full.kv_heads else 0)


def input_names(spec: ModelSpec, size: Sizes) -> list[str]:
    names = ["input_ids", "attention_mask"]
    if spec.has_token_types:
        names.append("token_type_ids")
    if spec.kind == "seq2seq":
        names.append("decoder_input_ids")
    if spec.with_past:
        for layer in range(size.layers):
            names += [f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"]
    return names


def output_names(spec: ModelSpec, size: Sizes) -> list[str]:
    if spec.kind == "embedding":
        return ["sentence_embedding"]
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
    if name == "decoder_input_ids":
        return {0: BATCH, 1: DECODER_SEQUENCE}
    return {0: BATCH, 1: SEQUENCE}


def output_dim_names(spec: ModelSpec, name: str) -> dict[int, str]:
    if name.startswith("present."):
        return {0: BATCH, 2: TOTAL_SEQUENCE}
    if spec.kind == "seq2seq":
        return {0: BATCH, 1: DECODER_SEQUENCE}
    if spec.kind == "embedding":
        return {0: BATCH}
    return {0: BATCH, 1: SEQUENCE}


def default_decoder_length(seq: int) -> int:
    """A seq2seq request's decoder length when none is given: about half the
    encoder's, so the two lengths differ (they are independent dims)."""
    return (seq + 1) // 2


def make_inputs(spec: ModelSpec, size: Sizes, batch: int, seq: int, past: int = 0,
                pad_tail: int = 0, seed: int = 0, decoder_seq: int | None = None
                ) -> dict[str, np.ndarray]:
    """Inputs named as the ONNX inputs, identical for every engine.

    Token ids avoid the low ids (pad/bos/eos of every family) so that no
    token is special by accident. With pad_tail > 0, the last pad_tail tokens
    of every row but the first are padding (mask 0, pad id): the first row
    stays full so the batch's sequence length is really used. Past keys and
    values have the model's key/value heads (fewer than its query heads under
    grouped-query attention). A seq2seq model's decoder tokens are never
    padding; their length is `decoder_seq` (default_decoder_length(seq))."""
    rng = np.random.default_rng([seed, batch, seq, past, pad_tail])
    input_ids = rng.integers(5, size.vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, past + seq), dtype=np.int64)
    if pad_tail:
        if pad_tail >= seq:
            raise ValueError(f"pad_tail {pad_tail} must be shorter than sequence {seq}")
        input_ids[1:, seq - pad_tail:] = size.pad_token_id
        mask[1:, past + seq - pad_tail:] = 0
    inputs = {"input_ids": input_ids, "attention_mask": mask}
    if spec.has_token_types:
        token_type_ids = np.zeros((batch, seq), dtype=np.int64)
        token_type_ids[:, seq // 2:] = 1  # sentence-pair layout: both segment ids used
        inputs["token_type_ids"] = token_type_ids
    if spec.with_past:
        for layer in range(size.layers):
            for kind in ("key", "value"):
                inputs[f"past_key_values.{layer}.{kind}"] = rng.standard_normal(
                    (batch, size.key_value_heads, past, size.head_dim), dtype=np.float32)
    if spec.kind == "seq2seq":
        length = default_decoder_length(seq) if decoder_seq is None else decoder_seq
        inputs["decoder_input_ids"] = rng.integers(5, size.vocab, size=(batch, length),
                                                   dtype=np.int64)
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
