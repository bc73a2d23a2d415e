"""Bad input raises the exception a Python user expects, carrying the C++
message that names the input, dim or range at fault — never a crash, a hang
or a silently changed result."""

import numpy as np
import pytest

import shapeshift
from conftest import TINY_BERT, bert_feed


def test_wrong_dtype_is_a_type_error_naming_the_input(tiny_bert):
    feed = bert_feed(1, 8)
    feed["input_ids"] = feed["input_ids"].astype(np.float64)
    with pytest.raises(TypeError, match=r"input 'input_ids' has dtype f64, expected i64"):
        tiny_bert.run(None, feed)


def test_int32_ids_are_not_silently_converted(tiny_bert):
    feed = bert_feed(1, 8)
    feed["attention_mask"] = feed["attention_mask"].astype(np.int32)
    with pytest.raises(TypeError, match=r"input 'attention_mask' has dtype i32, expected i64"):
        tiny_bert.run(None, feed)


def test_unsupported_element_type_is_a_type_error(tiny_bert):
    feed = bert_feed(1, 8)
    feed["input_ids"] = feed["input_ids"].astype(np.complex64)
    with pytest.raises(TypeError, match=r"input 'input_ids': element type complex64 is not supported"):
        tiny_bert.run(None, feed)


def test_not_an_array_is_a_type_error(tiny_bert):
    feed = bert_feed(1, 8)
    feed["input_ids"] = "hello"
    with pytest.raises(TypeError, match=r"input 'input_ids': expected an array"):
        tiny_bert.run(None, feed)


def test_lists_convert_to_the_inputs_type_as_in_onnx_runtime(tiny_bert):
    # ONNX Runtime takes nested lists (converted to the input's element type);
    # a script ported to shapeshift by its import line must run the same.
    import onnxruntime

    feed = bert_feed(2, 7)
    as_lists = {name: array.tolist() for name, array in feed.items()}
    (want,) = tiny_bert.run(None, feed)
    (got,) = tiny_bert.run(None, as_lists)
    np.testing.assert_array_equal(got, want)
    (ort_out,) = onnxruntime.InferenceSession(TINY_BERT, providers=["CPUExecutionProvider"]).run(None, as_lists)
    np.testing.assert_allclose(got, ort_out, rtol=0, atol=1e-5)


def test_a_list_the_conversion_would_change_is_refused(tiny_bert):
    # ORT truncates 1.7 to 1 for an int64 input; here it is an error naming the input.
    feed = {name: array.tolist() for name, array in bert_feed(1, 3).items()}
    feed["input_ids"][0][1] = 1.7
    with pytest.raises(TypeError, match=r"input 'input_ids' is tensor\(int64\): a list of float64 values"):
        tiny_bert.run(None, feed)
    feed = {name: array.tolist() for name, array in bert_feed(1, 3).items()}
    feed["input_ids"][0][1] = 2**70
    with pytest.raises(ValueError, match=r"input 'input_ids': the list is not a rectangular array of numbers that fit"):
        tiny_bert.run(None, feed)
    feed = {name: array.tolist() for name, array in bert_feed(1, 3).items()}
    feed["input_ids"] = [[1, 2, 3], [4]]
    with pytest.raises(ValueError, match=r"input 'input_ids': the list is not a rectangular array"):
        tiny_bert.run(None, feed)


def test_wrong_rank_names_the_input_and_rank(tiny_bert):
    feed = bert_feed(1, 8)
    feed["input_ids"] = feed["input_ids"][0]
    with pytest.raises(ValueError, match=r"input 'input_ids' has rank 1, expected 2"):
        tiny_bert.run(None, feed)


def test_dim_outside_the_declared_range_names_dim_and_range():
    session = shapeshift.InferenceSession(TINY_BERT, dims={"sequence": (1, 64)}, policy="polymorphic")
    with pytest.raises(ValueError, match=r"input 'input_ids' dim 1 \(sequence\) = 65 is outside the declared range 1\.\.64"):
        session.run(None, bert_feed(1, 65))
    # The session still serves in-range requests afterwards.
    (out,) = session.run(None, bert_feed(1, 64))
    assert out.shape == (1, 64, 64)


def test_dim_past_what_the_model_allows(tiny_bert):
    # No declared range: the position table limits the sequence, and the
    # importer's note says so.
    lo, hi = map(int, tiny_bert.prove()["domain"]["sequence"].split(".."))
    assert (lo, hi) != (1, 65536)
    assert any("sequence" in note for note in tiny_bert.notes)
    with pytest.raises(ValueError, match=r"\(sequence\) = %d is outside the declared range 1\.\.%d" % (hi + 1, hi)) as raised:
        tiny_bert.run(None, bert_feed(1, hi + 1))
    # The advice is in the session's terms, not the CLI's.
    assert "declare dims={'sequence': (lo, hi)} to choose a range" in str(raised.value)
    assert "--dim" not in str(raised.value)
    assert not any("--dim" in note for note in tiny_bert.notes)


