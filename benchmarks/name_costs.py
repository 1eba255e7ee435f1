"""What a layer's name costs per inference on Arm NN 23.08's CpuRef, which builds every workload's
profiling name (layer name + "_" + label) on each inference (RefWorkloadUtils.hpp).

    python benchmarks/name_costs.py [MODEL.tflite]

Converts the model (default: test_models/tflite/models/embedding_keras.float32.tflite) with
--target 23.08, then rewrites the file with every layer but the inputs and outputs named by a
string of length L (our reader and writer: nothing else changes) and prints callgrind's
instructions per inference (benchmarks/instructions.py) for each L. These figures chose
passes/names.py's numbered names (a few characters; past 14 a name leaves std::string's
small buffer and costs a heap allocation per layer per inference)."""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import instructions  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = "/var/cache/armnn-import-harness/23.08-deb12/armnn-run"


def main(model: str) -> None:
    import armnn_import
    from armnn_import.ir.types import LayerType
    from armnn_import.serialize import reader, writer
    data = armnn_import.convert(model, target="23.08", layer_names="source").to_bytes()
    npz = np.load(os.path.splitext(model)[0] + ".npz")
    with tempfile.TemporaryDirectory() as tmp:
        inputs = []
        for i, k in enumerate(sorted(k for k in npz.files if k.startswith("input"))):
            inputs.append(os.path.join(tmp, f"in{i}.npy"))
            np.save(inputs[-1], npz[k])
        print(f"{os.path.basename(model)} on {RUNNER}\nname length  instructions per inference")
        for length in (1, 4, 8, 14, 15, 16, 24, 40):
            g = reader.read(data)
            for i, layer in enumerate(g.layers):
                if layer.type not in (LayerType.Input, LayerType.Output):
                    g.rename(layer, (f"{i}" + "x" * length)[:max(length, len(str(i)))])
            path = os.path.join(tmp, "named.armnn")
            with open(path, "wb") as f:
                f.write(writer.write(g))
            print(f"{length:11d}  {instructions.per_inference(RUNNER, path, inputs, False)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         os.path.join(ROOT, "test_models/tflite/models/embedding_keras.float32.tflite"))
