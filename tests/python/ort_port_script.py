"""An ONNX Runtime script, as a user would write it: load a model, list its
inputs and outputs, run every data set, save the outputs.

test_ort_port.py runs this file twice — as it is, and with the import line
changed to `import shapeshift as ort` — and compares what the two saved.
Nothing else may differ between the two runs.

usage: python ort_port_script.py MODEL.onnx DATA_DIR OUT.npz
"""

import json
import sys

import numpy as np
import onnxruntime as ort

from tensor_proto import read_tensor

model_path, data_dir, out_path = sys.argv[1:4]

options = ort.SessionOptions()
options.intra_op_num_threads = 2
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
session = ort.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])

inputs = session.get_inputs()
outputs = session.get_outputs()
signature = {
    "inputs": [[i.name, i.type, i.shape] for i in inputs],
    "outputs": [[o.name, o.type, o.shape] for o in outputs],
    "providers": session.get_providers(),
}

saved = {}
for k in range(4):
    feed = {arg.name: read_tensor(f"{data_dir}/test_data_set_{k}/input_{j}.pb") for j, arg in enumerate(inputs)}
    (hidden,) = session.run(None, feed)
    saved[f"set{k}"] = hidden
    # Output selection by name, as ORT scripts do.
    (by_name,) = session.run([outputs[0].name], feed)
    saved[f"set{k}_by_name"] = by_name

np.savez(out_path, signature=np.array(json.dumps(signature)), **saved)
