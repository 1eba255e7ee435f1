"""Head to head with Arm NN 20.08's own converter (its TfLite parser plus its
serializer, built by tests/armnn_runtime/build.sh as armnn-tflite-anchor).

Every .tflite under test_models/ goes through both converters; each result is
run on the real Arm NN 20.08 runtime and compared with LiteRT's stored
outputs. Whatever the anchor converts correctly, ours must convert correctly.
`python tests/tflite/test_anchor.py` prints the table."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "test_models", "tflite")
MANIFEST = json.load(open(os.path.join(ROOT, "manifest.json")))["models"]


def _ok(outs, data, quantized_lsb=3):
    """Outputs match LiteRT's: float rtol 1e-3/atol 1e-4, 8-bit within `quantized_lsb` levels
    (int8 references are compared after the exact +128 shift to uint8)."""
    if len(outs) != sum(1 for k in data.files if k.startswith("output_")):
        return False
    for i, got in enumerate(outs):
        want = data[f"output_{i}"]
        if got.size != want.size:
            return False
        got = got.reshape(want.shape)
        if want.dtype in (np.int8, np.uint8):
            want = want.astype(np.int32) + (128 if want.dtype == np.int8 else 0)
            got = got.astype(np.int32) + (128 if got.dtype == np.int8 else 0)
            if np.abs(got - want).max() > quantized_lsb:
                return False
        elif not np.allclose(got.astype(np.float64), want, rtol=1e-3, atol=1e-4):
            return False
    return True


def _inputs(data, dtypes):
    xs = []
    for i, dt in enumerate(dtypes):
        x = data[f"input_{i}"]
        if x.dtype == np.int8 and dt == np.uint8:
            x = (x.astype(np.int16) + 128).astype(np.uint8)
        xs.append(np.ascontiguousarray(x.astype(dt)))
    return xs


def _layer_count(runner, path):
    out = subprocess.run([runner, "--layers", path, tempfile.mkdtemp()], capture_output=True, text=True)
    return sum(1 for line in out.stdout.splitlines() if line.startswith("layer ")) or None


def compare(entry, runner, anchor):
    """(anchor status, our status, anchor layers, our layers); status is
    'ok', 'wrong' (runs, wrong numbers) or 'failed: <why>'."""
    import armnn_import
    from armnn_import.testing.armnn_runtime import ArmnnRuntimeError, run_armnn

    path = os.path.join(ROOT, entry["file"])
    data = np.load(os.path.join(ROOT, entry["expected"]))
    n_in = sum(1 for k in data.files if k.startswith("input_"))
    with tempfile.TemporaryDirectory() as tmp:
        theirs = os.path.join(tmp, "anchor.armnn")
        p = subprocess.run([anchor, path, theirs], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            a_status, a_layers = "failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:80], None
        else:
            a_layers = _layer_count(runner, theirs)
            dtypes = [np.dtype(i["dtype"]).type if i["dtype"] != "int8" else np.int8 for i in entry["inputs"]]
            try:
                outs = run_armnn(theirs, _inputs(data, dtypes)[:n_in], runner=runner, extra_args=["--graph-order"])
                a_status = "ok" if _ok(outs, data) else "wrong"
            except ArmnnRuntimeError as e:
                a_status = "failed: " + str(e).splitlines()[-1][:80]
    try:
        r = armnn_import.convert(path)
    except armnn_import.ArmnnImportError as e:
        return a_status, "failed: " + e.lines()[0][:80], a_layers, None
    dtypes = [l.outputs[0].dtype.np_dtype for l in r.network.input_layers]
    try:
        outs = run_armnn(r.to_bytes(), _inputs(data, dtypes), runner=runner)
        o_status = "ok" if _ok(outs, data) else "wrong"
    except ArmnnRuntimeError as e:
        o_status = "failed: " + str(e).splitlines()[-1][:80]
    return a_status, o_status, a_layers, len(r.network.layers)


@pytest.fixture(scope="module")
def table(armnn_runner):
    from armnn_import.testing.armnn_runtime import find_anchor

    runner = armnn_runner.path  # skips when the numpy executor stands in for the harness
    anchor = find_anchor()
    if anchor is None:
        pytest.fail("the harness did not build armnn-tflite-anchor")
    return {e["file"]: compare(e, runner, anchor) for e in MANIFEST}


def test_everything_the_anchor_converts_correctly_we_convert_correctly(table):
    worse = {f: row for f, row in table.items() if row[0] == "ok" and row[1] != "ok"}
    assert not worse, "\n".join(f"{f}: {row}" for f, row in worse.items())


def test_we_convert_more_than_the_anchor(table):
    ours = sum(row[1] == "ok" for row in table.values())
    theirs = sum(row[0] == "ok" for row in table.values())
    assert ours > theirs


def main():
    from armnn_import.testing.armnn_runtime import build_harness, find_anchor

    runner = build_harness()
    anchor = find_anchor()
    rows = {e["file"]: compare(e, runner, anchor) for e in MANIFEST}
    print(f"{'model':46s} {'anchor':28s} {'armnn-import':28s} layers (anchor/ours)")
    for f, (a, o, la, lo) in rows.items():
        print(f"{f:46s} {a[:28]:28s} {o[:28]:28s} {la}/{lo}")
    n = len(rows)
    print(f"anchor correct: {sum(r[0] == 'ok' for r in rows.values())}/{n}; "
          f"armnn-import correct: {sum(r[1] == 'ok' for r in rows.values())}/{n}; "
          f"anchor correct but ours not: {sum(r[0] == 'ok' and r[1] != 'ok' for r in rows.values())}")


if __name__ == "__main__":
    sys.exit(main())
