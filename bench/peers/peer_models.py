"""The peer models and their inputs, shared by export_models.py and peer_bench.py.

Every engine (ONNX Runtime on an exported file, torch eager, torch.compile) must
see the same weights and the same token ids, or agreement checks and speed
ratios mean nothing. So the models are built here from configs with a fixed
seed (no weights are downloaded: the hub is unreachable and random weights
time the same as trained ones), and inputs come from one generator keyed by
(seed, batch, sequence, past_sequence).

The wrappers give each model a plain positional tensor signature, so both
torch exporters see the same inputs in the same order, and their names are
the ONNX input/output names (INPUT_NAMES / output_names()).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
import transformers

MODEL_SEED = 1234

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

# The --tiny architectures: same code paths, small enough to commit as test data.
TINY = dict(layers=2, hidden=64, heads=4, intermediate=256, vocab=1000)


def make_config(family: str, tiny: bool) -> transformers.PretrainedConfig:
    """Full-size configs are the published base sizes (BERT-base, DistilBERT-base,
    RoBERTa-base, GPT-2 124M); tiny ones shrink only width, depth and vocab."""
    t = TINY
    if family == "bert":
        if not tiny:
            return transformers.BertConfig()
        return transformers.BertConfig(
            vocab_size=t["vocab"], hidden_size=t["hidden"], num_hidden_layers=t["layers"],
            num_attention_heads=t["heads"], intermediate_size=t["intermediate"])
    if family == "distilbert":
        if not tiny:
            return transformers.DistilBertConfig()
        return transformers.DistilBertConfig(
            vocab_size=t["vocab"], dim=t["hidden"], n_layers=t["layers"], n_heads=t["heads"],
            hidden_dim=t["intermediate"])
    if family == "roberta":
        # RobertaConfig's defaults are BERT's; these are roberta-base's.
        base = dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                    layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)
        if tiny:
            base.update(vocab_size=t["vocab"], hidden_size=t["hidden"],
                        num_hidden_layers=t["layers"], num_attention_heads=t["heads"],
                        intermediate_size=t["intermediate"])
        return transformers.RobertaConfig(**base)
    if family == "gpt2":
        if not tiny:
            return transformers.GPT2Config()
        return transformers.GPT2Config(
            vocab_size=t["vocab"], n_embd=t["hidden"], n_layer=t["layers"], n_head=t["heads"],
            n_inner=t["intermediate"])
    raise ValueError(f"unknown model family {family!r}")


def build_hf_model(spec: ModelSpec, tiny: bool) -> torch.nn.Module:
    """The Hugging Face module with deterministic random weights, in eval mode."""
    config = make_config(spec.family, tiny)
    torch.manual_seed(MODEL_SEED)
    classes = {
        "bert": transformers.BertModel,
        "distilbert": transformers.DistilBertModel,
        "roberta": transformers.RobertaModel,
        "gpt2": transformers.GPT2LMHeadModel,
    }
    model = classes[spec.family](config)
    model.eval()
    return model


class EncoderWithTokenTypes(torch.nn.Module):
    """BERT: input_ids, attention_mask, token_type_ids -> last_hidden_state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids, return_dict=True).last_hidden_state


class Encoder(torch.nn.Module):
    """DistilBERT, RoBERTa: input_ids, attention_mask -> last_hidden_state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          return_dict=True).last_hidden_state


class Decoder(torch.nn.Module):
    """GPT-2 without cache: input_ids, attention_mask -> logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False, return_dict=True).logits


