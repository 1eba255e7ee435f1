"""isolate.py: onnx's C++ helpers run in a child process, never a fork of a process with threads
(a fork copies their locks, held or not, and can deadlock the child; Python 3.12 warns about it).
With a thread running, the job goes to a worker process (fork+exec'd), with the same results
and the same isolation: a crash, an exhausted memory or a hang of the child gives None, and
the conversion its usual warning or typed error."""
from __future__ import annotations

import faulthandler
import hashlib
import os
import select
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import armnn_import
from armnn_import.errors import ConversionError
from armnn_import.report import Report
from armnn_import_frontends.onnx import isolate, isolate_worker, upgrade

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/onnx
from shape_crash import assert_shape_inference_crash_refused  # noqa: E402


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


@pytest.fixture
def threaded(monkeypatch):
    """A second thread waits on an Event while the test runs; os.fork must not be called, and
    no warning about forking with threads may be raised (on Python 3.12+ os.fork warns)."""
    forks = []

    def no_fork():
        forks.append(threading.active_count())
        raise AssertionError("os.fork() called with threads running")

    done = threading.Event()
    thread = threading.Thread(target=done.wait, daemon=True)
    thread.start()
    monkeypatch.setattr(os, "fork", no_fork)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    done.set()
    thread.join()
    assert not forks
    assert not [w for w in caught if "fork" in str(w.message)], [str(w.message) for w in caught]


def rms_model():
    """RMSNormalization has no converter: its function body (onnx C++) is expanded in the child."""
    scale = np.linspace(0.5, 1.5, 8).astype(np.float32)
    return model([h.make_node("RMSNormalization", ["x", "s"], ["y"], epsilon=1e-5)], [vi("x", [2, 3, 8])],
                 [vi("y", None)], inits=[nh.from_array(scale, "s")], opset=23)


@pytest.mark.slow  # (a CLI run, or several reference models: tests/tiers.py)
def test_a_process_with_threads_is_not_forked(threaded, tmp_path):
    """Same bytes as the CLI writes (single-threaded, a fork), with shape inference and expansion."""
    m = rms_model()
    assert not isolate.fork_is_safe()
    report = Report()
    result = armnn_import.convert(m, report=report)
    assert not [w for w in report.warnings if "crashed" in w]
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    subprocess.run([sys.executable, "-m", "armnn_import", str(path), "-o", str(tmp_path / "m.armnn"), "-q"],
                   check=True)
    assert result.to_bytes() == (tmp_path / "m.armnn").read_bytes()


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARITY = ["torch_encoder_layer_op13", "yolo_head_op17", "legacy_ops_op8", "attention_block", "transformer_encoder",
          "resize_op10"]
HASHES = """
import hashlib, sys, armnn_import
from armnn_import_frontends.onnx import isolate
assert isolate.fork_is_safe()
for p in sys.argv[1:]:
    try:
        print(hashlib.sha256(armnn_import.convert(p).to_bytes()).hexdigest())
    except armnn_import.ArmnnImportError as e:
        print(str(e).splitlines()[0])
"""


