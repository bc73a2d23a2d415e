"""InferenceSession's contract: ORT's signature, one compile for every length,
zero-copy inputs and outputs, the GIL released and concurrent runs safe."""

import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import shapeshift
from conftest import TINY_BERT, bert_feed


def test_signature_as_ort_describes_it(tiny_bert):
    inputs = tiny_bert.get_inputs()
    assert [(i.name, i.type) for i in inputs] == [("input_ids", "tensor(int64)"), ("attention_mask", "tensor(int64)")]
    assert inputs[0].shape == ["batch", "sequence"]
    (out,) = tiny_bert.get_outputs()
    assert (out.name, out.type, out.shape) == ("last_hidden_state", "tensor(float)", ["batch", "sequence", 64])
    assert tiny_bert.get_providers() == ["CPUExecutionProvider"]


def test_every_length_with_one_compile(tiny_bert):
    before = tiny_bert.metrics()["compiles"]
    for seq in (1, 2, 7, 8, 33, 100):
        (out,) = tiny_bert.run(None, bert_feed(2, seq, seed=seq))
        assert out.shape == (2, seq, 64) and out.dtype == np.float32
        assert np.isfinite(out).all()
    assert tiny_bert.metrics()["compiles"] == before == 1


def test_bytes_and_path_give_the_same_outputs(tiny_bert):
    with open(TINY_BERT, "rb") as f:
        from_bytes = shapeshift.InferenceSession(f.read(), policy="polymorphic")
    feed = bert_feed(1, 9)
    np.testing.assert_array_equal(from_bytes.run(None, feed)[0], tiny_bert.run(None, feed)[0])


def test_outputs_own_the_tensor_storage(tiny_bert):
    (out,) = tiny_bert.run(None, bert_feed(1, 8))
    # The array does not own a numpy buffer: its base is the capsule holding
    # the C++ tensor (no copy was made); it is writable like ORT's outputs.
    assert not out.flags.owndata
    assert out.base is not None
    assert out.flags.writeable and out.flags.c_contiguous
    out[...] = 0  # the storage is the caller's now
    (again,) = tiny_bert.run(None, bert_feed(1, 8))
    assert np.abs(again).sum() > 0


def test_contiguous_inputs_are_used_in_place(tiny_bert):
    copies = tiny_bert._model.input_copies
    tiny_bert.run(None, bert_feed(2, 16))
    assert tiny_bert._model.input_copies == copies


def test_non_contiguous_input_is_copied_and_gives_the_same_result(tiny_bert):
    feed = bert_feed(2, 16)
    wide = np.zeros((2, 32), dtype=np.int64)
    wide[:, ::2] = feed["input_ids"]
    strided = dict(feed, input_ids=wide[:, ::2])
    assert not strided["input_ids"].flags.c_contiguous
    copies = tiny_bert._model.input_copies
    np.testing.assert_array_equal(tiny_bert.run(None, strided)[0], tiny_bert.run(None, feed)[0])
    assert tiny_bert._model.input_copies == copies + 1


def test_buffer_protocol_and_read_only_inputs(tiny_bert):
    feed = bert_feed(1, 8)
    expected = tiny_bert.run(None, feed)[0]
    ro = {k: v.copy() for k, v in feed.items()}
    for v in ro.values():
        v.flags.writeable = False
    np.testing.assert_array_equal(tiny_bert.run(None, ro)[0], expected)
    mv = {k: memoryview(v) for k, v in feed.items()}
    np.testing.assert_array_equal(tiny_bert.run(None, mv)[0], expected)


def test_dlpack_inputs(tiny_bert):
    class DLPackOnly:  # anything with __dlpack__, as a torch tensor has
        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    feed = bert_feed(1, 8)
    expected = tiny_bert.run(None, feed)[0]
    wrapped = {k: DLPackOnly(v) for k, v in feed.items()}
    copies = tiny_bert._model.input_copies
    np.testing.assert_array_equal(tiny_bert.run(None, wrapped)[0], expected)
    assert tiny_bert._model.input_copies == copies


def test_concurrent_runs_from_threads(tiny_bert):
    lengths = [1, 3, 8, 17, 40, 64, 5, 12]
    feeds = [bert_feed(1 + i % 3, seq, seed=i) for i, seq in enumerate(lengths)]
    expected = [tiny_bert.run(None, f)[0] for f in feeds]
    errors, mismatches = [], []
    start = threading.Barrier(len(feeds))

    def worker(i):
        try:
            start.wait()
            for _ in range(10):
                (out,) = tiny_bert.run(None, feeds[i])
                if not np.array_equal(out, expected[i]):
                    mismatches.append(i)
        except Exception as e:  # reported below: a thread's exception must fail the test
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and mismatches == []


def test_run_releases_the_gil(tiny_bert):
    # With a switch interval longer than the test, the interpreter never takes
    # the GIL from a thread: the main thread can run Python code while the
    # worker is inside run() only if run() released it. Held, the main thread
    # would wake only after the worker's last run (finished == runs).
    feed = bert_feed(8, 512)
    arrays = [feed["input_ids"], feed["attention_mask"]]
    runs, finished = 5, []

    def worker():
        for _ in range(runs):
            tiny_bert._model.run(arrays)
            finished.append(1)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        t = threading.Thread(target=worker)
        t.start()  # returns once this thread gets the GIL back
        seen = len(finished)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert seen < runs
    assert len(finished) == runs


