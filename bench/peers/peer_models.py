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
    return make_zoo_config(family, s)


def make_zoo_config(family: str, s: pi.Sizes) -> transformers.PretrainedConfig:
    """The zoo's configs (issue 13): each family's defaults except the sizes, with
    the choices a published checkpoint of that family makes where the library
    default differs (noted per family)."""
    if family == "llama":
        return transformers.LlamaConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            num_key_value_heads=s.key_value_heads, max_position_embeddings=s.max_positions,
            pad_token_id=s.pad_token_id, bos_token_id=1, eos_token_id=2,
            tie_word_embeddings=False)
    if family == "qwen2":
        return transformers.Qwen2Config(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            num_key_value_heads=s.key_value_heads, max_position_embeddings=s.max_positions,
            pad_token_id=s.pad_token_id, bos_token_id=1, eos_token_id=2,
            tie_word_embeddings=True)  # as Qwen2-0.5B
    if family == "gptj":
        # Rotary embeddings on half of each 16-wide head (GPT-J-6B: 64 of 256),
        # so the pass-through part of the head is in the graph too.
        return transformers.GPTJConfig(
            vocab_size=s.vocab, n_positions=s.max_positions, n_embd=s.hidden, n_layer=s.layers,
            n_head=s.heads, n_inner=s.intermediate, rotary_dim=s.head_dim // 2,
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1, tie_word_embeddings=False)
    if family == "opt":
        return transformers.OPTConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            ffn_dim=s.intermediate, num_attention_heads=s.heads,
            max_position_embeddings=s.max_positions, word_embed_proj_dim=s.hidden,
            pad_token_id=s.pad_token_id, bos_token_id=2, eos_token_id=2)
    if family == "gpt-neo":
        # Alternating global and local (sliding-window) layers as GPT-Neo-125M;
        # a window of 16 (125M: 256 of 2048 positions) so that the test lengths
        # (37) reach past it.
        return transformers.GPTNeoConfig(
            vocab_size=s.vocab, max_position_embeddings=s.max_positions, hidden_size=s.hidden,
            num_layers=s.layers, attention_types=[[["global", "local"], s.layers // 2]],
            num_heads=s.heads, intermediate_size=s.intermediate, window_size=16,
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1)
    if family == "gpt-neox":
        # Pythia's choices: rotary on a quarter of each head (rotate_half over 4 of
        # 16 channels, the rest passed through), parallel attention and MLP
        # residuals, untied embeddings.
        return transformers.GPTNeoXConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, intermediate_size=s.intermediate,
            max_position_embeddings=s.max_positions, rotary_pct=0.25,
            use_parallel_residual=True, tie_word_embeddings=False,
            bos_token_id=0, eos_token_id=0)
    if family == "phi":
        # Phi-2's choices: rotary on half of each head (rotate_half), gelu_new,
        # parallel attention and MLP sharing one LayerNorm.
        return transformers.PhiConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            max_position_embeddings=s.max_positions, partial_rotary_factor=0.5,
            hidden_act="gelu_new", tie_word_embeddings=False,
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1)
    if family == "mistral":
        # Sliding-window attention (Mistral-7B: 4096 of 32768; here 16, so that
        # the test lengths reach past it), grouped-query 4 / 2 heads.
        return transformers.MistralConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            num_key_value_heads=s.key_value_heads, max_position_embeddings=s.max_positions,
            sliding_window=16, pad_token_id=s.pad_token_id, bos_token_id=1, eos_token_id=2,
            tie_word_embeddings=False)
    if family == "gemma":
        # Gemma-2B's choices: multi-query attention (1 key/value head), GeGLU
        # (tanh GELU), RMSNorm scaled by (1 + weight), embeddings scaled by
        # sqrt(hidden), tied LM head.
        return transformers.GemmaConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            num_key_value_heads=s.key_value_heads, head_dim=s.head_dim,
            hidden_activation="gelu_pytorch_tanh", max_position_embeddings=s.max_positions,
            pad_token_id=s.pad_token_id, bos_token_id=2, eos_token_id=1)
    if family == "bloom":
        # ALiBi position biases (no position embeddings), embedding LayerNorm.
        return transformers.BloomConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, n_layer=s.layers, n_head=s.heads,
            pad_token_id=s.pad_token_id, bos_token_id=1, eos_token_id=2)
    if family == "gpt-bigcode":
        # StarCoder's multi-query attention (one key/value head for all queries).
        return transformers.GPTBigCodeConfig(
            vocab_size=s.vocab, n_positions=s.max_positions, n_embd=s.hidden, n_layer=s.layers,
            n_head=s.heads, n_inner=s.intermediate, multi_query=True,
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1)
    if family == "falcon":
        # Falcon-7B's choices: multi-query attention, attention and MLP in
        # parallel off one LayerNorm, rotary, no biases.
        return transformers.FalconConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, multi_query=True, new_decoder_architecture=False,
            parallel_attn=True, bias=False, alibi=False, max_position_embeddings=s.max_positions,
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1)
    if family == "stablelm":
        # StableLM's partial rotary (a quarter of each head), grouped-query 4 / 2.
        return transformers.StableLmConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            num_key_value_heads=s.key_value_heads, partial_rotary_factor=0.25,
            max_position_embeddings=s.max_positions, tie_word_embeddings=False,
            bos_token_id=0, eos_token_id=0)
    if family == "mpt":
        # MPT-7B's ALiBi (no position embeddings), no biases.
        return transformers.MptConfig(
            d_model=s.hidden, n_heads=s.heads, n_layers=s.layers, expansion_ratio=4,
            max_seq_len=s.max_positions, vocab_size=s.vocab, no_bias=True)
    if family == "deberta-v2":
        # DeBERTa-v3-base's attention: relative positions only (no absolute
        # position embeddings), log buckets, c2p and p2c terms, shared keys.
        return transformers.DebertaV2Config(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, intermediate_size=s.intermediate,
            max_position_embeddings=s.max_positions, type_vocab_size=0,
            relative_attention=True, position_buckets=256, max_relative_positions=-1,
            pos_att_type=["p2c", "c2p"], position_biased_input=False, norm_rel_ebd="layer_norm",
            share_att_key=True, pad_token_id=s.pad_token_id)
    if family == "t5-encoder":
        # FLAN-T5's feed-forward (gated GELU) and T5's relative-position buckets.
        return transformers.T5Config(
            vocab_size=s.vocab, d_model=s.hidden, d_kv=s.head_dim, d_ff=s.intermediate,
            num_layers=s.layers, num_heads=s.heads, relative_attention_num_buckets=32,
            relative_attention_max_distance=128, feed_forward_proj="gated-gelu",
            pad_token_id=s.pad_token_id, eos_token_id=1, decoder_start_token_id=0)
    if family == "bart":
        return transformers.BartConfig(
            vocab_size=s.vocab, d_model=s.hidden, encoder_layers=s.layers, decoder_layers=s.layers,
            encoder_attention_heads=s.heads, decoder_attention_heads=s.heads,
            encoder_ffn_dim=s.intermediate, decoder_ffn_dim=s.intermediate,
            max_position_embeddings=s.max_positions, pad_token_id=s.pad_token_id,
            bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    if family == "electra":
        return transformers.ElectraConfig(
            vocab_size=s.vocab, embedding_size=s.embedding, hidden_size=s.hidden,
            num_hidden_layers=s.layers, num_attention_heads=s.heads,
            intermediate_size=s.intermediate, max_position_embeddings=s.max_positions,
            pad_token_id=s.pad_token_id)
    if family == "sentence-bert":
        # all-MiniLM-L6-v2 is a BERT (its encoder at the zoo's tiny sizes).
        return transformers.BertConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, intermediate_size=s.intermediate,
            max_position_embeddings=s.max_positions, pad_token_id=s.pad_token_id)
    if family == "albert":
        # One shared layer group (ALBERT's cross-layer sharing), gelu_new (tanh).
        return transformers.AlbertConfig(
            vocab_size=s.vocab, embedding_size=s.embedding, hidden_size=s.hidden,
            num_hidden_layers=s.layers, num_hidden_groups=1, num_attention_heads=s.heads,
            intermediate_size=s.intermediate, max_position_embeddings=s.max_positions,
            pad_token_id=s.pad_token_id, bos_token_id=2, eos_token_id=3)
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
        "llama": transformers.LlamaForCausalLM,
        "qwen2": transformers.Qwen2ForCausalLM,
        "gptj": transformers.GPTJForCausalLM,
        "opt": transformers.OPTForCausalLM,
        "gpt-neo": transformers.GPTNeoForCausalLM,
        "gpt-neox": transformers.GPTNeoXForCausalLM,
        "phi": transformers.PhiForCausalLM,
        "mistral": transformers.MistralForCausalLM,
        "gemma": transformers.GemmaForCausalLM,
        "bloom": transformers.BloomForCausalLM,
        "gpt-bigcode": transformers.GPTBigCodeForCausalLM,
        "falcon": transformers.FalconForCausalLM,
        "stablelm": transformers.StableLmForCausalLM,
        "mpt": transformers.MptForCausalLM,
        "deberta-v2": transformers.DebertaV2Model,
        "t5-encoder": transformers.T5EncoderModel,
        "bart": transformers.BartModel,
        "electra": transformers.ElectraModel,
        "albert": transformers.AlbertModel,
        "sentence-bert": transformers.BertModel,
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


