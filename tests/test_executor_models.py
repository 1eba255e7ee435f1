"""The numpy executor and the real Arm NN 20.08 and 23.08 runtimes (CpuRef) agree on every
reference model that converts: float outputs within rtol 1e-5, uint8 outputs
within 1. The inputs are the reference inputs of each model's .npz, brought to
the .armnn inputs the way `armnn-import verify` does (int8 + 128, layout)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from armnn_import.executor import run
from armnn_import.verify_cmd import adapt_input, load_inputs, source_model

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from reference_models import converted, params  # noqa: E402


@pytest.mark.parametrize("model_id, path, npz", params())
def test_executor_matches_runtime(armnn_release_runner, model_id, path, npz):
    result = converted(path)
    graph = result.network
    src = source_model(path)
    arrays = load_inputs([npz], src.inputs)
    by_name = {l.name: l for l in graph.input_layers}
    layers = [by_name.get(s.name, l) for s, l in zip(src.inputs, graph.input_layers)]
    feed = {l.name: adapt_input(a, s, l.outputs[0]) for a, s, l in zip(arrays, src.inputs, layers)}
    inputs = [feed[l.name] for l in graph.input_layers]

    expected = armnn_release_runner(result.to_bytes(), inputs)   # Arm NN itself
    got = run(graph, inputs)
    assert len(got) == len(expected) == len(graph.output_layers)
    for g, e, layer in zip(got, expected, graph.output_layers):
        assert g.shape == e.shape and g.dtype == e.dtype, (layer.name, g.shape, e.shape, g.dtype, e.dtype)
        if e.dtype == np.uint8:
            assert np.abs(g.astype(np.int32) - e.astype(np.int32)).max(initial=0) <= 1, layer.name
        elif e.dtype.kind == "f":
            # atol: float32 rounding of values near zero, where a relative bound means nothing
            scale = max(1.0, float(np.abs(e[np.isfinite(e)]).max(initial=0)))
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6 * scale, err_msg=layer.name)
        else:
            np.testing.assert_array_equal(g, e, err_msg=layer.name)
