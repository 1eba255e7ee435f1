"""ONNX external data is read only from inside the model's folder: no absolute
paths, no '..', no symbolic links leading out; offset and length are checked
against the file; a missing file is a clear LoadError."""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import armnn_import
from armnn_import.errors import LoadError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_mutators as fm  # noqa: E402

W = np.arange(4, dtype=np.float32).reshape(1, 4)


def _model(location=None, offset=None, length=None, *, embedded=False):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    if embedded:
        w = numpy_helper.from_array(W, "w")
    else:
        w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], data_location=TensorProto.EXTERNAL)
        for k, v in (("location", location), ("offset", offset), ("length", length)):
            if v is not None:
                e = w.external_data.add()
                e.key, e.value = k, str(v)
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@pytest.fixture
def layout(tmp_path):
    """tmp/model/ (the model's folder) and tmp/outside/secret.bin beside it."""
    model_dir, outside = tmp_path / "model", tmp_path / "outside"
    model_dir.mkdir()
    outside.mkdir()
    (outside / "secret.bin").write_bytes(W.tobytes())
    (model_dir / "w.bin").write_bytes(W.tobytes())
    return model_dir, outside


def _convert(model_dir, data):
    path = model_dir / "m.onnx"
    path.write_bytes(data)
    with fm.bounded(10):  # a FIFO or device must not block the conversion
        return armnn_import.convert(str(path))


def test_external_data_inside_the_folder_converts_like_embedded_weights(layout):
    model_dir, _ = layout
    external = _convert(model_dir, _model("w.bin")).to_bytes()
    embedded = armnn_import.convert(_model(embedded=True)).to_bytes()
    assert external == embedded


def test_offset_and_length_select_the_bytes(layout):
    model_dir, _ = layout
    (model_dir / "packed.bin").write_bytes(b"\xAA" * 100 + W.tobytes() + b"\xBB" * 7)
    got = _convert(model_dir, _model("packed.bin", offset=100, length=16)).to_bytes()
    assert got == armnn_import.convert(_model(embedded=True)).to_bytes()


def test_symlink_inside_the_folder_is_allowed(layout):
    model_dir, _ = layout
    (model_dir / "sub").mkdir()
    os.symlink("../w.bin", model_dir / "sub" / "link.bin")
    assert _convert(model_dir, _model("sub/link.bin")).to_bytes() == \
        armnn_import.convert(_model(embedded=True)).to_bytes()


@pytest.mark.parametrize("location", ["../outside/secret.bin", "sub/../../outside/secret.bin", "./../outside/secret.bin",
                                      "..\\outside\\secret.bin", "..", "w.bin/../../outside/secret.bin"])
def test_dot_dot_is_refused(layout, location):
    model_dir, _ = layout
    (model_dir / "sub").mkdir()
    with pytest.raises(LoadError, match="outside"):
        _convert(model_dir, _model(location))


def test_absolute_path_is_refused(layout):
    model_dir, outside = layout
    for location in (str(outside / "secret.bin"), str(model_dir / "w.bin"), "/etc/passwd", "//etc/passwd",
                     "\\\\server\\share\\w.bin", "C:\\w.bin", "C:w.bin"):
        with pytest.raises(LoadError, match="outside"):
            _convert(model_dir, _model(location))


def test_symlink_escaping_the_folder_is_refused(layout):
    model_dir, outside = layout
    os.symlink(outside / "secret.bin", model_dir / "link.bin")
    with pytest.raises(LoadError, match="outside"):
        _convert(model_dir, _model("link.bin"))


def test_symlinked_directory_escaping_the_folder_is_refused(layout):
    model_dir, outside = layout
    os.symlink(outside, model_dir / "data")
    with pytest.raises(LoadError, match="outside"):
        _convert(model_dir, _model("data/secret.bin"))


def test_symlink_to_a_device_is_refused(layout):
    model_dir, _ = layout
    os.symlink("/dev/zero", model_dir / "zero.bin")
    with pytest.raises(LoadError):
        _convert(model_dir, _model("zero.bin", length=16))


def test_fifo_in_the_folder_does_not_block(layout):
    model_dir, _ = layout
    os.mkfifo(model_dir / "fifo.bin")
    with pytest.raises(LoadError):
        _convert(model_dir, _model("fifo.bin", length=16))


def test_directory_as_data_file_is_refused(layout):
    model_dir, _ = layout
    (model_dir / "dir.bin").mkdir()
    with pytest.raises(LoadError):
        _convert(model_dir, _model("dir.bin"))


def test_missing_file_is_a_clear_error(layout):
    model_dir, _ = layout
    with pytest.raises(LoadError, match="not found") as e:
        _convert(model_dir, _model("nowhere.bin"))
    assert "nowhere.bin" in str(e.value) and "'w'" in str(e.value)


def test_missing_location_is_refused(layout):
    model_dir, _ = layout
    with pytest.raises(LoadError, match="location"):
        _convert(model_dir, _model(None, length=16))


@pytest.mark.parametrize("offset, length", [(0, 17), (1, 16), (16, 1), (-1, 16), (0, -16), (1 << 40, 16),
                                            (0, 1 << 40), ("x", 16), (0, "1e3")])
def test_offset_and_length_are_checked_against_the_file(layout, offset, length):
    model_dir, _ = layout
    with pytest.raises(LoadError):
        _convert(model_dir, _model("w.bin", offset=offset, length=length))


def test_length_disagreeing_with_the_shape_is_refused(layout):
    model_dir, _ = layout
    (model_dir / "long.bin").write_bytes(W.tobytes() * 2)
    with pytest.raises(LoadError):
        _convert(model_dir, _model("long.bin"))  # 32 bytes for a [1, 4] float tensor
    with pytest.raises(LoadError):
        _convert(model_dir, _model("w.bin", length=8))


def test_external_data_from_bytes_is_refused():
    with pytest.raises(LoadError, match="external"):
        armnn_import.convert(_model("w.bin"))
