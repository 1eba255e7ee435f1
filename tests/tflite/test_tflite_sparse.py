"""Sparse constants (frontends/tflite/sparse.py): densify() against hand-built sparse
tensors whose dense form is known, malformed layouts refused, and hand-built models
(block map; int32, uint16 and uint8 index vectors; float32 and float16 values) through
the CLI on the real Arm NN 20.08 runtime against LiteRT, whose DENSIFY kernel reads them.
The converter's own sparse models are in test_models/tflite (the *_pruned / pruned_convnet
entries: tests/tflite/test_models_manifest.py and test_tflite_frontend.py::test_corpus_model)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

from armnn_import.errors import LoadError  # noqa: E402
from armnn_import_frontends.tflite.sparse import DENSE, SPARSE_CSR, DimMeta, Sparsity, SparsityError, densify  # noqa: E402

# A 4 x 6 matrix of 2 x 2 blocks (a 2 x 3 grid of blocks): row-block 0 holds blocks at
# column-blocks 0 and 2, row-block 1 at column-block 1; each block stored row-major.
BLOCK_DENSE = np.array([[1, 2, 0, 0, 5, 6],
                        [3, 4, 0, 0, 7, 8],
                        [0, 0, 9, 10, 0, 0],
                        [0, 0, 11, 12, 0, 0]], np.float32)
BLOCK_VALUES = np.arange(1, 13, dtype=np.float32)
BLOCK_ORDER, BLOCK_MAP = (0, 1, 2, 3), (0, 1)
BLOCK_SEGMENTS, BLOCK_INDICES = [0, 2, 3], [0, 2, 1]


def block_sparsity(segments=BLOCK_SEGMENTS, indices=BLOCK_INDICES, order=BLOCK_ORDER, bmap=BLOCK_MAP):
    return Sparsity(order, bmap, [DimMeta(DENSE, 2), DimMeta(SPARSE_CSR, 0, np.array(segments), np.array(indices)),
                                  DimMeta(DENSE, 2), DimMeta(DENSE, 2)])


def test_densify_block_sparse_matrix():
    np.testing.assert_array_equal(densify((4, 6), block_sparsity(), BLOCK_VALUES), BLOCK_DENSE)


def test_densify_column_major_csr():
    """traversal order [1, 0]: columns outer (DENSE), rows inner (CSR), i.e. CSC."""
    dense = np.array([[1, 0, 0, 4], [0, 2, 0, 0], [0, 3, 0, 5]], np.float16)
    sp = Sparsity((1, 0), (), [DimMeta(DENSE, 4), DimMeta(SPARSE_CSR, 0, np.array([0, 1, 3, 3, 5]),
                                                                        np.array([0, 1, 2, 0, 2]))])
    got = densify((3, 4), sp, np.array([1, 2, 3, 4, 5], np.float16))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, dense)


def test_densify_all_dense_levels_is_a_reshape():
    x = np.arange(24, dtype=np.int8)
    sp = Sparsity((0, 1, 2), (), [DimMeta(DENSE, 2), DimMeta(DENSE, 3), DimMeta(DENSE, 4)])
    np.testing.assert_array_equal(densify((2, 3, 4), sp, x), x.reshape(2, 3, 4))


@pytest.mark.parametrize("sp,values,match", [
    (block_sparsity(segments=[0, 3, 2]), BLOCK_VALUES, "not increasing"),
    (block_sparsity(indices=[0, 3, 1]), BLOCK_VALUES, "outside"),
    (block_sparsity(segments=[0, 2]), BLOCK_VALUES, "segment bounds"),
    (block_sparsity(), BLOCK_VALUES[:8], "8 stored values for 12 positions"),
    (block_sparsity(indices=[0, 0, 1]), BLOCK_VALUES, "same element"),
    (block_sparsity(order=(0, 2, 1, 3)), BLOCK_VALUES, "traversal order"),
    (block_sparsity(bmap=(1, 0)), BLOCK_VALUES, "block map"),
    (Sparsity((0, 1, 2), (1,), [DimMeta(DENSE, 4), DimMeta(DENSE, 1), DimMeta(DENSE, 4)]), BLOCK_VALUES,
     "does not divide"),
    (Sparsity((0, 1), (), [DimMeta(DENSE, 4), DimMeta(DENSE, 5)]), BLOCK_VALUES, "DENSE of size 5"),
    (Sparsity((0, 1), (), [DimMeta(DENSE, 4), DimMeta(2, 6)]), BLOCK_VALUES, "unknown format"),
])
def test_malformed_sparsity_refused(sp, values, match):
    with pytest.raises(SparsityError, match=match):
        densify((4, 6), sp, values)


def fc_model(dtype=np.float32, kinds=("i32", "u16"), order=BLOCK_ORDER, bmap=BLOCK_MAP, segments=BLOCK_SEGMENTS):
    """y = x W^T with W the block matrix, stored sparse, through DENSIFY (and DEQUANTIZE for float16)."""
    mb = ModelBuilder()
    x = mb.input("x", (2, 6))
    dims = [("dense", 2), ("csr", segments, BLOCK_INDICES, kinds[0]), ("dense", 2), ("dense", 2)]
    if kinds[1] != kinds[0]:  # segments and indices in different vector types
        dims[1] = ("csr", segments, BLOCK_INDICES, kinds[1])
    w = mb.sparse_const("w_sparse", (4, 6), BLOCK_VALUES.astype(dtype), order, bmap, dims)
    w = mb.op("DENSIFY", [w], out_dtype=dtype)
    if dtype == np.float16:
        w = mb.op("DEQUANTIZE", [w], out_dtype=np.float32, version=3)
    mb.output(mb.op("FULLY_CONNECTED", [x, w, -1], "FullyConnectedOptions"))
    return mb.build()


def cli(tmp_path, data, *extra):
    from armnn_import.cli import main

    src, dst = tmp_path / "m.tflite", tmp_path / "m.armnn"
    src.write_bytes(data)
    return main(["convert", str(src), "-o", str(dst), *extra]), dst


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("kind", ["i32", "u16", "u8"])
def test_hand_built_sparse_weights_match_litert(armnn_runner, tmp_path, dtype, kind):
    data = fc_model(dtype, (kind, kind))
    x = np.random.default_rng(2).normal(size=(2, 6)).astype(np.float32)
    want = run_litert(data, [x])[0]
    np.testing.assert_allclose(want, x @ BLOCK_DENSE.T, rtol=1e-6)  # LiteRT read the block map as we do
    code, dst = cli(tmp_path, data)
    assert code == 0
    np.testing.assert_array_equal(armnn_runner(dst.read_bytes(), [x])[0].reshape(want.shape), want)


def test_densify_is_folded_and_reported():
    import armnn_import

    result = armnn_import.convert(fc_model(np.float16))
    assert "sparse constants" in result.report.decompositions
    assert "1 DENSIFY folded" in result.report.decompositions["sparse constants"]
    assert [l.type.name for l in result.network.layers if l.type.name not in ("Input", "Output")] \
        == ["FullyConnected"]


def test_malformed_sparse_file_is_a_load_error(tmp_path, capsys):
    import armnn_import

    data = fc_model(segments=[0, 2, 4])  # 4 children, 3 indices
    with pytest.raises(LoadError, match=r"sparse tensor 'w_sparse': level 1 segments are not increasing"):
        armnn_import.convert(data)
    code, dst = cli(tmp_path, data)
    err = capsys.readouterr().err
    assert code == 1 and not dst.exists() and "w_sparse" in err and "Traceback" not in err


def test_densify_of_a_runtime_tensor_refused():
    import armnn_import
    from armnn_import.errors import UnsupportedModelError

    mb = ModelBuilder()
    x = mb.input("x", (2, 6))
    mb.output(mb.op("DENSIFY", [x], out_shape=[2, 6]))
    with pytest.raises(UnsupportedModelError, match="densifies a tensor computed at run time"):
        armnn_import.convert(mb.build(infer_shapes=False))
