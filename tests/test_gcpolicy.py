"""The collector is off during a conversion and back on, as the caller had it, after it."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest

import armnn_import
import armnn_import.api as api
from armnn_import.gcpolicy import fewer_collections

pytestmark = pytest.mark.unit
MODEL = Path(__file__).resolve().parents[1] / "test_models" / "tflite" / "ops" / "mean.float32.tflite"


def test_off_inside_and_restored_after():
    old = gc.get_threshold()
    assert gc.isenabled()
    with fewer_collections():
        assert not gc.isenabled()
        with fewer_collections():      # nested: a no-op
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_threshold() == old


def test_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with fewer_collections():
            1 / 0
    assert gc.isenabled()


def test_a_caller_who_disabled_it_keeps_it_disabled():
    gc.disable()
    try:
        with fewer_collections():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_convert_runs_without_collections_and_restores_them(monkeypatch):
    seen = []
    real = api._after_frontend

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(api, "_after_frontend", spy)
    result = armnn_import.convert(str(MODEL))
    assert result.to_bytes()[4:8] == b"ARMN"
    assert seen == [False] and gc.isenabled()
