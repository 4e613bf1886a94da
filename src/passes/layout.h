// Layout choice: convolutions in channels-last, as torch.compile's layout optimisation does. sinter's fastest CPU
// convolution is an implicit GEMM over channels-last data that runs the following element-wise work (bias, batch
// norm folded, relu, the residual add) on each finished tile while it is in cache; the NCHW kernels build an
// im2col and cannot take an epilogue. Exported CNNs arrive in NCHW, so every float32 conv2d of one group on the
// CPU gets a channels-last input and weight: a copy of the graph's input once, the weights converted at compile
// time (only graphs whose conv weights are all constants: inference graphs of frozen modules and ONNX models).
// A stem of few input channels keeps its input as it is: the direct kernel (ops/conv_direct.h) reads any layout
// and writes channels-last. Depthwise convs follow their input's layout.
// Layouts then follow through the element-wise ops as eager's rules make them, and the graph's outputs are copied
// back into the layouts eager returns. A `view` that the new layout makes impossible reads a contiguous copy (the
// graph is functional here, so a view and a copy hold the same values).
#pragma once
#include "sinter/graph.h"

namespace sinter::passes {

// Returns whether the graph changed. Leaves graphs with as_strided (whose strides name storage positions) alone.
bool convs_channels_last(Graph& g);

}  // namespace sinter::passes