def test_session_options_are_accepted():
    options = shapeshift.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = shapeshift.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = shapeshift.InferenceSession(TINY_BERT, sess_options=options, providers=["CPUExecutionProvider"])
    assert session.get_session_options() is options
    (out,) = session.run(None, bert_feed(1, 4), shapeshift.RunOptions())
    assert out.shape == (1, 4, 64)


_THREADS_SCRIPT = """
import os, sys, numpy as np, shapeshift
def threads(): return len(os.listdir("/proc/self/task"))
before = threads()
options = shapeshift.SessionOptions()
options.intra_op_num_threads = int(sys.argv[2])
session = shapeshift.InferenceSession(sys.argv[1], sess_options=options, policy="polymorphic")
started = []
for seq in (8, 64, 8, 1, 64):
    ids = np.ones((2, seq), dtype=np.int64)
    session.run(None, {"input_ids": ids, "attention_mask": ids})
    started.append(threads() - before)
print(" ".join(map(str, started)))
"""


def _threads_started(intra_op_num_threads):
    # A fresh process whose OpenMP default is 4 threads, whatever the machine has.
    # Returns the threads the process has started so far, after each request.
    env = dict(os.environ, OMP_NUM_THREADS="4")
    out = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT, TINY_BERT, str(intra_op_num_threads)],
                         env=env, capture_output=True, text=True, check=True)
    return [int(n) for n in out.stdout.split()]


def test_intra_op_num_threads_bounds_the_compiled_primitives_too():
    # oneDNN keeps the thread count a primitive was created with: a compile
    # that ignored intra_op_num_threads ran every GEMM on OpenMP's default
    # team (3 worker threads here) even with intra_op_num_threads = 1.
    # The count is the same after every request: a region that forked fewer
    # threads than the one before (a 2-panel skinny GEMM between 4-thread
    # oneDNN GEMMs) made libgomp end the surplus workers and start them again
    # on the next request, every request.
    assert _threads_started(1) == [0] * 5
    assert _threads_started(2) == [1] * 5
    assert _threads_started(0) == [3] * 5


def test_cache_dir_lets_a_second_session_compile_nothing(tmp_path):
    first = shapeshift.InferenceSession(TINY_BERT, policy="polymorphic", cache_dir=tmp_path)
    expected = first.run(None, bert_feed(1, 6))[0]
    assert first.metrics()["compiles"] == 1
    second = shapeshift.InferenceSession(TINY_BERT, policy="polymorphic", cache_dir=str(tmp_path))
    m = second.metrics()
    assert (m["compiles"], m["cache_loads"]) == (0, 1)
    np.testing.assert_array_equal(second.run(None, bert_feed(1, 6))[0], expected)


