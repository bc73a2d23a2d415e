"""The peer models as torch modules, shared by export_models.py and peer_bench.py.

Models are built from configs with a fixed seed (no weights are downloaded: the
hub is unreachable and random weights time the same as trained ones), with the
sizes of peer_inputs.sizes(), so every process that builds one gets the same
weights. The wrappers give each model a plain positional tensor signature, so
both torch exporters see the same inputs in the same order; the names of those
inputs and outputs are peer_inputs.input_names()/output_names().
"""

from __future__ import annotations

import numpy as np
import torch
import transformers

import peer_inputs as pi

MODEL_SEED = 1234


def make_config(family: str, tiny: bool) -> transformers.PretrainedConfig:
    s = pi.sizes(family, tiny)
    if family == "bert":
        return transformers.BertConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, intermediate_size=s.intermediate,
            max_position_embeddings=s.max_positions, pad_token_id=s.pad_token_id)
    if family == "distilbert":
        return transformers.DistilBertConfig(
            vocab_size=s.vocab, dim=s.hidden, n_layers=s.layers, n_heads=s.heads,
            hidden_dim=s.intermediate, max_position_embeddings=s.max_positions,
            pad_token_id=s.pad_token_id)
    if family == "roberta":
        return transformers.RobertaConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, intermediate_size=s.intermediate,
            max_position_embeddings=s.max_positions, type_vocab_size=1, layer_norm_eps=1e-5,
            pad_token_id=s.pad_token_id, bos_token_id=0, eos_token_id=2)
    if family == "gpt2":
        return transformers.GPT2Config(
            vocab_size=s.vocab, n_embd=s.hidden, n_layer=s.layers, n_head=s.heads,
            n_inner=s.intermediate, n_positions=s.max_positions,
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1)  # GPT-2's <|endoftext|>
    raise ValueError(f"unknown model family {family!r}")


def build_hf_model(spec: pi.ModelSpec, tiny: bool) -> torch.nn.Module:
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
                         cache=cache, use_cache=True, return_dict=True)
        present = tuple((layer.keys, layer.values) for layer in out.cache.layers)
        return out.logits, present


def wrap(spec: pi.ModelSpec, model: torch.nn.Module) -> torch.nn.Module:
    """The wrapper in eval mode: the TorchScript exporter restores the mode of the
    module it was given, so a wrapper left in training mode turns dropout on."""
    if spec.family == "bert":
        wrapper = EncoderWithTokenTypes(model)
    elif spec.family in ("distilbert", "roberta"):
        wrapper = Encoder(model)
    else:
        wrapper = DecoderWithPast(model) if spec.with_past else Decoder(model)
    return wrapper.eval()


def to_torch_args(spec: pi.ModelSpec, inputs: dict[str, np.ndarray]) -> tuple:
    """The wrapper's positional arguments for a peer_inputs.make_inputs() dict."""
    args = [torch.from_numpy(inputs["input_ids"]), torch.from_numpy(inputs["attention_mask"])]
    if spec.family == "bert":
        args.append(torch.from_numpy(inputs["token_type_ids"]))
    if spec.with_past:
        layers = sum(1 for n in inputs if n.endswith(".key"))
        args.append(tuple(
            (torch.from_numpy(inputs[f"past_key_values.{layer}.key"]),
             torch.from_numpy(inputs[f"past_key_values.{layer}.value"]))
            for layer in range(layers)))
    return tuple(args)


def flatten_outputs(spec: pi.ModelSpec, result) -> dict[str, np.ndarray]:
    """The wrapper's result as {ONNX output name: array}."""
    if not spec.with_past:
        name = "logits" if spec.is_decoder else "last_hidden_state"
        return {name: result.detach().numpy()}
    logits, present = result
    flat = {"logits": logits.detach().numpy()}
    for layer, (key, value) in enumerate(present):
        flat[f"present.{layer}.key"] = key.detach().numpy()
        flat[f"present.{layer}.value"] = value.detach().numpy()
    return flat
