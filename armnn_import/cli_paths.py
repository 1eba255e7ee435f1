"""The convert command's inputs and outputs: --input-shape, --input-value, and the output path of each
model (-o a file or a folder, or next to the model; unique names in a batch; never over an
input file)."""
from __future__ import annotations

import os

from .cli_common import UsageError


def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) < 1:
            raise UsageError(f"--input-shape {item!r}: expected NAME=D,D,... with positive integers")
        shapes[name] = shape
    return shapes


def parse_values(items: list[str]) -> dict[str, str]:
    """--input-value NAME=V or NAME=V,V,...: the text, checked against the input's dtype and
    shape by the frontend (armnn_import.input_values), which knows them."""
    values = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name or not text.strip() or any(not v.strip() for v in text.split(",")):
            raise UsageError(f"--input-value {item!r}: expected NAME=V or NAME=V,V,...")
        if name in values:
            raise UsageError(f"--input-value {name!r} given twice")
        values[name] = text
    return values


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def output_paths(models: list[str], out: str | None) -> list[str]:
    _refuse_repeated_inputs(models)
    if out is None:
        paths = [os.path.join(os.path.dirname(m), os.path.basename(n) + ".armnn")
                 for m, n in zip(models, batch_names(models))]
    elif len(models) == 1 and not os.path.isdir(out):
        paths = [out]
    else:
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"-o {out}: with several models the output must be a directory")
        paths = [os.path.join(out, n + ".armnn") for n in batch_names(models)]
    seen = {}
    for m, p in zip(models, paths):
        for src in models:
            if _same_file(p, src):
                raise UsageError(f"{m}: the output {p} is an input file; refusing to overwrite it")
        key = os.path.realpath(p)
        if key in seen:  # only where the file system folds names (e.g. case) that differ here
            raise UsageError(f"{seen[key]} and {m} would both be written to {p}")
        seen[key] = m
    return paths


def _refuse_repeated_inputs(models: list[str]) -> None:
    """Two paths of one file would convert it twice into two names: a mistake."""
    seen = {}
    for m in models:
        try:
            st = os.stat(m)
            keys = [("inode", st.st_dev, st.st_ino), os.path.realpath(m)]
        except OSError:  # reported when it is converted
            keys = [os.path.realpath(m)]
        for key in keys:
            if key in seen:
                raise UsageError(f"{seen[key]} and {m} are the same file; give it once")
        seen.update((k, m) for k in keys)


def batch_names(models: list[str]) -> list[str]:
    """Each model's output name (a relative path, no extension): its file name
    without the extension or, where several models share that name, the shortest
    suffix of its path that no other model has: a/model.onnx, b/model.onnx,
    c/x/model.onnx -> a/model, b/model, x/model. Files of one folder that differ
    only by extension keep it (model.onnx, model.tflite)."""
    from collections import Counter

    parts = [os.path.abspath(m).split(os.sep) for m in models]
    folder_stem = [(tuple(p[:-1]), _stem(p[-1])) for p in parts]
    twice = Counter(folder_stem)
    comps = [p[:-1] + [p[-1] if twice[fs] > 1 else fs[1]] for p, fs in zip(parts, folder_stem)]
    by_name: dict[str, list[int]] = {}
    for i, c in enumerate(comps):
        by_name.setdefault(c[-1], []).append(i)
    names = []
    for i, c in enumerate(comps):
        others = [comps[j] for j in by_name[c[-1]] if j != i]  # only these can end like c
        k = next(k for k in range(1, len(c) + 1) if all(c[-k:] != d[-k:] for d in others))
        names.append(os.path.join(*c[-k:]))
    return names


def _stem(path: str) -> str:
    from .discovery import model_name
    return model_name(path)
