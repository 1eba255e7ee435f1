#!/usr/bin/env python3
"""Export torchvision classifiers to ONNX for the zoo sweep (not reference models).

Run with the generator venv (torch is never a dependency of the package):
    /opt/genvenv/bin/python scripts/gen_zoo_torchvision.py --out /tmp/zoo/tv [--only 'resnet|vit']
Writes <model>.op13.onnx and <model>.op17.onnx (TorchScript exporter, static shapes, batch 1)
with random seeded weights (weights=None: nothing is downloaded), and <out>/tv_manifest.json.
"""
import io
import json
import re
import sys
import types

# torchvision's registry of fake kernels for its own C++ ops (nms, roi_align) fails to import
# when its extension does not load (a CUDA build beside a CPU torch); no classifier uses them.
sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
import torch  # noqa: E402
import torchvision  # noqa: E402
from reference_io import seed_of, sweep_setup  # noqa: E402

# name: (input side, constructor keywords)
MODELS = {
    "resnet18": (64, {}), "mobilenet_v3_small": (64, {}), "efficientnet_b0": (64, {}),
    "regnet_y_400mf": (64, {}), "shufflenet_v2_x0_5": (64, {}), "squeezenet1_1": (64, {}),
    "mnasnet0_5": (64, {}), "googlenet": (64, {"aux_logits": False, "init_weights": True}),
    "densenet121": (64, {}), "vit_b_16": (224, {}), "swin_t": (64, {}),
}


def export(name, side, kw, opset):
    torch.manual_seed(seed_of(name) % 2**31)
    model = getattr(torchvision.models, name)(weights=None, num_classes=10, **kw).eval()
    # random BatchNorm statistics, so that a wrong normalization shows in the numbers
    g = torch.Generator().manual_seed(seed_of(name, "bn") % 2**31)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    buf = io.BytesIO()
    torch.onnx.export(model, (torch.randn(1, 3, side, side),), buf, dynamo=False, opset_version=opset,
                      do_constant_folding=True, input_names=["x"], output_names=["y"])
    return buf.getvalue()


def main():
    args, out, mpath, manifest = sweep_setup(__doc__, "/tmp/zoo/tv", "tv_manifest.json", "regex of model names")
    for name, (side, kw) in MODELS.items():
        if args.only and not re.search(args.only, name):
            continue
        for opset in (13, 17):
            key = f"{name}.op{opset}"
            try:
                buf = export(name, side, kw, opset)
            except Exception as e:  # the exporter's own refusal: recorded, not ours
                manifest[key] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                continue
            (out / f"{key}.onnx").write_bytes(buf)
            manifest[key] = {"side": side, "bytes": len(buf), "torchvision": torchvision.__version__}
            print(key, manifest[key], flush=True)
        mpath.write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
