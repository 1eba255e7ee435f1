"""Pow at --target 23.08: a float32 base to a run-time, per-element or fractional power is one
ElementwiseBinary Power layer (CpuRef's std::pow, as onnxruntime's); integer and +-0.5 exponents
keep their exact forms; older targets refuse what they cannot lower, pointing at 23.08. Judged on
Arm NN 23.08 against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import import cli


def _model(xshape, eshape, const_e=None):
    ins, inits = [h.make_tensor_value_info("x", T.FLOAT, xshape)], []
    if const_e is None:
        ins.append(h.make_tensor_value_info("e", T.FLOAT, eshape))
    else:
        inits.append(onnx.numpy_helper.from_array(np.asarray(const_e, np.float32), "e"))
    g = h.make_graph([h.make_node("Pow", ["x", "e"], ["y"])], "pow", ins,
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 15)])


def _ort(m, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


CASES = {"scalar_1.5": ((2, 3, 4), (), 1.5), "scalar_-1.3": ((2, 3, 4), (), -1.3),
         "per_element": ((2, 3, 4), (4,), [1.2, -0.65, -1.8, 2.5]), "runtime_column": ((2, 3, 4), (3, 1), None),
         "runtime_scalar": ((2, 3, 4), (), None), "runtime_widens_x": ((4,), (2, 3, 4), None)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_power_layer_matches_onnxruntime(case, armnn_runner_for, tmp_path):
    xshape, eshape, ce = CASES[case]
    rng = np.random.default_rng(len(case))
    m = _model(xshape, eshape, ce)
    x = rng.uniform(-3, 3, xshape).astype(np.float32)
    feeds, ins = {"x": x}, [x]
    if ce is None:
        e = rng.uniform(-2, 3, eshape).astype(np.float32)
        feeds["e"] = e
        ins.append(e)
    want = _ort(m, feeds)
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    got, = armnn_runner_for("23.08")(str(out), ins)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_exact_exponents_keep_their_forms():
    for p in (2.0, 3.0, -0.5, 0.5):
        kinds = {layer.type.name for layer in armnn_import.convert(_model((2, 3), (), p), target="23.08").network.layers}
        assert "ElementwiseBinary" not in kinds, (p, kinds)


@pytest.mark.parametrize("target", ["19.02", "20.08"])
@pytest.mark.parametrize("case", ["scalar_-1.3", "runtime_column"])
def test_older_targets_point_at_23_08(case, target, tmp_path, capsys):
    xshape, eshape, ce = CASES[case]
    src = tmp_path / "m.onnx"
    onnx.save(_model(xshape, eshape, ce), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn"), "--target", target]) == 1
    err = capsys.readouterr().err
    assert "Pow" in err and "--target 23.08" in err and "Traceback" not in err
