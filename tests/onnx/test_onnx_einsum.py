"""Einsum of one or two operands on every target: transposes and one MatMul (BatchMatMul from
--target 23.08), judged on the Arm NN runtime of each target against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import armnn_import
from armnn_import import cli

READS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
# (equation, operand shapes, which operands are constants)
CASES = [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], (0, 0)), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)], (0, 0)),
         ("ij,jk", [(3, 4), (4, 5)], (0, 1)), ("bnd,dk->bnk", [(2, 3, 4), (4, 6)], (0, 1)),
         ("i,i->", [(5,), (5,)], (0, 0)), ("ij->ji", [(3, 4)], (0,)),
         ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], (0, 0)), ("bhqk,bhkd->bqhd", [(1, 2, 3, 4), (1, 2, 4, 5)], (0, 0)),
         ("ij,kj->ik", [(3, 4), (5, 4)], (1, 0)), ("i,j->ij", [(3,), (4,)], (0, 0)),
         ("bji,bjk->bik", [(2, 4, 3), (2, 4, 5)], (0, 0)), ("ji", [(2, 3)], (0,))]


def _model(eq, shapes, consts):
    ins, inits, names = [], [], []
    for k, (s, c) in enumerate(zip(shapes, consts)):
        names.append(f"x{k}")
        if c is None:
            ins.append(h.make_tensor_value_info(f"x{k}", T.FLOAT, s))
        else:
            inits.append(onnx.numpy_helper.from_array(c, f"x{k}"))
    g = h.make_graph([h.make_node("Einsum", names, ["y"], equation=eq)], "einsum", ins,
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def _case(k):
    eq, shapes, flags = CASES[k]
    rng = np.random.default_rng(k)
    vals = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return _model(eq, shapes, [v if c else None for v, c in zip(vals, flags)]), [v for v, c in zip(vals, flags) if not c]


def _ort(m, ins):
    import onnxruntime as ort
    names = [i.name for i in m.graph.input]
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, dict(zip(names, ins)))[0]


@pytest.mark.parametrize("target, release", READS)
@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0] for c in CASES])
def test_matches_onnxruntime(k, target, release, armnn_runner_for):
    m, ins = _case(k)
    want = _ort(m, ins)
    got, = armnn_runner_for(release)(armnn_import.convert(m, target=target).to_bytes(), ins)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_attention_scores_are_one_batch_matmul_at_23_08(tmp_path, armnn_runner_for):
    m, ins = _case(1)
    src, out = tmp_path / "m.onnx", tmp_path / "m.armnn"
    onnx.save(m, src)
    assert cli.main([str(src), "-o", str(out), "-q", "--target", "23.08"]) == 0
    kinds = [layer.type.name for layer in armnn_import.convert(m, target="23.08").network.layers]
    assert kinds == ["Input", "Input", "BatchMatMul", "Output"]  # (k read transposed: no Permute)
    got, = armnn_runner_for("23.08")(str(out), ins)
    np.testing.assert_allclose(got, _ort(m, ins), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eq, shapes, why", [
    ("ii->i", [(3, 3)], "repeats a letter"), ("ij->i", [(3, 4)], "a sum over letters of one operand"),
    ("ij,jk->k", [(3, 4), (4, 5)], "a sum over a letter of one operand only"),
    ("ij,jk->ik", [(3, 4), (1, 5)], "broadcasting is not supported"),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], "3 operands"),
    ("...i,...i->...", [(2, 3, 4), (3, 4)], "'...' stands for [1, 2] dimensions"),
    ("a...,a...->a", [(2, 3), (2, 3)], "the output has not")])
def test_refusals_are_one_line_each(eq, shapes, why, tmp_path, capsys):
    src = tmp_path / "m.onnx"
    onnx.save(_model(eq, shapes, [None] * len(shapes)), src)
    assert cli.main([str(src), "-o", str(tmp_path / "m.armnn")]) == 1
    err = capsys.readouterr().err
    assert why in err and "Einsum" in err and "Traceback" not in err
    assert not (tmp_path / "m.armnn").exists()
