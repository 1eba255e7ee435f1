"""The production TFLite models of the mediapipe 0.10.14 wheel (tests/tflite/mediapipe_models.py:
BlazeFace, face mesh, iris, palm and hand landmarks, pose, selfie segmentation), fetched once into
the wheel cache (tests/wheel_cache.py: pinned, sha256 checked; skipped offline, a failure under
CI=true), converted by the CLI at every target and run on every real Arm NN runtime that reads the
file (19.02 and 20.08 files on 20.08 and 23.08, 23.08 files on 23.08), against LiteRT on a seeded
input in the model's range (LiteRT's reference kernels; the tolerance is LiteRT's own spread
between those and its default kernels where that is above rtol 1e-3, atol 1e-4 x max|out|). Selfie segmentation is compared on its logits (the tensor before its
final sigmoid, made the output: mediapipe_models.with_output).

Default run (~40 s here): face_detection_short_range and hand_recrop at every (target, runtime)
pair, selfie_segmentation_landscape (mediapipe's custom Convolution2DTransposeBias) at three, and
face_landmark_with_attention's refusal. The others take 1-16 s an inference on CpuRef, 2-4 min a
model at every pair: marked ``slow`` (run with ``-m slow`` or ARMNN_IMPORT_LONG=1). The sweep's
table is docs/wheel-models.md (scripts/sweep_mediapipe.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from armnn_import import cli

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pytest runs with --import-mode=importlib
import mediapipe_models as M  # noqa: E402
import wheel_cache  # noqa: E402  (mediapipe_models puts tests/ on the path)

pytest.importorskip("ai_edge_litert", reason="LiteRT (ai-edge-litert) is the reference")

#: (file target, runtime release): every release that reads the file
PAIRS = [("19.02", "20.08"), ("19.02", "23.08"), ("20.08", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]
DEFAULT = {"face_detection_short_range": PAIRS, "hand_recrop": PAIRS,
           "selfie_segmentation_landscape": [("19.02", "20.08"), ("20.08", "23.08"), ("23.08", "23.08")]}
#: custom operators with no Arm NN equivalent and no public exact definition as builtins
REFUSED = {"face_landmark_with_attention": ("Landmarks2TransformMatrix", "TransformTensorBilinear",
                                            "TransformLandmarks")}
LONG = pytest.mark.skipif("not (os.environ.get('ARMNN_IMPORT_LONG') == '1' or 'slow' in config.getoption('markexpr'))",
                          reason="long tier (minutes on CpuRef): run with -m slow or ARMNN_IMPORT_LONG=1")


def _runs():
    for name in M.NAMES:
        if name in REFUSED:
            continue
        for target, release in PAIRS:
            default = (target, release) in DEFAULT.get(name, ())
            yield pytest.param(name, target, release, id=f"{name}-{target}-on-{release}",
                               marks=() if default else (LONG, pytest.mark.slow))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> (model path, input, LiteRT's outputs); converted files by (name, target)."""
    try:
        paths = M.model_paths()
    except wheel_cache.WheelUnavailable as e:
        wheel_cache.skip_or_fail(str(e))
    root, made, files = tmp_path_factory.mktemp("mediapipe"), {}, {}

    def get(name):
        if name not in made:
            path = paths[name]
            x = M.seeded_input(name, path)
            if name in M.LOGITS:
                path = root / f"{name}.logits.tflite"
                path.write_bytes(M.with_output(paths[name], M.LOGITS[name]))
            made[name] = path, x, M.litert(path, x)
        return made[name]

    def converted(name, target):
        if (name, target) not in files:
            out = files[name, target] = root / f"{name}-{target}.armnn"
            assert cli.main([str(get(name)[0]), "-o", str(out), "-q", "--target", target]) == 0
        return files[name, target]

    get.converted, get.paths = converted, paths
    return get


@pytest.mark.parametrize("name, target, release", list(_runs()))
def test_model_matches_litert_on_the_runtime(name, target, release, models, armnn_runner_for):
    _, x, (want, spread) = models(name)
    got = armnn_runner_for(release)(models.converted(name, target), [x], timeout=600)
    assert len(got) == len(want)
    for i, (g, w, s) in enumerate(zip(got, want, spread)):
        assert M.close(g, w, s), (f"output {i}: max abs error {np.abs(g.reshape(w.shape) - w).max():.3g} "
                                  f"(LiteRT's own spread {s:.3g})")


@pytest.mark.parametrize("name", list(REFUSED))
@pytest.mark.parametrize("target", ["19.02", "23.08"])
def test_custom_ops_are_refused_all_at_once(name, target, models, tmp_path, capsys):
    out = tmp_path / "m.armnn"
    assert cli.main([str(models.paths[name]), "-o", str(out), "--target", target]) == 1
    err = capsys.readouterr().err
    assert not out.exists()
    lines = err.strip().splitlines()
    assert all("has no Arm NN equivalent [unsupported-op]" in s for s in lines), err
    # every custom operator named in the one error, each node once (the model has 11 of them)
    assert {c for c in REFUSED[name] if f"custom operator '{c}'" in err} == set(REFUSED[name])
    assert len(lines) == 11 and "Traceback" not in err
