"""The nine ONNX model-zoo networks that the ``onnx`` wheel ships in onnx/backend/test/data/light/
(AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512;
opset 9, IR 3), no one here wrote them, and how to feed them.

As shipped, every weight is ``ConstantOfShape(0.02)`` (a few BatchNormalization statistics are
real initializers), so most outputs are a uniform softmax. ``with_real_weights`` gives the same
graph with each of those weights replaced by a seeded random initializer of the same shape:
He-normal (std sqrt(2 / fan_in), fan_in = prod(shape[1:]): every Conv weight is OIHW and every
Gemm here has transB=1) for tensors of two or more dimensions, uniform [0.5, 1.5] for 1-D ones
(biases, BatchNormalization scales, means and variances: the variances stay positive), so that
activations stay O(1) through 16-121 layers. In the four networks with BatchNormalization (the
statistics, random or shipped, do not normalize random weights) and residual sums, He-normal alone
grows the logits to 1e2-1e7; there the std is halved (``GAIN``), which keeps them at 1-10. The input of the final Softmax becomes a second graph
output, so that the logits are compared too: a softmax that saturates would hide their errors.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
NAMES = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
         "squeezenet", "vgg19", "zfnet512")

#: He-normal's std multiplied by this (see the module doc); 1 for the others
GAIN = {"densenet121": 0.5, "inception_v2": 0.5, "resnet50": 0.5, "shufflenet": 0.5}


def model_path(name: str) -> Path:
    return LIGHT / f"light_{name}.onnx"


def shipped_input(model: onnx.ModelProto) -> np.ndarray:
    """The input onnx's own backend test feeds a "light" model (``Runner.generate_dummy_data``
    with random=False): arange(n) / n in the input's shape, unknown dimensions as 1."""
    inits = {i.name for i in model.graph.initializer}
    (x,) = [i for i in model.graph.input if i.name not in inits]
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def shipped_output(name: str) -> np.ndarray:
    return numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"light_{name}_output_0.pb")))


def _random_weight(rng: np.random.Generator, shape: tuple[int, ...], gain: float) -> np.ndarray:
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:]))
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(gain * np.sqrt(2.0 / fan_in))
    return rng.uniform(0.5, 1.5, size=shape).astype(np.float32)


def with_real_weights(name: str, seed: int = 0) -> onnx.ModelProto:
    """The model with every ConstantOfShape weight a seeded random initializer (see the module
    doc) and the final Softmax's input as an extra output named ``<input>`` (the logits)."""
    model = onnx.load(str(model_path(name)))
    g = model.graph
    of_shape = {n.input[0] for n in g.node if n.op_type == "ConstantOfShape"}
    shapes = {i.name: tuple(int(d) for d in numpy_helper.to_array(i)) for i in g.initializer
              if i.name in of_shape}
    rng, gain = np.random.default_rng(seed), GAIN.get(name, 1.0)
    kept, made, used_shapes = [], [], set()
    for node in g.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            used_shapes.add(node.input[0])
            made.append(numpy_helper.from_array(_random_weight(rng, shapes[node.input[0]], gain), node.output[0]))
        else:
            kept.append(node)
    still_read = {i for n in kept for i in n.input}
    inits = [i for i in g.initializer if i.name not in used_shapes or i.name in still_read]
    del g.node[:]
    g.node.extend(kept)
    del g.initializer[:]
    g.initializer.extend(inits + made)
    # IR 3 lists every initializer as a graph input: the shape tensors go, the weights come in
    inputs = [i for i in g.input if i.name not in used_shapes or i.name in still_read]
    inputs += [helper.make_tensor_value_info(t.name, onnx.TensorProto.FLOAT, t.dims) for t in made]
    del g.input[:]
    g.input.extend(inputs)
    softmax = [n for n in kept if n.op_type == "Softmax"]
    outs = {o.name: o for o in g.output}
    if softmax and softmax[-1].output[0] in outs:  # a Softmax keeps its input's shape
        dims = [d.dim_value for d in outs[softmax[-1].output[0]].type.tensor_type.shape.dim]
        g.output.append(helper.make_tensor_value_info(softmax[-1].input[0], onnx.TensorProto.FLOAT, dims))
    onnx.checker.check_model(model)
    return model


def random_input(model: onnx.ModelProto, seed: int = 1) -> np.ndarray:
    """A seeded standard-normal input of the shipped input's shape."""
    shape = shipped_input(model).shape
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
