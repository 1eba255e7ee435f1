"""Shared by the ONNX tests of issue 17: convert a model, run it on the real Arm NN
runtime and compare with onnxruntime (or with reference outputs given)."""
from __future__ import annotations

import numpy as np

import armnn_import
from armnn_import.ir.types import LayerType

RTOL, ATOL = 1e-3, 1e-4


def ort_run(model, feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check(armnn_runner, model, feeds, want=None, constant_layers_ok=False, rtol=RTOL, atol=ATOL, **convert_kw):
    """Convert `model`, run it on Arm NN, compare with `want` (default: onnxruntime on
    `model`); returns the ConversionResult."""
    if want is None:
        want = ort_run(model, feeds)
    result = armnn_import.convert(model, **convert_kw)
    net = result.network
    if not constant_layers_ok:
        assert not any(l.type == LayerType.Constant for l in net.layers), net.summary()
    arrays = [np.asarray(feeds[l.name]).astype(l.outputs[0].dtype.np_dtype) for l in net.input_layers]
    got = armnn_runner(result.to_bytes(), arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.size == w.size, (g.shape, w.shape)
        g = g.reshape(w.shape)
        if w.dtype == bool:
            np.testing.assert_array_equal(g.astype(bool), w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
    return result
