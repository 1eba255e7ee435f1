"""Operators of the ONNX node suite that had an exact lowering but were refused (session 12):
ArgMax/ArgMin with select_last_index=1, EyeLike, OneHot of constant depth and values, Pow with a
per-element exponent or an integer base, float Trilu, Where on int32 values. Each written file (the
CLI's) runs on the real Arm NN runtimes that read its target and must give onnxruntime's values
exactly, with ties, NaN and infinities where they matter."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

from armnn_import import cli

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/onnx (importlib mode)
from test_onnx_node_gaps import READERS, check_on_runtimes, model, refused  # noqa: E402

RNG = np.random.default_rng(12)


# -- ArgMax/ArgMin select_last_index=1: reversed along the axis, ArgMinMax, axis_len - 1 - index ---
def ties():
    x = RNG.integers(-2, 3, (3, 4, 5)).astype(np.float32)  # few values: many ties on every axis
    x[0, 0, :] = np.inf
    x[1, :, 2] = -np.inf
    return x


@pytest.mark.parametrize("target", ["20.08", "23.08"])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims", [(0, 1), (1, 0), (-1, 1), (2, 0)])
def test_arg_select_last_index(op, axis, keepdims, target, armnn_runner_for, tmp_path):
    node = h.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=1)
    m = model(node, [("x", TP.FLOAT, (3, 4, 5))], TP.INT64, opset=13)
    check_on_runtimes(m, {"x": ties()}, target, armnn_runner_for, tmp_path)


def test_arg_select_last_index_19_02_names_the_target():
    node = h.make_node("ArgMax", ["x"], ["y"], axis=1, select_last_index=1)
    p = refused(model(node, [("x", TP.FLOAT, (3, 4, 5))], TP.INT64, opset=13), "19.02")
    assert p.code == "needs-target" and "20.08" in p.hint, p


# -- EyeLike: a constant of the input's static shape (folded like Shape and Size) -----------------
def check_constant(m, feeds, target, armnn_runner_for, tmp_path):
    """As check_on_runtimes for a network whose output is a constant: its file has no inputs."""
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert cli.main([str(src), "-o", str(out), "-q", "--target", target]) == 0
    for release in READERS[target]:
        (got,) = armnn_runner_for(release)(out.read_bytes(), [])
        np.testing.assert_array_equal(got, want, err_msg=f"--target {target} on Arm NN {release}")


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("shape,attrs", [((4, 5), {"k": 1}), ((3, 4), {"dtype": TP.FLOAT}), ((4, 4), {}),
                                         ((5, 3), {"k": -2, "dtype": TP.INT32})])
def test_eyelike(shape, attrs, target, armnn_runner_for, tmp_path):
    out = attrs.get("dtype", TP.INT32)
    m = model(h.make_node("EyeLike", ["x"], ["y"], **attrs), [("x", TP.INT32, shape)], out, opset=22)
    check_constant(m, {"x": RNG.integers(-9, 9, shape).astype(np.int32)}, target, armnn_runner_for, tmp_path)


def test_eyelike_of_a_float_input_23_08(armnn_runner_for, tmp_path):
    m = model(h.make_node("EyeLike", ["x"], ["y"], k=-1), [("x", TP.FLOAT, (3, 6))], TP.FLOAT, opset=22)
    check_constant(m, {"x": RNG.standard_normal((3, 6)).astype(np.float32)}, "23.08", armnn_runner_for, tmp_path)


# -- OneHot of constant depth and values: a Gather of a constant table's rows ---------------------
def one_hot_model(itype, ishape, depth, values, axis):
    # (onnxruntime's kernels: float indices with a float depth, int64 ones with an int64 depth)
    depth = np.array(depth, np.float32 if itype == TP.FLOAT else np.int64)
    inits = [nh.from_array(depth, "depth"), nh.from_array(values, "values")]
    node = h.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=axis)
    out = TP.FLOAT if values.dtype == np.float32 else TP.INT64 if values.dtype == np.int64 else TP.INT32
    return model(node, [("i", itype, ishape)], out, opset=11, inits=inits)


@pytest.mark.parametrize("target", ["20.08", "23.08"])
@pytest.mark.parametrize("axis", [-1, 0, 1, -3])
@pytest.mark.parametrize("values", [np.array([-np.inf, 3.5], np.float32), np.array([7, -4], np.int64)])
def test_one_hot_int_indices(axis, values, target, armnn_runner_for, tmp_path):
    # negative indices count from the end; out of range on either side: a row of `off`
    i = np.array([[0, 4, -1, -5], [5, -6, 2, 2 ** 31 - 1], [-2 ** 31, 3, -3, 1]], np.int64)
    m = one_hot_model(TP.INT64, i.shape, 5, values, axis)
    check_on_runtimes(m, {"i": i}, target, armnn_runner_for, tmp_path)


@pytest.mark.parametrize("axis", [-1, 1])
def test_one_hot_float_indices_23_08(axis, armnn_runner_for, tmp_path):
    i = np.array([[1.7, -2.3, 9.0], [-0.5, 3.99, -7.5]], np.float32)  # truncated to int64, as ONNX casts
    m = one_hot_model(TP.FLOAT, i.shape, 6, np.array([0.0, 1.0], np.float32), axis)
    check_on_runtimes(m, {"i": i}, "23.08", armnn_runner_for, tmp_path)


def test_one_hot_names_the_target_it_needs():
    m = one_hot_model(TP.INT64, (3,), 4, np.array([0.0, 1.0], np.float32), -1)
    p = refused(m, "19.02")
    assert p.code == "needs-target" and "20.08" in p.hint, p
    p = refused(one_hot_model(TP.FLOAT, (3,), 4, np.array([0.0, 1.0], np.float32), -1), "20.08")
    assert p.code == "needs-target" and "23.08" in p.hint, p


# -- Pow with a constant exponent per element ---------------------------------------------------
def pow_model(xtype, xshape, e, otype):
    return model(h.make_node("Pow", ["x", "e"], ["y"]), [("x", xtype, xshape)], otype, opset=15,
                 inits=[nh.from_array(e, "e")])


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
def test_pow_exponent_along_an_axis(target, armnn_runner_for, tmp_path):
    # runs of one value along axis 1, each slice raised to its value: an inf beside a small exponent
    # stays inf (a 0/1 mask would make NaN of the other slices' powers)
    e = np.array([[0.0], [2.0], [2.0], [3.0], [0.5], [-1.0], [4.0]], np.float32)
    x = np.abs(RNG.standard_normal((2, 7, 4)).astype(np.float32)) + 0.25
    x[0, 1, 0], x[1, 3, 2], x[0, 6, 3] = np.inf, 1e20, 1e15  # 1e15 ** 4 overflows to inf
    m = pow_model(TP.FLOAT, x.shape, e, TP.FLOAT)
    check_on_runtimes(m, {"x": x}, target, armnn_runner_for, tmp_path, atol=1e-6)


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("etype", [np.int64, np.float32])
def test_pow_int_base_per_element(etype, target, armnn_runner_for, tmp_path):
    # 5 ** 11 = 48828125 and -3 ** 15 are past float32's 2^24: int32 products, not float ones
    x = np.array([[5, -3, 7, 2, 0, -1], [1, 4, -2, 9, 3, 6]], np.int64)
    e = np.array([[11, 15, 0, 1, 5, 2], [3, 4, 7, 6, 0, 9]], etype)
    m = pow_model(TP.INT64, x.shape, e, TP.INT64)
    check_on_runtimes(m, {"x": x}, target, armnn_runner_for, tmp_path)


@pytest.mark.parametrize("target", ["19.02", "23.08"])
def test_pow_int_base_scalar_and_broadcast(target, armnn_runner_for, tmp_path):
    x = RNG.integers(-20, 20, (3, 4)).astype(np.int32)
    for e in (np.array(3, np.int32), np.array([0, 1, 2, 5], np.int32)):
        check_on_runtimes(pow_model(TP.INT32, x.shape, e, TP.INT32), {"x": x}, target, armnn_runner_for, tmp_path)


def test_pow_exponents_that_stay_refused():
    f = np.ones((2, 3), np.float32)
    # (from 23.08 a Power layer takes it: tests/onnx/test_onnx_power.py)
    p = refused(pow_model(TP.FLOAT, (2, 3), f * np.array([1.0, 2.0, 3.0], np.float32) * [[1], [2]], TP.FLOAT), "20.08")
    assert "vary along one axis" in p.reason, p
    assert "exact" in refused(pow_model(TP.FLOAT, (3,), np.array([1.5, -0.7, 2.0], np.float32), TP.FLOAT), "19.02").reason
    assert "integers" in refused(pow_model(TP.INT32, (3,), np.array([1.5, 2.0, 2.0], np.float32), TP.INT32), "19.02").reason


# -- float Trilu: a constant gather of x and a zero (no mask multiply: inf and NaN stay) ----------
@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
@pytest.mark.parametrize("shape,upper,k", [((4, 5), 1, 0), ((2, 3, 4), 0, 1), ((5, 3), 1, -2), ((2, 2, 3, 3), 0, 0),
                                           ((9, 9), 1, 0)])
def test_float_trilu(shape, upper, k, target, armnn_runner_for, tmp_path):
    x = RNG.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::3], flat[1::5], flat[2::7] = np.inf, np.nan, -np.inf  # in the kept and in the zeroed part
    m = model(h.make_node("Trilu", ["x", "k"], ["y"], upper=upper), [("x", TP.FLOAT, shape)], TP.FLOAT, 14,
              inits=[nh.from_array(np.array(k, np.int64), "k")])
    check_on_runtimes(m, {"x": x}, target, armnn_runner_for, tmp_path, atol=0.0)


def test_float_trilu_of_many_runs_names_20_08():
    m = model(h.make_node("Trilu", ["x"], ["y"]), [("x", TP.FLOAT, (80, 80))], TP.FLOAT, 14)
    p = refused(m, "19.02")
    assert p.code == "needs-target" and "20.08" in p.hint, p


# -- Where of int32/int64 values: m * x + (1 - m) * y in int32 -----------------------------------
def where_int_model(const_cond):
    big = np.array([[2 ** 31 - 1], [-2 ** 31]], np.int64)  # past float32's 2^24, at the int32 ends
    cond = [h.make_node("Greater", ["a", "b"], ["c"])] if not const_cond else []
    inits = [nh.from_array(big, "y")] + ([nh.from_array(np.array([True, False, True]), "c")] if const_cond else [])
    ins = [("x", TP.INT64, (2, 3))] + ([] if const_cond else [("a", TP.FLOAT, (2, 3)), ("b", TP.FLOAT, (1, 3))])
    g = h.make_graph(cond + [h.make_node("Where", ["c", "x", "y"], ["z"])], "where",
                     [h.make_tensor_value_info(nm, t, list(s)) for nm, t, s in ins],
                     [h.make_tensor_value_info("z", TP.INT64, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 16)], ir_version=9)


@pytest.mark.parametrize("target", ["19.02", "20.08", "23.08"])
def test_where_int_constant_condition(target, armnn_runner_for, tmp_path):
    x = np.array([[16777217, -5, 7], [0, 2 ** 31 - 2, -16777219]], np.int64)
    check_on_runtimes(where_int_model(True), {"x": x}, target, armnn_runner_for, tmp_path)


def test_where_int_runtime_condition_23_08(armnn_runner_for, tmp_path):
    x = np.array([[16777217, -5, 7], [0, 2 ** 31 - 2, -16777219]], np.int64)
    a = np.array([[1.0, np.nan, -np.inf], [np.inf, 0.5, 2.0]], np.float32)
    b = np.array([[0.0, 0.0, 0.0]], np.float32)
    check_on_runtimes(where_int_model(False), {"x": x, "a": a, "b": b}, "23.08", armnn_runner_for, tmp_path)
    p = refused(where_int_model(False), "20.08")
    assert p.code == "needs-target" and "23.08" in p.hint, p