class DecoderWithPast(torch.nn.Module):
    """GPT-2 with cache: input_ids, attention_mask, per-layer (key, value) of shape
    [batch, heads, past_sequence, head_dim] -> logits, per-layer present (key, value).

    Tensors in and out, not transformers' Cache object, so that the exported
    graph's interface is plain tensors any runtime can feed."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, past_key_values):
        cache = transformers.DynamicCache(ddp_cache_data=list(past_key_values))
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         past_key_values=cache, use_cache=True, return_dict=True)
        present = tuple((layer.keys, layer.values) for layer in out.past_key_values.layers)
        return out.logits, present


def wrap(spec: ModelSpec, model: torch.nn.Module) -> torch.nn.Module:
    """The wrapper in eval mode: the TorchScript exporter restores the mode of the
    module it was given, so a wrapper left in training mode turns dropout on."""
    if spec.family == "bert":
        wrapper = EncoderWithTokenTypes(model)
    elif spec.family in ("distilbert", "roberta"):
        wrapper = Encoder(model)
    else:
        wrapper = DecoderWithPast(model) if spec.with_past else Decoder(model)
    return wrapper.eval()


def num_layers(config) -> int:
    for attr in ("num_hidden_layers", "n_layers", "n_layer"):
        if hasattr(config, attr):
            return getattr(config, attr)
    raise ValueError(f"no layer count in {type(config).__name__}")


def input_names(spec: ModelSpec, config) -> list[str]:
    names = ["input_ids", "attention_mask"]
    if spec.family == "bert":
        names.append("token_type_ids")
    if spec.with_past:
        for layer in range(num_layers(config)):
            names += [f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"]
    return names


def output_names(spec: ModelSpec, config) -> list[str]:
    if not spec.is_decoder:
        return ["last_hidden_state"]
    names = ["logits"]
    if spec.with_past:
        for layer in range(num_layers(config)):
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


def pad_token_id(config) -> int:
    return config.pad_token_id if getattr(config, "pad_token_id", None) is not None else 0


def make_inputs(spec: ModelSpec, config, batch: int, seq: int, past: int = 0,
                pad_tail: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs named as the ONNX inputs, identical for every engine.

    Token ids avoid the low ids (pad/bos/eos of every family) so that no
    token is special by accident. With pad_tail > 0, the last pad_tail tokens
    of every row but the first are padding (mask 0, pad id): the first row
    stays full so the batch's sequence length is really used."""
    rng = np.random.default_rng([seed, batch, seq, past, pad_tail])
    input_ids = rng.integers(5, config.vocab_size, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, past + seq), dtype=np.int64)
    if pad_tail:
        if pad_tail >= seq:
            raise ValueError(f"pad_tail {pad_tail} must be shorter than sequence {seq}")
        input_ids[1:, seq - pad_tail:] = pad_token_id(config)
        mask[1:, past + seq - pad_tail:] = 0
    inputs = {"input_ids": input_ids, "attention_mask": mask}
    if spec.family == "bert":
        token_type_ids = np.zeros((batch, seq), dtype=np.int64)
        token_type_ids[:, seq // 2:] = 1  # sentence-pair layout: both segment ids used
        inputs["token_type_ids"] = token_type_ids
    if spec.with_past:
        heads = config.n_head
        head_dim = config.n_embd // heads
        for layer in range(num_layers(config)):
            for kind in ("key", "value"):
                inputs[f"past_key_values.{layer}.{kind}"] = rng.standard_normal(
                    (batch, heads, past, head_dim), dtype=np.float32)
    return inputs


def to_torch_args(spec: ModelSpec, config, inputs: dict[str, np.ndarray]) -> tuple:
    """The wrapper's positional arguments for a make_inputs() dict."""
    names = input_names(spec, config)
    args = [torch.from_numpy(inputs[n]) for n in names[:3 if spec.family == "bert" else 2]]
    if spec.with_past:
        args.append(tuple(
            (torch.from_numpy(inputs[f"past_key_values.{layer}.key"]),
             torch.from_numpy(inputs[f"past_key_values.{layer}.value"]))
            for layer in range(num_layers(config))))
    return tuple(args)


def flatten_outputs(spec: ModelSpec, config, result) -> dict[str, np.ndarray]:
    """The wrapper's result as {ONNX output name: array}."""
    names = output_names(spec, config)
    if not spec.with_past:
        return {names[0]: result.detach().numpy()}
    logits, present = result
    flat = [logits] + [t for layer in present for t in layer]
    return {n: t.detach().numpy() for n, t in zip(names, flat)}
