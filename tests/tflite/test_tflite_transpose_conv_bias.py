"""mediapipe's custom Convolution2DTransposeBias (the last layer of the selfie segmentation models
the mediapipe wheel ships): a TRANSPOSE_CONV with a bias input whose options are a raw
TfLiteTransposeConvParams struct. Converted by the CLI at every target and run on every real Arm NN
runtime that reads the file, against LiteRT's own kernel for it (the XNNPACK delegate's, which
LiteRT applies by default), and that kernel against LiteRT's reference TRANSPOSE_CONV of the same
weights; malformed options are refused with a reason."""
from __future__ import annotations

import os
import struct
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tfl_builder import ModelBuilder, run_litert  # noqa: E402

from armnn_import import cli  # noqa: E402
from armnn_import.serialize import read  # noqa: E402

PAIRS = [("19.02", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
X = (1, 5, 6, 3)
#: id -> (TfLitePadding: 1 SAME, 2 VALID; stride; kernel side)
CASES = {"same-s2-k2": (1, 2, 2), "same-s2-k3": (1, 2, 3), "same-s2-k4": (1, 2, 4),
         "same-s1-k3": (1, 1, 3), "valid-s2-k3": (2, 2, 3), "valid-s3-k2": (2, 3, 2)}


def _out_hw(padding, s, k):
    return [(i - 1) * s + (s if padding == 1 else max(k, s)) for i in X[1:3]]


def _model(padding, s, k, custom=True, raw=None):
    rng = np.random.default_rng(k * 10 + s + padding)
    mb = ModelBuilder()
    x = mb.input("x", X)
    w = mb.const("w", rng.standard_normal((2, k, k, 3)).astype(np.float32))
    b = mb.const("b", rng.standard_normal(2).astype(np.float32))
    out = (1, *_out_hw(padding, s, k), 2)
    if custom:
        raw = struct.pack("<3i", padding, s, s) if raw is None else raw
        y = mb.op("CUSTOM", [x, w, b], out_shape=out, custom_code="Convolution2DTransposeBias",
                  custom_options=raw)
    else:  # the builtin it stands for: TRANSPOSE_CONV version 3 (with a bias input)
        shape = mb.const("shape", np.array(out, np.int32))
        y = mb.op("TRANSPOSE_CONV", [shape, w, x, b], "TransposeConvOptions", out_shape=out, version=3, out_dtype=np.float32,
                  padding="SAME" if padding == 1 else "VALID", stride_w=s, stride_h=s)
    mb.output(y)
    return mb.build(infer_shapes=False)


def _litert_xnnpack(data, x):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=data, num_threads=1)  # the default delegate (XNNPACK) runs the op
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root, made = tmp_path_factory.mktemp("tcb"), {}

    def get(case):
        if case not in made:
            padding, s, k = CASES[case]
            data = _model(padding, s, k)
            x = np.random.default_rng(7).standard_normal(X).astype(np.float32)
            want = _litert_xnnpack(data, x)
            # LiteRT's kernel of the custom op is the builtin's computation (the claim we lower by)
            builtin = run_litert(_model(padding, s, k, custom=False), [x])[0]
            np.testing.assert_allclose(want, builtin, rtol=1e-5, atol=1e-5)
            path = root / f"{case}.tflite"
            path.write_bytes(data)
            made[case] = path, x, want
        return made[case]

    return get


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("target, release", PAIRS)
def test_matches_litert_on_the_runtime(case, target, release, cases, tmp_path, armnn_runner_for):
    path, x, want = cases(case)
    out = tmp_path / "m.armnn"
    assert cli.main([str(path), "-o", str(out), "-q", "--target", target]) == 0
    (got,) = armnn_runner_for(release)(out, [x])
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5)
    # the catalogue's layers= holds (test_catalogue_layers has no reference model of this op)
    from armnn_import_frontends.tflite.ops import REGISTRY
    listed = set(REGISTRY.lookup("Convolution2DTransposeBias", 1).layers) | {"Input", "Output"}
    listed |= {"Concat"}  # the IR's Merger, written as a ConcatLayer from 20.08 on (read back as Concat)
    assert {l.type.name for l in read(out.read_bytes()).layers} <= listed


@pytest.mark.parametrize("raw, reason", [(struct.pack("<2i", 1, 2), "custom options are 8 bytes"),
                                         (struct.pack("<3i", 0, 2, 2), "neither SAME (1) nor VALID (2)"),
                                         (struct.pack("<3i", 1, 0, 2), "option stride_w = 0 is out of range")])
def test_bad_options_are_refused_with_a_reason(raw, reason, tmp_path, capsys):
    path = tmp_path / "bad.tflite"
    path.write_bytes(_model(1, 2, 2, raw=raw))
    assert cli.main([str(path), "-o", str(tmp_path / "m.armnn")]) == 1
    err = capsys.readouterr().err
    assert "Convolution2DTransposeBias" in err and reason in err, err


def test_custom_options_past_the_end_of_the_file_are_a_load_error(tmp_path, capsys):
    raw = struct.pack("<3i", 1, 2, 2)
    data = bytearray(_model(1, 2, 2, raw=raw))
    at = bytes(data).index(struct.pack("<I", len(raw)) + raw)  # the vector: its length, then its bytes
    struct.pack_into("<I", data, at, 1 << 30)
    path = tmp_path / "bad.tflite"
    path.write_bytes(bytes(data))
    assert cli.main([str(path), "-o", str(tmp_path / "m.armnn")]) == 1
    err = capsys.readouterr().err
    assert "malformed TFLite file: cannot read operator 0's custom options" in err and "Traceback" not in err, err
