"""Helpers the reference-model generators share (scripts/gen_*_models.py)."""
from __future__ import annotations

import io
import zipfile

import numpy as np


def save_npz(path, arrays) -> None:
    """np.savez with fixed zip timestamps (np.savez stamps the current time), so that
    re-running a generator gives identical bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for key, arr in arrays.items():
            data = io.BytesIO()
            np.lib.format.write_array(data, np.ascontiguousarray(arr), allow_pickle=False)
            z.writestr(zipfile.ZipInfo(key + ".npy", (1980, 1, 1, 0, 0, 0)), data.getvalue(),
                       zipfile.ZIP_DEFLATED)
    path.write_bytes(buf.getvalue())


def onnx_value_info(v) -> dict:
    """An ONNX ValueInfoProto as a manifest entry: name, shape (dim_param names kept), dtype."""
    import onnx

    dims = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in v.type.tensor_type.shape.dim]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)
    return {"name": v.name, "shape": dims, "dtype": dtype.name}


def onnx_entry(name, path, proto, arch, exercises, opset, seed, generator) -> dict:
    """The manifest entry of an ONNX reference model saved at path (its data in {name}.npz)."""
    return {"name": name, "file": path.name, "data": f"{name}.npz", "architecture": arch, "exercises": exercises,
            "opset": opset, "seed": seed, "generator": generator,
            "inputs": [onnx_value_info(v) for v in proto.graph.input],
            "outputs": [onnx_value_info(v) for v in proto.graph.output],
            "op_types": sorted({n.op_type for n in proto.graph.node}), "size_bytes": path.stat().st_size}


def run_ort(proto_bytes, feeds):
    """onnxruntime's outputs of a serialized model, unoptimized and on one thread: the reference."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(proto_bytes, opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def merge_manifest(path, entries: list, key: str) -> None:
    """Put a generator's entries into a manifest: each replaces the entry of its `key` where it
    stands (so regenerating moves nothing), new ones go at the end; every other entry is left as it is."""
    import json
    from pathlib import Path
    path = Path(path)
    manifest = json.loads(path.read_text())
    new = {e[key]: e for e in entries}
    models = [new.pop(e[key], e) for e in manifest["models"]]
    manifest["models"] = models + [e for e in entries if e[key] in new]
    path.write_text(json.dumps(manifest, indent=1) + "\n")


def torch_export_checked(model, x, opset: int):
    """(ONNX proto, onnxruntime's output 0) of a torch module exported at `opset` with input x:
    shape inference strict, the full checker, and onnxruntime's output against torch's."""
    import onnx
    import torch
    buf = io.BytesIO()
    # (with gradients on: under no_grad, nn.TransformerEncoderLayer takes its fused fast path,
    # which has no ONNX export)
    torch.onnx.export(model, (torch.from_numpy(x),), buf, dynamo=False, opset_version=opset,
                      do_constant_folding=True, input_names=["input"], output_names=["output"])
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(buf.getvalue()), strict_mode=True)
    onnx.checker.check_model(proto, full_check=True)
    got = run_ort(proto.SerializeToString(), {"input": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return proto, got


def seed_of(*parts) -> int:
    """A seed from names (crc32 of "a/b/c"), stable across runs and machines."""
    import zlib

    return zlib.crc32("/".join(parts).encode())


def sweep_setup(doc: str, default_out: str, manifest_name: str, only_help: str, extra=()):
    """The zoo sweeps' command line (--out, --only REGEX and `extra` (flag, default) pairs) and
    their manifest: (args, out folder, manifest path, manifest so far)."""
    import argparse
    import json
    from pathlib import Path

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--only", help=only_help)
    for flag, default in extra:
        ap.add_argument(flag, default=default)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mpath = out / manifest_name
    return args, out, mpath, (json.loads(mpath.read_text()) if mpath.exists() else {})
