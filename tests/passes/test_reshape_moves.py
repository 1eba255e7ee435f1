"""move_reshapes (passes/reshape_moves.py): Reshapes moved into a Splitter and past an elementwise
binary layer, where fewer Reshape layers do. The layers only copy or combine elements in place,
so the outputs equal onnxruntime's bit for bit on the real runtimes."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import

READS = [("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]


def _model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
                          [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def _unstack():
    """x [1, 5, 4] -> Reshape [5, 1, 4] -> Split on axis 0 -> each Reshape [1, 4] (an UNPACK's form)."""
    parts = [f"p{i}" for i in range(5)]
    nodes = [helper.make_node("Reshape", ["x", "s3"], ["r"]),
             helper.make_node("Split", ["r"], parts, axis=0)]
    nodes += [helper.make_node("Reshape", [p, "s2"], [f"y{i}"]) for i, p in enumerate(parts)]
    return _model(nodes, [("x", [1, 5, 4])], [(f"y{i}", [1, 4]) for i in range(5)],
                  {"s3": [5, 1, 4], "s2": [1, 4]})


def _sum_of_reshapes():
    """a, b [1, 1, 1, 20] -> each Reshape [1, 20] -> Add."""
    nodes = [helper.make_node("Reshape", ["a", "s"], ["ra"]), helper.make_node("Reshape", ["b", "s"], ["rb"]),
             helper.make_node("Add", ["ra", "rb"], ["y"])]
    return _model(nodes, [("a", [1, 1, 1, 20]), ("b", [1, 1, 1, 20])], [("y", [1, 20])], {"s": [1, 20]})


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("make, reshapes", [(_unstack, 1), (_sum_of_reshapes, 1)])
def test_reshapes_move_and_the_outputs_stay_bit_for_bit(make, reshapes, target, release, armnn_runner_for):
    data = make()
    result = armnn_import.convert(data, target=target)
    kinds = result.network.summary()
    assert kinds.get("Reshape", 0) == reshapes, kinds  # (before the pass: 6 and 2)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    feeds = {i.name: rng.standard_normal([d for d in i.shape]).astype(np.float32) for i in sess.get_inputs()}
    for x in feeds.values():
        x.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    want = sess.run(None, feeds)
    got = armnn_runner_for(release)(result.to_bytes(), list(feeds.values()))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.reshape(w.shape).tobytes() == w.tobytes()


def test_19_02_keeps_its_reshapes():
    """The 19.02 format has no Splitter (StridedSlices cut it): the pass leaves that network as written."""
    kinds = armnn_import.convert(_sum_of_reshapes(), target="19.02").network.summary()
    assert kinds.get("Reshape", 0) == 2
