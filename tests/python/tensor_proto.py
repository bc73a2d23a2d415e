"""Reads the ONNX backend-test tensors (tests/data/models/tiny_bert_data/*/input_K.pb)
without the onnx package: a message class for TensorProto's fields that the
test data uses, built from a descriptor with protobuf (ONNX Runtime's own
dependency). Test support only."""

from __future__ import annotations

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
# onnx.proto's field numbers and TensorProto.DataType values.
_FIELDS = [
    ("dims", 1, _F.TYPE_INT64, _F.LABEL_REPEATED),
    ("data_type", 2, _F.TYPE_INT32, _F.LABEL_OPTIONAL),
    ("float_data", 4, _F.TYPE_FLOAT, _F.LABEL_REPEATED),
    ("int32_data", 5, _F.TYPE_INT32, _F.LABEL_REPEATED),
    ("int64_data", 7, _F.TYPE_INT64, _F.LABEL_REPEATED),
    ("name", 8, _F.TYPE_STRING, _F.LABEL_OPTIONAL),
    ("raw_data", 9, _F.TYPE_BYTES, _F.LABEL_OPTIONAL),
]
_DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}


def _message_class():
    f = descriptor_pb2.FileDescriptorProto(name="shapeshift_test_tensor.proto", package="shapeshift_test")
    m = f.message_type.add(name="TensorProto")
    for name, number, type_, label in _FIELDS:
        m.field.add(name=name, number=number, type=type_, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shapeshift_test.TensorProto"))


_TensorProto = _message_class()


def read_tensor(path: str) -> np.ndarray:
    t = _TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    dtype = _DTYPES[t.data_type]
    if t.raw_data:
        values = np.frombuffer(t.raw_data, dtype=dtype).copy()
    elif dtype == np.float32:
        values = np.array(t.float_data, dtype=dtype)
    elif dtype == np.int64:
        values = np.array(t.int64_data, dtype=dtype)
    else:
        values = np.array(t.int32_data, dtype=dtype)
    return values.reshape(tuple(t.dims))
