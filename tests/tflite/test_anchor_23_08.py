"""Head to head with Arm NN 23.08's own converter: its TfLite parser plus its serializer, built by
tests/armnn_runtime/anchor-23.08.sh as <23.08 harness>/armnn-tflite-anchor, against a TfLite
schema written from the `tflite` package (tests/armnn_runtime/tflite_schema.py).

The reference models of test_models/tflite/models go through the anchor and through us with
--target 23.08; both files run on the real Arm NN 23.08 runtime and are compared with LiteRT's
stored outputs. Whatever the anchor converts correctly, ours converts correctly, in no more layers.
Skips with the reason when the anchor cannot be had here (no 23.08 runtime, no tflite package);
a failed anchor build is a failure."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_anchor import MANIFEST, ROOT, _inputs, _layer_count, _ok  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SCHEMA_PY = os.path.join(REPO, "tests", "armnn_runtime", "tflite_schema.py")
MODELS = [e for e in MANIFEST if e["file"].startswith("models/")]
# Where ours has more layers than the anchor's, and why (each is someone's open work).
MORE_LAYERS = {
    "models/lstm_keras.float32.tflite": "UNIDIRECTIONAL_SEQUENCE_LSTM is still lowered gate by gate; "
                                        "23.08 has a UnidirectionalSequenceLstm layer",
    "models/lstm_keras_time_major.float32.tflite": "as lstm_keras",
}


def test_tflite_schema_round_trips_through_flatc(tmp_path):
    """The schema written from the tflite package's modules gives flatc's Python output the same
    tables, slots, scalar types, defaults and enum values as the package (the script's --check)."""
    import tflite
    flatc = "/usr/bin/flatc"
    if not os.access(flatc, os.X_OK):
        pytest.skip("Debian's flatc (flatbuffers-compiler) is not installed")
    out = tmp_path / "schema.fbs"
    p = subprocess.run([sys.executable, SCHEMA_PY, "--check", flatc, os.path.dirname(tflite.__file__), str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert 'file_identifier "TFL3";' in text and "root_type Model;" in text
    # what Arm NN's parser reads, with the types TensorFlow declares
    for decl in ("builtin_code:BuiltinOperator;", "type:TensorType;", "fused_activation_function:ActivationFunctionType;",
                 "builtin_options:BuiltinOptions;", "dilation_w_factor:int = 1;", "idx_out_type:TensorType = INT32;"):
        assert decl in text, decl


@pytest.fixture(scope="module")
def anchor_23_08(armnn_runner_for):
    from armnn_import.testing.armnn_runtime import anchor_problem, find_anchor

    runner = armnn_runner_for("23.08")          # skips when Arm NN 23.08 cannot be had here
    anchor = find_anchor("23.08")
    if anchor is None:
        problem = anchor_problem("23.08")
        if problem and problem[0] == "unavailable":
            pytest.skip(f"Arm NN 23.08's TfLite parser: {problem[1]}")
        pytest.fail(f"the 23.08 harness built no armnn-tflite-anchor: {problem[1] if problem else 'no reason left'}")
    return runner, anchor


def _run(runner, path, data, dtypes, n_in, extra=()):
    from armnn_import.testing.armnn_runtime import ArmnnRuntimeError
    try:
        outs = runner(path, _inputs(data, dtypes)[:n_in], extra_args=list(extra))
        return "ok" if _ok(outs, data) else "wrong"
    except ArmnnRuntimeError as e:
        return "failed: " + str(e).splitlines()[-1][:80]


@pytest.fixture(scope="module")
def table(anchor_23_08, tmp_path_factory):
    """{model: (anchor status, our status, anchor layers, our layers)}."""
    runner, anchor = anchor_23_08
    tmp = tmp_path_factory.mktemp("anchor2308")
    ours_dir = tmp / "ours"
    files = [os.path.join(ROOT, e["file"]) for e in MODELS]
    # the path users take: one CLI run writes our files (a model it refuses has no file)
    subprocess.run([sys.executable, "-m", "armnn_import", "-q", "--target", "23.08", *files, "-o", str(ours_dir)],
                   capture_output=True, text=True, cwd=REPO)
    rows = {}
    for e, path in zip(MODELS, files):
        data = np.load(os.path.join(ROOT, e["expected"]))
        n_in = sum(1 for k in data.files if k.startswith("input_"))
        theirs = str(tmp / (os.path.basename(path) + ".anchor.armnn"))
        p = subprocess.run([anchor, path, theirs], capture_output=True, text=True, timeout=120)
        a_layers = None
        if p.returncode != 0:
            a_status = "failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:80]
        else:
            a_layers = _layer_count(runner.path, theirs)
            dtypes = [np.dtype(i["dtype"]).type for i in e["inputs"]]
            a_status = _run(runner, theirs, data, dtypes, n_in, ["--graph-order"])
        ours = ours_dir / (os.path.splitext(os.path.basename(path))[0] + ".armnn")
        if not ours.exists():
            rows[e["file"]] = (a_status, "failed: not converted", a_layers, None)
            continue
        from armnn_import.serialize import read
        net = read(ours.read_bytes())
        dtypes = [l.outputs[0].dtype.np_dtype for l in net.input_layers]
        rows[e["file"]] = (a_status, _run(runner, str(ours), data, dtypes, n_in), a_layers, len(net.layers))
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


def test_the_23_08_anchor_converts_and_runs_reference_models(table):
    good = [f for f, row in table.items() if row[0] == "ok"]
    assert len(good) >= 8, table            # the float CNNs at least: the anchor itself works


def test_what_the_23_08_anchor_converts_correctly_we_convert_correctly(table):
    worse = {f: row for f, row in table.items() if row[0] == "ok" and row[1] != "ok"}
    assert not worse, "\n".join(f"{f}: {row}" for f, row in worse.items())


def test_no_more_layers_than_the_23_08_anchor(table):
    more = {f: row for f, row in table.items() if row[0] == "ok" and row[3] is not None and row[3] > row[2]
            and f not in MORE_LAYERS}
    assert not more, "\n".join(f"{f}: anchor {row[2]} layers, ours {row[3]}" for f, row in more.items())
