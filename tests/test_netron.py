"""An .armnn file written by armnn-import opens in Netron.

Netron (PyPI `netron`) reads .armnn with its own reader and Arm NN's current
schema, so this is an independent check of the file structure: the layers,
their names and the descriptor fields as another decoder sees them. The page
is loaded in headless Chromium through the helpers of
scripts/netron_screenshot.py. Skips without netron or chromium, except under
CI=true where both must be installed.
"""
import importlib.util
import os

import numpy as np
import pytest

from armnn_import.ir.types import ActivationFunction, DataType, PoolingAlgorithm, TensorInfo
from armnn_import.lowering import NetBuilder
from armnn_import.serialize import write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("netron_screenshot",
                                               os.path.join(ROOT, "scripts", "netron_screenshot.py"))
ns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ns)


def _require():
    missing = []
    if importlib.util.find_spec("netron") is None:
        missing.append("the netron package (pip install netron)")
    if ns.find_chromium() is None:
        missing.append("chromium (apt-get install chromium)")
    if missing:
        reason = "Netron check needs " + " and ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must install it")
        pytest.skip(reason)


def _network() -> bytes:
    rng = np.random.default_rng(1)
    b = NetBuilder()
    x = b.g.add_input("image", TensorInfo((1, 3, 16, 16), DataType.Float32))
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
                 rng.standard_normal(8).astype(np.float32), "conv_main", pads=(1, 2, 1, 0))
    y = b.activation(y, ActivationFunction.ReLu, "relu_main")
    y = b.pool2d(y, PoolingAlgorithm.Max, (2, 2), "pool_main", strides=(2, 2))
    z = b.conv2d(x, rng.standard_normal((4, 3, 3, 2)).astype(np.float32), None, "conv_side", strides=(2, 2),
                 pads=(1, 0, 0, 0))
    b.g.add_output("features", b.concat([y, z], 1, "concat_features"))
    return write(b.g)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    _require()
    path = tmp_path_factory.mktemp("netron") / "demo.armnn"
    path.write_bytes(_network())
    with ns.netron_page(str(path)) as opened:
        yield opened


def test_graph_is_drawn(page):
    tools, state = page
    assert "default" in state["body"].split() and state["message"] == "", state
    # Input, Convolution2d, BatchNormalization (the bias), Activation,
    # Pooling2d, Convolution2d, Merger, Output
    assert state["nodes"] == 8, state
    for name in ("conv_main", "conv_main_bias", "relu_main", "pool_main", "conv_side", "concat_features"):
        assert name in state["titles"], (name, state["titles"])
    for label in ("image", "features", "Convolution2d", "BatchNormalization", "Activation", "Pooling2d", "Merger"):
        assert label in state["labels"], (label, state["labels"])


def test_descriptors_as_netron_reads_them(page):
    tools, _ = page
    conv = ns.node_properties(tools, "conv_main")
    # Netron uses Arm NN's current schema, where dilationX/Y sit in the slots
    # of our schema's biasEnabled/dataLayout: they must read as defaults.
    assert {k: conv[k] for k in ("type", "padTop", "padLeft", "padBottom", "padRight", "strideX", "strideY",
                                 "dilationX", "dilationY", "biasEnabled", "dataLayout")} == {
        "type": "Convolution2d", "padTop": "1", "padLeft": "2", "padBottom": "1", "padRight": "0",
        "strideX": "1", "strideY": "1", "dilationX": "1", "dilationY": "1", "biasEnabled": "false",
        "dataLayout": "NCHW"}
    assert conv["weights"] == "tensor: float32[8,3,3,3]"
    side = ns.node_properties(tools, "conv_side")
    assert (side["strideX"], side["strideY"], side["padTop"], side["weights"]) == \
        ("2", "2", "1", "tensor: float32[4,3,3,2]")
    bias = ns.node_properties(tools, "conv_main_bias")
    assert bias["type"] == "BatchNormalization" and bias["beta"] == "tensor: float32[8]"
    assert ns.node_properties(tools, "relu_main")["activationFunction"] == "ReLu"
    pool = ns.node_properties(tools, "pool_main")
    assert (pool["poolType"], pool["poolWidth"], pool["poolHeight"], pool["strideX"]) == ("Max", "2", "2", "2")


def test_broken_file_shows_an_error(tmp_path):
    """Control: the same check sees it when Netron can't read a file."""
    _require()
    data = bytearray(_network())
    data[0:4] = (len(data) + 1000).to_bytes(4, "little")  # root table offset past the end
    path = tmp_path / "broken.armnn"
    path.write_bytes(bytes(data))
    with ns.netron_page(str(path)) as (_, state):
        assert state["nodes"] == 0 and "alert" in state["body"].split() and state["message"], state
