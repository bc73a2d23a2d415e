"""torch.compile(backend="shapeshift", dynamic=True): Hugging Face BERT and GPT-2 (tiny configs,
random weights) over 20 sequence lengths with one Dynamo compile and one shapeshift compile,
outputs equal to eager; what the backend returns for sizes, pass-through inputs and repeated
outputs; an op shapeshift cannot compile is an error naming it, never a run in eager."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import shapeshift.torch as sst  # noqa: E402
from torch._dynamo.exc import BackendCompilerFailed  # noqa: E402

BATCH = 3
# 20 lengths; none is 0 or 1 (Dynamo specializes those) and the first differs from BATCH
# (Dynamo gives equal sizes of the first call one symbol).
LENGTHS = [5, 2, 17, 9, 31, 4, 12, 40, 7, 23, 3, 28, 11, 36, 6, 19, 14, 33, 8, 25]
TOL = 1e-4


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _new_graphs(before):
    """The CompiledGraphs the backend made since before (a list of compiled_graphs())."""
    return [g for g in sst.compiled_graphs() if not any(g is b for b in before)]


def _feed(seq, seed, vocab=100):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (BATCH, seq), generator=g)
    mask = torch.ones_like(ids)
    mask[1, seq - seq // 3:] = 0  # a padded row
    return ids, mask


def _gpt2():
    config = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64,
                                     use_cache=False, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    return transformers.GPT2Model(config).eval()


def _serve(model, compiled, extra):
    """Runs every length through compiled and eager; the largest difference over all outputs."""
    worst = 0.0
    with torch.no_grad():
        for k, seq in enumerate(LENGTHS):
            ids, mask = _feed(seq, seed=k)
            got = compiled(input_ids=ids, attention_mask=mask, **extra)
            want = model(input_ids=ids, attention_mask=mask, **extra)
            assert got.last_hidden_state.shape == (BATCH, seq, 32)
            pairs = [(got.last_hidden_state, want.last_hidden_state)]
            if "pooler_output" in want:
                pairs.append((got.pooler_output, want.pooler_output))
            for a, b in pairs:
                assert a.dtype == b.dtype and a.shape == b.shape
                worst = max(worst, (a - b).abs().max().item())
    return worst


def test_backend_is_registered_under_its_name():
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    assert "shapeshift" in list_backends(exclude_tags=())
    assert lookup_backend("shapeshift") is sst.backend


def test_bert_twenty_lengths_one_dynamo_and_one_shapeshift_compile():
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    before = sst.compiled_graphs()
    compiled = torch.compile(model, backend="shapeshift", dynamic=True)
    worst = _serve(model, compiled, {})
    graphs = _new_graphs(before)
    assert len(graphs) == 1  # one backend call: Dynamo compiled once
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    (graph,) = graphs
    assert graph.session.metrics()["compiles"] == 1
    # The sequence is declared with Dynamo's range (its guard from the position embeddings); the
    # batch, unbounded in Dynamo, is left to the session's default range.
    assert list(graph.dims.values()) == [(2, 64)]
    # Both inputs are [batch, sequence] with Dynamo's symbols as the ONNX dim names.
    ids_shape, mask_shape = (i.shape for i in graph.session.get_inputs())
    assert ids_shape == mask_shape and all(isinstance(d, str) for d in ids_shape)
    assert ids_shape[1] in graph.dims and ids_shape[0] not in graph.dims
    print(f"bert: max |compiled - eager| = {worst:.3g} over {len(LENGTHS)} lengths")
    assert worst <= TOL


def test_gpt2_twenty_lengths_with_mark_dynamic_range():
    model = _gpt2()
    calls = []

    def counting_backend(gm, example_inputs, **kwargs):
        calls.append(gm)
        return sst.backend(gm, example_inputs, **kwargs)

    before = sst.compiled_graphs()
    compiled = torch.compile(model, backend=counting_backend, dynamic=True)
    # The first call's tensors carry the declared range of the sequence dim.
    ids, mask = _feed(LENGTHS[0], seed=0)
    torch._dynamo.mark_dynamic(ids, 1, min=2, max=64)
    torch._dynamo.mark_dynamic(mask, 1, min=2, max=64)
    with torch.no_grad():
        first = compiled(input_ids=ids, attention_mask=mask, use_cache=False)
        want = model(input_ids=ids, attention_mask=mask, use_cache=False)
    assert (first.last_hidden_state - want.last_hidden_state).abs().max().item() <= TOL
    worst = _serve(model, compiled, {"use_cache": False})
    assert len(calls) == 1  # Dynamo compiled once
    graphs = _new_graphs(before)
    assert len(graphs) == 1
    (graph,) = graphs
    assert graph.session.metrics()["compiles"] == 1
    assert (2, 64) in graph.dims.values()
    print(f"gpt2: max |compiled - eager| = {worst:.3g} over {len(LENGTHS)} lengths")
    assert worst <= TOL


def test_unbounded_dim_takes_the_range_the_model_serves():
    # Dynamo bounds GPT-2's sequence by nothing; the session narrows it to the position table.
    model = _gpt2()
    before = sst.compiled_graphs()
    compiled = torch.compile(model, backend="shapeshift", dynamic=True)
    with torch.no_grad():
        for seq in (5, 64):
            ids, mask = _feed(seq, seed=seq)
            got = compiled(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            want = model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            assert (got - want).abs().max().item() <= TOL
        (graph,) = _new_graphs(before)
        assert graph.dims == {}
        assert any("limited to 1..64" in note and "wpe" in note for note in graph.session.notes)
        ids, mask = _feed(65, seed=0)
        with pytest.raises(ValueError, match="= 65 is outside the declared range 1..64"):
            compiled(input_ids=ids, attention_mask=mask, use_cache=False)


def test_max_dim_declares_unbounded_dims():
    before = sst.compiled_graphs()
    compiled = torch.compile(lambda x: torch.sigmoid(x) + x, backend="shapeshift", dynamic=True,
                             options={"max_dim": 16})
    for n in (3, 16):
        x = torch.randn(n, 5)
        torch.testing.assert_close(compiled(x), torch.sigmoid(x) + x)
    (graph,) = _new_graphs(before)
    assert sorted(graph.dims.values()) == [(2, 16), (2, 16)]
    # Dynamo's guards admit 17; the session's declared range does not.
    with pytest.raises(ValueError, match="= 17 is outside the declared range 2..16"):
        compiled(torch.randn(17, 5))


def test_outputs_keep_the_graph_structure():
    def f(x, w):
        z = torch.relu(x @ w)
        return z, z, x.shape[1] * 2, x, (z * 2).sum(dim=1)

    w = torch.randn(5, 4)
    before = sst.compiled_graphs()
    compiled = torch.compile(f, backend="shapeshift", dynamic=True)
    for n in (3, 6, 9, 14):
        x = torch.randn(n, 5)
        got, want = compiled(x, w), f(x, w)
        assert len(got) == len(want) == 5
        assert got[2] == want[2] == 10 and isinstance(got[2], int)
        assert got[3] is x
        for k in (0, 1, 4):
            assert got[k].shape == want[k].shape
            torch.testing.assert_close(got[k], want[k], atol=1e-5, rtol=1e-5)
    assert len(_new_graphs(before)) == 1


def test_a_graph_with_only_size_outputs_compiles_nothing():
    def f(x):
        return x, x.shape[0] + 1

    before = sst.compiled_graphs()
    compiled = torch.compile(f, backend="shapeshift", dynamic=True)
    for n in (3, 8):
        x = torch.randn(n, 4)
        got = compiled(x)
        assert got[0] is x and got[1] == n + 1
    (graph,) = _new_graphs(before)  # Dynamo still hands the backend a graph (of sizes)
    assert graph.session is None


def test_contiguous_inputs_are_not_copied():
    def f(x):
        return torch.tanh(x) * 3

    before = sst.compiled_graphs()
    compiled = torch.compile(f, backend="shapeshift", dynamic=True)
    for n in (4, 7, 12):
        x = torch.randn(n, 6)
        torch.testing.assert_close(compiled(x), f(x))
    (graph,) = _new_graphs(before)
    # Contiguous CPU tensors went in through DLPack as they are.
    assert graph.session._model.input_copies == 0
    # A transposed input fails Dynamo's stride guard (a second graph); it is the one case the
    # session copies.
    y = torch.randn(6, 5).t()
    torch.testing.assert_close(compiled(y), f(y))
    graphs = _new_graphs(before)
    assert len(graphs) == 2 and graphs[1].session._model.input_copies == 1


def test_unsupported_op_is_an_error_naming_it():
    def f(x):
        return torch.topk(x * 2, 3).values + 1

    compiled = torch.compile(f, backend="shapeshift", dynamic=True)
    with pytest.raises(BackendCompilerFailed) as info:
        compiled(torch.randn(4, 9))
    message = str(info.value)
    assert "unsupported op" in message and "'TopK'" in message
    assert "topk" in message  # the torch op behind the ONNX node
    assert isinstance(info.value.inner_exception, sst.ShapeshiftBackendError)


def test_changed_weights_are_an_error_not_a_stale_result():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).eval()
    compiled = torch.compile(model, backend="shapeshift", dynamic=True)
    with torch.no_grad():
        x = torch.randn(3, 8)
        torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
        model[0].weight.add_(1.0)
        with pytest.raises(RuntimeError, match="weight.*has changed"):
            compiled(torch.randn(5, 8))


def test_unknown_option_is_an_error():
    compiled = torch.compile(lambda x: x + 1, backend="shapeshift", dynamic=True, options={"polcy": "auto"})
    with pytest.raises(BackendCompilerFailed, match="unknown option.*polcy"):
        compiled(torch.randn(3, 4))