def test_a_model_files_first_session_with_a_cache_dir_tunes_its_gemms_once(tmp_path):
    first = shapeshift.InferenceSession(TINY_BERT, cache_dir=tmp_path)
    tuned = [n for n in first.notes if n.startswith("GEMM tuning: measured ")]
    assert len(tuned) == 1, first.notes
    assert "measured 4 of this model's 4 GEMM class(es)" in tuned[0]
    files = list((tmp_path / "tuning").glob("*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text())["models"][0].startswith(os.path.realpath(TINY_BERT) + ", ")
    expected = first.run(None, bert_feed(1, 6))[0]
    second = shapeshift.InferenceSession(TINY_BERT, cache_dir=tmp_path)
    assert not [n for n in second.notes if n.startswith("GEMM tuning:")], second.notes
    assert any("GEMM choices from this machine's tuning" in n for n in second.notes)
    np.testing.assert_array_equal(second.run(None, bert_feed(1, 6))[0], expected)
    # A budget of 0 never measures; a bad one is a ValueError naming it.
    off = shapeshift.InferenceSession(TINY_BERT, cache_dir=tmp_path / "off", tune_budget_s=0)
    assert not [n for n in off.notes if "GEMM" in n], off.notes
    assert not (tmp_path / "off" / "tuning").exists()
    with pytest.raises(ValueError, match="tune_budget_s"):
        shapeshift.InferenceSession(TINY_BERT, cache_dir=tmp_path, tune_budget_s=-1)
    # Bytes have no name to remember: they read the file, never measure.
    with open(TINY_BERT, "rb") as f:
        from_bytes = shapeshift.InferenceSession(f.read(), cache_dir=tmp_path / "other")
    assert not [n for n in from_bytes.notes if "GEMM" in n], from_bytes.notes


def _matmul_model(path, k=1024, n=512):
    """x[batch, k] @ w[k, n] + b: w is 2 MiB, over the spill threshold."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    w = rng.standard_normal((k, n), dtype=np.float32) / np.float32(np.sqrt(k))  # outputs of order 1
    b = rng.standard_normal((n,), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "spill",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return k


def _host_reads_long_rows_from_the_packed_copy():
    """Whether long requests read the packed copy here, so the plain weights'
    pages go back once packed: on every host with a skinny GEMM core (AVX2
    with FMA, or AVX-512: oneDNN's blocked GEMM over the AVX-512 panels, the
    skinny GEMM itself over the AVX2 ones; tests/support/host_long_rows.h says
    the same for the C++ tests). Read from the CPU's flags, not from shapeshift."""
    with open("/proc/cpuinfo") as f:
        flags = set(next((line.split() for line in f if line.startswith("flags")), []))
    return "avx512f" in flags or {"avx2", "fma"} <= flags


def _disk_dir(name):
    """A fresh directory name beside the CLI in the build tree (ctest sets
    SHAPESHIFT_CLI), else in the working directory: a disk, where tmp_path may
    be on tmpfs (which a weights dir refuses)."""
    build_dir = os.path.dirname(os.environ["SHAPESHIFT_CLI"]) if "SHAPESHIFT_CLI" in os.environ else os.getcwd()
    return os.path.join(build_dir, f"{name}_{os.getpid()}")


def test_weights_dir_keeps_the_weights_on_disk_with_ort_results(tmp_path):
    import onnxruntime as ort

    path = str(tmp_path / "matmul.onnx")
    k = _matmul_model(path)
    weights_dir = _disk_dir("weights_py")
    on_disk = shapeshift.InferenceSession(path, policy="polymorphic", weights_dir=weights_dir)
    in_memory = shapeshift.InferenceSession(path, policy="polymorphic", weights_in_memory=True)
    oracle = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    w = on_disk.weights()
    assert w["dir"] == weights_dir and w["spilled_constants"] == 1 and w["spilled_bytes"] == k * 512 * 4
    if _host_reads_long_rows_from_the_packed_copy():
        assert w["released_bytes"] >= k * 512 * 4 - 4096
    else:
        assert w["released_bytes"] == 0  # no skinny GEMM: oneDNN reads the plain weights
    assert in_memory.weights() == {"dir": "", "spilled_constants": 0, "spilled_bytes": 0, "released_bytes": 0}
    assert os.listdir(weights_dir) == []  # the file is unlinked
    for batch in (1, 3, 40, 300):
        x = np.random.default_rng(batch).standard_normal((batch, k), dtype=np.float32)
        (got,) = on_disk.run(None, {"x": x})
        (want,) = oracle.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got, in_memory.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    del on_disk
    os.rmdir(weights_dir)


def test_by_default_the_weights_go_beside_the_cache_as_with_the_cli(tmp_path):
    path = str(tmp_path / "matmul.onnx")
    k = _matmul_model(path)
    cache_dir = _disk_dir("cache_py")
    try:
        sess = shapeshift.InferenceSession(path, policy="polymorphic", cache_dir=cache_dir)
        w = sess.weights()
        assert w["dir"] == os.path.join(cache_dir, "weights") and w["spilled_bytes"] == k * 512 * 4
        assert os.listdir(w["dir"]) == []  # the file is unlinked
        x = np.ones((2, k), dtype=np.float32)
        memory = shapeshift.InferenceSession(path, policy="polymorphic", cache_dir=cache_dir, weights_in_memory=True)
        assert memory.weights()["dir"] == ""
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], memory.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        del sess
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    # Without a cache_dir: under the default cache directory, as `shapeshift run`.
    default_cache = tmp_path / "xdg"
    env = dict(os.environ, XDG_CACHE_HOME=str(default_cache))
    probe = (
        "import shapeshift, sys\n"
        "s = shapeshift.InferenceSession(sys.argv[1], policy='polymorphic')\n"
        "w = s.weights()\n"
        "print(w['dir'] or [n for n in s.notes if 'memory' in n][0])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, path], env=env, capture_output=True, text=True, check=True)
    # tmp_path may be tmpfs, which a weights dir refuses with a note: either
    # way the default named the directory under XDG_CACHE_HOME.
    assert str(default_cache / "shapeshift" / "weights") in out.stdout, out.stdout


def test_weights_dir_and_weights_in_memory_are_exclusive(tmp_path):
    path = str(tmp_path / "matmul.onnx")
    _matmul_model(path)
    with pytest.raises(ValueError, match="exclusive"):
        shapeshift.InferenceSession(path, weights_dir=str(tmp_path), weights_in_memory=True)
    with pytest.raises(ValueError, match="weights_in_memory=True"):
        shapeshift.InferenceSession(path, weights_dir="")


def test_weights_dir_that_cannot_take_the_file_keeps_them_in_memory(tmp_path):
    path = str(tmp_path / "matmul.onnx")
    _matmul_model(path)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    sess = shapeshift.InferenceSession(path, policy="polymorphic", weights_dir=not_a_dir)
    assert sess.weights()["dir"] == ""
    assert any("kept in memory" in note for note in sess.notes)
    x = np.ones((2, 1024), dtype=np.float32)
    assert sess.run(None, {"x": x})[0].shape == (2, 512)
