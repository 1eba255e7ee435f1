"""NetBuilder's matrix and convolution layers (FullyConnected, 2-D and 3-D convolution,
3-D pooling): a base class of NetBuilder (builder.py), which holds the layers they compose
with (permute, take, concat, slice, batchnorm, constant)."""
from __future__ import annotations

import numpy as np

from ..ir import descriptors as D
from ..ir.graph import Port
from ..ir.types import ConstTensor, DataLayout, DataType, LayerType
from .core import Unsupported


class ConvolutionLayers:
    def fully_connected(self, x: Port, weights, bias, name: str, quant=None) -> Port:
        """y = x2d @ weights.T + bias, weights [O, I]; x is flattened to [x.shape[0], I]."""
        w = weights if isinstance(weights, ConstTensor) else ConstTensor(np.asarray(weights, np.float32))
        b = None if bias is None else bias if isinstance(bias, ConstTensor) else \
            ConstTensor(np.asarray(bias, np.float32))
        return self.add(LayerType.FullyConnected, name, [x], D.FullyConnectedDescriptor(b is not None, True),
                        tensors={"weights": w, "biases": b}, quant=quant)

    def conv2d(self, x: Port, w_oihw, bias, name: str, *, strides=(1, 1), pads=(0, 0, 0, 0),
               dilations=(1, 1), groups: int = 1, layout: DataLayout = DataLayout.NCHW,
               quant=None, weight_info=None) -> Port:
        """2-D convolution with weights in OIHW order (numpy float32, or uint8
        with `weight_info` for quantized weights); bias float32 (or a Signed32
        ConstTensor). pads = (top, left, bottom, right).

        Arm NN reads the descriptor slots of biasEnabled/dataLayout in this
        schema as dilations, so the convolution itself is always NCHW without
        bias: an NHWC input is permuted around it (the layout pass cancels
        these Permutes) and the bias is a following BatchNormalization.
        From the 20.08 format on, the layer itself has them (conv2d_direct)."""
        if self.g.target.at_least("20.08"):
            return self.conv2d_direct(x, w_oihw, bias, name, strides=strides, pads=pads, dilations=dilations,
                                      groups=groups, layout=layout, quant=quant, weight_info=weight_info)
        if layout == DataLayout.NHWC:
            y = self.permute(x, (0, 3, 1, 2), f"{name}_to_nchw")
            y = self.conv2d(y, w_oihw, bias, name, strides=strides, pads=pads, dilations=dilations,
                            groups=groups, quant=quant, weight_info=weight_info)
            return self.permute(y, (0, 2, 3, 1), f"{name}_to_nhwc")
        w = np.asarray(w_oihw)
        # a kernel axis of size 1 reads one tap whatever its dilation
        dilations = tuple(1 if k == 1 else int(d) for k, d in zip(w.shape[2:], dilations))
        if dilations != (1, 1):
            y = self._dilated_conv(x, w, name, strides, pads, dilations, groups, quant, weight_info)
        else:
            y = self._conv_nchw(x, w, name, strides, pads, groups, quant, weight_info)
        if bias is None:
            return y
        if isinstance(bias, ConstTensor):
            bias = bias.data.astype(np.float64) * bias.info.scale if bias.info.dtype == DataType.Signed32 \
                else bias.data
        # float: the shifts_to_additions pass makes this an Addition (CpuRef runs it faster)
        self.report.decomposition("convolution bias", "a BatchNormalization (mean 0, variance 1, gamma 1) "
                                  "after the convolution")
        return self.batchnorm(y, 1.0, np.asarray(bias, np.float32), 1, f"{name}_bias", quant=quant)

    def conv2d_direct(self, x: Port, w_oihw, bias, name: str, *, strides=(1, 1), pads=(0, 0, 0, 0),
                      dilations=(1, 1), groups: int = 1, layout: DataLayout = DataLayout.NCHW,
                      quant=None, weight_info=None) -> Port:
        """conv2d as one layer with its bias, dilation and layout (the 20.08 format on).
        Weights: OIHW for NCHW and OHWI for NHWC; depthwise [M, C, kH, kW] in both
        (20.08's layout, which 23.08 reads with weightsLayoutScheme 0). A quantized
        convolution's bias is Signed32 at input scale x weight scale, as Arm NN wants."""
        w = np.asarray(w_oihw)
        cax = 3 if layout == DataLayout.NHWC else 1
        cin, cout = x.info.shape[cax], w.shape[0]
        dilations = tuple(1 if k == 1 else int(d) for k, d in zip(w.shape[2:], dilations))
        if groups not in (1, cin) or (groups == cin and w.shape[1] != 1):
            self.report.decomposition("grouped convolution", "StridedSlice per group, Convolution2d, Merger")
            gi, go = cin // groups, cout // groups
            b = None if bias is None else self._bias_values(bias)
            outs = [self.conv2d_direct(self.take(x, cax, k * gi, (k + 1) * gi, f"{name}_in{k}"),
                                       w[k * go:(k + 1) * go], None if b is None else b[k * go:(k + 1) * go],
                                       f"{name}_g{k}", strides=strides, pads=pads, dilations=dilations,
                                       layout=layout, quant=quant, weight_info=weight_info)
                    for k in range(groups)]
            return self.concat(outs, cax, name, quant=quant)
        desc = dict(pad_left=pads[1], pad_right=pads[3], pad_top=pads[0], pad_bottom=pads[2],
                    stride_x=strides[1], stride_y=strides[0], dilation_x=dilations[1], dilation_y=dilations[0],
                    bias_enabled=bias is not None, data_layout=layout)
        if groups == 1:
            ltype, D_ = LayerType.Convolution2d, D.Convolution2dDescriptor
            arr = w if layout == DataLayout.NCHW else w.transpose(0, 2, 3, 1)
        else:  # output channel c*M + m -> weights [M, C, kH, kW]
            ltype, D_ = LayerType.DepthwiseConvolution2d, D.DepthwiseConvolution2dDescriptor
            arr = w.reshape(cin, cout // cin, *w.shape[2:]).transpose(1, 0, 2, 3)
        tensors = {"weights": ConstTensor(np.asarray(arr, np.float32)) if weight_info is None
                   else ConstTensor(np.asarray(arr), weight_info.with_shape(arr.shape))}
        if bias is not None:
            tensors["biases"] = self._conv_bias(bias, x, weight_info)
        return self.add(ltype, name, [x], D_(**desc), tensors=tensors, quant=quant)

    @staticmethod
    def _bias_values(bias) -> np.ndarray:
        if isinstance(bias, ConstTensor):
            return bias.data.astype(np.float64) * bias.info.scale if bias.info.dtype == DataType.Signed32 \
                else bias.data
        return np.asarray(bias, np.float32).reshape(-1)

    def _conv_bias(self, bias, x: Port, weight_info) -> ConstTensor:
        if weight_info is None:
            return ConstTensor(np.asarray(self._bias_values(bias), np.float32).reshape(-1))
        scale = float(np.float32(x.info.scale) * np.float32(weight_info.scale))
        if isinstance(bias, ConstTensor) and bias.info.dtype == DataType.Signed32 \
                and np.float32(bias.info.scale) == np.float32(scale):
            return bias
        from .quant import bias_int32
        return bias_int32(np.asarray(self._bias_values(bias), np.float64), scale)

    def _conv_nchw(self, x, w, name, strides, pads, groups, quant, weight_info) -> Port:
        cin, cout = x.info.shape[1], w.shape[0]
        desc = dict(pad_left=pads[1], pad_right=pads[3], pad_top=pads[0], pad_bottom=pads[2],
                    stride_x=strides[1], stride_y=strides[0])

        def tensor(arr):
            # no copy here: a transposed view is copied once, by the writer (see ConstTensor)
            if weight_info is None:
                return ConstTensor(np.asarray(arr, np.float32))
            return ConstTensor(np.asarray(arr), weight_info.with_shape(arr.shape))

        if groups == 1:
            return self.add(LayerType.Convolution2d, name, [x], D.Convolution2dDescriptor(**desc),
                            tensors={"weights": tensor(w)}, quant=quant)
        if groups == cin and cout % cin == 0 and w.shape[1] == 1:
            m = cout // cin  # output channel c*M + m -> weights [M, C, kH, kW]
            arr = w.reshape(cin, m, *w.shape[2:]).transpose(1, 0, 2, 3)
            return self.add(LayerType.DepthwiseConvolution2d, name, [x],
                            D.DepthwiseConvolution2dDescriptor(**desc), tensors={"weights": tensor(arr)}, quant=quant)
        # general groups: one convolution per group, joined on the channel axis
        self.report.decomposition("grouped convolution", "StridedSlice per group, Convolution2d, Merger")
        gi, go = cin // groups, cout // groups
        outs = [self._conv_nchw(self.take(x, 1, k * gi, (k + 1) * gi, f"{name}_in{k}"), w[k * go:(k + 1) * go],
                                f"{name}_g{k}", strides, pads, 1, quant, weight_info) for k in range(groups)]
        return self.concat(outs, 1, name, quant=quant)

    def _dilated_conv(self, x, w, name, strides, pads, dilations, groups, quant, weight_info):
        """SpaceToBatchNd -> convolution -> BatchToSpaceNd (as TensorFlow does);
        a stride is applied afterwards by a StridedSlice, which is exact."""
        self.report.decomposition("dilated convolution", "SpaceToBatchNd, convolution, BatchToSpaceNd")
        dy, dx = dilations
        h, wd = x.info.shape[2], x.info.shape[3]
        kh, kw = w.shape[2], w.shape[3]
        pt, pl, pb, pr = pads
        if (h + pt + pb - dy * (kh - 1)) <= 0 or (wd + pl + pr - dx * (kw - 1)) <= 0:
            raise Unsupported("dilated kernel larger than the padded input")
        eh, ew = (-(h + pt + pb)) % dy, (-(wd + pl + pr)) % dx
        layout = DataLayout.NCHW
        s2b = self.add(LayerType.SpaceToBatchNd, f"{name}_s2b", [x],
                       D.SpaceToBatchNdDescriptor((dy, dx), (pt, pb + eh, pl, pr + ew), layout))
        y = self._conv_nchw(s2b, w, f"{name}_conv", (1, 1), (0, 0, 0, 0), groups, quant, weight_info)
        y = self.add(LayerType.BatchToSpaceNd, f"{name}_b2s", [y],
                     D.BatchToSpaceNdDescriptor((dy, dx), (0, eh, 0, ew), layout))
        if tuple(strides) != (1, 1):
            y = self.slice(y, [None] * 4, [None] * 4, [1, 1, strides[0], strides[1]], f"{name}_stride")
        return y

    def conv3d(self, x: Port, w_oidhw, bias, name: str, *, strides=(1, 1, 1), pads=(0,) * 6, dilations=(1, 1, 1),
               layout: DataLayout = DataLayout.NCDHW) -> Port:
        """A dense 3-D convolution (the 23.08 format). w_oidhw [O, I, kD, kH, kW]; strides and dilations
        (d, h, w); pads (front, top, left, back, bottom, right). The 23.08 layer takes its weights
        [kD, kH, kW, I, O] and bias as input tensors: made here from x by FullyConnected layers
        (`constant`: no Constant layer, which 23.08 misreads in files of weightsLayoutScheme 0)."""
        w = np.ascontiguousarray(np.asarray(w_oidhw, np.float32).transpose(2, 3, 4, 1, 0))
        ins = [x, self.constant(x, w, f"{name}_weights")]
        if bias is not None:
            ins.append(self.constant(x, np.asarray(bias, np.float32).reshape(-1), f"{name}_bias"))
        d = D.Convolution3dDescriptor(pads[2], pads[5], pads[1], pads[4], pads[0], pads[3],
                                      strides[2], strides[1], strides[0], dilations[2], dilations[1], dilations[0],
                                      bias is not None, layout)
        return self.add(LayerType.Convolution3d, name, ins, d)

    def pool3d(self, x: Port, algo, kernel, name: str, *, strides=(1, 1, 1), pads=(0,) * 6,
               layout: DataLayout = DataLayout.NCDHW, ceil: bool = False, exclude_pad: bool = True) -> Port:
        """3-D pooling (the 23.08 format): kernel and strides (d, h, w); pads (front, top, left, back,
        bottom, right); exclude_pad: padding not counted in averages."""
        d = D.Pooling3dDescriptor(algo, pads[2], pads[5], pads[1], pads[4], pads[0], pads[3],
                                  kernel[2], kernel[1], kernel[0], strides[2], strides[1], strides[0],
                                  D.OutputShapeRounding.Ceiling if ceil else D.OutputShapeRounding.Floor,
                                  D.PaddingMethod.Exclude if exclude_pad else D.PaddingMethod.IgnoreValue, layout)
        return self.add(LayerType.Pooling3d, name, [x], d)
