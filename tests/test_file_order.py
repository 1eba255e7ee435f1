"""The order our files list their layers in (serialize/writer.py file_order): last first for 23.08
when two or more layers carry weights, so that Arm NN 23.08, which makes Constant layers of those
weights in file order and copies them at every inference in that order, copies the first layers'
weights last; first first otherwise. Read from the file by Arm NN's own deserializer (armnn-run
--layers lists the layers as the file holds them), run on the 23.08 runtime against LiteRT, and read
back by our reader in the graph's order."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import armnn_import
from armnn_import import cli
from armnn_import.ir.graph import graph_differences
from armnn_import.serialize import read, write
from armnn_import.testing.armnn_runtime import harness_dir
from armnn_import.verify_cmd import verify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
from reference_models import ROOT  # noqa: E402

MODEL = ROOT / "tflite" / "models" / "mobilenet_v1_mini.float32.tflite"  # 7 weighted layers
ONE_WEIGHTED = ROOT / "tflite" / "ops" / "fully_connected.float32.tflite"


def _runner(release: str) -> str:
    path = str(harness_dir(release) / "armnn-run")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no Arm NN {release} runner at {path}")
    return path


def _file_names(runner: str, path) -> list[str]:
    """The layer names in file order, as Arm NN's deserializer reads them."""
    p = subprocess.run([runner, "--layers", str(path), os.path.dirname(str(path))],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    names = re.findall(r"^layer \d+ index=\d+ type=\w+ name=(.*) inputs=", p.stdout, re.M)
    assert names, p.stderr
    return names


@pytest.mark.parametrize("target, release, last_first", [("23.08", "23.08", True), ("20.08", "20.08", False),
                                                         ("19.02", "20.08", False)])
def test_layers_in_the_file(target, release, last_first, tmp_path):
    out = tmp_path / "model.armnn"
    assert cli.main([str(MODEL), "-o", str(out), "-q", "--target", target]) == 0
    names = [l.name for l in armnn_import.convert(MODEL, target=target).network.layers]
    assert _file_names(_runner(release), out) == (names[::-1] if last_first else names)
    back = read(out.read_bytes())
    assert [l.name for l in back.layers] == names  # read back first first
    assert write(back) == out.read_bytes()


def test_one_weighted_layer_stays_first_first(tmp_path):
    out = tmp_path / "model.armnn"
    assert cli.main([str(ONE_WEIGHTED), "-o", str(out), "-q", "--target", "23.08"]) == 0
    g = armnn_import.convert(ONE_WEIGHTED, target="23.08").network
    assert sum(l.type.name == "FullyConnected" for l in g.layers) == 1
    assert _file_names(_runner("23.08"), out) == [l.name for l in g.layers]


def test_last_first_file_runs_on_23_08_and_reads_back(tmp_path):
    out = tmp_path / "model.armnn"
    assert cli.main([str(MODEL), "-o", str(out), "-q", "--target", "23.08"]) == 0
    check = verify(MODEL, str(out), armnn_runtime=_runner("23.08"))
    assert check.ok, check.format()
    g = armnn_import.convert(MODEL, target="23.08").network
    assert graph_differences(g, read(out.read_bytes())) == []
