"""passes/names.py: from the 23.08 format on, layers other than Input and Output are numbered,
since Arm NN 23.08's workloads build "<layer name>_<label>" on every inference
(RefWorkloadUtils.hpp). The renamed file is the same network: every reference model's 23.08 file
equals the source-named one layer for layer (types, descriptors, tensors, connections, I/O
names), and on the real Arm NN 23.08 runtime both give byte-identical outputs. The report's
nodes name the new layers, and --layer-names source keeps the model's names."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import armnn_import
from armnn_import.errors import ArmnnImportError, ConversionError
from armnn_import.ir.types import LayerType as L
from armnn_import.serialize.reader import read

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reference_models import ROOT, all_models  # noqa: E402

IO = (L.Input, L.Output)
RUNTIME_MODELS = ["tflite/models/embedding_keras.float32.tflite", "tflite/models/long_names_mlp.float32.tflite",
                  "tflite/models/mobilenet_v1_mini.uint8.tflite", "onnx/attention_block.onnx",
                  "tflite/models/lstm_keras.float32.tflite"]


def _pair(path, **kw):
    named = armnn_import.convert(str(path), target="23.08", layer_names="source", **kw)
    short = armnn_import.convert(str(path), target="23.08", **kw)
    return named, short


def _same_network(a: bytes, b: bytes) -> None:
    ga, gb = read(a), read(b)
    la, lb = ga.layers, gb.layers
    assert [l.type for l in la] == [l.type for l in lb]
    index_a, index_b = {l: i for i, l in enumerate(la)}, {l: i for i, l in enumerate(lb)}
    for x, y in zip(la, lb):
        assert x.desc == y.desc and x.outputs == y.outputs and x.binding_id == y.binding_id
        assert [(index_a[p.layer], p.slot) for p in x.inputs] == [(index_b[p.layer], p.slot) for p in y.inputs]
        assert x.tensors.keys() == y.tensors.keys()
        for k in x.tensors:
            assert x.tensors[k].info == y.tensors[k].info
            assert np.asarray(x.tensors[k].data).tobytes() == np.asarray(y.tensors[k].data).tobytes()
        if x.type in IO:
            assert x.name == y.name
        else:
            assert y.name.rstrip("_").isdigit() and len(y.name) <= len(str(len(lb))) + 1


def test_every_reference_model_is_the_same_network_with_short_names():
    done = 0
    for mid, path, _ in all_models():
        try:
            named, short = _pair(path)
        except ArmnnImportError:
            continue  # (refused at 23.08: tests/test_targets.py and the reference-model tests)
        _same_network(named.to_bytes(), short.to_bytes())
        assert short.report.layer_names == "short" and named.report.layer_names == "source"
        done += 1
    assert done > 400


@pytest.mark.parametrize("mid", RUNTIME_MODELS)
def test_short_names_give_the_same_outputs_on_arm_nn_23_08(mid, armnn_runner_for):
    run = armnn_runner_for("23.08")
    path = ROOT / mid
    data = np.load(path.with_suffix(".npz"))
    named, short = _pair(path)
    inputs = named.network.input_layers
    feed = [data[k] for k in sorted(k for k in data.files if k.startswith("input"))] \
        if mid.startswith("tflite") else [data[f"input_{i}"] if f"input_{i}" in data.files else data[l.name]
                                          for i, l in enumerate(inputs)]
    feed = [f.astype(np.uint8) if l.outputs[0].dtype.name == "QuantisedAsymm8" and f.dtype == np.int8 else f
            for f, l in zip(feed, inputs)]
    got_named, got_short = run(named.to_bytes(), feed), run(short.to_bytes(), feed)
    assert len(got_named) == len(got_short) > 0
    for a, b in zip(got_named, got_short):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_report_names_the_renamed_layers():
    r = armnn_import.convert(str(ROOT / "tflite/models/embedding_keras.float32.tflite"), target="23.08")
    live = {l.name for l in r.network.layers}
    for entry in r.report.nodes:
        assert entry["layers"] and set(entry["layers"]) <= live
        for ref in entry.get("outputs") or ():
            assert ref is None or ref.rpartition(":")[0] in live
    assert {e["node"] for e in r.report.nodes} == {"sequential/embedding/embedding_lookup1",
                                                  "StatefulPartitionedCall:0"}


def _numbered_io_model(tmp_path):
    """An ONNX model whose input and output are called '1' and '2': the names layers would get."""
    g = helper.make_graph([helper.make_node("Relu", ["1"], ["r"], name="relu"),
                           helper.make_node("Neg", ["r"], ["2"], name="neg")], "g",
                          [helper.make_tensor_value_info("1", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("2", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "numbered.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_numbered_inputs_keep_their_names(tmp_path, armnn_runner_for):
    r = armnn_import.convert(str(_numbered_io_model(tmp_path)), target="23.08")
    names = [l.name for l in r.network.layers]
    assert len(set(names)) == len(names)
    assert [l.name for l in r.network.input_layers] == ["1"] and [l.name for l in r.network.output_layers] == ["2"]
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (got,) = armnn_runner_for("23.08")(r.to_bytes(), [x])
    np.testing.assert_array_equal(got, -np.maximum(x, 0))


@pytest.mark.parametrize("target,policy,short", [("19.02", "auto", False), ("20.08", "auto", False),
                                                 ("23.08", "auto", True), ("23.08", "source", False),
                                                 ("20.08", "short", True)])
def test_policy_per_target(target, policy, short, tmp_path):
    r = armnn_import.convert(str(_numbered_io_model(tmp_path)), target=target, layer_names=policy)
    inner = [l.name for l in r.network.layers if l.type not in IO]
    assert all(n.rstrip("_").isdigit() for n in inner) == short
    assert r.report.layer_names == ("short" if short else "source")


def test_unknown_policy_is_refused(tmp_path):
    with pytest.raises(ConversionError, match="layer_names must be one of auto, source, short"):
        armnn_import.convert(str(_numbered_io_model(tmp_path)), target="23.08", layer_names="long")


def test_cli_layer_names(tmp_path):
    model = ROOT / "tflite/models/embedding_keras.float32.tflite"
    files = {}
    for policy in ("auto", "source"):
        out, rep = tmp_path / f"{policy}.armnn", tmp_path / f"{policy}.json"
        subprocess.run([sys.executable, "-m", "armnn_import", str(model), "-o", str(out), "--target", "23.08",
                        "--layer-names", policy, "--report", str(rep), "-q"], check=True)
        files[policy] = out.read_bytes()
        report = json.loads(rep.read_text())
        report = report[0] if isinstance(report, list) else report
        assert report["layer_names"] == ("short" if policy == "auto" else "source")
    _same_network(files["source"], files["auto"])
    assert b"sequential/embedding/embedding_lookup1" in files["source"]
    assert b"sequential/embedding/embedding_lookup1" not in files["auto"]