@pytest.mark.slow  # (a CLI run, or several reference models: tests/tiers.py)
def test_reference_models_convert_the_same_in_a_process_with_threads(threaded, tmp_path):
    """Models with PyTorch's shape computations, old opsets (the version converter runs in the
    child too) and resizes: the worker's analysis gives the bytes of the fork's."""
    old = model([h.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=1)], [vi("x", [1, 3, 2, 2])],
                [vi("y", [1, 3, 2, 2])], inits=[nh.from_array(np.arange(3, dtype=np.float32), "b")], opset=6)
    (tmp_path / "old.onnx").write_bytes(old.SerializeToString())
    paths = [os.path.join(REPO, "test_models", "onnx", f"{n}.onnx") for n in PARITY] + [str(tmp_path / "old.onnx")]
    want = subprocess.run([sys.executable, "-c", HASHES, *paths], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    got = []
    for p in paths:
        try:
            got.append(hashlib.sha256(armnn_import.convert(p).to_bytes()).hexdigest())
        except armnn_import.ArmnnImportError as e:
            got.append(str(e).splitlines()[0])
    assert got == want and len(set(got)) == len(paths) and all(len(x) == 64 for x in want)  # (all convert)


@pytest.mark.slow  # (a CLI run, or several reference models: tests/tiers.py)
def test_threads_converting_at_once_each_get_a_worker(threaded):
    """A pipeline converting from several threads: each conversion's child is its own."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [os.path.join(REPO, "test_models", "onnx", f"{n}.onnx") for n in PARITY[:4]] * 2
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda p: armnn_import.convert(p).to_bytes(), paths))
    assert got[:4] == got[4:] and len(set(got)) == 4
    assert all(w.proc.poll() is None for w in isolate_worker._idle)


def test_the_workers_analysis_is_the_converters(threaded, monkeypatch):
    """analysis_view.py sends the worker what analyse() reads of the converter: its answer equals
    analyse() run in this process on the converter itself (benign models: no isolation needed)."""
    from armnn_import_frontends.onnx import convert as onnx_convert

    compared = []

    def both(fn, *args, timeout=600.0, portable=None):
        direct = fn(*args)
        via = isolate.isolated(fn, *args, timeout=timeout, portable=portable)
        compared.append(fn.__name__)
        assert via == direct
        return via

    monkeypatch.setattr(onnx_convert, "isolated", both)
    armnn_import.convert(rms_model())
    armnn_import.convert(os.path.join(REPO, "test_models", "onnx", "attention_block.onnx"))
    assert compared == ["analyse", "analyse"]


def test_an_onnxruntime_session_has_threads_and_the_runtime_agrees(armnn_runner, monkeypatch):
    """An onnxruntime session starts native threads (threading.active_count() does not see them)."""
    m = rms_model()
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(7).standard_normal((2, 3, 8)).astype(np.float32)
    want = session.run(None, {"x": x})[0]
    assert not isolate.fork_is_safe()
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("os.fork() called with onnxruntime's threads running"))
    got = armnn_runner(armnn_import.convert(m).to_bytes(), [x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_a_crash_of_shape_inference_in_the_worker_is_the_same_refusal(threaded):
    assert_shape_inference_crash_refused()
    assert armnn_import.convert(rms_model()).network.layers  # the worker still serves


def test_a_crash_of_the_version_converter_in_the_worker_is_the_same_error(threaded, monkeypatch):
    monkeypatch.setattr(upgrade, "_upgrade", faulthandler._sigsegv)  # (picklable: a crash by reference)
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 3])], [vi("y", [1, 3])], opset=6)
    with pytest.raises(ConversionError, match="onnx.version_converter crashed upgrading it to opset 7"):
        armnn_import.convert(m)


CHECKS = """
import ctypes, os, select, time
from armnn_import_frontends.onnx import isolate
assert isolate.isolated(select.select, [], [], [], 0) == ([], [], [])
assert isolate.isolated(ctypes.string_at, 0) is None  # a segfault
assert isolate.isolated(bytearray, 1 << 60) is None  # MemoryError
t = time.monotonic()
assert isolate.isolated(select.select, [], [], [], 60, timeout=1.0) is None  # hung: killed
assert time.monotonic() - t < 20
assert isolate.isolated(os.getpid) not in (None, os.getpid())  # and the next job runs
"""


def test_crash_memory_and_hang_give_none_in_a_fork():
    """In a single-threaded process (the CLI's), with every warning shown: none about the fork."""
    code = "from armnn_import_frontends.onnx import isolate\nassert isolate.fork_is_safe()\n" + CHECKS
    p = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and "fork" not in p.stderr, p.stderr


def test_crash_memory_and_hang_give_none_in_the_worker(threaded):
    exec(CHECKS, {})


def test_a_timed_out_worker_leaves_no_process_behind(monkeypatch):
    monkeypatch.setattr(isolate, "fork_is_safe", lambda: False)
    assert isolate.isolated(os.getpid) is not None
    worker = isolate_worker._idle[-1]
    assert isolate.isolated(select.select, [], [], [], 60, timeout=1.0) is None
    assert worker.proc.poll() is not None and worker not in isolate_worker._idle
    deadline = time.monotonic() + 10  # (SIGKILL is delivered asynchronously)
    while alive_in_group(worker.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive_in_group(worker.proc.pid)  # its child was killed with it


def alive_in_group(pgid: int) -> list[int]:
    """Processes of process group `pgid` that are neither dead nor zombies (left to be reaped)."""
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            state, _, group = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state not in "ZX":
            alive.append(int(pid))
    return alive


SINGLE = """
import threading, numpy
from armnn_import_frontends.onnx import isolate
print(isolate.fork_is_safe(), end=" ")
done = threading.Event(); t = threading.Thread(target=done.wait); t.start()
print(isolate.fork_is_safe()); done.set()
"""


def test_a_single_threaded_process_forks():
    """The CLI's case: numpy's OpenBLAS pool (stopped by OpenBLAS at every fork) is not a thread
    that makes a fork unsafe; a Python thread is."""
    out = subprocess.run([sys.executable, "-c", SINGLE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


def test_a_worker_killed_while_idle_is_replaced(monkeypatch):
    monkeypatch.setattr(isolate, "fork_is_safe", lambda: False)
    first = isolate.isolated(os.getpid)
    worker = isolate_worker._idle[-1]
    os.kill(worker.proc.pid, 9)
    worker.proc.wait()
    second = isolate.isolated(os.getpid)
    assert second not in (None, first, os.getpid()) and worker not in isolate_worker._idle
