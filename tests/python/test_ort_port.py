"""The ORT-port test: one ONNX Runtime script (ort_port_script.py), run against
onnxruntime and against shapeshift with only its import line changed, gives the
same outputs on the shared tiny BERT exports, and both match the expected
outputs recorded from PyTorch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tensor_proto import read_tensor

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "data", "models")
DATA = os.path.join(MODELS, "tiny_bert_data")
ORT_IMPORT = "import onnxruntime as ort\n"


def run_script(tmp_path, engine, model):
    source = open(os.path.join(HERE, "ort_port_script.py")).read()
    assert source.count(ORT_IMPORT) == 1
    if engine == "shapeshift":
        source = source.replace(ORT_IMPORT, "import shapeshift as ort\n")
    script = tmp_path / f"port_{engine}.py"
    script.write_text(source)
    out = tmp_path / f"{engine}.npz"
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, str(script), os.path.join(MODELS, model), DATA, str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, f"{engine}: {done.stderr}"
    return np.load(out)


@pytest.mark.parametrize("model", ["tiny_bert_opset14.onnx", "tiny_bert_opset17.onnx"])
def test_same_script_same_outputs(tmp_path, model):
    ort_out = run_script(tmp_path, "onnxruntime", model)
    ss_out = run_script(tmp_path, "shapeshift", model)
    ort_sig = json.loads(str(ort_out["signature"]))
    ss_sig = json.loads(str(ss_out["signature"]))
    # Names, types and shapes (dim names as strings) exactly as ORT gives them.
    assert ss_sig == ort_sig
    for k in range(4):
        expected = read_tensor(os.path.join(DATA, f"test_data_set_{k}", "output_0.pb"))
        ours, theirs = ss_out[f"set{k}"], ort_out[f"set{k}"]
        assert ours.shape == theirs.shape == expected.shape
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5, err_msg=f"set {k}: shapeshift vs onnxruntime")
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-5, err_msg=f"set {k}: shapeshift vs PyTorch")
        np.testing.assert_array_equal(ss_out[f"set{k}_by_name"], ours)
