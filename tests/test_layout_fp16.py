"""--layout and --fp16 on every float reference model, on the real Arm NN runtime:
a converted layout gives the `keep` results after permuting inputs and outputs
(rtol 1e-4), and Float16 networks are about half the size and within 1e-2 of Float32."""
import glob
import os
import sys

import numpy as np
import pytest

import armnn_import
import armnn_import.passes as passes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_models import NOT_CONVERTING_YET  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test_models")
ONNX = sorted(glob.glob(os.path.join(ROOT, "onnx", "*.onnx")))
TFLITE = sorted(glob.glob(os.path.join(ROOT, "tflite", "models", "*.float32.tflite")) +
                glob.glob(os.path.join(ROOT, "tflite", "ops", "*.float32.tflite")))
ALL = sorted(glob.glob(os.path.join(ROOT, "onnx", "*.onnx")) + glob.glob(os.path.join(ROOT, "onnx_quant", "*.onnx")) +
             glob.glob(os.path.join(ROOT, "tflite", "*", "*.tflite")))
OTHERS = [p for p in ALL if p not in ONNX + TFLITE]  # quantized, fp16-weight and dynamic-range models
# (models only a richer target converts are tested there: tests/test_targets.py, test_attention_models.py)
ONNX, TFLITE, OTHERS = ([p for p in ps if os.path.relpath(p, ROOT) not in NOT_CONVERTING_YET or "/exp." in p
                         or "/reduce_prod." in p] for ps in (ONNX, TFLITE, OTHERS))
TO = {"nhwc": (0, 2, 3, 1), "nchw": (0, 3, 1, 2)}


def _inputs(result, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(l.outputs[0].shape).astype(np.float32) for l in result.network.input_layers]


def _id(path):
    return os.path.relpath(path, ROOT)