class SentenceEmbedding(torch.nn.Module):
    """A sentence-transformers model (Transformer, Pooling(mean), Normalize) as
    its modules compute it: input_ids, attention_mask -> sentence_embedding
    [batch, hidden], the mean of the token embeddings the mask keeps (the
    mask's count clamped to 1e-9), L2-normalized (torch.nn.functional.normalize,
    eps 1e-12)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        token_embeddings = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                      return_dict=True).last_hidden_state
        mask = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).to(token_embeddings.dtype)
        sum_embeddings = torch.sum(token_embeddings * mask, 1)
        sum_mask = torch.clamp(mask.sum(1), min=1e-9)
        return torch.nn.functional.normalize(sum_embeddings / sum_mask, p=2, dim=1)


class Seq2Seq(torch.nn.Module):
    """BART: input_ids, attention_mask (encoder), decoder_input_ids -> the decoder's
    last_hidden_state (the whole encoder-decoder in one graph, no cache; no LM
    head, which is one more MatMul and would take the tiny file past 2 MB)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          decoder_input_ids=decoder_input_ids, use_cache=False,
                          return_dict=True).last_hidden_state


class Decoder(torch.nn.Module):
    """GPT-2 (and the zoo's causal LMs) without cache: input_ids, attention_mask -> logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False, return_dict=True).logits


class DecoderWithPast(torch.nn.Module):
    """GPT-2 (Llama, Qwen2) with cache: input_ids, attention_mask, per-layer (key,
    value) of shape [batch, key/value heads, past_sequence, head_dim] -> logits,
    per-layer present (key, value).

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
    if spec.kind == "encoder":
        wrapper = EncoderWithTokenTypes(model) if spec.has_token_types else Encoder(model)
    elif spec.kind == "embedding":
        wrapper = SentenceEmbedding(model)
    elif spec.kind == "seq2seq":
        wrapper = Seq2Seq(model)
    else:
        wrapper = DecoderWithPast(model) if spec.with_past else Decoder(model)
    return wrapper.eval()


def to_torch_args(spec: pi.ModelSpec, inputs: dict[str, np.ndarray]) -> tuple:
    """The wrapper's positional arguments for a peer_inputs.make_inputs() dict."""
    args = [torch.from_numpy(inputs["input_ids"]), torch.from_numpy(inputs["attention_mask"])]
    if spec.has_token_types:
        args.append(torch.from_numpy(inputs["token_type_ids"]))
    if spec.kind == "seq2seq":
        args.append(torch.from_numpy(inputs["decoder_input_ids"]))
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
        name = "logits" if spec.is_decoder else "sentence_embedding" if spec.kind == "embedding" else "last_hidden_state"
        return {name: result.detach().numpy()}
    logits, present = result
    flat = {"logits": logits.detach().numpy()}
    for layer, (key, value) in enumerate(present):
        flat[f"present.{layer}.key"] = key.detach().numpy()
        flat[f"present.{layer}.value"] = value.detach().numpy()
    return flat