def test_inputs_that_disagree_on_a_dim(tiny_bert):
    feed = bert_feed(1, 8)
    feed["attention_mask"] = np.ones((1, 9), dtype=np.int64)
    with pytest.raises(ValueError, match=r"input 'attention_mask' dim 1 \(sequence\) is 9 but input 'input_ids'"):
        tiny_bert.run(None, feed)


def test_missing_input_names_it(tiny_bert):
    feed = bert_feed(1, 8)
    del feed["attention_mask"]
    with pytest.raises(ValueError, match=r"required inputs \['attention_mask'\] are missing"):
        tiny_bert.run(None, feed)


def test_unknown_input_names_it(tiny_bert):
    feed = bert_feed(1, 8)
    feed["token_type_ids"] = feed["input_ids"]
    with pytest.raises(ValueError, match=r"has no input 'token_type_ids' \(its inputs: input_ids, attention_mask\)"):
        tiny_bert.run(None, feed)


def test_unknown_output_names_it(tiny_bert):
    with pytest.raises(ValueError, match=r"has no output 'logits' \(its outputs: last_hidden_state\)"):
        tiny_bert.run(["logits"], bert_feed(1, 8))


def test_feed_that_is_not_a_mapping(tiny_bert):
    with pytest.raises(TypeError, match=r"input_feed must map input names to arrays"):
        tiny_bert.run(None, [1, 2])


def test_missing_file_names_the_path(tmp_path):
    path = str(tmp_path / "nope.onnx")
    with pytest.raises(FileNotFoundError, match=r"nope\.onnx: cannot open the model file"):
        shapeshift.InferenceSession(path)


def test_garbage_bytes_are_a_value_error():
    with pytest.raises((ValueError, RuntimeError), match=r"model bytes"):
        shapeshift.InferenceSession(b"\x08\x07garbage that is no ONNX model")


def test_unknown_dim_lists_the_dims_the_model_has():
    with pytest.raises(ValueError, match=r"seq.*(batch|sequence)"):
        shapeshift.InferenceSession(TINY_BERT, dims={"seq": (1, 8)})


def test_bad_dims_value():
    with pytest.raises(ValueError, match=r"dims: sequence='x' is not a range"):
        shapeshift.InferenceSession(TINY_BERT, dims={"sequence": "x"})


def test_unknown_policy_names_it():
    with pytest.raises(ValueError, match=r"fastest"):
        shapeshift.InferenceSession(TINY_BERT, policy="fastest")


def test_unknown_provider_names_it():
    with pytest.raises(ValueError, match=r"provider 'TensorrtExecutionProvider' is not available"):
        shapeshift.InferenceSession(TINY_BERT, providers=["TensorrtExecutionProvider"])


def test_cuda_provider_without_a_gpu_is_an_error_not_a_cpu_run():
    # This build machine has no GPU (and may have no CUDA toolkit): the
    # compiler's device error, never a silent CPU session.
    try:
        session = shapeshift.InferenceSession(TINY_BERT, providers=["CUDAExecutionProvider"])
    except RuntimeError as e:
        # Said the Python way: the providers list, not the CLI's --device.
        assert "providers=['CUDAExecutionProvider']" in str(e)
        assert "providers=['CPUExecutionProvider']" in str(e)
        assert "--device" not in str(e)
    else:  # a machine with a GPU: the session is a CUDA one
        assert session.get_providers() == ["CUDAExecutionProvider"]


def test_negative_thread_count():
    options = shapeshift.SessionOptions()
    options.intra_op_num_threads = -1
    with pytest.raises(ValueError, match=r"intra_op_num_threads = -1"):
        shapeshift.InferenceSession(TINY_BERT, sess_options=options)


def test_recompile_limit_is_a_runtime_error_naming_the_limit():
    session = shapeshift.InferenceSession(TINY_BERT, policy="static", recompile_limit=1)
    session.run(None, bert_feed(1, 4))  # the initial compile
    session.run(None, bert_feed(1, 5))  # the one miss allowed
    with pytest.raises(RuntimeError, match=r"recompile limit"):
        session.run(None, bert_feed(1, 6))
    (out,) = session.run(None, bert_feed(1, 5))  # entries already compiled still serve
    assert out.shape == (1, 5, 64)
