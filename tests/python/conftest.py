"""Shared fixtures: the tiny BERT export (tests/data/models) compiled once per test module."""

import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "data", "models")
TINY_BERT = os.path.join(MODELS, "tiny_bert_opset17.onnx")


def bert_feed(batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 1000, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    if seq > 1:
        mask[:, seq - seq // 3:] = 0  # padded tails
    return {"input_ids": ids, "attention_mask": mask}


@pytest.fixture(scope="module")
def tiny_bert():
    import shapeshift

    # polymorphic: one compile, so tests that count compiles are deterministic.
    return shapeshift.InferenceSession(TINY_BERT, policy="polymorphic")
