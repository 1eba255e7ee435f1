"""The committed TFLite reference models (test_models/tflite, made by
scripts/gen_tflite_models.py) are genuine: every manifest entry's file exists, is the
file the generator recorded, holds the operators it claims, and LiteRT still computes
the stored expected outputs from the stored inputs; every network's output depends
on its input."""
import hashlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
import tflite
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite.BuiltinOperator import BuiltinOperator

ROOT = Path(__file__).resolve().parents[2] / "test_models" / "tflite"
MANIFEST = json.loads((ROOT / "manifest.json").read_text())
ENTRIES = MANIFEST["models"]
OP_NAMES = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}

# Every operator the reference set promises a float32 single-operator model for.
FLOAT32_OPS = """CONV_2D DEPTHWISE_CONV_2D TRANSPOSE_CONV FULLY_CONNECTED AVERAGE_POOL_2D MAX_POOL_2D
L2_POOL_2D ADD SUB MUL DIV ADD_N MAXIMUM MINIMUM EQUAL GREATER LESS GREATER_EQUAL LESS_EQUAL NOT_EQUAL
FLOOR ABS SQRT RSQRT SQUARE NEG EXP RELU RELU6 RELU_N1_TO_1 RELU_0_TO_1 LOGISTIC TANH LEAKY_RELU HARD_SWISH
PRELU ELU SOFTMAX RESHAPE
SQUEEZE EXPAND_DIMS TRANSPOSE CONCATENATION PACK UNPACK SPLIT SPLIT_V STRIDED_SLICE SLICE PAD PADV2
MIRROR_PAD TILE GATHER DEPTH_TO_SPACE SPACE_TO_DEPTH SPACE_TO_BATCH_ND BATCH_TO_SPACE_ND MEAN SUM
REDUCE_MAX REDUCE_MIN REDUCE_PROD L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION RESIZE_BILINEAR
RESIZE_NEAREST_NEIGHBOR""".split()


def builtin_ops(buf):
    m = tflite.Model.GetRootAsModel(buf, 0)
    codes = [max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode())
             for i in range(m.OperatorCodesLength())]
    sg = m.Subgraphs(0)
    return [OP_NAMES[codes[sg.Operators(i).OpcodeIndex()]] for i in range(sg.OperatorsLength())]


def test_manifest_lists_exactly_the_files():
    on_disk = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/*") if p.is_file()}
    listed = {e["file"] for e in ENTRIES} | {e["expected"] for e in ENTRIES}
    assert on_disk == listed


def test_every_promised_operator_has_a_float32_model():
    covered = {t for e in ENTRIES if e["kind"] == "op" and e["variant"] == "float32" for t in e["tests"]}
    assert set(FLOAT32_OPS) - covered == set()


def test_each_variant_is_generated_or_skipped_with_a_reason():
    made = {(e["name"], e["variant"]) for e in ENTRIES}
    for s in MANIFEST["skipped"]:
        assert s["reason"].strip(), s
        assert (s["name"], s["variant"]) not in made, s


def _same_quantization(detail, spec):
    qp = detail["quantization_parameters"]
    if spec["quantization"] is None:
        return len(qp["scales"]) == 0
    return (np.allclose(qp["scales"], spec["quantization"]["scale"])
            and qp["zero_points"].tolist() == spec["quantization"]["zero_point"])


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_reference_outputs_reproduce(entry):
    buf = (ROOT / entry["file"]).read_bytes()
    assert hashlib.sha256(buf).hexdigest() == entry["sha256"]
    ops = builtin_ops(buf)
    assert ops == entry["builtin_ops"]
    assert set(entry["tests"]) <= set(ops)

    expected = np.load(ROOT / entry["expected"])
    n_in, n_out = len(entry["inputs"]), len(entry["outputs"])
    assert sorted(expected.files) == sorted([f"input_{i}" for i in range(n_in)] +
                                            [f"output_{i}" for i in range(n_out)])
    it = Interpreter(model_content=buf,
                     experimental_op_resolver_type=getattr(OpResolverType, entry["resolver"]))
    it.allocate_tensors()
    details = it.get_input_details()
    assert len(details) == n_in
    for i, (d, spec) in enumerate(zip(details, entry["inputs"])):
        x = expected[f"input_{i}"]
        assert d["name"] == spec["name"] and d["shape"].tolist() == spec["shape"] == list(x.shape)
        assert x.dtype == d["dtype"] == np.dtype(spec["dtype"])
        assert _same_quantization(d, spec)
        it.set_tensor(d["index"], x)
    it.invoke()
    details = it.get_output_details()
    assert len(details) == n_out
    for i, (d, spec) in enumerate(zip(details, entry["outputs"])):
        got, want = it.get_tensor(d["index"]), expected[f"output_{i}"]
        assert got.dtype == want.dtype == np.dtype(spec["dtype"]) and list(got.shape) == spec["shape"]
        assert _same_quantization(d, spec)
        if np.issubdtype(got.dtype, np.floating):
            # Loose enough for another CPU's SIMD summation order, far below any real error.
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        elif got.dtype == np.bool_:
            np.testing.assert_array_equal(got, want)
        else:  # quantized: one step of rounding difference at most
            assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1


NETWORKS = [e for e in ENTRIES if e["kind"] == "model"]


@pytest.mark.parametrize("entry", NETWORKS, ids=[e["file"] for e in NETWORKS])
def test_network_output_depends_on_input(entry):
    """A network whose output barely changes with its input would pass any conversion.
    Same measure as the generator's output_spread: 3 inputs seeded '<name>/spread/<k>',
    standard normal (integer inputs quantized with the input's scale/zero point); per
    output element the largest change across them must be at least 1% of the output's
    range over those runs, and at least 4 quantization steps for an integer output."""
    buf = (ROOT / entry["file"]).read_bytes()
    it = Interpreter(model_content=buf,
                     experimental_op_resolver_type=getattr(OpResolverType, entry["resolver"]))
    it.allocate_tensors()
    runs = []
    for k in range(3):
        rng = np.random.default_rng(zlib.crc32(f"{entry['name']}/spread/{k}".encode()))
        for d in it.get_input_details():
            x = rng.standard_normal(d["shape"]).astype(np.float32)
            if d["dtype"] == np.int32 and d["quantization"][0] == 0:  # token ids: in the stored input's range
                top = int(np.load(ROOT / entry["expected"])["input_0"].max()) + 1
                x = rng.integers(0, top, d["shape"]).astype(np.int32)
            elif d["dtype"] != np.float32:
                scale, zero_point = d["quantization"]
                info = np.iinfo(d["dtype"])
                x = np.clip(np.round(x / scale) + zero_point, info.min, info.max).astype(d["dtype"])
            it.set_tensor(d["index"], x)
        it.invoke()
        runs.append([it.get_tensor(d["index"]).astype(np.float64) for d in it.get_output_details()])
    for j, d in enumerate(it.get_output_details()):
        o = np.stack([r[j] for r in runs])
        spread, span = (o.max(0) - o.min(0)).max(), o.max() - o.min()
        assert spread > 0 and spread >= 1e-2 * span, (d["name"], spread, span)
        if d["dtype"] != np.float32 and d["quantization"][0] != 0:  # (not an ArgMax's class ids)
            assert spread >= 4, (d["name"], spread)
