"""drop_unused_inputs: Arm NN 20.08 cannot bind an Input layer that feeds
nothing, so the pipeline removes it (and anything reaching no output)."""
import numpy as np

from armnn_import.ir import ActivationFunction, LayerType, TensorInfo
from armnn_import.lowering import NetBuilder
from armnn_import.passes import run_pipeline
from armnn_import.passes.cleanup import drop_unused_inputs
from armnn_import.report import Report
from armnn_import.serialize import write


def _net():
    """Inputs a (only feeds a dead Relu), b (used), c (feeds nothing), d (used)."""
    nb = NetBuilder()
    a, b = nb.g.add_input("a", TensorInfo((1, 4))), nb.g.add_input("b", TensorInfo((1, 4)))
    nb.g.add_input("c", TensorInfo((1, 4)))
    d = nb.g.add_input("d", TensorInfo((1, 4)))
    nb.activation(a, ActivationFunction.ReLu, "dead_relu")
    nb.g.add_output("y", nb.binary(LayerType.Addition, b, d, "add"))
    return nb.g


def test_unused_inputs_and_dead_layers_go_and_bindings_are_renumbered(armnn_runner):
    g, report = _net(), Report()
    run_pipeline(g, report)
    assert [(l.name, l.binding_id) for l in g.input_layers] == [("b", 0), ("d", 1)]
    assert "dead_relu" not in [l.name for l in g.layers]
    assert sum("is not needed to compute the outputs" in w for w in report.warnings) == 2
    xb, xd = np.arange(4, dtype=np.float32).reshape(1, 4), np.full((1, 4), 0.5, np.float32)
    np.testing.assert_array_equal(armnn_runner(write(g), [xb, xd])[0].reshape(1, 4), xb + xd)


def test_a_graph_without_outputs_is_left_for_verify_to_refuse():
    nb = NetBuilder()
    nb.activation(nb.g.add_input("x", TensorInfo((1, 4))), ActivationFunction.ReLu, "r")
    assert drop_unused_inputs(nb.g, Report()) == 0
    assert len(nb.g.layers) == 2