@pytest.mark.parametrize("path", ONNX + TFLITE, ids=_id)
def test_layout_matches_keep(path, armnn_runner):
    target = "nhwc" if path.endswith(".onnx") else "nchw"
    keep = armnn_import.convert(path)
    try:
        other = armnn_import.convert(path, layout=target)
    except armnn_import.ConversionError as e:
        # CpuRef has no Boolean Permute: a 4-D Boolean output whose Permute no pass could move
        # up to the comparison's inputs cannot change layout (not_equal's lowering), and says so
        assert "no Boolean Permute" in str(e), e
        assert any(len(o["shape"]) == 4 and o["dtype"] == "Boolean" for o in keep.report.outputs)
        return
    io = armnn_import.convert(path, layout=target, keep_io_layout=True)
    xs = _inputs(keep)
    want = armnn_runner(keep.to_bytes(), xs)
    perm = TO[target]
    back = tuple(int(i) for i in np.argsort(perm))
    got = armnn_runner(other.to_bytes(), [np.ascontiguousarray(x.transpose(perm)) if x.ndim == 4 else x for x in xs])
    for g, w in zip(got, want):
        g = g.transpose(back) if g.ndim == 4 else g
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    for g, w in zip(armnn_runner(io.to_bytes(), xs), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    # --keep-io-layout adds at most one Permute per input and output
    extra = io.network.summary().get("Permute", 0) - keep.network.summary().get("Permute", 0)
    assert extra <= len(xs) + len(want)


# (each target on the oldest runtime that reads it: the 20.08 format's Stack on axis 0 was
# Float16 garbage on 20.08 until the fp16 pass replaced it with a Concat)
@pytest.mark.parametrize("target,release", [("19.02", "20.08"), ("20.08", "20.08"), ("23.08", "23.08")])
@pytest.mark.parametrize("path", ONNX + TFLITE, ids=_id)
def test_fp16_half_size_and_close(path, target, release, armnn_runner_for, monkeypatch):
    armnn_runner = armnn_runner_for(release)
    f32 = armnn_import.convert(path, target=target)
    f16 = armnn_import.convert(path, fp16=True, target=target)
    assert all(t.info.dtype.name != "Float32" for l in f16.network.layers for t in l.tensors.values())
    # the Float32 network of the Float16 network's passes (passes.pipeline drops some for Float16)
    with monkeypatch.context() as m:
        m.setattr(passes, "PIPELINE", passes.pipeline(float16=True))
        same = armnn_import.convert(path, target=target)
    # (a tensor that several layers share is written once: unrolled recurrent steps; Signed32
    # constants, a Gather's indices, stay)
    weights = [sum(t.data.nbytes for t in {id(t): t for l in r.network.layers for t in l.tensors.values()
                                            if t.info.dtype.name.startswith("Float")}.values())
               for r in (same, f16)]
    assert weights[1] * 2 == weights[0]
    moved = _unstacked(same.network.summary(), f16.network.summary(), target)
    ratio = len(f16.to_bytes()) / len(same.to_bytes())
    if not moved:  # only structure stays
        assert ratio < 0.5 + 0.5 * (1 - weights[0] / len(same.to_bytes())) + 0.01, ratio
    # both networks read the same (Float16-representable) inputs
    xs16 = [x.astype(np.float16) for x in _inputs(f32)]
    want = armnn_runner(f32.to_bytes(), [x.astype(np.float32) for x in xs16])
    got = armnn_runner(f16.to_bytes(), xs16)
    for g, w in zip(got, want):
        if w.dtype == np.bool_:  # comparisons: a constant rounded to Float16 may move a few
            assert g.dtype == np.bool_ and np.mean(g == w) >= 0.99
            continue
        assert g.dtype == np.float16
        assert np.array_equal(np.isnan(g), np.isnan(w))
        scale = max(float(np.nanmax(np.abs(w), initial=0.0)), 1e-6)
        np.testing.assert_allclose(g.astype(np.float32), w, rtol=1e-2, atol=1e-2 * scale, equal_nan=True)


def _unstacked(f32: dict, f16: dict, target: str) -> int:
    """How many axis-0 Stacks the fp16 pass replaced with Reshapes + a Concat (20.08 format
    only); any other difference between the two networks' layer types fails."""
    if f32 == f16:
        return 0
    n = f32.get("Stack", 0) - f16.get("Stack", 0)
    assert target == "20.08" and n > 0, (f32, f16)
    assert f16.get("Concat", 0) - f32.get("Concat", 0) == n
    assert {k for k in f16.keys() | f32.keys() if f16.get(k, 0) != f32.get(k, 0)} == {"Stack", "Concat", "Reshape"}
    return n


def test_onnx_nhwc_io_shapes():
    r = armnn_import.convert(os.path.join(ROOT, "onnx", "resnet_small.onnx"), layout="nhwc")
    assert r.network.input_layers[0].outputs[0].shape == (1, 40, 48, 3)
    assert r.report.inputs[0]["layout"] == "NHWC"


def _permutes(result):
    """(Permutes of the network, those of them at an edge: reading an Input, or feeding only Outputs)."""
    g = result.network
    users = g.consumers()
    perms = [l for l in g.layers if l.type.name == "Permute"]
    edge = [l for l in perms if l.inputs[0].layer.type.name == "Input"
            or all(u.type.name == "Output" for u, _ in users[id(l)])]
    return perms, edge


@pytest.mark.parametrize("path", ONNX, ids=_id)
def test_onnx_layout_permute_counts(path):
    """keep: the model's own Transposes only (the CNNs have none). nhwc: the layout
    change adds Permutes only at inputs and outputs, none inside the network (a
    convolution stays NCHW: Arm NN reads this schema's conv dataLayout slot as a
    dilation, see the README, "Layout"). --keep-io-layout: the keep network exactly."""
    keep, _ = _permutes(armnn_import.convert(path))
    nhwc, nhwc_edge = _permutes(armnn_import.convert(path, layout="nhwc"))
    io, _ = _permutes(armnn_import.convert(path, layout="nhwc", keep_io_layout=True))
    # these have Transposes (recurrent: torch's; dynamo_encoder: attention's), or lowerings that
    # permute at 19.02 (dynamo_conv_block: PixelShuffle as DepthToSpace CRD, a half_pixel Resize as a
    # FullyConnected along each axis)
    if not any(k in path for k in ("shufflenet", "transformer", "torch_encoder", "yolo", "attention",
                                   "lstm", "gru", "rnn", "dynamo_encoder", "dynamo_conv_block")):
        assert keep == []
    # (layers of two conversions compare by name: the model's own Transpose may read an Input)
    assert len(nhwc) - len(keep) == len(nhwc_edge) - len({p.name for p in keep} & {p.name for p in nhwc_edge})
    assert len(nhwc) - len(keep) <= 2  # one per 4-D input and output
    assert len(io) == len(keep)


def _random_inputs(result, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for layer in result.network.input_layers:
        info = layer.outputs[0]
        if info.dtype.name == "QuantisedAsymm8":
            out.append(rng.integers(0, 256, info.shape).astype(np.uint8))
        elif info.dtype.name == "Float16":
            out.append(rng.standard_normal(info.shape).astype(np.float16))
        else:
            out.append(rng.standard_normal(info.shape).astype(info.dtype.np_dtype))
    return out


def _converts(path, **kw):
    try:
        return armnn_import.convert(path, **kw)
    except armnn_import.UnsupportedModelError:
        return None


@pytest.mark.parametrize("path", OTHERS, ids=_id)
def test_layout_quantized_models_match_keep(path, armnn_runner):
    """The layout the source already has changes nothing (same bytes); the other one gives
    the keep results after permuting inputs and outputs: exactly, for quantized outputs."""
    target, same = ("nhwc", "nchw") if path.endswith(".onnx") else ("nchw", "nhwc")
    keep = _converts(path)
    if keep is None:  # refused whatever the layout (e.g. int8 EXP: float intermediates)
        assert _converts(path, layout=target) is None
        return
    assert armnn_import.convert(path, layout=same).to_bytes() == keep.to_bytes()
    other = armnn_import.convert(path, layout=target)
    xs = _random_inputs(keep)
    perm = TO[target]
    back = tuple(int(i) for i in np.argsort(perm))
    want = armnn_runner(keep.to_bytes(), xs)
    got = armnn_runner(other.to_bytes(), [np.ascontiguousarray(x.transpose(perm)) if x.ndim == 4 else x for x in xs])
    for g, w in zip(got, want):
        g = g.transpose(back) if g.ndim == 4 else g
        if w.dtype == np.uint8:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
